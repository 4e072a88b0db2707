#include "cuda/rows.hpp"

#include <cstdint>

#include "cuda/check.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kRowBlock = 256;  // 8 warps, one row each at a time

__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <RowOp OP>
__global__ void __launch_bounds__(kRowBlock)
    row_prep_kernel(const float* in, int64_t ld_in, float* out, int64_t ld_out, float* norms, int64_t rows, int64_t d,
                    int* non_finite, const float* centre) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (kRowBlock / 32);
  for (int64_t r = int64_t(blockIdx.x) * (kRowBlock / 32) + threadIdx.x / 32; r < rows; r += warps) {
    const float* x = in + r * ld_in;
    if constexpr (OP == RowOp::translate) {
      // Each lane reads and writes the same elements, so in place is safe.
      float* y = out + r * ld_out;
      double ss = 0;
      for (int64_t j = lane; j < d; j += 32) {
        const float v = x[j] - centre[j];
        y[j] = v;
        ss += double(v) * double(v);
      }
      ss = warp_sum(ss);
      if (non_finite != nullptr && lane == 0 && !isfinite(ss)) *non_finite = 1;
      if (norms != nullptr && lane == 0) norms[r] = float(ss);
      continue;
    }
    double mean = 0;
    if constexpr (OP == RowOp::centre_normalize) {
      double s = 0;
      for (int64_t j = lane; j < d; j += 32) s += x[j];
      mean = warp_sum(s) / double(d);
    }
    double ss = 0;
    for (int64_t j = lane; j < d; j += 32) {
      const double c = double(x[j]) - mean;
      ss += c * c;
    }
    ss = warp_sum(ss);
    if (non_finite != nullptr && lane == 0 && !isfinite(ss)) *non_finite = 1;
    const double inv = ss > 0 ? 1.0 / sqrt(ss) : 0.0;
    if constexpr (OP == RowOp::sq_norms) {
      if (lane == 0) norms[r] = float(ss);
    } else if constexpr (OP == RowOp::inv_norms) {
      if (lane == 0) norms[r] = float(inv);
    } else {
      if (norms != nullptr && lane == 0) norms[r] = float(inv);
      float* y = out + r * ld_out;
      // All lanes finished reading x in the sums above (warp_sum synchronises the warp),
      // so writing in place is safe.
      for (int64_t j = lane; j < d; j += 32) y[j] = float((double(x[j]) - mean) * inv);
    }
  }
}

__global__ void fill_empty_kernel(float* keys, int64_t* ids, int64_t count) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    keys[i] = __int_as_float(0x7f800000);
    ids[i] = INT64_MAX;
  }
}

}  // namespace

void row_prep(RowOp op, const float* in, int64_t ld_in, float* out, int64_t ld_out, float* norms, int64_t rows,
              int64_t d, cudaStream_t stream, int* non_finite, const float* centre) {
  if (rows <= 0) return;
  const int64_t want = (rows + kRowBlock / 32 - 1) / (kRowBlock / 32);
  const int grid = int(want < 65536 ? want : 65536);
  auto launch = [&](auto kernel) {
    kernel<<<grid, kRowBlock, 0, stream>>>(in, ld_in, out, ld_out, norms, rows, d, non_finite, centre);
  };
  switch (op) {
    case RowOp::sq_norms: launch(row_prep_kernel<RowOp::sq_norms>); break;
    case RowOp::inv_norms: launch(row_prep_kernel<RowOp::inv_norms>); break;
    case RowOp::normalize: launch(row_prep_kernel<RowOp::normalize>); break;
    case RowOp::centre_normalize: launch(row_prep_kernel<RowOp::centre_normalize>); break;
    case RowOp::translate: launch(row_prep_kernel<RowOp::translate>); break;
  }
  check_launch("row_prep_kernel");
}

void fill_empty(float* keys, int64_t* ids, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  const int64_t want = (count + 255) / 256;
  fill_empty_kernel<<<int(want < 4096 ? want : 4096), 256, 0, stream>>>(keys, ids, count);
  check_launch("fill_empty_kernel");
}

}  // namespace simkit::detail::cuda
