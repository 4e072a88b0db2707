#pragma once
// storage=sq8: the walk over uint8 codes, the float32 vectors kept for the build and the re-rank.
//
// The quantizer is per dimension, x_t ~ lo_t + step_t c_t with lo, lo + 255 step the min and max
// of dimension t over the first add's rows; later rows are clamped to that range. Per dimension
// rather than one global range: embedding dimensions spread unevenly (MiniLM's widest spans
// several times its narrowest), and a global step would spend most of the 256 levels of a
// narrow dimension on values it never takes. The per-dimension steps cost the search nothing:
// they are folded into the query once (q'_t = q_t step_t), after which a code row is one dot
// product. min/max and not quantiles: nothing is clamped on the rows that trained it, and the
// exact re-rank repairs what the coarser steps blur. Clamping, not retraining, keeps every
// stored code valid (a later add with a wider range would otherwise re-encode the index).
//
// Every space but l1 is then a dot product with the codes (pearson's too: the centred query
// sums to zero, so (q - mq).(x - mx) = (q - mq).x):
//   q'.x^ = q'.lo + (q' * step).c        sqdist: |x^|^2 - 2 q.x^  (|q|^2 dropped: same order)
// (cosine and pearson encode the unit -- centred -- rows, sq8_value, so their walk needs only the
// query's scale).
// l1 widens the codes and sums |(q - lo) - step c|.
//
// The build never reads the codes: it walks the float32 vectors, so an sq8 index has the float32
// index's graph (same seed, same adds) and differs only in how its searches walk it.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <simkit/matrix.hpp>

#include "index/hnsw/cpu/hnsw_distance.hpp"
#include "index/hnsw/cpu/hnsw_simd512.hpp"
#include "index/hnsw/hnsw_graph.hpp"

namespace simkit::detail::cpu::hnsw {

/// What a node's codes encode: its row as given, or for cosine and pearson the row normalised
/// (centred too for pearson) -- the walk's distance is then a plain dot product, without the
/// per-node scale a random read away from the codes.
inline float sq8_value(const HnswGraph& g, int64_t v, int64_t t) {
  const float x = g.row(v)[t];
  if (!g.normalised()) return x;
  return (g.space == HnswSpace::pearson ? x - g.mean[size_t(v)] : x) * g.inv_norm[size_t(v)];
}

/// Trains the quantizer from nodes [from, nodes()) (the first add's): per dimension, min and max.
inline void sq8_train(HnswGraph& g, int64_t from) {
  const int64_t d = g.dim, n = g.nodes();
  std::vector<float> lo(size_t(d), 0.0f), hi(size_t(d), 0.0f);
  for (int64_t t = 0; t < d && from < n; ++t) lo[size_t(t)] = hi[size_t(t)] = sq8_value(g, from, t);
  for (int64_t v = from + 1; v < n; ++v)
    for (int64_t t = 0; t < d; ++t) {
      const float x = sq8_value(g, v, t);
      lo[size_t(t)] = std::min(lo[size_t(t)], x);
      hi[size_t(t)] = std::max(hi[size_t(t)], x);
    }
  g.sq_lo = lo;
  g.sq_step.resize(size_t(d));
  for (int64_t t = 0; t < d; ++t) g.sq_step[size_t(t)] = (hi[size_t(t)] - lo[size_t(t)]) / 255.0f;
}

/// Codes (and |x^|^2 for sqdist) of nodes [from, nodes()); the arrays are resized to nodes().
inline void sq8_encode(HnswGraph& g, int64_t from) {
  const int64_t d = g.dim, stride = g.code_stride(), n = g.nodes();
  g.codes.resize(size_t(n * stride), 0);
  if (g.space == HnswSpace::sqdist) g.code_sq.resize(size_t(n), 0.0f);
  for (int64_t v = from; v < n; ++v) {
    uint8_t* c = g.codes.data() + v * stride;
    double ss = 0;
    for (int64_t t = 0; t < d; ++t) {
      const float step = g.sq_step[size_t(t)], lo = g.sq_lo[size_t(t)];
      const float u = step > 0 ? std::nearbyint((sq8_value(g, v, t) - lo) / step) : 0.0f;
      c[t] = static_cast<uint8_t>(std::clamp(u, 0.0f, 255.0f));
      const double y = double(lo) + double(step) * c[t];
      ss += y * y;
    }
    std::fill(c + d, c + stride, uint8_t(0));
    if (g.space == HnswSpace::sqdist) g.code_sq[size_t(v)] = static_cast<float>(ss);
  }
}

/// |x^|^2 of every node from its codes (sqdist; a loaded file's codes).
inline void sq8_code_norms(HnswGraph& g) {
  g.code_sq.assign(size_t(g.nodes()), 0.0f);
  for (int64_t v = 0; v < g.nodes(); ++v) {
    double ss = 0;
    for (int64_t t = 0; t < g.dim; ++t) {
      const double y = double(g.sq_lo[size_t(t)]) + double(g.sq_step[size_t(t)]) * g.code(v)[t];
      ss += y * y;
    }
    g.code_sq[size_t(v)] = static_cast<float>(ss);
  }
}

/// A query prepared for the codes (its buffers are the thread's, reused query to query).
struct CodeProbe {
  const float* qs = nullptr;   // q' * step (l1: q - lo)
  const int8_t* q8 = nullptr;  // qs quantized: qs ~ unit * q8
  float unit = 0;
  float base = 0;      // q'.lo
  float inv_norm = 0;  // cosine, pearson: the query's, as Meter's
};

struct CodeQuery {
  std::vector<float> qs;
  std::vector<int8_t> q8;
};

/// The walk's distance between a query and g's code rows, in the order of Meter's.
class CodeMeter {
 public:
  // SIMKIT_HNSW_SQ8_FLOAT=1: the float query times widened codes instead of VNNI, to measure both.
  explicit CodeMeter(const HnswGraph& g)
      : g_(g), wide_(hnsw_avx512()), vnni_(wide_ && !std::getenv("SIMKIT_HNSW_SQ8_FLOAT")) {}

