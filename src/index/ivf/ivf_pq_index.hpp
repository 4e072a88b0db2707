#pragma once
// The ivf_pq index (include/simkit/index.hpp): construction, its description, loading.

#include <memory>
#include <string>

#include <simkit/index.hpp>

#include "index/index_file.hpp"
#include "index/ivf/ivf_pq_lists.hpp"

namespace simkit::detail {

/// "ivf_pq,..." with every parameter, the form make_index parses back.
std::string describe_ivf_pq(const IvfPqParams& p);
std::unique_ptr<Index> make_ivf_pq_index(int64_t dim, Metric metric, const IvfPqParams& p);
/// `p` as parsed from the file's description section.
std::unique_ptr<Index> load_ivf_pq_index(const IndexFile& f, const IvfPqParams& p);
/// The lists of an ivf_pq index, or null for another kind: for tests that check the codes
/// against a reference, and read without the index's lock (no concurrent add / remove / train).
const IvfPqLists* ivf_pq_lists_of(const Index& index);

}  // namespace simkit::detail
