# attnforge_emit_package(<name> SPECS <spec>... TARGETS <targets> [DB <tuning.jsonl>] [PYTHON]
#                        [MODS <name>=<file>...] [BACKWARD <spec>...])
# Runs `attnforge emit` at build time into ${CMAKE_CURRENT_BINARY_DIR}/<name>
# (with PYTHON, its Python module too: `emit --python`; MODS: `emit --mod` for
# each, the compiled modifiers cached in the build tree; BACKWARD: `emit --backward`)
# and defines <name>: an INTERFACE target linking the attnforge runtime with
# that package's kernels and Halide runtime. <name>_DIR holds the package path.
function(attnforge_emit_package name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "PYTHON" "TARGETS;DB" "SPECS;MODS;BACKWARD")
  set(package "${CMAKE_CURRENT_BINARY_DIR}/${name}")
  list(JOIN ARG_SPECS "," spec_list)
  set(db_args "")
  set(db_depends "")
  if (ARG_DB)
    set(db_args --db "${ARG_DB}")
    set(db_depends "${ARG_DB}")
  endif ()
  set(mod_args "")
  set(mod_depends "")
  foreach (mod IN LISTS ARG_MODS)
    list(APPEND mod_args --mod "${mod}")
    string(REGEX REPLACE "^[^=]*=" "" mod_file "${mod}")
    list(APPEND mod_depends "${mod_file}")
  endforeach ()
  set(backward_args "")
  if (ARG_BACKWARD)
    list(JOIN ARG_BACKWARD "," backward_list)
    set(backward_args --backward "${backward_list}")
  endif ()
  set(python_args "")
  set(python_outputs "")
  set(python_depends "")
  if (ARG_PYTHON)
    set(python_args --python)
    set(python_outputs "${package}/python/attnforge/__init__.py")
    set(python_depends "${PROJECT_SOURCE_DIR}/python/module.cpp"
                       "${PROJECT_SOURCE_DIR}/python/CMakeLists.txt"
                       "${PROJECT_SOURCE_DIR}/python/attnforge/__init__.py"
                       "${PROJECT_SOURCE_DIR}/python/attnforge/key_positions.py"
                       "${PROJECT_SOURCE_DIR}/python/attnforge/torch.py")
  endif ()
  add_custom_command(
    OUTPUT "${package}/lib/libattnforge_kernels.a" "${package}/lib/libattnforge_halide_runtime.a"
           ${python_outputs}
    COMMAND "${CMAKE_COMMAND}" -E env "XDG_CACHE_HOME=${CMAKE_CURRENT_BINARY_DIR}/${name}_cache"
            $<TARGET_FILE:attnforge> emit ${db_args} ${mod_args} --specs "${spec_list}"
            --targets "${ARG_TARGETS}" --out "${package}" ${backward_args} ${python_args}
    DEPENDS attnforge attnforge_runtime attnforge_spec attnforge_kernel_support ${db_depends} ${python_depends}
            ${mod_depends}
    COMMENT "Emitting the kernel package ${name}"
    VERBATIM)
  add_custom_target(${name}_emit DEPENDS "${package}/lib/libattnforge_kernels.a")

  add_library(${name}_kernels STATIC IMPORTED)
  set_target_properties(${name}_kernels PROPERTIES
    IMPORTED_LOCATION "${package}/lib/libattnforge_kernels.a")
  add_library(${name}_halide_runtime STATIC IMPORTED)
  set_target_properties(${name}_halide_runtime PROPERTIES
    IMPORTED_LOCATION "${package}/lib/libattnforge_halide_runtime.a")
  find_package(Threads REQUIRED)
  add_library(${name} INTERFACE)
  target_link_libraries(${name} INTERFACE attnforge_runtime ${name}_kernels
                                          ${name}_halide_runtime Threads::Threads ${CMAKE_DL_LIBS})
  add_dependencies(${name} ${name}_emit)
  set(${name}_DIR "${package}" PARENT_SCOPE)
endfunction()
