#pragma once
// Portable short vectors (GCC/Clang vector extensions). With -march=x86-64-v3 they compile to
// AVX2 registers; elsewhere the compiler splits them, so no intrinsics and no fallback path.
// Loads go through memcpy: rows are only float-aligned.

#include <cstdint>
#include <cstring>

namespace simkit::detail::simd {

typedef float f8 __attribute__((vector_size(32)));
typedef int32_t i8 __attribute__((vector_size(32)));
typedef float f4 __attribute__((vector_size(16)));
typedef double d4 __attribute__((vector_size(32)));

inline f8 load8(const float* p) {
  f8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Four floats widened to double (exact).
inline d4 load4_as_double(const float* p) {
  f4 v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, d4);
}

/// |v| lane by lane: clear the sign bits.
inline f8 abs8(f8 v) { return reinterpret_cast<f8>(reinterpret_cast<i8>(v) & 0x7fffffff); }

/// Lane sum in double (the lanes are added exactly-rounded one by one).
inline double sum_as_double(f8 v) {
  double s = 0;
  for (int l = 0; l < 8; ++l) s += v[l];
  return s;
}

inline double sum(d4 v) { return (v[0] + v[1]) + (v[2] + v[3]); }

}  // namespace simkit::detail::simd
