// The primitives on the GPU against the same sequential references as the CPU suite
// (primitives_check.hpp, sort_check.hpp, spmv_select_check.hpp), with arrays on the host and
// resident on the device; plus what only the GPU has: sizes spanning tens of thousands of
// tiles (look-back chains, merge passes), run-to-run determinism of float sums, the device-side
// checks of CSR structure and segment offsets, rows that are not 16-byte aligned, the host
// fallback of select_k beyond k = 2048, and a budget too small to work in. Skips where no
// CUDA device is visible.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/primitives.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "primitives_check.hpp"
#include "sort_check.hpp"
#include "spmv_select_check.hpp"

namespace simkit::test {
namespace {

constexpr ScanOp kOps[] = {ScanOp::sum, ScanOp::product, ScanOp::min, ScanOp::max};
constexpr KeyShape kShapes[] = {KeyShape::random, KeyShape::sorted, KeyShape::reverse,
                                KeyShape::equal,  KeyShape::few,    KeyShape::special};
constexpr Where kWheres[] = {Where::host, Where::device};

template <class T>
void scan_sweep() {
  for (Where where : kWheres)
    for (int64_t n : awkward_sizes())
      for (ScanOp op : kOps)
        for (bool exclusive : {false, true})
          expect_scan_exact<T>(gpu_context(), where, n, op, exclusive, 11 + uint64_t(n));
}

TEST(GpuPrimitives, ScanEveryTypeAndOperator) {
  SIMKIT_REQUIRE_GPU();
  scan_sweep<int32_t>();
  scan_sweep<int64_t>();
  scan_sweep<float>();
  scan_sweep<double>();
}

TEST(GpuPrimitives, ScanLongLookBackChains) {
  SIMKIT_REQUIRE_GPU();
  // 2^27 int32: 32,768 tiles, the acceptance size; and a float sum across the two-pass route.
  expect_scan_exact<int32_t>(gpu_context(), Where::device, (int64_t{1} << 27) + 3, ScanOp::sum, false, 1);
  expect_scan_exact<int64_t>(gpu_context(), Where::device, (int64_t{1} << 25) - 1, ScanOp::max, true, 2);
  expect_scan_exact<float>(gpu_context(), Where::device, (int64_t{1} << 24) + 5, ScanOp::sum, true, 3);
  for (int64_t n : {int64_t{1000}, int64_t{1} << 22, int64_t{3000017}}) {
    expect_scan_close<float>(gpu_context(), Where::device, n, 5);
    expect_scan_close<double>(gpu_context(), Where::host, n, 6);
  }
}

TEST(GpuPrimitives, FloatScanIsDeterministic) {
  SIMKIT_REQUIRE_GPU();
  const std::vector<float> in = random_reals<float>(20000011, -1.0, 1.0, 3);
  std::vector<float> first(in.size()), again(in.size());
  inclusive_scan<float>(gpu_context(), in, ArrayView(first));
  for (int run = 0; run < 3; ++run) {
    inclusive_scan<float>(gpu_context(), in, ArrayView(again));
    expect_equal_arrays(again, first, "run " + std::to_string(run));
  }
}

TEST(GpuPrimitives, ScanInPlaceOnDevice) {
  SIMKIT_REQUIRE_GPU();
  const std::vector<int32_t> v = random_ints<int32_t>(1000003, -9, 9, 4);
  Staged<int32_t> d(gpu_context(), v, Where::device);
  exclusive_scan<int32_t>(gpu_context(), d.cview(), d.view());
  expect_equal_arrays(d.fetch(), reference_scan(v, ScanOp::sum, true), "in place");
}

template <class T>
void segmented_sweep(ScanOp op) {
  for (Where where : kWheres)
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{33}, int64_t{4097}, int64_t{65537}, int64_t{3000017}})
      for (const char* shape : {"random", "one", "singletons", "empties", "huge"})
        for (bool exclusive : {false, true})
          for (bool offsets : {false, true})
            expect_segmented_exact<T>(gpu_context(), where, n, shape, op, exclusive, offsets, 21 + uint64_t(n));
}

TEST(GpuPrimitives, SegmentedScanShapes) {
  SIMKIT_REQUIRE_GPU();
  segmented_sweep<int32_t>(ScanOp::sum);
  segmented_sweep<int64_t>(ScanOp::max);
  segmented_sweep<float>(ScanOp::sum);
  segmented_sweep<double>(ScanOp::min);
  segmented_sweep<float>(ScanOp::product);
}

