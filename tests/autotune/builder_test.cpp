// The builder: JIT builds report a misfit schedule or a compile error as a
// status, and AOT builds write a static library and header for the host and,
// cross-compiled, for CUDA.
#include "autotune/builder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "autotune/temp_dir.h"

namespace attnforge::autotune {
namespace {

const AttentionSpec kSpec = AttentionSpec::parse("causal.gqa4x2.d32.f32");

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Builder, JitBuildsAPresetAndRunsIt) {
  JitBuild build = build_jit({kSpec, Halide::get_host_target(), "online_avx2"});
  ASSERT_EQ(build.status, Status::ok) << build.detail;
  ASSERT_NE(build.kernel, nullptr);
  EXPECT_EQ(build.kernel->spec(), kSpec);
}

TEST(Builder, AMisfitScheduleIsInvalidNotAnException) {
  JitBuild build =
      build_jit({kSpec, Halide::get_host_target(), R"({"form":"online","query_tile":0})"});
  EXPECT_EQ(build.status, Status::invalid);
  EXPECT_EQ(build.kernel, nullptr);
  EXPECT_NE(build.detail.find("query_tile"), std::string::npos) << build.detail;
}

TEST(Builder, AnUnknownScheduleNameIsReported) {
  JitBuild build = build_jit({kSpec, Halide::get_host_target(), "no_such_preset"});
  EXPECT_NE(build.status, Status::ok);
  EXPECT_NE(build.detail.find("no_such_preset"), std::string::npos) << build.detail;
}

TEST(Builder, AotWritesALibraryWithAnArgvEntryPoint) {
  TempDir dir;
  AotFiles built =
      build_aot({kSpec, Halide::Target("x86-64-linux-avx2-fma-f16c-sse41"), "online_avx2"},
                dir.path(), "attention_test_kernel");
  ASSERT_TRUE(std::filesystem::exists(built.code));
  EXPECT_GT(std::filesystem::file_size(built.code), 1000u);
  EXPECT_NE(read_text(built.header).find("int attention_test_kernel_argv(void **args)"),
            std::string::npos);
}

TEST(Builder, AotWritesAnObjectFileWhenAsked) {
  TempDir dir;
  AotFiles built = build_aot({kSpec, Halide::get_host_target(), "naive"}, dir.path(), "as_object",
                             AotOutput::object);
  EXPECT_EQ(built.code.extension(), ".o");
  EXPECT_GT(std::filesystem::file_size(built.code), 1000u);
}

TEST(Builder, AotCrossCompilesTheNaiveScheduleForCuda) {
  TempDir dir;
  AotFiles built =
      build_aot({kSpec, Halide::Target("x86-64-linux-cuda-cuda_capability_80"), "naive"},
                dir.path(), "attention_cuda_kernel");
  EXPECT_GT(std::filesystem::file_size(built.code), 1000u);
  std::filesystem::path runtime =
      build_runtime(Halide::Target("x86-64-linux-cuda-cuda_capability_80"), dir.path() / "rt.a");
  EXPECT_GT(std::filesystem::file_size(runtime), 1000u);
}

TEST(Builder, AotRefusesAnAutoscheduler) {
  TempDir dir;
  Candidate candidate{
      kSpec, Halide::get_host_target(), "auto", {}, Halide::AutoschedulerParams("Adams2019")};
  EXPECT_THROW(build_aot(candidate, dir.path(), "x"), KernelError);
}

}  // namespace
}  // namespace attnforge::autotune
