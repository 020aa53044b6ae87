#include "knob_reference.h"

#include <fmt/format.h>

#include <stdexcept>
#include <tuple>
#include <vector>

#include "knob_table.h"

namespace attnforge::schedules {

namespace {

const char* scope_name(KnobScope scope) {
  switch (scope) {
    case KnobScope::attention:
      return "CPU, GPU";
    case KnobScope::cpu:
      return "CPU";
    case KnobScope::gpu:
      return "GPU";
    case KnobScope::layer:
      return "layer";
  }
  return "?";
}

// "`16` `32`": each searched value as its JSON text would read.
std::string searched_values(const KnobRow& row, const KnobOnTarget& on) {
  std::vector<std::string> values;
  for (int code : on.searched) values.push_back(fmt::format("`{}`", row.describe(code)));
  return values.empty() ? "-" : fmt::format("{}", fmt::join(values, " "));
}

std::string legal_values(const KnobRow& row, const KnobOnTarget& on) {
  if (!on.legal) {
    if (row.encoding() == KnobEncoding::boolean) return "false, true";
    return row.names().empty() ? "-" : fmt::format("{}", fmt::join(row.names(), ", "));
  }
  const KnobRange& range = *on.legal;
  std::string text = range.power_of_two ? fmt::format("powers of 2, {}..{}", range.min, range.max)
                                        : fmt::format("{}..{}", range.min, range.max);
  if (range.off) text = fmt::format("{} (off) or {}", *range.off, text);
  return text;
}

// "CPU: materialized; GPU: fused", or "-" where every form reads the knob.
std::string ignored_by(const KnobRow& row, bool cpu, bool gpu) {
  std::vector<std::string> parts;
  for (const auto& [kind, name, used] :
       {std::tuple{TargetKind::cpu, "CPU", cpu}, std::tuple{TargetKind::gpu, "GPU", gpu}}) {
    std::vector<std::string> forms;
    for (Form form : row.on(kind).ignored_by) forms.push_back(to_string(form));
    if (used && !forms.empty())
      parts.push_back(fmt::format("{}: {}", name, fmt::join(forms, ", ")));
  }
  return parts.empty() ? "-" : fmt::format("{}", fmt::join(parts, "; "));
}

// Where the block's lines start and end in `document`.
std::pair<size_t, size_t> block_of(const std::string& document) {
  const size_t begin = document.find(kKnobReferenceBegin);
  const size_t end = document.find(kKnobReferenceEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    throw std::invalid_argument(
        fmt::format("the knob reference's markers ('{}' ... '{}') are "
                    "missing",
                    kKnobReferenceBegin, kKnobReferenceEnd));
  }
  const size_t first = document.find('\n', begin);
  return {first == std::string::npos ? end : first + 1, end};
}

}  // namespace

std::string knob_reference_markdown() {
  std::string text =
      "| knob | used by | what it does | searched on CPUs | legal on CPUs | searched on GPUs | "
      "legal on GPUs | ignored by |\n"
      "|---|---|---|---|---|---|---|---|\n";
  for (const KnobRow& row : knob_table()) {
    const bool cpu = row.scope() != KnobScope::gpu;
    const bool gpu = row.scope() == KnobScope::attention || row.scope() == KnobScope::gpu;
    const KnobOnTarget& on_cpu = row.on(TargetKind::cpu);
    const KnobOnTarget& on_gpu = row.on(TargetKind::gpu);
    text += fmt::format(
        "| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", row.name(), scope_name(row.scope()),
        row.meaning(), cpu ? searched_values(row, on_cpu) : "-",
        cpu ? legal_values(row, on_cpu) : "-", gpu ? searched_values(row, on_gpu) : "-",
        gpu ? legal_values(row, on_gpu) : "-", ignored_by(row, cpu, gpu));
  }
  return text;
}

std::string with_knob_reference(const std::string& document) {
  const auto [first, end] = block_of(document);
  return document.substr(0, first) + knob_reference_markdown() + document.substr(end);
}

std::string knob_reference_in(const std::string& document) {
  const auto [first, end] = block_of(document);
  return document.substr(first, end - first);
}

}  // namespace attnforge::schedules
