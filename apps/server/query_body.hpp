#pragma once
// The body of Qdrant's Query API (POST .../points/query, and each of .../points/query/batch's
// searches): what to search for, and the same filter, limit, offset, score_threshold,
// with_payload, with_vector and params as a search.
//
//   "query": [0.1, ...]                      nearest to a vector
//   "query": 42 or "<uuid>"                  nearest to a stored point (the point itself left out)
//   "query": {"nearest": vector or id}       the same, spelled out
//   "query": {"recommend": {"positive": [ids or vectors], "negative": [...],
//                           "strategy": "average_vector"}}
//     nearest to avg(positive) + (avg(positive) - avg(negative)) (avg(positive) alone without
//     negatives), Cosine examples normalised first as Qdrant stores them; the example points
//     themselves are left out of the results.
// The other query kinds (discover, context, order_by, fusion, sample, formula), prefetch,
// lookup_from, named vectors (`using`) and the best_score / sum_scores strategies are refused
// with 400 naming the field.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "collection.hpp"
#include "point_id.hpp"

namespace simkit::server {

/// A stored point or a vector, as a recommendation's example or a nearest query's target.
struct QueryExample {
  std::optional<PointId> id;
  std::vector<float> vector;  // when id is empty
  std::string where;          // "body.query.recommend.positive[2]", for errors
};

struct QueryRequest {
  SearchQuery search;  // search.vector is empty while the examples are still to be read
  std::vector<QueryExample> positive, negative;
  bool exact = false;  // params.exact
};

/// 400 naming the field when the body is not a query this server answers.
QueryRequest parse_query(const nlohmann::json& body, int64_t dim, int64_t max_limit, const std::string& where);

/// The query vector of a request whose examples are all vectors now (ids replaced by the stored
/// vectors): the average_vector rule above. `cosine` normalises each example first.
std::vector<float> recommend_vector(const QueryRequest& q, bool cosine);

/// The search of a request whose examples are all vectors now: the recommendation's vector made
/// (400 when its scores would not stay finite), params.exact checked against the collection's
/// index (400 unless it is flat or tree). Moves q.search out.
SearchQuery finish_query(QueryRequest& q, const Collection& collection);

}  // namespace simkit::server
