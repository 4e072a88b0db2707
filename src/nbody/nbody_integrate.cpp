// The n-body integrator, its diagnostics and its initial conditions (simkit/nbody.hpp). All on
// the host; the forces come from nbody_accel on whichever device the Context names.

#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/nbody.hpp>

#include "core/expects.hpp"

namespace simkit {

namespace {

/// Plummer sphere of n bodies of mass `mass` each (Aarseth, Henon & Wielen 1974), in units of
/// the scale length a = 1 and G M = 1; rescaled to Henon units by the caller.
void plummer(int64_t n, double mass, std::mt19937_64& rng, float* B, float* V) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  auto direction = [&](double len, float* out) {
    const double z = 2 * u(rng) - 1, phi = 2 * std::numbers::pi * u(rng), s = std::sqrt(1 - z * z);
    out[0] = float(len * s * std::cos(phi)), out[1] = float(len * s * std::sin(phi)), out[2] = float(len * z);
  };
  for (int64_t i = 0; i < n; ++i) {
    double r = 0;
    do {  // the cumulative mass M(r) = r^3 / (1 + r^2)^(3/2) inverted; radii past 10 redrawn
      const double x = u(rng);
      r = 1 / std::sqrt(std::pow(x, -2.0 / 3.0) - 1);
    } while (!(r < 10));
    direction(r, B + i * 4);
    B[i * 4 + 3] = float(mass);
    double q = 0;
    for (;;) {  // von Neumann rejection for g(q) = q^2 (1 - q^2)^(7/2), max below 0.1
      q = u(rng);
      if (0.1 * u(rng) < q * q * std::pow(1 - q * q, 3.5)) break;
    }
    direction(q * std::sqrt(2.0) * std::pow(1 + r * r, -0.25), V + i * 3);
  }
}

/// Moves the centre of mass to the origin and brings it to rest.
void centre(Matrix<float>& B, Matrix<float>& V) {
  double c[6] = {0, 0, 0, 0, 0, 0}, M = 0;
  for (int64_t i = 0; i < B.rows(); ++i) {
    M += B(i, 3);
    for (int k = 0; k < 3; ++k) c[k] += double(B(i, 3)) * B(i, k), c[3 + k] += double(B(i, 3)) * V(i, k);
  }
  for (int64_t i = 0; i < B.rows(); ++i)
    for (int k = 0; k < 3; ++k) B(i, k) = float(B(i, k) - c[k] / M), V(i, k) = float(V(i, k) - c[3 + k] / M);
}

}  // namespace

NbodySystem nbody_initial(const std::string& kind, int64_t n, uint64_t seed) {
  SIMKIT_EXPECTS(n >= 2 && n <= (int64_t(1) << 30), invalid_argument, "nbody: n must be in 2 .. 2^30, got ", n);
  NbodySystem s{Matrix<float>(n, 4), Matrix<float>(n, 3)};
  std::mt19937_64 rng(seed);
  // Henon units: the Plummer scale length a = 3 pi / 16, velocities by sqrt(16 / (3 pi)).
  const double length = 3 * std::numbers::pi / 16, speed = std::sqrt(16 / (3 * std::numbers::pi));
  auto to_henon = [&](int64_t first, int64_t count) {
    for (int64_t i = first; i < first + count; ++i)
      for (int k = 0; k < 3; ++k) s.bodies(i, k) *= float(length), s.velocities(i, k) *= float(speed);
  };
  if (kind == "plummer") {
    plummer(n, 1.0 / double(n), rng, s.bodies.data(), s.velocities.data());
    to_henon(0, n);
  } else if (kind == "uniform") {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < n; ++i) {
      float p[3];
      do p[0] = u(rng), p[1] = u(rng), p[2] = u(rng);
      while (p[0] * p[0] + p[1] * p[1] + p[2] * p[2] > 1.f);
      for (int k = 0; k < 3; ++k) s.bodies(i, k) = p[k], s.velocities(i, k) = 0.f;
      s.bodies(i, 3) = float(1.0 / double(n));
    }
  } else if (kind == "collision") {
    SIMKIT_EXPECTS(n >= 4, invalid_argument, "nbody: a collision needs n >= 4, got ", n);
    const int64_t half = n / 2;
    plummer(half, 1.0 / double(n), rng, s.bodies.data(), s.velocities.data());
    plummer(n - half, 1.0 / double(n), rng, s.bodies.data() + half * 4, s.velocities.data() + half * 3);
    to_henon(0, n);
    for (int64_t i = 0; i < n; ++i) {
      const float side = i < half ? -1.f : 1.f;
      s.bodies(i, 0) += side * 3.f, s.velocities(i, 0) -= side * 0.3f;
    }
  } else {
    detail::raise(ErrorCode::invalid_argument, "nbody: unknown initial conditions '", kind,
                  "' (plummer, uniform, collision)");
  }
  centre(s.bodies, s.velocities);
  return s;
}

