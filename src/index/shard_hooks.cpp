// index/shard_hooks.hpp: the kinds a sharded index is made of, found by a cross-cast (ivf_pq's two
// rounds live with its index, ivf/ivf_pq_index.cpp).

#include "index/shard_hooks.hpp"

#include <simkit/error.hpp>

#include "core/expects.hpp"
#include "index/ivf/ivf_index_base.hpp"

namespace simkit::detail {

ShardableIndex* shardable(Index& index) { return dynamic_cast<ShardableIndex*>(&index); }

const ShardableIndex* shardable(const Index& index) { return dynamic_cast<const ShardableIndex*>(&index); }

IvfProbes ivf_probes(const Index& index, int64_t asked) {
  const auto* ivf = dynamic_cast<const IvfIndexBase*>(&index);
  SIMKIT_EXPECTS(ivf != nullptr, invalid_argument, "ivf_probes: a ", index.type(), " index has no lists");
  return ivf->probes(asked);
}

}  // namespace simkit::detail
