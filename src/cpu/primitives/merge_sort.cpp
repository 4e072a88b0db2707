// Merge and merge sort on the CPU.
//
// Merge: the output is cut in pieces of kPiece positions; each piece finds where it starts in
// a and b by merge path (core/merge_path.hpp) and merges its share serially, so the threads
// split the work evenly whatever the keys. Sort: std::stable_sort on chunks of kChunk keys (in
// parallel), then merge passes of doubling run width, each a merge-path merge of every pair of
// runs cut in the same pieces, between the array and one scratch copy. Values ride along as
// raw 4- or 8-byte payloads: only their size matters here.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <simkit/detail/scan_custom.hpp>

#include "core/key_order.hpp"
#include "core/merge_path.hpp"
#include "core/parallel.hpp"
#include "cpu/cpu_backend.hpp"

namespace simkit::detail::cpu {

namespace {

constexpr int64_t kChunk = int64_t{1} << 15;  // keys per initial sorted run
constexpr int64_t kPiece = int64_t{1} << 16;  // outputs per merge piece; divides every 2 x run width

struct NoValue {};

template <class V>
constexpr bool kHasValues = !std::is_same_v<V, NoValue>;

/// Outputs [d0, d1) of first[0, n_first) followed by second: two copies.
template <class K, class V>
void copy_concatenated(const K* first, const V* first_v, int64_t n_first, const K* second, const V* second_v, K* out,
                       V* ov, int64_t d0, int64_t d1) {
  const int64_t split = std::clamp(n_first, d0, d1);
  // An empty input may have a null pointer, which memcpy must not see even for 0 bytes.
  if (split > d0) {
    std::memcpy(out + d0, first + d0, size_t(split - d0) * sizeof(K));
    if constexpr (kHasValues<V>) std::memcpy(ov + d0, first_v + d0, size_t(split - d0) * sizeof(V));
  }
  if (d1 > split) {
    std::memcpy(out + split, second + (split - n_first), size_t(d1 - split) * sizeof(K));
    if constexpr (kHasValues<V>) std::memcpy(ov + split, second_v + (split - n_first), size_t(d1 - split) * sizeof(V));
  }
}

/// Outputs [d0, d1) of the stable merge of a and b. Ranges already in order (all of a not
/// after all of b, or all of b strictly before all of a: sorted and reverse-sorted inputs, and
/// most pairs of a nearly sorted one) are copied rather than merged.
template <class K, class V, class Less>
void merge_piece(const K* a, const V* av, int64_t na, const K* b, const V* bv, int64_t nb, K* out, V* ov, int64_t d0,
                 int64_t d1, Less less) {
  if (na == 0 || nb == 0 || !less(b[0], a[na - 1])) return copy_concatenated(a, av, na, b, bv, out, ov, d0, d1);
  if (less(b[nb - 1], a[0])) return copy_concatenated(b, bv, nb, a, av, out, ov, d0, d1);
  auto at_a = [a](int64_t i) { return a[i]; };
  auto at_b = [b](int64_t j) { return b[j]; };
  const int64_t i0 = merge_path_split(d0, na, nb, at_a, at_b, less);
  const int64_t i1 = merge_path_split(d1, na, nb, at_a, at_b, less);
  const int64_t j0 = d0 - i0, j1 = d1 - i1;
  serial_merge(
      i1 - i0, j1 - j0, [&](int64_t i) { return a[i0 + i]; }, [&](int64_t j) { return b[j0 + j]; }, less,
      [&](bool from_a, int64_t idx, int64_t p) {
        out[d0 + p] = from_a ? a[i0 + idx] : b[j0 + idx];
        if constexpr (kHasValues<V>) ov[d0 + p] = from_a ? av[i0 + idx] : bv[j0 + idx];
      });
}

template <class K, class V, class Less>
void parallel_merge(const Context& ctx, const K* a, const V* av, int64_t na, const K* b, const V* bv, int64_t nb,
                    K* out, V* ov, Less less) {
  const int64_t n = na + nb, pieces = (n + kPiece - 1) / kPiece;
  cpu_parallel_for(ctx, pieces, [&](int64_t p) {
    merge_piece(a, av, na, b, bv, nb, out, ov, p * kPiece, std::min(n, (p + 1) * kPiece), less);
  });
}

template <class K, class V, class Less>
void sort_chunk(K* keys, V* vals, int64_t n, Less less) {
  if constexpr (!kHasValues<V>) {
    std::stable_sort(keys, keys + n, less);
  } else {
    std::vector<std::pair<K, V>> pairs(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) pairs[size_t(i)] = {keys[i], vals[i]};
    std::stable_sort(pairs.begin(), pairs.end(),
                     [less](const auto& x, const auto& y) { return less(x.first, y.first); });
    for (int64_t i = 0; i < n; ++i) keys[i] = pairs[size_t(i)].first, vals[i] = pairs[size_t(i)].second;
  }
}

/// True when keys[0, n) is already in order (then a stable sort moves nothing). Each piece
/// stops at its first descent, so an unsorted array costs little more than one look per piece.
template <class K, class Less>
bool already_sorted(const Context& ctx, const K* keys, int64_t n, Less less) {
  const int64_t pieces = (n + kPiece - 1) / kPiece;
  std::vector<uint8_t> ordered(static_cast<size_t>(pieces));
  cpu_parallel_for(ctx, pieces, [&](int64_t p) {
    const int64_t lo = p * kPiece, hi = std::min(n, lo + kPiece + 1);  // + 1: across the seam
    ordered[size_t(p)] = std::is_sorted(keys + lo, keys + hi, less);
  });
  return std::all_of(ordered.begin(), ordered.end(), [](uint8_t o) { return o != 0; });
}

template <class K, class V, class Less>
void merge_sort(const Context& ctx, K* keys, V* vals, int64_t n, Less less) {
  if (already_sorted(ctx, keys, n, less)) return;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  cpu_parallel_for(ctx, chunks, [&](int64_t c) {
    const int64_t lo = c * kChunk, len = std::min(kChunk, n - lo);
    sort_chunk(keys + lo, kHasValues<V> ? vals + lo : vals, len, less);
  });
  if (chunks <= 1) return;
  std::vector<K> key_tmp(static_cast<size_t>(n));
  std::vector<V> val_tmp(kHasValues<V> ? static_cast<size_t>(n) : 0);
  K* src = keys;
  K* dst = key_tmp.data();
  V* vsrc = vals;
  V* vdst = val_tmp.data();
  const int64_t pieces = (n + kPiece - 1) / kPiece;
  for (int64_t width = kChunk; width < n; width *= 2) {
    cpu_parallel_for(ctx, pieces, [&](int64_t p) {
      const int64_t pos = p * kPiece, g0 = pos / (2 * width) * (2 * width);
      const int64_t na = std::min(width, n - g0), nb = std::min(width, n - g0 - na);
      const int64_t d1 = std::min(pos + kPiece, g0 + na + nb) - g0;
      const V* va = kHasValues<V> ? vsrc + g0 : vsrc;
      const V* vb = kHasValues<V> ? vsrc + g0 + na : vsrc;
      V* vo = kHasValues<V> ? vdst + g0 : vdst;
      merge_piece(src + g0, va, na, src + g0 + na, vb, nb, dst + g0, vo, pos - g0, d1, less);
    });
    std::swap(src, dst);
    std::swap(vsrc, vdst);
  }
  if (src != keys) {
    cpu_parallel_for(ctx, pieces, [&](int64_t p) {
      const int64_t lo = p * kPiece, len = std::min(kPiece, n - lo);
      std::memcpy(keys + lo, src + lo, size_t(len) * sizeof(K));
      if constexpr (kHasValues<V>) std::memcpy(vals + lo, vsrc + lo, size_t(len) * sizeof(V));
    });
  }
}

template <class F>
void with_key(Dtype t, F&& f) {
  switch (t) {
    case Dtype::i32: return f(int32_t{});
    case Dtype::i64: return f(int64_t{});
    case Dtype::f32: return f(float{});
    default: throw Error(ErrorCode::invalid_argument, "internal: unsupported sort key type");
  }
}

template <class F>
void with_payload(const Raw& values, F&& f) {
  if (!values.present()) return f(NoValue{});
  if (dtype_size(values.type) == 4) return f(uint32_t{});
  return f(uint64_t{});
}

}  // namespace

void CpuBackend::merge(const Context& ctx, const MergeArgs& a) const {
  translate_bad_alloc("merge", [&] {
    with_key(a.a_keys.type, [&](auto key) {
      using K = decltype(key);
      with_payload(a.a_values, [&](auto payload) {
        using V = decltype(payload);
        with_order<K>(a.order, [&](auto less) {
          parallel_merge(ctx, a.a_keys.as<const K>(), a.a_values.as<const V>(), a.a_keys.size, a.b_keys.as<const K>(),
                         a.b_values.as<const V>(), a.b_keys.size, a.out_keys.as<K>(), a.out_values.as<V>(), less);
        });
      });
    });
  });
}

void CpuBackend::sort(const Context& ctx, const SortArgs& a) const {
  translate_bad_alloc("sort", [&] {
    with_key(a.keys.type, [&](auto key) {
      using K = decltype(key);
      with_payload(a.values, [&](auto payload) {
        using V = decltype(payload);
        with_order<K>(a.order,
                      [&](auto less) { merge_sort(ctx, a.keys.as<K>(), a.values.as<V>(), a.keys.size, less); });
      });
    });
  });
}

}  // namespace simkit::detail::cpu