  CodeProbe query(const Meter& exact, const float* q, CodeQuery& buf) const {
    const int64_t d = g_.dim, stride = g_.code_stride();
    const Probe p = exact.query(q);
    CodeProbe c;
    c.inv_norm = p.inv_norm;
    buf.qs.assign(size_t(stride), 0.0f);
    buf.q8.assign(size_t(stride), 0);
    double base = 0;
    float top = 0;
    for (int64_t t = 0; t < d; ++t) {
      const float x = g_.space == HnswSpace::pearson ? q[t] - p.mean : q[t];
      const float lo = g_.sq_lo[size_t(t)], step = g_.sq_step[size_t(t)];
      buf.qs[size_t(t)] = g_.space == HnswSpace::l1 ? x - lo : x * step;
      base += double(x) * lo;
      top = std::max(top, std::fabs(buf.qs[size_t(t)]));
    }
    c.base = static_cast<float>(base);
    c.unit = top > 0 ? top / 127.0f : 0.0f;
    for (int64_t t = 0; t < d && top > 0; ++t)
      buf.q8[size_t(t)] = static_cast<int8_t>(std::lrint(buf.qs[size_t(t)] / c.unit));
    c.qs = buf.qs.data();
    c.q8 = buf.q8.data();
    return c;
  }

  float operator()(const CodeProbe& p, uint32_t v) const {
    const uint8_t* c = g_.code(v);
    if (g_.space == HnswSpace::l1) return wide_ ? l1_u8_512(p.qs, g_.sq_step.data(), c, g_.dim) : l1_codes(p, c);
    const float dot = p.base + (vnni_   ? p.unit * static_cast<float>(dot_u8s8_vnni(p.q8, c, g_.code_stride()))
                                : wide_ ? dot_u8_512(p.qs, c, g_.dim)
                                        : dot_codes(p, c));
    switch (g_.space) {
      case HnswSpace::sqdist: return g_.code_sq[v] - 2 * dot;
      case HnswSpace::neg_dot: return -dot;
      default: return -dot * p.inv_norm;  // cosine, pearson: the codes are of unit rows
    }
  }

  void prefetch(uint32_t v) const {
    const char* c = reinterpret_cast<const char*>(g_.code(v));
    const int64_t bytes = g_.code_stride();
    for (int64_t b = 0; b < bytes && b < 512; b += 64) __builtin_prefetch(c + b);
  }

 private:
  // Without AVX-512 VNNI: the float query times the widened codes (vectorised by the compiler).
  float dot_codes(const CodeProbe& p, const uint8_t* c) const {
    float s = 0;
    for (int64_t t = 0; t < g_.dim; ++t) s += p.qs[t] * static_cast<float>(c[t]);
    return s;
  }
  float l1_codes(const CodeProbe& p, const uint8_t* c) const {
    float s = 0;
    for (int64_t t = 0; t < g_.dim; ++t) s += std::fabs(p.qs[t] - g_.sq_step[size_t(t)] * static_cast<float>(c[t]));
    return s;
  }

  const HnswGraph& g_;
  bool wide_, vnni_;
};

}  // namespace simkit::detail::cpu::hnsw
