// The n-body sums (simkit/nbody.hpp) against the float64 reference of nbody_check.hpp: the direct
// sum on both backends on awkward sizes (1, 2, 7, 257, 1031 bodies), with and without softening, the two-set field,
// pairs at distance zero, momentum conservation, and bad input refused with nothing written.
//
// The error of an acceleration is measured against the sum of the pair magnitudes
// G sum_j m_j / (r_j^2 + eps^2) at that body -- what float32 accumulation can promise, since
// cancellation between opposite pulls can make |accel| itself arbitrarily small -- and must stay
// below 1e-5; the potential (one sign, no cancellation) against |potential|, also 1e-5.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/nbody.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "nbody_check.hpp"

namespace simkit::test {
namespace {

class NbodyTest : public BackendTest {};
INSTANTIATE_TEST_SUITE_P(Backends, NbodyTest, ::testing::ValuesIn(kBackends), BackendName{});

TEST_P(NbodyTest, DirectMatchesFloat64OnAwkwardSizes) {
  SIMKIT_REQUIRE_BACKEND(backend());
  double worst_a = 0, worst_p = 0;
  for (int64_t n : {1, 2, 7, 257, 1031})
    for (double eps : {0.0, 0.01}) {
      const Matrix<float> B = random_bodies(n, uint64_t(n) * 7 + (eps > 0));
      Matrix<float> accel(n, 3);
      std::vector<float> phi(static_cast<size_t>(n));
      const NbodyOptions o{0.5, eps};
      nbody_accel(context(), B.view(), accel.view(), ArrayView<float>(phi), o);
      const auto [ea, ep] = scaled_errors(accel, phi, nbody_reference(B, B, o.G, eps));
      EXPECT_LE(ea, 1e-5) << "n " << n << " eps " << eps;
      EXPECT_LE(ep, 1e-5) << "n " << n << " eps " << eps;
      worst_a = std::max(worst_a, ea), worst_p = std::max(worst_p, ep);
      if (n == 1) {
        EXPECT_EQ(accel(0, 0), 0.f);  // alone: no force, no potential
      }
    }
  std::printf("worst error: accel %.2e of the pair-magnitude sum, potential %.2e\n", worst_a, worst_p);
}

TEST_P(NbodyTest, FieldAtOtherTargetsAndAtTheBodiesThemselves) {
  SIMKIT_REQUIRE_BACKEND(backend());
  const Matrix<float> S = random_bodies(300, 11), T4 = random_bodies(37, 12);
  Matrix<float> T(37, 3);
  for (int64_t i = 0; i < 37; ++i)
    for (int c = 0; c < 3; ++c) T(i, c) = T4(i, c) * 3.f;  // some outside the sources' cube
  Matrix<float> accel(37, 3);
  std::vector<float> phi(37);
  nbody_field(context(), T.view(), S.view(), accel.view(), ArrayView<float>(phi), {1.0, 0.02});
  const auto [ea, ep] = scaled_errors(accel, phi, nbody_reference(T, S, 1.0, 0.02));
  EXPECT_LE(ea, 1e-5);
  EXPECT_LE(ep, 1e-5);
  // The bodies as targets of their own field: nbody_accel's result, bit for bit.
  Matrix<float> xyz(300, 3), self(300, 3), own(300, 3);
  for (int64_t i = 0; i < 300; ++i)
    for (int c = 0; c < 3; ++c) xyz(i, c) = S(i, c);
  nbody_field(context(), xyz.view(), S.view(), self.view());
  nbody_accel(context(), S.view(), own.view());
  EXPECT_TRUE(std::equal(self.data(), self.data() + self.size(), own.data()));
}

TEST_P(NbodyTest, PairsAtDistanceZeroContributeNothingAndMomentumIsConserved) {
  SIMKIT_REQUIRE_BACKEND(backend());
  Matrix<float> B(3, 4);
  const float rows[3][4] = {{0, 0, 0, 1}, {0, 0, 0, 2}, {1, 0, 0, 1}};  // two bodies on one point
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 4; ++c) B(i, c) = rows[i][c];
  Matrix<float> accel(3, 3);
  nbody_accel(context(), B.view(), accel.view());
  EXPECT_FLOAT_EQ(accel(0, 0), 1.f);  // only the third body pulls, G m / r^2 = 1
  EXPECT_FLOAT_EQ(accel(1, 0), 1.f);
  EXPECT_FLOAT_EQ(accel(2, 0), -3.f);
  // Newton's third law: sum m_i a_i = 0 up to rounding, on a larger set.
  const Matrix<float> S = random_bodies(513, 5);
  Matrix<float> a(513, 3);
  nbody_accel(context(), S.view(), a.view(), {}, {1.0, 0.05});
  for (int c = 0; c < 3; ++c) {
    double total = 0, scale = 0;
    for (int64_t i = 0; i < 513; ++i) total += double(S(i, 3)) * a(i, c), scale += std::fabs(double(S(i, 3)) * a(i, c));
    EXPECT_LE(std::fabs(total), 1e-5 * scale) << "axis " << c;
  }
}

TEST_P(NbodyTest, BadInputIsRefusedAndNothingWritten) {
  SIMKIT_REQUIRE_BACKEND(backend());
  Matrix<float> B = random_bodies(5, 3);
  Matrix<float> accel(5, 3);
  std::fill(accel.data(), accel.data() + accel.size(), 7.f);
  auto untouched = [&] {
    return std::all_of(accel.data(), accel.data() + accel.size(), [](float v) { return v == 7.f; });
  };
  const Matrix<float> xyz(5, 3);
  expect_error([&] { nbody_accel(context(), xyz.view(), accel.view()); }, ErrorCode::invalid_argument,
               "no masses: add a fourth column");
  B(2, 1) = NAN;
  expect_error([&] { nbody_accel(context(), B.view(), accel.view()); }, ErrorCode::invalid_argument,
               "bodies row 2 column 1 is nan");
  B(2, 1) = 0.f, B(4, 3) = -1.f;
  expect_error([&] { nbody_accel(context(), B.view(), accel.view()); }, ErrorCode::invalid_argument,
               "bodies row 4 has mass -1");
  B(4, 3) = 1.f;
  expect_error(
      [&] {
        nbody_accel(context(), B.view(), accel.view(), {}, {0.0, 0.0});
      },
      ErrorCode::invalid_argument, "G must be finite and > 0");
  expect_error(
      [&] {
        nbody_accel(context(), B.view(), accel.view(), {}, {1.0, -0.1});
      },
      ErrorCode::invalid_argument, "softening must be finite and >= 0");
  Matrix<float> small(4, 3);
  expect_error([&] { nbody_accel(context(), B.view(), small.view()); }, ErrorCode::invalid_argument,
               "accel must be 5 x 3");
  std::vector<float> phi(3);
  expect_error([&] { nbody_accel(context(), B.view(), accel.view(), ArrayView<float>(phi)); },
               ErrorCode::invalid_argument, "potential must hold 5 values");
  Matrix<float> t4(2, 4), a2(2, 3);
  expect_error([&] { nbody_field(context(), t4.view(), B.view(), a2.view()); }, ErrorCode::invalid_argument,
               "targets must be m x 3");
  EXPECT_TRUE(untouched());
}

}  // namespace
}  // namespace simkit::test

