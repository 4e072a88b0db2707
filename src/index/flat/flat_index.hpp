#pragma once
// The flat index: the stored rows and simkit::knn over them (include/simkit/index.hpp).

#include <memory>

#include <simkit/index.hpp>

#include "index/index_file.hpp"

namespace simkit::detail {

std::unique_ptr<Index> make_flat_index(int64_t dim, Metric metric);
std::unique_ptr<Index> load_flat_index(const IndexFile& f);

}  // namespace simkit::detail
