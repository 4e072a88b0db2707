# Third-party dependencies, all from Debian packages (scripts/setup.sh installs them).
#
# BLAS: OpenBLAS's CBLAS interface. Looked up by header and library name rather than through
# Debian's OpenBLASConfig.cmake, whose absolute paths break when the packages are unpacked
# under another prefix (as scripts/device-check.sh does on the lent GPU machine).

find_package(OpenMP REQUIRED COMPONENTS CXX)

find_path(SIMKIT_CBLAS_INCLUDE_DIR cblas.h
  PATH_SUFFIXES openblas-pthread openblas-openmp openblas x86_64-linux-gnu/openblas-pthread
                x86_64-linux-gnu/openblas-openmp x86_64-linux-gnu)
find_library(SIMKIT_OPENBLAS_LIBRARY NAMES openblas
  PATH_SUFFIXES openblas-pthread openblas-openmp x86_64-linux-gnu/openblas-pthread x86_64-linux-gnu/openblas-openmp)
if(NOT SIMKIT_CBLAS_INCLUDE_DIR OR NOT SIMKIT_OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found (cblas.h: ${SIMKIT_CBLAS_INCLUDE_DIR}, library: ${SIMKIT_OPENBLAS_LIBRARY}). "
                      "Run scripts/setup.sh or: apt-get install libopenblas-dev")
endif()
add_library(simkit_blas INTERFACE)
target_include_directories(simkit_blas SYSTEM INTERFACE ${SIMKIT_CBLAS_INCLUDE_DIR})
target_link_libraries(simkit_blas INTERFACE ${SIMKIT_OPENBLAS_LIBRARY})
set(SIMKIT_BLAS_DESCRIPTION "OpenBLAS (${SIMKIT_OPENBLAS_LIBRARY})")