TEST(GpuPrimitives, SegmentOffsetsCheckedOnDevice) {
  SIMKIT_REQUIRE_GPU();
  const std::vector<int32_t> in(10, 1);
  Staged<int32_t> src(gpu_context(), in, Where::device), dst(gpu_context(), in, Where::device);
  for (const std::vector<int64_t>& bad :
       {std::vector<int64_t>{0, 5, 3, 10}, std::vector<int64_t>{1, 5, 10}, std::vector<int64_t>{0, 5, 9}}) {
    Staged<int64_t> off(gpu_context(), bad, Where::device);
    expect_error([&] { segmented_inclusive_scan<int32_t>(gpu_context(), src.cview(), off.cview(), dst.view()); },
                 ErrorCode::invalid_argument, "checked on the device");
  }
}

template <class K>
void sort_sweep() {
  for (Where where : kWheres)
    for (int64_t n : {int64_t{2}, int64_t{31}, int64_t{33}, int64_t{4097}, int64_t{8192}, int64_t{8193}, int64_t{65535},
                      int64_t{300001}})
      for (KeyShape shape : kShapes)
        for (Order order : {Order::ascending, Order::descending}) {
          expect_sort<K, int64_t>(gpu_context(), where, n, shape, order, false, 31 + uint64_t(n));
          expect_sort<K, int64_t>(gpu_context(), where, n, shape, order, true, 32 + uint64_t(n));
        }
}

TEST(GpuPrimitives, SortKeysAndPairs) {
  SIMKIT_REQUIRE_GPU();
  sort_sweep<int32_t>();
  sort_sweep<int64_t>();
  sort_sweep<float>();
  expect_sort<float, float>(gpu_context(), Where::device, 100003, KeyShape::few, Order::descending, true, 1);
  expect_sort<int32_t, double>(gpu_context(), Where::host, 1, KeyShape::random, Order::ascending, true, 3);
}

TEST(GpuPrimitives, SortManyPasses) {
  SIMKIT_REQUIRE_GPU();
  // 2^24 + 1 keys: 12 merge passes and a ragged last run; all-equal keys keep their order.
  expect_sort<int32_t, int32_t>(gpu_context(), Where::device, (int64_t{1} << 24) + 1, KeyShape::random,
                                Order::ascending, true, 2);
  expect_sort<int32_t, int32_t>(gpu_context(), Where::device, (int64_t{1} << 23) + 7, KeyShape::equal,
                                Order::descending, true, 3);
  expect_sort<float, int64_t>(gpu_context(), Where::device, (int64_t{1} << 22) - 3, KeyShape::special, Order::ascending,
                              true, 4);
}

template <class K>
void merge_sweep() {
  const int64_t sizes[][2] = {{0, 0},    {0, 5},     {7, 0},         {1, 1},      {31, 33},
                              {4096, 1}, {1, 70000}, {65537, 65535}, {300000, 2}, {1 << 20, 1 << 20}};
  for (Where where : kWheres)
    for (const auto& s : sizes)
      for (KeyShape shape : kShapes)
        for (Order order : {Order::ascending, Order::descending}) {
          expect_merge<K, int64_t>(gpu_context(), where, s[0], s[1], shape, order, false, 41 + uint64_t(s[0]));
          expect_merge<K, int64_t>(gpu_context(), where, s[0], s[1], shape, order, true, 42 + uint64_t(s[1]));
        }
}

TEST(GpuPrimitives, MergeKeysAndPairs) {
  SIMKIT_REQUIRE_GPU();
  merge_sweep<int32_t>();
  merge_sweep<int64_t>();
  merge_sweep<float>();
  expect_merge<int32_t, float>(gpu_context(), Where::device, int64_t{1} << 24, int64_t{1} << 24, KeyShape::random,
                               Order::ascending, true, 5);
}

TEST(GpuPrimitives, SpmvShapes) {
  SIMKIT_REQUIRE_GPU();
  for (Where where : kWheres)
    for (const char* shape : {"random", "powerlaw", "huge", "empty", "gaps"}) {
      const std::string s = shape;
      expect_spmv(gpu_context(), where, make_csr<float, int32_t>(s, 20000, 5000, 1000000, 1), s + " f32/i32", 2);
      expect_spmv(gpu_context(), where, make_csr<double, int64_t>(s, 3001, 77, 70000, 3), s + " f64/i64", 4);
      expect_spmv(gpu_context(), where, make_csr<float, int64_t>(s, 1, 10, 100, 5), s + " one row", 6);
    }
}

TEST(GpuPrimitives, SpmvAcceptanceMatrix) {
  SIMKIT_REQUIRE_GPU();
  // The benchmark's shape: 1M rows, ~20M non-zeros, one row of 1M entries; 1e-6 vs float64.
  auto A = make_csr<float, int32_t>("powerlaw", 1000000, 1000000, 1000000, 9);
  expect_spmv(gpu_context(), Where::device, A, "power law 1M rows", 10);
}

