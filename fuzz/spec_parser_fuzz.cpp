// The spec grammar on arbitrary text: parse either throws SpecError or gives a
// spec whose canonical string parses back to the same spec.
#include <cstddef>
#include <cstdint>
#include <string>

#include "generators/attention_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  attnforge::AttentionSpec spec;
  try {
    spec = attnforge::AttentionSpec::parse(text);
  } catch (const attnforge::SpecError&) {
    return 0;
  }
  if (attnforge::AttentionSpec::parse(spec.to_string()) != spec) __builtin_trap();
  if (spec.to_string() != text) __builtin_trap();  // one string per spec
  return 0;
}
