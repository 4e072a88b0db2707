// The primitives against sequential references (primitives_check.hpp, sort_check.hpp,
// spmv_select_check.hpp), each test written once for both backends (instances named .../cpu and
// .../gpu; on the GPU with the arrays on the host and resident on the device): every type and
// operator at awkward sizes, segment and row shapes that break naive code, stability on equal
// keys, NaN and signed zeros, descending order, run-to-run determinism, the select_k host
// fallback beyond k = 2048, and every refused argument. PrimitivesCpuOnly: results independent
// of the thread count, and the custom-operator scans (CPU only by contract). PrimitivesGpuOnly:
// sizes spanning tens of thousands of tiles (look-back chains, merge passes), the device-side
// checks of CSR structure and segment offsets, CPU == GPU answers, and a budget too small to
// work in. The gpu instances skip where no CUDA device is visible; tests/CMakeLists.txt runs
// them a second time with simkit's own kernels where CUB serves the call by default.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
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

class PrimitivesTest : public BackendTest {
 protected:
  /// Where the arrays of a call live: the CPU backend takes host memory alone, the GPU both.
  std::vector<Where> wheres() const {
    if (on_gpu()) return {Where::host, Where::device};
    return {Where::host};
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, PrimitivesTest, ::testing::ValuesIn(kBackends), BackendName{});

// ------------------------------------------------------------------------------------ scan

template <class T>
void scan_sweep(const Context& ctx, const std::vector<Where>& wheres) {
  for (Where where : wheres)
    for (int64_t n : awkward_sizes())
      for (ScanOp op : kOps)
        for (bool exclusive : {false, true}) expect_scan_exact<T>(ctx, where, n, op, exclusive, 11 + uint64_t(n));
}

TEST_P(PrimitivesTest, ScanEveryTypeAndOperator) {
  SIMKIT_REQUIRE_BACKEND(backend());
  scan_sweep<int32_t>(context(), wheres());
  scan_sweep<int64_t>(context(), wheres());
  scan_sweep<float>(context(), wheres());
  scan_sweep<double>(context(), wheres());
}

TEST_P(PrimitivesTest, FloatScanCloseToFloat64) {
  SIMKIT_REQUIRE_BACKEND(backend());
  for (Where where : wheres())
    for (int64_t n : {int64_t{1000}, int64_t{1} << 20, int64_t{1} << 22, int64_t{3000017}}) {
      expect_scan_close<float>(context(), where, n, 5);
      expect_scan_close<double>(context(), where, n, 6);
    }
}

// A float sum scanned again gives the same bits: neither backend's rounding may depend on
// scheduling.
TEST_P(PrimitivesTest, FloatScanIsDeterministic) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const std::vector<float> in = random_reals<float>(20000011, -1.0, 1.0, 3);
  std::vector<float> first(in.size()), again(in.size());
  inclusive_scan<float>(context(), in, ArrayView(first));
  for (int run = 0; run < 3; ++run) {
    inclusive_scan<float>(context(), in, ArrayView(again));
    expect_equal_arrays(again, first, "run " + std::to_string(run));
  }
}

template <class T>
void expect_scan_in_place(const Context& ctx, Where where, int64_t n, uint64_t seed) {
  const std::vector<T> v = random_ints<T>(n, -9, 9, seed);
  Staged<T> d(ctx, v, where);
  exclusive_scan<T>(ctx, d.cview(), d.view());
  expect_equal_arrays(d.fetch(), reference_scan(v, ScanOp::sum, true),
                      type_name<T>() + " in place n=" + std::to_string(n));
}

TEST_P(PrimitivesTest, ScanInPlace) {
  SIMKIT_REQUIRE_BACKEND(backend());
  for (Where where : wheres()) {
    expect_scan_in_place<int64_t>(context(), where, 200003, 4);
    expect_scan_in_place<int32_t>(context(), where, 1000003, 4);
  }
}

// ---------------------------------------------------------------------- segmented scan

template <class T>
void segmented_sweep(const Context& ctx, const std::vector<Where>& wheres, const std::vector<int64_t>& sizes,
                     ScanOp op) {
  for (Where where : wheres)
    for (int64_t n : sizes)
      for (const char* shape : {"random", "one", "singletons", "empties", "huge"})
        for (bool exclusive : {false, true})
          for (bool offsets : {false, true})
            expect_segmented_exact<T>(ctx, where, n, shape, op, exclusive, offsets, 21 + uint64_t(n));
}

