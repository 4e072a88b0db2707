// The primitives on the CPU backend against sequential references (primitives_check.hpp,
// sort_check.hpp, spmv_select_check.hpp): every type and operator at awkward sizes, segment
// and row shapes that break naive code, stability on equal keys, NaN and signed zeros,
// descending order, results independent of the thread count, and every refused argument.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

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

template <class T>
void scan_sweep(const Context& ctx) {
  for (int64_t n : awkward_sizes())
    for (ScanOp op : kOps)
      for (bool exclusive : {false, true}) expect_scan_exact<T>(ctx, Where::host, n, op, exclusive, 11 + uint64_t(n));
}

TEST(PrimitivesCpu, ScanEveryTypeAndOperator) {
  scan_sweep<int32_t>(cpu_context());
  scan_sweep<int64_t>(cpu_context());
  scan_sweep<float>(cpu_context());
  scan_sweep<double>(cpu_context());
}

TEST(PrimitivesCpu, FloatScanCloseToFloat64) {
  for (int64_t n : {int64_t{1000}, int64_t{1} << 20, int64_t{3000017}}) {
    expect_scan_close<float>(cpu_context(), Where::host, n, 5);
    expect_scan_close<double>(cpu_context(), Where::host, n, 6);
  }
}

TEST(PrimitivesCpu, ScanDoesNotDependOnThreadCount) {
  const std::vector<float> in = random_reals<float>(5000011, -1.0, 1.0, 3);
  std::vector<float> one(in.size()), many(in.size());
  inclusive_scan<float>(cpu_context(1), in, ArrayView(one));
  inclusive_scan<float>(cpu_context(3), in, ArrayView(many));
  expect_equal_arrays(many, one, "1 vs 3 threads");
}

TEST(PrimitivesCpu, SegmentedScanDoesNotDependOnThreadCount) {
  const std::vector<float> in = random_reals<float>(3000017, -1.0, 1.0, 5);
  std::vector<uint8_t> heads(in.size(), 0);
  std::mt19937_64 rng(6);
  for (auto& h : heads) h = rng() % 100000 == 0;  // long segments, crossing many blocks
  std::vector<float> one(in.size()), many(in.size());
  segmented_inclusive_scan<float>(cpu_context(1), in, ArrayView<const uint8_t>(heads), ArrayView(one));
  segmented_inclusive_scan<float>(cpu_context(3), in, ArrayView<const uint8_t>(heads), ArrayView(many));
  expect_equal_arrays(many, one, "1 vs 3 threads");
}

TEST(PrimitivesCpu, ScanInPlace) {
  std::vector<int64_t> v = random_ints<int64_t>(200003, -9, 9, 4);
  const std::vector<int64_t> want = reference_scan(v, ScanOp::sum, true);
  exclusive_scan<int64_t>(cpu_context(), v, ArrayView(v));
  expect_equal_arrays(v, want, "in place");
}

// A non-commutative operator: composition of affine maps x -> a x + b, in wrapping integers.
struct Affine {
  uint64_t a = 1, b = 0;
};

TEST(PrimitivesCpu, CustomOperatorKeepsOrder) {
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

template <class T>
void segmented_sweep(const Context& ctx, ScanOp op) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{33}, int64_t{4097}, int64_t{65537}, int64_t{1000003}})
    for (const char* shape : {"random", "one", "singletons", "empties", "huge"})
      for (bool exclusive : {false, true})
        for (bool offsets : {false, true})
          expect_segmented_exact<T>(ctx, Where::host, n, shape, op, exclusive, offsets, 21 + uint64_t(n));
}

TEST(PrimitivesCpu, SegmentedScanShapes) {
  segmented_sweep<int32_t>(cpu_context(), ScanOp::sum);
  segmented_sweep<int64_t>(cpu_context(), ScanOp::max);
  segmented_sweep<float>(cpu_context(), ScanOp::sum);
  segmented_sweep<double>(cpu_context(), ScanOp::min);
}

TEST(PrimitivesCpu, SegmentedScanWithInt32Offsets) {
  const std::vector<int64_t> lengths = segment_lengths("random", 100000, 4);
  const std::vector<int32_t> off = offsets_of<int32_t>(lengths);
  const std::vector<int32_t> in = random_ints<int32_t>(100000, -50, 50, 5);
  std::vector<int32_t> out(in.size());
  segmented_inclusive_scan<int32_t>(cpu_context(), in, ArrayView(off), ArrayView(out));
  expect_equal_arrays(out, reference_scan(in, ScanOp::sum, false, heads_of(lengths, 100000)), "int32 offsets");
}

template <class K>
void sort_sweep(const Context& ctx) {
  for (int64_t n : {int64_t{2}, int64_t{31}, int64_t{33}, int64_t{4097}, int64_t{65535}, int64_t{300001}})
    for (KeyShape shape : kShapes)
      for (Order order : {Order::ascending, Order::descending}) {
        expect_sort<K, int64_t>(ctx, Where::host, n, shape, order, false, 31 + uint64_t(n));
        expect_sort<K, int64_t>(ctx, Where::host, n, shape, order, true, 32 + uint64_t(n));
      }
}

