#include "backward_problem.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>

#include "spec/dtype_traits.h"

namespace attnforge::autotune {

namespace {

Halide::Runtime::Buffer<void> like(const halide_buffer_t& shape, DType dtype) {
  return Halide::Runtime::Buffer<void>(halide_type_of(dtype), shape.dim[0].extent,
                                       shape.dim[1].extent, shape.dim[2].extent,
                                       shape.dim[3].extent);
}

void fill(Halide::Runtime::Buffer<void>& t, DType dtype, float value, uint32_t seed, bool random) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  uint8_t* data = static_cast<uint8_t*>(t.data());
  for (size_t n = 0; n < t.number_of_elements(); ++n) {
    traits_of(dtype).store(data + n * t.type().bytes(), random ? dist(rng) : value);
  }
}

void write_bytes(const std::filesystem::path& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw std::runtime_error("writing " + path.string() + " failed");
}

void read_bytes(const std::filesystem::path& path, void* data, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  in.read(static_cast<char*>(data), static_cast<std::streamsize>(bytes));
  if (!in || static_cast<size_t>(in.gcount()) != bytes) {
    throw std::runtime_error(path.string() + ": expected " + std::to_string(bytes) + " bytes");
  }
}

}  // namespace

BackwardProblem::BackwardProblem(const AttentionSpec& spec, TuningShape shape, uint32_t seed)
    : spec_(spec), inputs_(forward_spec_of(spec), shape, seed) {
  KernelArguments& f = inputs_.arguments();
  d_out_ = like(*f.out, spec.dtype);
  fill(d_out_, spec.dtype, 0.0f, seed + 7, true);
  dq_ = like(*f.q, spec.dtype);
  dk_ = like(*f.k, spec.dtype);
  dv_ = like(*f.v, spec.dtype);
  lse_ = Halide::Runtime::Buffer<float>(shape.q_len, spec.heads, shape.batch);
  f.lse = lse_.raw_buffer();
  args_.q = f.q;
  args_.k = f.k;
  args_.v = f.v;
  args_.out = f.out;
  args_.d_out = d_out_.raw_buffer();
  args_.lse = f.lse;
  args_.key_lengths = f.key_lengths;
  args_.bias = f.bias;
  args_.alibi_slopes = f.alibi_slopes;
  args_.scale = f.scale;
  args_.window_left = f.window_left;
  args_.window_right = f.window_right;
  args_.dq = dq_.raw_buffer();
  args_.dk = dk_.raw_buffer();
  args_.dv = dv_.raw_buffer();
  if (spec.bias_grad) {
    d_bias_ =
        Tensor(halide_type_of(spec.dtype), shape.kv_len, shape.q_len, spec.heads, shape.batch);
    args_.d_bias = d_bias_.raw_buffer();
  }
}

void BackwardProblem::save_forward(const std::filesystem::path& dir) const {
  const halide_buffer_t& out = *args_.out;
  write_bytes(dir / "forward_out.bin", out.host, out.size_in_bytes());
  write_bytes(dir / "forward_lse.bin", lse_.data(), lse_.size_in_bytes());
}

void BackwardProblem::load_forward(const std::filesystem::path& dir) {
  halide_buffer_t& out = *args_.out;
  read_bytes(dir / "forward_out.bin", out.host, out.size_in_bytes());
  read_bytes(dir / "forward_lse.bin", lse_.data(), lse_.size_in_bytes());
}

std::vector<float> BackwardProblem::gradients() const {
  std::vector<float> all;
  for (const halide_buffer_t* g : {args_.dq, args_.dk, args_.dv, args_.d_bias}) {
    if (!g) continue;
    const std::vector<float> values = inputs_.as_f32(g);
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

void BackwardProblem::clear_gradients() {
  for (Tensor* g : {&dq_, &dk_, &dv_, &d_bias_}) {
    if (g->data() == nullptr) continue;
    fill(*g, spec_.dtype, std::numeric_limits<float>::quiet_NaN(), 0, false);
  }
}

}  // namespace attnforge::autotune
