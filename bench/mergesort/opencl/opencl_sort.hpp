#pragma once
// The merge sort study's Merge Path in OpenCL (issue 32; the seed's section 3.7, which it left
// unfinished): the kernels of merge_path.cu written in OpenCL C (merge_path.cl) and run through
// the ICD loader, so the same algorithm runs on NVIDIA's OpenCL driver beside CUDA on one card,
// and on PoCL on a machine without a GPU. Built only where CMake found OpenCL
// (SIMKIT_HAVE_OPENCL; cmake/SimkitOpenCL.cmake).
//
// Devices are numbered across platforms in the order the ICD loader lists them (platform 0's
// devices first), the numbering opencl_devices() returns and `device_index` takes.
//
// Errors are simkit::Error: unsupported when no OpenCL platform is installed; invalid_argument
// for the arguments merge_path_sort_cuda refuses, a device index out of range, a bad
// SIMKIT_OPENCL_DEVICE or a work-group size above the kernels' limit on the device;
// out_of_memory for a failed allocation; device for any other failed OpenCL call (its error
// name, e.g. CL_INVALID_WORK_GROUP_SIZE, and for a failed program build the build log).

#include <cstdint>
#include <string>
#include <vector>

#include "mergesort_study.hpp"

namespace simkit::mergesort {

/// One OpenCL device as its driver describes it.
struct OpenClDevice {
  int index = 0;                    // the study's device number (see above)
  int platform_index = 0;           // its platform, and its place there: SIMKIT_OPENCL_DEVICE's
  int device_in_platform = 0;       // "platform:device"
  std::string platform;             // e.g. "NVIDIA CUDA", "Portable Computing Language"
  std::string name;                 // e.g. "NVIDIA H100 80GB HBM3"
  std::string type;                 // "gpu", "cpu", "accelerator" or "other"
  std::string version;              // CL_DEVICE_VERSION, e.g. "OpenCL 3.0 CUDA"
  std::string driver;               // CL_DRIVER_VERSION
  int compute_units = 0;            // SMs on NVIDIA, cores on PoCL
  uint64_t global_memory = 0;       // bytes
  int64_t max_work_group_size = 0;  // the largest `block` the device takes
};

/// Every device of every platform; empty when no platform is installed (never throws for that).
std::vector<OpenClDevice> opencl_devices();

/// The device merge_path_sort_opencl(..., device_index) runs on: the given index; for -1 the one
/// SIMKIT_OPENCL_DEVICE=platform:device names when set, else the first GPU, else device 0.
OpenClDevice opencl_device(int device_index = -1);

/// Sorts host[0, n) in place as merge_path_sort_cuda does, on an OpenCL device: copy in, the
/// insertion kernel (one work-item per size_i run), one enqueue of the Merge Path level kernel
/// per level ping-ponging between two buffers, copy out. `block` is the work-group size.
/// kernel_ms runs from the insertion kernel's start to the last level's end on the queue's
/// profiling clock (gaps between kernels included, as CUDA's events count them), insertion_ms
/// is the insertion kernel, merge_ms the rest; total_ms is the host clock around the copies and
/// kernels. The context, queue and built program are kept per
/// device across calls and made on a device's first call, outside every timer, as the CUDA
/// version leaves context creation out: the seed's times exclude both.
StudyTiming merge_path_sort_opencl(int32_t* host, int64_t n, int64_t size_i, int block, int device_index = -1);

/// The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "OpenCL error <code>".
std::string opencl_error_name(int code);

}  // namespace simkit::mergesort