TEST_P(PrimitivesTest, SegmentedScanShapes) {
  SIMKIT_REQUIRE_BACKEND(backend());
  std::vector<int64_t> sizes = {0, 1, 33, 4097, 65537, 1000003};
  // On the GPU, segments that cross thousands of tiles; the CPU's 64K blocks are crossed
  // hundreds of times already at 1000003, and each size costs it seconds.
  if (on_gpu()) sizes.push_back(3000017);
  segmented_sweep<int32_t>(context(), wheres(), sizes, ScanOp::sum);
  segmented_sweep<int64_t>(context(), wheres(), sizes, ScanOp::max);
  segmented_sweep<float>(context(), wheres(), sizes, ScanOp::sum);
  segmented_sweep<double>(context(), wheres(), sizes, ScanOp::min);
  segmented_sweep<float>(context(), wheres(), sizes, ScanOp::product);
}

TEST_P(PrimitivesTest, SegmentedScanWithInt32Offsets) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const std::vector<int64_t> lengths = segment_lengths("random", 100000, 4);
  const std::vector<int32_t> in = random_ints<int32_t>(100000, -50, 50, 5);
  const std::vector<int32_t> want = reference_scan(in, ScanOp::sum, false, heads_of(lengths, 100000));
  for (Where where : wheres()) {
    Staged<int32_t> off(context(), offsets_of<int32_t>(lengths), where), src(context(), in, where),
        dst(context(), std::vector<int32_t>(in.size()), where);
    segmented_inclusive_scan<int32_t>(context(), src.cview(), off.cview(), dst.view());
    expect_equal_arrays(dst.fetch(), want, where == Where::device ? "int32 offsets, device" : "int32 offsets");
  }
}

// ----------------------------------------------------------------------------------- sort

template <class K>
void sort_sweep(const Context& ctx, const std::vector<Where>& wheres) {
  for (Where where : wheres)
    for (int64_t n : {int64_t{2}, int64_t{31}, int64_t{33}, int64_t{4097}, int64_t{8192}, int64_t{8193}, int64_t{65535},
                      int64_t{300001}})
      for (KeyShape shape : kShapes)
        for (Order order : {Order::ascending, Order::descending}) {
          expect_sort<K, int64_t>(ctx, where, n, shape, order, false, 31 + uint64_t(n));
          expect_sort<K, int64_t>(ctx, where, n, shape, order, true, 32 + uint64_t(n));
        }
}

TEST_P(PrimitivesTest, SortKeysAndPairs) {
  SIMKIT_REQUIRE_BACKEND(backend());
  sort_sweep<int32_t>(context(), wheres());
  sort_sweep<int64_t>(context(), wheres());
  sort_sweep<float>(context(), wheres());
  for (Where where : wheres()) {
    expect_sort<float, float>(context(), where, 100003, KeyShape::few, Order::descending, true, 1);
    expect_sort<int32_t, int32_t>(context(), where, 3000017, KeyShape::random, Order::ascending, true, 2);
    expect_sort<int32_t, double>(context(), where, 0, KeyShape::random, Order::ascending, true, 3);
    expect_sort<int32_t, double>(context(), where, 1, KeyShape::random, Order::ascending, true, 3);
  }
}

// ---------------------------------------------------------------------------------- merge

template <class K>
void merge_sweep(const Context& ctx, const std::vector<Where>& wheres,
                 const std::vector<std::pair<int64_t, int64_t>>& sizes) {
  for (Where where : wheres)
    for (const auto& [na, nb] : sizes)
      for (KeyShape shape : kShapes)
        for (Order order : {Order::ascending, Order::descending}) {
          expect_merge<K, int64_t>(ctx, where, na, nb, shape, order, false, 41 + uint64_t(na));
          expect_merge<K, int64_t>(ctx, where, na, nb, shape, order, true, 42 + uint64_t(nb));
        }
}