namespace simkit::test {
namespace {

// Leapfrog keeps a circular two-body orbit's energy: 1,000 steps of a twentieth of a radian
// (eight orbits' worth of phase error would show as drift; the symplectic scheme only oscillates).
TEST(NbodyIntegrator, TwoBodyOrbitKeepsItsEnergy) {
  // Two masses of 1/2 at distance 1: each circles the centre at radius 1/2 with speed 1/2.
  Matrix<float> B(2, 4), V(2, 3);
  const float b[2][4] = {{-0.5f, 0, 0, 0.5f}, {0.5f, 0, 0, 0.5f}}, v[2][3] = {{0, -0.5f, 0}, {0, 0.5f, 0}};
  for (int i = 0; i < 2; ++i) {
    for (int c = 0; c < 4; ++c) B(i, c) = b[i][c];
    for (int c = 0; c < 3; ++c) V(i, c) = v[i][c];
  }
  const Context ctx = cpu_context();
  const NbodyDiagnostics before = nbody_diagnostics(ctx, B.view(), V.view());
  EXPECT_NEAR(before.total, -0.125, 1e-7);  // K = 1/8, U = -1/4
  double worst = 0;
  const double period = 2 * 3.141592653589793;  // 2 pi r / v
  nbody_leapfrog(ctx, B.view(), V.view(), period / 1000, 1000, {}, [&](int64_t) {
    const NbodyDiagnostics now = nbody_diagnostics(ctx, B.view(), V.view());
    worst = std::max(worst, std::fabs(now.total / before.total - 1));
  });
  EXPECT_LE(worst, 1e-4);
  // After one period the bodies are back where they started, to the scheme's phase error.
  EXPECT_NEAR(B(0, 0), -0.5f, 2e-3f);
  EXPECT_NEAR(B(0, 1), 0.f, 2e-2f);
  std::printf("two-body orbit, 1,000 steps: worst relative energy error %.2e\n", worst);
}

TEST(NbodyIntegrator, PlummerSphereKeepsItsEnergyAndMomentum) {
  NbodySystem s = nbody_initial("plummer", 1000, 42);
  const Context ctx = cpu_context();
  const NbodyOptions o{1.0, 0.05};
  const NbodyDiagnostics before = nbody_diagnostics(ctx, s.bodies.view(), s.velocities.view(), o);
  EXPECT_NEAR(before.kinetic / -before.potential, 0.5, 0.1) << "a Plummer sphere starts in virial equilibrium";
  double worst = 0;
  nbody_leapfrog(ctx, s.bodies.view(), s.velocities.view(), 1.0 / 512, 1000, o, [&](int64_t step) {
    if (step % 50 != 0) return;
    const NbodyDiagnostics now = nbody_diagnostics(ctx, s.bodies.view(), s.velocities.view(), o);
    worst = std::max(worst, std::fabs(now.total / before.total - 1));
    for (int k = 0; k < 3; ++k) EXPECT_LE(std::fabs(now.momentum[k]), 1e-5) << "step " << step;
  });
  EXPECT_LE(worst, 1e-4);
  std::printf("Plummer sphere, 1,000 bodies, 1,000 steps: worst relative energy error %.2e\n", worst);
}

TEST(NbodyIntegrator, InitialConditionsAreDeterministicAndCentred) {
  for (const char* kind : {"plummer", "uniform", "collision"}) {
    const NbodySystem a = nbody_initial(kind, 101, 7), b = nbody_initial(kind, 101, 7);
    EXPECT_TRUE(std::equal(a.bodies.data(), a.bodies.data() + a.bodies.size(), b.bodies.data())) << kind;
    double mass = 0, c[3] = {0, 0, 0};
    for (int64_t i = 0; i < 101; ++i) {
      mass += a.bodies(i, 3);
      for (int k = 0; k < 3; ++k) c[k] += double(a.bodies(i, 3)) * a.bodies(i, k);
    }
    EXPECT_NEAR(mass, 1.0, 1e-5) << kind;
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(c[k], 0.0, 1e-5) << kind;
  }
  expect_error([] { nbody_initial("spiral", 10, 1); }, ErrorCode::invalid_argument, "plummer, uniform, collision");
  Matrix<float> B(2, 4), V(2, 3);
  expect_error([&] { nbody_leapfrog(cpu_context(), B.view(), V.view(), -1, 1); }, ErrorCode::invalid_argument,
               "dt must be finite and > 0");
}

}  // namespace
}  // namespace simkit::test

