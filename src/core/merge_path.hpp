#pragma once
// Merge path (Green, McColl and Bader, 2012): the merge of sorted a (na) and b (nb) is a
// monotone path through the na x nb grid, and its crossing with diagonal i + j = d says how
// many of the first d outputs come from a. Cutting the output into equal pieces at their
// diagonals splits the merge into independent pieces of exactly equal size, whatever the data.
//
// Stability: of equal keys, a's come first. So output d takes a[i] unless b[j] < a[i], and the
// split of diagonal d is the least i such that b[d - 1 - i] < a[i] (or the end of the range).

#include <cstdint>

#include "hd.hpp"

namespace simkit::detail {

/// The number of a's elements among the first d outputs of the stable merge, 0 <= d <= na + nb.
/// at_a(i) and at_b(j) read the two sequences (arrays, or an implicit one such as 0, 1, 2, ...).
template <class AtA, class AtB, class Less>
SIMKIT_HD int64_t merge_path_split(int64_t d, int64_t na, int64_t nb, AtA at_a, AtB at_b, Less less) {
  int64_t lo = d > nb ? d - nb : 0;
  int64_t hi = d < na ? d : na;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    // a[mid] goes before b[d - 1 - mid] (the split lies beyond mid) unless b's is smaller.
    if (less(at_b(d - 1 - mid), at_a(mid)))
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

/// The stable merge of a[0, na) and b[0, nb) written to out; `take(from_a, index, position)`
/// is called for every output position in order. Serial: one piece of a merge-path split.
template <class AtA, class AtB, class Less, class Take>
SIMKIT_HD void serial_merge(int64_t na, int64_t nb, AtA at_a, AtB at_b, Less less, Take take) {
  int64_t i = 0, j = 0, p = 0;
  while (i < na && j < nb) {
    if (less(at_b(j), at_a(i)))
      take(false, j++, p++);
    else
      take(true, i++, p++);
  }
  while (i < na) take(true, i++, p++);
  while (j < nb) take(false, j++, p++);
}

}  // namespace simkit::detail
