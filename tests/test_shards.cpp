// Splitting knn and the flat, ivf_flat and ivf_pq searches over several GPUs (Context::gpu_ids), with
// the GPUs stood in for by CPU shard contexts (core/shards.hpp's ScopedShardContexts) so that
// the split, the per-shard searches and the (key, id) merge run on every machine: the answer
// must be the one-device one, bit for bit. test_gpu_shards.cpp runs the same checks on GPUs.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <simkit/context.hpp>
#include <simkit/error.hpp>
#include <simkit/kmeans.hpp>

#include "contexts.hpp"
#include "core/shards.hpp"
#include "expect_error.hpp"
#include "shard_check.hpp"

namespace simkit::test {
namespace {

constexpr Metric kMetrics[] = {Metric::l2,  Metric::sqeuclidean, Metric::l1,
                               Metric::dot, Metric::cosine,      Metric::pearson};

/// A context that names three GPUs, split over `shards` CPU contexts while `scope` lives.
struct CpuSplit {
  explicit CpuSplit(int shards) : scope(std::vector<Context>(size_t(shards), cpu_context(1))), split(cpu_context()) {
    split.gpu_ids = {0, 1, 2};
  }
  detail::ScopedShardContexts scope;
  Context split;
};

constexpr const char* kSplits[] = {"rows", "queries"};

/// 100 + 1e-5 x gaussian in every coordinate.
Matrix<float> crowded_rows(int64_t rows, int64_t d, uint64_t seed) {
  Matrix<float> X = random_matrix(rows, d, seed, Distribution::gaussian);
  for (int64_t i = 0; i < X.size(); ++i) X.data()[i] = 100.0f + 1e-5f * X.data()[i];
  return X;
}

TEST(Shards, KnnOverShardsIsTheOneDeviceAnswer) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("SIMKIT_TEST_SEED=" + std::to_string(seed));
  for (int shards : {2, 3, 4}) {
    const CpuSplit s(shards);
    for (Metric metric : kMetrics) {
      const Matrix<float> X = inputs_for(metric, 1001, 17, seed), Q = inputs_for(metric, 37, 17, seed + 1);
      for (int64_t k : {1, 10, 300}) expect_split_knn(cpu_context(), s.split, Q, X, k, metric, "random");
      const Matrix<float> T = tied_rows(203, 6, seed + 2), TQ = tied_rows(11, 6, seed + 3);
      for (int64_t k : {1, 7, 203}) expect_split_knn(cpu_context(), s.split, TQ, T, k, metric, "ties");
      // Values that tie in float32 where the float64 keys differ: the merge must fall back to them.
      const Matrix<float> C = crowded_rows(401, 12, seed + 4), CQ = crowded_rows(9, 12, seed + 5);
      expect_split_knn(cpu_context(), s.split, CQ, C, 10, metric, "crowded");
    }
  }
}

TEST(Shards, KnnWithShardsOfNoRows) {
  const CpuSplit s(3);
  const Matrix<float> X = random_matrix(2, 5, 1), Q = random_matrix(4, 5, 2);
  for (Metric metric : kMetrics)
    for (int64_t k : {1, 2}) expect_split_knn(cpu_context(), s.split, Q, X, k, metric, "two rows over three shards");
}

TEST(Shards, FlatIndexOverShards) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("SIMKIT_TEST_SEED=" + std::to_string(seed));
  const CpuSplit s(3);
  for (Metric metric : kMetrics) {
    const Matrix<float> X = inputs_for(metric, 500, 12, seed), Q = inputs_for(metric, 23, 12, seed + 1);
    const SearchParams plain;
    expect_split_index(cpu_context(), s.split, "flat", metric, X, Q, {1, 10, 1000}, {&plain});
    expect_split_index(cpu_context(), s.split, "flat", metric, tied_rows(300, 5, seed), tied_rows(9, 5, seed + 1), {8},
                       {&plain});
  }
}

