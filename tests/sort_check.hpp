#pragma once
// Merge and sort checks against std::stable_sort / std::merge with the documented key order
// (NaN after +inf, -0.0 equal to +0.0), for either backend. Values are the keys' original
// positions, so the comparison sees any break of stability.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <simkit/primitives.hpp>

#include "primitives_check.hpp"

namespace simkit::test {

template <class K>
bool ref_less(K a, K b) {
  if constexpr (std::is_floating_point_v<K>)
    return a < b || (std::isnan(b) && !std::isnan(a));
  else
    return a < b;
}

template <class K>
bool ref_before(K a, K b, Order order) {
  return order == Order::ascending ? ref_less(a, b) : ref_less(b, a);
}

inline const char* order_name(Order o) { return o == Order::ascending ? "ascending" : "descending"; }

/// random: the full range; sorted / reverse: already in (reverse) order, as the seed's inputs;
/// equal: one key (stability is all there is); few: four distinct keys; special (floats):
/// NaN, +-inf, -0.0 and +0.0 among ordinary values.
enum class KeyShape { random, sorted, reverse, equal, few, special };

inline const char* shape_name(KeyShape s) {
  switch (s) {
    case KeyShape::random: return "random";
    case KeyShape::sorted: return "sorted";
    case KeyShape::reverse: return "reverse";
    case KeyShape::equal: return "equal";
    case KeyShape::few: return "few";
    case KeyShape::special: return "special";
  }
  return "?";
}

template <class K>
std::vector<K> make_keys(KeyShape shape, int64_t n, uint64_t seed) {
  std::vector<K> k;
  if (shape == KeyShape::equal) return std::vector<K>(size_t(n), K(3));
  if (shape == KeyShape::few) return random_ints<K>(n, -1, 2, seed);
  if constexpr (std::is_floating_point_v<K>)
    k = random_reals<K>(n, -1e9, 1e9, seed);
  else
    k = random_ints<K>(n, std::numeric_limits<K>::lowest(), std::numeric_limits<K>::max(), seed);
  if (shape == KeyShape::sorted || shape == KeyShape::reverse) {
    std::sort(k.begin(), k.end());
    if (shape == KeyShape::reverse) std::reverse(k.begin(), k.end());
  }
  if constexpr (std::is_floating_point_v<K>) {
    if (shape == KeyShape::special) {
      const K specials[] = {std::numeric_limits<K>::quiet_NaN(), std::numeric_limits<K>::infinity(),
                            -std::numeric_limits<K>::infinity(), K(-0.0), K(0.0)};
      std::mt19937_64 rng(seed + 7);
      for (auto& x : k)
        if (rng() % 4 == 0) x = specials[rng() % 5];
    }
  }
  return k;
}

template <class V>
std::vector<V> positions(int64_t n) {
  std::vector<V> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = V(i);
  return v;
}

/// The stable order of keys: the permutation std::stable_sort gives.
template <class K>
std::vector<int64_t> stable_order(const std::vector<K>& keys, Order order) {
  std::vector<int64_t> idx(keys.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return ref_before(keys[size_t(a)], keys[size_t(b)], order); });
  return idx;
}

template <class K, class V>
void expect_sort(const Context& ctx, Where where, int64_t n, KeyShape shape, Order order, bool with_values,
                 uint64_t seed) {
  const std::string label = "sort " + type_name<K>() + (with_values ? "+" + type_name<V>() : std::string()) + " " +
                            shape_name(shape) + " " + order_name(order) + " n=" + std::to_string(n);
  const std::vector<K> keys = make_keys<K>(shape, n, seed);
  const std::vector<int64_t> idx = stable_order(keys, order);
  std::vector<K> want_keys(keys.size());
  std::vector<V> want_values(keys.size());
  for (size_t i = 0; i < idx.size(); ++i) want_keys[i] = keys[size_t(idx[i])], want_values[i] = V(idx[i]);
  Staged<K> k(ctx, keys, where);
  if (with_values) {
    Staged<V> v(ctx, positions<V>(n), where);
    sort<K, V>(ctx, k.view(), v.view(), order);
    expect_equal_arrays(v.fetch(), want_values, label + " (values)");
  } else {
    sort<K>(ctx, k.view(), order);
  }
  expect_equal_arrays(k.fetch(), want_keys, label);
}

template <class K, class V>
void expect_merge(const Context& ctx, Where where, int64_t na, int64_t nb, KeyShape shape, Order order,
                  bool with_values, uint64_t seed) {
  const std::string label = "merge " + type_name<K>() + (with_values ? "+" + type_name<V>() : std::string()) + " " +
                            shape_name(shape) + " " + order_name(order) + " " + std::to_string(na) + "+" +
                            std::to_string(nb);
  std::vector<K> a = make_keys<K>(shape, na, seed), b = make_keys<K>(shape, nb, seed + 1);
  auto before = [order](K x, K y) { return ref_before(x, y, order); };
  std::stable_sort(a.begin(), a.end(), before);
  std::stable_sort(b.begin(), b.end(), before);
  // Values: positions in the concatenation a ++ b, so a's come first among equals.
  std::vector<K> cat = a;
  cat.insert(cat.end(), b.begin(), b.end());
  std::vector<int64_t> idx(cat.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::vector<int64_t> merged(cat.size());
  std::merge(idx.begin(), idx.begin() + na, idx.begin() + na, idx.end(), merged.begin(),
             [&](int64_t x, int64_t y) { return before(cat[size_t(x)], cat[size_t(y)]); });
  std::vector<K> want_keys(cat.size());
  std::vector<V> want_values(cat.size());
  for (size_t i = 0; i < merged.size(); ++i) want_keys[i] = cat[size_t(merged[i])], want_values[i] = V(merged[i]);

  Staged<K> ka(ctx, a, where), kb(ctx, b, where), out(ctx, std::vector<K>(cat.size()), where);
  if (with_values) {
    std::vector<V> pos = positions<V>(na + nb);
    Staged<V> va(ctx, std::vector<V>(pos.begin(), pos.begin() + na), where);
    Staged<V> vb(ctx, std::vector<V>(pos.begin() + na, pos.end()), where);
    Staged<V> vo(ctx, std::vector<V>(cat.size()), where);
    merge<K, V>(ctx, ka.cview(), va.cview(), kb.cview(), vb.cview(), out.view(), vo.view(), order);
    expect_equal_arrays(vo.fetch(), want_values, label + " (values)");
  } else {
    merge<K>(ctx, ka.cview(), kb.cview(), out.view(), order);
  }
  expect_equal_arrays(out.fetch(), want_keys, label);
}

}  // namespace simkit::test
