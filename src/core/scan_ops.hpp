#pragma once
// The built-in scan operators (primitives.hpp, ScanOp) as functors with their identities,
// shared by the CPU backend and the CUDA kernels. Integer sums and products go through the
// unsigned type, where wrap-around is defined (signed overflow is not).

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <simkit/primitives.hpp>

#include "hd.hpp"

namespace simkit::detail {

template <class T>
struct SumOp {
  static constexpr T identity() { return T(0); }
  SIMKIT_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return T(U(a) + U(b));
    } else {
      return a + b;
    }
  }
};

template <class T>
struct ProductOp {
  static constexpr T identity() { return T(1); }
  SIMKIT_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return T(U(a) * U(b));
    } else {
      return a * b;
    }
  }
};

template <class T>
struct MinOp {
  static constexpr T identity() {
    if constexpr (std::is_floating_point_v<T>)
      return std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::max();
  }
  SIMKIT_HD T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return b < a || a != a ? b : a;  // fmin: a NaN loses to any number
    else
      return b < a ? b : a;
  }
};

template <class T>
struct MaxOp {
  static constexpr T identity() {
    if constexpr (std::is_floating_point_v<T>)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
  SIMKIT_HD T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a < b || a != a ? b : a;
    else
      return a < b ? b : a;
  }
};

/// Calls f(op) with the functor for `op` on T.
template <class T, class F>
decltype(auto) with_scan_op(ScanOp op, F&& f) {
  switch (op) {
    case ScanOp::product: return f(ProductOp<T>{});
    case ScanOp::min: return f(MinOp<T>{});
    case ScanOp::max: return f(MaxOp<T>{});
    case ScanOp::sum: break;
  }
  return f(SumOp<T>{});
}

}  // namespace simkit::detail
