// A packed variable-length batch (cu_seqlens) against the same sequences run
// one by one, each in tensors of its own: 8 causal prefill sequences of mixed
// lengths, GQA 8 over 2 heads, D 64, through the runtime and a package of its
// own. Timed in turns; the outputs must agree exactly (each sequence runs the
// kernel of its own shape either way).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
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

struct Arguments {
  std::string json_path;
  std::vector<int> lengths = {1024, 77, 512, 300, 2048, 16, 700, 129};
  double min_seconds = 2.0;
};

// The exit status where the program should stop after parsing (--help, or a
// parse error CLI11 has reported), as CLI11_PARSE would return it.
std::optional<int> parse_arguments(int argc, char** argv, Arguments& args) {
  CLI::App app{"attnforge packed variable-length batch against its sequences one by one"};
  app.add_option("--json", args.json_path, "Write the figures as JSON here");
  app.add_option("--lengths", args.lengths, "Sequence lengths (prefill: Lq = Lk)")->delimiter(',');
  app.add_option("--min-time", args.min_seconds, "Least seconds of timed runs per implementation");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return std::nullopt;
}

// The sequences packed one after another: offsets (cu_seqlens), and q, k, v
// and out [total][heads][D], q, k and v random.
struct PackedBatch {
  std::vector<int32_t> offsets = {0};
  int total = 0;
  std::vector<float> q, k, v, out;
};

PackedBatch random_batch(const std::vector<int>& lengths) {
  PackedBatch batch;
  for (int length : lengths) batch.offsets.push_back(batch.offsets.back() + length);
  batch.total = batch.offsets.back();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  batch.q.resize(size_t(batch.total) * H * D);
  batch.k.resize(size_t(batch.total) * H_KV * D);
  batch.v.resize(batch.k.size());
  batch.out.resize(batch.q.size());
  for (auto* t : {&batch.q, &batch.k, &batch.v})
    for (float& x : *t) x = uniform(rng);
  return batch;
}

// One sequence in tensors of its own, [1, heads, length, D].
struct Sequence {
  std::vector<float> q, k, v, out;
};

std::vector<Sequence> split_sequences(const PackedBatch& batch, const std::vector<int>& lengths) {
  const std::vector<int32_t>& offsets = batch.offsets;
  std::vector<Sequence> sequences;
  for (size_t s = 0; s < lengths.size(); ++s) {
    sequences.push_back({unpack(batch.q, offsets[s], lengths[s], H),
                         unpack(batch.k, offsets[s], lengths[s], H_KV),
                         unpack(batch.v, offsets[s], lengths[s], H_KV),
                         std::vector<float>(size_t(lengths[s]) * H * D)});
  }
  return sequences;
}

void check(const Status& status) {
  if (!status.ok()) throw std::runtime_error(status.message);
}

// The whole batch in one call, through cu_seqlens. Holds the views the call
// reads, so it stays where it is made.
class PackedRun {
 public:
  PackedRun(PackedBatch& batch, const AttentionOptions& options)
      : q_(packed_view(batch.q, H, batch.total)),
        k_(packed_view(batch.k, H_KV, batch.total)),
        v_(packed_view(batch.v, H_KV, batch.total)),
        out_(packed_view(batch.out, H, batch.total)),
        offsets_(TensorView::contiguous(batch.offsets.data(), ElementType::i32,
                                        {static_cast<int64_t>(batch.offsets.size())})),
        options_(options) {
    options_.cu_seqlens_q = &offsets_;
    options_.cu_seqlens_k = &offsets_;
  }
  PackedRun(const PackedRun&) = delete;
  PackedRun& operator=(const PackedRun&) = delete;

  void operator()() const { check(attention(q_, k_, v_, out_, options_)); }

 private:
  const TensorView q_, k_, v_, out_, offsets_;
  AttentionOptions options_;
};

void run_one_by_one(std::vector<Sequence>& sequences, const AttentionOptions& options) {
  for (Sequence& x : sequences) {
    const int64_t length = static_cast<int64_t>(x.q.size() / (H * D));
    check(attention(TensorView::contiguous(x.q.data(), ElementType::f32, {1, H, length, D}),
                    TensorView::contiguous(x.k.data(), ElementType::f32, {1, H_KV, length, D}),
                    TensorView::contiguous(x.v.data(), ElementType::f32, {1, H_KV, length, D}),
                    TensorView::contiguous(x.out.data(), ElementType::f32, {1, H, length, D}),
                    options));
  }
}

// The largest difference between the packed output and the sequences' own.
double max_difference(const PackedBatch& batch, const std::vector<int>& lengths,
                      const std::vector<Sequence>& sequences) {
  double difference = 0.0;
  for (size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<float> mine = unpack(batch.out, batch.offsets[s], lengths[s], H);
    for (size_t n = 0; n < mine.size(); ++n) {
      difference = std::fmax(difference, std::fabs(mine[n] - sequences[s].out[n]));
    }
  }
  return difference;
}

// t: the packed run's timing, then the one-by-one run's.
void report(const Arguments& args, int total, const std::vector<bench::Timing>& t) {
  const bench::RoundRatio ratio = bench::round_ratio(t[0], t[1]);
  fmt::print("causal.br.gqa8x2.d64.f32, {} sequences, {} tokens in all\n", args.lengths.size(),
             total);
  fmt::print("packed (cu_seqlens)   {:9.3f} ms median ({:.3f}-{:.3f})\n", t[0].median_ms,
             t[0].min_ms, t[0].max_ms);
  fmt::print("one by one            {:9.3f} ms median ({:.3f}-{:.3f})\n", t[1].median_ms,
             t[1].min_ms, t[1].max_ms);
  fmt::print(
      "packed / one by one   {:9.3f} median of {} turns' ratios (quartiles {:.3f}-{:.3f}); "
      "outputs identical\n",
      ratio.median, kRounds, ratio.low, ratio.high);
  if (!args.json_path.empty()) {
    std::ofstream(args.json_path) << nlohmann::json{{"lengths", args.lengths},
                                                    {"packed_ms", t[0].median_ms},
                                                    {"one_by_one_ms", t[1].median_ms},
                                                    {"ratio", ratio.median},
                                                    {"ratio_quartiles", {ratio.low, ratio.high}}}
                                         .dump(2)
                                  << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  Arguments args;
  if (const std::optional<int> exit_status = parse_arguments(argc, argv, args)) {
    return *exit_status;
  }
  PackedBatch batch = random_batch(args.lengths);
  AttentionOptions options;
  options.mask = MaskKind::causal;
  options.alignment = MaskAlignment::bottom_right;
  const PackedRun packed(batch, options);
  std::vector<Sequence> sequences = split_sequences(batch, args.lengths);
  const std::function<void()> run_packed = [&] { packed(); };
  const std::function<void()> one_by_one = [&] { run_one_by_one(sequences, options); };

  // The outputs must agree before the timings mean anything.
  run_packed();
  one_by_one();
  if (const double difference = max_difference(batch, args.lengths, sequences); difference != 0.0) {
    fmt::print(stderr, "packed and one-by-one outputs differ by {}\n", difference);
    return 1;
  }
  bench::TimingOptions timing;
  timing.min_seconds = args.min_seconds;
  report(args, batch.total, bench::time_interleaved({run_packed, one_by_one}, kRounds, timing));
  return 0;
}
