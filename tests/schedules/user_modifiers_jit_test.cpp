// The example modifiers (examples/mods/), loaded as `--mod name=FILE` loads a
// user's, on every x86 form against the double reference, where each rule is
// written again in double; the softcap and ALiBi modifiers against the spec
// tokens they restate; bad files, names and tensors refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "autotune/modifier_file.h"
#include "autotune/temp_dir.h"
#include "generators/jit_attention.h"
#include "tests/support/attention_case.h"
#include "tests/support/mma_schedule.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

using autotune::LoadedModifier;
using testing::AttentionCase;
using testing::CaseShape;
using testing::Comparison;
using testing::every_x86_form;
using testing::kernel_target;
using testing::kernel_target_has_presets;
using testing::kernels_run_here;
using testing::preset_for;
using Index = testing::HostTensor::Extents;

const halide_type_t kInt32(halide_type_int, 32), kFloat32(halide_type_float, 32);

// The compiled modifiers are cached in the build tree, not in the user's cache.
const bool kCachedInTheBuildTree = setenv("XDG_CACHE_HOME", ATTNFORGE_TEST_CACHE, 1) == 0;

std::string example(const char* file) {
  return std::string(ATTNFORGE_EXAMPLE_MODS) + "/" + file;
}

// Each example file compiled and loaded once per process.
const LoadedModifier& loaded(const std::string& name, const char* file) {
  static std::map<std::string, LoadedModifier> modifiers;
  auto found = modifiers.find(name);
  if (found == modifiers.end()) {
    found = modifiers.emplace(name, autotune::load_modifier_file(name, example(file))).first;
  }
  return found->second;
}

// A case's modifier tensors and the reference's rules in double.
using Prepare = void (*)(AttentionCase& c, CaseShape shape);

void document(AttentionCase& c, CaseShape shape) {
  // Documents of 5 positions, shifted per sequence; rows whose document has
  // no key they may see stay zero.
  auto doc = [](int position, int b) { return (position + 2 * b) / 5; };
  c.add_modifier_tensor(kInt32, {shape.q_len, shape.batch},
                        [&](const Index& at) { return doc(at[0], at[1]); });
  c.add_modifier_tensor(kInt32, {shape.kv_len, shape.batch},
                        [&](const Index& at) { return doc(at[0], at[1]); });
  c.set_reference_modifier(nullptr,
                           [doc](int b, int, int i, int j) { return doc(i, b) == doc(j, b); });
}

void prefix_lm(AttentionCase& c, CaseShape shape) {
  auto prefix = [](int b) { return std::vector<int>{4, 0, 1000}[b % 3]; };
  c.add_modifier_tensor(kInt32, {shape.batch}, [&](const Index& at) { return prefix(at[0]); });
  c.set_reference_modifier(nullptr,
                           [prefix](int b, int, int i, int j) { return j <= i || j < prefix(b); });
}

// T5's buckets as examples/mods/t5_buckets.cpp computes them.
int t5_bucket(int distance) {
  const int size = std::abs(distance);
  const int within = size < 8 ? size : 8 + std::min(static_cast<int>(std::log2(size)) - 3, 7);
  return within + (distance > 0 ? 16 : 0);
}

void t5(AttentionCase& c, CaseShape) {
  const int heads = c.problem().spec.heads;
  auto bias = [](int bucket, int h) {
    return static_cast<double>(static_cast<float>(std::sin(0.7 * bucket + h) * 2.0));
  };
  c.add_modifier_tensor(kFloat32, {32, heads}, [&](const Index& at) { return bias(at[0], at[1]); });
  c.set_reference_modifier(
      [bias](double s, int, int h, int i, int j) { return s + bias(t5_bucket(j - i), h); },
      nullptr);
}

void softcap(AttentionCase& c, CaseShape) {
  c.set_reference_modifier([](double s, int, int, int, int) { return 30.0 * std::tanh(s / 30.0); },
                           nullptr);
}

double alibi_slope(int h, int heads) {
  return static_cast<float>(std::pow(2.0, -8.0 * (h + 1) / heads));
}

