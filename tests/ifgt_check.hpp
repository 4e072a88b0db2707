#pragma once
// What the IFGT tests of both backends share: a float64 direct sum, clustered data, mixed-sign
// weights, and check_ifgt, which runs the IFGT through the public API and asserts the guarantee
// |G_ifgt(y) - G(y)| <= eps * sum|q| on every target (or, where the IFGT refuses, the refusal's
// form and auto's fallback to direct).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <simkit/context.hpp>
#include <simkit/error.hpp>
#include <simkit/gauss.hpp>

#include "reference.hpp"

namespace simkit::test {

/// Float64 direct sum on all hardware threads (targets split in contiguous ranges).
inline std::vector<double> reference(const Matrix<float>& X, const std::vector<double>& q, const Matrix<float>& Y,
                                     double h) {
  std::vector<double> out(static_cast<size_t>(Y.rows()));
  const int64_t d = X.cols();
  auto work = [&](int64_t lo, int64_t hi) {
    for (int64_t j = lo; j < hi; ++j) {
      double acc = 0;
      for (int64_t i = 0; i < X.rows(); ++i) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c) {
          const double t = double(Y(j, c)) - double(X(i, c));
          s += t * t;
        }
        acc += q[static_cast<size_t>(i)] * std::exp(-s / (h * h));
      }
      out[static_cast<size_t>(j)] = acc;
    }
  };
  const int64_t T = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> team;
  for (int64_t t = 0; t < T; ++t) team.emplace_back(work, Y.rows() * t / T, Y.rows() * (t + 1) / T);
  for (auto& th : team) th.join();
  return out;
}

/// `blobs` tight Gaussian blobs (sd `spread`) around random centres in the unit cube.
inline Matrix<float> blob_points(int64_t rows, int64_t d, int blobs, double spread, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, spread);
  std::vector<double> centres(static_cast<size_t>(blobs * d));
  for (double& c : centres) c = u(rng);
  Matrix<float> m(rows, d);
  for (int64_t i = 0; i < rows; ++i) {
    const auto b = static_cast<int64_t>(rng() % static_cast<uint32_t>(blobs));
    for (int64_t c = 0; c < d; ++c) m(i, c) = static_cast<float>(centres[static_cast<size_t>(b * d + c)] + g(rng));
  }
  return m;
}

inline std::vector<double> mixed_weights(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> q(static_cast<size_t>(n));
  for (double& w : q) w = u(rng);
  return q;
}

struct Outcome {
  bool feasible = false;
  double max_error = 0;  // max_j |G_ifgt - G| / sum|q|
};

/// Runs the IFGT through the public API; asserts the guarantee on every target when feasible,
/// and the refusal's form (and auto's fallback) when not.
inline Outcome check_ifgt(const Context& ctx, const std::string& name, const Matrix<float>& X,
                          const std::vector<double>& q, const Matrix<float>& Y, double h, double eps) {
  SCOPED_TRACE(name);
  GaussOptions opt;
  opt.method = GaussMethod::ifgt;
  opt.eps = eps;
  Outcome res;
  GaussReport rep;
  std::vector<double> got;
  try {
    got = gauss_transform(ctx, X.view(), q, Y.view(), h, opt, &rep);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("cannot meet"), std::string::npos) << e.what();
    std::printf("  %-34s infeasible: %s\n", name.c_str(), e.what());
    opt.method = GaussMethod::automatic;
    GaussReport auto_rep;
    gauss_transform(ctx, X.view(), q, Y.view(), h, opt, &auto_rep);
    EXPECT_EQ(auto_rep.method, GaussMethod::direct);
    EXPECT_NE(auto_rep.note.find("infeasible"), std::string::npos) << auto_rep.note;
    return res;
  }
  res.feasible = true;
  EXPECT_EQ(rep.method, GaussMethod::ifgt);
  EXPECT_GE(rep.clusters, 1);
  EXPECT_GE(rep.order, 1);
  EXPECT_GT(rep.cutoff_radius, 0);
  EXPECT_LE(rep.error_bound, eps);
  const std::vector<double> want = reference(X, q, Y, h);
  double sum_abs = 0;
  for (double w : q) sum_abs += std::fabs(w);
  int64_t worst = 0;
  for (int64_t j = 0; j < Y.rows(); ++j) {
    const double err = std::fabs(got[static_cast<size_t>(j)] - want[static_cast<size_t>(j)]);
    if (err > res.max_error * sum_abs) {
      res.max_error = err / sum_abs;
      worst = j;
    }
  }
  std::printf("  %-34s K = %5lld  p = %2d  r = %.4f  bound = %.3e  measured = %.3e  (eps = %.0e)\n", name.c_str(),
              static_cast<long long>(rep.clusters), rep.order, rep.cutoff_radius, rep.error_bound, res.max_error, eps);
  EXPECT_LE(res.max_error, eps) << "worst target " << worst << ": ifgt " << got[static_cast<size_t>(worst)]
                                << " vs direct " << want[static_cast<size_t>(worst)];
  // The bound is a theorem about exact arithmetic; rounding may add ~1e-15 on top.
  EXPECT_LE(res.max_error, rep.error_bound + 1e-13);
  return res;
}

/// Data that stresses the clustering, checked by a backend's `check(name, X, q, Y, h, eps)`:
/// one source; three sources (each may be its own cluster); every source at one point (the
/// radius is 0 after one centre, so p = 1 is exact); data far from the origin.
template <class Check>
void check_degenerate_data(Check check) {
  EXPECT_TRUE(check("single source", uniform_points(1, 3, 71), {0.7}, uniform_points(50, 3, 73), 0.3, 1e-6).feasible);
  EXPECT_TRUE(check("three sources", uniform_points(3, 2, 72), {1.0, -2.0, 0.5}, uniform_points(41, 2, 74), 0.3, 1e-6)
                  .feasible);
  Matrix<float> same(500, 2);
  for (int64_t i = 0; i < 500; ++i) {
    same(i, 0) = 0.25f;
    same(i, 1) = 0.75f;
  }
  EXPECT_TRUE(check("identical sources", same, mixed_weights(500, 75), uniform_points(300, 2, 76), 0.1, 1e-6).feasible);
  Matrix<float> far = uniform_points(3000, 3, 77), far_y = uniform_points(1000, 3, 78);
  for (int64_t i = 0; i < far.size(); ++i) far.data()[i] = 1000.0f + 4.0f * far.data()[i];
  for (int64_t i = 0; i < far_y.size(); ++i) far_y.data()[i] = 1000.0f + 4.0f * far_y.data()[i];
  check("offset 1000, spread 4, d=3 h=1.5", far, mixed_weights(3000, 79), far_y, 1.5, 1e-6);
}

}  // namespace simkit::test
