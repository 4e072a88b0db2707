// k-means on the GPU (core/kmeans_engine.hpp). The training points are uploaded once and stay
// resident, with their labels and costs, when they fit the memory budget; each assignment is
// then four kernels and a reduction on the device (kmeans_kernels.hpp) and only the centroids
// (k x d) go up and the inertia comes back, and each update sends back the k x d centroids and k
// counts. Points that do not fit are streamed from host memory tile by tile at each assignment,
// the labels and costs come back per tile, and the update runs on the host by the same rule
// (core/centroid_sums.hpp), so both modes give the same centroids.
#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <cuda_fp16.h>

#include "core/centroid_sums.hpp"
#include "core/kmeans_engine.hpp"
#include "core/nearest_operands.hpp"
#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/gemm.hpp"
#include "cuda/kmeans/kmeans_kernels.hpp"
#include "cuda/resources.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr size_t kPad = 16 * Carver::alignment;  // slack for the carver's rounding

/// Per-point device bytes of one assignment's scratch: candidates and their keys, unsettled list.
constexpr size_t kAssignBytesPerPoint = kNearestCandidates * 8 + 4;

size_t centroid_bytes(int64_t k, int64_t d) { return size_t(k) * size_t(d) * 8 + size_t(k + d) * 4; }

void upload(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (bytes) check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
}
void download(void* dst, const void* src, size_t bytes, cudaStream_t s) {
  if (bytes) check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
}

class CudaKmeansEngine final : public KmeansEngine {
 public:
  CudaKmeansEngine(const Context& ctx, MatrixView<const float> X, bool spherical)
      : ctx_(ctx), X_(X), spherical_(spherical) {
    ctx_.progress = nullptr;
    const int64_t n = X.rows, d = X.cols;
    if (n > INT_MAX)
      throw Error(ErrorCode::unsupported, "kmeans on the GPU: more than 2^31 - 1 points (" + std::to_string(n) + ")");
    if (!spherical) {  // the points' mean, the translation of the fast pass (nearest_bound.hpp)
      // Fixed blocks of rows summed in parallel, then in order: the same bits on any thread count.
      constexpr int64_t kRowsPerBlock = 4096;
      const int64_t blocks = (n + kRowsPerBlock - 1) / kRowsPerBlock;
      std::vector<double> partial(static_cast<size_t>(blocks * d), 0.0);
#pragma omp parallel for schedule(static)
      for (int64_t blk = 0; blk < blocks; ++blk)
        for (int64_t i = blk * kRowsPerBlock; i < std::min(n, (blk + 1) * kRowsPerBlock); ++i)
          for (int64_t j = 0; j < d; ++j) partial[size_t(blk * d + j)] += X(i, j);
      translation_.resize(static_cast<size_t>(d));
      for (int64_t j = 0; j < d; ++j) {
        double sum = 0;
        for (int64_t blk = 0; blk < blocks; ++blk) sum += partial[size_t(blk * d + j)];
        translation_[size_t(j)] = float(sum / double(n));
      }
    }
    point_scale_ = power_of_two_above(max_row_norm(X, spherical ? nullptr : translation_.data()));
    Call call(ctx_);
    const size_t budget = working_budget(ctx_, call.r());
    // Resident when the points (and their scaled half copy), labels and costs plus one pass's
    // scratch (at k = n, the most) fit; the update's scratch at the largest k is about as large.
    const size_t resident = size_t(n) * (size_t(d) * 6 + 12) + size_t(n) * kAssignBytesPerPoint +
                            update_scratch_bytes(n, std::min<int64_t>(n, 65536), d) + kPad;
    if (resident <= budget) {
      try {
        x_dev_.emplace(ctx_, X);
        u_dev_.emplace(ctx_, n, 2 * d);
        const float* t = spherical ? nullptr : carve_translation(call);
        scale_rows(x_dev_->view().data, n, d, t, float(1.0 / point_scale_), half_rows(*u_dev_), call.stream());
        call.finish();
        labels_dev_.emplace(ctx_, n, 1);
        costs_dev_.emplace(ctx_, n, 1);
        return;
      } catch (const Error& e) {
        if (e.code() != ErrorCode::out_of_memory) throw;
        x_dev_.reset(), u_dev_.reset(), labels_dev_.reset(), costs_dev_.reset();
      }
    }
    labels_host_.resize(size_t(n));
    costs_host_.resize(size_t(n));
  }

