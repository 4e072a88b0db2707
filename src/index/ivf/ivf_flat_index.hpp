#pragma once
// The ivf_flat index (include/simkit/index.hpp): construction, its description, loading.

#include <memory>
#include <string>

#include <simkit/index.hpp>

#include "index/index_file.hpp"

namespace simkit::detail {

/// "ivf_flat,nlist=...,..." with every parameter, the form make_index parses back.
std::string describe_ivf_flat(const IvfFlatParams& p);
std::unique_ptr<Index> make_ivf_flat_index(int64_t dim, Metric metric, const IvfFlatParams& p);
/// `p` as parsed from the file's description section.
std::unique_ptr<Index> load_ivf_flat_index(const IndexFile& f, const IvfFlatParams& p);

}  // namespace simkit::detail
