// Counter-based generation: every row draws from its own stream, seeded by hashing (seed, stream
// kind, row), so rows can be produced in any order on any number of threads and still come out
// bit-identical. The stream is splitmix64, whose output passes BigCrush and which needs only a
// 64-bit counter per row.

#include "generate.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numbers>
#include <string>

#include <simkit/error.hpp>

namespace simkit::cli {

namespace {

// The finaliser of splitmix64 / MurmurHash3's fmix64: a bijection that spreads every input bit.
constexpr uint64_t mix64(uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;

// Stream kinds keep the cluster centres, the rows' cluster choice and the rows' coordinates
// independent of each other even when row indices coincide.
enum class Stream : uint64_t { centre = 1, row = 2 };

class RowStream {
 public:
  RowStream(uint64_t seed, Stream kind, uint64_t row) noexcept
      : state_(mix64(mix64(seed ^ (static_cast<uint64_t>(kind) * kGolden)) + row * kGolden)) {}

  uint64_t next() noexcept { return mix64(state_ += kGolden); }

  /// Uniform in [-1, 1) on the 2^24-point float grid, so every value is exactly representable.
  float symmetric_unit() noexcept {
    const auto bits = static_cast<int32_t>(next() >> 40);  // 24 bits
    return static_cast<float>(bits) * 0x1p-23f - 1.0f;
  }

  /// Uniform in [0, bound) without modulo bias (Lemire's multiply-shift with rejection).
  uint64_t below(uint64_t bound) noexcept {
    for (;;) {
      const unsigned __int128 p = static_cast<unsigned __int128>(next()) * bound;
      const auto low = static_cast<uint64_t>(p);
      if (low >= bound || low >= (0 - bound) % bound) return static_cast<uint64_t>(p >> 64);
    }
  }

  /// Two independent standard normals by Box-Muller, in double so the tails are not clipped
  /// by float rounding of the logarithm.
  void normal_pair(double& a, double& b) noexcept {
    const double u1 = static_cast<double>((next() >> 11) + 1) * 0x1p-53;  // (0, 1]: log is finite
    const double u2 = static_cast<double>(next() >> 11) * 0x1p-53;        // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double t = 2.0 * std::numbers::pi * u2;
    a = r * std::cos(t);
    b = r * std::sin(t);
  }

 private:
  uint64_t state_;
};

void fill_uniform(RowStream& s, float* row, int64_t d) {
  for (int64_t j = 0; j < d; ++j) row[j] = s.symmetric_unit();
}

// Adds scale * N(0, 1) to each of d values (pairs from one Box-Muller draw; an odd d drops the
// second normal of the last pair, which keeps row j's values independent of d's parity).
void add_normal(RowStream& s, float* row, int64_t d, double scale) {
  int64_t j = 0;
  for (; j + 1 < d; j += 2) {
    double a, b;
    s.normal_pair(a, b);
    row[j] = static_cast<float>(row[j] + scale * a);
    row[j + 1] = static_cast<float>(row[j + 1] + scale * b);
  }
  if (j < d) {
    double a, b;
    s.normal_pair(a, b);
    row[j] = static_cast<float>(row[j] + scale * a);
  }
}

void normalize_row(float* row, int64_t d) {
  double sum = 0;
  for (int64_t j = 0; j < d; ++j) sum += double(row[j]) * double(row[j]);
  if (sum == 0) return;
  const double inv = 1.0 / std::sqrt(sum);
  for (int64_t j = 0; j < d; ++j) row[j] = static_cast<float>(row[j] * inv);
}

std::string format_float(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(v));
  return buf;
}

void validate(const GenSpec& spec) {
  auto fail = [](const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); };
  if (spec.rows < 1) fail("rows must be at least 1, got " + std::to_string(spec.rows));
  if (spec.dim < 1) fail("dim must be at least 1, got " + std::to_string(spec.dim));
  // The element count must fit both int64 and a size_t allocation with room to spare.
  if (spec.rows > (int64_t{1} << 62) / spec.dim)
    fail("rows x dim = " + std::to_string(spec.rows) + " x " + std::to_string(spec.dim) + " is too large");
  if (spec.distribution == Distribution::clustered) {
    if (spec.clusters < 1) fail("clusters must be at least 1, got " + std::to_string(spec.clusters));
    if (!(spec.std >= 0) || !std::isfinite(spec.std))
      fail("std must be a finite value >= 0, got " + format_float(spec.std));
  }
}

}  // namespace

Matrix<float> generate(const GenSpec& spec) {
  validate(spec);
  const int64_t n = spec.rows, d = spec.dim;
  Matrix<float> out(n, d);
  float* data = out.data();

  Matrix<float> centres;
  if (spec.distribution == Distribution::clustered) {
    centres = Matrix<float>(spec.clusters, d);
    float* c = centres.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < spec.clusters; ++i) {
      RowStream s(spec.seed, Stream::centre, static_cast<uint64_t>(i));
      fill_uniform(s, c + i * d, d);
    }
  }
  const float* c = centres.data();

#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    RowStream s(spec.seed, Stream::row, static_cast<uint64_t>(i));
    float* row = data + i * d;
    switch (spec.distribution) {
      case Distribution::uniform: fill_uniform(s, row, d); break;
      case Distribution::gaussian:
        for (int64_t j = 0; j < d; ++j) row[j] = 0.0f;
        add_normal(s, row, d, 1.0);
        break;
      case Distribution::clustered: {
        const float* centre = c + static_cast<int64_t>(s.below(static_cast<uint64_t>(spec.clusters))) * d;
        for (int64_t j = 0; j < d; ++j) row[j] = centre[j];
        add_normal(s, row, d, spec.std);
        break;
      }
    }
    if (spec.normalize) normalize_row(row, d);
  }
  return out;
}

}  // namespace simkit::cli
