// core/kmeans_shards.hpp: k-means' engine over several GPUs.

#include "core/kmeans_shards.hpp"

#include "core/backend.hpp"
#include "core/shards.hpp"

namespace simkit::detail {

namespace {

class ShardedKmeansEngine final : public KmeansEngine {
 public:
  ShardedKmeansEngine(const std::vector<Context>& shards, MatrixView<const float> X, bool spherical)
      : spherical_(spherical), engines_(shards.size()) {
    const int64_t P = int64_t(shards.size());
    for (int64_t s = 0; s < P; ++s) ranges_.push_back(shard_rows(X.rows, P, s));
    run_on_shards(P, [&](int64_t s) {
      const RowRange r = ranges_[size_t(s)];
      if (r.rows == 0) return;
      const Context& on = shards[size_t(s)];
      const MatrixView<const float> slice{X.row(r.first), r.rows, X.cols, Memory::host};
      engines_[size_t(s)] = backend_for(on, {Memory::host}).kmeans_engine(on, slice, spherical);
    });
  }

  double assign(MatrixView<const float> C) override {
    std::vector<double> part(engines_.size(), 0.0);
    each([&](size_t s) { part[s] = engines_[s]->assign(C); });
    double inertia = 0;
    for (double p : part) inertia += p;
    return inertia;
  }

  std::vector<int64_t> update(Matrix<float>& C) override {
    ClusterSums total;
    cluster_sums(C.rows(), total);
    return centroids_from_sums(total, spherical_, C);
  }

  void cluster_sums(int64_t k, ClusterSums& out) override {
    std::vector<ClusterSums> part(engines_.size());
    each([&](size_t s) { engines_[s]->cluster_sums(k, part[s]); });
    const size_t values = size_t(k) * size_t(cols_of(part));
    out.sums.assign(values, 0.0);
    out.counts.assign(size_t(k), 0);
    for (const ClusterSums& p : part) {  // in shard order, from 0
      if (p.counts.empty()) continue;
      for (size_t i = 0; i < values; ++i) out.sums[i] += p.sums[i];
      for (size_t c = 0; c < size_t(k); ++c) out.counts[c] += p.counts[c];
    }
  }

  void labels(int64_t* out) const override {
    for (size_t s = 0; s < engines_.size(); ++s)
      if (engines_[s]) engines_[s]->labels(out + ranges_[s].first);
  }

  void costs(double* out) const override {
    for (size_t s = 0; s < engines_.size(); ++s)
      if (engines_[s]) engines_[s]->costs(out + ranges_[s].first);
  }

  AssignStats stats() const override {
    AssignStats all;
    for (const auto& e : engines_)
      if (e) {
        const AssignStats one = e->stats();
        all.rows += one.rows;
        all.exact_fallbacks += one.exact_fallbacks;
      }
    return all;
  }

 private:
  /// body(s) for every shard that holds points, each on its own thread.
  template <class Body>
  void each(Body body) {
    run_on_shards(int64_t(engines_.size()), [&](int64_t s) {
      if (engines_[size_t(s)]) body(size_t(s));
    });
  }

  static int64_t cols_of(const std::vector<ClusterSums>& part) {
    for (const ClusterSums& p : part)
      if (!p.counts.empty()) return int64_t(p.sums.size() / p.counts.size());
    return 0;
  }

  bool spherical_;
  std::vector<RowRange> ranges_;
  std::vector<std::unique_ptr<KmeansEngine>> engines_;  // null for a shard with no points
};

}  // namespace

std::unique_ptr<KmeansEngine> make_kmeans_engine(const Context& ctx, const Backend& backend, MatrixView<const float> X,
                                                 bool spherical) {
  const std::vector<Context> shards = gpu_shard_contexts(ctx, {Memory::host});
  return shards.empty() ? backend.kmeans_engine(ctx, X, spherical) : sharded_kmeans_engine(shards, X, spherical);
}

std::unique_ptr<KmeansEngine> sharded_kmeans_engine(const std::vector<Context>& shards, MatrixView<const float> X,
                                                    bool spherical) {
  return std::make_unique<ShardedKmeansEngine>(shards, X, spherical);
}

}  // namespace simkit::detail
