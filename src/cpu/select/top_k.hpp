#pragma once
// Per-query top-k selection for the CPU k-NN.
//
// Every metric is ranked as "smaller key is better": distances use their value as the key,
// similarities its negation (exact in float, so the value comes back bit for bit). Pairs are
// ordered by (key, id), which makes ties go to the lower id and the result independent of the
// order in which base rows are offered -- so it does not depend on how the work was split.
//
// Why a threshold-filtered buffer rather than a heap: once k values have been seen, the
// worst of them is a bound that almost every later value fails (probability ~ k / rows seen),
// and that test is one vector compare per 8 values. Accepted values are appended to a buffer
// of capacity about 2k; when it fills, nth_element keeps the best k in O(capacity) and
// tightens the bound. Each prune discards at least k + 64 entries, so the amortised cost is
// O(1) per accepted value and O(n + k log k) per query overall, for any k up to n; a heap
// would pay O(log k) per accepted value and cannot be vectorised.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/simd.hpp"

namespace simkit::detail::cpu {

struct Candidate {
  float key;
  int64_t id;
};

inline bool ranks_before(const Candidate& a, const Candidate& b) noexcept {
  return a.key < b.key || (a.key == b.key && a.id < b.id);
}

class TopK {
 public:
  /// Starts a new selection of the best `keep` pairs out of at most `offers` offered ones.
  /// A NaN key ranks last (k-NN: only float overflow makes one), or with skip_nan is never
  /// kept (select_k: NaN is not a value to select).
  void reset(int64_t keep, int64_t offers, bool skip_nan = false);

  /// Offers values[j] with id first_id + j for j < count; with Negate the key is -values[j].
  /// With SkipNan, a NaN value is never kept (offer_marked's masked columns are NaN).
  template <bool Negate, bool SkipNan = false>
  void offer(const float* values, int64_t count, int64_t first_id);

  /// offer() restricted to the ids whose bit is set in `marks` (bit r of word r / 64): a
  /// masked scan, where only some of a block's columns belong to the selection (lsh: a few
  /// candidates per query, walked bit by bit).
  template <bool Negate>
  void offer_marked(const float* values, int64_t count, int64_t first_id, const uint64_t* marks);
  /// offer() of a scratch row under a row filter that most columns pass: poison[j] is 0 where
  /// column j may be kept, NaN where not, added in place and rejected by offer<Negate, true>'s
  /// vector test with everything above the bound. A bit-by-bit walk (offer_marked) cost a k-NN
  /// with 90% of its rows allowed 14% over the unfiltered search (1,000,000 x 128, d = 128, 2
  /// cores: the product is only ~1.6 ns a pair, so any per-pair scalar work shows); this costs
  /// one vector add per 8 pairs. A filtered search therefore also skips NaN keys of allowed rows
  /// (only a float overflow makes one).
  template <bool Negate>
  void offer_filtered(float* values, int64_t count, int64_t first_id, const float* poison);

  /// The best min(keep, offered) pairs (NaNs not counted with skip_nan) in no particular order; the selection is spent
  /// until the next reset, and the caller may reorder the returned buffer.
  std::vector<Candidate>& best();

 private:
  void consider(float key, int64_t id);
  void prune();

  std::vector<Candidate> buf_;
  int64_t keep_ = 0, capacity_ = 0;
  bool bounded_ = false;
  bool skip_nan_ = false;
  // Nothing ranking at or after (bound_key_, bound_id_) can enter the best keep_.
  float bound_key_ = std::numeric_limits<float>::infinity();
  int64_t bound_id_ = std::numeric_limits<int64_t>::max();
};

/// The poison row of a row filter for TopK::offer_filtered: 0 where bit r of `mask` is set, NaN
/// where not, for r < n.
inline std::vector<float> filter_poison(const uint64_t* mask, int64_t n) {
  std::vector<float> poison(static_cast<size_t>(n));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t r = 0; r < n; ++r) poison[static_cast<size_t>(r)] = ((mask[r >> 6] >> (r & 63)) & 1u) ? 0.0f : nan;
  return poison;
}

namespace select_simd {
inline bool any(simd::i8 m) {
  uint64_t w[4];
  std::memcpy(w, &m, sizeof w);
  return (w[0] | w[1] | w[2] | w[3]) != 0;
}
}  // namespace select_simd

template <bool Negate, bool SkipNan>
void TopK::offer(const float* values, int64_t count, int64_t first_id) {
  // !(v > bound) rather than v <= bound: a NaN passes and consider() ranks it last -- unless
  // SkipNan, where v <= bound lets no NaN through.
  auto passes = [&](float key) { return SkipNan ? key <= bound_key_ : !(key > bound_key_); };
  int64_t j = 0;
  for (; j + 8 <= count; j += 8) {
    simd::f8 v = simd::load8(values + j);
    if constexpr (Negate) v = -v;
    const simd::f8 bound = simd::f8{} + bound_key_;
    const simd::i8 any_pass = SkipNan ? simd::i8(v <= bound) : ~(v > bound);
    if (select_simd::any(any_pass)) {
      for (int l = 0; l < 8; ++l) {
        const float key = Negate ? -values[j + l] : values[j + l];
        if (passes(key)) consider(key, first_id + j + l);
      }
    }
  }
  for (; j < count; ++j) {
    const float key = Negate ? -values[j] : values[j];
    if (passes(key)) consider(key, first_id + j);
  }
}

template <bool Negate>
void TopK::offer_marked(const float* values, int64_t count, int64_t first_id, const uint64_t* marks) {
  for (int64_t j = 0; j < count;) {
    const int64_t r = first_id + j;
    const int64_t span = std::min<int64_t>(64 - (r & 63), count - j);
    uint64_t w = marks[r >> 6] >> (r & 63);
    if (span < 64) w &= (uint64_t{1} << span) - 1;
    while (w) {
      const int b = std::countr_zero(w);
      w &= w - 1;
      const float key = Negate ? -values[j + b] : values[j + b];
      if (!(key > bound_key_)) consider(key, r + b);
    }
    j += span;
  }
}

template <bool Negate>
void TopK::offer_filtered(float* values, int64_t count, int64_t first_id, const float* poison) {
  for (int64_t j = 0; j < count; ++j) values[j] += poison[j];  // vectorised: NaN where filtered out
  offer<Negate, true>(values, count, first_id);
}

}  // namespace simkit::detail::cpu
