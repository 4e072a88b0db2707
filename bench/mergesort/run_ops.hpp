#pragma once
// The two steps every version of the study is built from -- sorting one run by insertion and
// walking the merge path of two sorted runs -- written once for the host and the device, so the
// sequential version and the kernels differ only in how they hand out runs, as in the seed.

#include <cstdint>

#ifdef __CUDACC__
#define SIMKIT_STUDY_HD __host__ __device__
#else
#define SIMKIT_STUDY_HD
#endif

namespace simkit::mergesort::detail {

/// Insertion sort of v[0, len): the seed's base case (section 2.2) and its insertion kernel's
/// per-thread work (3.3): quadratic, but cheap on the short runs size_i makes.
SIMKIT_STUDY_HD inline void insertion_sort(int32_t* v, int64_t len) {
  for (int64_t i = 1; i < len; ++i) {
    const int32_t key = v[i];
    int64_t j = i;
    for (; j > 0 && v[j - 1] > key; --j) v[j] = v[j - 1];
    v[j] = key;
  }
}

/// Writes `count` keys of the merge of a[0, na) and b[0, nb) to out, starting from the merge path
/// point (i, j): i keys of a and j of b already lie before out. On equal keys a's goes first
/// (stable), the `<=` of a classic merge. Starting at (0, 0) with count = na + nb is the whole
/// merge of the seed's first version; a later start is a Merge Path thread's slice.
SIMKIT_STUDY_HD inline void merge_steps(const int32_t* a, int64_t na, const int32_t* b, int64_t nb, int64_t i,
                                        int64_t j, int32_t* out, int64_t count) {
  for (int64_t k = 0; k < count; ++k) out[k] = j >= nb || (i < na && a[i] <= b[j]) ? a[i++] : b[j++];
}

/// How many keys of a lie among the first `diag` keys of the merge of a and b: where the merge
/// path crosses diagonal `diag` of the seed's matrix (section 3.4, Figure 7, entry (i, j) = 1 when
/// a[i] > b[j]). Along the diagonal "a[m] goes before b[diag - 1 - m]" holds for a prefix of m and
/// fails after it, so the crossing is found by binary search in O(log min(na, nb)) reads.
SIMKIT_STUDY_HD inline int64_t path_crossing(const int32_t* a, int64_t na, const int32_t* b, int64_t nb, int64_t diag) {
  int64_t lo = diag > nb ? diag - nb : 0, hi = diag < na ? diag : na;
  while (lo < hi) {
    const int64_t m = lo + (hi - lo) / 2;
    if (a[m] <= b[diag - 1 - m])
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}

/// The pair of runs a level of run width `width` merges into output position `pos`: a = [base,
/// mid), b = [mid, end), clipped to n, so the last pair may be short or have an empty b.
struct RunPair {
  int64_t base, mid, end;
};

SIMKIT_STUDY_HD inline RunPair pair_around(int64_t pos, int64_t width, int64_t n) {
  const int64_t base = pos / (2 * width) * (2 * width);
  const int64_t mid = base + width < n ? base + width : n;
  const int64_t end = base + 2 * width < n ? base + 2 * width : n;
  return {base, mid, end};
}

}  // namespace simkit::mergesort::detail
