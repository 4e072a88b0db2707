// The ivf_flat list scan: a block per (list, up to 8 queries that probe it).
//
// The block stages its queries in shared memory and walks the list 256 rows at a time: every
// thread owns one row and accumulates that row against all 8 queries (one coalesced float4 of
// the row per step, 8 broadcast float4 reads of the queries, 32 FMAs), so each row is read from
// memory once per block rather than once per query. The 8 x 256 keys go to shared memory; then
// warp w keeps query w's best kc of the list: one comparison against its current kc-th key
// rejects nearly every row, the few survivors are appended to a buffer (ballot + prefix count)
// and merged into the sorted list (select/bitonic.cuh) when the buffer could overflow. A row of
// this list has a higher rank than every row kept before it from the same list (rows are in id
// order within a list), so a key equal to the threshold is rightly rejected.
//
// Tile choice: 8 queries x 256 rows with 256 threads. Each float4 of a row then feeds 32 FMAs
// against 8 shared-memory broadcasts; more queries per block would cut the blocks per list
// below one for most lists at nprobe ~ 32 (10,000 queries x 32 probes / 1,024 lists ~ 310
// queries per list, ~39 blocks), fewer would reread rows more often.

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/select/team_top_k.cuh"
#include "index/ivf/cuda/ivf_flat_kernels.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int QT = kScanQueries;
constexpr int kThreads = 256;  // = rows per step
constexpr unsigned kFull = 0xffffffffu;

template <int C>
struct ScanShape {
  static constexpr int B = WarpTopK<C>::kBuffer;  // survivor buffer per query
  static size_t smem(int64_t dp4) {
    return size_t(QT) * size_t(dp4) * 16 + size_t(QT) * kThreads * 4 + size_t(QT) * WarpTopK<C>::kBytes;
  }
};

template <IvfKey KEY>
__device__ __forceinline__ void accumulate(float& acc, float4 q, float4 x) {
  if constexpr (KEY == IvfKey::l1) {
    acc += fabsf(q.x - x.x);
    acc += fabsf(q.y - x.y);
    acc += fabsf(q.z - x.z);
    acc += fabsf(q.w - x.w);
  } else {
    acc = fmaf(q.x, x.x, acc);
    acc = fmaf(q.y, x.y, acc);
    acc = fmaf(q.z, x.z, acc);
    acc = fmaf(q.w, x.w, acc);
  }
}

template <IvfKey KEY>
__device__ __forceinline__ float key_of(float acc, float aux) {
  if constexpr (KEY == IvfKey::sqdist) return aux - 2.0f * acc;
  if constexpr (KEY == IvfKey::scaled) return -acc * aux;
  if constexpr (KEY == IvfKey::dot) return -acc;
  return acc;
}

