// CSR y = A x on the GPU, load-balanced by merge path (Merrill and Garland, "Merge-based
// Parallel Sparse Matrix-Vector Multiplication", 2016), deterministic.
//
// The work is the merge of the row ends (offsets[1..rows]) with the non-zero indices 0..nnz-1:
// rows + nnz items, cut in tiles of TILE and then in ITEMS per thread, so every thread gets the
// same number of (row ends + non-zeros) however the rows are shaped; a row of 1M entries is
// shared by ~1M / ITEMS threads, a run of empty rows costs one item each.
//
// Per tile (one block): the tile's ends on the merge path come from spmv_partition (one thread
// per tile boundary, run first, so that no block waits on a chain of log2(rows + nnz)
// dependent loads with the SM's memory idle); the block loads the
// tile's row ends and the products values[j] * x[col[j]] (in double: exact for float inputs)
// into shared memory, checking every column index and offset on the way; each thread walks its
// ITEMS items, writing y for every row it both starts and ends. What crosses a thread boundary
// is combined by a block-wide reduce-by-row scan of the threads' open-row partials; what
// crosses a tile boundary leaves as (row, partial) records: the tile's carry-out (the row open
// at its end) and its fix (its first row, begun in an earlier tile, closed here). One block
// then folds the records in tile order and writes the fixed rows. Every sum is in double and
// in a fixed order, so y is the same for the same input, bit for bit.

#include <cuda_runtime.h>

#include <cstdint>

#include "core/merge_path.hpp"
#include "cuda/check.hpp"
#include "cuda/primitives/prim_launch.hpp"
#include "cuda/primitives/prim_warp.cuh"

namespace simkit::detail::cuda {

namespace {

#ifndef SIMKIT_TUNE_SPMV_ITEMS  // a tuning run may build other shapes (scripts/tune-primitives.sh)
#define SIMKIT_TUNE_SPMV_ITEMS 8
#endif
#ifndef SIMKIT_TUNE_SPMV_THREADS
#define SIMKIT_TUNE_SPMV_THREADS 256
#endif
#ifndef SIMKIT_TUNE_SPMV_MIN_BLOCKS  // resident blocks per SM asked of the register allocator
#define SIMKIT_TUNE_SPMV_MIN_BLOCKS 6
#endif
/// 256 threads x 8 items (Merrill uses 7 on Pascal), at least 6 blocks per SM (39 registers).
/// Measured on the H100 for the acceptance matrix (1M rows, 20M non-zeros, one row of 1M;
/// scripts/tune-primitives.sh, 2026-11-23), whole call: 8 items 0.285 ms, 4 items 0.358,
/// 16 items 0.362; with 8 items, no register bound (68 registers, 3 blocks per SM) 0.346,
/// 4 blocks 0.313, 6 blocks 0.280, 8 blocks (32 registers, spills) 0.309. cuSPARSE: 0.191.
constexpr int kThreads = SIMKIT_TUNE_SPMV_THREADS;
constexpr int kItems = SIMKIT_TUNE_SPMV_ITEMS;
constexpr int kTile = kThreads * kItems;
constexpr int kMinBlocks = SIMKIT_TUNE_SPMV_MIN_BLOCKS;

/// A partial sum of one row; row -1 is "nothing" (the two-sided identity of the reduce-by-row).
struct Partial {
  int64_t row;
  double value;
};

/// Reduce-by-row: a later partial of the same row adds on, a later row replaces.
struct ByRow {
  __device__ Partial operator()(Partial a, Partial b) const {
    if (b.row < 0) return a;
    if (a.row < 0) return b;
    return {b.row, a.row == b.row ? a.value + b.value : b.value};
  }
};

template <class V, class I>
struct SpmvParams {
  const I* off;
  const I* col;
  const V* val;
  const V* x;
  V* y;
  int64_t rows, cols, nnz;
  Partial* carry;   // per tile
  Partial* fix;     // per tile
  int64_t* splits;  // per tile boundary (tiles + 1): rows before it on the merge path
  int* error;
};

/// The merge-path split of every tile boundary: how many row ends precede diagonal t * kTile.
template <class V, class I>
__global__ void __launch_bounds__(256) spmv_partition(SpmvParams<V, I> p, int64_t tiles) {
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t > tiles) return;
  const int64_t total = p.rows + p.nnz, d = t * kTile < total ? t * kTile : total;
  p.splits[t] = merge_path_split(
      d, p.rows, p.nnz, [&](int64_t i) { return int64_t(p.off[i + 1]); }, [](int64_t j) { return j; },
      [](int64_t u, int64_t v) { return u < v; });
}

template <class V, class I>
__global__ void __launch_bounds__(kThreads, kMinBlocks) spmv_tiles(SpmvParams<V, I> p) {
  // The tile's row ends (integers) first, then its products (doubles): kTile 8-byte slots.
  __shared__ __align__(8) unsigned char s_raw[kTile * 8];
  __shared__ Partial s_warp_totals[kThreads / 32];
  __shared__ Partial s_fix;
  int64_t* s_row_end = reinterpret_cast<int64_t*>(s_raw);
  double* s_buf = reinterpret_cast<double*>(s_raw);

  const int64_t tile = blockIdx.x, total = p.rows + p.nnz;
  const int64_t d0 = tile * kTile, d1 = d0 + kTile < total ? d0 + kTile : total;
  auto less = [](int64_t u, int64_t v) { return u < v; };
  if (threadIdx.x == 0) s_fix = {-1, 0.0};
  __syncthreads();
  const int64_t i0 = p.splits[tile], i1 = p.splits[tile + 1], j0 = d0 - i0, j1 = d1 - i1;
  if (i1 < i0 || j1 < j0 || (i1 - i0) + (j1 - j0) > kTile) {  // only with offsets out of order
    if (threadIdx.x == 0) {
      atomicOr(p.error, 2);
      p.carry[tile] = {-1, 0.0};
      p.fix[tile] = {-1, 0.0};
    }
    return;
  }
  const int nrows = int(i1 - i0), nz = int(j1 - j0);
  // Every global load of a kind is issued before any is used (unrolled over the kItems slots a
  // thread can own: nrows + nz <= kTile), so a thread has kItems loads in flight, not one.
  int bad = 0;
  {
    int64_t end[kItems], start[kItems];
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int k = u * kThreads + int(threadIdx.x);
      if (k < nrows) end[u] = p.off[i0 + k + 1], start[u] = p.off[i0 + k];
    }
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int k = u * kThreads + int(threadIdx.x);
      if (k < nrows) {
        if (start[u] > end[u] || end[u] > p.nnz || start[u] < 0) bad |= 2;
        s_row_end[k] = end[u];
      }
    }
  }
  {
    I c[kItems];
    V v[kItems], xv[kItems];
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int k = u * kThreads + int(threadIdx.x);
      if (k < nz) c[u] = p.col[j0 + k], v[u] = p.val[j0 + k];
    }
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int k = u * kThreads + int(threadIdx.x);
      const bool ok = k < nz && c[u] >= 0 && c[u] < p.cols;
      if (k < nz && !ok) bad |= 1;
      xv[u] = ok ? __ldg(p.x + c[u]) : V(0);
    }