TEST_P(PrimitivesTest, MergeKeysAndPairs) {
  SIMKIT_REQUIRE_BACKEND(backend());
  std::vector<std::pair<int64_t, int64_t>> sizes = {{0, 0},    {0, 5},     {7, 0},         {1, 1},     {31, 33},
                                                    {4096, 1}, {1, 70000}, {65537, 65535}, {300000, 2}};
  // On the GPU, outputs of hundreds of merge-path tiles; on the CPU, 2^20 + 2^20 through the
  // whole sweep would cost tens of seconds, and the int32 / float case below covers it once.
  if (on_gpu()) sizes.emplace_back(1 << 20, 1 << 20);
  merge_sweep<int32_t>(context(), wheres(), sizes);
  merge_sweep<int64_t>(context(), wheres(), sizes);
  merge_sweep<float>(context(), wheres(), sizes);
  for (Where where : wheres())
    expect_merge<int32_t, float>(context(), where, 1 << 20, 1 << 20, KeyShape::few, Order::ascending, true, 5);
  if (on_gpu()) {
    expect_merge<int32_t, float>(context(), Where::device, int64_t{1} << 24, int64_t{1} << 24, KeyShape::random,
                                 Order::ascending, true, 5);
  }
}

// Pairs of runs already in order, which the CPU copies rather than merges
// (src/cpu/primitives/merge_sort.cpp): all of b strictly before all of a, and all of a before
// all of b with equal keys at the seam (a's first). Values are positions in a ++ b, so any
// break of stability shows.
TEST_P(PrimitivesTest, MergeOfRangesAlreadyInOrder) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const int64_t na = 200003, nb = 150001;
  for (Where where : wheres())
    for (Order order : {Order::ascending, Order::descending})
      for (bool b_first : {true, false}) {
        std::vector<int32_t> a(static_cast<size_t>(na)), b(static_cast<size_t>(nb));
        for (int64_t i = 0; i < na; ++i) a[size_t(i)] = int32_t(b_first ? 1000000 + i : i / 2);
        for (int64_t j = 0; j < nb; ++j) b[size_t(j)] = int32_t(b_first ? j : (na - 1) / 2 + j / 2);
        if (order == Order::descending) {
          for (auto& x : a) x = -x;
          for (auto& x : b) x = -x;
        }
        std::vector<int64_t> av(static_cast<size_t>(na)), bv(static_cast<size_t>(nb));
        std::iota(av.begin(), av.end(), 0);
        std::iota(bv.begin(), bv.end(), na);
        std::vector<std::pair<int32_t, int64_t>> pa, pb, want(static_cast<size_t>(na + nb));
        for (int64_t i = 0; i < na; ++i) pa.emplace_back(a[size_t(i)], av[size_t(i)]);
        for (int64_t j = 0; j < nb; ++j) pb.emplace_back(b[size_t(j)], bv[size_t(j)]);
        std::merge(pa.begin(), pa.end(), pb.begin(), pb.end(), want.begin(), [order](const auto& x, const auto& y) {
          return order == Order::ascending ? x.first < y.first : x.first > y.first;
        });
        Staged<int32_t> ka(context(), a, where), kb(context(), b, where),
            keys(context(), std::vector<int32_t>(want.size()), where);
        Staged<int64_t> va(context(), av, where), vb(context(), bv, where),
            values(context(), std::vector<int64_t>(want.size()), where);
        merge<int32_t, int64_t>(context(), ka.cview(), va.cview(), kb.cview(), vb.cview(), keys.view(), values.view(),
                                order);
        const std::vector<int32_t>& got_keys = keys.fetch();
        const std::vector<int64_t>& got_values = values.fetch();
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_TRUE(got_keys[i] == want[i].first && got_values[i] == want[i].second)
              << (b_first ? "b first" : "a first") << ", " << order_name(order) << ", at " << i
              << (where == Where::device ? ", device" : "");
      }
}

// ------------------------------------------------------------------------------- CSR SpMV

TEST_P(PrimitivesTest, SpmvShapes) {
  SIMKIT_REQUIRE_BACKEND(backend());
  for (Where where : wheres())
    for (const char* shape : {"random", "powerlaw", "huge", "empty", "gaps"}) {
      const std::string s = shape;
      expect_spmv(context(), where, make_csr<float, int32_t>(s, 20000, 5000, 1000000, 1), s + " f32/i32", 2);
      expect_spmv(context(), where, make_csr<double, int64_t>(s, 3001, 77, 70000, 3), s + " f64/i64", 4);
      expect_spmv(context(), where, make_csr<float, int64_t>(s, 1, 10, 100, 5), s + " one row", 6);
    }
}

TEST_P(PrimitivesTest, SpmvAcceptanceMatrix) {
  SIMKIT_REQUIRE_BACKEND(backend());
  // The benchmark's shape: 1M rows, ~20M non-zeros, one row of 1M entries; 1e-6 vs float64.
  const auto A = make_csr<float, int32_t>("powerlaw", 1000000, 1000000, 1000000, 9);
  for (Where where : wheres()) expect_spmv(context(), where, A, "power law 1M rows", 10);
}

