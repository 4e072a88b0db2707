#pragma once
// The centroid side of the nearest-centroid pass (core/nearest_bound.hpp), prepared once per
// assignment on the host and read by both backends: the translation t, the operands v_j, the
// constant terms a_j and the maxima the error bound needs.

#include <cstdint>
#include <vector>

#include <simkit/matrix.hpp>

namespace simkit::detail {

struct NearestOperands {
  bool spherical = false;
  int64_t k = 0, d = 0;
  std::vector<float> t;  // d: the centroids' mean or the given translation (sqeuclidean); empty when spherical
  std::vector<float> v;  // k x d: c_j - t, or c_j / ||c_j|| (a zero centroid stays zero)
  std::vector<float> a;  // k: ||v_j||^2 (sqeuclidean); empty when spherical
  float b = -2.0f;       // the product's factor in the key: -2, or -1 when spherical
  double v_max = 0;      // max_j ||v_j||
  double a_max = 0;      // max_j a_j (0 when spherical)
};

/// `translation` (d values), when given, replaces the centroids' mean as t.
NearestOperands nearest_operands(MatrixView<const float> C, bool spherical,
                                 const std::vector<float>* translation = nullptr);

}  // namespace simkit::detail
