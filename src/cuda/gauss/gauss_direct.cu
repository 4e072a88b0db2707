// The direct Gauss transform on the GPU: one small kernel packs the sources (coordinates and
// weights, as floats, padded to whole tiles), then one launch of the fused kernel
// (gauss_tile.cuh) sums every pair into the m values, and one copy brings them back when the
// caller's output is on the host. Inputs are blocked only when they do not fit the memory
// budget; blocks of sources then add into the same device output.
//
// The grid: kThreads x T targets per block along x. When that gives fewer than 4 blocks per SM
// (few targets), the source tiles are split along y as well, so that every SM has work, and the
// splits' sums meet by double-precision atomicAdd (native on sm_60+) in a zeroed output.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>

#include <simkit/error.hpp>

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/gauss/gauss_tile.cuh"
#include "cuda/resources.hpp"
#include "cuda/staging.hpp"

namespace simkit::detail::cuda {

namespace {

using gauss::kMaxRegD;
using gauss::kThreads;
using gauss::kTile;
using gauss::packed_stride;
using gauss::Store;

/// Targets per thread: more amortise each shared-memory read of a source over more pairs, at
/// the price of registers (T x (d + 3) for coordinates and sums).
constexpr int targets_per_thread(int64_t d) { return d <= 4 ? 4 : d <= 8 ? 2 : 1; }

/// -log2(e) / h^2 as a float, kept within the normal range: an overflow to infinity would turn
/// the exponent of a coincident pair into inf * 0 = NaN, an underflow to 0 the exponent of
/// an infinitely distant pair into the same.
float negative_scale(double h) {
  const double s = 1.4426950408889634 / (h * h);
  return -float(std::clamp(s, double(FLT_MIN), double(FLT_MAX)));
}

struct Needs {
  int64_t d;
  bool q_given, x_host, y_host, out_host, wide;
  // Bytes of scratch for a block of mb targets and nb sources.
  size_t bytes(int64_t mb, int64_t nb) const {
    const size_t tiles = size_t((nb + kTile - 1) / kTile);
    size_t b = Carver::round(tiles * kTile * size_t(packed_stride(int(d))) * 4);
    if (q_given) b += Carver::round(size_t(nb) * 8);
    if (x_host) b += Carver::round(size_t(nb) * size_t(d) * 4);
    if (y_host) b += Carver::round(size_t(mb) * size_t(d) * 4);
    if (wide) b += Carver::round(size_t(mb) * size_t(d) * 4);
    if (out_host) b += Carver::round(size_t(mb) * 8);
    return b;
  }
};

struct Plan {
  int64_t mb = 0, nb = 0;
};

Plan plan(const Needs& need, int64_t m, int64_t n, size_t budget) {
  Plan p{m, n};
  // Halve the source block first at equal sizes: a full target block reads every target once.
  while (need.bytes(p.mb, p.nb) > budget) {
    if (p.mb == 1 && p.nb == 1)
      throw Error(ErrorCode::out_of_memory,
                  "gpu_memory_budget of " + std::to_string(budget) +
                      " bytes is too small for the Gauss transform with d = " + std::to_string(need.d));
    if (p.nb >= p.mb && p.nb > 1)
      p.nb = (p.nb + 1) / 2;
    else
      p.mb = (p.mb + 1) / 2;
  }
  return p;
}

int grid_for(int64_t work, int multiprocessors) {
  return int(std::max<int64_t>(1, std::min<int64_t>((work + 255) / 256, int64_t(multiprocessors) * 8)));
}

struct Launch {
  const float* Y;  // targets, device: m x d, or d x m (transposed) for the wide kernel
  int64_t m;
  int d;
  const float* S;  // packed sources, whole tiles
  int64_t tiles;
  float neg_scale;
  double* out;         // m values, device
  bool first_sources;  // the first block of sources for these targets
};

// How the source tiles are split over blockIdx.y: at least 4 blocks per SM, but no split
// thinner than one tile. Split pieces meet by atomicAdd into an output zeroed here.
struct SourceSplit {
  dim3 grid;
  int64_t per_split;
  Store mode;
};

SourceSplit split_sources(const Launch& a, int64_t blocks_x, int multiprocessors, cudaStream_t s) {
  const int64_t want = (4 * int64_t(multiprocessors) + blocks_x - 1) / blocks_x;
  int64_t split = std::clamp<int64_t>(want, 1, std::min<int64_t>(a.tiles, 65535));
  const int64_t per_split = (a.tiles + split - 1) / split;
  split = (a.tiles + per_split - 1) / per_split;
  const Store mode = split > 1 ? Store::atomic : a.first_sources ? Store::assign : Store::add;
  if (mode == Store::atomic && a.first_sources)
    check_cuda(cudaMemsetAsync(a.out, 0, size_t(a.m) * 8, s), "cudaMemsetAsync");
  return {dim3{unsigned(blocks_x), unsigned(split)}, per_split, mode};
}

template <int D, int T>
void launch_fused(const Launch& a, int multiprocessors, cudaStream_t s) {
  const int64_t blocks_x = (a.m + int64_t(kThreads) * T - 1) / (int64_t(kThreads) * T);
  const SourceSplit g = split_sources(a, blocks_x, multiprocessors, s);
  gauss::gauss_fused_kernel<D, T>
      <<<g.grid, kThreads, 0, s>>>(a.Y, a.m, a.d, a.S, a.tiles, g.per_split, a.neg_scale, a.out, g.mode);
  check_launch("gauss_fused_kernel");
}

void launch_wide(const Launch& a, int multiprocessors, cudaStream_t s) {
  const int64_t blocks_x = (a.m + kThreads - 1) / kThreads;
  const SourceSplit g = split_sources(a, blocks_x, multiprocessors, s);
  gauss::gauss_wide_kernel<<<g.grid, kThreads, 0, s>>>(a.Y, a.m, a.d, a.S, a.tiles, g.per_split, a.neg_scale, a.out,
                                                       g.mode);
  check_launch("gauss_wide_kernel");
}

void launch(const Launch& a, int multiprocessors, cudaStream_t s) {
  constexpr int T1 = targets_per_thread(1), T5 = targets_per_thread(5), TR = targets_per_thread(kMaxRegD);
  switch (a.d) {
    case 1: return launch_fused<1, T1>(a, multiprocessors, s);
    case 2: return launch_fused<2, T1>(a, multiprocessors, s);
    case 3: return launch_fused<3, T1>(a, multiprocessors, s);
    case 4: return launch_fused<4, T1>(a, multiprocessors, s);
    case 5: return launch_fused<5, T5>(a, multiprocessors, s);
    case 6: return launch_fused<6, T5>(a, multiprocessors, s);
    case 7: return launch_fused<7, T5>(a, multiprocessors, s);
    case 8: return launch_fused<8, T5>(a, multiprocessors, s);
    default:
      if (a.d <= kMaxRegD) return launch_fused<0, TR>(a, multiprocessors, s);
      return launch_wide(a, multiprocessors, s);
  }
}

}  // namespace

void CudaBackend::gauss_direct(const Context& ctx, const GaussArgs& a) const {
  const MatrixView<const float> X = a.X, Y = a.Y;
  const double* q = a.q;
  Call call(ctx);
  Resources& r = call.r();
  const cudaStream_t s = call.stream();
  const int64_t n = X.rows, m = Y.rows, d = X.cols;
  if (d > INT32_MAX / 4) throw Error(ErrorCode::invalid_argument, "dimension too large for the GPU Gauss transform");
  const int P = packed_stride(int(d));
  const float neg_scale = negative_scale(a.h);
  const size_t budget = working_budget(ctx, r);

  const MatrixView<double> out(a.out.data, m, 1, a.out.where);  // one value per target
  const Needs need{
      d, q != nullptr, X.where == Memory::host, Y.where == Memory::host, out.where == Memory::host, d > kMaxRegD};
  const Plan p = plan(need, m, n, budget);
  r.arena.reserve(need.bytes(p.mb, p.nb), budget);
  Carver carve(r.arena);
  const int64_t max_tiles = (p.nb + kTile - 1) / kTile;
  float* packed = carve.take<float>(size_t(max_tiles) * kTile * P);
  double* q_dev = need.q_given ? carve.take<double>(size_t(p.nb)) : nullptr;
  RowStage<const float> x_rows(X, p.nb), y_rows(Y, p.mb);
  RowStage<double> out_rows(out, p.mb);
  x_rows.carve(carve);
  y_rows.carve(carve);
  float* y_wide = need.wide ? carve.take<float>(size_t(p.mb) * d) : nullptr;
  out_rows.carve(carve);

  const int64_t x_blocks = (n + p.nb - 1) / p.nb, y_blocks = (m + p.mb - 1) / p.mb;
  auto pack = [&](int64_t j0, int64_t nb) {
    const float* x = x_rows.in(j0, nb, s);
    if (q_dev) check_cuda(cudaMemcpyAsync(q_dev, q + j0, size_t(nb) * 8, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    const int64_t tiles = (nb + kTile - 1) / kTile;
    const int64_t rows = tiles * kTile;
    gauss::pack_sources_kernel<<<grid_for(rows * P, r.multiprocessors), 256, 0, s>>>(x, q_dev, nb, int(d), rows,
                                                                                     packed);
    check_launch("pack_sources_kernel");
    return tiles;
  };

  int64_t tiles = 0;
  if (x_blocks == 1) tiles = pack(0, n);
  int64_t done = 0;
  for (int64_t i0 = 0; i0 < m; i0 += p.mb) {
    const int64_t mb = std::min(p.mb, m - i0);
    const float* y = y_rows.in(i0, mb, s);
    if (need.wide) {
      gauss::transpose_targets_kernel<<<grid_for(mb * d, r.multiprocessors), 256, 0, s>>>(y, mb, int(d), y_wide);
      check_launch("transpose_targets_kernel");
      y = y_wide;
    }
    double* o = out_rows.out(i0);
    for (int64_t j0 = 0; j0 < n; j0 += p.nb) {
      const int64_t nb = std::min(p.nb, n - j0);
      if (x_blocks > 1) tiles = pack(j0, nb);
      launch(Launch{y, mb, int(d), packed, tiles, neg_scale, o, j0 == 0}, r.multiprocessors, s);
      ++done;
      if (ctx.progress && x_blocks * y_blocks > 1) ctx.progress(double(done) / double(x_blocks * y_blocks));
    }
    out_rows.back(i0, mb, s);
  }
  // The weights were staged from pageable host memory: the call waits whatever the stream.
  call.finish();
  if (ctx.progress) ctx.progress(1.0);
}

}  // namespace simkit::detail::cuda
