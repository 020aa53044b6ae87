// A temporary folder lives as long as its owner, in $TMPDIR, and is removed
// with its contents however its scope ends.
#include "autotune/temp_dir.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>

#include "tests/support/scoped_env.h"

namespace attnforge::autotune {
namespace {

TEST(TempDir, IsRemovedWithItsContents) {
  std::filesystem::path path;
  {
    TempDir dir("attnforge_temp_dir_test_");
    path = dir.path();
    EXPECT_TRUE(std::filesystem::is_directory(path));
    EXPECT_EQ(path.filename().string().rfind("attnforge_temp_dir_test_", 0), 0u);
    std::filesystem::create_directories(path / "nested");
    std::ofstream(path / "nested" / "file.bin") << "contents";
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TempDir, IsRemovedWhenAnExceptionLeavesItsScope) {
  std::filesystem::path path;
  try {
    TempDir dir;
    path = dir.path();
    std::ofstream(path / "file.bin") << "contents";
    throw std::runtime_error("leaving");
  } catch (const std::runtime_error&) {
  }
  ASSERT_FALSE(path.empty());
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TempDir, IsMadeInTheSystemsTemporaryFolder) {
  TempDir parent;
  {
    testing::ScopedEnv tmpdir("TMPDIR", parent.path().string());
    TempDir dir;
    EXPECT_EQ(dir.path().parent_path(), parent.path());
  }
  EXPECT_TRUE(std::filesystem::is_empty(parent.path()));
}

}  // namespace
}  // namespace attnforge::autotune
