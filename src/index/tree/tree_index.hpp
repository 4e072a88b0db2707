#pragma once
// The tree index (include/simkit/index.hpp): exact k-NN in low dimensions through the point tree
// of knn(method = tree) (spatial/point_tree.hpp), kept current under writes.

#include <memory>

#include <simkit/index.hpp>

#include "index/index_file.hpp"

namespace simkit::detail {

/// Error(invalid_argument) unless the tree serves `metric` in `dim` dimensions (l2 and
/// sqeuclidean, d <= 8); the message points to "flat" for the rest.
std::unique_ptr<Index> make_tree_index(int64_t dim, Metric metric);
std::unique_ptr<Index> load_tree_index(const IndexFile& f);

}  // namespace simkit::detail
