#pragma once
// The graph walk's float32 distances: one pair at a time, straight from the rows (the walk
// meets its nodes one by one, in an order only it knows, so there is no block to hand sgemm).
// Four eight-lane accumulators keep two loads and an FMA a cycle in flight (AVX2 under
// -march=x86-64-v3, core/simd.hpp), and the lanes are summed in float: these keys only steer
// the walk and pick the short list that is re-scored in float64 (index/hnsw/hnsw_graph.hpp), so
// they need no more than float32's accuracy. lsh's sparse keys (index/lsh/cpu/lsh_search.cpp)
// sum their lanes in double instead because they select its candidates directly.

#include <cmath>
#include <cstdint>

#include "core/simd.hpp"
#include "index/hnsw/cpu/hnsw_simd512.hpp"
#include "index/hnsw/hnsw_graph.hpp"

namespace simkit::detail::cpu::hnsw {

using simd::f8;

inline float lane_sum(f8 v) {
  const simd::f4 lo = {v[0], v[1], v[2], v[3]}, hi = {v[4], v[5], v[6], v[7]};
  const simd::f4 s = lo + hi;
  return (s[0] + s[2]) + (s[1] + s[3]);
}

inline float dot(const float* a, const float* b, int64_t d) {
  f8 s0{}, s1{}, s2{}, s3{};
  int64_t i = 0;
  for (; i + 32 <= d; i += 32) {
    s0 += simd::load8(a + i) * simd::load8(b + i);
    s1 += simd::load8(a + i + 8) * simd::load8(b + i + 8);
    s2 += simd::load8(a + i + 16) * simd::load8(b + i + 16);
    s3 += simd::load8(a + i + 24) * simd::load8(b + i + 24);
  }
  for (; i + 8 <= d; i += 8) s0 += simd::load8(a + i) * simd::load8(b + i);
  float s = lane_sum((s0 + s1) + (s2 + s3));
  for (; i < d; ++i) s += a[i] * b[i];
  return s;
}

/// (a - ma).(b - mb): pearson's centring on the fly.
inline float centred_dot(const float* a, float ma, const float* b, float mb, int64_t d) {
  const f8 va = f8{} + ma, vb = f8{} + mb;
  f8 s0{}, s1{};
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    s0 += (simd::load8(a + i) - va) * (simd::load8(b + i) - vb);
    s1 += (simd::load8(a + i + 8) - va) * (simd::load8(b + i + 8) - vb);
  }
  for (; i + 8 <= d; i += 8) s0 += (simd::load8(a + i) - va) * (simd::load8(b + i) - vb);
  float s = lane_sum(s0 + s1);
  for (; i < d; ++i) s += (a[i] - ma) * (b[i] - mb);
  return s;
}

inline float sqdist(const float* a, const float* b, int64_t d) {
  f8 s0{}, s1{}, s2{}, s3{};
  int64_t i = 0;
  for (; i + 32 <= d; i += 32) {
    const f8 u0 = simd::load8(a + i) - simd::load8(b + i), u1 = simd::load8(a + i + 8) - simd::load8(b + i + 8);
    const f8 u2 = simd::load8(a + i + 16) - simd::load8(b + i + 16);
    const f8 u3 = simd::load8(a + i + 24) - simd::load8(b + i + 24);
    s0 += u0 * u0, s1 += u1 * u1, s2 += u2 * u2, s3 += u3 * u3;
  }
  for (; i + 8 <= d; i += 8) {
    const f8 u = simd::load8(a + i) - simd::load8(b + i);
    s0 += u * u;
  }
  float s = lane_sum((s0 + s1) + (s2 + s3));
  for (; i < d; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s;
}

inline float l1(const float* a, const float* b, int64_t d) {
  f8 s0{}, s1{};
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    s0 += simd::abs8(simd::load8(a + i) - simd::load8(b + i));
    s1 += simd::abs8(simd::load8(a + i + 8) - simd::load8(b + i + 8));
  }
  for (; i + 8 <= d; i += 8) s0 += simd::abs8(simd::load8(a + i) - simd::load8(b + i));
  float s = lane_sum(s0 + s1);
  for (; i < d; ++i) s += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
  return s;
}

/// One side of a pair: a query, or a node acting as one during the build.
struct Probe {
  const float* x;
  float inv_norm = 0;  // cosine, pearson
  float mean = 0;      // pearson
};

/// The walk's distance (smaller is nearer) between a probe and g's nodes, in g's space.
class Meter {
 public:
  explicit Meter(const HnswGraph& g) : g_(g), wide_(hnsw_avx512()) {}

  /// A query as given: its inverse norm (and mean) computed once, in double.
  Probe query(const float* q) const {
    Probe p{q};
    if (!g_.normalised()) return p;
    double mean = 0, ss = 0;
    if (g_.space == HnswSpace::pearson) {
      for (int64_t t = 0; t < g_.dim; ++t) mean += q[t];
      mean /= static_cast<double>(g_.dim);
    }
    for (int64_t t = 0; t < g_.dim; ++t) ss += (q[t] - mean) * (q[t] - mean);
    p.mean = static_cast<float>(mean);
    p.inv_norm = ss > 0 ? static_cast<float>(1.0 / std::sqrt(ss)) : 0.0f;
    return p;
  }
  Probe node(uint32_t v) const {
    Probe p{g_.row(v)};
    if (g_.normalised()) p.inv_norm = g_.inv_norm[v];
    if (g_.space == HnswSpace::pearson) p.mean = g_.mean[v];
    return p;
  }

  float operator()(const Probe& p, uint32_t v) const {
    const float* x = g_.row(v);
    const int64_t d = g_.dim;
    switch (g_.space) {
      case HnswSpace::sqdist: return wide_ ? sqdist512(p.x, x, d) : sqdist(p.x, x, d);
      case HnswSpace::l1: return l1(p.x, x, d);
      case HnswSpace::neg_dot: return -(wide_ ? dot512(p.x, x, d) : dot(p.x, x, d));
      case HnswSpace::cosine: return -(wide_ ? dot512(p.x, x, d) : dot(p.x, x, d)) * (p.inv_norm * g_.inv_norm[v]);
      case HnswSpace::pearson: return -centred_dot(p.x, p.mean, x, g_.mean[v], d) * (p.inv_norm * g_.inv_norm[v]);
    }
    return 0;
  }

  void prefetch(uint32_t v) const {
    const char* x = reinterpret_cast<const char*>(g_.row(v));
    const int64_t bytes = g_.dim * static_cast<int64_t>(sizeof(float));
    // The first lines now; the hardware prefetcher follows the rest of a row it sees read in order.
    for (int64_t b = 0; b < bytes && b < 256; b += 64) __builtin_prefetch(x + b);
  }

 private:
  const HnswGraph& g_;
  bool wide_;  // the AVX-512 kernels (hnsw_simd512.hpp)
};

}  // namespace simkit::detail::cpu::hnsw