TEST(PrimitivesCpu, SortKeysAndPairs) {
  sort_sweep<int32_t>(cpu_context());
  sort_sweep<int64_t>(cpu_context());
  sort_sweep<float>(cpu_context());
  expect_sort<float, float>(cpu_context(), Where::host, 100003, KeyShape::few, Order::descending, true, 1);
  expect_sort<int32_t, int32_t>(cpu_context(), Where::host, 3000017, KeyShape::random, Order::ascending, true, 2);
  expect_sort<int32_t, double>(cpu_context(), Where::host, 0, KeyShape::random, Order::ascending, true, 3);
  expect_sort<int32_t, double>(cpu_context(), Where::host, 1, KeyShape::random, Order::ascending, true, 3);
}

template <class K>
void merge_sweep(const Context& ctx) {
  const int64_t sizes[][2] = {{0, 0},    {0, 5},     {7, 0},         {1, 1},     {31, 33},
                              {4096, 1}, {1, 70000}, {65537, 65535}, {300000, 2}};
  for (const auto& s : sizes)
    for (KeyShape shape : kShapes)
      for (Order order : {Order::ascending, Order::descending}) {
        expect_merge<K, int64_t>(ctx, Where::host, s[0], s[1], shape, order, false, 41 + uint64_t(s[0]));
        expect_merge<K, int64_t>(ctx, Where::host, s[0], s[1], shape, order, true, 42 + uint64_t(s[1]));
      }
}

TEST(PrimitivesCpu, MergeKeysAndPairs) {
  merge_sweep<int32_t>(cpu_context());
  merge_sweep<int64_t>(cpu_context());
  merge_sweep<float>(cpu_context());
  expect_merge<int32_t, float>(cpu_context(), Where::host, 1 << 20, 1 << 20, KeyShape::few, Order::ascending, true, 5);
}

// Pairs of runs already in order are copied, not merged (src/cpu/primitives/merge_sort.cpp): all of b
// strictly before all of a, and all of a before all of b with equal keys at the seam (a's
// first). Values are positions in a ++ b, so any break of stability shows.
TEST(PrimitivesCpu, MergeOfRangesAlreadyInOrder) {
  const int64_t na = 200003, nb = 150001;
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
      std::vector<int32_t> keys(want.size());
      std::vector<int64_t> values(want.size());
      merge<int32_t, int64_t>(cpu_context(), a, av, b, bv, ArrayView(keys), ArrayView(values), order);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_TRUE(keys[i] == want[i].first && values[i] == want[i].second)
            << (b_first ? "b first" : "a first") << ", " << order_name(order) << ", at " << i;
    }
}

TEST(PrimitivesCpu, SpmvShapes) {
  for (const char* shape : {"random", "powerlaw", "huge", "empty", "gaps"}) {
    const std::string s = shape;
    expect_spmv(cpu_context(), Where::host, make_csr<float, int32_t>(s, 20000, 5000, 1000000, 1), s + " f32/i32", 2);
    expect_spmv(cpu_context(), Where::host, make_csr<double, int64_t>(s, 3001, 77, 70000, 3), s + " f64/i64", 4);
    expect_spmv(cpu_context(), Where::host, make_csr<float, int64_t>(s, 1, 10, 100, 5), s + " one row", 6);
  }
}

TEST(PrimitivesCpu, SpmvDoesNotDependOnThreadCount) {
  const auto A = make_csr<float, int32_t>("powerlaw", 50000, 20000, 500000, 7);
  const std::vector<float> x = random_reals<float>(A.cols, -1, 1, 8);
  std::vector<float> y1(size_t(A.rows)), y3(size_t(A.rows));
  const CsrView<float, int32_t> view{A.rows, A.cols, A.offsets, A.indices, A.values};
  spmv_csr(cpu_context(1), view, x, ArrayView(y1));
  spmv_csr(cpu_context(3), view, x, ArrayView(y3));
  expect_equal_arrays(y3, y1, "1 vs 3 threads");
}

TEST(PrimitivesCpu, SelectK) {
  for (Order order : {Order::ascending, Order::descending}) {
    expect_select(cpu_context(), Where::host, 1, 1, 1, order, 1);
    expect_select(cpu_context(), Where::host, 3, 1000, 1, order, 2);
    expect_select(cpu_context(), Where::host, 3, 1000, 1000, order, 3);
    expect_select(cpu_context(), Where::host, 37, 1001, 10, order, 4);
    expect_select(cpu_context(), Where::host, 20, 4097, 129, order, 5);
    expect_select(cpu_context(), Where::host, 2, 300000, 100, order, 6);
    expect_select(cpu_context(), Where::host, 1, 2000003, 50, order, 7);
  }
  // Fewer non-NaN values than k: the rest is (NaN, -1).
  std::vector<float> nan_row(100, std::numeric_limits<float>::quiet_NaN());
  nan_row[17] = 4.f, nan_row[3] = 4.f, nan_row[50] = -1.f;
  expect_select(cpu_context(), Where::host, 1, 100, 5, Order::descending, 8, nan_row);
}

TEST(PrimitivesCpu, RefusesBadArguments) {
  const Context ctx = cpu_context();
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
  // Device arrays cannot go to the CPU backend.
  expect_error([&] { sort<int32_t>(ctx, ArrayView<int32_t>(a.data(), 10, Memory::device)); },
               ErrorCode::invalid_argument, "needs host memory");
}

TEST(PrimitivesCpu, EmptyInputsNeedNoDevice) {
  Context ctx = cpu_context();
  std::vector<int32_t> none;
  inclusive_scan<int32_t>(ctx, none, ArrayView(none));
  sort<int32_t>(ctx, ArrayView(none));
  merge<int32_t>(ctx, none, none, ArrayView(none));
}

}  // namespace
}  // namespace simkit::test
