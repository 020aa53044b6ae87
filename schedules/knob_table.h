// The knob table: the one description of a schedule's knobs. Each row names a
// Schedule field and says which schedules read it, its legal and searched
// values on CPUs and GPUs, which forms ignore it and how it is written in
// JSON. JSON, canonical(), check(), the space's enumeration and sampling, and
// the strategies' mutation, crossover and model features all derive from it,
// so a new knob is a field of Schedule, a row here, the apply code that reads
// it and a test.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "schedule.h"

namespace attnforge::schedules {

// Which schedules read a knob.
enum class KnobScope {
  attention,  // every attention schedule, on a CPU or a GPU
  cpu,        // CPU schedules; a GPU schedule ignores it (canonical() unsets it)
  gpu,        // CUDA schedules; a CPU schedule must leave it unset (0)
  layer,      // a layer's projections; an attention schedule must leave it unset (0)
};

// The kind of processor a schedule is for: is_gpu_schedule().
enum class TargetKind { cpu, gpu };

// How a knob's value is written in JSON.
enum class KnobEncoding { integer, boolean, name, name_list };

// How the model-guided search sees a knob: log2 of an integer, a one-hot
// vector of an enum's values, a 0/1 flag, or the length of a list.
enum class KnobFeature { log2, one_hot, flag, count };

// Legal integer values: min..max, only powers of two where set; `off` is
// legal besides and means the knob is not used (e.g. pv_chunk 0: one pass).
struct KnobRange {
  int min = 0;
  int max = 1 << 20;
  bool power_of_two = false;
  std::optional<int> off;

  bool contains(int value) const;
  // "3; expected 1, 2, 4 or 8", for a value out of range.
  std::string describe(int value) const;
};

// A knob on one kind of processor.
struct KnobOnTarget {
  std::vector<int> searched;       // the values a search tries; empty: not searched
  std::optional<KnobRange> legal;  // integers: checked wherever a form reads the knob
  std::vector<Form> ignored_by;    // forms that do not read it: canonical() unsets it
};

// One row. Every value is an int code: the integer itself, an enum's
// value, 0/1, or a list of enum values packed by KnobRow::code_of_list.
class KnobRow {
 public:
  // The row of a Schedule field: KnobRow::of<&Schedule::key_block>("key_block", ...).
  template <auto Member>
  static KnobRow of(const char* name, KnobScope scope) {
    using Field = std::decay_t<decltype(Schedule{}.*Member)>;
    return KnobRow(name, scope, &get_member<Member>, &set_member<Member>,
                   std::is_same_v<Field, bool>);
  }

  // Builders, read as the row's named columns.
  KnobRow& encoded_as(KnobEncoding encoding, std::vector<const char*> names = {});
  KnobRow& on_cpu(KnobOnTarget cpu);
  KnobRow& on_gpu(KnobOnTarget gpu);
  // Written to JSON only when set, so records older than the knob keep their keys.
  KnobRow& omitted_when_unset();
  KnobRow& seen_by_model_as(KnobFeature feature);
  // An older JSON key for the same knob, still read.
  KnobRow& formerly(const char* legacy_name);
  // What the knob does, for the knob reference (docs/schedules.md).
  KnobRow& meaning(const char* text);

  const std::string& name() const { return name_; }
  KnobScope scope() const { return scope_; }
  KnobEncoding encoding() const { return encoding_; }
  KnobFeature feature() const { return feature_; }
  bool omits_unset() const { return omitted_when_unset_; }
  const std::vector<const char*>& names() const { return names_; }
  const std::optional<std::string>& legacy_name() const { return legacy_name_; }
  const std::string& meaning() const { return meaning_; }
  const KnobOnTarget& on(TargetKind kind) const { return kind == TargetKind::gpu ? gpu_ : cpu_; }

  int get(const Schedule& schedule) const { return get_(schedule); }
  void set(Schedule& schedule, int code) const { set_(schedule, code); }
  // The value of a schedule that does not use the knob: Schedule{}'s.
  int unset() const { return unset_; }
  // Whether a form on a kind of processor ignores the knob: canonical()
  // unsets it, and check() does not look at it.
  bool ignored(TargetKind kind, Form form) const;
  // Whether a search on some processor tries more than one value.
  bool searched() const { return cpu_.searched.size() > 1 || gpu_.searched.size() > 1; }

  nlohmann::json to_json(int code) const;
  // Throws ScheduleError naming the knob for a value of the wrong type or out of range.
  int from_json(const nlohmann::json& json) const;
  // The code's text for messages: the integer, the name, or the names joined by ','.
  std::string describe(int code) const;

  // A list of enum values (each below 4) as one code, order kept.
  static int code_of_list(const std::vector<int>& values);
  static std::vector<int> list_of_code(int code);

 private:
  using Get = int (*)(const Schedule&);
  using Set = void (*)(Schedule&, int);
  KnobRow(const char* name, KnobScope scope, Get get, Set set, bool stored_as_bool)
      : name_(name),
        scope_(scope),
        get_(get),
        set_(set),
        unset_(get(Schedule{})),
        stored_as_bool_(stored_as_bool) {}

  template <auto Member>
  static int get_member(const Schedule& s) {
    const auto& value = s.*Member;
    if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::vector<ParallelLoop>>) {
      std::vector<int> codes;
      for (ParallelLoop loop : value) codes.push_back(static_cast<int>(loop));
      return code_of_list(codes);
    } else {
      return static_cast<int>(value);
    }
  }
  template <auto Member>
  static void set_member(Schedule& s, int code) {
    auto& value = s.*Member;
    using T = std::decay_t<decltype(value)>;
    if constexpr (std::is_same_v<T, std::vector<ParallelLoop>>) {
      value.clear();
      for (int loop : list_of_code(code)) value.push_back(static_cast<ParallelLoop>(loop));
    } else {
      value = static_cast<T>(code);
    }
  }

  std::string name_;
  KnobScope scope_;
  Get get_;
  Set set_;
  int unset_;  // read once: canonical() asks for it on every candidate of a search
  // A bool field written as 0/1 in JSON (as every record has): other integers are refused.
  bool stored_as_bool_;
  KnobEncoding encoding_ = KnobEncoding::integer;
  std::vector<const char*> names_;
  KnobOnTarget cpu_, gpu_;
  bool omitted_when_unset_ = false;
  KnobFeature feature_ = KnobFeature::log2;
  std::optional<std::string> legacy_name_;
  std::string meaning_;
};

// Every knob, in the order searches draw them.
const std::vector<KnobRow>& knob_table();

// The row named `name` (or its former name); throws ScheduleError for none.
const KnobRow& knob(const std::string& name);

// A schedule's JSON with former knob names replaced by the current ones, so
// records written before a rename keep their database keys.
nlohmann::json with_current_knob_names(nlohmann::json schedule);

}  // namespace attnforge::schedules
