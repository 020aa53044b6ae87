// The mma emulated on the CPU (emulated_mma_m16n8k16) against the fragment
// layout of the PTX ISA, and with it the tensor-core GEMM prototype
// (prototypes/mma_gemm/mma_gemm_generator.cpp) run on the CPU: the generator's
// indexing of A, B and C and its accumulator slots, checked against a
// double reference.
#include <Halide.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "algorithm/tensor_core_calls.h"
#include "prototypes/mma_gemm/mma_gemm_view.h"
#include "spec/half_precision.h"

namespace attnforge {
namespace {

using Halide::Runtime::Buffer;

struct Shape {
  int tiles_m, tiles_n, warps_m, warps_n;
};

// C = A B for A M x K row-major and B K x N column-major, f16 values in
// pairs along K; C read back through the generator's view.
void expect_product(const Shape& shape, int blocks_m, int blocks_n, int k) {
  const int m = 16 * shape.tiles_m * shape.warps_m * blocks_m;
  const int n = 8 * shape.tiles_n * shape.warps_n * blocks_n;
  const Halide::Target target = Halide::get_host_target();
  auto generator =
      Halide::Internal::GeneratorRegistry::create("mma_gemm", Halide::GeneratorContext(target));
  generator->set_generatorparam_value("warp_tiles_m", std::to_string(shape.tiles_m));
  generator->set_generatorparam_value("warp_tiles_n", std::to_string(shape.tiles_n));
  generator->set_generatorparam_value("warps_m", std::to_string(shape.warps_m));
  generator->set_generatorparam_value("warps_n", std::to_string(shape.warps_n));
  Halide::Callable gemm;
  try {
    gemm = generator->compile_to_callable();
  } catch (const Halide::Error& error) {
    FAIL() << error.what();
  }

  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  std::vector<uint16_t> a_halves(size_t(m) * k), b_halves(size_t(n) * k);
  for (uint16_t& x : a_halves) x = float_to_f16_bits(value(rng));
  for (uint16_t& x : b_halves) x = float_to_f16_bits(value(rng));
  Buffer<uint32_t, 2> a(k / 2, m), b(k / 2, n);
  std::memcpy(a.data(), a_halves.data(), a_halves.size() * 2);
  std::memcpy(b.data(), b_halves.data(), b_halves.size() * 2);

  std::vector<float> c_storage(size_t(m) * n, NAN);
  Buffer<float, 8> c(c_storage.data(), 8,
                     mma_gemm_c_dims(m, n, shape.tiles_m, shape.tiles_n).data());
  ASSERT_EQ(gemm(a, b, c), 0);

  // f32 sums of k products below 1 in magnitude: within 1e-5 of their
  // magnitude sum.
  int wrong = 0;
  for (int row = 0; row < m; ++row) {
    for (int column = 0; column < n; ++column) {
      double exact = 0, scale = 0;
      for (int kk = 0; kk < k; ++kk) {
        const double term = double(f16_bits_to_float(a_halves[size_t(row) * k + kk])) *
                            f16_bits_to_float(b_halves[size_t(column) * k + kk]);
        exact += term;
        scale += std::abs(term);
      }
      const float got = c_storage[size_t(row) * n + column];
      if (!(std::abs(got - exact) <= 1e-5 * scale)) {
        if (++wrong <= 5)
          ADD_FAILURE() << "C(" << row << ", " << column << ") = " << got << ", expected " << exact;
      }
    }
  }
  EXPECT_EQ(wrong, 0) << m << "x" << n << "x" << k;
}

// One mma, D = A B + C for a 16 x 16 A and 16 x 8 B: each lane's words
// placed as the PTX ISA lays them out (lane 4g + t: A (g, 2t), (g + 8, 2t),
// (g, 2t + 8), (g + 8, 2t + 8); B (2t, g), (2t + 8, g); D (g + 8h, 2t + e)
// as word e + 2h), the low half of a word the lower k.
void expect_one_mma(MmaInput input) {
  auto bits_of = [&](float x) {
    return input == MmaInput::f16 ? float_to_f16_bits(x) : float_to_bf16_bits(x);
  };
  auto value_of = [&](uint16_t bits) {
    return input == MmaInput::f16 ? f16_bits_to_float(bits) : bf16_bits_to_float(bits);
  };
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> value(-1.f, 1.f);
  uint16_t a[16][16], b[16][8];
  for (auto& row : a)
    for (uint16_t& x : row) x = bits_of(value(rng));
  for (auto& row : b)
    for (uint16_t& x : row) x = bits_of(value(rng));
  auto word = [](uint16_t low, uint16_t high) { return uint32_t(low) | uint32_t(high) << 16; };
  Halide::Buffer<uint32_t, 2> a_words(4, 32), b_words(2, 32);
  Halide::Buffer<float, 2> c_words(4, 32);
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int w = 0; w < 4; ++w) {
      const int row = g + 8 * (w % 2), k = 2 * t + 8 * (w / 2);
      a_words(w, lane) = word(a[row][k], a[row][k + 1]);
      c_words(w, lane) = value(rng);
    }
    for (int w = 0; w < 2; ++w)
      b_words(w, lane) = word(b[2 * t + 8 * w][g], b[2 * t + 8 * w + 1][g]);
  }
  Halide::Var w("w"), lane("lane");
  const std::array<Halide::Expr, 4> d = emulated_mma_m16n8k16(
      input, lane, {a_words(0, lane), a_words(1, lane), a_words(2, lane), a_words(3, lane)},
      {b_words(0, lane), b_words(1, lane)},
      {c_words(0, lane), c_words(1, lane), c_words(2, lane), c_words(3, lane)});
  Halide::Func out("out");
  out(w, lane) = Halide::mux(w, {d[0], d[1], d[2], d[3]});
  Halide::Buffer<float, 2> result = out.realize({4, 32});
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, t = l % 4;
    for (int wd = 0; wd < 4; ++wd) {
      const int row = g + 8 * (wd / 2), column = 2 * t + wd % 2;
      double exact = c_words(wd, l);
      for (int k = 0; k < 16; ++k) exact += double(value_of(a[row][k])) * value_of(b[k][column]);
      EXPECT_NEAR(result(wd, l), exact, 1e-5) << "lane " << l << " word " << wd;
    }
  }
}

TEST(EmulatedMma, F16WordsGiveTheProductAsTheIsaLaysItOut) {
  expect_one_mma(MmaInput::f16);
}

TEST(EmulatedMma, Bf16WordsGiveTheProductAsTheIsaLaysItOut) {
  expect_one_mma(MmaInput::bf16);
}

TEST(MmaGemmOnTheCpu, OneWarpPerBlockComputesTheProduct) {
  expect_product({2, 4, 1, 1}, 2, 3, 96);
}

TEST(MmaGemmOnTheCpu, BlocksOfFourWarpsComputeTheProduct) {
  expect_product({4, 4, 2, 2}, 1, 2, 32);
}

}  // namespace
}  // namespace attnforge
