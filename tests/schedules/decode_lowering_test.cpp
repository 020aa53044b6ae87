// The decoding kernels' lowered loops. A paged cache's kernel prefetches
// through its page table: each K row in q.k's loop, and in P.V's loop the
// lines of V that its tile reads (V prefetched with K is evicted before P.V
// reads it), for f32, bf16 and 8-bit caches. q.k and P.V loop over each page's
// positions with the page's table entry read outside. q.k and P.V read a
// bf16 K or V row two vectors per load, and an 8-bit row a vector of int8 per
// load, widened in registers. q.k's horizontal sums are one vector
// reduction per key of a register tile.
#include <Halide.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "algorithm/attention_terms.h"
#include "algorithm/row_prefetch.h"
#include "schedules/schedule.h"
#include "schedules/schedule_choice.h"
#include "spec/attention_spec.h"
#include "spec/kv_quantization.h"
#include "tests/support/target_presets.h"

namespace attnforge {
namespace {

using namespace Halide;
using namespace Halide::Internal;

struct Prefetch {
  std::string buffer, loop;  // the innermost loop around it
};

// A pass that knows the innermost loop around what it visits ("" outside any).
class InnermostLoop : public IRMutator {
 protected:
  using IRMutator::visit;
  const std::string& innermost() const { return loops_.empty() ? none_ : loops_.back(); }

  Stmt visit(const For* op) override {
    loops_.push_back(op->name);
    Stmt result = IRMutator::visit(op);
    loops_.pop_back();
    return result;
  }

 private:
  std::vector<std::string> loops_;
  const std::string none_;
};

class RecordPrefetchLoops : public InnermostLoop {
 public:
  explicit RecordPrefetchLoops(std::vector<Prefetch>* found) : found_(found) {}

 private:
  using InnermostLoop::visit;
  std::vector<Prefetch>* found_;

  Expr visit(const Call* op) override {
    if (op->is_intrinsic(Call::prefetch)) {
      found_->push_back({op->args[0].as<Variable>()->name, innermost()});
    }
    return IRMutator::visit(op);
  }
};

// Loops over a page's positions (in_page, or the loops it splits into) per
// Func, and the page table loads inside them whose index depends on the
// position: each would repeat the page's lookup per key.
class RecordPerKeyTableLoads : public IRMutator {
 public:
  RecordPerKeyTableLoads(std::map<std::string, int>* loops, int* per_key_loads)
      : loops_(loops), loads_(per_key_loads) {}

 private:
  using IRMutator::visit;
  std::map<std::string, int>* loops_;
  int* loads_;
  Scope<> per_key_;  // the position loops' variables and lets computed from them

