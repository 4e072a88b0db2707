# The OpenCL port of the merge sort study (bench/mergesort/opencl/, issue 32): built when an
# OpenCL ICD loader and the C and C++ headers are found, so the same Merge Path kernel runs on
# NVIDIA's OpenCL driver beside CUDA and on PoCL on a CPU-only machine. The CUDA toolkit ships
# CL/cl.h and libOpenCL.so but not the C++ bindings (CL/opencl.hpp), hence the second look-up.
option(SIMKIT_OPENCL "Build the OpenCL merge sort study when OpenCL (ICD loader, C and C++ headers) is found" ON)
set(SIMKIT_HAVE_OPENCL FALSE)
if(SIMKIT_OPENCL)
  find_package(OpenCL QUIET)
  find_path(SIMKIT_OPENCL_HPP_DIR CL/opencl.hpp HINTS ${OpenCL_INCLUDE_DIR})
  if(OpenCL_FOUND AND SIMKIT_OPENCL_HPP_DIR)
    set(SIMKIT_HAVE_OPENCL TRUE)
    message(STATUS "simkit: OpenCL on (${OpenCL_LIBRARY}, headers ${OpenCL_VERSION_STRING} in ${OpenCL_INCLUDE_DIR})")
  else()
    message(STATUS "simkit: OpenCL off (no ICD loader / headers; scripts/setup.sh installs ocl-icd-opencl-dev "
                   "opencl-clhpp-headers pocl-opencl-icd)")
  endif()
else()
  message(STATUS "simkit: OpenCL off (SIMKIT_OPENCL=OFF)")
endif()
