// The GPU's Barnes-Hut (binary radix tree, warp-group walk) and the GPU paths that take
// device-resident bodies: against float64 and against the GPU's own direct sum, on awkward
// sizes, coincident bodies (equal Morton codes), targets outside the bodies' box, and bad input
// that lives on the device. Every test skips itself where no GPU answers.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/nbody.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "nbody_check.hpp"

namespace simkit::test {
namespace {

NbodyOptions barnes_hut(double theta, double eps = 0.01) {
  NbodyOptions o{1.0, eps};
  o.method = NbodyMethod::barnes_hut, o.theta = theta;
  return o;
}

TEST(NbodyBarnesHutGpu, ThetaZeroIsTheDirectSumOnAwkwardSizes) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  for (int64_t n : {1, 2, 31, 33, 1000, 4099})
    for (double eps : {0.0, 0.01}) {
      const Matrix<float> B = random_bodies(n, uint64_t(n) * 3 + (eps > 0));
      Matrix<float> accel(n, 3);
      std::vector<float> phi(static_cast<size_t>(n));
      const NbodyReport r = nbody_accel(ctx, B.view(), accel.view(), ArrayView<float>(phi), barnes_hut(0.0, eps));
      const auto [ea, ep] = scaled_errors(accel, phi, nbody_reference(B, B, 1.0, eps));
      EXPECT_LE(ea, 1e-5) << "n " << n << " eps " << eps;
      EXPECT_LE(ep, 1e-5) << "n " << n << " eps " << eps;
      EXPECT_EQ(r.interactions, n * n) << "theta 0: every body of every group's list";
    }
}

TEST(NbodyBarnesHutGpu, ErrorFallsWithThetaAndMatchesTheTreeOnTheCpu) {
  SIMKIT_REQUIRE_GPU();
  const NbodySystem s = nbody_initial("plummer", 20001, 4);
  Matrix<float> direct(20001, 3), bh(20001, 3), cpu(20001, 3);
  nbody_accel(gpu_context(), s.bodies.view(), direct.view(), {}, {1.0, 0.01});
  double last = 0;
  for (double theta : {0.3, 0.5, 0.7, 1.0}) {
    const NbodyReport r = nbody_accel(gpu_context(), s.bodies.view(), bh.view(), {}, barnes_hut(theta));
    const auto [median, worst] = force_errors(bh, direct);
    nbody_accel(cpu_context(), s.bodies.view(), cpu.view(), {}, barnes_hut(theta));
    const double cpu_median = force_errors(cpu, direct).first;
    std::printf(
        "theta %.1f: GPU median %.2e max %.2e (%.0f interactions/body, %.1f bodies per group, %.0f node "
        "tests per group, build %.2f ms walk %.2f ms); CPU median %.2e\n",
        theta, median, worst, double(r.interactions) / 20001, 20001.0 / double(r.groups),
        double(r.nodes_tested) / double(r.groups), r.build_ms, r.walk_ms, cpu_median);
    EXPECT_GT(median, last) << theta;
    EXPECT_LT(median, theta * theta * 0.05) << theta;
    if (theta == 0.5) {
      EXPECT_LE(median, 1e-3);
    }
    EXPECT_LT(r.interactions, int64_t(20001) * 20001 / 2) << theta;
    last = median;
  }
}

TEST(NbodyBarnesHutGpu, TargetsOutsideTheBoxAndCoincidentBodies) {
  SIMKIT_REQUIRE_GPU();
  // 600 bodies on 3 points (equal Morton codes, a tree split by position alone) and 400 spread.
  Matrix<float> S = random_bodies(1000, 8);
  for (int64_t i = 0; i < 600; ++i)
    for (int c = 0; c < 3; ++c) S(i, c) = float(i % 3) * 0.25f;
  Matrix<float> T(77, 3);
  const Matrix<float> T4 = random_bodies(77, 9);
  for (int64_t i = 0; i < 77; ++i)
    for (int c = 0; c < 3; ++c) T(i, c) = T4(i, c) * 4.f;  // most outside the bodies' box
  Matrix<float> accel(77, 3), self(1000, 3);
  std::vector<float> phi(77);
  nbody_field(gpu_context(), T.view(), S.view(), accel.view(), ArrayView<float>(phi), barnes_hut(0.0));
  const auto [ea, ep] = scaled_errors(accel, phi, nbody_reference(T, S, 1.0, 0.01));
  EXPECT_LE(ea, 1e-5);
  EXPECT_LE(ep, 1e-5);
  nbody_accel(gpu_context(), S.view(), self.view(), {}, barnes_hut(0.5));
  Matrix<float> direct(1000, 3);
  nbody_accel(gpu_context(), S.view(), direct.view(), {}, {1.0, 0.01});
  const auto [median, worst] = force_errors(self, direct);
  EXPECT_LE(median, 1e-3);
  EXPECT_TRUE(std::isfinite(worst));
}

TEST(NbodyBarnesHutGpu, DeviceResidentBodiesCostsAndRefusals) {
  SIMKIT_REQUIRE_GPU();
  const Context ctx = gpu_context();
  const NbodySystem s = nbody_initial("collision", 5000, 2);
  const DeviceMatrix<float> bodies(ctx, s.bodies.view());
  DeviceMatrix<float> accel_d(ctx, 5000, 3);
  std::vector<int64_t> costs(5000, 0);
  NbodyOptions o = barnes_hut(0.5);
  o.costs = ArrayView<int64_t>(costs);
  const NbodyReport r = nbody_accel(ctx, bodies.view(), accel_d.view(), {}, o);
  Matrix<float> resident(5000, 3), host(5000, 3);
  accel_d.copy_to_host(resident.view());
  nbody_accel(ctx, s.bodies.view(), host.view(), {}, barnes_hut(0.5));
  EXPECT_TRUE(std::equal(host.data(), host.data() + host.size(), resident.data())) << "same tree, same sums";
  int64_t total = 0;
  for (int64_t c : costs) total += c;
  EXPECT_TRUE(std::all_of(costs.begin(), costs.end(), [](int64_t c) { return c > 0; }));
  EXPECT_EQ(total, r.interactions);
  // The direct sum from the device copy: the same as from the host.
  nbody_accel(ctx, bodies.view(), accel_d.view(), {}, {1.0, 0.01});
  nbody_accel(ctx, s.bodies.view(), host.view(), {}, {1.0, 0.01});
  accel_d.copy_to_host(resident.view());
  EXPECT_TRUE(std::equal(host.data(), host.data() + host.size(), resident.data()));
  // Bad values on the device are found there, named as on the host, and nothing is written.
  Matrix<float> bad = s.bodies;
  bad(4321, 2) = NAN;
  const DeviceMatrix<float> bad_d(ctx, bad.view());
  Matrix<float> untouched(5000, 3);
  std::fill(untouched.data(), untouched.data() + untouched.size(), 7.f);
  DeviceMatrix<float> out_d(ctx, untouched.view());
  expect_error([&] { nbody_accel(ctx, bad_d.view(), out_d.view(), {}, barnes_hut(0.5)); }, ErrorCode::invalid_argument,
               "bodies row 4321 column 2 is nan");
  bad(4321, 2) = 0.f, bad(17, 3) = -2.f;
  const DeviceMatrix<float> negative_d(ctx, bad.view());
  expect_error([&] { nbody_accel(ctx, negative_d.view(), out_d.view()); }, ErrorCode::invalid_argument,
               "bodies row 17 has mass -2");
  out_d.copy_to_host(resident.view());
  EXPECT_TRUE(std::all_of(resident.data(), resident.data() + resident.size(), [](float v) { return v == 7.f; }));
  o.quadrupole = true;
  expect_error([&] { nbody_accel(ctx, s.bodies.view(), host.view(), {}, o); }, ErrorCode::unsupported,
               "quadrupole moments are summed on the CPU only");
}

}  // namespace
}  // namespace simkit::test
