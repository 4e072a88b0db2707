// core/centroid_sums.hpp on the host: a counting sort by label, the chunk sums in parallel,
// then each cluster's chunks in order.
#include "core/centroid_sums.hpp"

#include <algorithm>
#include <numeric>

namespace simkit::detail {

void cluster_sums_host(MatrixView<const float> X, const int32_t* labels, int64_t k, ClusterSums& out, int threads) {
  const int64_t n = X.rows, d = X.cols;
  // Stable counting sort: start[c] .. start[c + 1] are cluster c's positions in `order`.
  std::vector<int64_t> start(static_cast<size_t>(k + 1), 0), order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ++start[size_t(labels[i]) + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  {
    std::vector<int64_t> at(start.begin(), start.end() - 1);
    for (int64_t i = 0; i < n; ++i) order[size_t(at[size_t(labels[i])]++)] = i;
  }
  // chunk_start[c] .. chunk_start[c + 1]: cluster c's chunks; chunk_cluster: the inverse.
  std::vector<int64_t> chunk_start(static_cast<size_t>(k + 1), 0);
  for (int64_t c = 0; c < k; ++c)
    chunk_start[size_t(c + 1)] = chunk_start[size_t(c)] + sum_chunks(start[size_t(c + 1)] - start[size_t(c)]);
  const int64_t chunks = chunk_start[size_t(k)];
  std::vector<int64_t> chunk_cluster(static_cast<size_t>(chunks));
  for (int64_t c = 0; c < k; ++c)
    std::fill(chunk_cluster.begin() + chunk_start[size_t(c)], chunk_cluster.begin() + chunk_start[size_t(c + 1)], c);

  std::vector<double> partial(static_cast<size_t>(chunks * d));
#pragma omp parallel for schedule(dynamic, 16) num_threads(std::max(1, threads))
  for (int64_t g = 0; g < chunks; ++g) {
    const int64_t c = chunk_cluster[size_t(g)];
    const int64_t lo = start[size_t(c)] + (g - chunk_start[size_t(c)]) * kSumChunk;
    const int64_t hi = std::min(lo + kSumChunk, start[size_t(c + 1)]);
    double* s = partial.data() + g * d;
    std::fill_n(s, d, 0.0);
    for (int64_t p = lo; p < hi; ++p) {
      const float* x = X.row(order[size_t(p)]);
      for (int64_t j = 0; j < d; ++j) s[j] += double(x[j]);
    }
  }

  out.sums.assign(size_t(k * d), 0.0);
  out.counts.resize(size_t(k));
#pragma omp parallel for schedule(dynamic, 8) num_threads(std::max(1, threads))
  for (int64_t c = 0; c < k; ++c) {
    out.counts[size_t(c)] = start[size_t(c + 1)] - start[size_t(c)];
    double* total = out.sums.data() + c * d;
    for (int64_t g = chunk_start[size_t(c)]; g < chunk_start[size_t(c + 1)]; ++g)
      for (int64_t j = 0; j < d; ++j) total[j] += partial[size_t(g * d + j)];
  }
}

std::vector<int64_t> centroids_from_sums(const ClusterSums& sums, bool spherical, Matrix<float>& C) {
  const int64_t k = C.rows(), d = C.cols();
  std::vector<int64_t> empty;
  for (int64_t c = 0; c < k; ++c) {
    const int64_t count = sums.counts[size_t(c)];
    if (count == 0) {
      empty.push_back(c);
      continue;
    }
    const double* total = sums.sums.data() + c * d;
    const double sq = spherical ? sum_sq_norm(total, d) : 0.0;
    for (int64_t j = 0; j < d; ++j) C(c, j) = centroid_coordinate(total[j], count, spherical, sq);
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
