#include "prefetch_lines.h"

#include <string>
#include <vector>

namespace attnforge::schedules {

namespace {

using namespace Halide::Internal;
using Halide::Expr;

// The loops Halide's prefetch split adds are named "prefetch_split_<buffer>.<dim>".
bool is_split_loop(const std::string& name) {
  return name.rfind("prefetch_split_", 0) == 0;
}

class PrefetchLineSteps : public IRMutator {
  using IRMutator::visit;
  std::vector<std::string> split_loops_;

  Stmt visit(const For* op) override {
    if (!is_split_loop(op->name)) return IRMutator::visit(op);
    split_loops_.push_back(op->name);
    Stmt result = IRMutator::visit(op);
    split_loops_.pop_back();
    return result;
  }

  Expr visit(const Call* op) override {
    if (!op->is_intrinsic(Call::prefetch) || op->args.size() < 2) return IRMutator::visit(op);
    const int bytes = op->type.bytes();
    Expr offset = op->args[1];
    for (const std::string& name : split_loops_) {
      if (!expr_uses_var(offset, name)) continue;
      // The offset is affine in the split's loop variable, its step in bytes.
      Expr at_zero = simplify(substitute(name, 0, offset));
      Expr step_bytes = simplify(substitute(name, 1, offset) - at_zero);
      offset = simplify(at_zero + Variable::make(Halide::Int(32), name) * (step_bytes / bytes));
    }
    if (offset.same_as(op->args[1])) return op;
    std::vector<Expr> args = op->args;
    args[1] = offset;
    return Call::make(op->type, Call::prefetch, args, op->call_type);
  }
};

}  // namespace

void fix_prefetch_line_steps(Halide::Pipeline pipeline) {
  pipeline.add_custom_lowering_pass(new PrefetchLineSteps);
}

}  // namespace attnforge::schedules
