#include "core/nearest_operands.hpp"

#include <algorithm>
#include <cmath>

namespace simkit::detail {

NearestOperands nearest_operands(MatrixView<const float> C, bool spherical, const std::vector<float>* translation) {
  NearestOperands o;
  o.spherical = spherical;
  o.k = C.rows;
  o.d = C.cols;
  const int64_t k = C.rows, d = C.cols;
  o.v.resize(static_cast<size_t>(k * d));
  if (spherical) {
    o.b = -1.0f;
    for (int64_t j = 0; j < k; ++j) {
      double sq = 0;
      for (int64_t i = 0; i < d; ++i) sq += double(C(j, i)) * double(C(j, i));
      const double inv = sq > 0 ? 1.0 / std::sqrt(sq) : 0.0;
      for (int64_t i = 0; i < d; ++i) o.v[size_t(j * d + i)] = float(double(C(j, i)) * inv);
    }
  } else {
    if (translation) {
      o.t = *translation;
    } else {
      std::vector<double> mean(static_cast<size_t>(d), 0.0);
      for (int64_t j = 0; j < k; ++j)
        for (int64_t i = 0; i < d; ++i) mean[size_t(i)] += C(j, i);
      o.t.resize(static_cast<size_t>(d));
      for (int64_t i = 0; i < d; ++i) o.t[size_t(i)] = float(mean[size_t(i)] / double(k));
    }
    o.a.resize(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) {
      double sq = 0;
      for (int64_t i = 0; i < d; ++i) {
        const float vi = float(double(C(j, i)) - double(o.t[size_t(i)]));
        o.v[size_t(j * d + i)] = vi;
        sq += double(vi) * double(vi);
      }
      o.a[size_t(j)] = float(sq);
      o.a_max = std::max(o.a_max, sq);
    }
  }
  for (int64_t j = 0; j < k; ++j) {
    double sq = 0;
    for (int64_t i = 0; i < d; ++i) sq += double(o.v[size_t(j * d + i)]) * double(o.v[size_t(j * d + i)]);
    o.v_max = std::max(o.v_max, std::sqrt(sq));
  }
  o.a_max *= 1.0 + 0x1p-20;  // a_j as stored (float) may round up
  return o;
}

}  // namespace simkit::detail