TEST(Shards, IvfFlatIndexOverShards) {
  const uint64_t seed = test_seed();
  SCOPED_TRACE("SIMKIT_TEST_SEED=" + std::to_string(seed));
  const CpuSplit s(3);
  for (const char* mode : kSplits) {
    SCOPED_TRACE(mode);
    const ForcedSplit forced(mode);
    for (Metric metric : kMetrics) {
      const Matrix<float> X = inputs_for(metric, 700, 12, seed), Q = inputs_for(metric, 29, 12, seed + 1);
      IvfSearchParams one, three, all;
      one.nprobe = 1, three.nprobe = 3, all.nprobe = 16;
      expect_split_index(cpu_context(), s.split, "ivf_flat,nlist=16,seed=5", metric, X, Q, {1, 10, 100},
                         {&one, &three, &all});
      // Fewer queries than shards: a shard with no slice of them.
      expect_split_index(cpu_context(), s.split, "ivf_flat,nlist=16,seed=5", metric, X,
                         inputs_for(metric, 2, 12, seed + 2), {10}, {&three});
    }
  }
}

TEST(Shards, IvfPqIndexOverShards) {
  // Codes only (round 1 is the answer) and with a re-rank (round 2 applies the CPU's shortlist
  // rule to the merged estimates), for every metric and nprobe from one list to all.
  const uint64_t seed = test_seed();
  SCOPED_TRACE("SIMKIT_TEST_SEED=" + std::to_string(seed));
  for (int shards : {2, 3})
    for (const char* mode : kSplits) {
      SCOPED_TRACE(mode);
      const ForcedSplit forced(mode);
      const CpuSplit s(shards);
      for (Metric metric : kMetrics) {
        const Matrix<float> X = inputs_for(metric, 700, 12, seed), Q = inputs_for(metric, 29, 12, seed + 1);
        IvfPqSearchParams one, three, all, deeper;
        one.nprobe = 1, three.nprobe = 3, all.nprobe = 16, deeper.nprobe = 3, deeper.refine = 9;
        expect_split_index(cpu_context(), s.split, "ivf_pq,nlist=16,m=4,refine=4,seed=5", metric, X, Q, {1, 10, 100},
                           {&one, &three, &all, &deeper});
        expect_split_index(cpu_context(), s.split, "ivf_pq,nlist=16,m=3,refine=0,seed=5", metric, X, Q, {1, 10},
                           {&one, &all});
        // Rows crowded within float32's resolution of each other: the shortlist's float32 keys
        // tie where the float64 keys do not, so its cut decides which rows are ranked.
        const Matrix<float> C = crowded_rows(600, 12, seed + 2), CQ = crowded_rows(17, 12, seed + 3);
        expect_split_index(cpu_context(), s.split, "ivf_pq,nlist=8,m=4,refine=4,seed=5", metric, C, CQ, {10}, {&all});
      }
    }
}

TEST(Shards, KmeansOverShards) {
  // Fixed seeds: the guarantee against one device is up to float64 rounding (kmeans_shards.hpp).
  const Matrix<float> X = random_matrix(2003, 13, 7, Distribution::gaussian);
  for (Metric metric : {Metric::sqeuclidean, Metric::cosine})
    for (int64_t sample : {int64_t{0}, int64_t{900}}) {
      KmeansParams p;
      p.k = 17;
      p.metric = metric;
      p.seed = 3;
      p.sample = sample;
      p.max_iterations = 4;  // short of convergence, where the inertias' last bits could stop one run earlier
      const KmeansResult one = kmeans(cpu_context(), X.view(), p);
      for (int shards : {1, 3}) {
        const CpuSplit s(shards);
        const KmeansResult split = kmeans(s.split, X.view(), p);
        const std::string what = std::string(to_string(metric)) + " sample " + std::to_string(sample) + ", " +
                                 std::to_string(shards) + " shards";
        for (int64_t i = 0; i < X.rows(); ++i)
          ASSERT_EQ(split.labels(i, 0), one.labels(i, 0)) << what << " point " << i;
        for (int64_t c = 0; c < p.k; ++c)
          for (int64_t j = 0; j < X.cols(); ++j) {
            const float a = one.centroids(c, j), b = split.centroids(c, j);
            if (shards == 1)
              ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << what << ": one shard is the one-device engine";
            else
              ASSERT_NEAR(a, b, 2e-7 * std::max(1.0f, std::fabs(a))) << what << " centroid " << c;
          }
        EXPECT_NEAR(split.inertia, one.inertia, 1e-12 * one.inertia) << what;
      }
    }
}

