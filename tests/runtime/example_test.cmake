# Builds an example (examples/<NAME>) as an outside project against an emitted
# package and runs its program <NAME>. -DPACKAGE=<package> -DEXAMPLE=<source>
#   -DNAME=<program> -DWORK=<build folder> -DNINJA=<ninja> -DCXX=<compiler>
file(REMOVE_RECURSE "${WORK}")
foreach (step IN ITEMS configure build run)
  if (step STREQUAL "configure")
    set(command "${CMAKE_COMMAND}" -S "${EXAMPLE}" -B "${WORK}" -G Ninja
        "-DCMAKE_MAKE_PROGRAM=${NINJA}" "-DCMAKE_CXX_COMPILER=${CXX}"
        "-Dattnforge_DIR=${PACKAGE}/lib/cmake/attnforge")
  elseif (step STREQUAL "build")
    set(command "${CMAKE_COMMAND}" --build "${WORK}")
  else ()
    set(command "${WORK}/${NAME}")
  endif ()
  execute_process(COMMAND ${command} RESULT_VARIABLE result OUTPUT_VARIABLE output
                  ERROR_VARIABLE output)
  message("${output}")
  if (NOT result EQUAL 0)
    message(FATAL_ERROR "example ${step} failed (${result})")
  endif ()
endforeach ()
