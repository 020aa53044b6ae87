// attnforge emit: the best schedule of every (spec, target, shape bucket) in a
// tuning database, plus a generic kernel per spec and target, compiled ahead
// of time into a CMake package.
#include <fmt/format.h>

#include <sstream>

#include "autotune/database.h"
#include "autotune/modifier_file.h"
#include "commands.h"
#include "emit/kernel_plan.h"
#include "emit/package_writer.h"
#include "emit/python_module.h"
#include "spec/layer_spec.h"

namespace attnforge::cli {

namespace {

struct EmitArgs {
  std::string db, targets = "host", out, specs, backward;
  std::vector<std::string> mods;
  bool python = false;
};

struct SpecLists {
  std::vector<AttentionSpec> attention;
  std::vector<LayerSpec> layers;
};

// --specs: attention and layer specs, told apart by how they are written;
// `.mod<name>` gets the hash of the loaded modifier of that name.
SpecLists parse_specs(const std::string& list, const std::vector<autotune::LoadedModifier>& mods) {
  SpecLists specs;
  std::stringstream entries(list);
  std::string text;
  while (std::getline(entries, text, ',')) {
    if (text.empty()) continue;
    if (names_a_layer(text)) {
      specs.layers.push_back(LayerSpec::parse(text));
    } else {
      specs.attention.push_back(AttentionSpec::parse(autotune::with_modifier_hashes(text, mods)));
    }
  }
  return specs;
}

int run_emit(const EmitArgs& args) {
  if (!args.db.empty() && !std::filesystem::exists(args.db)) {
    throw std::invalid_argument("--db: " + args.db + " does not exist");
  }
  const autotune::Database database(args.db);  // without --db: empty
  std::vector<emit::EmitTarget> targets = emit::parse_emit_targets(args.targets);
  // Loaded before the kernels compile: the compiling children inherit them.
  const std::vector<autotune::LoadedModifier> mods = autotune::load_modifier_arguments(args.mods);
  const SpecLists specs = parse_specs(args.specs, mods);
  const SpecLists backward = parse_specs(args.backward, mods);
  if (!backward.layers.empty()) {
    throw std::invalid_argument("--backward: " + backward.layers.front().to_string() +
                                " is a layer; backward kernels are for attention specs");
  }
  emit::KernelPlan kernel_plan =
      emit::plan_kernels(database, targets, specs.attention, specs.layers, backward.attention);
  for (const std::string& skipped : kernel_plan.skipped) {
    fmt::print(stderr, "skipped {}\n", skipped);
  }
  for (const std::string& served : kernel_plan.served_by_other) fmt::print(stderr, "{}\n", served);
  const std::vector<emit::PlannedKernel>& plan = kernel_plan.kernels;
  if (plan.empty()) {
    throw std::invalid_argument("nothing to emit: the database has no tuned spec and no --specs");
  }
  emit::Toolchain toolchain{ATTNFORGE_CXX,
                            ATTNFORGE_AR,
                            ATTNFORGE_RUNTIME_LIBRARY,
                            ATTNFORGE_SPEC_LIBRARY,
                            ATTNFORGE_KERNEL_SUPPORT_LIBRARY,
                            ATTNFORGE_RUNTIME_INCLUDE,
                            ATTNFORGE_HALIDE_INCLUDE};
  auto progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  emit::write_package(plan, targets, toolchain, args.out, progress);
  if (args.python) {
    emit::write_python_module({ATTNFORGE_PYTHON_SOURCES, ATTNFORGE_CMAKE, ATTNFORGE_NINJA,
                               ATTNFORGE_PYTHON, ATTNFORGE_CXX},
                              args.out, progress);
  }
  fmt::print("{}: {} kernels; use with find_package(attnforge) and -Dattnforge_DIR={}\n", args.out,
             plan.size(), (std::filesystem::absolute(args.out) / "lib/cmake/attnforge").string());
  return 0;
}

}  // namespace

Action add_emit_command(CLI::App& app) {
  auto args = std::make_shared<EmitArgs>();
  CLI::App* emit = app.add_subcommand("emit", "Compile the tuned kernels into a CMake package");
  emit->add_option("--db", args->db, "Tuning database (JSONL) whose winners to emit");
  emit->add_option("--targets", args->targets,
                   "Comma-separated: host, avx2, avx512, cuda or Halide targets (default host)");
  emit->add_option("--specs", args->specs,
                   "Comma-separated attention or layer specs to include even without a tuned "
                   "record");
  emit->add_option("--backward", args->backward,
                   "Comma-separated attention specs whose backward kernel (attention_backward) "
                   "ships too, with their forward kernel returning the lse (CPU targets)");
  emit->add_option("--out", args->out, "Package folder (created)")->required();
  emit->add_option("--mod", args->mods,
                   "name=FILE: load a modifier (docs/modifiers.md) for specs that name "
                   ".mod<name>; repeatable");
  emit->add_flag("--python", args->python,
                 "Also build the Python module into <out>/python (needs nanobind)");
  return [emit, args] { return *emit ? run_emit(*args) : -1; };
}

}  // namespace attnforge::cli
