// A warp per (query, candidate), each key from cuda/exact_key.cuh; the check of
// core/knn_certify.hpp, a warp per query; the exact pass of a query it does not settle, a warp
// per base row.
#include "cuda/rescore.hpp"

#include "cuda/check.hpp"
#include "cuda/exact_key.cuh"
#include "cuda/select/bitonic.cuh"

namespace simkit::detail::cuda {

namespace {

constexpr int kRescoreBlock = 256;

template <ExactForm F>
__global__ void __launch_bounds__(kRescoreBlock)
    rescore_kernel(const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d, const int64_t* ids,
                   int64_t ids_stride, double* keys, int64_t key_stride, int64_t rows, int64_t kc) {
  const int lane = threadIdx.x % 32;
  const int64_t pairs = rows * kc;
  const int64_t warps = int64_t(gridDim.x) * (kRescoreBlock / 32);
  for (int64_t p = int64_t(blockIdx.x) * (kRescoreBlock / 32) + threadIdx.x / 32; p < pairs; p += warps) {
    const int64_t r = p / kc, c = p % kc;
    const int64_t id = ids[r * ids_stride + c];
    double key = __longlong_as_double(0x7ff0000000000000ll);  // +inf: an empty slot ranks last
    if (id != kNoId) key = exact_key<F>(Q + r * ldq, X + id * ldx, d, lane);
    if (lane == 0) keys[r * key_stride + c] = key;
  }
}

template <ExactForm F>
void launch(int grid, cudaStream_t s, const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d,
            const int64_t* ids, int64_t ids_stride, double* keys, int64_t key_stride, int64_t rows, int64_t kc) {
  rescore_kernel<F><<<grid, kRescoreBlock, 0, s>>>(Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows, kc);
  check_launch("rescore_kernel");
}

__global__ void __launch_bounds__(kRescoreBlock) unsettled_kernel(UnsettledArgs a, double* upper) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (kRescoreBlock / 32);
  for (int64_t r = int64_t(blockIdx.x) * (kRescoreBlock / 32) + threadIdx.x / 32; r < a.rows; r += warps) {
    const float worst = a.list_keys[r * a.C + a.kc - 1];
    // An empty last slot: every allowed row was a candidate.
    const bool all_kept = a.list_ids[r * a.C + a.kc - 1] == kNoId;
    double shift = 0;
    if (a.bound.form == ExactForm::sqdist || a.bound.form == ExactForm::dot) {
      const float* q = a.Q + r * a.ldq;
      for (int64_t t = lane; t < a.d; t += 32) {
        const double e = double(q[t]) - (a.centre != nullptr ? double(a.centre[t]) : 0.0);
        shift += e * e;
      }
      shift = warp_sum(shift);
    }
    if (lane != 0) continue;
    const double u_norm = sqrt(shift);
    if (a.bound.form == ExactForm::dot) shift = 0;  // dot keys are whole
    const double U = key_upper_of_value(a.to.negate, a.to.root, a.values[r * a.k + a.k - 1]);
    const bool settled =
        all_kept || !knn_checked(a.bound.form) || knn_settled(U, shift, knn_key_error(a.bound, u_norm, U), worst);
    upper[r] = settled ? __longlong_as_double(0x7ff8000000000000ll) : U;
  }
}

template <ExactForm F>
__global__ void __launch_bounds__(kRescoreBlock)
    exact_rows_kernel(const float* q, const float* X, int64_t ldx, int64_t d, int64_t j0, int64_t count, double* keys) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (kRescoreBlock / 32);
  for (int64_t c = int64_t(blockIdx.x) * (kRescoreBlock / 32) + threadIdx.x / 32; c < count; c += warps) {
    const double key = exact_key<F>(q, X + (j0 + c) * ldx, d, lane);
    if (lane == 0) keys[c] = key;
  }
}

__global__ void __launch_bounds__(kRescoreBlock)
    max_sq_norm_kernel(const float* X, int64_t ldx, int64_t n, int64_t d, unsigned long long* out) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (kRescoreBlock / 32);
  for (int64_t j = int64_t(blockIdx.x) * (kRescoreBlock / 32) + threadIdx.x / 32; j < n; j += warps) {
    double s = 0;
    for (int64_t t = lane; t < d; t += 32) s += double(X[j * ldx + t]) * double(X[j * ldx + t]);
    s = warp_sum(s);
    if (lane == 0) atomicMax(out, static_cast<unsigned long long>(__double_as_longlong(s)));
  }
}

int grid_for(int64_t items) {
  const int64_t want = (items + kRescoreBlock / 32 - 1) / (kRescoreBlock / 32);
  return int(want < 65536 ? want : 65536);
}

}  // namespace

void unsettled_queries(const UnsettledArgs& a, double* upper, cudaStream_t stream) {
  if (a.rows <= 0) return;
  unsettled_kernel<<<grid_for(a.rows), kRescoreBlock, 0, stream>>>(a, upper);
  check_launch("unsettled_kernel");
}

void exact_keys_rows(ExactForm form, const float* q, const float* X, int64_t ldx, int64_t d, int64_t j0, int64_t count,
                     double* keys, cudaStream_t stream) {
  if (count <= 0) return;
  const int grid = grid_for(count);
  auto launch = [&](auto kernel) { kernel<<<grid, kRescoreBlock, 0, stream>>>(q, X, ldx, d, j0, count, keys); };
  switch (form) {
    case ExactForm::sqdist: launch(exact_rows_kernel<ExactForm::sqdist>); break;
    case ExactForm::dot: launch(exact_rows_kernel<ExactForm::dot>); break;
    case ExactForm::cosine: launch(exact_rows_kernel<ExactForm::cosine>); break;
    case ExactForm::centred_cosine: launch(exact_rows_kernel<ExactForm::centred_cosine>); break;
    case ExactForm::none: return;
  }
  check_launch("exact_rows_kernel");
}

void max_sq_norm(const float* X, int64_t ldx, int64_t n, int64_t d, unsigned long long* out, cudaStream_t stream) {
  if (n <= 0) return;
  max_sq_norm_kernel<<<grid_for(n), kRescoreBlock, 0, stream>>>(X, ldx, n, d, out);
  check_launch("max_sq_norm_kernel");
}

void rescore_keys(ExactForm form, const float* Q, int64_t ldq, const float* X, int64_t ldx, int64_t d,
                  const int64_t* ids, int64_t ids_stride, double* keys, int64_t key_stride, int64_t rows, int64_t kc,
                  cudaStream_t stream) {
  const int64_t pairs = rows * kc;
  if (pairs <= 0) return;
  const int64_t want = (pairs + kRescoreBlock / 32 - 1) / (kRescoreBlock / 32);
  const int grid = int(want < 65536 ? want : 65536);
  switch (form) {
    case ExactForm::sqdist:
      return launch<ExactForm::sqdist>(grid, stream, Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows, kc);
    case ExactForm::dot:
      return launch<ExactForm::dot>(grid, stream, Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows, kc);
    case ExactForm::cosine:
      return launch<ExactForm::cosine>(grid, stream, Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows, kc);
    case ExactForm::centred_cosine:
      return launch<ExactForm::centred_cosine>(grid, stream, Q, ldq, X, ldx, d, ids, ids_stride, keys, key_stride, rows,
                                               kc);
    case ExactForm::none: break;
  }
}

}  // namespace simkit::detail::cuda