void alibi(AttentionCase& c, CaseShape) {
  const int heads = c.problem().spec.heads;
  c.add_modifier_tensor(kFloat32, {heads},
                        [&](const Index& at) { return alibi_slope(at[0], heads); });
  c.set_reference_modifier([heads](double s, int, int h, int i,
                                   int j) { return s - alibi_slope(h, heads) * std::abs(j - i); },
                           nullptr);
}

struct Example {
  const char* name;
  const char* file;
  Prepare prepare;
  std::vector<const char*> bases;  // specs the modifier is added to
};

std::vector<Example> examples() {
  return {
      {"document", "document.cpp", document, {"causal.mha2.d64.f32", "full.kpad.gqa4x2.d32.f16"}},
      {"prefixlm", "prefix_lm.cpp", prefix_lm, {"full.mha2.d64.f32", "full.kpad.mqa2.d32.bf16"}},
      {"t5", "t5_buckets.cpp", t5, {"full.mha2.d64.f32", "causal.br.kpad.gqa4x2.d32.f32"}},
      {"softcap", "softcap.cpp", softcap, {"causal.mha2.d64.f32", "window9_3.bias.mha2.d32.f16"}},
      {"alibi", "alibi.cpp", alibi, {"full.kpad.mha4.d64.f32", "causal.gqa4x2.d32.bf16"}},
  };
}

class UserModifierJit : public ::testing::TestWithParam<Example> {};

TEST_P(UserModifierJit, EveryFormMatchesTheReference) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const Example& e = GetParam();
  const LoadedModifier& modifier = loaded(e.name, e.file);
  for (const char* base : e.bases) {
    const AttentionSpec spec = modifier.applied_to(AttentionSpec::parse(base));
    for (const std::string& schedule : every_x86_form(spec)) {
      JitAttention kernel(spec, kernel_target(), {{"schedule", schedule}});
      if (!kernels_run_here()) continue;
      for (CaseShape shape : {CaseShape{2, 7, 33}, CaseShape{3, 1, 77}, CaseShape{2, 40, 19},
                              CaseShape{1, 1, 1}, CaseShape{1, 65, 130}}) {
        AttentionCase c(spec, shape, {.seed = 11});
        e.prepare(c, shape);
        kernel.run(c.arguments());
        const Comparison result = c.compare();
        EXPECT_TRUE(result.ok) << spec.to_string() << " " << schedule << " B" << shape.batch
                               << " Lq" << shape.q_len << " Lk" << shape.kv_len << ": "
                               << result.first_failure;
      }
    }
  }
}

// Runs `kernel` on odd shapes against the reference, copying the output
// back from a device. False when the target has no device to run on.
bool runs_correctly(const JitAttention& kernel, const Example& e, const AttentionSpec& spec,
                    std::string* no_device) {
  for (CaseShape shape : {CaseShape{2, 37, 101}, CaseShape{1, 1, 9}, CaseShape{1, 70, 19}}) {
    AttentionCase c(spec, shape, {.seed = 13});
    e.prepare(c, shape);
    try {
      kernel.run(c.arguments());
    } catch (const KernelError& error) {
      *no_device = error.what();
      return false;
    }
    halide_buffer_t* out = c.arguments().out;
    if (out->device && out->device_interface) {
      EXPECT_EQ(out->device_interface->copy_to_host(nullptr, out), 0);
    }
    const Comparison result = c.compare();
    EXPECT_TRUE(result.ok) << spec.to_string() << " Lq" << shape.q_len << " Lk" << shape.kv_len
                           << ": " << result.first_failure;
  }
  return true;
}

