// A modifier through an emitted package (examples/mods/document.cpp, emitted
// with --mod): the runtime passes its tensors by name and computes its key
// ranges, matching the double reference on odd sizes; every bad tensor is a
// clear error that leaves out untouched.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "attnforge/attention.h"
#include "tensor_views.h"

namespace attnforge::testing {
namespace {

const halide_type_t kInt32(halide_type_int, 32);

// The package's kernels of the document modifier: its spec, with the hash it was emitted with.
AttentionSpec packaged_document_spec() {
  for (const KernelChoice& k : available_kernels()) {
    const AttentionSpec spec = AttentionSpec::parse(k.spec);
    if (spec.modifier == "document") return spec;
  }
  ADD_FAILURE() << "the package has no kernel of the document modifier";
  return AttentionSpec::parse("causal.gqa4x2.d32.f32");
}

// A call of the document modifier: documents of 5 positions, shifted per
// sequence, as [B, Lq] and [B, Lk] int32 tensors, and the reference's rule.
struct DocumentCall {
  DocumentCall(const AttentionSpec& spec, CaseShape shape)
      : c(spec, shape, {.seed = 6}), call(spec, c), shape(shape) {
    auto doc = [](int position, int b) { return (position + 2 * b) / 5; };
    for (int b = 0; b < shape.batch; ++b) {
      for (int i = 0; i < shape.q_len; ++i) query_documents.push_back(doc(i, b));
      for (int j = 0; j < shape.kv_len; ++j) key_documents.push_back(doc(j, b));
    }
    c.add_modifier_tensor(kInt32, {shape.q_len, shape.batch},
                          [&](const HostTensor::Extents& at) { return doc(at[0], at[1]); });
    c.add_modifier_tensor(kInt32, {shape.kv_len, shape.batch},
                          [&](const HostTensor::Extents& at) { return doc(at[0], at[1]); });
    c.set_reference_modifier(nullptr,
                             [doc](int b, int, int i, int j) { return doc(i, b) == doc(j, b); });
    queries = TensorView::contiguous(query_documents.data(), ElementType::i32,
                                     {shape.batch, shape.q_len});
    keys =
        TensorView::contiguous(key_documents.data(), ElementType::i32, {shape.batch, shape.kv_len});
    call.options.modifier = "document";
    call.options.modifier_tensors = {{"query_document", &queries}, {"key_document", &keys}};
  }

  AttentionCase c;
  RuntimeCall call;
  CaseShape shape;
  std::vector<int32_t> query_documents, key_documents;
  TensorView queries, keys;
};

TEST(ModifierRuntime, DocumentMaskMatchesTheReferenceOnOddSizes) {
  const AttentionSpec spec = packaged_document_spec();
  for (CaseShape shape : {CaseShape{1, 1, 1}, CaseShape{2, 7, 33}, CaseShape{3, 65, 40},
                          CaseShape{2, 1, 100}, CaseShape{1, 300, 300}}) {
    DocumentCall d(spec, shape);
    const Status status = d.call.run();
    ASSERT_TRUE(status.ok()) << status.message;
    const Comparison result = d.c.compare();
    EXPECT_TRUE(result.ok) << "B" << shape.batch << " Lq" << shape.q_len << " Lk" << shape.kv_len
                           << ": " << result.first_failure;
  }
}

// Kept key ranges serve calls with the same shape and tensor values, and are
// computed again when a tensor's values or the shape change.
TEST(ModifierRuntime, KeptKeyRangesFollowTheTensorsAndTheShape) {
  const AttentionSpec spec = packaged_document_spec();
  ModifierKeyRangeCache cache;
  DocumentCall d(spec, {2, 40, 40});
  d.call.options.key_range_cache = &cache;
  for (int call = 0; call < 3; ++call) {
    ASSERT_TRUE(d.call.run().ok());
    EXPECT_TRUE(d.c.compare().ok) << call;
  }
  EXPECT_EQ(cache.computed(), 1);
  EXPECT_EQ(cache.reused(), 2);

  // Every position its own document: the kept ranges would let rows see
  // their old documents' keys; they are computed again.
  DocumentCall singles(spec, {2, 40, 40});
  for (int32_t& document : singles.query_documents)
    document = &document - &singles.query_documents[0];
  for (int32_t& document : singles.key_documents) document = &document - &singles.key_documents[0];
  singles.c.set_reference_modifier(nullptr, [](int, int, int i, int j) { return i == j; });
  singles.call.options.key_range_cache = &cache;
  ASSERT_TRUE(singles.call.run().ok());
  EXPECT_TRUE(singles.c.compare().ok);
  EXPECT_EQ(cache.computed(), 2);

  DocumentCall longer(spec, {2, 41, 40});
  longer.call.options.key_range_cache = &cache;
  ASSERT_TRUE(longer.call.run().ok());
  EXPECT_TRUE(longer.c.compare().ok);
  EXPECT_EQ(cache.computed(), 3);
}

// `change` makes the call bad; its error names `expected` and out is untouched.
void expect_refused(const char* what, void (*change)(DocumentCall&), const std::string& expected) {
  DocumentCall d(packaged_document_spec(), {2, 9, 20});
  change(d);
  const std::vector<double> before = d.c.output();
  const Status status = d.call.run();
  EXPECT_EQ(status.code, ErrorCode::invalid_argument) << what;
  EXPECT_NE(status.message.find(expected), std::string::npos) << what << ": " << status.message;
  const std::vector<double> after = d.c.output();
  EXPECT_EQ(std::memcmp(before.data(), after.data(), before.size() * sizeof(double)), 0) << what;
}

TEST(ModifierRuntime, BadTensorsAreNamedAndWriteNothing) {
  expect_refused(
      "a missing tensor", [](DocumentCall& d) { d.call.options.modifier_tensors.pop_back(); },
      "modifier_tensors['key_document']: modifier 'document' reads it; not given");
  expect_refused(
      "an unknown name",
      [](DocumentCall& d) {
        d.call.options.modifier_tensors.push_back({"segments", &d.keys});
      },
      "reads no tensor 'segments'; it reads query_document, key_document");
  expect_refused(
      "a name twice",
      [](DocumentCall& d) { d.call.options.modifier_tensors[1].name = "query_document"; },
      "'query_document' given twice");
  expect_refused(
      "a wrong shape", [](DocumentCall& d) { d.keys.shape[1] -= 1; },
      "modifier_tensors['key_document']: expected shape [B, Lk] = [2, 20], got [2, 19]");
  expect_refused(
      "a wrong type", [](DocumentCall& d) { d.keys.type = ElementType::f32; },
      "modifier_tensors['key_document']");
  expect_refused(
      "tensors without a modifier", [](DocumentCall& d) { d.call.options.modifier.clear(); },
      "modifier_tensors: given without a modifier");
}

TEST(ModifierRuntime, AnUnknownModifierHasNoKernel) {
  DocumentCall d(packaged_document_spec(), {1, 4, 4});
  d.call.options.modifier = "prefixlm";
  const Status status = d.call.run();
  EXPECT_EQ(status.code, ErrorCode::no_kernel);
  EXPECT_NE(status.message.find("with modifier prefixlm"), std::string::npos) << status.message;
}

}  // namespace
}  // namespace attnforge::testing
