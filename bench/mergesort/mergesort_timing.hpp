#pragma once
// What `simkit bench mergesort` times beside the study's versions (mergesort_study.hpp): the
// production sorts it is measured against, and the copy bandwidth its GB/s are a share of.

#include <cstdint>
#include <string>

#include <simkit/context.hpp>

#include "mergesort_study.hpp"

namespace simkit::mergesort {

/// std::sort(std::execution::par, ...) over v[0, n): parallel where the standard library has a
/// parallel backend (libstdc++: Intel TBB, found at build time), else sequential, which
/// parallel_std_sort_name() says.
void parallel_std_sort(int32_t* v, int64_t n);
const char* parallel_std_sort_name();

/// simkit::sort of host[0, n) on ctx's GPU: copy in, the sort, copy out. kernel_ms is the sort
/// alone (host clock around the call and a synchronize); `own` forces simkit's own merge path
/// (SIMKIT_PRIMITIVES_OWN) instead of CUB's radix sort.
StudyTiming simkit_sort_gpu(const Context& ctx, int32_t* host, int64_t n, bool own);

/// Measured copy bandwidth in GB/s (bytes read + written per second): memcpy of 256 MiB on the
/// host; a device-to-device copy of 256 MiB on the current CUDA device ("gpu", and "opencl",
/// which runs on the same card on the GPU machine; the host's figure where no CUDA device is).
double host_copy_gbps();
double device_copy_gbps(const std::string& device);

}  // namespace simkit::mergesort
