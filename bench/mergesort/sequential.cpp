// The seed's sequential version (section 2.2): its `multisort` recursion -- sort the left part,
// sort the right part, merge them through a scratch buffer -- with insertion sort below size_i.

#include <cstddef>
#include <vector>

#include "mergesort_study.hpp"
#include "run_ops.hpp"
#include "study_args.hpp"

namespace simkit::mergesort {
namespace {

/// Sorts v[lo, hi), a node of the run tree whose runs start at lo. The seed halves [lo, hi),
/// which for a power of two n lands every leaf on a size_i run; here the left child takes the
/// largest power-of-two count of runs that leaves the right child non-empty, which is the same
/// split when n is a power of two and otherwise keeps the leaves on the runs the GPU versions
/// sort, with only the last one short.
void multisort(int32_t* v, int32_t* scratch, int64_t lo, int64_t hi, int64_t size_i) {
  const int64_t len = hi - lo;
  if (len <= size_i) {
    detail::insertion_sort(v + lo, len);
    return;
  }
  int64_t left = size_i;
  while (2 * left < len) left *= 2;
  const int64_t mid = lo + left;
  multisort(v, scratch, lo, mid, size_i);
  multisort(v, scratch, mid, hi, size_i);
  detail::merge_steps(v + lo, mid - lo, v + mid, hi - mid, 0, 0, scratch + lo, len);
  for (int64_t k = lo; k < hi; ++k) v[k] = scratch[k];
}

}  // namespace

void hybrid_sort_sequential(int32_t* v, int64_t n, int64_t size_i) {
  detail::check_sort_args(v, n, size_i);
  if (n < 2) return;
  std::vector<int32_t> scratch(static_cast<size_t>(n));
  multisort(v, scratch.data(), 0, n, size_i);
}

}  // namespace simkit::mergesort
