#pragma once
// The walk's AVX-512 kernels, picked at run time: the library is compiled for x86-64-v3
// (AVX2), so these carry their own target attribute and are called only where
// hnsw_avx512() says the CPU has the instructions. hnsw_distance.hpp falls back to its
// AVX2 loops elsewhere.
//
// Float pairs (float32 storage): 16 lanes, four accumulators -- two loads and an FMA per cycle
// in flight, as the AVX2 loops with half the instructions. Measured on WordNet (117,659 x 384,
// cosine, m 16, ef_construction 200, 2 threads, 10,000 queries, one run on a loaded shared
// machine), queries/s AVX2 -> AVX-512: ef 16 9,724 -> 10,299; ef 48 4,635 -> 4,795; ef 128
// 2,253 -> 2,463. A few percent: the float32 walk waits on memory (1,536 bytes a row), not
// arithmetic -- which is what sq8 addresses.
//
// uint8 codes (sq8 storage, hnsw_sq8.hpp): the query arrives already scaled by the quantizer's
// steps, so a code row needs only q'.c. Two ways, both here: the float query times the codes
// widened in-register (16 codes -> 16 floats per FMA), and the query quantized to int8 times the
// codes by VNNI's vpdpbusd (64 code bytes per instruction). Same run as above, queries/s float
// widening -> VNNI: ef 16 15,242 -> 17,346; ef 48 6,798 -> 7,595; ef 128 4,063 -> 4,572, recall
// equal to the fourth digit (the re-rank absorbs the query's rounding): VNNI is used.

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

// GCC 12's AVX-512 headers build their "undefined" registers as `__m512 __Y = __Y;`, which
// -Wuninitialized reports (a compiler bug, GCC PR 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace simkit::detail::cpu::hnsw {

/// Whether the AVX-512 kernels may run: every extension SIMKIT_AVX512 compiles them for (F, BW,
/// VL, DQ, and VNNI for the int8 codes), or a CPU with one missing would fault on them.
/// SIMKIT_HNSW_AVX2=1 turns them off, to measure the AVX2 path on the same machine.
inline bool hnsw_avx512() {
  static const bool ok = !std::getenv("SIMKIT_HNSW_AVX2") && __builtin_cpu_supports("avx512f") &&
                         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
  return ok;
}

#define SIMKIT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq")))

SIMKIT_AVX512 inline float dot512(const float* a, const float* b, int64_t d) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= d; i += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
  }
  for (; i + 16 <= d; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
  if (i < d) {  // the tail, masked: no scalar loop
    const __mmask16 k = static_cast<__mmask16>((1u << (d - i)) - 1);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i), s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

SIMKIT_AVX512 inline float sqdist512(const float* a, const float* b, int64_t d) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int64_t i = 0;
  for (; i + 64 <= d; i += 64) {
    const __m512 u0 = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    const __m512 u1 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
    const __m512 u2 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32));
    const __m512 u3 = _mm512_sub_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48));
    s0 = _mm512_fmadd_ps(u0, u0, s0), s1 = _mm512_fmadd_ps(u1, u1, s1);
    s2 = _mm512_fmadd_ps(u2, u2, s2), s3 = _mm512_fmadd_ps(u3, u3, s3);
  }
  for (; i + 16 <= d; i += 16) {
    const __m512 u = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    s0 = _mm512_fmadd_ps(u, u, s0);
  }
  if (i < d) {
    const __mmask16 k = static_cast<__mmask16>((1u << (d - i)) - 1);
    const __m512 u = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i));
    s1 = _mm512_fmadd_ps(u, u, s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

/// q'.c over uint8 codes, the codes widened to float in-register.
SIMKIT_AVX512 inline float dot_u8_512(const float* q, const uint8_t* c, int64_t d) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  int64_t i = 0;
  for (; i + 32 <= d; i += 32) {
    const __m512 c0 =
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i))));
    const __m512 c1 =
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i + 16))));
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), c0, s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), c1, s1);
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
  for (; i < d; ++i) s += q[i] * static_cast<float>(c[i]);
  return s;
}

/// sum |qa_t - step_t c_t| (l1 under sq8: qa = q - lo).
SIMKIT_AVX512 inline float l1_u8_512(const float* qa, const float* step, const uint8_t* c, int64_t d) {
  __m512 s0 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    const __m512 ci =
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + i))));
    const __m512 y = _mm512_fnmadd_ps(_mm512_loadu_ps(step + i), ci, _mm512_loadu_ps(qa + i));
    s0 = _mm512_add_ps(s0, _mm512_abs_ps(y));
  }
  float s = _mm512_reduce_add_ps(s0);
  for (; i < d; ++i) s += std::fabs(qa[i] - step[i] * static_cast<float>(c[i]));
  return s;
}

/// q8.c in int32 by vpdpbusd: codes unsigned, query signed int8; `d` padded to 64 by the
/// caller (the code rows and the quantized query are, with zeros).
SIMKIT_AVX512 inline int32_t dot_u8s8_vnni(const int8_t* q, const uint8_t* c, int64_t d64) {
  __m512i s0 = _mm512_setzero_si512(), s1 = s0;
  int64_t i = 0;
  for (; i + 128 <= d64; i += 128) {
    s0 = _mm512_dpbusd_epi32(s0, _mm512_loadu_si512(c + i), _mm512_loadu_si512(q + i));
    s1 = _mm512_dpbusd_epi32(s1, _mm512_loadu_si512(c + i + 64), _mm512_loadu_si512(q + i + 64));
  }
  if (i < d64) s0 = _mm512_dpbusd_epi32(s0, _mm512_loadu_si512(c + i), _mm512_loadu_si512(q + i));
  return _mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));
}

}  // namespace simkit::detail::cpu::hnsw

#pragma GCC diagnostic pop
