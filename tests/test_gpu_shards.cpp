// knn and the flat, ivf_flat and ivf_pq searches split over GPUs (Context::gpu_ids): the one-GPU answer,
// bit for bit. Over every visible GPU where there are two or more, and over three shards on GPU
// 0 (gpu_ids {0, 0, 0}: three resident copies of slices on one device, the same code path) so
// that a one-GPU machine runs it too. test_shards.cpp checks the same on CPU shard contexts.

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>
#include <simkit/context.hpp>
#include <simkit/kmeans.hpp>

#include "contexts.hpp"
#include "shard_check.hpp"

namespace simkit::test {
namespace {

constexpr Metric kMetrics[] = {Metric::l2,  Metric::sqeuclidean, Metric::l1,
                               Metric::dot, Metric::cosine,      Metric::pearson};

std::vector<std::vector<int>> splits() {
  std::vector<std::vector<int>> out{{0, 0, 0}};
  if (gpus().size() >= 2) {
    std::vector<int> all;
    for (const GpuInfo& g : gpus()) all.push_back(g.id);
    out.push_back(all);
  }
  return out;
}

// A small index fits every GPU, where the inverted files split the queries (gpu_split): the
// split by rows, for indexes larger than one GPU, is forced too.
constexpr const char* kSplits[] = {"queries", "rows"};

Context split_context(const std::vector<int>& ids) {
  Context c = gpu_context();
  c.gpu_ids = ids;
  return c;
}

TEST(GpuShards, KnnOverGpus) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("SIMKIT_TEST_SEED=" + std::to_string(seed));
  for (const auto& ids : splits())
    for (Metric metric : kMetrics) {
      const Matrix<float> X = inputs_for(metric, 3001, 33, seed), Q = inputs_for(metric, 97, 33, seed + 1);
      for (int64_t k : {1, 10, 600}) expect_split_knn(gpu_context(), split_context(ids), Q, X, k, metric, "random");
      const Matrix<float> T = tied_rows(400, 6, seed + 2), TQ = tied_rows(13, 6, seed + 3);
      expect_split_knn(gpu_context(), split_context(ids), TQ, T, 9, metric, "ties");
    }
}

TEST(GpuShards, FlatAndIvfFlatOverGpus) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("SIMKIT_TEST_SEED=" + std::to_string(seed));
  for (const auto& ids : splits())
    for (Metric metric : kMetrics) {
      const Matrix<float> X = inputs_for(metric, 2000, 24, seed), Q = inputs_for(metric, 61, 24, seed + 1);
      const SearchParams plain;
      expect_split_index(gpu_context(), split_context(ids), "flat", metric, X, Q, {1, 10}, {&plain});
      IvfSearchParams two, all;
      two.nprobe = 2, all.nprobe = 32;
      for (const char* mode : kSplits) {
        SCOPED_TRACE(mode);
        const ForcedSplit forced(mode);
        expect_split_index(gpu_context(), split_context(ids), "ivf_flat,nlist=32,seed=1", metric, X, Q, {1, 10},
                           {&two, &all});
      }
    }
}

TEST(GpuShards, IvfPqOverGpus) {
  SIMKIT_REQUIRE_GPU();
  const uint64_t seed = test_seed();
  SCOPED_TRACE("SIMKIT_TEST_SEED=" + std::to_string(seed));
  for (const auto& ids : splits())
    for (const char* mode : kSplits)
      for (Metric metric : kMetrics) {
        SCOPED_TRACE(mode);
        const ForcedSplit forced(mode);
        const Matrix<float> X = inputs_for(metric, 3000, 32, seed), Q = inputs_for(metric, 61, 32, seed + 1);
        IvfPqSearchParams two, all, deeper;
        two.nprobe = 2, all.nprobe = 32, deeper.nprobe = 4, deeper.refine = 12;
        expect_split_index(gpu_context(), split_context(ids), "ivf_pq,nlist=32,m=8,refine=4,seed=1", metric, X, Q,
                           {1, 10}, {&two, &all, &deeper});
        expect_split_index(gpu_context(), split_context(ids), "ivf_pq,nlist=32,m=8,refine=0,seed=1", metric, X, Q,
                           {1, 10}, {&two, &all});
        // The re-rank on the host (refine_on=host): the same rule, the same answer.
        expect_split_index(gpu_context(), split_context(ids), "ivf_pq,nlist=32,m=8,refine=4,refine_on=host,seed=1",
                           metric, X, Q, {10}, {&two});
      }
}

TEST(GpuShards, KmeansOverGpus) {
  SIMKIT_REQUIRE_GPU();
  // Fixed data: against one GPU the guarantee is up to float64 rounding (kmeans_shards.hpp).
  const Matrix<float> X = random_matrix(20011, 24, 5, Distribution::gaussian);
  for (Metric metric : {Metric::sqeuclidean, Metric::cosine}) {
    KmeansParams p;
    p.k = 64;
    p.metric = metric;
    p.seed = 2;
    p.max_iterations = 4;
    const KmeansResult one = kmeans(gpu_context(), X.view(), p);
    for (const auto& ids : splits()) {
      const KmeansResult split = kmeans(split_context(ids), X.view(), p);
      int64_t differ = 0;
      for (int64_t i = 0; i < X.rows(); ++i) differ += split.labels(i, 0) != one.labels(i, 0);
      EXPECT_EQ(differ, 0) << to_string(metric) << " over " << ids.size() << " shards";
      for (int64_t c = 0; c < p.k; ++c)
        for (int64_t j = 0; j < X.cols(); ++j)
          ASSERT_NEAR(split.centroids(c, j), one.centroids(c, j),
                      2e-7 * std::max(1.0f, std::fabs(one.centroids(c, j))));
    }
  }
}

}  // namespace
}  // namespace simkit::test