  Stmt visit(const For* op) override {
    const std::string& name = op->name;
    const std::string suffix = ".in_page";
    const bool positions = name.find(suffix + ".") != std::string::npos ||
                           (name.size() > suffix.size() &&
                            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0);
    if (!positions) return IRMutator::visit(op);
    ++(*loops_)[name.substr(0, name.find_first_of("$."))];
    ScopedBinding<> bind(per_key_, op->name);
    return IRMutator::visit(op);
  }
  Stmt visit(const LetStmt* op) override {
    ScopedBinding<> bind(expr_uses_vars(op->value, per_key_), per_key_, op->name);
    return IRMutator::visit(op);
  }
  Expr visit(const Let* op) override {
    ScopedBinding<> bind(expr_uses_vars(op->value, per_key_), per_key_, op->name);
    return IRMutator::visit(op);
  }
  Expr visit(const Load* op) override {
    if (op->name == "page_table" && expr_uses_vars(op->index, per_key_)) ++*loads_;
    return IRMutator::visit(op);
  }
};

// Lowers the generator's pipeline for `target` with `pass` run at its end.
void lower(const Target& target, const std::string& spec, const std::string& schedule,
           IRMutator* pass) {
  auto generator = GeneratorRegistry::create("attention", GeneratorContext(target));
  generator->set_generatorparam_value("spec", spec);
  generator->set_generatorparam_value("schedule", schedule);
  Pipeline pipeline = generator->build_pipeline();
  pipeline.add_custom_lowering_pass(pass);
  pipeline.compile_to_module(pipeline.infer_arguments(), "attention", target);
}

std::vector<Prefetch> prefetches_of(const Target& target, const std::string& spec,
                                    const std::string& schedule) {
  std::vector<Prefetch> found;
  lower(target, spec, schedule, new RecordPrefetchLoops(&found));
  return found;
}

// Loops are named after their Func: "pv_sum$2.s1.over_block$x".
bool in_loop_of(const Prefetch& prefetch, const std::string& func) {
  return prefetch.loop.rfind(func, 0) == 0;
}

class PagedPrefetch : public testing::EachIsa {};

TEST_P(PagedPrefetch, KeyRowsInQkAndTheTilesValueLinesInPv) {
  const Target& target = GetParam();
  const std::string decode = testing::preset_for("decode", target);
  const schedules::Schedule schedule = schedules::resolve_schedule(decode);
  for (const char* text :
       {"causal.br.kpad.page16.gqa32x8.d128.f32", "causal.br.kpad.page16.gqa32x8.d128.bf16",
        "causal.br.kpad.page16.gqa32x8.d128.bf16.kv8"}) {
    SCOPED_TRACE(text);
    const AttentionSpec spec = AttentionSpec::parse(text);
    const int bytes = cache_element_bytes(spec);
    int keys = 0, values = 0;
    for (const Prefetch& prefetch : prefetches_of(target, text, decode)) {
      if (prefetch.buffer == "k") {
        EXPECT_TRUE(in_loop_of(prefetch, "logits")) << prefetch.loop;
        ++keys;
      } else {
        ASSERT_EQ(prefetch.buffer, "v");
        EXPECT_TRUE(in_loop_of(prefetch, "pv_sum")) << prefetch.loop;
        ++values;
      }
    }
    // Whole K rows for each key of q.k's unrolled tile; one tile's V lines.
    const int row_lines = spec.head_dim * bytes / kCacheLineBytes;
    EXPECT_EQ(keys, schedule.register_vectors * row_lines);
    const int tile_bytes =
        schedules::effective_pv_vectors(schedule) * schedule.vector_width * bytes;
    EXPECT_EQ(values, (tile_bytes + kCacheLineBytes - 1) / kCacheLineBytes);
  }
}

class PagedLookup : public testing::EachIsa {};

TEST_P(PagedLookup, QkAndPvReadEachPagesTableEntryOutsideTheirLoopsOverPositions) {
  const Target& target = GetParam();
  const std::string decode = testing::preset_for("decode", target);
  for (const char* text :
       {"causal.br.kpad.page16.gqa32x8.d128.f32", "causal.br.kpad.page32.gqa32x8.d128.bf16"}) {
    SCOPED_TRACE(text);
    std::map<std::string, int> loops;
    int per_key_loads = 0;
    lower(target, text, decode, new RecordPerKeyTableLoads(&loops, &per_key_loads));
    EXPECT_GT(loops["logits"], 0) << "q.k's key loop is not split by page";
    EXPECT_GT(loops["pv_sum"], 0) << "P.V's key loop is not split by page";
    EXPECT_EQ(per_key_loads, 0);
  }
}

// The lanes of each load of `buffer` inside the loops of Func `func`.
class RecordLoadLanes : public InnermostLoop {
 public:
  RecordLoadLanes(std::string buffer, std::string func, std::vector<int>* lanes)
      : buffer_(std::move(buffer)), func_(std::move(func)), lanes_(lanes) {}

 private:
  using InnermostLoop::visit;
  const std::string buffer_, func_;
  std::vector<int>* lanes_;

