#pragma once
// The GPU IFGT's kernels, compiled per dimension D (<= kIfgtMaxGpuDims) so that a point's
// coordinates and its multi-index stay in registers. Everything is float64: the expansions'
// terms can be large next to their sum only by a bounded factor (core/ifgt_bound.hpp), but the
// eps the plan guarantees is down to 1e-9 of sum|q|, out of float32's reach.
//
// Multi-index order. The coefficients of one cluster are stored in nested-Horner order, not
// graded-lexicographic as on the CPU: a polynomial of total degree <= n in b_L..b_{D-1} is
//     sum_{e=0..n} b_L^e * (a polynomial of degree <= n - e in b_{L+1}..b_{D-1}),
// evaluated as Horner in b_L from e = n down to 0, each inner polynomial recursively. That
// costs one fused multiply-add per coefficient and no storage per target, where the
// graded-lexicographic recurrence needs all P monomials of a target at once (P = 3,276 at
// d = 3, p = 26: 26 KB per thread). The order is written out on the host (ifgt.cu,
// horner_exponents) by the same recursion, as one exponent vector per coefficient.

#include <cstdint>

namespace simkit::detail::cuda::ifgt {

constexpr int kThreads = 256;

/// One coefficient task: sources [begin, end) of the cluster-sorted order, all of one cluster.
struct Span {
  int cluster;
  int begin, end;
};

/// Every source's nearest centre (ties: the lower index), the cluster sizes and the clusters'
/// squared radii (as the bit patterns of non-negative doubles, which order like the values).
/// A warp whose lanes share one label, the usual case, adds its counts and maxima in one atomic.
template <int D>
__global__ void assign_kernel(const float* __restrict__ x, int n, const double* __restrict__ centres, int K,
                              int* __restrict__ label, unsigned long long* __restrict__ radius2,
                              int* __restrict__ count) {
  const int lane = threadIdx.x & 31;
  for (int base = blockIdx.x * blockDim.x; base < n; base += gridDim.x * blockDim.x) {
    const int i = base + threadIdx.x;
    const bool live = i < n;
    double best = 0;
    int who = -1;
    if (live) {
      double xi[D];
#pragma unroll
      for (int e = 0; e < D; ++e) xi[e] = x[size_t(i) * D + e];
      best = 1.0 / 0.0;
      for (int c = 0; c < K; ++c) {
        double s = 0;
#pragma unroll
        for (int e = 0; e < D; ++e) {
          const double t = xi[e] - __ldg(centres + size_t(c) * D + e);
          s = fma(t, t, s);
        }
        if (s < best) {
          best = s;
          who = c;
        }
      }
      label[i] = who;
    }
    const unsigned active = __ballot_sync(0xffffffffu, live);
    const int first = __shfl_sync(0xffffffffu, who, __ffs(active) - 1);
    if (__all_sync(0xffffffffu, !live || who == first)) {
      double m = best;
      int c = live ? 1 : 0;
      for (int off = 16; off > 0; off >>= 1) {
        m = fmax(m, __shfl_down_sync(0xffffffffu, m, off));
        c += __shfl_down_sync(0xffffffffu, c, off);
      }
      if (lane == 0 && c > 0) {
        atomicMax(radius2 + first, static_cast<unsigned long long>(__double_as_longlong(m)));
        atomicAdd(count + first, c);
      }
    } else if (live) {
      atomicMax(radius2 + who, static_cast<unsigned long long>(__double_as_longlong(best)));
      atomicAdd(count + who, 1);
    }
  }
}

/// The plan's sample: rows s * rows / count, s < count, of a row-major d-column matrix.
__global__ void gather_rows_kernel(const float* __restrict__ M, int64_t rows, int d, int64_t count,
                                   float* __restrict__ out) {
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < count * d; t += int64_t(gridDim.x) * blockDim.x)
    out[t] = M[(t / d * rows / count) * d + t % d];
}

/// Per block and dimension, the least and greatest coordinate of its rows: partial[b][0][e] and
/// partial[b][1][e]; the host reduces over blocks.
__global__ void bounding_box_kernel(const float* __restrict__ M, int64_t rows, int d, float* __restrict__ partial) {
  __shared__ float lo_w[kThreads / 32], hi_w[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int e = 0; e < d; ++e) {
    float lo = 1.0f / 0.0f, hi = -1.0f / 0.0f;
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < rows; j += int64_t(gridDim.x) * blockDim.x) {
      const float v = M[j * d + e];
      lo = fminf(lo, v);
      hi = fmaxf(hi, v);
    }
    for (int off = 16; off > 0; off >>= 1) {
      lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, off));
      hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, off));
    }
    if (lane == 0) {
      lo_w[warp] = lo;
      hi_w[warp] = hi;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < kThreads / 32; ++w) {
        lo = fminf(lo, lo_w[w]);
        hi = fmaxf(hi, hi_w[w]);
      }
      partial[(size_t(blockIdx.x) * 2) * d + e] = lo;
      partial[(size_t(blockIdx.x) * 2 + 1) * d + e] = hi;
    }
    __syncthreads();
  }
}

__global__ void iota_kernel(int* __restrict__ v, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v[i] = i;
}

