#pragma once
// Low-dimensional point sets that stress an exact neighbour search: uniform, clustered (eight
// tight Gaussian blobs), duplicate-heavy (a 7^d grid, many exact ties) and collinear (every row on
// one line). Shared by the CPU and GPU tree tests.

#include <cstdint>
#include <random>
#include <vector>

#include <simkit/matrix.hpp>

namespace simkit::test {

enum class Shape { uniform, clustered, duplicates, collinear };

inline const char* name(Shape s) {
  return s == Shape::uniform      ? "uniform"
         : s == Shape::clustered  ? "clustered"
         : s == Shape::duplicates ? "duplicates"
                                  : "collinear";
}

inline Matrix<float> points(Shape shape, int64_t n, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::normal_distribution<float> g(0.f, 0.02f);
  Matrix<float> P(n, d);
  std::vector<float> centres(size_t(8 * d));
  for (float& c : centres) c = u(rng);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < d; ++c) {
      switch (shape) {
        case Shape::uniform: P(i, c) = u(rng); break;
        case Shape::clustered: P(i, c) = centres[size_t((i % 8) * d + c)] + g(rng); break;
        case Shape::duplicates: P(i, c) = float(int(u(rng) * 3)) / 3.f; break;  // 7^d distinct points
        case Shape::collinear: P(i, c) = c == 0 ? u(rng) : 0.5f * P(i, 0) - 0.25f; break;
      }
    }
  return P;
}

}  // namespace simkit::test