TEST(Shards, RunOnShardsRunsEveryShardConcurrentlyAndReusesItsThreads) {
  // Every shard runs, at the same time (each waits until all have started), shard 0 on the
  // caller's thread; the other threads are the same ones call after call.
  std::set<std::thread::id> seen;
  std::vector<int> runs_on_thread(4);
  for (int call = 0; call < 20; ++call) {
    std::atomic<int> started{0};
    std::vector<std::thread::id> where(4);
    detail::run_on_shards(4, [&](int64_t s) {
      thread_local int runs = 0;  // a fresh thread per call would start at 0 every time
      runs_on_thread[size_t(s)] = ++runs;
      where[size_t(s)] = std::this_thread::get_id();
      ++started;
      while (started.load() < 4) std::this_thread::yield();
    });
    EXPECT_EQ(where[0], std::this_thread::get_id());
    EXPECT_EQ(std::set<std::thread::id>(where.begin(), where.end()).size(), 4u);
    seen.insert(where.begin() + 1, where.end());
  }
  EXPECT_EQ(seen.size(), 3u) << "the worker threads are made once, not per call";
  for (int runs : runs_on_thread) EXPECT_GT(runs, 1);

  // Two callers at once get distinct workers; the pool grows to what they need together.
  std::atomic<int> both{0};
  const auto caller = [&] {
    detail::run_on_shards(3, [&](int64_t) {
      ++both;
      while (both.load() < 6) std::this_thread::yield();
    });
  };
  std::thread other(caller);
  caller();
  other.join();
  EXPECT_EQ(both.load(), 6);

  // The lowest failing shard's exception, after every shard has finished.
  std::atomic<int> ran{0};
  try {
    detail::run_on_shards(5, [&](int64_t s) {
      ++ran;
      if (s == 2 || s == 4) throw std::runtime_error("shard " + std::to_string(s));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "shard 2");
  }
  EXPECT_EQ(ran.load(), 5);
  detail::run_on_shards(0, [&](int64_t) { ADD_FAILURE() << "no shard to run"; });
}

TEST(Shards, DeviceNames) {
  Context c;
  set_device(c, "cpu");
  EXPECT_EQ(c.device, Device::cpu);
  EXPECT_TRUE(c.gpu_ids.empty());
  set_device(c, "gpu:3");
  EXPECT_EQ(c.device, Device::gpu);
  EXPECT_EQ(c.gpu_id, 3);
  EXPECT_TRUE(c.gpu_ids.empty());
  set_device(c, "gpu:2,0,5");
  EXPECT_EQ(c.gpu_id, 2);
  EXPECT_EQ(c.gpu_ids, (std::vector<int>{2, 0, 5}));
  set_device(c, "auto");
  EXPECT_TRUE(c.gpu_ids.empty());
  for (const char* bad : {"gpu:", "gpu:1,", "gpu:,1", "gpu:a", "gpu:-1", "gpu:1;2", "gpus", "gpu:0,0"}) {
    SCOPED_TRACE(bad);
    expect_error([&] { set_device(c, bad); }, ErrorCode::invalid_argument, "device");
  }
  if (gpus().empty()) {
    expect_error([&] { set_device(c, "gpu:all"); }, ErrorCode::device, "no CUDA device");
    // Naming GPUs a build or machine lacks fails when a call resolves the device.
    set_device(c, "gpu:0,1");
    const Matrix<float> X = random_matrix(4, 3, 1);
    EXPECT_THROW(knn(c, X.view(), X.view(), 1, Metric::l2), Error);
  }
}

}  // namespace
}  // namespace simkit::test
