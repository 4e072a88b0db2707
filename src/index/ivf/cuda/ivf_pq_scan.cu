// The ivf_pq list scan: a block per (query, probe), blocks of one list launched next to each
// other so that the list's codes are read from memory once and from L2 by the rest.
//
// A block first builds its lookup table in shared memory (ksub x d multiply-adds, in float64 so
// that the rounded entries do not depend on how the sum is ordered: ivf_pq_kernels.hpp), then
// each warp walks every kPqScanWarps-th group of 32 rows of the list, a row per lane: m4
// coalesced 4-byte loads of codes and m table look-ups per row. Each warp keeps its own best kc
// by (key, rank): one comparison against its kc-th key rejects most rows, the survivors go to
// a buffer (ballot + prefix count) merged into the sorted list (select/bitonic.cuh) when it
// could overflow. Rows reach a warp in position order, and positions within a list are in id
// (= rank) order, so a key equal to the threshold is rightly rejected. At the end the warps'
// lists are merged pairwise in log2(warps) rounds.
//
// Shared memory: the table (m4 * 4 * ksub floats: 32 KiB at m = 32) plus the 8 warps' lists
// (12 bytes per entry, (C + max(C, 64)) entries each: 9 KiB at C = 32, 48 KiB at C = 256). The
// table's look-ups hit random banks (a warp's 32 codes of one sub-space are unrelated), about 3-4
// way conflicts on average; to be measured against a table of halves (two codes per 32-bit word)
// once the scan is profiled at m = 32, nlist = 8192, nprobe = 32.

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/select/team_top_k.cuh"
#include "index/ivf/cuda/ivf_pq_kernels.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int W = kPqScanWarps;
constexpr unsigned kFull = 0xffffffffu;

template <PqForm F>
__device__ __forceinline__ double table_term(double r, double b) {
  // The explicit roundings keep nvcc from fusing into FMAs: the host's table (index side) rounds
  // the product before the sum, and the entries must agree bit for bit.
  if constexpr (F == PqForm::sqdist) {
    const double e = __dsub_rn(r, b);
    return __dmul_rn(e, e);
  } else if constexpr (F == PqForm::l1) {
    return fabs(__dsub_rn(r, b));
  } else {
    return __dmul_rn(r, b);
  }
}

template <int C, PqForm F>
__global__ void __launch_bounds__(kPqScanThreads) pq_scan_kernel(PqScanArgs a) {
  constexpr int B = WarpTopK<C>::kBuffer;
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float s_bias;
  int64_t* li_all = reinterpret_cast<int64_t*>(smem);
  int64_t* bi_all = li_all + W * C;
  float* lk_all = reinterpret_cast<float*>(bi_all + W * B);
  float* bk_all = lk_all + W * C;
  float* table = bk_all + W * B;
  const int64_t ksub = a.ksub, d = a.d, dsub = a.dsub;
  float* res = table + a.m4 * 4 * ksub;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t pair = a.pairs[blockIdx.x];
  const int64_t list = a.probes[pair];
  const float* q = a.queries + (pair / a.nprobe) * d;
  const float* c = a.centroids + list * d;

  // The residual (dot: the query itself, the centroid's share goes to the bias).
  for (int64_t t = tid; t < d; t += kPqScanThreads) res[t] = F == PqForm::neg_dot ? q[t] : q[t] - c[t];
  if constexpr (F == PqForm::neg_dot) {
    if (warp == 0) {
      double acc = 0;
      for (int64_t t = lane; t < d; t += 32) acc = __dadd_rn(acc, __dmul_rn(double(q[t]), double(c[t])));
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(kFull, acc, o);
      if (lane == 0) s_bias = float(-acc);
    }
  }
  WarpTopK<C> top(lk_all + warp * C, li_all + warp * C, bk_all + warp * B, bi_all + warp * B, a.kc);
  top.reset(lane);
  __syncthreads();

  // The table; rows m .. 4 m4 - 1 are zeros, so the scan adds the padding bytes' codes (0) as
  // +0 after every real term, which leaves the sum unchanged.
  const int64_t real = a.m * ksub, entries = a.m4 * 4 * ksub;
  for (int64_t e = tid; e < entries; e += kPqScanThreads) {
    float v = 0.f;
    if (e < real) {
      const float* r = res + (e / ksub) * dsub;
      const float* b = a.codebooks + e * dsub;
      double acc = 0;
      for (int64_t t = 0; t < dsub; ++t) acc = __dadd_rn(acc, table_term<F>(double(r[t]), double(b[t])));
      v = F == PqForm::neg_dot ? -float(acc) : float(acc);
    }
    table[e] = v;
  }
  __syncthreads();

  const int64_t r0 = a.row_start[list], len = a.row_start[list + 1] - r0;
  const int64_t groups = (len + 31) / 32;
  const uint32_t* words = a.words + a.group_start[list] * a.m4 * 32 + lane;
  const float bias = F == PqForm::neg_dot ? s_bias : 0.f;

  for (int64_t g = warp; g < groups; g += W) {
    const uint32_t* w = words + g * a.m4 * 32;
    float key = 0.f;
    for (int64_t j4 = 0; j4 < a.m4; ++j4) {
      const uint32_t word = __ldg(w + j4 * 32);
      const float* t = table + j4 * 4 * ksub;
      key += t[word & 0xffu];
      key += t[ksub + ((word >> 8) & 0xffu)];
      key += t[2 * ksub + ((word >> 16) & 0xffu)];
      key += t[3 * ksub + (word >> 24)];
    }
    if constexpr (F == PqForm::neg_dot) key += bias;
    const int64_t row = g * 32 + lane;
    const bool real = row < len && (a.mask == nullptr || ((a.mask[(r0 + row) >> 5] >> ((r0 + row) & 31)) & 1u));
    top.offer(
        key, [&](const auto& t) { return real && t.beats(key); }, [&] { return a.rank_of_pos[r0 + row]; }, lane);
  }
  top.flush(lane);
  __syncthreads();

  // Pairwise merges of the warps' lists: in round `step`, warp w (a multiple of 2 step) takes
  // the best kc of warp w + step's list, whose region then serves as its buffer (kc <= C).
  for (int step = 1; step < W; step *= 2) {
    if (warp % (2 * step) == 0) top.absorb(lk_all + (warp + step) * C, li_all + (warp + step) * C, lane);
    __syncthreads();
  }
  if (warp == 0) {
    const int64_t slot = pair * a.kc;
    top.store(a.slot_keys + slot, a.slot_ranks + slot, a.kc, lane);
  }
}

