#pragma once
// The seam between src/core (validation, dispatch) and the two backends. Core validates every
// argument before calling in, so backends may assume: non-empty sets, equal dimensions,
// 1 <= k <= n, finite inputs, correctly shaped outputs. One exception: cuda::pairwise checks
// its device-resident inputs for NaN / Inf itself and throws the same invalid_argument.

#include <cstdint>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit::detail {

namespace cpu {
// Host memory only.
void pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric,
              MatrixView<float> out);
void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids);
}  // namespace cpu

namespace cuda {
// In a CPU-only build these are defined in src/core/cuda_absent.cpp: gpus() is empty and the
// rest throw Error(unsupported).
std::vector<GpuInfo> gpus();
/// How many devices gpus() lists, without its per-call free-memory queries: what every call's
/// device resolution needs, cheaply.
int device_count();
// Views may be host or device, independently.
void pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric,
              MatrixView<float> out);
void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids);
/// True when every element of a device-resident matrix is finite.
bool all_finite_on_device(const Context& ctx, MatrixView<const float> m);
/// CUDA architectures this library was compiled for, e.g. "80;86;89;90".
const char* compiled_architectures() noexcept;
}  // namespace cuda

}  // namespace simkit::detail
