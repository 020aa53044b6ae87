// The spec grammars (attention and layer) on arbitrary text: parse either
// throws SpecError or gives a spec whose canonical string is the text and
// parses back to the same spec.
#include <cstddef>
#include <cstdint>
#include <string>

#include "spec/attention_spec.h"
#include "spec/layer_spec.h"

namespace {

template <typename Spec>
void check_round_trip(const std::string& text) {
  Spec spec;
  try {
    spec = Spec::parse(text);
  } catch (const attnforge::SpecError&) {
    return;
  }
  if (Spec::parse(spec.to_string()) != spec) __builtin_trap();
  if (spec.to_string() != text) __builtin_trap();  // one string per spec
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_round_trip<attnforge::AttentionSpec>(text);
  check_round_trip<attnforge::LayerSpec>(text);
  return 0;
}
