#include "tensor_core_calls.h"

#include <string>
#include <vector>

namespace attnforge {

namespace {

using Halide::Expr;

// The f32 held in the low (high) 32 bits of a 64-bit result.
Expr low_f32(const Expr& bits) {
  return Halide::reinterpret(Halide::Float(32), Halide::cast<uint32_t>(bits));
}
Expr high_f32(const Expr& bits) {
  return low_f32(bits >> 32);
}

}  // namespace

std::array<Expr, 4> mma_m16n8k16(MmaInput input, const std::array<Expr, 4>& a,
                                 const std::array<Expr, 2>& b, const std::array<Expr, 4>& c) {
  // Each argument bound by a let around the result: a Tuple update of the
  // accumulators then sees that its values read them (Halide 21 looks for
  // such reads in lets, not inside calls) and stores them only after all are
  // computed.
  std::vector<std::pair<std::string, Expr>> bound;
  std::vector<Expr> arguments;
  auto bind = [&](const Expr& word) {
    const std::string name = Halide::Internal::unique_name("mma_argument");
    bound.emplace_back(name, word);
    arguments.push_back(
        Halide::reinterpret(Halide::UInt(32), Halide::Internal::Variable::make(word.type(), name)));
  };
  for (const Expr& word : a) bind(word);
  for (const Expr& word : b) bind(word);
  for (const Expr& value : c) bind(value);
  const std::string name =
      std::string("attnforge_mma_") + (input == MmaInput::f16 ? "f16" : "bf16") + "_f32_";
  auto call = [&](const char* half) {
    return Halide::Internal::Call::make(Halide::UInt(64), name + half, arguments,
                                        Halide::Internal::Call::PureExtern);
  };
  auto with_arguments = [&](Expr result) {
    for (auto it = bound.rbegin(); it != bound.rend(); ++it) {
      result = Halide::Internal::Let::make(it->first, it->second, result);
    }
    return result;
  };
  const Expr lo = call("lo"), hi = call("hi");
  return {with_arguments(low_f32(lo)), with_arguments(high_f32(lo)), with_arguments(low_f32(hi)),
          with_arguments(high_f32(hi))};
}

}  // namespace attnforge
