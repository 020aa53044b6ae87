#include "package_writer.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "algorithm/modifier_key_ranges.h"
#include "algorithm/modifier_registry.h"
#include "autotune/builder.h"
#include "autotune/runner.h"
#include "autotune/subprocess.h"
#include "schedules/cuda_limits.h"
#include "schedules/schedule_choice.h"
#include "spec/shape_bucket.h"

namespace attnforge::emit {

namespace {

namespace fs = std::filesystem;

bool any_cuda(const std::vector<EmitTarget>& targets) {
  for (const EmitTarget& t : targets) {
    if (t.cuda) return true;
  }
  return false;
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

void run(const std::vector<std::string>& argv, const std::string& what) {
  if (run_program(argv) != 0) throw std::runtime_error(what + " failed: " + argv[0]);
}

// What the kernel table tells the runtime of a kernel's inputs' alignment.
int input_alignment(const PlannedKernel& k, const EmitTarget& target) {
  // The backward's GPU form reads its inputs element by element.
  if (!target.cuda || k.schedule == "naive" || k.backward) return 1;
  return schedules::cuda_input_alignment(schedules::resolve_schedule(k.schedule));
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Halide names a header's include guard after the path it was written to;
// the package's copy gets a guard named after the function, so that sources
// do not depend on where emit ran.
void copy_kernel_header(const fs::path& from, const fs::path& to, const std::string& function) {
  std::string text = read_text(from);
  const std::string prefix = "#ifndef ";
  if (text.compare(0, prefix.size(), prefix) == 0) {
    const std::string guard = text.substr(prefix.size(), text.find('\n') - prefix.size());
    const std::string replacement = "ATTNFORGE_KERNEL_" + function + "_H";
    for (size_t at = text.find(guard); at != std::string::npos;
         at = text.find(guard, at + replacement.size())) {
      text.replace(at, guard.size(), replacement);
    }
  }
  write_text(to, text);
}

// A kernel of a mask rule ships with the kernel of its key ranges.
bool takes_key_ranges(const PlannedKernel& k) {
  return !k.layer && has_mask_rule(k.spec);
}

std::string key_ranges_function(const PlannedKernel& k) {
  return k.function + "_key_ranges";
}

// The kernel table's rows of a modifier's tensors, for kernel `k` (named after it).
std::string modifier_tensor_rows(const PlannedKernel& k) {
  std::string rows;
  for (const ModifierTensor& t : modifier_of(k.spec).tensors) {
    std::string extents;
    for (const ModifierDimension& d : t.dims) {
      static const std::map<ModifierExtent, const char*> codes = {
          {ModifierExtent::batch, "attnforge::kModifierBatch"},
          {ModifierExtent::heads, "attnforge::kModifierHeads"},
          {ModifierExtent::queries, "attnforge::kModifierQueries"},
          {ModifierExtent::keys, "attnforge::kModifierKeys"}};
      const auto code = codes.find(d.extent);
      extents += (extents.empty() ? "" : ", ") +
                 (code == codes.end() ? std::to_string(d.size) : std::string(code->second));
    }
    rows += fmt::format("    {{\"{}\", {}, {}, {}, {{{}}}}},\n", t.name,
                        static_cast<int>(t.type.code()), t.type.bits(), t.dims.size(), extents);
  }
  return fmt::format("const attnforge::ModifierTensorEntry {}_modifier_tensors[] = {{\n{}}};\n\n",
                     k.function, rows);
}

void copy_into_package(const fs::path& from, const fs::path& to) {
  fs::create_directories(to.parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

// Compiles every kernel in a child process of its own, two at a time, so a
// compiler crash is that kernel's failure. A tuned kernel that fails is left
// out (its spec keeps the generic kernel); a generic one that fails is fatal.
std::vector<PlannedKernel> compile_kernels(
    const std::vector<PlannedKernel>& plan, const std::vector<EmitTarget>& targets,
    const fs::path& work, const std::function<void(const std::string&)>& progress) {
  std::vector<autotune::Job> jobs;
  for (const PlannedKernel& k : plan) {
    // Function names become file names: nothing in them may leave the package folder.
    if (k.function.empty() || k.function.find_first_not_of(
                                  "abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
      throw std::invalid_argument("refusing kernel name '" + k.function + "': not [a-z0-9_]");
    }
    const Halide::Target target = targets[k.target].target;
    jobs.push_back([k, target, work](autotune::MeasurementGate&) {
      if (k.layer) {
        autotune::build_layer_aot(*k.layer, target, k.schedule, work, k.function,
                                  autotune::AotOutput::object);
      } else if (k.backward) {
        autotune::build_backward_aot(k.spec, target, k.schedule, work, k.function,
                                     autotune::AotOutput::object);
      } else {
        autotune::build_aot({k.spec, target, k.schedule}, work, k.function,
                            autotune::AotOutput::object);
        if (takes_key_ranges(k)) {
          autotune::build_key_ranges_aot(k.spec, target, work, key_ranges_function(k),
                                         autotune::AotOutput::object);
        }
      }
      return autotune::Outcome{};
    });
  }
  autotune::RunnerOptions options;
  options.timeout_seconds = 600;
  std::vector<autotune::Outcome> outcomes = autotune::ContainedRunner(work, options).run(jobs);
  std::vector<PlannedKernel> built;
  for (size_t n = 0; n < plan.size(); ++n) {
    const PlannedKernel& k = plan[n];
    if (outcomes[n].status == autotune::Status::ok) {
      progress(fmt::format("[{}/{}] {} ({})", n + 1, plan.size(), k.function, k.origin));
      built.push_back(k);
    } else if (k.bucket.rfind("generic", 0) != 0 && !k.backward) {
      progress(fmt::format("[{}/{}] {} left out: {}", n + 1, plan.size(), k.function,
                           outcomes[n].detail));
    } else {
      throw std::runtime_error("compiling " + k.function + " failed: " + outcomes[n].detail);
    }
  }
  return built;
}

}  // namespace

std::string kernel_table_source(const std::vector<PlannedKernel>& plan,
                                const std::vector<EmitTarget>& targets) {
  const bool cuda = any_cuda(targets);
  std::string text =
      "// Generated by attnforge emit: the kernels of this package, for the attnforge runtime.\n"
      "#include <HalideRuntime.h>\n";
  if (cuda) text += "#include <HalideRuntimeCuda.h>\n";
  text += "\n#include \"attnforge/kernel_table.h\"\n\nextern \"C\" {\n";
  for (const PlannedKernel& k : plan) {
    text += fmt::format("int {}_argv(void** args);\n", k.function);
    if (takes_key_ranges(k))
      text += fmt::format("int {}_argv(void** args);\n", key_ranges_function(k));
  }
  text += "}\n\nnamespace {\n\n";
  for (const PlannedKernel& k : plan) {
    if (!k.layer && k.spec.modified()) text += modifier_tensor_rows(k);
  }
  text += "const attnforge::KernelEntry kEntries[] = {\n";
  for (const PlannedKernel& k : plan) {
    const EmitTarget& t = targets[k.target];
    const ShapeBucket& b = k.shape;
    std::string modifier;
    if (!k.layer && k.spec.modified()) {
      modifier = fmt::format(", {0}_modifier_tensors, {1}", k.function,
                             modifier_of(k.spec).tensors.size());
      modifier += takes_key_ranges(k) ? fmt::format(", &{}_argv, {}", key_ranges_function(k),
                                                    key_range_heads(k.spec))
                                      : ", nullptr, 0";
    }
    if (k.backward) modifier = ", nullptr, 0, nullptr, 0, 1";
    text += fmt::format(
        "    {{\"{0}\", \"{1}\", \"{2}\", &{0}_argv, 0x{3:x}u, {4}, {5}, {6}, {7}, {8}, "
        "{9}{10}}},\n",
        k.function, k.spec_text(), t.target.to_string(), t.cpu_features, t.cuda ? 1 : 0, b.batch,
        b.q_len, b.kv_len, t.rank, input_alignment(k, t), modifier);
  }
  text += "};\n\n";
  if (cuda) {
    text +=
        "int cuda_wrap(halide_buffer_t* buffer, uint64_t pointer) {\n"
        "  return halide_cuda_wrap_device_ptr(nullptr, buffer, pointer);\n"
        "}\n"
        "int cuda_detach(halide_buffer_t* buffer) {\n"
        "  return halide_cuda_detach_device_ptr(nullptr, buffer);\n"
        "}\n\n";
  }
  text += fmt::format(
      "}}  // namespace\n\n"
      "extern \"C\" const attnforge::KernelPackage attnforge_kernel_package = {{\n"
      "    kEntries, {}, {}, {}}};\n",
      plan.size(), cuda ? "&cuda_wrap" : "nullptr", cuda ? "&cuda_detach" : "nullptr");
  return text;
}

std::string package_config() {
  return R"(# Generated by attnforge emit. find_package(attnforge) gives attnforge::runtime:
# the runtime API (attnforge/attention.h) with this package's kernels linked in.
include(CMakeFindDependencyMacro)
find_dependency(Threads)
find_dependency(fmt)
get_filename_component(_attnforge_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if (NOT TARGET attnforge::runtime)
  add_library(attnforge::halide_runtime STATIC IMPORTED)
  set_target_properties(attnforge::halide_runtime PROPERTIES
    IMPORTED_LOCATION "${_attnforge_prefix}/lib/libattnforge_halide_runtime.a"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
  add_library(attnforge::kernels STATIC IMPORTED)
  set_target_properties(attnforge::kernels PROPERTIES
    IMPORTED_LOCATION "${_attnforge_prefix}/lib/libattnforge_kernels.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_attnforge_prefix}/include"
    INTERFACE_LINK_LIBRARIES "attnforge::halide_runtime")
  add_library(attnforge::spec STATIC IMPORTED)
  set_target_properties(attnforge::spec PROPERTIES
    IMPORTED_LOCATION "${_attnforge_prefix}/lib/libattnforge_spec.a"
    INTERFACE_LINK_LIBRARIES "fmt::fmt")
  add_library(attnforge::kernel_support STATIC IMPORTED)
  set_target_properties(attnforge::kernel_support PROPERTIES
    IMPORTED_LOCATION "${_attnforge_prefix}/lib/libattnforge_kernel_support.a"
    INTERFACE_LINK_LIBRARIES "fmt::fmt")
  add_library(attnforge::runtime STATIC IMPORTED)
  set_target_properties(attnforge::runtime PROPERTIES
    IMPORTED_LOCATION "${_attnforge_prefix}/lib/libattnforge_runtime.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_attnforge_prefix}/include"
    INTERFACE_LINK_LIBRARIES "attnforge::kernels;attnforge::spec;attnforge::kernel_support;attnforge::halide_runtime;${CMAKE_DL_LIBS}")
endif ()
unset(_attnforge_prefix)
)";
}

std::string package_manifest(const std::vector<PlannedKernel>& plan,
                             const std::vector<EmitTarget>& targets) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const PlannedKernel& k : plan) {
    nlohmann::json schedule = nlohmann::json::parse(k.schedule, nullptr, false);
    kernels.push_back(
        {{"function", k.function},
         {"spec", k.spec_text()},
         {"target", targets[k.target].target.to_string()},
         {"bucket", k.bucket},
         {"schedule", schedule.is_discarded() ? nlohmann::json(k.schedule) : schedule},
         {"origin", k.origin}});
  }
  return nlohmann::json{{"attnforge_version", ATTNFORGE_VERSION}, {"kernels", kernels}}.dump(2) +
         "\n";
}

void write_package(const std::vector<PlannedKernel>& plan, const std::vector<EmitTarget>& targets,
                   const Toolchain& toolchain, const fs::path& out,
                   const std::function<void(const std::string&)>& progress) {
  const fs::path work = out / ".build";
  fs::remove_all(work);
  fs::create_directories(work);
  std::vector<PlannedKernel> built = compile_kernels(plan, targets, work, progress);
  std::vector<std::string> objects;
  for (const PlannedKernel& k : built) {
    copy_kernel_header(work / (k.function + ".h"),
                       out / "include/attnforge/kernels" / (k.function + ".h"), k.function);
    objects.push_back((work / (k.function + ".o")).string());
    if (takes_key_ranges(k)) objects.push_back((work / (key_ranges_function(k) + ".o")).string());
  }

  progress("kernel table and Halide runtime");
  write_text(out / "src/kernel_table.cpp", kernel_table_source(built, targets));
  copy_into_package(toolchain.runtime_include / "attnforge/kernel_table.h",
                    out / "include/attnforge/kernel_table.h");
  for (const char* header :
       {"attention.h", "halide_view.h", "kv_cache.h", "mha_layer.h", "status.h", "tensor.h"}) {
    copy_into_package(toolchain.runtime_include / "attnforge" / header,
                      out / "include/attnforge" / header);
  }
  copy_into_package(toolchain.halide_include / "HalideRuntime.h", out / "include/HalideRuntime.h");
  if (any_cuda(targets)) {
    copy_into_package(toolchain.halide_include / "HalideRuntimeCuda.h",
                      out / "include/HalideRuntimeCuda.h");
  }
  const fs::path table_object = work / "kernel_table.o";
  run({toolchain.cxx, "-std=c++17", "-O2", "-fPIC", "-I", (out / "include").string(), "-c",
       (out / "src/kernel_table.cpp").string(), "-o", table_object.string()},
      "compiling the kernel table");
  objects.push_back(table_object.string());

  const fs::path kernels = out / "lib/libattnforge_kernels.a";
  fs::create_directories(kernels.parent_path());
  fs::remove(kernels);  // ar adds to an existing archive
  std::vector<std::string> ar = {toolchain.ar, "rcs", kernels.string()};
  ar.insert(ar.end(), objects.begin(), objects.end());
  run(ar, "archiving the kernels");
  autotune::build_runtime(runtime_target(targets), out / "lib/libattnforge_halide_runtime.a");
  copy_into_package(toolchain.runtime_library, out / "lib/libattnforge_runtime.a");
  copy_into_package(toolchain.spec_library, out / "lib/libattnforge_spec.a");
  copy_into_package(toolchain.kernel_support_library, out / "lib/libattnforge_kernel_support.a");

  write_text(out / "lib/cmake/attnforge/attnforgeConfig.cmake", package_config());
  write_text(out / "lib/cmake/attnforge/attnforgeConfigVersion.cmake",
             fmt::format("set(PACKAGE_VERSION \"{}\")\n"
                         "set(PACKAGE_VERSION_COMPATIBLE TRUE)\n"
                         "if (PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)\n"
                         "  set(PACKAGE_VERSION_COMPATIBLE FALSE)\n"
                         "endif ()\n"
                         "if (PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)\n"
                         "  set(PACKAGE_VERSION_EXACT TRUE)\n"
                         "endif ()\n",
                         ATTNFORGE_VERSION));
  write_text(out / "manifest.json", package_manifest(built, targets));
  fs::remove_all(work);
}

}  // namespace attnforge::emit