  double assign(MatrixView<const float> C) override {
    const NearestOperands ops = nearest_operands(C, spherical_, spherical_ ? nullptr : &translation_);
    const int64_t n = X_.rows, d = X_.cols, k = C.rows;
    Call call(ctx_);
    Resources& r = call.r();
    const cudaStream_t s = call.stream();
    const bool resident = x_dev_.has_value();
    // Rows per pass: all of them when resident, else what the budget holds with their staging
    // (the points, their scaled half copy, labels and costs).
    const size_t per_row = kAssignBytesPerPoint + (resident ? 0 : size_t(d) * 6 + 12);
    // The product tile and cuBLAS's workspace, less when the budget is small.
    const size_t budget_now = ctx_.gpu_memory_budget ? ctx_.gpu_memory_budget : size_t(1) << 40;
    int64_t tile = product_tile_rows(k);
    while (tile > 128 && size_t(tile) * size_t(k) * 2 > budget_now / 4) tile /= 2;
    const size_t ws_bytes = gemm_workspace_bytes(budget_now);
    const size_t fixed = centroid_bytes(k, d) + sum_scratch_bytes(n) + size_t(tile) * size_t(k) * 2 + ws_bytes + kPad;
    int64_t rows = n;
    if (r.arena.capacity() < fixed + size_t(n) * per_row) {
      const size_t budget = working_budget(ctx_, r);
      if (budget > fixed) rows = std::min<int64_t>(n, int64_t((budget - fixed) / per_row));
      if (rows < 1 || budget <= fixed)
        throw Error(ErrorCode::out_of_memory, "kmeans: " + std::to_string(k) + " centroids of dimension " +
                                                  std::to_string(d) + " exceed the GPU memory budget");
      r.arena.reserve(fixed + size_t(rows) * per_row, budget);
    }
    Carver carve(r.arena);
    NearestCentroids cent = upload_centroids(ops, C, carve, s);
    int32_t* cand = carve.take<int32_t>(size_t(rows) * kNearestCandidates);
    float* keys = carve.take<float>(size_t(rows) * kNearestCandidates);
    int32_t* unsettled = carve.take<int32_t>(size_t(rows));
    int* count = carve.take<int>(1);
    double* sum = carve.take<double>(1);
    const size_t sum_bytes = sum_scratch_bytes(n);
    void* sum_scratch = carve.take<char>(sum_bytes);
    float* x_tile = resident ? nullptr : carve.take<float>(size_t(rows) * size_t(d));
    __half* u_tile = resident ? nullptr : carve.take<__half>(size_t(rows) * size_t(d));
    __half* products = carve.take<__half>(size_t(tile) * size_t(k));
    void* workspace = ws_bytes ? carve.take<char>(ws_bytes) : nullptr;
    int32_t* labels_tile = resident ? labels_dev_->view().data : carve.take<int32_t>(size_t(rows));
    double* costs_tile = resident ? costs_dev_->view().data : carve.take<double>(size_t(rows));

    int unsettled_total = 0;
    double inertia = 0;
    for (int64_t r0 = 0; r0 < n; r0 += rows) {
      const int64_t m = std::min(rows, n - r0);
      const float* x = resident ? x_dev_->view().data + r0 * d : x_tile;
      const __half* u = resident ? half_rows(*u_dev_) + r0 * d : u_tile;
      int32_t* labels = resident ? labels_tile + r0 : labels_tile;
      double* costs = resident ? costs_tile + r0 : costs_tile;
      if (!resident) {
        upload(x_tile, X_.row(r0), size_t(m) * size_t(d) * 4, s);
        scale_rows(x_tile, m, d, cent.t, float(1.0 / point_scale_), u_tile, s);
      }
      check_cuda(cudaMemsetAsync(count, 0, sizeof(int), s), "cudaMemsetAsync");
      const float scale = float(double(cent.b) * cent.su * cent.sv);  // exact: powers of two times b
      for (int64_t p0 = 0; p0 < m; p0 += tile) {
        const int64_t pm = std::min(tile, m - p0);
        dot_tile(r, s, pm, k, d, 1.0f, u + p0 * d, d, cent.v, d, products, k, workspace, ws_bytes);
        select_candidates(products, k, pm, k, cent.a, scale, cand + p0 * kNearestCandidates,
                          keys + p0 * kNearestCandidates, s);
      }
      certify_candidates(x, m, d, cent, spherical_, cand, keys, labels, costs, unsettled, count, s);
      rank_exact(x, d, cent, spherical_, unsettled, count, labels, costs, s);
      int tile_unsettled = 0;
      download(&tile_unsettled, count, sizeof(int), s);
      if (!resident) {
        download(labels_host_.data() + r0, labels, size_t(m) * 4, s);
        download(costs_host_.data() + r0, costs, size_t(m) * 8, s);
      }
      check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      unsettled_total += tile_unsettled;
      if (!resident)
        for (int64_t i = 0; i < m; ++i) inertia += costs_host_[size_t(r0 + i)];
    }
    if (resident) {
      sum_costs(costs_tile, n, sum, sum_scratch, sum_bytes, s);
      download(&inertia, sum, sizeof(double), s);
    }
    call.finish();
    stats_.rows += n;
    stats_.exact_fallbacks += unsettled_total;
    return inertia;
  }