// One row of 2M entries, shared by many threads (blocks on the GPU): the same bits twice.
TEST_P(PrimitivesTest, SpmvIsDeterministic) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const auto A = make_csr<float, int32_t>("huge", 1000, 300, 2000000, 7);
  const std::vector<float> x = random_reals<float>(A.cols, -1, 1, 8);
  std::vector<float> y1(size_t(A.rows)), y2(size_t(A.rows));
  const CsrView<float, int32_t> view{A.rows, A.cols, A.offsets, A.indices, A.values};
  spmv_csr(context(), view, x, ArrayView(y1));
  spmv_csr(context(), view, x, ArrayView(y2));
  expect_equal_arrays(y2, y1, "two runs");
}

// ------------------------------------------------------------------------------- select_k

TEST_P(PrimitivesTest, SelectK) {
  SIMKIT_REQUIRE_BACKEND(backend());
  for (Where where : wheres()) {
    for (Order order : {Order::ascending, Order::descending}) {
      expect_select(context(), where, 1, 1, 1, order, 1);
      expect_select(context(), where, 3, 1000, 1, order, 2);
      expect_select(context(), where, 3, 1000, 1000, order, 3);
      expect_select(context(), where, 37, 1001, 10, order, 4);  // rows not 16-byte aligned
      expect_select(context(), where, 20, 4097, 129, order, 5);
      expect_select(context(), where, 9, 5003, 2048, order, 6);  // the GPU's largest device list
      expect_select(context(), where, 4, 5003, 2049, order, 7);  // the GPU's host fallback
      expect_select(context(), where, 2, 300000, 100, order, 8);
      expect_select(context(), where, 1, 2000003, 50, order, 9);
    }
    // Fewer non-NaN values than k: the rest is (NaN, -1).
    std::vector<float> nan_row(100, std::numeric_limits<float>::quiet_NaN());
    nan_row[17] = 4.f, nan_row[3] = 4.f, nan_row[50] = -1.f;
    expect_select(context(), where, 1, 100, 5, Order::descending, 10, nan_row);
  }
}

// ----------------------------------------------------------------------- refused arguments

// Every check here runs before the backend is chosen, so both refuse alike.
TEST_P(PrimitivesTest, RefusesBadArguments) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Context ctx = context();
  std::vector<int32_t> a(10), b(9);
  expect_error([&] { inclusive_scan<int32_t>(ctx, a, ArrayView(b)); }, ErrorCode::invalid_argument,
               "out has 9 elements, expected 10");
  expect_error(
      [&] { inclusive_scan<int32_t>(ctx, ArrayView<const int32_t>(a.data(), 10), ArrayView(a.data() + 1, 9)); },
      ErrorCode::invalid_argument, "expected 10");  // the lengths disagree before they overlap
  std::vector<int32_t> big(20);
  expect_error(
      [&] { inclusive_scan<int32_t>(ctx, ArrayView<const int32_t>(big.data(), 10), ArrayView(big.data() + 5, 10)); },
      ErrorCode::invalid_argument, "overlaps");
  const std::vector<int64_t> bad_off = {0, 5, 3, 10};
  expect_error([&] { segmented_inclusive_scan<int32_t>(ctx, a, ArrayView(bad_off), ArrayView(big.data(), 10)); },
               ErrorCode::invalid_argument, "must not decrease");
  const std::vector<int64_t> short_off = {0, 5, 9};
  expect_error([&] { segmented_inclusive_scan<int32_t>(ctx, a, ArrayView(short_off), ArrayView(big.data(), 10)); },
               ErrorCode::invalid_argument, "ends at 9, expected 10");
  std::vector<uint8_t> heads(11);
  expect_error(
      [&] { segmented_inclusive_scan<int32_t>(ctx, a, ArrayView<const uint8_t>(heads), ArrayView(big.data(), 10)); },
      ErrorCode::invalid_argument, "heads has 11");
  std::vector<int32_t> out(18);
  expect_error([&] { merge<int32_t>(ctx, a, b, ArrayView(out)); }, ErrorCode::invalid_argument, "out has 18");
  std::vector<int64_t> vals(9);
  expect_error([&] { sort<int32_t, int64_t>(ctx, ArrayView(a), ArrayView(vals)); }, ErrorCode::invalid_argument,
               "values has 9");
  expect_error([&] { sort<int32_t>(ctx, ArrayView(a), static_cast<Order>(7)); }, ErrorCode::invalid_argument,
               "unknown Order");
  std::vector<int32_t> off = {0, 2, 3}, cols = {0, 5, 1};
  std::vector<float> v(3), x(4), y(2);
  CsrView<float, int32_t> A{2, 4, off, cols, v};
  expect_error([&] { spmv_csr(ctx, A, x, ArrayView(y)); }, ErrorCode::invalid_argument, "col_indices[1] = 5");
  cols[1] = 3;
  off[2] = 4;
  expect_error([&] { spmv_csr(ctx, A, x, ArrayView(y)); }, ErrorCode::invalid_argument, "row_offsets ends at 4");
  off[2] = 3;
  expect_error([&] { spmv_csr(ctx, A, ArrayView<const float>(x.data(), 3), ArrayView(y)); },
               ErrorCode::invalid_argument, "x has 3");
  const Matrix<float> m(3, 5);
  expect_error([&] { select_k(ctx, m.view(), 6); }, ErrorCode::invalid_argument, "exceeds the row length 5");
  expect_error([&] { select_k(ctx, m.view(), 0); }, ErrorCode::invalid_argument, "k must be at least 1");
  if (backend() == Backend::cpu) {
    // Device arrays cannot go to the CPU backend.
    expect_error([&] { sort<int32_t>(ctx, ArrayView<int32_t>(a.data(), 10, Memory::device)); },
                 ErrorCode::invalid_argument, "needs host memory");
  }
}