NbodyDiagnostics nbody_diagnostics(const Context& ctx, MatrixView<const float> bodies,
                                   MatrixView<const float> velocities, const NbodyOptions& options) {
  SIMKIT_EXPECTS(velocities.rows == bodies.rows && velocities.cols == 3, invalid_argument, "nbody: velocities must be ",
                 bodies.rows, " x 3, got ", velocities.rows, " x ", velocities.cols);
  Matrix<float> accel(bodies.rows, 3);
  std::vector<float> phi(static_cast<size_t>(bodies.rows));
  nbody_accel(ctx, bodies, accel.view(), ArrayView<float>(phi), options);
  NbodyDiagnostics d;
  for (int64_t i = 0; i < bodies.rows; ++i) {
    const double m = bodies.row(i)[3];
    const float* v = velocities.row(i);
    d.kinetic += 0.5 * m * (double(v[0]) * v[0] + double(v[1]) * v[1] + double(v[2]) * v[2]);
    d.potential += 0.5 * m * phi[size_t(i)];
    for (int k = 0; k < 3; ++k) d.momentum[k] += m * v[k];
  }
  d.total = d.kinetic + d.potential;
  return d;
}

void nbody_leapfrog(const Context& ctx, MatrixView<float> bodies, MatrixView<float> velocities, double dt,
                    int64_t steps, const NbodyOptions& options, const std::function<void(int64_t)>& after_step) {
  SIMKIT_EXPECTS(bodies.cols == 4 && bodies.where == Memory::host, invalid_argument,
                 "nbody: bodies must be n x 4 host rows (x, y, z, mass), got ", bodies.rows, " x ", bodies.cols);
  SIMKIT_EXPECTS(velocities.rows == bodies.rows && velocities.cols == 3 && velocities.where == Memory::host,
                 invalid_argument, "nbody: velocities must be ", bodies.rows, " x 3 host rows, got ", velocities.rows,
                 " x ", velocities.cols);
  SIMKIT_EXPECTS(std::isfinite(dt) && dt > 0, invalid_argument, "nbody: dt must be finite and > 0, got ", dt);
  SIMKIT_EXPECTS(steps >= 0, invalid_argument, "nbody: steps must be >= 0, got ", steps);
  const int64_t n = bodies.rows;
  Matrix<float> accel(n, 3);
  const MatrixView<const float> B{bodies.data, n, 4, Memory::host};
  nbody_accel(ctx, B, accel.view(), {}, options);
  const float half = float(0.5 * dt), full = float(dt);
  for (int64_t step = 1; step <= steps; ++step) {
    for (int64_t i = 0; i < n; ++i)
      for (int k = 0; k < 3; ++k) {
        velocities.row(i)[k] += half * accel(i, k);
        bodies.row(i)[k] += full * velocities.row(i)[k];
      }
    nbody_accel(ctx, B, accel.view(), {}, options);
    for (int64_t i = 0; i < n; ++i)
      for (int k = 0; k < 3; ++k) velocities.row(i)[k] += half * accel(i, k);
    if (after_step) after_step(step);
  }
}

}  // namespace simkit
