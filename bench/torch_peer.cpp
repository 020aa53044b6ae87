#include "bench/torch_peer.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "algorithm/modifier_registry.h"
#include "autotune/subprocess.h"
#include "autotune/temp_dir.h"
#include "bench/layer_inputs.h"
#include "spec/dtype_traits.h"

namespace attnforge::bench {

namespace {

namespace fs = std::filesystem;

// One raw file a peer script reads: `count` f32 values, or bytes.
struct InputFile {
  const char* name;
  const void* data;
  size_t count;
  size_t element_bytes = sizeof(float);
};

void write_file(const fs::path& path, const InputFile& file) {
  std::ofstream(path, std::ios::binary)
      .write(static_cast<const char*>(file.data),
             static_cast<std::streamsize>(file.count * file.element_bytes));
}

// The raw f32 values of a file; none if it cannot be read.
std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  std::vector<float> values(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(float)));
  return values;
}

// A peer's result file: its timing and (next to it, as .bin) its output, or why it failed.
TorchResult read_result(const fs::path& path) {
  TorchResult result;
  std::ifstream in(path);
  nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    result.error = "no result (" + path.filename().string() + ")";
    return result;
  }
  result.error = json.value("error", "");
  result.timing.median_ms = json.value("ms_median", 0.0);
  result.timing.min_ms = json.value("ms_min", 0.0);
  result.timing.max_ms = json.value("ms_max", 0.0);
  result.timing.repeats = json.value("repeats", 0);
  result.path = json.value("path", "");
  if (result.error.empty()) result.output = read_floats(fs::path(path).replace_extension(".bin"));
  return result;
}

