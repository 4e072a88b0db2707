#pragma once
// The sharded server's messages (`mpirun -n P simkit serve`, docs/API.md "Sharded over MPI
// ranks"): what rank 0 asks the other ranks and what they answer, as bytes that the transport
// (apps/cli/mpi_serve.cpp) carries without looking inside. Every rank is the same build on the
// same architecture, so numbers travel in the machine's own byte order.
//
// Which rank owns a point is fixed by its id, and by the number of ranks P:
//   integer id n:  splitmix64(n) mod P
//   UUID:          splitmix64(splitmix64(hi) xor lo) mod P, hi and lo the UUID's first and last
//                  8 bytes read as big-endian integers (the canonical text's first and last 16
//                  hex digits)
// so a data directory written by P ranks can only be served by P ranks (data_dir_layout.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "collection.hpp"
#include "http_server.hpp"
#include "payload_edit.hpp"
#include "point_id.hpp"
#include "point_store.hpp"

namespace simkit::server {

/// Steele, Lea and Flood's SplitMix64 finalizer: a bijection of 64-bit integers.
uint64_t splitmix64(uint64_t x);

/// The rank of `ranks` that owns the point named `id` (above).
int owner_rank(const PointId& id, int ranks);
/// The same for a point read from an upsert body (its id, or its UUID when it has one).
int owner_rank(const StoredPoint& point, int ranks);

/// What rank 0 asks; the first byte of every request.
enum class ShardOp : uint8_t {
  forward = 1,  // an HTTP request, run by the rank's own Api -> ForwardReply
  upsert = 2,   // a collection's points owned by the rank -> StatusReply (value: its sequence number)
  search = 3,   // a batch of searches over the rank's points -> the outcomes, one per search
  scroll = 4,   // a page of the rank's points in id order -> ScrollShare
  resolve = 5,  // the rank's internal id of a UUID -> StatusReply (value: the id, or -1)
  loaded = 6,   // answered once the rank has opened its collections -> StatusReply
};

/// The kind of a request (its first byte); Error(io) for a message that is not one.
ShardOp op_of(std::string_view message);

/// Status, error message and one number: the answer of upsert, resolve and loaded.
struct StatusReply {
  unsigned status = 200;
  std::string error;
  int64_t value = 0;
};

/// An HTTP answer as a rank's Api gave it.
struct ForwardReply {
  unsigned status = 200;
  std::string body;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct ShardUpsert {
  std::string collection;
  std::vector<StoredPoint> points;
};

/// A batch of searches as every rank runs it: each query from its first hit (offset 0), for
/// offset + limit hits, its filter as its canonical text (Filter::key, parsed again there).
struct ShardSearch {
  std::string collection;
  std::vector<SearchQuery> queries;
};

/// A page of points in the merged order (internal id, then rank): rank r starts at `from`, or
/// just after it when r < `from_rank` (the rank owning the UUID `from` names; 0 for integers).
struct ShardScroll {
  std::string collection;
  int64_t from = 0;
  int from_rank = 0;
  int64_t limit = 10;
  bool with_vector = false;
  std::string filter;  // the filter's JSON text; "" for none
};

struct ScrollShare {
  unsigned status = 200;
  std::string error;
  std::vector<StoredPoint> points;  // ids internal to the rank, uuids canonical
};

struct ShardResolve {
  std::string collection;
  PointId id;
};

std::string encode_forward(const HttpRequest& request);
HttpRequest decode_forward(std::string_view message);
std::string encode_reply(const ForwardReply& reply);
ForwardReply decode_forward_reply(std::string_view bytes);

std::string encode_upsert(const ShardUpsert& upsert);
ShardUpsert decode_upsert(std::string_view message);

std::string encode_search(const ShardSearch& search);
ShardSearch decode_search(std::string_view message);
std::string encode_outcomes(const std::vector<SearchOutcome>& outcomes);
std::vector<SearchOutcome> decode_outcomes(std::string_view bytes);

std::string encode_scroll(const ShardScroll& scroll);
ShardScroll decode_scroll(std::string_view message);
std::string encode_scroll_share(const ScrollShare& share);
ScrollShare decode_scroll_share(std::string_view bytes);

std::string encode_resolve(const ShardResolve& resolve);
ShardResolve decode_resolve(std::string_view message);

std::string encode_loaded();
std::string encode_status(const StatusReply& reply);
StatusReply decode_status(std::string_view bytes);

}  // namespace simkit::server
