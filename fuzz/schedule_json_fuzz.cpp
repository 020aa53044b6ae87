// Schedule JSON on arbitrary bytes: the bounded parser rejects or parses,
// from_json throws ScheduleError or gives a schedule that round-trips, and
// canonical() is idempotent; checking it against a spec never throws.
#include <cstddef>
#include <cstdint>
#include <string>

#include "schedules/bounded_json.h"
#include "schedules/schedule.h"
#include "schedules/space.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnforge::schedules;
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json json;
  try {
    json = parse_bounded_json(text, "schedule");
  } catch (const std::invalid_argument&) {
    return 0;
  }
  Schedule schedule;
  try {
    schedule = Schedule::from_json(json);
  } catch (const ScheduleError&) {
    return 0;
  }
  if (Schedule::from_json(schedule.to_json()) != schedule) __builtin_trap();
  if (canonical(canonical(schedule)) != canonical(schedule)) __builtin_trap();
  static const attnforge::AttentionSpec spec =
      attnforge::AttentionSpec::parse("causal.gqa8x2.d64.f32");
  static const Halide::Target target("x86-64-linux-avx-avx2-avx512-avx512_skylake-f16c-fma-sse41");
  (void)check(schedule, spec, target);
  return 0;
}