  Expr visit(const Load* op) override {
    if (op->name == buffer_ && innermost().rfind(func_, 0) == 0) {
      lanes_->push_back(op->type.lanes());
    }
    return IRMutator::visit(op);
  }
};

class RowLoads : public testing::EachIsa {};

TEST_P(RowLoads, QkAndPvLoadWholeVectorsOfARow) {
  const Target& target = GetParam();
  const std::string decode = testing::preset_for("decode", target);
  const int width = schedules::resolve_schedule(decode).vector_width;
  // bf16 where the head dim is whole pairs of vectors; f32, an 8-bit cache
  // (int8 lanes, widened in registers), and a bf16 head dim of five vectors
  // (40 at 8 lanes, 80 at 16), read a vector per load.
  const std::string five_vectors = "causal.br.kpad.gqa8x2.d" + std::to_string(5 * width) + ".bf16";
  for (const auto& [text, lanes] : std::vector<std::pair<std::string, int>>{
           {"causal.br.kpad.gqa32x8.d128.bf16", 2 * width},
           {"causal.br.kpad.page16.gqa8x2.d64.bf16", 2 * width},
           {"causal.br.kpad.gqa32x8.d128.f32", width},
           {"causal.br.kpad.gqa32x8.d128.f32.kv8", width},
           {"causal.br.kpad.page16.gqa8x2.d64.bf16.kv8", width},
           {five_vectors, width}}) {
    for (const auto& [buffer, func] : {std::pair{"k", "scores"}, std::pair{"v", "pv_sum"}}) {
      SCOPED_TRACE(text + " " + buffer);
      std::vector<int> found;
      lower(target, text, decode, new RecordLoadLanes(buffer, func, &found));
      ASSERT_FALSE(found.empty());
      for (int n : found) EXPECT_EQ(n, lanes);
    }
  }
}

// q.k's horizontal sums: the vector reductions (lanes in, lanes out) and the
// loops over a score's lanes, which would sum them one at a time.
class RecordScoreSums : public IRMutator {
 public:
  RecordScoreSums(std::vector<std::pair<int, int>>* reductions, int* lane_loops)
      : reductions_(reductions), lane_loops_(lane_loops) {}

 private:
  using IRMutator::visit;
  std::vector<std::pair<int, int>>* reductions_;
  int* lane_loops_;

