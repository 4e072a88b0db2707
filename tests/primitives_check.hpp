#pragma once
// Sequential references for the primitives and the checks that compare a backend with them
// (test_primitives.cpp). Each check takes the Context to run on and where the arrays live
// (host, or copied to the device first), so one test body runs the same cases on both
// backends. The references are the plainest loops possible and do not share code with the
// library.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/primitives.hpp>

namespace simkit::test {

enum class Where { host, device };

/// A host vector, mirrored on the device when asked; view() is where the call reads / writes.
template <class T>
class Staged {
 public:
  Staged(const Context& ctx, std::vector<T> values, Where where) : host_(std::move(values)) {
    if (where == Where::device) dev_.emplace(ctx, MatrixView<const T>(host_.data(), 1, int64_t(host_.size())));
  }
  ArrayView<T> view() { return dev_ ? ArrayView<T>(dev_->view()) : ArrayView<T>(host_); }
  ArrayView<const T> cview() { return view(); }
  /// The current contents (copied back from the device when there).
  const std::vector<T>& fetch() {
    if (dev_) dev_->copy_to_host(MatrixView<T>(host_.data(), 1, int64_t(host_.size())));
    return host_;
  }

 private:
  std::vector<T> host_;
  std::optional<DeviceMatrix<T>> dev_;
};

/// n = 0, 1, around warp, tile and block sizes (2^k - 1, 2^k, 2^k + 1), and a few million.
inline std::vector<int64_t> awkward_sizes(bool large = true) {
  std::vector<int64_t> s = {0, 1, 2, 31, 32, 33};
  for (int k : {8, 10, 12, 13, 16, 17}) {
    const int64_t p = int64_t{1} << k;
    s.insert(s.end(), {p - 1, p, p + 1});
  }
  if (large) s.insert(s.end(), {(int64_t{1} << 20) + 7, 3000017});
  return s;
}

/// Uniform integers in [lo, hi] as T (exact in float for small ranges).
template <class T>
std::vector<T> random_ints(int64_t n, int64_t lo, int64_t hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

template <class T>
std::vector<T> random_reals(int64_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(u(rng));
  return v;
}

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  if constexpr (std::is_same_v<T, int64_t>) return "int64";
  if constexpr (std::is_same_v<T, float>) return "float";
  return "double";
}

inline const char* op_name(ScanOp op) {
  switch (op) {
    case ScanOp::sum: return "sum";
    case ScanOp::product: return "product";
    case ScanOp::min: return "min";
    case ScanOp::max: return "max";
  }
  return "?";
}

// ------------------------------------------------------------------------------ scan

template <class T>
T ref_identity(ScanOp op) {
  switch (op) {
    case ScanOp::sum: return T(0);
    case ScanOp::product: return T(1);
    case ScanOp::min:
      return std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    case ScanOp::max:
      return std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  return T(0);
}

template <class T>
T ref_apply(ScanOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    if (op == ScanOp::sum) return T(U(a) + U(b));
    if (op == ScanOp::product) return T(U(a) * U(b));
    return op == ScanOp::min ? std::min(a, b) : std::max(a, b);
  } else {
    if (op == ScanOp::sum) return a + b;
    if (op == ScanOp::product) return a * b;
    return op == ScanOp::min ? std::fmin(a, b) : std::fmax(a, b);
  }
}

/// heads empty: one segment. Otherwise a new segment starts wherever heads[i] != 0 (and at 0).
template <class T>
std::vector<T> reference_scan(const std::vector<T>& in, ScanOp op, bool exclusive,
                              const std::vector<uint8_t>& heads = {}) {
  std::vector<T> out(in.size());
  T running = ref_identity<T>(op);
  for (size_t i = 0; i < in.size(); ++i) {
    if (i == 0 || (!heads.empty() && heads[i] != 0)) running = ref_identity<T>(op);
    const T next = ref_apply(op, running, in[i]);
    out[i] = exclusive ? running : next;
    running = next;
  }
  return out;
}

/// Inputs for which every association of `op` gives the same result (so any backend must
/// match the reference bit for bit): small whole numbers for sums (exact below 2^24 in
/// float), +-1 for float products, anything for min / max and integers (wrap-around).
template <class T>
std::vector<T> exact_scan_input(ScanOp op, int64_t n, uint64_t seed) {
  if constexpr (std::is_floating_point_v<T>) {
    if (op == ScanOp::product) {
      auto v = random_ints<T>(n, 0, 1, seed);
      for (auto& x : v) x = x == 0 ? T(-1) : T(1);
      return v;
    }
    if (op == ScanOp::sum) return random_ints<T>(n, 0, 1, seed);  // totals stay below 2^24 for n < 2^25
    return random_reals<T>(n, -1e6, 1e6, seed);
  } else {
    return random_ints<T>(n, -1000000, 1000000, seed);
  }
}

template <class T>
bool same_bits(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return std::memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b);
  return a == b;
}

template <class T>
void expect_equal_arrays(const std::vector<T>& got, const std::vector<T>& want, const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << label;
  for (size_t i = 0; i < got.size(); ++i)
    if (!same_bits(got[i], want[i])) {
      ADD_FAILURE() << label << ": first difference at " << i << " of " << got.size() << ": got " << got[i] << ", want "
                    << want[i];
      return;
    }
}

