#pragma once
// The hnsw index (include/simkit/index.hpp): a layered graph over the stored vectors
// (index/hnsw/hnsw_graph.hpp), built and searched on the CPU.

#include <memory>
#include <string>

#include <simkit/index.hpp>

#include "index/index_file.hpp"

namespace simkit::detail {

/// The description the factory parses back into the same parameters.
std::string describe_hnsw(const HnswParams& p);
std::unique_ptr<Index> make_hnsw_index(int64_t dim, Metric metric, const HnswParams& p);
std::unique_ptr<Index> load_hnsw_index(const IndexFile& f, const HnswParams& p);

}  // namespace simkit::detail
