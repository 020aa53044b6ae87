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
  std::vector<Expr> arguments;
  for (const Expr& word : a) arguments.push_back(Halide::reinterpret(Halide::UInt(32), word));
  for (const Expr& word : b) arguments.push_back(Halide::reinterpret(Halide::UInt(32), word));
  for (const Expr& value : c) arguments.push_back(Halide::reinterpret(Halide::UInt(32), value));
  const std::string name =
      std::string("attnforge_mma_") + (input == MmaInput::f16 ? "f16" : "bf16") + "_f32_";
  auto call = [&](const char* half) {
    return Halide::Internal::Call::make(Halide::UInt(64), name + half, arguments,
                                        Halide::Internal::Call::PureExtern);
  };
  const Expr lo = call("lo"), hi = call("hi");
  return {low_f32(lo), high_f32(lo), low_f32(hi), high_f32(hi)};
}

namespace {

// Element `which` (0: the low 16 bits) of a word of two f16 or bf16, as f32.
Expr word_element(MmaInput input, const Expr& word, int which) {
  const Expr bits =
      Halide::cast<uint16_t>(Halide::reinterpret(Halide::UInt(32), word) >> (16 * which));
  return Halide::cast<float>(
      Halide::reinterpret(input == MmaInput::f16 ? Halide::Float(16) : Halide::BFloat(16), bits));
}

}  // namespace

std::array<Expr, 4> emulated_mma_m16n8k16(MmaInput input, const Halide::Var& lane,
                                          const std::array<Expr, 4>& a,
                                          const std::array<Expr, 2>& b,
                                          const std::array<Expr, 4>& c) {
  auto at_lane = [&](const Expr& word, const Expr& other) {
    return Halide::Internal::substitute(lane.name(), other, word);
  };
  // Lane 4g + t: A's words (row g, k 2t), (g + 8, 2t), (g, 2t + 8), (g + 8,
  // 2t + 8); B's (k 2t, column g), (2t + 8, g); results (g + 8h, 2t + e) as
  // word e + 2h, each word's low half the lower k.
  const Expr group = lane / 4, in_group = lane % 4;
  std::array<Expr, 4> d;
  for (int word = 0; word < 4; ++word) {
    const int e = word % 2, h = word / 2;
    Expr sum = c[word];
    for (int k = 0; k < 16; ++k) {
      const int holder = (k % 8) / 2, high = k / 8, which = k % 2;
      const Expr a_value = word_element(input, at_lane(a[2 * high + h], group * 4 + holder), which);
      const Expr b_value =
          word_element(input, at_lane(b[high], (in_group * 2 + e) * 4 + holder), which);
      sum += a_value * b_value;
    }
    d[word] = sum;
  }
  return d;
}

namespace {

Expr lane_group_call(const char* name, const Expr& value) {
  const Expr bits = Halide::reinterpret(Halide::UInt(32), Halide::cast<float>(value));
  return Halide::reinterpret(Halide::Float(32),
                             Halide::Internal::Call::make(Halide::UInt(32), name, {bits},
                                                          Halide::Internal::Call::PureExtern));
}

// Lanes 1 apart combine first, then pairs 2 apart, as the butterfly does:
// (v0 . v1) . (v2 . v3) in every lane of the group.
template <typename Combine>
Expr emulated_lane_group(const Halide::Var& lane, const Expr& value, Combine combine) {
  const Expr first = lane / 4 * 4;
  std::array<Expr, 4> values;
  for (int t = 0; t < 4; ++t) {
    values[t] = Halide::cast<float>(Halide::Internal::substitute(lane.name(), first + t, value));
  }
  return combine(combine(values[0], values[1]), combine(values[2], values[3]));
}

}  // namespace

Expr lane_group_max(const Expr& value) {
  return lane_group_call("attnforge_lane_group_max_f32", value);
}

Expr lane_group_sum(const Expr& value) {
  return lane_group_call("attnforge_lane_group_sum_f32", value);
}

Expr emulated_lane_group_max(const Halide::Var& lane, const Expr& value) {
  return emulated_lane_group(lane, value,
                             [](const Expr& a, const Expr& b) { return Halide::max(a, b); });
}

Expr emulated_lane_group_sum(const Halide::Var& lane, const Expr& value) {
  return emulated_lane_group(lane, value, [](const Expr& a, const Expr& b) { return a + b; });
}

}  // namespace attnforge
