// The IFGT on the GPU, with a plan from plan_ifgt (core/ifgt_plan.cpp). Clustering is finished
// on the device, the order settled on the host, expansions built and evaluated on the device:
//
//   1. assign_kernel: every source to its nearest planned centre, with cluster sizes and radii;
//   2. the sizes and radii come back (2K numbers): finalize_ifgt fixes p and the bound, and the
//      host writes the multi-indices in the kernels' order (ifgt_kernels.cuh) with their
//      Taylor factors 2^|alpha| / alpha!;
//   3. a stable radix sort (CUB) groups the sources by cluster; coefficients_kernel sums each
//      run of at most `chunk` sources of one cluster into a partial, reduce_kernel adds a
//      cluster's partials in order (so results do not depend on scheduling) and scales them;
//   4. evaluate_kernel: one thread per target over the clusters within reach.
// Inputs and output may be on the host or the device; weights are on the host.

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "core/ifgt_bound.hpp"
#include "core/ifgt_plan.hpp"
#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/gauss/ifgt_kernels.cuh"
#include "cuda/resources.hpp"

namespace simkit::detail::cuda {

namespace {

using ifgt::kThreads;
using ifgt::Span;

/// Shared memory the coefficient kernel's source tiles may use.
constexpr size_t kTileBytes = 40 * 1024;

/// A device allocation owned by the call (for what is sized only once the order is known).
class Scratch {
 public:
  explicit Scratch(size_t bytes) {
    if (bytes > 0) check_cuda(cudaMalloc(&p_, bytes), "cudaMalloc (IFGT expansions)");
  }
  ~Scratch() {
    if (p_) cudaFree(p_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
};

/// The multi-indices of total degree <= n in D dimensions, in the order horner<L, D> consumes
/// coefficients, appended as D exponents each (see ifgt_kernels.cuh).
void horner_exponents(int L, int D, int n, std::vector<unsigned char>& cur, std::vector<unsigned char>& out) {
  for (int e = n; e >= 0; --e) {
    cur[size_t(L)] = static_cast<unsigned char>(e);
    if (L == D - 1)
      out.insert(out.end(), cur.begin(), cur.end());
    else
      horner_exponents(L + 1, D, n - e, cur, out);
  }
}

/// 2^|alpha| / alpha! for each multi-index (D exponents each).
std::vector<double> taylor_factors(const std::vector<unsigned char>& exps, int D) {
  std::vector<double> f(exps.size() / size_t(D), 1.0);
  for (size_t j = 0; j < f.size(); ++j)
    for (int e = 0; e < D; ++e)
      for (int k = 1; k <= exps[j * size_t(D) + size_t(e)]; ++k) f[j] *= 2.0 / k;
  return f;
}

/// SIMKIT_IFGT_TRACE set: each phase's wall time on stderr, with a synchronisation after each so
/// that phases do not overlap (for finding where the time goes; it slows the whole a little).
class PhaseTrace {
 public:
  explicit PhaseTrace(cudaStream_t s) : s_(s), on_(std::getenv("SIMKIT_IFGT_TRACE") != nullptr) {}
  void mark(const char* phase) {
    if (!on_) return;
    check_cuda(cudaStreamSynchronize(s_), "cudaStreamSynchronize");
    const auto now = std::chrono::steady_clock::now();
    std::fprintf(stderr, "ifgt trace: %-13s %8.3f ms\n", phase,
                 std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

 private:
  cudaStream_t s_;
  bool on_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

int blocks_for(int64_t work, int multiprocessors) {
  return int(std::max<int64_t>(1, std::min<int64_t>((work + kThreads - 1) / kThreads, int64_t(multiprocessors) * 8)));
}

template <int D>
IfgtFinal run(const Context& ctx, MatrixView<const float> X, const double* q, MatrixView<const float> Y, double h,
              const IfgtChoice& choice, MatrixView<double> out) {
  Call call(ctx);
  Resources& r = call.r();
  const cudaStream_t s = call.stream();
  PhaseTrace trace(s);
  const int n = int(X.rows), m = int(Y.rows), K = int(choice.clusters);
  const double inv_h = 1.0 / h;

  // Phase 1 scratch, from the arena: inputs, labels, the sort.
  int end_bit = 1;
  while ((int64_t{1} << end_bit) < K) ++end_bit;
  size_t sort_bytes = 0;
  check_cuda(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, (const int*)nullptr, (int*)nullptr,
                                             (const int*)nullptr, (int*)nullptr, n, 0, end_bit, s),
             "cub::DeviceRadixSort::SortPairs");
  const bool x_host = X.where == Memory::host, y_host = Y.where == Memory::host, out_host = out.where == Memory::host;
  auto R = [](size_t b) { return Carver::round(b); };
  const size_t bytes = (x_host ? R(size_t(n) * D * 4) : 0) + (y_host ? R(size_t(m) * D * 4) : 0) + R(size_t(n) * 8) +
                       R(size_t(K) * D * 8) + 4 * R(size_t(n) * 4) + R(size_t(K) * 8) + R(size_t(K) * 4) +
                       R(size_t(K) * 8) + R(sort_bytes) + (out_host ? R(size_t(m) * 8) : 0);
  r.arena.reserve(bytes, working_budget(ctx, r));
  trace.mark("arena");
  Carver carve(r.arena);
  const float* x = X.data;
  const float* y = Y.data;
  if (x_host) {
    float* xs = carve.take<float>(size_t(n) * D);
    check_cuda(cudaMemcpyAsync(xs, X.data, size_t(n) * D * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    x = xs;
  }
  if (y_host) {
    float* ys = carve.take<float>(size_t(m) * D);
    check_cuda(cudaMemcpyAsync(ys, Y.data, size_t(m) * D * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    y = ys;
  }
  double* q_dev = carve.take<double>(size_t(n));
  double* centres = carve.take<double>(size_t(K) * D);
  int* label = carve.take<int>(size_t(n));
  int* label_sorted = carve.take<int>(size_t(n));
  int* index = carve.take<int>(size_t(n));
  int* order = carve.take<int>(size_t(n));
  auto* radius2 = carve.take<unsigned long long>(size_t(K));
  int* count = carve.take<int>(size_t(K));
  double* reach2 = carve.take<double>(size_t(K));
  void* sort_temp = carve.take<char>(sort_bytes);
  double* o = out_host ? carve.take<double>(size_t(m)) : out.data;

  check_cuda(cudaMemcpyAsync(q_dev, q, size_t(n) * 8, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  trace.mark("upload");
  check_cuda(cudaMemcpyAsync(centres, choice.centres.data(), size_t(K) * D * 8, cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync");
  check_cuda(cudaMemsetAsync(radius2, 0, size_t(K) * 8, s), "cudaMemsetAsync");
  check_cuda(cudaMemsetAsync(count, 0, size_t(K) * 4, s), "cudaMemsetAsync");
  ifgt::assign_kernel<D><<<blocks_for(n, r.multiprocessors), kThreads, 0, s>>>(x, n, centres, K, label, radius2, count);
  check_launch("ifgt::assign_kernel");
  ifgt::iota_kernel<<<blocks_for(n, r.multiprocessors), kThreads, 0, s>>>(index, n);
  check_launch("ifgt::iota_kernel");
  check_cuda(
      cub::DeviceRadixSort::SortPairs(sort_temp, sort_bytes, label, label_sorted, index, order, n, 0, end_bit, s),
      "cub::DeviceRadixSort::SortPairs");
  std::vector<unsigned long long> radius_bits(static_cast<size_t>(K));
  std::vector<int> sizes(static_cast<size_t>(K));
  check_cuda(cudaMemcpyAsync(radius_bits.data(), radius2, size_t(K) * 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(sizes.data(), count, size_t(K) * 4, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  trace.mark("cluster+sort");

  // The order, from the exact radii; the multi-indices and the coefficient tasks.
  std::vector<double> radius(static_cast<size_t>(K));
  for (int c = 0; c < K; ++c) {
    double r2;
    std::memcpy(&r2, &radius_bits[size_t(c)], 8);
    radius[size_t(c)] = std::sqrt(r2);
  }
  IfgtFinal fin = finalize_ifgt(choice, radius, D, h);
  const int p = fin.order;
  std::vector<unsigned char> cur(static_cast<size_t>(D)), exps;
  horner_exponents(0, D, p - 1, cur, exps);
  const int P = int(exps.size() / D);
  const std::vector<double> factor = taylor_factors(exps, D);
  std::vector<double> reach2_host(static_cast<size_t>(K));
  for (int c = 0; c < K; ++c) reach2_host[size_t(c)] = fin.reach[size_t(c)] * fin.reach[size_t(c)];
  // Enough tasks to fill the chip (4 per SM) where n allows, and at most ~n / 256 + K of them.
  const int chunk = std::clamp((n + 4 * r.multiprocessors - 1) / (4 * r.multiprocessors), 256, 2048);
  std::vector<Span> spans;
  std::vector<int> span_first(size_t(K) + 1, 0);
  for (int c = 0, begin = 0; c < K; ++c) {
    span_first[size_t(c)] = int(spans.size());
    for (int b = begin; b < begin + sizes[size_t(c)]; b += chunk)
      spans.push_back({c, b, std::min(b + chunk, begin + sizes[size_t(c)])});
    begin += sizes[size_t(c)];
  }
  span_first[size_t(K)] = int(spans.size());
  const int tasks = int(spans.size());

  // Phase 2 scratch: sized by P, known only now.
  const size_t b_partial = R(size_t(tasks) * P * 8), b_coeff = R(size_t(K) * P * 8), b_exps = R(exps.size()),
               b_factor = R(size_t(P) * 8), b_spans = R(spans.size() * sizeof(Span)),
               b_first = R(span_first.size() * 4);
  trace.mark("order");
  Scratch phase2(b_partial + b_coeff + b_exps + b_factor + b_spans + b_first);
  trace.mark("cudaMalloc");
  char* at = phase2.get();
  auto* partial = reinterpret_cast<double*>(at);
  auto* coeff = reinterpret_cast<double*>(at += b_partial);
  auto* exps_dev = reinterpret_cast<unsigned char*>(at += b_coeff);
  auto* factor_dev = reinterpret_cast<double*>(at += b_exps);
  auto* spans_dev = reinterpret_cast<Span*>(at += b_factor);
  auto* first_dev = reinterpret_cast<int*>(at += b_spans);
  check_cuda(cudaMemcpyAsync(exps_dev, exps.data(), exps.size(), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(factor_dev, factor.data(), size_t(P) * 8, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(spans_dev, spans.data(), spans.size() * sizeof(Span), cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(first_dev, span_first.data(), span_first.size() * 4, cudaMemcpyHostToDevice, s),
             "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(reach2, reach2_host.data(), size_t(K) * 8, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");

  trace.mark("tables");
  const int tile = int(std::clamp<size_t>(kTileBytes / (8 * (size_t(D) * p + 1)), 1, 64));
  const size_t smem = size_t(tile) * (size_t(D) * p + 1) * 8;
  ifgt::coefficients_kernel<D>
      <<<tasks, kThreads, smem, s>>>(x, q_dev, order, spans_dev, centres, inv_h, p, P, exps_dev, tile, partial);
  check_launch("ifgt::coefficients_kernel");
  trace.mark("coefficients");
  ifgt::reduce_kernel<<<blocks_for(int64_t(K) * P, r.multiprocessors), kThreads, 0, s>>>(partial, first_dev, K, P,
                                                                                         factor_dev, coeff);
  check_launch("ifgt::reduce_kernel");
  trace.mark("reduce");
  ifgt::evaluate_kernel<D>
      <<<blocks_for(m, r.multiprocessors), kThreads, 0, s>>>(y, m, centres, reach2, K, coeff, P, p - 1, inv_h, o);
  check_launch("ifgt::evaluate_kernel");
  trace.mark("evaluate");
  if (out_host) check_cuda(cudaMemcpyAsync(out.data, o, size_t(m) * 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  call.finish();
  trace.mark("download");
  if (ctx.progress) ctx.progress(1.0);
  return fin;
}

}  // namespace

IfgtSample CudaBackend::ifgt_sample(const Context& ctx, MatrixView<const float> X, MatrixView<const float> Y) const {
  if (X.where == Memory::host && Y.where == Memory::host) return detail::ifgt_sample(X, Y);
  IfgtSample out;
  out.n = X.rows, out.m = Y.rows, out.d = X.cols;
  const int d = int(X.cols);
  const int64_t S = ifgt_sample_rows(X.rows, true), T = ifgt_sample_rows(Y.rows, false);
  Call call(ctx);
  Resources& r = call.r();
  const cudaStream_t s = call.stream();
  const int blocks = 2 * r.multiprocessors;
  r.arena.reserve(Carver::round(size_t(S + T) * d * 4) + Carver::round(size_t(blocks) * 2 * d * 4),
                  working_budget(ctx, r));
  Carver carve(r.arena);
  float* rows = carve.take<float>(size_t(S + T) * d);
  float* partial = carve.take<float>(size_t(blocks) * 2 * d);
  std::vector<float> host(size_t(S + T) * d), box(size_t(blocks) * 2 * d);
  auto gather = [&](MatrixView<const float> M, int64_t count, int64_t at) {
    if (M.where == Memory::host) return sample_rows(M, count);
    ifgt::gather_rows_kernel<<<blocks_for(count * d, r.multiprocessors), kThreads, 0, s>>>(M.data, M.rows, d, count,
                                                                                           rows + at * d);
    check_launch("ifgt::gather_rows_kernel");
    check_cuda(cudaMemcpyAsync(host.data() + at * d, rows + at * d, size_t(count) * d * 4, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    return std::vector<double>(host.begin() + at * d, host.begin() + (at + count) * d);
  };
  out.x = gather(X, S, 0);
  out.y = gather(Y, T, S);
  if (Y.where == Memory::host) {
    bounding_box(Y, out.lo, out.hi);
  } else {
    ifgt::bounding_box_kernel<<<blocks, kThreads, 0, s>>>(Y.data, Y.rows, d, partial);
    check_launch("ifgt::bounding_box_kernel");
    check_cuda(cudaMemcpyAsync(box.data(), partial, box.size() * 4, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    out.lo.assign(size_t(d), INFINITY);
    out.hi.assign(size_t(d), -INFINITY);
    for (int b = 0; b < blocks; ++b)
      for (int e = 0; e < d; ++e) {
        out.lo[size_t(e)] = std::min(out.lo[size_t(e)], double(box[(size_t(b) * 2) * d + e]));
        out.hi[size_t(e)] = std::max(out.hi[size_t(e)], double(box[(size_t(b) * 2 + 1) * d + e]));
      }
  }
  call.finish();
  return out;
}

IfgtFinal CudaBackend::gauss_ifgt(const Context& ctx, const GaussArgs& a, const IfgtChoice& choice) const {
  const MatrixView<const float> X = a.X, Y = a.Y;
  const double* q = a.q;
  const double h = a.h;
  const MatrixView<double> out = a.out;
  if (X.rows >= INT32_MAX || Y.rows >= INT32_MAX)
    throw Error(ErrorCode::invalid_argument, "the GPU IFGT takes fewer than 2^31 sources and targets");
  switch (X.cols) {
    case 1: return run<1>(ctx, X, q, Y, h, choice, out);
    case 2: return run<2>(ctx, X, q, Y, h, choice, out);
    case 3: return run<3>(ctx, X, q, Y, h, choice, out);
    case 4: return run<4>(ctx, X, q, Y, h, choice, out);
    case 5: return run<5>(ctx, X, q, Y, h, choice, out);
    case 6: return run<6>(ctx, X, q, Y, h, choice, out);
    case 7: return run<7>(ctx, X, q, Y, h, choice, out);
    case 8: return run<8>(ctx, X, q, Y, h, choice, out);
    default:
      throw Error(ErrorCode::unsupported, "the GPU IFGT is built for d <= " + std::to_string(kIfgtMaxGpuDims) +
                                              ", got d = " + std::to_string(X.cols));
  }
}

}  // namespace simkit::detail::cuda