namespace simkit::test {
namespace {

TEST(NbodyBarnesHut, ThetaZeroIsTheDirectSumAndErrorFallsWithTheta) {
  const NbodySystem s = nbody_initial("plummer", 3001, 9);
  const Context ctx = cpu_context();
  NbodyOptions o{1.0, 0.01};
  Matrix<float> direct(3001, 3), bh(3001, 3);
  nbody_accel(ctx, s.bodies.view(), direct.view(), {}, o);
  o.method = NbodyMethod::barnes_hut;
  o.theta = 0;
  nbody_accel(ctx, s.bodies.view(), bh.view(), {}, o);
  EXPECT_LE(force_errors(bh, direct).second, 1e-5) << "theta = 0 opens every cell: the direct sum";
  double last = 0;
  for (double theta : {0.3, 0.5, 0.7, 1.0}) {
    o.theta = theta;
    const NbodyReport r = nbody_accel(ctx, s.bodies.view(), bh.view(), {}, o);
    const auto [median, worst] = force_errors(bh, direct);
    std::printf("theta %.1f: median force error %.2e, max %.2e, %.1f interactions per body\n", theta, median, worst,
                double(r.interactions) / 3001);
    EXPECT_GT(median, last) << theta;
    EXPECT_LT(median, theta * theta * 0.05) << theta;  // monopole: error ~ theta^2, measured ~1e-3 at 0.5
    EXPECT_LT(r.interactions, int64_t(3001) * 3001);
    last = median;
    o.quadrupole = true;
    nbody_accel(ctx, s.bodies.view(), bh.view(), {}, o);
    const double with_quadrupole = force_errors(bh, direct).first;
    std::printf("          with quadrupoles: median %.2e\n", with_quadrupole);
    EXPECT_LT(with_quadrupole, median) << theta;
    if (theta == 0.5) {
      EXPECT_LE(with_quadrupole, 1e-3);
    }
    o.quadrupole = false;
  }
}

TEST(NbodyBarnesHut, CostZonesBalanceTheThreadsAndCoverEveryBody) {
  // Two colliding spheres: dense cores and sparse outskirts, so bodies cost very different amounts.
  const NbodySystem s = nbody_initial("collision", 4000, 3);
  Context ctx = cpu_context(4);
  std::vector<int64_t> costs(4000, 0);
  NbodyOptions o{1.0, 0.01, NbodyMethod::barnes_hut, 0.5, ArrayView<int64_t>(costs)};
  Matrix<float> a1(4000, 3), a2(4000, 3);
  const NbodyReport first = nbody_accel(ctx, s.bodies.view(), a1.view(), {}, o);  // equal counts, records costs
  EXPECT_TRUE(std::all_of(costs.begin(), costs.end(), [](int64_t c) { return c > 0; }))
      << "every body was walked and counted";
  const NbodyReport second = nbody_accel(ctx, s.bodies.view(), a2.view(), {}, o);  // cost zones
  EXPECT_TRUE(std::equal(a1.data(), a1.data() + a1.size(), a2.data())) << "the split changes no result";
  std::printf("threads %d: imbalance equal-count %.3f, cost zones %.3f\n", second.threads, second.imbalance_equal_count,
              second.imbalance);
  EXPECT_LT(second.imbalance, 1.1);
  EXPECT_LE(second.imbalance, second.imbalance_equal_count);
  EXPECT_EQ(first.interactions, second.interactions);
}

TEST(NbodyBarnesHut, FieldAtOtherTargetsFollowsTheirOrder) {
  // Sources in a Plummer sphere; targets inside and far outside it (codes clamped to the
  // sources' cube), two of them on sources (distance zero: nothing from that source).
  const NbodySystem s = nbody_initial("plummer", 2000, 4);
  const Matrix<float> T4 = random_bodies(300, 21);
  Matrix<float> T(300, 3);
  for (int64_t i = 0; i < 300; ++i)
    for (int c = 0; c < 3; ++c) T(i, c) = T4(i, c) * (i % 3 == 0 ? 40.f : 2.f);
  for (int c = 0; c < 3; ++c) T(7, c) = s.bodies(11, c), T(8, c) = s.bodies(1999, c), T(9, c) = 0.f;
  const Context ctx = cpu_context(2);
  NbodyOptions o{1.0, 0.0, NbodyMethod::barnes_hut, 0.0};
  Matrix<float> accel(300, 3);
  std::vector<float> phi(300);
  nbody_field(ctx, T.view(), s.bodies.view(), accel.view(), ArrayView<float>(phi), o);
  const auto [ea, ep] = scaled_errors(accel, phi, nbody_reference(T, s.bodies, 1.0, 0.0));
  EXPECT_LE(ea, 1e-5) << "theta = 0: the direct sum";
  EXPECT_LE(ep, 1e-5);
  // At theta 0.5, the targets reversed: the forces and the counts come back in the caller's order.
  o.theta = 0.5;
  std::vector<int64_t> costs(300, 0), reversed_costs(300, 0);
  o.costs = ArrayView<int64_t>(costs);
  const NbodyReport r = nbody_field(ctx, T.view(), s.bodies.view(), accel.view(), {}, o);
  Matrix<float> R(300, 3), reversed(300, 3);
  for (int64_t i = 0; i < 300; ++i)
    for (int c = 0; c < 3; ++c) R(i, c) = T(299 - i, c);
  o.costs = ArrayView<int64_t>(reversed_costs);
  nbody_field(ctx, R.view(), s.bodies.view(), reversed.view(), {}, o);
  int64_t total = 0;
  for (int64_t i = 0; i < 300; ++i) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(accel(i, c), reversed(299 - i, c)) << i;
    EXPECT_EQ(costs[size_t(i)], reversed_costs[size_t(299 - i)]) << i;
    EXPECT_GT(costs[size_t(i)], 0) << i;
    total += costs[size_t(i)];
  }
  EXPECT_EQ(total, r.interactions);
  EXPECT_LT(r.interactions, int64_t(300) * 2000) << "cells taken whole";
  Matrix<float> direct(300, 3);
  nbody_field(ctx, T.view(), s.bodies.view(), direct.view());
  EXPECT_LT(force_errors(accel, direct).first, 5e-3);
  o.quadrupole = true, o.costs = {};
  nbody_field(ctx, T.view(), s.bodies.view(), reversed.view(), {}, o);
  EXPECT_LT(force_errors(reversed, direct).first, force_errors(accel, direct).first) << "quadrupoles";
  EXPECT_TRUE(std::all_of(reversed.data(), reversed.data() + reversed.size(), [](float v) { return std::isfinite(v); }))
      << "a target at the origin (where the lists' padding lies)";
  EXPECT_GE(r.build_ms, 0.0);
  EXPECT_GT(r.walk_ms, 0.0);
}

TEST(NbodyBarnesHut, BodiesOnOnePointAddNothingToEachOther) {
  // 100 bodies on one point (more than a leaf holds: 21 levels cannot split them) beside 400
  // others: they pull each other with nothing, the rest as the direct sum says.
  Matrix<float> B = random_bodies(500, 8);
  for (int64_t i = 0; i < 100; ++i)
    for (int c = 0; c < 3; ++c) B(i * 5, c) = 0.25f;
  const Context ctx = cpu_context(2);
  Matrix<float> direct(500, 3), bh(500, 3);
  nbody_accel(ctx, B.view(), direct.view(), {}, {1.0, 0.0});
  for (double theta : {0.0, 0.5}) {
    NbodyOptions o{1.0, 0.0, NbodyMethod::barnes_hut, theta};
    nbody_accel(ctx, B.view(), bh.view(), {}, o);
    EXPECT_TRUE(std::all_of(bh.data(), bh.data() + bh.size(), [](float v) { return std::isfinite(v); })) << theta;
    const auto [median, worst] = force_errors(bh, direct);
    EXPECT_LE(theta == 0 ? worst : median, theta == 0 ? 1e-5 : 5e-3) << theta;
  }
}

TEST(NbodyBarnesHut, CostZonesFollowACollision) {
  // A few leapfrog steps of the collision, the counts of each step splitting the next: the zones
  // stay balanced as the bodies move (the counts are one step old).
  NbodySystem s = nbody_initial("collision", 6000, 5);
  const Context ctx = cpu_context(2);
  std::vector<int64_t> costs(6000, 0);
  const NbodyOptions o{1.0, 0.01, NbodyMethod::barnes_hut, 0.6, ArrayView<int64_t>(costs)};
  nbody_leapfrog(ctx, s.bodies.view(), s.velocities.view(), 0.05, 4, o);
  Matrix<float> a(6000, 3);
  const NbodyReport r = nbody_accel(ctx, s.bodies.view(), a.view(), {}, o);
  std::printf("collision after 4 steps, 2 threads: imbalance equal-count %.3f, cost zones %.3f\n",
              r.imbalance_equal_count, r.imbalance);
  EXPECT_LT(r.imbalance, 1.05);
  EXPECT_LE(r.imbalance, r.imbalance_equal_count);
}

}  // namespace
}  // namespace simkit::test
