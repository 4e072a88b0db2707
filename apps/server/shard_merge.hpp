#pragma once
// How the sharded server's rank 0 combines the ranks' answers into one (shard_router.hpp): hits
// merged by score, then by id; counts and operation numbers summed; points gathered by id.
//
// Ties: hits with equal scores come in id order, integer ids before UUIDs, integers by value,
// UUIDs by their canonical text (a lone server orders tied UUIDs by when it first stored them,
// which no rank knows of another's). Scroll pages run through integer ids in order, then UUIDs in
// an order of the ranks' own (each rank's internal id, then the rank), the same at every call.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "shard_wire.hpp"

namespace simkit::server {

/// The first reply, in rank order, whose status is not 2xx; -1 when every one is.
int first_failure(const std::vector<ForwardReply>& replies);

/// A reply's body as JSON; Error(io) when it is not an object.
nlohmann::json body_of(const ForwardReply& reply);

/// The error message of a failed reply (its status.error), or its body when it has none.
std::string error_of(const ForwardReply& reply);

/// The result of a write every rank made: rank 0's, with operation_id (each rank's sequence
/// number: the sum grows with every write) and deleted summed.
nlohmann::json merge_update(const std::vector<ForwardReply>& replies);

/// GET /collections/{name}: rank 0's description with the counts summed over the ranks (points,
/// indexed vectors, payload index points, index memory, queue depth), the worst status, the
/// first rank's build or optimizer problem, shard_number P, and "shards": each rank's points.
nlohmann::json merge_info(const std::vector<ForwardReply>& replies);

/// POST .../points/count: the counts summed.
int64_t merge_count(const std::vector<ForwardReply>& replies);

/// POST .../points (retrieve): the points found, in the order `ids` (the request's) names them.
nlohmann::json merge_retrieve(const std::vector<ForwardReply>& replies, const nlohmann::json& ids);

/// One search's hits: each rank's best hits (JSON arrays as Collection writes them, each from its
/// first hit), merged best first (see above), then `offset` skipped and `limit` kept.
std::string merge_hits(const std::vector<std::string_view>& ranks, int64_t offset, int64_t limit,
                       bool larger_is_better);

/// A scroll page: the first `limit` points of the shares in (id, rank) order, and the next
/// point's, which starts the next page.
struct ScrollPage {
  std::vector<StoredPoint> points;
  std::optional<StoredPoint> next;
};
ScrollPage merge_scroll(std::vector<ScrollShare>& shares, int64_t limit);

}  // namespace simkit::server
