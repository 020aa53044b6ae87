// bench_schedules: times the naive baseline, every schedule preset and the
// OpenBLAS unfused peer on a set of attention shapes and thread counts, rated
// against the FMA peak measured in the same run. Prints a table and the command
// that made it; --json writes the rows.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "bench/bench_rows.h"
#include "bench/bench_shapes.h"
#include "bench/schedule_bench.h"

namespace attnforge::bench {
namespace {

int run_main(int argc, char** argv) {
  CLI::App app{"Times the naive baseline, every schedule preset and OpenBLAS unfused attention"};
  std::string json_path;
  BenchOptions options;
  double min_time = options.timing.min_seconds;
  std::vector<std::string> shape_texts;
  app.add_option("--json", json_path, "Write the rows as a JSON array to this file");
  app.add_option("--threads", options.threads, "Thread counts, e.g. 1,2 (run in ascending order)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* min_time_option =
      app.add_option("--min-time", min_time,
                     "Least total seconds of timed runs per row (0.5; --quick: 0.05)")
          ->check(CLI::NonNegativeNumber);
  app.add_flag("--quick", options.quick, "Tiny shapes and short timings, for a smoke run");
  app.add_option("--shapes", shape_texts,
                 "Only these shapes, as BxHxLqxLkxD (e.g. 1x8x512x512x64), comma separated")
      ->delimiter(',')
      ->check([](const std::string& text) {
        try {
          parse_shape(text);
          return std::string();
        } catch (const std::invalid_argument& error) {
          return std::string(error.what());
        }
      });
  CLI11_PARSE(app, argc, argv);

  options.timing.min_seconds = min_time_option->count() > 0 || !options.quick ? min_time : 0.05;
  std::vector<Shape> shapes = options.quick ? quick_shapes() : default_shapes();
  if (!shape_texts.empty()) {
    shapes.clear();
    for (const auto& text : shape_texts) shapes.push_back(parse_shape(text));
  }

  ScheduleBench bench(options);
  bench.measure_peaks();
  for (const Shape& shape : shapes) bench.add_shape(shape);
  bench.run();
  bench.report(json_path, command_line(argc, argv));
  return 0;
}

}  // namespace
}  // namespace attnforge::bench

int main(int argc, char** argv) {
  try {
    return attnforge::bench::run_main(argc, argv);
  } catch (const std::exception& error) {
    fmt::print(stderr, "bench_schedules: {}\n", error.what());
    return 1;
  }
}