template <int C, IvfKey KEY>
__global__ void __launch_bounds__(kThreads) scan_kernel(IvfScanArgs a) {
  constexpr int B = ScanShape<C>::B;
  extern __shared__ __align__(16) unsigned char smem[];
  const int64_t dp4 = a.dp4;
  float4* sq = reinterpret_cast<float4*>(smem);
  float* ks = reinterpret_cast<float*>(sq + QT * dp4);
  int64_t* li_all = reinterpret_cast<int64_t*>(ks + QT * kThreads);
  int64_t* bi_all = li_all + QT * C;
  float* lk_all = reinterpret_cast<float*>(bi_all + QT * B);
  float* bk_all = lk_all + QT * C;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int64_t item = blockIdx.x;
  const int64_t list = a.item_list[item], first = a.item_first[item];
  const int count = a.item_count[item];

  for (int64_t i = tid; i < QT * dp4; i += kThreads) {
    const int qi = int(i / dp4);
    const int64_t c = i % dp4;
    sq[i] = qi < count ? a.queries[(a.pairs[first + qi] / a.nprobe) * dp4 + c] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
  WarpTopK<C> top(lk_all + warp * C, li_all + warp * C, bk_all + warp * B, bi_all + warp * B, a.kc);
  top.reset(lane);
  __syncthreads();

  const int64_t r0 = a.row_start[list], len = a.row_start[list + 1] - r0;
  const float4* groups = a.inter + (a.group_start[list] - a.group_base) * dp4 * 32;
  for (int64_t base = 0; base < len; base += kThreads) {
    const int64_t row = base + tid;
    float acc[QT];
#pragma unroll
    for (int q = 0; q < QT; ++q) acc[q] = 0.f;
    if (base + warp * 32 < len) {  // the group exists (its tail rows are zero padding)
      const float4* x = groups + ((base / 32 + warp) * dp4) * 32 + lane;
      for (int64_t c = 0; c < dp4; ++c) {
        const float4 v = x[c * 32];
#pragma unroll
        for (int q = 0; q < QT; ++q) accumulate<KEY>(acc[q], sq[q * dp4 + c], v);
      }
    }
    const bool real = row < len;
    const bool allowed = real && (a.mask == nullptr || ((a.mask[(r0 + row) >> 5] >> ((r0 + row) & 31)) & 1u));
    const float aux = (KEY == IvfKey::sqdist || KEY == IvfKey::scaled) && real ? a.aux[r0 + row] : 0.f;
#pragma unroll
    for (int q = 0; q < QT; ++q) ks[q * kThreads + tid] = allowed ? key_of<KEY>(acc[q], aux) : kInf;
    __syncthreads();

    if (warp < count) {
      for (int w = 0; w < kThreads / 32; ++w) {
        const float key = ks[warp * kThreads + w * 32 + lane];
        const int64_t pos = r0 + base + w * 32 + lane;
        top.offer(
            key, [&](const auto& t) { return t.beats(key); }, [&] { return a.rank_of_pos[pos]; }, lane);
      }
    }
    __syncthreads();
  }
  if (warp < count) {
    top.flush(lane);
    const int64_t slot = a.pairs[first + warp] * a.kc;
    top.store(a.slot_keys + slot, a.slot_ranks + slot, a.kc, lane);
  }
}

__global__ void prepare_kernel(const float* Q, int64_t m, int64_t d, int64_t dp, bool centre, float* out) {
  const int64_t r = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= m) return;
  const float* q = Q + r * d;
  double mean = 0;
  if (centre) {
    for (int64_t t = lane; t < d; t += 32) mean += q[t];
    for (int o = 16; o > 0; o >>= 1) mean += __shfl_xor_sync(kFull, mean, o);
    mean /= double(d);
  }
  for (int64_t t = lane; t < dp; t += 32) out[r * dp + t] = t < d ? float(double(q[t]) - mean) : 0.f;
}

template <int C, IvfKey KEY>
void launch_scan(int64_t items, const IvfScanArgs& a, cudaStream_t s) {
  const size_t smem = ScanShape<C>::smem(a.dp4);
  auto kernel = scan_kernel<C, KEY>;
  check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
             "cudaFuncSetAttribute");
  kernel<<<unsigned(items), kThreads, smem, s>>>(a);
  check_launch("ivf scan_kernel");
}

template <IvfKey KEY>
void scan_with(int capacity, int64_t items, const IvfScanArgs& a, cudaStream_t s) {
  switch (capacity) {
    case 32: return launch_scan<32, KEY>(items, a, s);
    case 64: return launch_scan<64, KEY>(items, a, s);
    case 128: return launch_scan<128, KEY>(items, a, s);
    default: return launch_scan<256, KEY>(items, a, s);
  }
}

}  // namespace

void ivf_scan(IvfKey key, int capacity, int64_t items, const IvfScanArgs& a, cudaStream_t s) {
  if (items == 0) return;
  switch (key) {
    case IvfKey::sqdist: return scan_with<IvfKey::sqdist>(capacity, items, a, s);
    case IvfKey::scaled: return scan_with<IvfKey::scaled>(capacity, items, a, s);
    case IvfKey::dot: return scan_with<IvfKey::dot>(capacity, items, a, s);
    case IvfKey::l1: return scan_with<IvfKey::l1>(capacity, items, a, s);
  }
}

void ivf_prepare_queries(const float* Q, int64_t m, int64_t d, int64_t dp, bool centre, float* out, cudaStream_t s) {
  prepare_kernel<<<unsigned((m + 7) / 8), 256, 0, s>>>(Q, m, d, dp, centre, out);
  check_launch("ivf prepare_kernel");
}

}  // namespace simkit::detail::cuda
