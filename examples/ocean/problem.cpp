// The model problem (forcing, boundary values), the discrete-sine-transform reference solution,
// and the small helpers both solvers share.

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ocean.hpp"

namespace ocean {
namespace {

// Two wind-driven gyres: a positive and a negative Gaussian bump, off-centre so the solution
// has no symmetry a layout or colouring bug could hide behind.
double forcing(double x, double y) {
  const double width = 0.02;
  const double cyclonic = std::exp(-((x - 0.3) * (x - 0.3) + (y - 0.62) * (y - 0.62)) / width);
  const double anticyclonic = std::exp(-((x - 0.68) * (x - 0.68) + (y - 0.35) * (y - 0.35)) / width);
  return 60.0 * (cyclonic - anticyclonic);
}

double boundary_value(double x, double y) { return x * x - y * y + 0.5 * x * y; }

using Dense = std::vector<double>;  // n x n, row-major

// c = a * b for n x n matrices; the i-k-j order keeps the inner loop contiguous.
Dense multiply(const Dense& a, const Dense& b, int n) {
  Dense c(static_cast<size_t>(n) * n, 0.0);
#pragma omp parallel for schedule(static)
  for (int i = 0; i < n; ++i) {
    double* c_row = &c[static_cast<size_t>(i) * n];
    for (int k = 0; k < n; ++k) {
      const double a_ik = a[static_cast<size_t>(i) * n + k];
      const double* b_row = &b[static_cast<size_t>(k) * n];
      for (int j = 0; j < n; ++j) c_row[j] += a_ik * b_row[j];
    }
  }
  return c;
}

}  // namespace

const char* to_string(Layout layout) { return layout == Layout::row_major ? "row" : "block"; }

double Problem::boundary_at(int i, int j) const {
  const double x = (j + 1) * h, y = (i + 1) * h;
  return boundary_value(std::clamp(x, 0.0, 1.0), std::clamp(y, 0.0, 1.0));
}

Problem make_problem(int n) {
  Problem p;
  p.n = n;
  p.h = 1.0 / (n + 1);
  p.scaled_source.resize(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      p.scaled_source[static_cast<size_t>(i) * n + j] = p.h * p.h * forcing((j + 1) * p.h, (i + 1) * p.h);
  p.south.resize(n), p.north.resize(n), p.west.resize(n), p.east.resize(n);
  for (int k = 0; k < n; ++k) {
    p.south[k] = p.boundary_at(-1, k);
    p.north[k] = p.boundary_at(n, k);
    p.west[k] = p.boundary_at(k, -1);
    p.east[k] = p.boundary_at(k, n);
  }
  return p;
}

// The 5-point operator is A = T (x) I + I (x) T with T = tridiag(-1, 2, -1) of order n, and the
// sine matrix S[k][m] = sqrt(2 / (n + 1)) sin((k + 1)(m + 1) pi / (n + 1)) is symmetric,
// orthogonal and diagonalises T: S T S = diag(lambda). So A u = b, with b the scaled source
// plus the boundary values next to the ring, is U = S ((S B S) ./ (lambda_k + lambda_l)) S.
std::vector<double> reference_solution(const Problem& problem) {
  const int n = problem.n;
  Dense b = problem.scaled_source;
  for (int k = 0; k < n; ++k) {
    b[k] += problem.south[k];
    b[static_cast<size_t>(n - 1) * n + k] += problem.north[k];
    b[static_cast<size_t>(k) * n] += problem.west[k];
    b[static_cast<size_t>(k) * n + n - 1] += problem.east[k];
  }
  Dense sine(static_cast<size_t>(n) * n);
  const double scale = std::sqrt(2.0 / (n + 1)), angle = std::numbers::pi / (n + 1);
  for (int k = 0; k < n; ++k)
    for (int m = 0; m < n; ++m) sine[static_cast<size_t>(k) * n + m] = scale * std::sin((k + 1.0) * (m + 1) * angle);
  std::vector<double> eigenvalue(n);  // 2 - 2 cos(theta), written without cancellation
  for (int k = 0; k < n; ++k) eigenvalue[k] = 4.0 * std::pow(std::sin((k + 1) * angle / 2), 2);

  Dense spectrum = multiply(multiply(sine, b, n), sine, n);
  for (int k = 0; k < n; ++k)
    for (int l = 0; l < n; ++l) spectrum[static_cast<size_t>(k) * n + l] /= eigenvalue[k] + eigenvalue[l];
  return multiply(multiply(sine, spectrum, n), sine, n);
}

// Red-black ordering is consistently ordered, so Young's theory applies: with the Jacobi
// spectral radius cos(pi h), the best omega is 2 / (1 + sin(pi h)).
double optimal_omega(int n) { return 2.0 / (1.0 + std::sin(std::numbers::pi / (n + 1))); }

Tiling default_tiling(int threads) {
  int rows = 1;
  for (int r = 1; r * r <= threads; ++r)
    if (threads % r == 0) rows = r;
  return Tiling{rows, threads / rows};
}

}  // namespace ocean