  Stmt visit(const For* op) override {
    if (op->name.rfind("scores", 0) == 0 && op->name.find(".dim_lane") != std::string::npos) {
      ++*lane_loops_;
    }
    return IRMutator::visit(op);
  }
  Expr visit(const VectorReduce* op) override {
    reductions_->push_back({op->value.type().lanes(), op->type.lanes()});
    return IRMutator::visit(op);
  }
};

class HorizontalSums : public testing::EachIsa {};

TEST_P(HorizontalSums, EachKeyOfARegisterTileIsOneVectorReduction) {
  const Target& target = GetParam();
  const std::string decode = testing::preset_for("decode", target);
  const schedules::Schedule schedule = schedules::resolve_schedule(decode);
  const int rows = schedule.register_rows;
  // A contiguous f32 cache, interleaved bf16 rows and a paged cache.
  for (const char* text : {"causal.br.kpad.gqa32x8.d128.f32", "causal.br.kpad.gqa32x8.d128.bf16",
                           "causal.br.kpad.page16.gqa8x2.d64.f32"}) {
    SCOPED_TRACE(text);
    std::vector<std::pair<int, int>> reductions;
    int lane_loops = 0;
    lower(target, text, decode, new RecordScoreSums(&reductions, &lane_loops));
    ASSERT_FALSE(reductions.empty());
    for (const auto& [in, out] : reductions) {
      EXPECT_EQ(out, rows);
      EXPECT_EQ(in, rows * schedule.vector_width);
    }
    EXPECT_EQ(lane_loops, 0);
  }
}

class Int8Rows : public testing::EachIsa {};

// The decoding kernel's assembly for `text` on the test's ISA, one file per
// ISA and spec (ctest runs the ISAs' tests at once), line by line.
std::vector<std::string> decoder_assembly(const Target& target, const std::string& text) {
  auto generator = GeneratorRegistry::create("attention", GeneratorContext(target));
  generator->set_generatorparam_value("spec", text);
  generator->set_generatorparam_value("schedule", testing::preset_for("decode", target));
  Pipeline pipeline = generator->build_pipeline();
  const std::string isa = target.has_feature(Target::AVX512) ? "avx512" : "avx2";
  const std::string path = ::testing::TempDir() + "eight_bit_rows_" + isa + "_" +
                           AttentionSpec::parse(text).to_string() + ".s";
  pipeline.compile_to_assembly(path, pipeline.infer_arguments(), "attention",
                               target.with_feature(Target::NoRuntime));
  std::ifstream assembly(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(assembly, line);) lines.push_back(line);
  return lines;
}

bool has(const std::string& line, const char* text) {
  return line.find(text) != std::string::npos;
}

// The assembly of an 8-bit cache's decoding kernel: its int8 rows are loaded
// a vector at a time straight into the widening instruction (vpmovsxbd from
// memory into the ISA's vector registers), never a byte at a time (movsb*).
TEST_P(Int8Rows, AreWidenedInRegistersFromWholeVectorLoads) {
  const Target& target = GetParam();
  const std::string vector_register = target.has_feature(Target::AVX512) ? "zmm" : "ymm";
  for (const char* text :
       {"causal.br.kpad.gqa32x8.d128.bf16.kv8", "causal.br.kpad.page16.gqa32x8.d128.f32.kv8"}) {
    SCOPED_TRACE(text);
    int widening_loads = 0, byte_loads = 0;
    for (const std::string& line : decoder_assembly(target, text)) {
      if (has(line, "vpmovsxbd") && has(line, "(") && has(line, vector_register.c_str())) {
        ++widening_loads;
      }
      if (has(line, "movsb")) ++byte_loads;
    }
    EXPECT_GT(widening_loads, 0);
    EXPECT_EQ(byte_loads, 0);
  }
}

// fp8 codes likewise: a half vector of codes widened to 16 bits from memory
// (vpmovsxbw), then read as f16 into a whole vector of f32 (vcvtph2ps), with
// no byte loads and no test for the NaN codes (no byte compare).
TEST_P(Int8Rows, E4m3CodesAreReadAsF16FromWholeVectorLoads) {
  const Target& target = GetParam();
  const bool avx512 = target.has_feature(Target::AVX512);
  const std::string half = avx512 ? "ymm" : "xmm", whole = avx512 ? "zmm" : "ymm";
  for (const char* text :
       {"causal.br.kpad.gqa32x8.d128.bf16.kvfp8", "causal.br.kpad.page16.gqa32x8.d128.f32.kvfp8"}) {
    SCOPED_TRACE(text);
    int widening_loads = 0, conversions = 0, byte_loads = 0, byte_compares = 0;
    for (const std::string& line : decoder_assembly(target, text)) {
      if (has(line, "vpmovsxbw") && has(line, "(") && has(line, half.c_str())) ++widening_loads;
      if (has(line, "vcvtph2ps") && has(line, whole.c_str())) ++conversions;
      if (has(line, "movsb") || (has(line, "movzb") && has(line, "("))) ++byte_loads;
      if (has(line, "vpcmpeqb")) ++byte_compares;
    }
    EXPECT_GT(widening_loads, 0);
    EXPECT_GE(conversions, widening_loads);
    EXPECT_EQ(byte_loads, 0);
    EXPECT_EQ(byte_compares, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, Int8Rows, testing::each_isa(), testing::isa_name);
INSTANTIATE_TEST_SUITE_P(Isa, PagedPrefetch, testing::each_isa(), testing::isa_name);
INSTANTIATE_TEST_SUITE_P(Isa, PagedLookup, testing::each_isa(), testing::isa_name);
INSTANTIATE_TEST_SUITE_P(Isa, RowLoads, testing::each_isa(), testing::isa_name);
INSTANTIATE_TEST_SUITE_P(Isa, HorizontalSums, testing::each_isa(), testing::isa_name);

}  // namespace
}  // namespace attnforge