#pragma unroll
    for (int u = 0; u < kItems; ++u) {
      const int k = u * kThreads + int(threadIdx.x);
      if (k < nz) s_buf[nrows + k] = double(v[u]) * double(xv[u]);
    }
  }
  if (threadIdx.x == 0 && ((tile == 0 && p.off[0] != 0) || (d1 == total && int64_t(p.off[p.rows]) != p.nnz))) bad |= 2;
  if (bad) atomicOr(p.error, bad);
  // Does the tile's first row hold non-zeros before the tile (then its sum is finished later)?
  const bool first_begun_before = i0 < p.rows && int64_t(p.off[i0]) < j0;
  __syncthreads();

  const int count = nrows + nz;
  const int t0 = int(threadIdx.x) * kItems < count ? int(threadIdx.x) * kItems : count;
  const int t1 = t0 + kItems < count ? t0 + kItems : count;
  auto end_at = [&](int64_t k) { return s_row_end[k]; };
  auto nz_at = [&](int64_t k) { return j0 + k; };
  int ti = int(merge_path_split(t0, nrows, nz, end_at, nz_at, less)), tj = t0 - ti;
  const int ti_end = int(merge_path_split(t1, nrows, nz, end_at, nz_at, less)), tj_end = t1 - ti_end;
  const int64_t first_row = i0 + ti;
  bool closed_first = false;
  double head = 0.0, acc = 0.0;
  while (ti < ti_end || tj < tj_end) {
    if (ti < ti_end && (tj == tj_end || s_row_end[ti] <= j0 + tj)) {
      if (!closed_first && i0 + ti == first_row) {
        head = acc;  // may continue a row from earlier threads or tiles: settled below
        closed_first = true;
      } else {
        p.y[i0 + ti] = V(acc);
      }
      acc = 0.0;
      ++ti;
    } else {
      acc += s_buf[nrows + tj];
      ++tj;
    }
  }
  const Partial tail{i0 + ti, acc};  // the row open where this thread stops
  Partial before, all;
  block_exclusive_scan<kThreads>(tail, ByRow{}, Partial{-1, 0.0}, before, all, s_warp_totals);
  if (closed_first) {
    const double sum = head + (before.row == first_row ? before.value : 0.0);
    if (first_row == i0 && first_begun_before)
      s_fix = {first_row, sum};
    else
      p.y[first_row] = V(sum);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    p.carry[tile] = all.row < 0 ? Partial{i1, 0.0} : all;
    p.fix[tile] = s_fix;
  }
}

