# Decides whether the Python extension module is built (SIMKIT_PYTHON) and adds python/ if so.
#
# nanobind comes from PyPI, so it is found through the interpreter that has it installed:
# scripts/setup.sh makes .venv/ with it and scripts/build.sh points CMake at .venv/bin/python;
# `pip install .` (scikit-build-core) passes its own build environment's interpreter.
set(SIMKIT_HAVE_PYTHON 0)
if(SIMKIT_PYTHON STREQUAL "OFF")
  return()
endif()
if(SIMKIT_PYTHON STREQUAL "ON")
  set(_simkit_py_required REQUIRED)
endif()
find_package(Python 3.9 COMPONENTS Interpreter Development.Module ${_simkit_py_required})
if(Python_FOUND)
  execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                  OUTPUT_VARIABLE _simkit_nb_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_simkit_nb_dir)
    find_package(nanobind CONFIG PATHS "${_simkit_nb_dir}" NO_DEFAULT_PATH)
  endif()
endif()
if(Python_FOUND AND nanobind_FOUND)
  set(SIMKIT_HAVE_PYTHON 1)
  message(STATUS "simkit: Python module on (${Python_EXECUTABLE}, nanobind ${nanobind_VERSION})")
  add_subdirectory(${PROJECT_SOURCE_DIR}/python)
elseif(SIMKIT_PYTHON STREQUAL "ON")
  message(FATAL_ERROR "SIMKIT_PYTHON=ON but nanobind is not installed for ${Python_EXECUTABLE} "
                      "(scripts/setup.sh installs it into .venv; or: pip install nanobind)")
else()
  message(STATUS "simkit: Python module off (no Python headers or no nanobind; scripts/setup.sh installs them)")
endif()
