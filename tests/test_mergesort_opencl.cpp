// The merge sort study's OpenCL Merge Path (bench/mergesort/opencl/) against std::sort, on
// whichever OpenCL device the ICD loader offers: PoCL on a CPU-only machine (so CI runs it, label
// cpu), NVIDIA's driver on the GPU machine. Built only where CMake found OpenCL; where no OpenCL
// platform is installed at run time every test skips and says how to get one.

#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <simkit/error.hpp>

#include "opencl_sort.hpp"

namespace simkit::test {
namespace {

namespace ms = simkit::mergesort;

constexpr int64_t kSizes[] = {1, 2, 3, 1000, 1 << 16, (1 << 16) + 3};

/// The inputs the seed times (sorted, reversed, random) and two it does not (one key, few keys).
std::vector<std::pair<std::string, std::vector<int32_t>>> inputs(int64_t n) {
  std::mt19937 rng(uint32_t(7 * n + 1));
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int32_t> few(0, 4);
  std::vector<int32_t> sorted(n), reversed(n), random(n), equal(size_t(n), -5), duplicates(n);
  for (int64_t i = 0; i < n; ++i) {
    sorted[i] = int32_t(2 * i - n);
    reversed[i] = int32_t(n - i);
    random[i] = any(rng);
    duplicates[i] = few(rng);
  }
  return {
      {"sorted", sorted}, {"reversed", reversed}, {"random", random}, {"all_equal", equal}, {"duplicates", duplicates},
  };
}

/// Empty when equal, else the first difference (EXPECT_EQ on the vectors would print 2^16 keys).
std::string first_difference(const std::vector<int32_t>& got, const std::vector<int32_t>& want) {
  const auto [g, w] = std::mismatch(got.begin(), got.end(), want.begin(), want.end());
  if (g == got.end() && w == want.end()) return "";
  return "differs at " + std::to_string(g - got.begin()) + " of " + std::to_string(got.size());
}

class OpenClTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_ = ms::opencl_devices();
    if (devices_.empty())
      GTEST_SKIP() << "no OpenCL platform found: install PoCL (apt-get install pocl-opencl-icd, as "
                      "scripts/setup.sh does) to run the OpenCL study on the CPU";
  }
  std::vector<ms::OpenClDevice> devices_;
};

TEST_F(OpenClTest, ListsDevicesWithTheirProperties) {
  for (const ms::OpenClDevice& d : devices_) {
    EXPECT_FALSE(d.platform.empty());
    EXPECT_FALSE(d.name.empty());
    EXPECT_NE(d.version.find("OpenCL"), std::string::npos) << d.version;
    EXPECT_GT(d.compute_units, 0) << d.name;
    EXPECT_GT(d.global_memory, 0u) << d.name;
    EXPECT_GE(d.max_work_group_size, 1) << d.name;
  }
  EXPECT_EQ(devices_.front().index, 0);
  EXPECT_EQ(devices_.back().index, int(devices_.size()) - 1);
}

TEST_F(OpenClTest, ChoosesAGpuFirstAndHonoursTheIndex) {
  const ms::OpenClDevice chosen = ms::opencl_device();
  const bool any_gpu = std::any_of(devices_.begin(), devices_.end(), [](const auto& d) { return d.type == "gpu"; });
  EXPECT_EQ(chosen.type == "gpu", any_gpu) << chosen.name;
  EXPECT_EQ(ms::opencl_device(int(devices_.size()) - 1).index, int(devices_.size()) - 1);
  try {
    ms::opencl_device(int(devices_.size()));
    ADD_FAILURE() << "an index past the last device was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
  }
}

TEST_F(OpenClTest, DeviceFromTheEnvironment) {
  const ms::OpenClDevice& last = devices_.back();
  const std::string named = std::to_string(last.platform_index) + ":" + std::to_string(last.device_in_platform);
  ::setenv("SIMKIT_OPENCL_DEVICE", named.c_str(), 1);
  EXPECT_EQ(ms::opencl_device().index, last.index);
  EXPECT_EQ(ms::opencl_device(0).index, 0) << "an explicit index wins over the environment";
  for (const char* bad : {"0", "0:", ":0", "a:b", "0:0x", "-1:0", "99:0"}) {
    ::setenv("SIMKIT_OPENCL_DEVICE", bad, 1);
    EXPECT_THROW(ms::opencl_device(), Error) << bad;
  }
  ::unsetenv("SIMKIT_OPENCL_DEVICE");
}

TEST_F(OpenClTest, RefusesBadArguments) {
  std::vector<int32_t> keys = {3, 1, 2};
  auto code_of = [&](int64_t n, int64_t size_i, int block) {
    try {
      ms::merge_path_sort_opencl(keys.data(), n, size_i, block);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::io;  // stands for "no error"
  };
  EXPECT_EQ(code_of(-1, 2, 32), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of(3, 0, 32), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of(3, 2, 0), ErrorCode::invalid_argument);
  const int64_t too_big = ms::opencl_device().max_work_group_size + 1;
  if (too_big <= std::numeric_limits<int>::max()) {
    EXPECT_EQ(code_of(3, 2, int(too_big)), ErrorCode::invalid_argument);
  }
  EXPECT_EQ(keys, (std::vector<int32_t>{3, 1, 2})) << "a refused call must not touch the keys";
  EXPECT_NO_THROW(ms::merge_path_sort_opencl(nullptr, 0, 2, 32)) << "n = 0 sorts nothing";
}

TEST_F(OpenClTest, TimesTheKernelsAndTheCopies) {
  std::vector<int32_t> keys = inputs(1 << 16)[2].second;
  const ms::StudyTiming t = ms::merge_path_sort_opencl(keys.data(), int64_t(keys.size()), 16, 32);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_GT(t.insertion_ms, 0);
  EXPECT_GT(t.merge_ms, 0);
  EXPECT_NEAR(t.kernel_ms, t.insertion_ms + t.merge_ms, 1e-9);
  EXPECT_GE(t.total_ms, t.kernel_ms) << "the host clock spans the kernels and the copies";
}

/// Every size and input at one run length and work-group size, against std::sort.
class OpenClSortTest : public OpenClTest, public ::testing::WithParamInterface<std::tuple<int64_t, int>> {};

TEST_P(OpenClSortTest, SortsLikeStdSort) {
  const auto [size_i, wanted_block] = GetParam();
  // A work-group of 256 exceeds some devices' limit (e.g. PoCL builds for small CPUs): clamped to
  // the device's own limit, so the test checks the largest group it has instead of refusing.
  const ms::OpenClDevice device = ms::opencl_device();
  const int block = int(std::min<int64_t>(wanted_block, device.max_work_group_size));
  for (int64_t n : kSizes)
    for (const auto& [label, keys] : inputs(n)) {
      std::vector<int32_t> want = keys, got = keys;
      std::sort(want.begin(), want.end());
      ms::merge_path_sort_opencl(got.data(), n, size_i, block);
      EXPECT_EQ(first_difference(got, want), "")
          << label << " n=" << n << " size_i=" << size_i << " block=" << block << " on " << device.name;
    }
}

INSTANTIATE_TEST_SUITE_P(RunsAndGroups, OpenClSortTest,
                         ::testing::Combine(::testing::Values(int64_t(1), int64_t(2), int64_t(16), int64_t(4096)),
                                            ::testing::Values(1, 32, 256)),
                         [](const auto& info) {
                           return "size_i_" + std::to_string(std::get<0>(info.param)) + "_block_" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace simkit::test
