#pragma once
// When brute-force k-NN's float32 candidates settle a query (both backends).
//
// The selection keeps the kc rows best by a float32 key A_j, re-scores them in float64 and
// ranks them by (exact key K_j, id). That is the rule's answer unless a row left out ranks
// before the k-th kept one -- which happens where many rows tie, or nearly tie, at the k-th key
// (duplicates, points on a grid): the float32 rounding then picks an arbitrary subset of the
// tied group. The same argument as k-means' (core/nearest_bound.hpp) decides it per query. Let
// K_(k) <= U be the k-th exact key among the kept rows, A_(kc) the float key of the worst kept
// one, and B a bound on |A_j - (K_j - S)| for every row j with K_j <= U, where S is the part of
// the key the selection leaves out (the GPU's ||q - c||^2; 0 on the CPU). A row left out has
// A_j >= A_(kc); if it had K_j <= U, then A_j <= U - S + B. So when
//
//   U - S + B < A_(kc)
//
// no row left out has K_j <= K_(k), the kept rows hold the rule's best k, and the query is
// settled. A query that fails the test is ranked exactly against every row (rescore_all), so
// the answer never depends on the bound being tight; the bound only has to hold.
//
// B per metric, eps = fp32_product_eps(d) bounding the float32 product (|s - u.v| <= eps |u| |v|):
//   sqdist   key ||v_j||^2 - 2 u.v_j (+ ||u||^2 on the CPU): key_error_bound with |b| = 2, where a
//            row with K_j <= U has ||v_j|| <= ||u|| + sqrt(U) (triangle inequality), so no
//            maximum over the base is needed; 2^-22 ||u||^2 more for the CPU's float rounding
//            of the whole distance. The CPU's keys also obey |A_j - K_j| <= r A_j (`relative`,
//            cpu/knn.cpp), so A_j <= U / (1 - r) there: B = U r / (1 - r) when smaller, as it is
//            for data far from the origin, where ||u|| is large next to the distances
//   dot      key -u.x_j: (eps + 2^-22) ||u|| max_j ||x_j||, the second term for the rounding of
//            the product itself
//   cosine   key -cos: eps, plus 2^-20 for the float rounding of the normalised query (GPU),
//            of the norms and of the key (each about 2^-24)
// pearson is not checked: its centred float rows carry an error relative to the row means
// that no per-query quantity bounds, and it keeps the margin of candidates alone.

#include <cmath>
#include <cstdint>

#include "core/hd.hpp"
#include "core/metric_plan.hpp"
#include "core/nearest_bound.hpp"

namespace simkit::detail {

/// What a query's check needs beyond its own row, fixed for one k-NN call.
struct KnnBound {
  ExactForm form = ExactForm::none;
  double eps = 0;    // fp32_product_eps(d)
  double x_max = 0;  // dot only: the largest norm of a base row
  /// sqdist keys known to be within relative * key of the exact key (the CPU's); 0: unknown.
  double relative = 0;
};

/// Whether `form` is checked at all (see the header comment for pearson).
SIMKIT_HD bool knn_checked(ExactForm form) {
  return form == ExactForm::sqdist || form == ExactForm::dot || form == ExactForm::cosine;
}

/// B for a query: u_norm = ||u|| (q - c for a translated sqdist, q otherwise; unused for
/// cosine), upper = U.
SIMKIT_HD double knn_key_error(const KnnBound& b, double u_norm, double upper) {
  switch (b.form) {
    case ExactForm::sqdist: {
      const double v = u_norm + sqrt(upper > 0 ? upper : 0.0);
      const double by_norms = key_error_bound(b.eps, 2.0, u_norm, v, v * v) + 0x1p-22 * u_norm * u_norm;
      if (!(b.relative > 0 && b.relative < 0.5)) return by_norms;
      const double by_key = upper * b.relative / (1 - b.relative) * (1 + 0x1p-40) + 0x1p-130;
      return by_key < by_norms ? by_key : by_norms;
    }
    case ExactForm::dot: return (b.eps + 0x1p-22) * u_norm * b.x_max + 0x1p-130;
    case ExactForm::cosine: return b.eps + 0x1p-20;
    default: return 0.0;
  }
}

/// True when the query is settled: upper - shift + bound < worst_kept, a finite float key (an
/// overflowed one says nothing about the rows behind it).
SIMKIT_HD bool knn_settled(double upper, double shift, double bound, float worst_kept) {
  const double w = worst_kept;
  return w - w == 0.0 && upper - shift + bound < w;  // false for NaN upper or worst
}

/// An upper bound on the key of a value written out as float (the GPU's k-th output value):
/// the float rounding of the value undone with room to spare.
SIMKIT_HD double key_upper_of_value(bool negate, bool root, float value) {
  const double v = value;
  if (root) {
    const double r = v * (1 + 0x1p-22);
    return r * r;
  }
  return (negate ? -v : v) + 0x1p-22 * fabs(v) + 0x1p-140;
}

}  // namespace simkit::detail
