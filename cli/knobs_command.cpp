// `attnforge knobs`: the knob reference (schedules/knob_reference.h), printed
// or written into the Markdown file that holds its markers.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

#include "commands.h"
#include "schedules/knob_reference.h"

namespace attnforge::cli {

namespace {

// Replaces the block between the markers of `path`; the file is written
// whole to a sibling and renamed over it, so a failure leaves it as it was.
void write_reference(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("knobs: cannot read {}", path.string()));
  const std::string document{std::istreambuf_iterator<char>(in), {}};
  const std::string updated = schedules::with_knob_reference(document);
  if (updated == document) return;
  const std::filesystem::path temporary = path.string() + ".knobs.tmp";
  std::ofstream out(temporary, std::ios::binary);
  out << updated;
  out.close();  // a failed flush shows here, before the rename
  if (!out) {
    std::filesystem::remove(temporary);
    throw std::runtime_error(fmt::format("knobs: cannot write {}", temporary.string()));
  }
  std::filesystem::rename(temporary, path);
}

}  // namespace

Action add_knobs_command(CLI::App& app) {
  CLI::App* command = app.add_subcommand("knobs", "Print the knob reference (a Markdown table)");
  auto file = std::make_shared<std::string>();
  command->add_option("--write", *file,
                      "rewrite the reference between its markers in this Markdown file");
  return [=] {
    if (!*command) return -1;
    if (file->empty()) {
      fmt::print("{}", schedules::knob_reference_markdown());
    } else {
      write_reference(*file);
    }
    return 0;
  };
}

}  // namespace attnforge::cli
