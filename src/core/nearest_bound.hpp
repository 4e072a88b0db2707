#pragma once
// When a nearest-centroid assignment made from an approximate product can be trusted.
//
// Both backends rank centroids j for a point x by a key that drops the point's own term:
//
//   sqeuclidean  K_j = ||v_j||^2 - 2 u.v_j   with u = x - t, v_j = c_j - t   (= ||x - c_j||^2 - ||u||^2)
//   cosine       K_j = -u.v_j                with u = x,     v_j = c_j / ||c_j||
//
// (t, a translation near the data -- the mean of the centroids -- keeps u and v short, so the
// product's error, proportional to ||u|| ||v||, stays small against the gaps between keys.)
// The fast pass computes A_j = a_j + b s_j from float-rounded operands, a_j = ||v_j||^2 or 0,
// b = -2 or -1, and s_j the fast product: sgemm on the CPU, half-precision tensor cores on the
// GPU. Each backend states eps (and an absolute term) with |s_j - u.v_j| <= eps ||u|| ||v_j||
// (+ floor), and key_error_bound turns it into B with |A_j - K_j| <= B for every j. Keeping the M smallest A_j as
// candidates and re-scoring them in float64, the best exact candidate key K* is the true minimum as soon as
//
//   K* < A_(M) - B        (A_(M): the largest approximate key kept)
//
// because every other centroid has K_j >= A_j - B >= A_(M) - B. Points that fail the test are
// ranked exactly against every centroid, so the result never depends on the bound being tight.

#include <cmath>
#include <cstdint>

#include "core/hd.hpp"

namespace simkit::detail {

/// eps of an sgemm product over d terms: operands exact, each addition (fused or not) rounds
/// once (2^-24 relative), however the library blocks the sum; doubled for safety.
SIMKIT_HD double fp32_product_eps(int64_t d) { return double(d + 16) * 0x1p-22; }

/// The GPU's half-precision product (cuBLAS: half operands and result, float accumulation) is
/// taken on rows scaled by powers of two, u / su and v / sv with su >= max_i ||u_i|| and
/// sv >= max_j ||v_j||: every scaled row has norm <= 1, so no sum can overflow half. Each
/// operand rounds to the nearest half (2^-11 relative, or 2^-25 absolute among subnormals),
/// the accumulation is bounded as in fp32_product_eps, and the result rounds to half once
/// more. For s, the product of the scaled rows, and u, v the unscaled ones:
///
///   |su sv s - u.v| <= fp16_product_eps(d) ||u|| ||v|| + fp16_product_floor(d, su, sv, ||u||, ||v||)
///
/// (the 2^-19 and the floor's factor 2 cover the cross terms of the two roundings).
SIMKIT_HD double fp16_product_eps(int64_t d) { return 0x1p-10 + 0x1p-11 + 0x1p-19 + double(d + 16) * 0x1p-22; }
SIMKIT_HD double fp16_product_floor(int64_t d, double su, double sv, double u_norm, double v_norm) {
  return 0x1p-24 * (sqrt(double(d)) * (sv * u_norm + su * v_norm) + su * sv);
}

/// B for one point: eps as above, |b|, ||u||, max_j ||v_j||, max_j a_j and the product's
/// absolute term at ||u|| and max_j ||v_j|| (0 for sgemm). The third term covers the float
/// rounding of u, v_j and a_j and of the sum a_j + b s_j (2^-24 each, taken as 2^-22); the
/// fourth, the float64 evaluation of the exact keys (d 2^-53 relative, for d up to 2^13 taken
/// as 2^-40); the last, float results that fall among the subnormals (2^-150 absolute each, for
/// up to 2^19 of them), where relative bounds say nothing: rows of tiny norm.
SIMKIT_HD double key_error_bound(double eps, double b, double u_norm, double v_max, double a_max,
                                 double product_floor = 0.0) {
  const double cross = b * u_norm * v_max;
  return eps * cross + b * product_floor + 0x1p-22 * (a_max + cross) + 0x1p-40 * (a_max + cross + u_norm * u_norm) +
         0x1p-130;
}

/// True when the candidates settle the point: every centroid is a candidate, or the best exact
/// key clears the largest kept approximate key by more than the bound.
SIMKIT_HD bool nearest_certified(bool every_centroid_kept, double best_exact, double worst_kept, double bound) {
  if (every_centroid_kept) return true;
  const double limit = worst_kept - bound;            // NaN or inf when either is not finite
  return limit - limit == 0.0 && best_exact < limit;  // inf - inf and NaN - NaN are NaN
}

}  // namespace simkit::detail