/// One block folds the tiles' carries in tile order (reduce-by-row) and settles every fix:
/// y[row] = fix + the carries of the same row from the tiles just before. Each thread loads
/// its kPer carries and fixes together before using any (one memory round trip per round of
/// 1024 x kPer tiles, not 3 x kPer: measured 52 us for the acceptance matrix's 10,254 tiles
/// when the loads went one at a time).
template <class V>
__global__ void __launch_bounds__(1024) spmv_fixup(const Partial* carry, const Partial* fix, int64_t tiles, V* y) {
  constexpr int kPer = 4;
  __shared__ Partial s_warp_totals[32];
  Partial running{-1, 0.0};
  for (int64_t c0 = 0; c0 < tiles; c0 += 1024 * kPer) {
    const int64_t first = c0 + int64_t(threadIdx.x) * kPer;
    Partial c[kPer], f[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const bool in = first + k < tiles;
      c[k] = in ? carry[first + k] : Partial{-1, 0.0};
      f[k] = in ? fix[first + k] : Partial{-1, 0.0};
    }
    Partial mine{-1, 0.0};
#pragma unroll
    for (int k = 0; k < kPer; ++k) mine = ByRow{}(mine, c[k]);
    Partial before, all;
    block_exclusive_scan<1024>(mine, ByRow{}, Partial{-1, 0.0}, before, all, s_warp_totals);
    Partial seen = ByRow{}(running, before);
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      if (f[k].row >= 0) y[f[k].row] = V(f[k].value + (seen.row == f[k].row ? seen.value : 0.0));
      seen = ByRow{}(seen, c[k]);
    }
    running = ByRow{}(running, all);
  }
}

template <class V, class I>
void run_spmv(const I* off, const I* col, const V* val, const V* x, V* y, int64_t rows, int64_t cols, int64_t nnz,
              void* scratch, int* error, cudaStream_t s) {
  const int64_t tiles = (rows + nnz + kTile - 1) / kTile;
  Partial* carry = static_cast<Partial*>(scratch);
  Partial* fix = carry + tiles;
  int64_t* splits = reinterpret_cast<int64_t*>(fix + tiles);
  SpmvParams<V, I> p{off, col, val, x, y, rows, cols, nnz, carry, fix, splits, error};
  spmv_partition<V, I><<<unsigned((tiles + 1 + 255) / 256), 256, 0, s>>>(p, tiles);
  check_launch("spmv_partition");
  spmv_tiles<V, I><<<unsigned(tiles), kThreads, 0, s>>>(p);
  check_launch("spmv_tiles");
  spmv_fixup<V><<<1, 1024, 0, s>>>(carry, fix, tiles, y);
  check_launch("spmv_fixup");
}

}  // namespace

size_t spmv_scratch_bytes(int64_t rows, int64_t nnz) {
  const int64_t tiles = (rows + nnz + kTile - 1) / kTile;
  return size_t(2 * tiles) * sizeof(Partial) + size_t(tiles + 1) * sizeof(int64_t);
}

void launch_spmv(Dtype value, Dtype index, const void* offsets, const void* indices, const void* values, const void* x,
                 void* y, int64_t rows, int64_t cols, int64_t nnz, void* scratch, int* error, cudaStream_t stream) {
  if (rows == 0) return;
  const bool wide = index == Dtype::i64;
  auto go = [&](auto v, auto i) {
    using V = decltype(v);
    using I = decltype(i);
    run_spmv<V, I>(static_cast<const I*>(offsets), static_cast<const I*>(indices), static_cast<const V*>(values),
                   static_cast<const V*>(x), static_cast<V*>(y), rows, cols, nnz, scratch, error, stream);
  };
  if (value == Dtype::f64)
    wide ? go(double{}, int64_t{}) : go(double{}, int32_t{});
  else
    wide ? go(float{}, int64_t{}) : go(float{}, int32_t{});
}

}  // namespace simkit::detail::cuda
