// Prefix-LM: the first prefix_length[b] positions (the prompt) see each other
// both ways; the rest see what precedes them. With a `full` spec mask. Tuning
// and benchmarks run on prompts of 1024.
#include "algorithm/modifier.h"

ATTNFORGE_MODIFIER(prefixlm, m) {
  m.tensor("prefix_length", Halide::Int(32), {attnforge::ModifierExtent::batch},
           [](const std::vector<int>&) { return 1024; });
  m.mask = [](const attnforge::ModifierIndex& at, const attnforge::ModifierTensors& t) {
    return at.key <= at.query || at.key < t("prefix_length")(at.batch);
  };
}
