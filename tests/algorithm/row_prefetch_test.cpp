// Rows prefetched through a table: each marked row becomes one prefetch per
// cache line of its buffer, in the loop of the Func that reads the mark, and
// the mark's value is 0; pipelines without marks are left as they were.
#include "algorithm/row_prefetch.h"

#include <Halide.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/test_targets.h"

namespace attnforge {
namespace {

using namespace Halide;
using namespace Halide::Internal;

struct Fetch {
  std::string buffer;
  Expr offset;
  int bytes = 0;
};

// Records every prefetch and whether any mark is left.
class RecordFetches : public IRMutator {
 public:
  RecordFetches(std::vector<Fetch>* fetches, bool* marks_left)
      : fetches_(fetches), marks_left_(marks_left) {}

 private:
  using IRMutator::visit;
  std::vector<Fetch>* fetches_;
  bool* marks_left_;

  Expr visit(const Call* op) override {
    if (op->is_intrinsic(Call::prefetch)) {
      fetches_->push_back({op->args[0].as<Variable>()->name, op->args[1], op->type.bytes()});
    }
    if (op->name == "attnforge_prefetch_rows") *marks_left_ = true;
    return IRMutator::visit(op);
  }
};

constexpr int kRow = 128;  // elements per row

// out(x, y) = in(x, table(y)), each y prefetching the row of table(y + 2).
struct TableRows {
  ImageParam in{Float(32), 2, "in"};
  ImageParam table{Int(32), 1, "table"};
  Func out{"out"}, ahead{"ahead"};
  Var x{"x"}, y{"y"};

  explicit TableRows(bool marked, int vector_rows = 1) {
    in.dim(0).set_bounds(0, kRow).dim(1).set_stride(kRow);
    const Expr row = clamp(table(y), 0, in.dim(1).extent() - 1);
    if (marked) {
      ahead(y) = prefetch_rows({{in.parameter(), table(y + 2) * kRow, kRow}});
      out(x, y) = in(x, row) + ahead(y);
      if (vector_rows > 1) {  // marks of several rows as one vector
        Var rows("rows");
        out.split(y, rows, y, vector_rows);
        ahead.compute_at(out, rows).vectorize(y);
      } else {
        ahead.compute_at(out, y);
      }
    } else {
      out(x, y) = in(x, row);
    }
    out.bound(x, 0, kRow).vectorize(x, 8);
  }

  Pipeline lowered(std::vector<Fetch>* fetches, bool* marks_left) {
    Pipeline pipeline(out);
    lower_row_prefetches(pipeline);
    pipeline.add_custom_lowering_pass(new RecordFetches(fetches, marks_left));
    return pipeline;
  }

  // The prefetches of the pipeline compiled for `target`, and whether any mark is left.
  struct Compiled {
    std::vector<Fetch> fetches;
    bool marks_left = false;
  };
  Compiled compiled(const Target& target) {
    Compiled result;
    lowered(&result.fetches, &result.marks_left).compile_to_module({in, table}, "rows", target);
    return result;
  }
};

class RowPrefetchLowering : public testing::EachIsa {};

TEST_P(RowPrefetchLowering, OnePrefetchPerLineOfEachMarkedRow) {
  const auto [fetches, marks_left] = TableRows(true).compiled(GetParam());
  EXPECT_FALSE(marks_left);
  ASSERT_EQ(fetches.size(), 8u);  // 512 bytes, 64 a line
  for (size_t line = 0; line < fetches.size(); ++line) {
    EXPECT_EQ(fetches[line].buffer, "in");
    EXPECT_EQ(fetches[line].bytes, 4);
    const Expr step = simplify(fetches[line].offset - fetches[0].offset);
    ASSERT_TRUE(as_const_int(step)) << fetches[line].offset;
    EXPECT_EQ(*as_const_int(step), 16 * static_cast<int>(line));
  }
}

TEST_P(RowPrefetchLowering, VectorizedMarksFetchEachLanesRow) {
  const auto [fetches, marks_left] = TableRows(true, 4).compiled(GetParam());
  EXPECT_FALSE(marks_left);
  EXPECT_EQ(fetches.size(), 4u * 8u);
}

TEST(RowPrefetch, MarksAreZeroAndTheRowsReadAsWithout) {
  constexpr int kRows = 12;
  Buffer<float> data(kRow, kRows + 2);
  data.for_each_element([&](int x, int y) { data(x, y) = float(x * 31 + y * 7 % 13); });
  Buffer<int> table(kRows + 2);
  for (int y = 0; y < kRows + 2; ++y) table(y) = (y * 5) % (kRows + 2);
  for (int vector_rows : {1, 4}) {
    TableRows rows(true, vector_rows);
    rows.in.set(data);
    rows.table.set(table);
    std::vector<Fetch> fetches;
    bool marks_left = false;
    Buffer<float> out = rows.lowered(&fetches, &marks_left).realize({kRow, kRows});
    out.for_each_element([&](int x, int y) { EXPECT_EQ(out(x, y), data(x, table(y))); });
  }
}

TEST_P(RowPrefetchLowering, PipelinesWithoutMarksStayAsTheyWere) {
  const auto [fetches, marks_left] = TableRows(false).compiled(GetParam());
  EXPECT_TRUE(fetches.empty());
  EXPECT_FALSE(marks_left);
}

INSTANTIATE_TEST_SUITE_P(Isa, RowPrefetchLowering, testing::each_isa(), testing::isa_name);

}  // namespace
}  // namespace attnforge
