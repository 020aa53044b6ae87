#include "bench_rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

#include "spec/kernel_arguments.h"
#include "spec/key_range.h"
#include "spec/kv_quantization.h"

namespace attnforge::bench {

std::string shape_label(int batch, int heads, int q_len, int kv_len, int head_dim) {
  return fmt::format("B{} H{} Lq{} Lk{} D{}", batch, heads, q_len, kv_len, head_dim);
}

long long attended_pairs(const AttentionSpec& spec, int q_len, int kv_len) {
  long long pairs = 0;
  for (int i = 0; i < q_len; ++i) pairs += key_count(query_keys(spec, i, q_len, kv_len));
  return pairs;
}

double attention_flops(const AttentionSpec& spec, int batch, int q_len, int kv_len) {
  return 4.0 * batch * spec.heads * spec.head_dim *
         static_cast<double>(attended_pairs(spec, q_len, kv_len));
}

double attention_bytes(const AttentionSpec& spec, int batch, int q_len, int kv_len) {
  const KeyRange<long> first = query_keys(spec, 0, q_len, kv_len);
  const KeyRange<long> last = query_keys(spec, q_len - 1, q_len, kv_len);
  const long seen_keys = std::max(0L, last.end - first.begin);  // ranges move right with the row
  const double element = halide_type_of(spec.dtype).bytes();
  const double rows = double(batch) * spec.heads * q_len * spec.head_dim;  // Q, and the output
  const double keys = double(batch) * spec.kv_heads * seen_keys;           // K and V rows
  double bytes = 2.0 * (element * rows + cache_row_bytes(spec) * keys);
  if (spec.bias == BiasKind::tensor) {
    bytes += element * batch * spec.heads * double(attended_pairs(spec, q_len, kv_len));
  }
  return bytes;
}

namespace {

// Sets `ratio` on each row whose spec has a peer (peer_of: empty for none)
// from the peer's row of the same shape, implementation and thread count.
template <typename PeerOf>
void set_vs_peer(std::vector<BenchRow>& rows, const std::vector<Timing>& timings,
                 double BenchRow::*ratio, PeerOf peer_of) {
  for (size_t n = 0; n < rows.size(); ++n) {
    const std::string peer = peer_of(AttentionSpec::parse(rows[n].spec));
    if (peer.empty()) continue;
    for (size_t m = 0; m < rows.size(); ++m) {
      const BenchRow& other = rows[m];
      if (other.spec == peer && other.shape == rows[n].shape && other.impl == rows[n].impl &&
          other.threads == rows[n].threads) {
        rows[n].*ratio = round_ratio(timings[n], timings[m]).median;
      }
    }
  }
}

}  // namespace

void set_vs_contiguous(std::vector<BenchRow>& rows, const std::vector<Timing>& timings) {
  set_vs_peer(rows, timings, &BenchRow::vs_contiguous, [](AttentionSpec spec) {
    if (!spec.paged()) return std::string();
    spec.page_size = 0;
    return spec.to_string();
  });
}

void set_vs_bf16(std::vector<BenchRow>& rows, const std::vector<Timing>& timings) {
  set_vs_peer(rows, timings, &BenchRow::vs_bf16, [](AttentionSpec spec) {
    if (!spec.quantized_kv()) return std::string();
    spec.kv_storage = KvStorage::dtype;
    spec.dtype = DType::bf16;
    return spec.to_string();
  });
}

void set_vs_plain(std::vector<BenchRow>& rows, const std::vector<Timing>& timings,
                  std::pair<int, int> window) {
  set_vs_peer(rows, timings, &BenchRow::vs_plain, [window](AttentionSpec spec) {
    if (!spec.softcapped() && !spec.run_time_window && !spec.modified()) return std::string();
    spec.softcap = 0.0f;
    spec.modifier.clear();
    spec.modifier_hash.clear();
    return with_window(spec, window.first, window.second).to_string();
  });
}

void to_json(nlohmann::ordered_json& json, const BenchRow& row) {
  json = {{"spec", row.spec},
          {"shape", row.shape},
          {"impl", row.impl},
          {"threads", row.threads},
          {"ms_median", row.ms_median},
          {"ms_min", row.ms_min},
          {"ms_max", row.ms_max},
          {"gflops", row.gflops},
          {"pct_peak", row.pct_peak},
          {"speedup_vs_naive", row.speedup_vs_naive},
          {"pct_bandwidth", row.pct_bandwidth},
          {"vs_contiguous", row.vs_contiguous},
          {"vs_bf16", row.vs_bf16},
          {"vs_plain", row.vs_plain},
          {"read_gbps", row.read_gbps}};
}

void write_rows_json(const std::string& path, const std::vector<BenchRow>& rows) {
  std::ofstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path + " for writing");
  file << nlohmann::ordered_json(rows).dump(2) << '\n';
  if (!file) throw std::runtime_error("error writing " + path);
}

void print_rows(const std::vector<BenchRow>& rows, std::FILE* stream) {
  size_t spec_w = 4, shape_w = 5, impl_w = 4;
  for (const auto& row : rows) {
    spec_w = std::max(spec_w, row.spec.size());
    shape_w = std::max(shape_w, row.shape.size());
    impl_w = std::max(impl_w, row.impl.size());
  }
  const std::string header = fmt::format(
      "{:<{}}  {:<{}}  {:<{}}  {:>3}  {:>10}  {:>10}  {:>10}  {:>8}  {:>6}  {:>8}  {:>5}  {:>9}  "
      "{:>7}  {:>8}",
      "spec", spec_w, "shape", shape_w, "impl", impl_w, "thr", "median ms", "min ms", "max ms",
      "GFLOP/s", "% peak", "vs naive", "% bw", "vs contig", "vs bf16", "vs plain");
  const std::string rule(header.size(), '-');
  fmt::print(stream, "{}\n", header);
  const BenchRow* previous = nullptr;
  for (const auto& row : rows) {
    if (previous == nullptr || previous->spec != row.spec || previous->shape != row.shape) {
      fmt::print(stream, "{}\n", rule);
    }
    fmt::print(
        stream,
        "{:<{}}  {:<{}}  {:<{}}  {:>3}  {:>10.3f}  {:>10.3f}  {:>10.3f}  {:>8.2f}  {:>6.1f}  "
        "{:>7.2f}x  {:>5}  {:>9}  {:>7}  {:>8}\n",
        row.spec, spec_w, row.shape, shape_w, row.impl, impl_w, row.threads, row.ms_median,
        row.ms_min, row.ms_max, row.gflops, row.pct_peak, row.speedup_vs_naive,
        row.pct_bandwidth > 0 ? fmt::format("{:.1f}", row.pct_bandwidth) : "-",
        row.vs_contiguous > 0 ? fmt::format("{:.3f}x", row.vs_contiguous) : "-",
        row.vs_bf16 > 0 ? fmt::format("{:.3f}x", row.vs_bf16) : "-",
        row.vs_plain > 0 ? fmt::format("{:.3f}x", row.vs_plain) : "-");
    previous = &row;
  }
}

// argv as a shell would need it typed.
std::string command_line(int argc, char** argv) {
  std::string line;
  for (int n = 0; n < argc; ++n) {
    std::string arg = argv[n];
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyz"
                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789_-+=/.,:@%") == std::string::npos;
    if (!plain) {
      std::string quoted = "'";
      for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      arg = quoted + "'";
    }
    line += (n == 0 ? "" : " ") + arg;
  }
  return line;
}

}  // namespace attnforge::bench
