// The merge sort study (bench/mergesort/): the seed's sequential hybrid sort, naive tree merge
// and Merge Path, each against std::sort on the inputs the seed times (sorted, reversed,
// random) and the ones it never tried (all equal, few distinct keys, n = 1, n not a power of two,
// size_i past n), at every run length and block size of the study's sweeps that the sizes
// allow. The CUDA versions are the *GpuOnly suite; the Merge Path partition itself is also
// checked on the CPU, through the same host/device helpers the kernel calls.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "contexts.hpp"
#include "mergesort_study.hpp"
#include "run_ops.hpp"

namespace simkit::test {
namespace {

namespace ms = simkit::mergesort;

constexpr int64_t kSizes[] = {1, 2, 3, 1000, 1 << 16, (1 << 16) + 3};
constexpr int64_t kRunLengths[] = {1, 2, 16, 4096};
constexpr int kBlocks[] = {32, 256, 1024};

struct Input {
  std::string label;
  std::vector<int32_t> keys;
};

/// The seed's three inputs plus all-equal and many-duplicates, n keys each.
std::vector<Input> inputs(int64_t n) {
  std::mt19937 rng(21364 + uint32_t(n));  // the seed's seed, varied by n
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int32_t> few(-3, 3);
  std::vector<Input> out(5);
  out[0].label = "sorted", out[1].label = "reversed", out[2].label = "random";
  out[3].label = "all_equal", out[4].label = "duplicates";
  for (int64_t i = 0; i < n; ++i) {
    out[0].keys.push_back(int32_t(i) - 7);
    out[1].keys.push_back(int32_t(n - i));
    out[2].keys.push_back(any(rng));
    out[3].keys.push_back(42);
    out[4].keys.push_back(few(rng));
  }
  return out;
}

/// Empty when `got` is `want`, else where they first differ (a whole-vector EXPECT_EQ would
/// print 2^16 keys).
std::string mismatch(const std::vector<int32_t>& got, const std::vector<int32_t>& want) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  const auto at = std::mismatch(got.begin(), got.end(), want.begin());
  if (at.first == got.end()) return "";
  const auto i = at.first - got.begin();
  return "first difference at " + std::to_string(i) + ": " + std::to_string(*at.first) +
         " != " + std::to_string(*at.second);
}

/// Runs `sort(keys, n, size_i, block)` on every input, size and run length (and every block when
/// `blocks` is non-empty) and counts the cases checked.
template <class Sort>
int check_all(const Sort& sort, const std::vector<int>& blocks) {
  int cases = 0;
  for (int64_t n : kSizes)
    for (const Input& input : inputs(n)) {
      std::vector<int32_t> want = input.keys;
      std::sort(want.begin(), want.end());
      for (int64_t size_i : kRunLengths)
        for (int block : blocks.empty() ? std::vector<int>{0} : blocks) {
          std::vector<int32_t> got = input.keys;
          sort(got.data(), n, size_i, block);
          EXPECT_EQ(mismatch(got, want), "") << input.label << " n=" << n << " size_i=" << size_i << " block=" << block;
          ++cases;
        }
    }
  return cases;
}

TEST(MergesortStudy, SequentialMatchesStdSort) {
  const int cases =
      check_all([](int32_t* v, int64_t n, int64_t size_i, int) { ms::hybrid_sort_sequential(v, n, size_i); }, {});
  EXPECT_EQ(cases, 6 * 5 * 4);
}

TEST(MergesortStudy, SequentialOfNothingIsANoOp) { EXPECT_NO_THROW(ms::hybrid_sort_sequential(nullptr, 0, 2)); }

// The kernel's partition, run on the host: for every diagonal the crossing splits the merge so
// that merging forward from it gives the merge's keys from that position on, so slices of any
// length (here every length from 1 to past the end) tile std::merge exactly.
TEST(MergesortStudy, MergePathSlicesTileTheMerge) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int32_t> key(0, 5);  // many ties between the runs
  for (auto [na, nb] : {std::pair<int64_t, int64_t>{0, 5}, {5, 0}, {1, 1}, {7, 3}, {3, 7}, {16, 16}, {33, 17}}) {
    std::vector<int32_t> a(static_cast<size_t>(na)), b(static_cast<size_t>(nb));
    for (int32_t& x : a) x = key(rng);
    for (int32_t& x : b) x = key(rng);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::vector<int32_t> want(static_cast<size_t>(na + nb));
    std::merge(a.begin(), a.end(), b.begin(), b.end(), want.begin());
    for (int64_t slice = 1; slice <= na + nb + 1; ++slice) {
      std::vector<int32_t> got(want.size(), -1);
      for (int64_t first = 0; first < na + nb; first += slice) {
        const int64_t i = ms::detail::path_crossing(a.data(), na, b.data(), nb, first);
        ASSERT_GE(i, 0);
        ASSERT_LE(i, na);
        ASSERT_LE(first - i, nb);
        ms::detail::merge_steps(a.data(), na, b.data(), nb, i, first - i, got.data() + first,
                                std::min(slice, na + nb - first));
      }
      EXPECT_EQ(mismatch(got, want), "") << "na=" << na << " nb=" << nb << " slice=" << slice;
    }
  }
}