// The GPU forms with each modifier: compiled for CUDA; the row forms run
// against the reference on OpenCL (pocl on the CPU) where it is installed;
// the tensor-core form runs on the CPU with its mma emulated.
TEST_P(UserModifierJit, GpuFormsMatchTheReference) {
  const Example& e = GetParam();
  const LoadedModifier& modifier = loaded(e.name, e.file);
  const Halide::Target cuda = Halide::get_host_target()
                                  .with_feature(Halide::Target::CUDA)
                                  .with_feature(Halide::Target::CUDACapability80);
  const Halide::Target opencl = Halide::get_host_target().with_feature(Halide::Target::OpenCL);
  const AttentionSpec f32 = modifier.applied_to(AttentionSpec::parse("causal.br.gqa4x2.d64.f32"));
  const AttentionSpec f16 = modifier.applied_to(AttentionSpec::parse("causal.br.gqa4x2.d64.f16"));
  std::string no_device;
  for (const char* preset : {"online_cuda", "online_split_cuda", "materialized_cuda"}) {
    EXPECT_NO_THROW(JitAttention(f32, cuda, {{"schedule", preset}})) << preset;
  }
  EXPECT_NO_THROW(JitAttention(f16, cuda, {{"schedule", "online_mma_cuda"}}));
  for (const char* preset : {"online_rows_cuda", "online_rows_split_cuda"}) {
    SCOPED_TRACE(preset);
    EXPECT_NO_THROW(JitAttention(f32, cuda, {{"schedule", preset}}));
    JitAttention on_opencl(f32, opencl, {{"schedule", preset}});
    if (runs_correctly(on_opencl, e, f32, &no_device)) continue;
    EXPECT_EQ(no_device.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << no_device;
    break;  // no OpenCL device
  }
  if (kernels_run_here()) {
    JitAttention emulated(f16, kernel_target(), {{"schedule", testing::mma_schedule(16, 32, 1)}});
    EXPECT_TRUE(runs_correctly(emulated, e, f16, &no_device)) << no_device;
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, UserModifierJit, ::testing::ValuesIn(examples()),
                         [](const auto& info) { return std::string(info.param.name); });

// The same inputs through a spec token and through the modifier restating
// it: outputs within `tolerance` of each other.
void expect_equal_outputs(const AttentionSpec& token, const AttentionSpec& restated,
                          Prepare prepare, double tolerance) {
  for (const char* form : {"online", "fused"}) {
    JitAttention a(token, kernel_target(), {{"schedule", preset_for(form)}});
    JitAttention b(restated, kernel_target(), {{"schedule", preset_for(form)}});
    if (!kernels_run_here()) continue;
    const CaseShape shape{2, 70, 150};
    AttentionCase with_token(token, shape, {.seed = 3});
    AttentionCase with_modifier(restated, shape, {.seed = 3});
    prepare(with_modifier, shape);
    a.run(with_token.arguments());
    b.run(with_modifier.arguments());
    const Comparison result = testing::compare_values(with_modifier.output(), with_token.output(),
                                                      {tolerance, tolerance}, "out");
    EXPECT_TRUE(result.ok) << form << ": " << result.first_failure;
  }
}

TEST(UserModifierJit, SoftcapWrittenAsAModifierEqualsTheSpecToken) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const LoadedModifier& modifier = loaded("softcap", "softcap.cpp");
  expect_equal_outputs(AttentionSpec::parse("causal.softcap30.mha2.d64.f32"),
                       modifier.applied_to(AttentionSpec::parse("causal.mha2.d64.f32")), softcap,
                       2e-6);
}

TEST(UserModifierJit, AlibiWrittenAsAModifierEqualsTheSpecToken) {
  if (!kernel_target_has_presets()) GTEST_SKIP() << "the x86 presets need AVX2";
  const LoadedModifier& modifier = loaded("alibi", "alibi.cpp");
  // The token's slopes are the case's own; the modifier gets the same ones.
  auto same_slopes = [](AttentionCase& c, CaseShape) {
    const int heads = c.problem().spec.heads;
    AttentionCase token(AttentionSpec::parse("causal.alibi.mha4.d64.f32"), {2, 70, 150},
                        {.seed = 3});
    const std::vector<double> slopes = token.problem().alibi_slopes;
    c.add_modifier_tensor(kFloat32, {heads}, [&](const Index& at) { return slopes[at[0]]; });
  };
  expect_equal_outputs(AttentionSpec::parse("causal.alibi.mha4.d64.f32"),
                       modifier.applied_to(AttentionSpec::parse("causal.mha4.d64.f32")),
                       same_slopes, 1e-6);
}

// Writes `text` to `dir`/`file`.
std::string write_file(const autotune::TempDir& dir, const char* file, const std::string& text) {
  const std::string path = (dir.path() / file).string();
  std::ofstream(path) << text;
  return path;
}

std::string message_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "";
}

