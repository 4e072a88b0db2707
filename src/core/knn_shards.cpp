// knn over several GPUs (core/shards.hpp): a slice of the base per GPU, merged by knn's rule.

#include <algorithm>

#include "core/metric_plan.hpp"
#include "core/shard_merge.hpp"
#include "core/shards.hpp"

namespace simkit::detail {

void knn_over_shards(const std::vector<Context>& shards, MatrixView<const float> Q, MatrixView<const float> X,
                     int64_t k, Metric metric, MatrixView<float> values, MatrixView<int64_t> ids, KnnMethod method,
                     int threads) {
  const int64_t P = int64_t(shards.size());
  std::vector<ShardTopK> parts(shards.size());
  run_on_shards(P, [&](int64_t s) {
    const RowRange r = shard_rows(X.rows, P, s);
    const int64_t ks = std::min(k, r.rows);
    ShardTopK& part = parts[size_t(s)];
    part.values = Matrix<float>(Q.rows, ks);
    part.ids = Matrix<int64_t>(Q.rows, ks);
    if (ks == 0) return;
    const MatrixView<const float> slice{X.row(r.first), r.rows, X.cols, Memory::host};
    knn(shards[size_t(s)], Q, slice, ks, metric, part.values.view(), part.ids.view(), method);
    for (int64_t i = 0; i < part.ids.size(); ++i) part.ids.data()[i] += r.first;
  });
  merge_shard_results(
      plan_metric(metric), Q, [&](int64_t id) { return X.row(id); }, parts, k, 0.0f, values, ids, threads);
}

}  // namespace simkit::detail
