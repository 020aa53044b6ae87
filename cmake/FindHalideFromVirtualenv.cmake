# Points find_package(Halide) at the Halide SDK inside the project's
# virtualenv (the `halide` wheel), unless Halide_ROOT is already given.
if (NOT Halide_ROOT AND NOT DEFINED ENV{Halide_ROOT})
  if (NOT Python_EXECUTABLE)
    set(Python_EXECUTABLE "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  endif ()
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c "import halide; print(halide.install_dir())"
    OUTPUT_VARIABLE _attnforge_halide_root
    OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _attnforge_halide_status)
  if (NOT _attnforge_halide_status EQUAL 0)
    message(FATAL_ERROR "No Halide in ${Python_EXECUTABLE}: run scripts/bootstrap first")
  endif ()
  set(Halide_ROOT "${_attnforge_halide_root}" CACHE PATH "Halide SDK root")
  # The wheel keeps its CMake packages under lib64/, which find_package does not search here.
  set(Halide_DIR "${_attnforge_halide_root}/lib64/cmake/Halide" CACHE PATH "")
  set(HalideHelpers_DIR "${_attnforge_halide_root}/lib64/cmake/HalideHelpers" CACHE PATH "")
endif ()