// Empty inputs return before a device is chosen. The gpu instance therefore runs without a GPU
// too (no SIMKIT_REQUIRE_BACKEND): that is the point of it.
TEST_P(PrimitivesTest, EmptyInputsNeedNoDevice) {
  const Context ctx = context();
  std::vector<int32_t> none;
  inclusive_scan<int32_t>(ctx, none, ArrayView(none));
  sort<int32_t>(ctx, ArrayView(none));
  merge<int32_t>(ctx, none, none, ArrayView(none));
}

// ------------------------------------------------------------------------ the CPU's own cases

TEST(PrimitivesCpuOnly, ScanDoesNotDependOnThreadCount) {
  const std::vector<float> in = random_reals<float>(5000011, -1.0, 1.0, 3);
  std::vector<float> one(in.size()), many(in.size());
  inclusive_scan<float>(cpu_context(1), in, ArrayView(one));
  inclusive_scan<float>(cpu_context(3), in, ArrayView(many));
  expect_equal_arrays(many, one, "1 vs 3 threads");
}

TEST(PrimitivesCpuOnly, SegmentedScanDoesNotDependOnThreadCount) {
  const std::vector<float> in = random_reals<float>(3000017, -1.0, 1.0, 5);
  std::vector<uint8_t> heads(in.size(), 0);
  std::mt19937_64 rng(6);
  for (auto& h : heads) h = rng() % 100000 == 0;  // long segments, crossing many blocks
  std::vector<float> one(in.size()), many(in.size());
  segmented_inclusive_scan<float>(cpu_context(1), in, ArrayView<const uint8_t>(heads), ArrayView(one));
  segmented_inclusive_scan<float>(cpu_context(3), in, ArrayView<const uint8_t>(heads), ArrayView(many));
  expect_equal_arrays(many, one, "1 vs 3 threads");
}

TEST(PrimitivesCpuOnly, SpmvDoesNotDependOnThreadCount) {
  const auto A = make_csr<float, int32_t>("powerlaw", 50000, 20000, 500000, 7);
  const std::vector<float> x = random_reals<float>(A.cols, -1, 1, 8);
  std::vector<float> y1(size_t(A.rows)), y3(size_t(A.rows));
  const CsrView<float, int32_t> view{A.rows, A.cols, A.offsets, A.indices, A.values};
  spmv_csr(cpu_context(1), view, x, ArrayView(y1));
  spmv_csr(cpu_context(3), view, x, ArrayView(y3));
  expect_equal_arrays(y3, y1, "1 vs 3 threads");
}

// A non-commutative operator: composition of affine maps x -> a x + b, in wrapping integers.
struct Affine {
  uint64_t a = 1, b = 0;
};

