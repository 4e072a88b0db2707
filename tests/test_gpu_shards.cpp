// knn and the flat and ivf_flat searches split over GPUs (Context::gpu_ids): the one-GPU answer,
// bit for bit. Over every visible GPU where there are two or more, and over three shards on GPU
// 0 (gpu_ids {0, 0, 0}: three resident copies of slices on one device, the same code path) so
// that a one-GPU machine runs it too. test_shards.cpp checks the same on CPU shard contexts.

#include <gtest/gtest.h>
#include <simkit/context.hpp>

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
      expect_split_index(gpu_context(), split_context(ids), "ivf_flat,nlist=32,seed=1", metric, X, Q, {1, 10},
                         {&two, &all});
    }
}

}  // namespace
}  // namespace simkit::test