template <class T>
void expect_scan_exact(const Context& ctx, Where where, int64_t n, ScanOp op, bool exclusive, uint64_t seed) {
  const std::string label =
      type_name<T>() + " " + op_name(op) + (exclusive ? " exclusive" : " inclusive") + " n=" + std::to_string(n);
  const std::vector<T> in = exact_scan_input<T>(op, n, seed);
  Staged<T> src(ctx, in, where), dst(ctx, std::vector<T>(size_t(n), T(7)), where);
  if (exclusive)
    exclusive_scan<T>(ctx, src.cview(), dst.view(), op);
  else
    inclusive_scan<T>(ctx, src.cview(), dst.view(), op);
  expect_equal_arrays(dst.fetch(), reference_scan(in, op, exclusive), label);
}

/// Float sums of real values: within 1e-5 of the float64 prefix relative to the prefix of |x|.
template <class T>
void expect_scan_close(const Context& ctx, Where where, int64_t n, uint64_t seed) {
  const std::vector<T> in = random_reals<T>(n, -1.0, 1.0, seed);
  Staged<T> src(ctx, in, where), dst(ctx, std::vector<T>(size_t(n)), where);
  inclusive_scan<T>(ctx, src.cview(), dst.view());
  const std::vector<T>& got = dst.fetch();
  double ref = 0, mag = 0;
  for (int64_t i = 0; i < n; ++i) {
    ref += double(in[size_t(i)]), mag += std::fabs(double(in[size_t(i)]));
    if (!(std::fabs(double(got[size_t(i)]) - ref) <= 1e-5 * mag + 1e-30)) {
      ADD_FAILURE() << type_name<T>() << " n=" << n << ": prefix " << i << " is " << got[size_t(i)] << ", float64 "
                    << ref << " (sum |x| = " << mag << ")";
      return;
    }
  }
}

// ---------------------------------------------------------------------- segmented scan

/// Segment lengths of the named shape summing to n; "empty" shapes hold zero-length segments.
inline std::vector<int64_t> segment_lengths(const std::string& shape, int64_t n, uint64_t seed) {
  std::vector<int64_t> len;
  std::mt19937_64 rng(seed);
  if (shape == "one") {
    len = {n};
  } else if (shape == "singletons") {
    len.assign(size_t(n), 1);
  } else if (shape == "empties") {  // every other segment empty, and empties at both ends
    len.push_back(0);
    for (int64_t i = 0; i < n; ++i) len.insert(len.end(), {1, 0, 0});
  } else if (shape == "huge") {  // one segment of most of the array among small ones
    std::uniform_int_distribution<int64_t> u(0, 20);
    int64_t left = n;
    bool placed = false;
    while (left > 0) {
      int64_t l = !placed && left < n * 3 / 4 ? std::max<int64_t>(1, left * 9 / 10) : std::min(left, u(rng));
      placed = placed || l > 1000;
      len.push_back(l);
      left -= l;
    }
  } else {  // "random": geometric lengths, mean 10, zeros included
    std::geometric_distribution<int64_t> g(0.1);
    int64_t left = n;
    while (left > 0) {
      const int64_t l = std::min(left, g(rng));
      len.push_back(l);
      left -= l;
    }
  }
  if (len.empty()) len.push_back(0);
  return len;
}

template <class I>
std::vector<I> offsets_of(const std::vector<int64_t>& lengths) {
  std::vector<I> off(1, 0);
  for (int64_t l : lengths) off.push_back(I(off.back() + l));
  return off;
}

inline std::vector<uint8_t> heads_of(const std::vector<int64_t>& lengths, int64_t n) {
  std::vector<uint8_t> heads(size_t(n), 0);
  int64_t at = 0;
  for (int64_t l : lengths) {
    if (l > 0) heads[size_t(at)] = 1;
    at += l;
  }
  return heads;
}

template <class T>
void expect_segmented_exact(const Context& ctx, Where where, int64_t n, const std::string& shape, ScanOp op,
                            bool exclusive, bool by_offsets, uint64_t seed) {
  const std::string label = type_name<T>() + " " + op_name(op) + (exclusive ? " exclusive " : " inclusive ") + shape +
                            (by_offsets ? " offsets" : " heads") + " n=" + std::to_string(n);
  const std::vector<T> in = exact_scan_input<T>(op, n, seed);
  const std::vector<int64_t> lengths = segment_lengths(shape, n, seed + 1);
  const std::vector<uint8_t> heads = heads_of(lengths, n);
  Staged<T> src(ctx, in, where), dst(ctx, std::vector<T>(size_t(n), T(7)), where);
  if (by_offsets) {
    Staged<int64_t> off(ctx, offsets_of<int64_t>(lengths), where);
    if (exclusive)
      segmented_exclusive_scan<T>(ctx, src.cview(), off.cview(), dst.view(), op);
    else
      segmented_inclusive_scan<T>(ctx, src.cview(), off.cview(), dst.view(), op);
  } else {
    // Heads other than 0 and 1 count as 1; element 0 starts a segment with or without a flag.
    std::vector<uint8_t> flags = heads;
    for (auto& f : flags) f = f ? uint8_t(1 + seed % 200) : 0;
    if (!flags.empty()) flags[0] = 0;
    Staged<uint8_t> h(ctx, flags, where);
    if (exclusive)
      segmented_exclusive_scan<T>(ctx, src.cview(), h.cview(), dst.view(), op);
    else
      segmented_inclusive_scan<T>(ctx, src.cview(), h.cview(), dst.view(), op);
  }
  expect_equal_arrays(dst.fetch(), reference_scan(in, op, exclusive, heads), label);
}

}  // namespace simkit::test
