#include "bench/torch_peer.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "emit/subprocess.h"

namespace attnforge::bench {

namespace {

namespace fs = std::filesystem;

void write_floats(const fs::path& path, const float* data, size_t count) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data),
             static_cast<std::streamsize>(count * sizeof(float)));
}

}  // namespace

bool python_has_torch(const std::string& python) {
  static std::map<std::string, bool> known;
  auto found = known.find(python);
  if (found != known.end()) return found->second;
  bool has = run_program({python, "-c", "import torch"}) == 0;
  known[python] = has;
  return has;
}

TorchResult run_torch_sdpa(const std::string& python, const AttentionSpec& spec, const Shape& shape,
                           int threads, const BenchInputs& inputs, double min_seconds) {
  TorchResult result;
  if (spec.dtype != DType::f32 || spec.key_padding || spec.bias != BiasKind::none ||
      spec.mask == PositionMask::window || spec.return_weights) {
    result.error = "the torch peer runs f32 causal or unmasked attention only";
    return result;
  }
  char name[] = "/tmp/attnforge_torch_XXXXXX";
  if (!::mkdtemp(name)) {
    result.error = "cannot create a temporary folder";
    return result;
  }
  const fs::path dir = name;
  write_floats(dir / "q.bin", inputs.q.data(), inputs.q.number_of_elements());
  write_floats(dir / "k.bin", inputs.k.data(), inputs.k.number_of_elements());
  write_floats(dir / "v.bin", inputs.v.data(), inputs.v.number_of_elements());
  write_floats(dir / "expected.bin", inputs.expected.data(), inputs.expected.number_of_elements());
  const std::string mask = spec.mask == PositionMask::none             ? "none"
                           : spec.alignment == Alignment::bottom_right ? "causal_bottom_right"
                                                                       : "causal_top_left";
  const int status =
      run_program({python, ATTNFORGE_TORCH_SCRIPT, "--dir", dir.string(), "--shape",
                   fmt::format("{}x{}x{}x{}x{}", shape.batch, spec.heads, shape.q_len, shape.kv_len,
                               spec.head_dim),
                   "--kv-heads", std::to_string(spec.kv_heads), "--mask", mask, "--scale",
                   fmt::format("{:.9g}", inputs.args.scale), "--threads", std::to_string(threads),
                   "--min-time", fmt::format("{}", min_seconds)});
  std::ifstream in(dir / "result.json");
  nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  fs::remove_all(dir);
  if (status != 0 || json.is_discarded() || !json.is_object()) {
    result.error = fmt::format("torch_sdpa.py failed (exit {})", status);
    return result;
  }
  result.timing.median_ms = json.value("ms_median", 0.0);
  result.timing.min_ms = json.value("ms_min", 0.0);
  result.timing.max_ms = json.value("ms_max", 0.0);
  result.timing.repeats = json.value("repeats", 0);
  result.max_abs_diff = json.value("max_abs_diff", 1e30);
  return result;
}

}  // namespace attnforge::bench
