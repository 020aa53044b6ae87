#include "row_prefetch.h"

#include <string>
#include <utility>

namespace attnforge {

namespace {

using namespace Halide::Internal;
using Halide::Expr;

constexpr char kMarker[] = "attnforge_prefetch_rows";
constexpr size_t kArgsPerRow = 4;  // buffer name, offset, elements, element bytes

using Lets = std::vector<std::pair<std::string, Expr>>;

// Every marker in an Expr, with the Lets around it that its arguments may use.
class FindMarkers : public IRVisitor {
 public:
  struct Found {
    const Call* call;
    Lets lets;
  };
  std::vector<Found> found;

 private:
  using IRVisitor::visit;
  Lets lets_;

  void visit(const Let* op) override {
    op->value.accept(this);
    lets_.emplace_back(op->name, op->value);
    op->body.accept(this);
    lets_.pop_back();
  }

  void visit(const Call* op) override {
    if (op->name == kMarker) found.push_back({op, lets_});
    IRVisitor::visit(op);
  }
};

class ZeroMarkers : public IRMutator {
  using IRMutator::visit;
  Expr visit(const Call* op) override {
    return op->name == kMarker ? make_zero(op->type) : IRMutator::visit(op);
  }
};

// A marker's argument as written: vectorizing a marker broadcasts its constants.
Expr unbroadcast(const Expr& arg) {
  const Broadcast* broadcast = arg.as<Broadcast>();
  return broadcast ? broadcast->value : arg;
}

// One prefetch per cache line of each row a marker names (per lane, where
// the marker was vectorized), inside the Lets its arguments use.
Stmt prefetches_of(const FindMarkers::Found& marker) {
  std::vector<Stmt> fetches;
  const std::vector<Expr>& args = marker.call->args;
  for (size_t a = 0; a + kArgsPerRow <= args.size(); a += kArgsPerRow) {
    const std::string& buffer = unbroadcast(args[a]).as<StringImm>()->value;
    const int elements = static_cast<int>(*as_const_int(unbroadcast(args[a + 2])));
    const int bytes = static_cast<int>(*as_const_int(unbroadcast(args[a + 3])));
    const Expr base = Variable::make(Halide::Handle(), buffer);
    const Expr offset = args[a + 1];
    for (int lane = 0; lane < offset.type().lanes(); ++lane) {
      const Expr start = offset.type().is_vector() ? extract_lane(offset, lane) : offset;
      for (int element = 0; element < elements; element += kCacheLineBytes / bytes) {
        fetches.push_back(
            Evaluate::make(Call::make(Halide::UInt(8 * bytes), Call::prefetch,
                                      {base, simplify(start + element), 1, 1}, Call::Intrinsic)));
      }
    }
  }
  Stmt result = Block::make(fetches);
  for (auto let = marker.lets.rbegin(); let != marker.lets.rend(); ++let) {
    result = LetStmt::make(let->first, let->second, result);
  }
  return result;
}

// Markers reach a Stmt in a stored value or a let-bound one (once CSE lifts
// them); each becomes its prefetches just before that Stmt.
class LowerMarkers : public IRMutator {
  using IRMutator::visit;

  template <typename Rebuild>
  Stmt lowered(const Expr& value, Rebuild rebuild) {
    FindMarkers markers;
    value.accept(&markers);
    if (markers.found.empty()) return {};
    std::vector<Stmt> stmts;
    for (const auto& marker : markers.found) stmts.push_back(prefetches_of(marker));
    stmts.push_back(rebuild(ZeroMarkers().mutate(value)));
    return Block::make(stmts);
  }

  Stmt visit(const Store* op) override {
    Stmt result = lowered(op->value, [&](Expr value) {
      return Store::make(op->name, value, op->index, op->param, op->predicate, op->alignment);
    });
    return result.defined() ? result : IRMutator::visit(op);
  }

  Stmt visit(const LetStmt* op) override {
    Stmt body = mutate(op->body);
    Stmt result =
        lowered(op->value, [&](Expr value) { return LetStmt::make(op->name, value, body); });
    if (result.defined()) return result;
    return body.same_as(op->body) ? Stmt(op) : LetStmt::make(op->name, op->value, body);
  }
};

}  // namespace

Expr prefetch_rows(const std::vector<BufferRow>& rows) {
  std::vector<Expr> args;
  for (const BufferRow& row : rows) {
    args.push_back(Halide::Internal::StringImm::make(row.buffer.name()));
    args.push_back(row.offset);
    args.push_back(row.elements);
    args.push_back(row.buffer.type().bytes());
  }
  return Call::make(Halide::Float(32), kMarker, args, Call::PureExtern);
}

void lower_row_prefetches(Halide::Pipeline pipeline) {
  pipeline.add_custom_lowering_pass(new LowerMarkers);
}

}  // namespace attnforge
