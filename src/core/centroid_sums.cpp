// core/centroid_sums.hpp on the host: a counting sort by label, the chunk sums in parallel,
// then each cluster's chunks in order.
#include "core/centroid_sums.hpp"

#include <algorithm>
#include <numeric>

namespace simkit::detail {

LabelOrder sort_by_label(const int32_t* labels, int64_t n, int64_t k) {
  LabelOrder s;
  s.start.assign(static_cast<size_t>(k + 1), 0);
  s.order.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ++s.start[size_t(labels[i]) + 1];
  std::partial_sum(s.start.begin(), s.start.end(), s.start.begin());
  std::vector<int64_t> at(s.start.begin(), s.start.end() - 1);
  for (int64_t i = 0; i < n; ++i) s.order[size_t(at[size_t(labels[i])]++)] = i;
  return s;
}

void add_points(MatrixView<const float> X, const int64_t* order, int64_t lo, int64_t hi, double* s) {
  const int64_t d = X.cols;
  for (int64_t p = lo; p < hi; ++p) {
    const float* x = X.row(order[p]);
    for (int64_t j = 0; j < d; ++j) s[j] += double(x[j]);
  }
}

void chunk_sums_host(MatrixView<const float> X, const int64_t* order, const std::vector<ChunkSpan>& spans, double* out,
                     int threads) {
  const int64_t d = X.cols, count = static_cast<int64_t>(spans.size());
#pragma omp parallel for schedule(dynamic, 16) num_threads(std::max(1, threads))
  for (int64_t g = 0; g < count; ++g) {
    double* s = out + g * d;
    std::fill_n(s, d, 0.0);
    add_points(X, order, spans[size_t(g)].lo, spans[size_t(g)].hi, s);
  }
}

void add_chunk(double* total, const double* chunk, int64_t d) {
  for (int64_t j = 0; j < d; ++j) total[j] += chunk[j];
}

void centroid_row(const double* total, int64_t count, bool spherical, int64_t d, float* out) {
  const double sq = spherical ? sum_sq_norm(total, d) : 0.0;
  for (int64_t j = 0; j < d; ++j) out[j] = centroid_coordinate(total[j], count, spherical, sq);
}

void cluster_sums_host(MatrixView<const float> X, const int32_t* labels, int64_t k, ClusterSums& out, int threads) {
  const int64_t n = X.rows, d = X.cols;
  const LabelOrder sorted = sort_by_label(labels, n, k);
  const std::vector<int64_t>& start = sorted.start;
  // chunk_start[c] .. chunk_start[c + 1]: cluster c's chunks, each a span of `order`.
  std::vector<int64_t> chunk_start(static_cast<size_t>(k + 1), 0);
  for (int64_t c = 0; c < k; ++c)
    chunk_start[size_t(c + 1)] = chunk_start[size_t(c)] + sum_chunks(start[size_t(c + 1)] - start[size_t(c)]);
  std::vector<ChunkSpan> spans(static_cast<size_t>(chunk_start[size_t(k)]));
  for (int64_t c = 0; c < k; ++c)
    for (int64_t g = chunk_start[size_t(c)]; g < chunk_start[size_t(c + 1)]; ++g) {
      const int64_t lo = start[size_t(c)] + (g - chunk_start[size_t(c)]) * kSumChunk;
      spans[size_t(g)] = {lo, std::min(lo + kSumChunk, start[size_t(c + 1)])};
    }
  std::vector<double> partial(spans.size() * static_cast<size_t>(d));
  chunk_sums_host(X, sorted.order.data(), spans, partial.data(), threads);

  out.sums.assign(static_cast<size_t>(k * d), 0.0);
  out.counts.resize(static_cast<size_t>(k));
#pragma omp parallel for schedule(dynamic, 8) num_threads(std::max(1, threads))
  for (int64_t c = 0; c < k; ++c) {
    out.counts[size_t(c)] = start[size_t(c + 1)] - start[size_t(c)];
    for (int64_t g = chunk_start[size_t(c)]; g < chunk_start[size_t(c + 1)]; ++g)
      add_chunk(out.sums.data() + c * d, partial.data() + g * d, d);
  }
}

std::vector<int64_t> centroids_from_sums(const ClusterSums& sums, bool spherical, Matrix<float>& C) {
  const int64_t k = C.rows(), d = C.cols();
  std::vector<int64_t> empty;
  for (int64_t c = 0; c < k; ++c) {
    if (sums.counts[size_t(c)] == 0)
      empty.push_back(c);
    else
      centroid_row(sums.sums.data() + c * d, sums.counts[size_t(c)], spherical, d, C.data() + c * d);
  }
  return empty;
}

std::vector<int64_t> update_centroids_host(MatrixView<const float> X, const int32_t* labels, bool spherical,
                                           Matrix<float>& C, int threads) {
  ClusterSums sums;
  cluster_sums_host(X, labels, C.rows(), sums, threads);
  return centroids_from_sums(sums, spherical, C);
}

}  // namespace simkit::detail