/// Per span, the unscaled coefficients sum_i q_i exp(-|a_i|^2) a_i^alpha of its sources, one
/// multi-index per thread and kThreads of them per pass. Sources come through shared memory
/// `tile` at a time with the powers a_e^k, k < p, of each coordinate made by repeated
/// multiplication, so that each (source, multi-index) costs D reads and D multiplies.
template <int D>
__global__ void __launch_bounds__(kThreads)
    coefficients_kernel(const float* __restrict__ x, const double* __restrict__ q, const int* __restrict__ order,
                        const Span* __restrict__ spans, const double* __restrict__ centres, double inv_h, int p, int P,
                        const unsigned char* __restrict__ exps, int tile, double* __restrict__ partial) {
  extern __shared__ double shared[];
  double* w = shared;             // tile weights q_i exp(-|a_i|^2)
  double* power = shared + tile;  // [tile][D][p]
  const Span sp = spans[blockIdx.x];
  double c[D];
#pragma unroll
  for (int e = 0; e < D; ++e) c[e] = centres[size_t(sp.cluster) * D + e];
  for (int j0 = 0; j0 < P; j0 += kThreads) {
    const int j = j0 + int(threadIdx.x);
    int alpha[D];
#pragma unroll
    for (int e = 0; e < D; ++e) alpha[e] = j < P ? exps[size_t(j) * D + e] : 0;
    double acc = 0;
    for (int s0 = sp.begin; s0 < sp.end; s0 += tile) {
      const int len = min(tile, sp.end - s0);
      __syncthreads();  // the previous tile's readers are done
      for (int s = threadIdx.x; s < len; s += kThreads) {
        const int i = order[s0 + s];
        double* row = power + size_t(s) * D * p;
        double a2 = 0;
#pragma unroll
        for (int e = 0; e < D; ++e) {
          const double v = (double(x[size_t(i) * D + e]) - c[e]) * inv_h;
          a2 = fma(v, v, a2);
          double t = 1.0;
          row[e * p] = 1.0;
          for (int k = 1; k < p; ++k) {
            t *= v;
            row[e * p + k] = t;
          }
        }
        w[s] = q[i] * exp(-a2);
      }
      __syncthreads();
      if (j < P)
        for (int s = 0; s < len; ++s) {
          const double* row = power + size_t(s) * D * p;
          double term = w[s];
#pragma unroll
          for (int e = 0; e < D; ++e) term *= row[e * p + alpha[e]];
          acc += term;
        }
    }
    if (j < P) partial[size_t(blockIdx.x) * P + j] = acc;
  }
}

/// coeff[c][j] = factor[j] * (the partials of cluster c's spans, added in span order).
__global__ void reduce_kernel(const double* __restrict__ partial, const int* __restrict__ span_first, int K, int P,
                              const double* __restrict__ factor, double* __restrict__ coeff) {
  const int64_t total = int64_t(K) * P;
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < total; t += int64_t(gridDim.x) * blockDim.x) {
    const int c = int(t / P), j = int(t % P);
    double s = 0;
    for (int k = span_first[c]; k < span_first[c + 1]; ++k) s += partial[size_t(k) * P + j];
    coeff[t] = s * factor[j];
  }
}

/// The nested Horner evaluation of one cluster's polynomial of total degree <= n in b_L..b_{D-1};
/// C advances past the coefficients consumed.
template <int L, int D>
__device__ __forceinline__ double horner(const double (&b)[D], int n, const double*& C) {
  if constexpr (L == D - 1) {
    double acc = __ldg(C);
    for (int e = 1; e <= n; ++e) acc = fma(acc, b[L], __ldg(C + e));
    C += n + 1;
    return acc;
  } else {
    double acc = 0;
    for (int e = n; e >= 0; --e) acc = fma(acc, b[L], horner<L + 1, D>(b, n - e, C));
    return acc;
  }
}

/// G(y) for every target: the expansions of the clusters within reach, each times exp(-|b|^2).
template <int D>
__global__ void __launch_bounds__(kThreads)
    evaluate_kernel(const float* __restrict__ y, int m, const double* __restrict__ centres,
                    const double* __restrict__ reach2, int K, const double* __restrict__ coeff, int P, int degree,
                    double inv_h, double* __restrict__ out) {
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += gridDim.x * blockDim.x) {
    double yj[D];
#pragma unroll
    for (int e = 0; e < D; ++e) yj[e] = y[size_t(j) * D + e];
    double g = 0;
    for (int c = 0; c < K; ++c) {
      double b[D];
      double t2 = 0;
#pragma unroll
      for (int e = 0; e < D; ++e) {
        b[e] = yj[e] - __ldg(centres + size_t(c) * D + e);
        t2 = fma(b[e], b[e], t2);
      }
      if (t2 > __ldg(reach2 + c)) continue;
#pragma unroll
      for (int e = 0; e < D; ++e) b[e] *= inv_h;
      const double* C = coeff + size_t(c) * P;
      g = fma(horner<0, D>(b, degree, C), exp(-t2 * inv_h * inv_h), g);
    }
    out[j] = g;
  }
}

}  // namespace simkit::detail::cuda::ifgt
