// Compiles one candidate: a schedule (JSON, preset name or "naive") or one of
// Halide's autoschedulers applied to the attention Generator. JIT builds run
// on this machine; AOT builds write a static library and header for any
// target, which is what shipping (and cross-compiling, e.g. for CUDA) needs.
#pragma once

#include <Halide.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "generators/jit_attention.h"
#include "generators/jit_layer.h"
#include "record.h"
#include "spec/attention_spec.h"

namespace attnforge::autotune {

struct Candidate {
  AttentionSpec spec;
  Halide::Target target;
  std::string schedule;  // "naive", "auto" (with autoscheduler), a preset name or schedule JSON
  std::map<std::string, std::string> extra_params;  // further GeneratorParams (estimates)
  Halide::AutoschedulerParams autoscheduler;
  std::string autoscheduler_plugin;  // the plugin's library, loaded by build_jit
};

// Halide's x86 autoschedulers, with settings that finish in seconds here.
struct HalideAutoscheduler {
  std::string name;    // Adams2019, Li2018, Mullapudi2016
  std::string plugin;  // its shared library
  std::map<std::string, std::string> params;
};
std::vector<HalideAutoscheduler> x86_autoschedulers(int threads);

// Halide's GPU autoschedulers (Anderson2021, Li2018) for a GPU with
// `multiprocessors` SMs.
std::vector<HalideAutoscheduler> cuda_autoschedulers(int multiprocessors);

// The autoschedulers for the target's kind: x86 with `threads`, CUDA, or
// none for other GPU APIs.
std::vector<HalideAutoscheduler> autoschedulers_for(const Halide::Target& target, int threads);

// `autoscheduler` applied to the algorithm, with the shape as its estimates.
Candidate autoscheduled_candidate(const AttentionSpec& spec, const Halide::Target& target,
                                  const HalideAutoscheduler& autoscheduler, int batch, int q_len,
                                  int kv_len);

struct JitBuild {
  std::unique_ptr<JitAttention> kernel;  // null unless status is ok
  Status status = Status::ok;            // invalid: the schedule misfits; compile_failed: the rest
  std::string detail;
};

// Never throws for what the candidate is: a misfit or compile error is a status.
JitBuild build_jit(const Candidate& candidate);

struct JitLayerBuild {
  std::unique_ptr<JitLayer> kernel;  // null unless status is ok
  Status status = Status::ok;
  std::string detail;
};

// The layer under `schedule` ("naive", a preset name or schedule JSON); never
// throws for a misfit or compile error.
JitLayerBuild build_jit_layer(const LayerSpec& spec, const Halide::Target& target,
                              const std::string& schedule);

enum class AotOutput { static_library, object };

struct AotFiles {
  std::filesystem::path code;    // <dir>/<function>.a or .o
  std::filesystem::path header;  // <dir>/<function>.h
};

// Compiled code exporting `function` and `function`_argv, without the Halide
// runtime (link one from build_runtime). Throws ScheduleError for a misfit
// schedule and KernelError for a compile error.
AotFiles build_aot(const Candidate& candidate, const std::filesystem::path& dir,
                   const std::string& function, AotOutput output = AotOutput::static_library);

// The key-range kernel of `spec`'s mask rule (algorithm/modifier_key_ranges.h),
// as build_aot compiles attention kernels.
AotFiles build_key_ranges_aot(const AttentionSpec& spec, const Halide::Target& target,
                              const std::filesystem::path& dir, const std::string& function,
                              AotOutput output);

// The backward kernel of `spec` (generators/attention_backward_generator.cpp)
// under `schedule` ("naive", a backward preset name or backward schedule
// JSON), as build_aot.
AotFiles build_backward_aot(const AttentionSpec& spec, const Halide::Target& target,
                            const std::string& schedule, const std::filesystem::path& dir,
                            const std::string& function, AotOutput output);

// The layer under `schedule` ("naive", a preset name or schedule JSON), as build_aot.
AotFiles build_layer_aot(const LayerSpec& spec, const Halide::Target& target,
                         const std::string& schedule, const std::filesystem::path& dir,
                         const std::string& function, AotOutput output = AotOutput::static_library);

// The Halide runtime for `target` (shared by every kernel of that target).
std::filesystem::path build_runtime(const Halide::Target& target,
                                    const std::filesystem::path& library);

}  // namespace attnforge::autotune