__global__ void prepare_kernel(const float* Q, int64_t rows, int64_t d, bool normalize, bool centre, float* out) {
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;  // whole warps only
  const float* q = Q + r * d;
  double mean = 0, sq = 0;
  if (centre) {
    for (int64_t t = lane; t < d; t += 32) mean += q[t];
    for (int o = 16; o > 0; o >>= 1) mean += __shfl_xor_sync(kFull, mean, o);
    mean /= double(d);
  }
  if (normalize) {
    // The norm of the rows as rounded after centring, as the host's row preparation takes it.
    for (int64_t t = lane; t < d; t += 32) {
      const double v = float(double(q[t]) - mean);
      sq = __dadd_rn(sq, __dmul_rn(v, v));
    }
    for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(kFull, sq, o);
  }
  const double inv = sq > 0 ? 1.0 / sqrt(sq) : 0.0;
  for (int64_t t = lane; t < d; t += 32) {
    const double v = float(double(q[t]) - mean);
    out[r * d + t] = normalize ? float(v * inv) : q[t];
  }
}

template <int C, PqForm F>
void launch_scan(int64_t count, const PqScanArgs& a, cudaStream_t s) {
  const size_t smem = pq_scan_smem(a.m, a.ksub, a.d, C);
  auto kernel = pq_scan_kernel<C, F>;
  // Above 48 KiB a kernel must opt in; setting it always costs little next to the scan.
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
             "cudaFuncSetAttribute");
  kernel<<<unsigned(count), kPqScanThreads, smem, s>>>(a);
  check_launch("ivf_pq scan_kernel");
}

template <PqForm F>
void scan_with(int capacity, int64_t count, const PqScanArgs& a, cudaStream_t s) {
  switch (capacity) {
    case 32: return launch_scan<32, F>(count, a, s);
    case 64: return launch_scan<64, F>(count, a, s);
    case 128: return launch_scan<128, F>(count, a, s);
    default: return launch_scan<256, F>(count, a, s);
  }
}

}  // namespace

size_t pq_scan_smem(int64_t m, int64_t ksub, int64_t d, int capacity) {
  const int64_t m4 = (m + 3) / 4;
  const int64_t buffer = capacity < 64 ? 64 : capacity;  // WarpTopK's buffer
  return size_t(W) * size_t(capacity + buffer) * 12 + size_t(m4 * 4 * ksub) * 4 + size_t(d) * 4;
}

void pq_scan(PqForm form, int capacity, int64_t count, const PqScanArgs& a, cudaStream_t s) {
  if (count == 0) return;
  switch (form) {
    case PqForm::sqdist: return scan_with<PqForm::sqdist>(capacity, count, a, s);
    case PqForm::neg_dot: return scan_with<PqForm::neg_dot>(capacity, count, a, s);
    case PqForm::l1: return scan_with<PqForm::l1>(capacity, count, a, s);
  }
}

void pq_prepare_queries(const float* Q, int64_t rows, int64_t d, bool normalize, bool centre, float* out,
                        cudaStream_t s) {
  if (rows == 0) return;
  prepare_kernel<<<unsigned((rows + 7) / 8), 256, 0, s>>>(Q, rows, d, normalize, centre, out);
  check_launch("ivf_pq prepare_kernel");
}

}  // namespace simkit::detail::cuda
