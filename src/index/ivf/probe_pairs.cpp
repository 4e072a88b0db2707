#include "index/ivf/probe_pairs.hpp"

#include <algorithm>
#include <numeric>

namespace simkit::detail {

void group_pairs_by_list(const int64_t* probes, int64_t count, int64_t nlist, std::vector<int64_t>& start,
                         std::vector<int64_t>& pairs) {
  start.assign(static_cast<size_t>(nlist + 1), 0);
  for (int64_t p = 0; p < count; ++p) ++start[static_cast<size_t>(probes[p] + 1)];
  std::partial_sum(start.begin(), start.end(), start.begin());
  pairs.resize(static_cast<size_t>(count));
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t p = 0; p < count; ++p) pairs[static_cast<size_t>(fill[static_cast<size_t>(probes[p])]++)] = p;
}

}  // namespace simkit::detail
