#pragma once
// The inverted file's batch inversion, shared by every list scan (CPU and GPU, ivf_flat and
// ivf_pq): a batch's (query, probe) pairs grouped by the list they probe, so each list is read
// once for all the queries that probe it. A counting sort of small integers.

#include <cstdint>
#include <vector>

namespace simkit::detail {

/// probes[p] is the list pair p probes (p = query * nprobe + probe), p < count. On return
/// start[l] .. start[l + 1] (nlist + 1 entries) index `pairs`, which holds the pairs list after
/// list, in pair order within a list.
void group_pairs_by_list(const int64_t* probes, int64_t count, int64_t nlist, std::vector<int64_t>& start,
                         std::vector<int64_t>& pairs);

}  // namespace simkit::detail