TEST(PrimitivesCpuOnly, CustomOperatorKeepsOrder) {
  auto compose = [](Affine f, Affine g) { return Affine{g.a * f.a, g.a * f.b + g.b}; };  // g after f
  std::vector<Affine> in(300007);
  std::mt19937_64 rng(9);
  for (auto& f : in) f = {rng() | 1, rng()};
  std::vector<Affine> out(in.size()), ex(in.size());
  inclusive_scan(cpu_context(), std::span<const Affine>(in), std::span<Affine>(out), compose, Affine{});
  exclusive_scan(cpu_context(), std::span<const Affine>(in), std::span<Affine>(ex), compose, Affine{});
  Affine run;
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(ex[i].a == run.a && ex[i].b == run.b) << "exclusive at " << i;
    run = compose(run, in[i]);
    ASSERT_TRUE(out[i].a == run.a && out[i].b == run.b) << "inclusive at " << i;
  }
}

// ------------------------------------------------------------------------ the GPU's own cases

TEST(PrimitivesGpuOnly, ScanLongLookBackChains) {
  SIMKIT_REQUIRE_GPU();
  // 2^27 int32: 32,768 tiles, the acceptance size; and a float sum across the two-pass route.
  expect_scan_exact<int32_t>(gpu_context(), Where::device, (int64_t{1} << 27) + 3, ScanOp::sum, false, 1);
  expect_scan_exact<int64_t>(gpu_context(), Where::device, (int64_t{1} << 25) - 1, ScanOp::max, true, 2);
  expect_scan_exact<float>(gpu_context(), Where::device, (int64_t{1} << 24) + 5, ScanOp::sum, true, 3);
}

TEST(PrimitivesGpuOnly, SegmentOffsetsCheckedOnDevice) {
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

TEST(PrimitivesGpuOnly, SortManyPasses) {
  SIMKIT_REQUIRE_GPU();
  // 2^24 + 1 keys: 12 merge passes and a ragged last run; all-equal keys keep their order.
  expect_sort<int32_t, int32_t>(gpu_context(), Where::device, (int64_t{1} << 24) + 1, KeyShape::random,
                                Order::ascending, true, 2);
  expect_sort<int32_t, int32_t>(gpu_context(), Where::device, (int64_t{1} << 23) + 7, KeyShape::equal,
                                Order::descending, true, 3);
  expect_sort<float, int64_t>(gpu_context(), Where::device, (int64_t{1} << 22) - 3, KeyShape::special, Order::ascending,
                              true, 4);
}

// Device-resident CSR structure is checked by the kernel as it runs.
TEST(PrimitivesGpuOnly, SpmvStructureCheckedOnDevice) {
  SIMKIT_REQUIRE_GPU();
  const auto A = make_csr<float, int32_t>("huge", 1000, 300, 2000000, 7);
  const std::vector<float> x = random_reals<float>(A.cols, -1, 1, 8);
  std::vector<float> y(size_t(A.rows));
  std::vector<int32_t> bad_cols = A.indices;
  bad_cols[bad_cols.size() / 2] = int32_t(A.cols);
  Staged<int32_t> off(gpu_context(), A.offsets, Where::device), idx(gpu_context(), bad_cols, Where::device);
  const CsrView<float, int32_t> bad{A.rows, A.cols, off.cview(), idx.cview(), A.values};
  expect_error([&] { spmv_csr(gpu_context(), bad, x, ArrayView(y)); }, ErrorCode::invalid_argument,
               "col_indices (checked on the device)");
  std::vector<int32_t> bad_off = A.offsets;
  bad_off[10] = bad_off.back();  // row 10 ends at nnz, row 11 at 0: the offsets fall
  Staged<int32_t> off2(gpu_context(), bad_off, Where::device), idx2(gpu_context(), A.indices, Where::device);
  const CsrView<float, int32_t> bad2{A.rows, A.cols, off2.cview(), idx2.cview(), A.values};
  expect_error([&] { spmv_csr(gpu_context(), bad2, x, ArrayView(y)); }, ErrorCode::invalid_argument,
               "row_offsets (checked on the device)");
}

TEST(PrimitivesGpuOnly, SameAnswerAsCpu) {
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

TEST(PrimitivesGpuOnly, BudgetTooSmall) {
  SIMKIT_REQUIRE_GPU();
  std::vector<int32_t> keys = random_ints<int32_t>(1 << 22, 0, 1000, 1);
  expect_error([&] { sort<int32_t>(gpu_context(1 << 20), ArrayView(keys)); }, ErrorCode::out_of_memory,
               "GPU working memory");
}

}  // namespace
}  // namespace simkit::test
