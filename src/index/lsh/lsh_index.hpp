#pragma once
// The lsh index (include/simkit/index.hpp): construction, its description, loading.

#include <memory>
#include <string>

#include <simkit/index.hpp>

#include "index/index_file.hpp"

namespace simkit::detail {

/// "lsh,..." with every parameter, the form make_index parses back.
std::string describe_lsh(const LshParams& p);
std::unique_ptr<Index> make_lsh_index(int64_t dim, Metric metric, const LshParams& p);
/// `p` as parsed from the file's description section.
std::unique_ptr<Index> load_lsh_index(const IndexFile& f, const LshParams& p);

}  // namespace simkit::detail
