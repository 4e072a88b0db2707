#pragma once
// The order of sort and merge keys (primitives.hpp, "Float order"): < for integers; for floats
// < with every NaN after +inf, NaNs equal to each other, -0.0 equal to +0.0. That is a strict
// weak order, which merge and merge sort need (a plain < with NaNs is not). Descending is the
// same order reversed, so NaNs lead there.

#include <type_traits>

#include <simkit/primitives.hpp>

#include "hd.hpp"

namespace simkit::detail {

template <class K>
struct Ascending {
  SIMKIT_HD bool operator()(K a, K b) const {
    if constexpr (std::is_floating_point_v<K>)
      return a < b || (b != b && a == a);  // x != x: x is NaN
    else
      return a < b;
  }
};

template <class K>
struct Descending {
  SIMKIT_HD bool operator()(K a, K b) const { return Ascending<K>{}(b, a); }
};

/// Calls f with the comparator of `order` (Ascending<K> or Descending<K>): the dispatch every
/// backend's merge and sort entry points share.
template <class K, class F>
decltype(auto) with_order(Order order, F&& f) {
  if (order == Order::descending) return f(Descending<K>{});
  return f(Ascending<K>{});
}

}  // namespace simkit::detail