TEST(MergesortStudy, RejectsBadArguments) {
  std::vector<int32_t> v = {3, 1, 2};
  auto code_of = [](auto call) {
    try {
      call();
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::io;  // no throw: a code no check here expects
  };
  const auto invalid = ErrorCode::invalid_argument;
  EXPECT_EQ(code_of([&] { ms::hybrid_sort_sequential(v.data(), -1, 2); }), invalid);
  EXPECT_EQ(code_of([&] { ms::hybrid_sort_sequential(v.data(), 3, 0); }), invalid);
  EXPECT_EQ(code_of([&] { ms::hybrid_sort_sequential(nullptr, 3, 2); }), invalid);
  // The GPU versions check their arguments before touching a device, so this runs without one.
  for (auto sort : {ms::naive_merge_sort_cuda, ms::merge_path_sort_cuda}) {
    EXPECT_EQ(code_of([&] { sort(v.data(), -1, 2, 32); }), invalid);
    EXPECT_EQ(code_of([&] { sort(v.data(), 3, 0, 32); }), invalid);
    EXPECT_EQ(code_of([&] { sort(nullptr, 3, 2, 32); }), invalid);
    EXPECT_EQ(code_of([&] { sort(v.data(), 3, 2, 0); }), invalid);
    EXPECT_EQ(code_of([&] { sort(v.data(), 3, 2, 1025); }), invalid);
  }
  EXPECT_EQ(v, (std::vector<int32_t>{3, 1, 2}));
}

TEST(MergesortStudy, CudaVersionsRefuseInACpuOnlyBuild) {
  if (built_with_cuda()) GTEST_SKIP() << "built with CUDA: the GpuOnly suite covers these";
  std::vector<int32_t> v = {2, 1};
  for (auto sort : {ms::naive_merge_sort_cuda, ms::merge_path_sort_cuda}) {
    try {
      sort(v.data(), 2, 1, 32);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
    }
  }
}

TEST(MergesortStudyGpuOnly, NaiveMergeMatchesStdSort) {
  SIMKIT_REQUIRE_GPU();
  const int cases = check_all(ms::naive_merge_sort_cuda, {std::begin(kBlocks), std::end(kBlocks)});
  EXPECT_EQ(cases, 6 * 5 * 4 * 3);
}

TEST(MergesortStudyGpuOnly, MergePathMatchesStdSort) {
  SIMKIT_REQUIRE_GPU();
  const int cases = check_all(ms::merge_path_sort_cuda, {std::begin(kBlocks), std::end(kBlocks)});
  EXPECT_EQ(cases, 6 * 5 * 4 * 3);
}

// The seed's odd block sizes (its block sweeps go down to 1 thread per block) and n = 0.
TEST(MergesortStudyGpuOnly, OddBlocksAndEmptyInput) {
  SIMKIT_REQUIRE_GPU();
  for (auto sort : {ms::naive_merge_sort_cuda, ms::merge_path_sort_cuda}) {
    EXPECT_NO_THROW(sort(nullptr, 0, 2, 32));
    for (int block : {1, 3, 33})
      for (const Input& input : inputs(1000)) {
        std::vector<int32_t> got = input.keys, want = input.keys;
        std::sort(want.begin(), want.end());
        sort(got.data(), int64_t(got.size()), 2, block);
        EXPECT_EQ(mismatch(got, want), "") << input.label << " block=" << block;
      }
  }
}

TEST(MergesortStudyGpuOnly, TimingsAddUp) {
  SIMKIT_REQUIRE_GPU();
  for (auto sort : {ms::naive_merge_sort_cuda, ms::merge_path_sort_cuda}) {
    std::vector<int32_t> keys = inputs(1 << 16)[2].keys;
    const ms::StudyTiming t = sort(keys.data(), int64_t(keys.size()), 2, 256);
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
    EXPECT_GT(t.kernel_ms, 0);
    EXPECT_GE(t.insertion_ms, 0);
    EXPECT_GE(t.merge_ms, 0);
    EXPECT_NEAR(t.kernel_ms, t.insertion_ms + t.merge_ms, 0.01 + 1e-3 * t.kernel_ms);
    EXPECT_GE(t.total_ms, t.kernel_ms);
  }
}

}  // namespace
}  // namespace simkit::test