TEST(ModifierFile, BadFilesAndArgumentsAreRefusedByName) {
  autotune::TempDir dir;
  const std::string broken =
      write_file(dir, "broken.cpp", "#include \"algorithm/modifier.h\"\nthis is not C++\n");
  EXPECT_NE(message_of([&] {
              autotune::load_modifier_file("broken", broken);
            }).find("--mod broken=" + broken + ": does not compile"),
            std::string::npos);
  const std::string other =
      write_file(dir, "other.cpp",
                 "#include \"algorithm/modifier.h\"\n"
                 "ATTNFORGE_MODIFIER(other, m) { m.mask = [](const attnforge::ModifierIndex& at, "
                 "const attnforge::ModifierTensors&) { return at.key >= 0; }; }\n");
  EXPECT_NE(message_of([&] {
              autotune::load_modifier_file("named", other);
            }).find("defines no ATTNFORGE_MODIFIER(named, ...)"),
            std::string::npos);
  EXPECT_NE(
      message_of([&] { autotune::load_modifier_file("Upper", other); }).find("not a modifier name"),
      std::string::npos);
  EXPECT_NE(message_of([&] {
              autotune::load_modifier_file("missing", dir.path() / "none.cpp");
            }).find("cannot read"),
            std::string::npos);
  EXPECT_NE(
      message_of([] { autotune::load_modifier_argument("document"); }).find("expected name=path"),
      std::string::npos);
  const std::string empty = write_file(dir, "empty.cpp",
                                       "#include \"algorithm/modifier.h\"\n"
                                       "ATTNFORGE_MODIFIER(empty, m) {}\n");
  EXPECT_NE(message_of([&] {
              autotune::load_modifier_file("empty", empty);
            }).find("modifier 'empty': defines neither score nor mask"),
            std::string::npos);
}

// A changed file is another spec: its kernels are never the old file's.
TEST(ModifierFile, AChangedFileGetsAnotherHash) {
  autotune::TempDir dir;
  std::ifstream original(example("document.cpp"));
  const std::string text((std::istreambuf_iterator<char>(original)),
                         std::istreambuf_iterator<char>());
  const LoadedModifier first = autotune::load_modifier_file("document", example("document.cpp"));
  const LoadedModifier changed = autotune::load_modifier_file(
      "document", write_file(dir, "document.cpp", text + "// changed\n"));
  EXPECT_NE(first.hash, changed.hash);
  const AttentionSpec base = AttentionSpec::parse("causal.mha2.d64.f32");
  EXPECT_NE(first.applied_to(base).to_string(), changed.applied_to(base).to_string());
  EXPECT_EQ(AttentionSpec::parse(first.applied_to(base).to_string()), first.applied_to(base));
}

TEST(ModifierFile, AKernelNeedsItsModifierLoadedAndItsTensorsGiven) {
  AttentionSpec spec = AttentionSpec::parse("causal.mha2.d64.f32");
  spec.modifier = "document";
  spec.modifier_hash = "00000000";
  EXPECT_NE(message_of([&] {
              JitAttention(spec, kernel_target(), {{"schedule", "naive"}});
            }).find("no modifier 'document' with source hash 00000000 is loaded"),
            std::string::npos);
  const AttentionSpec loaded_spec = loaded("document", "document.cpp").applied_to(spec);
  JitAttention kernel(loaded_spec, kernel_target(), {{"schedule", "naive"}});
  AttentionCase c(loaded_spec, {1, 5, 5});
  EXPECT_NE(message_of([&] {
              kernel.run(c.arguments());
            }).find("0 modifier tensors given; its modifier declares 2"),
            std::string::npos);
}

}  // namespace
}  // namespace attnforge