  std::vector<int64_t> update(Matrix<float>& C) override {
    if (!x_dev_) return update_centroids_host(X_, labels_host_.data(), spherical_, C, 0);
    std::vector<int32_t> sizes;
    device_update(C, sizes, nullptr);
    std::vector<int64_t> empty;
    for (int64_t c = 0; c < C.rows(); ++c)
      if (sizes[size_t(c)] == 0) empty.push_back(c);
    return empty;
  }

  void cluster_sums(int64_t k, ClusterSums& out) override {
    if (!x_dev_) return cluster_sums_host(X_, labels_host_.data(), k, out, 0);
    Matrix<float> C(k, X_.cols);  // the centroids made on the way are not wanted
    std::vector<int32_t> sizes;
    out.sums.resize(size_t(k * X_.cols));
    device_update(C, sizes, out.sums.data());
    out.counts.assign(sizes.begin(), sizes.end());
  }

  void labels(int64_t* out) const override {
    std::vector<int32_t> l;
    const int32_t* src = labels_host_.data();
    if (labels_dev_) {
      l.resize(size_t(X_.rows));
      copy_back(l.data(), labels_dev_->view().data, l.size() * 4);
      src = l.data();
    }
    std::copy(src, src + X_.rows, out);
  }

  void costs(double* out) const override {
    if (costs_dev_)
      copy_back(out, costs_dev_->view().data, size_t(X_.rows) * 8);
    else
      std::copy(costs_host_.begin(), costs_host_.end(), out);
  }

  AssignStats stats() const override { return stats_; }

 private:
  /// The update on the device (points resident): C := the centroids, sizes := the clusters'
  /// sizes, and when `sums_host` is not null the clusters' float64 sums (k x d) copied there.
  void device_update(Matrix<float>& C, std::vector<int32_t>& sizes, double* sums_host) {
    const int64_t n = X_.rows, d = X_.cols, k = C.rows();
    Call call(ctx_);
    Resources& r = call.r();
    const cudaStream_t s = call.stream();
    const size_t scratch = update_scratch_bytes(n, k, d);
    const size_t need = scratch + size_t(k) * size_t(d) * (8 + (sums_host ? 8 : 0)) + size_t(k) * 4 + 2 * kPad;
    if (r.arena.capacity() < need) r.arena.reserve(need, std::max(need, working_budget(ctx_, r)));
    Carver carve(r.arena);
    float* c_in = carve.take<float>(size_t(k) * size_t(d));
    float* c_out = carve.take<float>(size_t(k) * size_t(d));
    int32_t* counts = carve.take<int32_t>(size_t(k));
    double* totals = sums_host ? carve.take<double>(size_t(k) * size_t(d)) : nullptr;
    void* work = carve.take<char>(scratch);
    upload(c_in, C.data(), size_t(k) * size_t(d) * 4, s);
    update_centroids(x_dev_->view().data, n, d, labels_dev_->view().data, k, spherical_, c_in, c_out, counts, work,
                     scratch, s, totals);
    sizes.resize(static_cast<size_t>(k));
    download(C.data(), c_out, size_t(k) * size_t(d) * 4, s);
    download(sizes.data(), counts, size_t(k) * 4, s);
    if (sums_host) download(sums_host, totals, size_t(k) * size_t(d) * 8, s);
    call.finish();
  }

