#pragma once
// What the n-body tests compare against: random bodies, the float64 field written out pair by
// pair, and the two error measures (against the sum of the pair magnitudes, which float32
// accumulation can promise; and relative to |a|, the usual Barnes-Hut force error).

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include <simkit/matrix.hpp>

namespace simkit::test {

/// n bodies uniform in the cube [-1, 1)^3 with masses in [0.5, 1.5).
inline Matrix<float> random_bodies(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> pos(-1.f, 1.f), mass(0.5f, 1.5f);
  Matrix<float> B(n, 4);
  for (int64_t i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) B(i, c) = pos(rng);
    B(i, 3) = mass(rng);
  }
  return B;
}

struct NbodyReference {
  std::vector<double> ax, ay, az, phi, scale;
};

/// The float64 field of `sources` at the first three columns of each target row.
inline NbodyReference nbody_reference(const Matrix<float>& targets, const Matrix<float>& sources, double G,
                                      double eps) {
  NbodyReference r;
  const int64_t m = targets.rows();
  for (auto* v : {&r.ax, &r.ay, &r.az, &r.phi, &r.scale}) v->assign(size_t(m), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < sources.rows(); ++j) {
      const double dx = double(sources(j, 0)) - targets(i, 0), dy = double(sources(j, 1)) - targets(i, 1),
                   dz = double(sources(j, 2)) - targets(i, 2);
      const double d2 = dx * dx + dy * dy + dz * dz;
      if (d2 == 0) continue;
      const double r2 = d2 + eps * eps, inv = 1 / std::sqrt(r2), w = G * sources(j, 3) * inv;
      r.ax[size_t(i)] += w * inv * inv * dx, r.ay[size_t(i)] += w * inv * inv * dy,
          r.az[size_t(i)] += w * inv * inv * dz;
      r.phi[size_t(i)] -= w;
      r.scale[size_t(i)] += w * inv;
    }
  return r;
}

/// Worst acceleration error against the pair-magnitude scale, and worst relative potential
/// error (`phi` empty: 0).
inline std::pair<double, double> scaled_errors(const Matrix<float>& accel, const std::vector<float>& phi,
                                               const NbodyReference& r) {
  double ea = 0, ep = 0;
  for (int64_t i = 0; i < accel.rows(); ++i) {
    const double dx = accel(i, 0) - r.ax[size_t(i)], dy = accel(i, 1) - r.ay[size_t(i)],
                 dz = accel(i, 2) - r.az[size_t(i)];
    const double scale = std::max(r.scale[size_t(i)], 1e-30);
    ea = std::max(ea, std::sqrt(dx * dx + dy * dy + dz * dz) / scale);
    if (std::isnan(accel(i, 0))) ea = INFINITY;
    if (phi.empty()) continue;
    const double p = std::fabs(r.phi[size_t(i)]);
    ep = std::max(ep, p > 0 ? std::fabs(phi[size_t(i)] - r.phi[size_t(i)]) / p : std::fabs(phi[size_t(i)]));
  }
  return {ea, ep};
}

/// Relative force errors |a - ref| / |ref| per body: median and maximum.
inline std::pair<double, double> force_errors(const Matrix<float>& a, const Matrix<float>& ref) {
  std::vector<double> e;
  for (int64_t i = 0; i < a.rows(); ++i) {
    double d = 0, r = 0;
    for (int c = 0; c < 3; ++c) d += (a(i, c) - ref(i, c)) * (a(i, c) - ref(i, c)), r += ref(i, c) * ref(i, c);
    e.push_back(std::isnan(a(i, 0)) ? INFINITY : std::sqrt(d / std::max(r, 1e-300)));
  }
  std::sort(e.begin(), e.end());
  return {e[e.size() / 2], e.back()};
}

}  // namespace simkit::test
