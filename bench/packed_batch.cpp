// A packed variable-length batch (cu_seqlens) against the same sequences run
// one by one, each in tensors of its own: 8 causal prefill sequences of mixed
// lengths, GQA 8 over 2 heads, D 64, through the runtime and a package of its
// own. Timed in turns; the outputs must agree exactly (each sequence runs the
// kernel of its own shape either way).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "attnforge/attention.h"
#include "bench/timing.h"

namespace {

using namespace attnforge;

constexpr int H = 8, H_KV = 2, D = 64;
// Many short turns: the ratio is the median of the turns' ratios, and a
// drifting host moves both ways alike within one turn.
constexpr int kRounds = 16;

// Rows [first, first + length) of a packed [total][heads][D] array, as a
// contiguous [1, heads, length, D] copy.
std::vector<float> unpack(const std::vector<float>& packed, int first, int length, int heads) {
  std::vector<float> rows(size_t(length) * heads * D);
  for (int i = 0; i < length; ++i)
    for (int h = 0; h < heads; ++h)
      for (int d = 0; d < D; ++d)
        rows[(size_t(h) * length + i) * D + d] = packed[(size_t(first + i) * heads + h) * D + d];
  return rows;
}

TensorView packed_view(std::vector<float>& data, int heads, int total) {
  return TensorView::strided(data.data(), ElementType::f32, {1, heads, total, D},
                             {int64_t(total) * heads * D, D, int64_t(heads) * D, 1});
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnforge packed variable-length batch against its sequences one by one"};
  std::string json_path;
  std::vector<int> lengths = {1024, 77, 512, 300, 2048, 16, 700, 129};
  double min_seconds = 2.0;
  app.add_option("--json", json_path, "Write the figures as JSON here");
  app.add_option("--lengths", lengths, "Sequence lengths (prefill: Lq = Lk)")->delimiter(',');
  app.add_option("--min-time", min_seconds, "Least seconds of timed runs per implementation");
  CLI11_PARSE(app, argc, argv);

  std::vector<int32_t> offsets = {0};
  for (int length : lengths) offsets.push_back(offsets.back() + length);
  const int total = offsets.back(), count = static_cast<int>(offsets.size());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> q(size_t(total) * H * D), k(size_t(total) * H_KV * D), v(k.size()),
      out(q.size());
  for (auto* t : {&q, &k, &v})
    for (float& x : *t) x = uniform(rng);

  AttentionOptions options;
  options.mask = MaskKind::causal;
  options.alignment = MaskAlignment::bottom_right;
  const TensorView tq = packed_view(q, H, total), tk = packed_view(k, H_KV, total),
                   tv = packed_view(v, H_KV, total), tout = packed_view(out, H, total);
  const TensorView offsets_view = TensorView::contiguous(offsets.data(), ElementType::i32, {count});
  AttentionOptions packed = options;
  packed.cu_seqlens_q = &offsets_view;
  packed.cu_seqlens_k = &offsets_view;

  struct Sequence {
    std::vector<float> q, k, v, out;
  };
  std::vector<Sequence> sequences;
  for (size_t s = 0; s < lengths.size(); ++s) {
    sequences.push_back(
        {unpack(q, offsets[s], lengths[s], H), unpack(k, offsets[s], lengths[s], H_KV),
         unpack(v, offsets[s], lengths[s], H_KV), std::vector<float>(size_t(lengths[s]) * H * D)});
  }
  auto check = [](const Status& status) {
    if (!status.ok()) throw std::runtime_error(status.message);
  };
  auto run_packed = [&] { check(attention(tq, tk, tv, tout, packed)); };
  auto run_one_by_one = [&] {
    for (Sequence& x : sequences) {
      const int64_t length = static_cast<int64_t>(x.q.size() / (H * D));
      check(attention(TensorView::contiguous(x.q.data(), ElementType::f32, {1, H, length, D}),
                      TensorView::contiguous(x.k.data(), ElementType::f32, {1, H_KV, length, D}),
                      TensorView::contiguous(x.v.data(), ElementType::f32, {1, H_KV, length, D}),
                      TensorView::contiguous(x.out.data(), ElementType::f32, {1, H, length, D}),
                      options));
    }
  };
  run_packed();
  run_one_by_one();
  double max_difference = 0.0;
  for (size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<float> mine = unpack(out, offsets[s], lengths[s], H);
    for (size_t n = 0; n < mine.size(); ++n) {
      max_difference = std::fmax(max_difference, std::fabs(mine[n] - sequences[s].out[n]));
    }
  }
  if (max_difference != 0.0) {
    fmt::print(stderr, "packed and one-by-one outputs differ by {}\n", max_difference);
    return 1;
  }
  bench::TimingOptions timing;
  timing.min_seconds = min_seconds;
  const std::vector<bench::Timing> t =
      bench::time_interleaved({run_packed, run_one_by_one}, kRounds, timing);
  const bench::RoundRatio ratio = bench::round_ratio(t[0], t[1]);
  fmt::print("causal.br.gqa8x2.d64.f32, {} sequences, {} tokens in all\n", lengths.size(), total);
  fmt::print("packed (cu_seqlens)   {:9.3f} ms median ({:.3f}-{:.3f})\n", t[0].median_ms,
             t[0].min_ms, t[0].max_ms);
  fmt::print("one by one            {:9.3f} ms median ({:.3f}-{:.3f})\n", t[1].median_ms,
             t[1].min_ms, t[1].max_ms);
  fmt::print(
      "packed / one by one   {:9.3f} median of {} turns' ratios (quartiles {:.3f}-{:.3f}); "
      "outputs identical\n",
      ratio.median, kRounds, ratio.low, ratio.high);
  if (!json_path.empty()) {
    std::ofstream(json_path) << nlohmann::json{{"lengths", lengths},
                                               {"packed_ms", t[0].median_ms},
                                               {"one_by_one_ms", t[1].median_ms},
                                               {"ratio", ratio.median},
                                               {"ratio_quartiles", {ratio.low, ratio.high}}}
                                    .dump(2)
                             << "\n";
  }
  return 0;
}