  /// Points per product tile: 8M halves (16 MiB). Measured on the H100, 1M x 128, K = 1024, one
  /// Lloyd iteration (median): 4M halves 7.02 ms, 8M 5.62, 16M 5.85 and 5.93 (same run, 2026-11-24):
  /// smaller tiles pay more launches and wave tails, larger ones no longer gain.
  static int64_t product_tile_rows(int64_t k) {
    return std::max<int64_t>(128, (int64_t{1} << 23) / std::max<int64_t>(1, k) / 128 * 128);
  }

  /// The smallest power of two >= x (1 for x = 0): dividing by it is exact.
  static double power_of_two_above(double x) {
    if (!(x > 0)) return 1.0;
    int e = 0;
    const double m = std::frexp(x, &e);  // x = m 2^e, 0.5 <= m < 1
    return std::ldexp(1.0, m == 0.5 ? e - 1 : e);
  }

  /// max_i ||X_i - t|| (t null: ||X_i||), in float64 over the rows in parallel.
  static double max_row_norm(MatrixView<const float> X, const float* t) {
    double most = 0;
#pragma omp parallel for schedule(static) reduction(max : most)
    for (int64_t i = 0; i < X.rows; ++i) {
      double sq = 0;
      for (int64_t j = 0; j < X.cols; ++j) {
        const double e = t ? double(X(i, j)) - double(t[j]) : double(X(i, j));
        sq += e * e;
      }
      most = std::max(most, sq);
    }
    return std::sqrt(most);
  }

  /// The scaled half copy of the points, kept as raw bytes (n x 2d).
  static __half* half_rows(DeviceMatrix<uint8_t>& m) { return reinterpret_cast<__half*>(m.view().data); }

  /// The translation in the call's arena, uploaded.
  float* carve_translation(Call& call) {
    Resources& r = call.r();
    const size_t bytes = translation_.size() * 4 + kPad;
    if (r.arena.capacity() < bytes) r.arena.reserve(bytes, std::max(bytes, working_budget(ctx_, r)));
    Carver carve(r.arena);
    float* t = carve.take<float>(translation_.size());
    upload(t, translation_.data(), translation_.size() * 4, call.stream());
    return t;
  }

  NearestCentroids upload_centroids(const NearestOperands& ops, MatrixView<const float> C, Carver& carve,
                                    cudaStream_t s) const {
    const size_t kd = size_t(ops.k) * size_t(ops.d);
    const double sv = power_of_two_above(ops.v_max);
    std::vector<__half> v_half(kd);
    const float inv = float(1.0 / sv);
    for (size_t e = 0; e < kd; ++e) v_half[e] = __float2half_rn(ops.v[e] * inv);
    float* c = carve.take<float>(kd);
    __half* v = carve.take<__half>(kd);
    float* a = ops.a.empty() ? nullptr : carve.take<float>(ops.a.size());
    float* t = ops.t.empty() ? nullptr : carve.take<float>(ops.t.size());
    upload(c, C.data, kd * 4, s);
    upload(v, v_half.data(), kd * 2, s);
    if (a) upload(a, ops.a.data(), ops.a.size() * 4, s);
    if (t) upload(t, ops.t.data(), ops.t.size() * 4, s);
    // The host vectors must outlive the copies: pageable copies complete before returning.
    return NearestCentroids{c, v, a, t, ops.b, ops.v_max, ops.a_max, point_scale_, sv, ops.k};
  }

  void copy_back(void* dst, const void* src, size_t bytes) const {
    Call call(ctx_);
    download(dst, src, bytes, call.stream());
    call.finish();
  }

  Context ctx_;
  MatrixView<const float> X_;
  bool spherical_;
  std::vector<float> translation_;  // sqeuclidean: the points' mean
  double point_scale_ = 1;          // su: a power of two >= every ||x_i - translation||
  std::optional<DeviceMatrix<float>> x_dev_;
  std::optional<DeviceMatrix<uint8_t>> u_dev_;  // half((x - translation) / su), as bytes
  std::optional<DeviceMatrix<int32_t>> labels_dev_;
  std::optional<DeviceMatrix<double>> costs_dev_;
  std::vector<int32_t> labels_host_;  // streamed mode
  std::vector<double> costs_host_;
  AssignStats stats_;
};

}  // namespace

std::unique_ptr<KmeansEngine> CudaBackend::kmeans_engine(const Context& ctx, MatrixView<const float> X,
                                                         bool spherical) const {
  return std::make_unique<CudaKmeansEngine>(ctx, X, spherical);
}

}  // namespace simkit::detail::cuda
