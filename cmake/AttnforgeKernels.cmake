# attnforge_add_kernel_set(<name> TARGET <halide target> SCHEDULE <schedule>
#                          [GENERATOR attention|attention_backward] SPECS <spec>...)
# Builds one static Halide library per spec (function <name>_<spec with '.'
# as '_'>), one shared Halide runtime, and an INTERFACE target <name> whose
# header <name>_table.h lists {spec, argv entry point} for every kernel.
function(attnforge_add_kernel_set name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "TARGET;SCHEDULE;GENERATOR" "SPECS")
  if (NOT ARG_GENERATOR)
    set(ARG_GENERATOR attention)
  endif ()
  add_halide_runtime(${name}_runtime TARGETS ${ARG_TARGET})

  set(includes "")
  set(entries "")
  set(libraries "")
  foreach (spec IN LISTS ARG_SPECS)
    string(REPLACE "." "_" symbol "${name}_${spec}")
    # CUDA kernels also write their lowered statement: its launches give
    # scripts/ptx-check each kernel's threads and shared memory.
    set(extra_outputs "")
    if (ARG_TARGET MATCHES "cuda")
      set(extra_outputs STMT ${symbol}_stmt)
    endif ()
    add_halide_library(${symbol} FROM attnforge.generator ${extra_outputs}
                       GENERATOR ${ARG_GENERATOR}
                       FUNCTION_NAME ${symbol}
                       TARGETS ${ARG_TARGET}
                       USE_RUNTIME ${name}_runtime
                       PARAMS spec=${spec} schedule=${ARG_SCHEDULE})
    list(APPEND libraries ${symbol})
    string(APPEND includes "#include \"${symbol}.h\"\n")
    string(APPEND entries "    {\"${spec}\", &${symbol}_argv},\n")
  endforeach ()

  set(table_dir "${CMAKE_CURRENT_BINARY_DIR}/${name}_include")
  set(KERNEL_SET_NAME ${name})
  set(KERNEL_INCLUDES "${includes}")
  set(KERNEL_ENTRIES "${entries}")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/kernel_table.h.in" "${table_dir}/${name}_table.h"
                 @ONLY)

  add_library(${name} INTERFACE)
  target_include_directories(${name} INTERFACE "${table_dir}")
  target_link_libraries(${name} INTERFACE ${libraries} ${name}_runtime)
endfunction()