TEST(GpuPrimitives, SpmvIsDeterministicAndChecksStructure) {
  SIMKIT_REQUIRE_GPU();
  const auto A = make_csr<float, int32_t>("huge", 1000, 300, 2000000, 7);
  const std::vector<float> x = random_reals<float>(A.cols, -1, 1, 8);
  std::vector<float> y1(size_t(A.rows)), y2(size_t(A.rows));
  const CsrView<float, int32_t> view{A.rows, A.cols, A.offsets, A.indices, A.values};
  spmv_csr(gpu_context(), view, x, ArrayView(y1));
  spmv_csr(gpu_context(), view, x, ArrayView(y2));
  expect_equal_arrays(y2, y1, "two runs");
  // Device-resident structure is checked by the kernel.
  std::vector<int32_t> bad_cols = A.indices;
  bad_cols[bad_cols.size() / 2] = int32_t(A.cols);
  Staged<int32_t> off(gpu_context(), A.offsets, Where::device), idx(gpu_context(), bad_cols, Where::device);
  const CsrView<float, int32_t> bad{A.rows, A.cols, off.cview(), idx.cview(), A.values};
  expect_error([&] { spmv_csr(gpu_context(), bad, x, ArrayView(y1)); }, ErrorCode::invalid_argument,
               "col_indices (checked on the device)");
  std::vector<int32_t> bad_off = A.offsets;
  bad_off[10] = bad_off.back();  // row 10 ends at nnz, row 11 at 0: the offsets fall
  Staged<int32_t> off2(gpu_context(), bad_off, Where::device), idx2(gpu_context(), A.indices, Where::device);
  const CsrView<float, int32_t> bad2{A.rows, A.cols, off2.cview(), idx2.cview(), A.values};
  expect_error([&] { spmv_csr(gpu_context(), bad2, x, ArrayView(y1)); }, ErrorCode::invalid_argument,
               "row_offsets (checked on the device)");
}

TEST(GpuPrimitives, SelectK) {
  SIMKIT_REQUIRE_GPU();
  for (Where where : kWheres)
    for (Order order : {Order::ascending, Order::descending}) {
      expect_select(gpu_context(), where, 1, 1, 1, order, 1);
      expect_select(gpu_context(), where, 3, 1000, 1, order, 2);
      expect_select(gpu_context(), where, 3, 1000, 1000, order, 3);
      expect_select(gpu_context(), where, 37, 1001, 10, order, 4);  // rows not 16-byte aligned
      expect_select(gpu_context(), where, 20, 4097, 129, order, 5);
      expect_select(gpu_context(), where, 9, 5003, 2048, order, 6);  // the largest device list
      expect_select(gpu_context(), where, 4, 5003, 2049, order, 7);  // the host fallback
      expect_select(gpu_context(), where, 2, 300000, 100, order, 8);
      expect_select(gpu_context(), where, 1, 2000003, 50, order, 9);
    }
  std::vector<float> nan_row(100, std::numeric_limits<float>::quiet_NaN());
  nan_row[17] = 4.f, nan_row[3] = 4.f, nan_row[50] = -1.f;
  expect_select(gpu_context(), Where::device, 1, 100, 5, Order::descending, 10, nan_row);
}

TEST(GpuPrimitives, SameAnswerAsCpu) {
  SIMKIT_REQUIRE_GPU();
  const std::vector<int64_t> in = random_ints<int64_t>(5000003, -100, 100, 1);
  std::vector<int64_t> cpu(in.size()), gpu(in.size());
  inclusive_scan<int64_t>(cpu_context(), in, ArrayView(cpu), ScanOp::sum);
  inclusive_scan<int64_t>(gpu_context(), in, ArrayView(gpu), ScanOp::sum);
  expect_equal_arrays(gpu, cpu, "int64 scan");
  std::vector<float> keys = random_reals<float>(1000003, -1, 1, 2), keys2 = keys;
  sort<float>(cpu_context(), ArrayView(keys), Order::descending);
  sort<float>(gpu_context(), ArrayView(keys2), Order::descending);
  expect_equal_arrays(keys2, keys, "float sort");
}

TEST(GpuPrimitives, BudgetTooSmall) {
  SIMKIT_REQUIRE_GPU();
  std::vector<int32_t> keys = random_ints<int32_t>(1 << 22, 0, 1000, 1);
  expect_error([&] { sort<int32_t>(gpu_context(1 << 20), ArrayView(keys)); }, ErrorCode::out_of_memory,
               "GPU working memory");
}

}  // namespace
}  // namespace simkit::test
