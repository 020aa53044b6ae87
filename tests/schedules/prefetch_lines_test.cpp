// The prefetch fix: a row prefetch is one call per cache line, each line
// after the last. Halide 21 steps the element offset by the line's bytes;
// the canary fails when a Halide release fixes that, and the fix must go.
#include "schedules/prefetch_lines.h"

#include <Halide.h>
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/test_targets.h"

namespace attnforge {
namespace {

using namespace Halide;
using namespace Halide::Internal;

struct SplitPrefetch {
  int lines = 0;  // calls per row
  int step = 0;   // elements from one call to the next
};

// Records, for each prefetch in a loop of Halide's line split, that loop's
// trip count and the offset's step per iteration.
class RecordSplits : public IRMutator {
 public:
  explicit RecordSplits(std::vector<SplitPrefetch>* found) : found_(found) {}

 private:
  using IRMutator::visit;
  std::vector<SplitPrefetch>* found_;
  std::vector<const For*> loops_;

  Stmt visit(const For* op) override {
    if (op->name.rfind("prefetch_split_", 0) != 0) return IRMutator::visit(op);
    loops_.push_back(op);
    Stmt result = IRMutator::visit(op);
    loops_.pop_back();
    return result;
  }

  Expr visit(const Call* op) override {
    if (op->is_intrinsic(Call::prefetch) && !loops_.empty()) {
      const For* loop = loops_.back();
      const Expr offset = op->args[1];
      const Expr step =
          simplify(substitute(loop->name, 1, offset) - substitute(loop->name, 0, offset));
      const Expr lines = simplify(loop->extent);
      found_->push_back({as_const_int(lines) ? int(*as_const_int(lines)) : -1,
                         as_const_int(step) ? int(*as_const_int(step)) : -1});
    }
    return IRMutator::visit(op);
  }
};

// Prefetches of 128-element rows, two rows ahead of the row being read.
std::vector<SplitPrefetch> row_prefetches(const Target& target, Type type, bool fixed) {
  ImageParam in(type, 2, "in");
  Func f("f");
  Var x("x"), y("y");
  f(x, y) = in(x, y) + in(x, y);
  f.bound(x, 0, 128).prefetch(in, y, y, 2, PrefetchBoundStrategy::NonFaulting);
  in.dim(1).set_stride(128);
  Pipeline pipeline(f);
  if (fixed) schedules::fix_prefetch_line_steps(pipeline);
  std::vector<SplitPrefetch> found;
  pipeline.add_custom_lowering_pass(new RecordSplits(&found));
  pipeline.compile_to_module({in}, "rows", target.with_feature(Target::NoAsserts));
  return found;
}

class PrefetchLines : public testing::EachIsa {};

TEST_P(PrefetchLines, OneCallPerCacheLineOfTheRow) {
  const std::vector<SplitPrefetch> f32 = row_prefetches(GetParam(), Float(32), true);
  ASSERT_EQ(f32.size(), 1u);
  EXPECT_EQ(f32[0].lines, 8);  // 512 bytes
  EXPECT_EQ(f32[0].step, 16);  // 64 bytes
  const std::vector<SplitPrefetch> f16 = row_prefetches(GetParam(), Float(16), true);
  ASSERT_EQ(f16.size(), 1u);
  EXPECT_EQ(f16[0].lines, 4);
  EXPECT_EQ(f16[0].step, 32);
}

TEST_P(PrefetchLines, HalideStepsByBytesWithoutTheFix) {
  const std::vector<SplitPrefetch> f32 = row_prefetches(GetParam(), Float(32), false);
  ASSERT_EQ(f32.size(), 1u);
  EXPECT_EQ(f32[0].lines, 8);
  EXPECT_EQ(f32[0].step, 64) << "Halide steps prefetches in elements now: drop the fix";
}

INSTANTIATE_TEST_SUITE_P(Isa, PrefetchLines, testing::each_isa(), testing::isa_name);

}  // namespace
}  // namespace attnforge
