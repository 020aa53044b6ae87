// Document masking: sequences packed from several documents, where a query
// sees only keys of its own document. The document of each query row and of
// each key come per call, int32 [B][Lq] and [B][Lk] (the dims below list them
// innermost first, as Halide does). Tuning and benchmarks run on documents of
// 512 positions.
#include "algorithm/modifier.h"

using attnforge::ModifierExtent;

ATTNFORGE_MODIFIER(document, m) {
  auto documents_of_512 = [](const std::vector<int>& at) { return at[0] / 512; };
  m.tensor("query_document", Halide::Int(32), {ModifierExtent::queries, ModifierExtent::batch},
           documents_of_512);
  m.tensor("key_document", Halide::Int(32), {ModifierExtent::keys, ModifierExtent::batch},
           documents_of_512);
  m.mask = [](const attnforge::ModifierIndex& at, const attnforge::ModifierTensors& t) {
    return t("query_document")(at.query, at.batch) == t("key_document")(at.key, at.batch);
  };
}
