// The public merge and sort (primitives.hpp): argument checks, then the backend.
#include <simkit/error.hpp>
#include <simkit/primitives.hpp>

#include "core/primitives_check.hpp"

namespace simkit {

namespace {

using detail::Raw;

void check_order(const char* fn, Order order) {
  if (order != Order::ascending && order != Order::descending) detail::primitive_fail(fn, "unknown Order");
}

void run_merge(const Context& ctx, const detail::MergeArgs& m) {
  const char* fn = "merge";
  check_order(fn, m.order);
  const int64_t n = m.a_keys.size + m.b_keys.size;
  detail::check_length(fn, m.a_keys, m.a_keys.size, "a");
  detail::check_length(fn, m.b_keys, m.b_keys.size, "b");
  detail::check_length(fn, m.out_keys, n, "out");
  detail::check_apart(fn, m.out_keys, "out", m.a_keys, "a");
  detail::check_apart(fn, m.out_keys, "out", m.b_keys, "b");
  if (m.out_values.present()) {
    detail::check_length(fn, m.a_values, m.a_keys.size, "a_values");
    detail::check_length(fn, m.b_values, m.b_keys.size, "b_values");
    detail::check_length(fn, m.out_values, n, "out_values");
    for (const Raw* in : {&m.a_keys, &m.b_keys, &m.a_values, &m.b_values})
      detail::check_apart(fn, m.out_values, "out_values", *in, "an input");
    detail::check_apart(fn, m.out_values, "out_values", m.out_keys, "out_keys");
  }
  if (n == 0) return;
  detail::primitive_backend(ctx, fn, {m.a_keys, m.b_keys, m.out_keys, m.a_values, m.b_values, m.out_values})
      .merge(ctx, m);
}

void run_sort(const Context& ctx, const detail::SortArgs& s) {
  const char* fn = "sort";
  check_order(fn, s.order);
  detail::check_length(fn, s.keys, s.keys.size, "keys");
  if (s.values.present()) {
    detail::check_length(fn, s.values, s.keys.size, "values");
    detail::check_apart(fn, s.values, "values", s.keys, "keys");
  }
  if (s.keys.size <= 1) return;  // one key is sorted; its value stays with it
  const detail::Backend& backend = detail::primitive_backend(ctx, fn, {s.keys, s.values});
  backend.sort(ctx, s);
}

}  // namespace

template <SortKey K>
void merge(const Context& ctx, ConstArray<K> a, ConstArray<K> b, ArrayView<K> out, Order order) {
  detail::MergeArgs m;
  m.a_keys = detail::raw(a), m.b_keys = detail::raw(b), m.out_keys = detail::raw(out);
  m.order = order;
  run_merge(ctx, m);
}

template <SortKey K, PrimitiveValue V>
void merge(const Context& ctx, ConstArray<K> a_keys, ConstArray<V> a_values, ConstArray<K> b_keys,
           ConstArray<V> b_values, ArrayView<K> out_keys, ArrayView<V> out_values, Order order) {
  detail::MergeArgs m{detail::raw(a_keys),
                      detail::raw(a_values),
                      detail::raw(b_keys),
                      detail::raw(b_values),
                      detail::raw(out_keys),
                      detail::raw(out_values),
                      order};
  run_merge(ctx, m);
}

template <SortKey K>
void sort(const Context& ctx, ArrayView<K> keys, Order order) {
  run_sort(ctx, {detail::raw(keys), {}, order});
}

template <SortKey K, PrimitiveValue V>
void sort(const Context& ctx, ArrayView<K> keys, ArrayView<V> values, Order order) {
  run_sort(ctx, {detail::raw(keys), detail::raw(values), order});
}

#define SIMKIT_SORT_PAIRS(K, V)                                                                                       \
  template void merge<K, V>(const Context&, ConstArray<K>, ConstArray<V>, ConstArray<K>, ConstArray<V>, ArrayView<K>, \
                            ArrayView<V>, Order);                                                                     \
  template void sort<K, V>(const Context&, ArrayView<K>, ArrayView<V>, Order);
#define SIMKIT_SORT(K)                                                                       \
  template void merge<K>(const Context&, ConstArray<K>, ConstArray<K>, ArrayView<K>, Order); \
  template void sort<K>(const Context&, ArrayView<K>, Order);                                \
  SIMKIT_SORT_PAIRS(K, int32_t)                                                              \
  SIMKIT_SORT_PAIRS(K, int64_t) SIMKIT_SORT_PAIRS(K, float) SIMKIT_SORT_PAIRS(K, double)

SIMKIT_SORT(int32_t)
SIMKIT_SORT(int64_t)
SIMKIT_SORT(float)

}  // namespace simkit