// Writes `files` to a fresh folder, runs `python script --dir <folder> args...`
// and reads each of `results` (file names the script writes there); the
// folder goes on every way out.
std::vector<TorchResult> run_script(const std::string& python, const char* script,
                                    const std::vector<InputFile>& files,
                                    const std::vector<std::string>& args,
                                    const std::vector<std::string>& results = {"result.json"}) {
  const autotune::TempDir folder("attnforge_torch_");
  const fs::path& dir = folder.path();
  for (const InputFile& file : files) write_file(dir / file.name, file);
  std::vector<std::string> command = {python, script, "--dir", dir.string()};
  command.insert(command.end(), args.begin(), args.end());
  const int status = run_program(command);
  std::vector<TorchResult> read;
  for (const std::string& result : results) {
    read.push_back(read_result(dir / result));
    if (status != 0 && read.back().timing.repeats == 0) {
      read.back().error =
          fmt::format("{} failed (exit {})", fs::path(script).filename().string(), status);
    }
  }
  return read;
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

// Why torch's SDPA peer cannot run `spec` (empty when it can): it runs
// unmasked or causal attention, in `dtypes`.
std::string sdpa_misfit(const AttentionSpec& spec, bool cuda) {
  if (spec.key_padding || spec.bias != BiasKind::none || spec.return_weights ||
      spec.run_time_window || (spec.modified() && (cuda || modifier_of(spec).score))) {
    return "the torch peer runs causal, window or unmasked attention, or a modifier's mask rule "
           "on the CPU";
  }
  if (cuda && (spec.mask == PositionMask::window || spec.softcapped())) {
    return "the CUDA torch peer runs causal or unmasked attention only";
  }
  return "";
}

// The script's --dtype takes the spec token.
std::string torch_dtype(DType dtype) {
  return std::string(traits_of(dtype).name);
}

// The SDPA script's arguments every device shares.
std::vector<std::string> sdpa_args(const AttentionSpec& spec, const Shape& shape, float scale,
                                   double min_seconds) {
  const std::string mask =
      spec.mask == PositionMask::none
          ? "none"
          : fmt::format("{}_{}", spec.mask == PositionMask::causal ? "causal" : "window",
                        attnforge::to_string(spec.alignment));
  return {"--window",
          fmt::format("{},{}", spec.window_left, spec.window_right),
          "--softcap",
          fmt::format("{:.9g}", spec.softcap),
          "--shape",
          fmt::format("{}x{}x{}x{}x{}", shape.batch, spec.heads, shape.q_len, shape.kv_len,
                      spec.head_dim),
          "--kv-heads",
          std::to_string(spec.kv_heads),
          "--mask",
          mask,
          "--scale",
          fmt::format("{:.9g}", scale),
          "--min-time",
          fmt::format("{}", min_seconds)};
}

TorchResult run_torch_sdpa(const std::string& python, const AttentionSpec& spec, const Shape& shape,
                           int threads, const BenchInputs& inputs, double min_seconds,
                           std::size_t evict_bytes, const Halide::Runtime::Buffer<uint8_t>* mask) {
  TorchResult result;
  result.error = sdpa_misfit(spec, false);
  if (result.error.empty() && spec.modified() && !mask) {
    result.error = "the torch peer runs a mask rule from its attended pairs, and none were given";
  }
  if (!result.error.empty()) return result;
  auto file = [](const char* name, const BenchInputs::Tensor& t) {
    return InputFile{name, t.data(), static_cast<size_t>(t.number_of_elements())};
  };
  std::vector<InputFile> files = {file("q.bin", inputs.q), file("k.bin", inputs.k),
                                  file("v.bin", inputs.v)};
  std::vector<std::string> args = sdpa_args(spec, shape, inputs.args.scale, min_seconds);
  args.insert(args.end(),
              {"--threads", std::to_string(threads), "--dtype", torch_dtype(spec.dtype)});
  if (evict_bytes > 0) args.insert(args.end(), {"--evict-bytes", std::to_string(evict_bytes)});
  if (mask) {
    files.push_back({"mask.bin", mask->data(), static_cast<size_t>(mask->number_of_elements()), 1});
    args.insert(args.end(),
                {"--mask-file", "mask.bin", "--mask-heads", std::to_string(mask->dim(2).extent())});
  }
  return run_script(python, ATTNFORGE_TORCH_SCRIPT, files, args, {"result_default.json"}).front();
}

std::vector<TorchResult> run_torch_sdpa_cuda(const std::string& python, const AttentionSpec& spec,
                                             const Shape& shape, const TorchCudaInputs& inputs,
                                             const std::vector<std::string>& backends,
                                             double min_seconds) {
  TorchResult misfit;
  misfit.error = sdpa_misfit(spec, true);
  if (!misfit.error.empty()) return std::vector<TorchResult>(backends.size(), misfit);
  const size_t q_count = size_t(shape.batch) * spec.heads * shape.q_len * spec.head_dim;
  const size_t kv_count = size_t(shape.batch) * spec.kv_heads * shape.kv_len * spec.head_dim;
  std::vector<std::string> args = sdpa_args(spec, shape, inputs.scale, min_seconds);
  std::string joined;
  std::vector<std::string> results;
  for (const std::string& backend : backends) {
    joined += (joined.empty() ? "" : ",") + backend;
    results.push_back("result_" + backend + ".json");
  }
  args.insert(args.end(),
              {"--device", "cuda", "--backend", joined, "--dtype", torch_dtype(spec.dtype)});
  return run_script(
      python, ATTNFORGE_TORCH_SCRIPT,
      {{"q.bin", inputs.q, q_count}, {"k.bin", inputs.k, kv_count}, {"v.bin", inputs.v, kv_count}},
      args, results);
}

TorchResult run_torch_sdpa_backward(const std::string& python, const AttentionSpec& spec,
                                    const Shape& shape, int threads,
                                    const TorchBackwardInputs& inputs, double min_seconds) {
  TorchResult result;
  const bool causal = spec.mask == PositionMask::causal && spec.alignment == Alignment::top_left;
  const bool cuda = inputs.device == "cuda";
  if ((spec.dtype == DType::f16 && !cuda) || (spec.mask != PositionMask::none && !causal) ||
      spec.key_padding || spec.bias != BiasKind::none || spec.softcapped()) {
    result.error =
        "the torch backward peer runs f32 or bf16 (and f16 on CUDA) with no mask or a top-left "
        "causal one";
    return result;
  }
  const size_t q_count = size_t(shape.batch) * spec.heads * shape.q_len * spec.head_dim;
  const size_t kv_count = size_t(shape.batch) * spec.kv_heads * shape.kv_len * spec.head_dim;
  std::vector<std::string> args = {"--shape",
                                   fmt::format("{}x{}x{}x{}x{}", shape.batch, spec.heads,
                                               shape.q_len, shape.kv_len, spec.head_dim),
                                   "--kv-heads",
                                   std::to_string(spec.kv_heads),
                                   "--scale",
                                   fmt::format("{}", inputs.scale),
                                   "--threads",
                                   std::to_string(threads),
                                   "--min-time",
                                   fmt::format("{}", min_seconds)};
  if (causal) args.push_back("--causal");
  if (spec.dtype == DType::bf16) args.push_back("--bf16");
  if (spec.dtype == DType::f16) args.push_back("--f16");
  args.insert(args.end(), {"--device", inputs.device});
  return run_script(python, ATTNFORGE_TORCH_BACKWARD_SCRIPT,
                    {{"q.bin", inputs.q, q_count},
                     {"k.bin", inputs.k, kv_count},
                     {"v.bin", inputs.v, kv_count},
                     {"d_out.bin", inputs.d_out, q_count}},
                    args)
      .front();
}

TorchResult run_torch_mha(const std::string& python, const LayerSpec& spec, int batch, int len,
                          int threads, const LayerInputs& inputs, double min_seconds) {
  TorchResult result;
  const AttentionSpec& a = spec.attention;
  if (a.heads != a.kv_heads || (a.mask != PositionMask::none && a.mask != PositionMask::causal) ||
      a.alignment != Alignment::top_left || a.bias != BiasKind::none || a.key_padding) {
    result.error = "torch.nn.MultiheadAttention runs MHA with no mask or a causal one only";
    return result;
  }
  auto file = [](const char* name, const LayerInputs::Tensor& t) {
    return InputFile{name, t.data(), t.number_of_elements()};
  };
  std::vector<std::string> args = {"--shape",    fmt::format("{}x{}x{}", batch, len, spec.d_model),
                                   "--heads",    std::to_string(a.heads),
                                   "--mask",     a.mask == PositionMask::causal ? "causal" : "none",
                                   "--threads",  std::to_string(threads),
                                   "--min-time", fmt::format("{}", std::max(0.0, min_seconds))};
  if (min_seconds < 0) args.push_back("--check-only");
  return run_script(python, ATTNFORGE_TORCH_MHA_SCRIPT,
                    {file("x.bin", inputs.x), file("w_qkv.bin", inputs.w_qkv),
                     file("b_qkv.bin", inputs.b_qkv), file("w_o.bin", inputs.w_o),
                     file("b_o.bin", inputs.b_o)},
                    args)
      .front();
}

}  // namespace attnforge::bench
