#pragma once
// A filter evaluated as set operations into the ids of the matching points, ascending: the
// allow-list a search passes to the index (SearchParams::allowed), and what count, scroll and
// delete by filter read.
//
// must intersects, should unites, must_not subtracts, min_should counts. A condition on an
// indexed field (payload_index.hpp) is a lookup; has_id is a lookup of the ids given; the rest
// are tested one point at a time on the payload's text (filter.hpp's condition_holds), and only
// on the points the conditions before them left: the cheapest must conditions narrow first, so
// the payloads are walked only where nothing indexed narrowed the set.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "filter.hpp"
#include "id_set.hpp"
#include "payload_index.hpp"

namespace simkit::server {

using PayloadMap = std::unordered_map<int64_t, std::string>;  // id -> compact JSON text

/// The ids (ascending) of the live points of `indexes` that match `f`, their payloads in
/// `payloads` (a point without one matches as an empty object), has_id ids resolved by `resolve`.
/// Equal to testing matches() on every point.
Ids evaluate(const Filter& f, const PayloadIndexes& indexes, const PayloadMap& payloads, const IdResolver& resolve);

}  // namespace simkit::server
