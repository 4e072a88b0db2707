#include "query_body.hpp"

#include <cmath>

#include <simkit/error.hpp>

#include "api_error.hpp"
#include "payload_edit.hpp"
#include "request_json.hpp"
#include "search_body.hpp"

namespace simkit::server {

namespace {

QueryExample parse_example(const nlohmann::json& j, int64_t dim, const std::string& where) {
  QueryExample e;
  e.where = where;
  if (j.is_array())
    e.vector = parse_vector(j, dim, where);
  else if (j.is_number_integer() || j.is_string())
    e.id = parse_point_id(j, where);
  else
    bad_request(where + " must be a point id or a vector of " + std::to_string(dim) + " numbers (got " +
                value_excerpt(j) + ")");
  return e;
}

std::vector<QueryExample> parse_examples(const nlohmann::json& r, const char* key, int64_t dim,
                                         const std::string& where) {
  std::vector<QueryExample> out;
  if (!r.contains(key) || r[key].is_null()) return out;
  const nlohmann::json& list = r[key];
  if (!list.is_array()) bad_request(where + "." + key + " must be an array of point ids or vectors");
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(parse_example(list[i], dim, where + "." + key + "[" + std::to_string(i) + "]"));
  return out;
}

void parse_recommend(const nlohmann::json& r, int64_t dim, const std::string& where, QueryRequest& q) {
  if (!r.is_object()) bad_request(where + " must be an object {\"positive\": [...], \"negative\": [...]}");
  check_fields(r, {"positive", "negative", "strategy"}, where);
  if (r.contains("strategy") && !r["strategy"].is_null() && r["strategy"] != "average_vector")
    bad_request(where + ".strategy " + value_excerpt(r["strategy"]) +
                " is not supported (this server recommends by average_vector)");
  q.positive = parse_examples(r, "positive", dim, where);
  q.negative = parse_examples(r, "negative", dim, where);
  if (q.positive.empty()) bad_request(where + ".positive must name at least one point or vector");
}

void parse_what(const nlohmann::json& query, int64_t dim, const std::string& where, QueryRequest& q) {
  if (query.is_array()) {
    q.search.vector = parse_vector(query, dim, where);
    return;
  }
  if (query.is_number_integer() || query.is_string()) {
    q.positive.push_back(parse_example(query, dim, where));
    return;
  }
  if (query.is_object() && query.contains("mmr"))
    bad_request(where + ".mmr (maximal marginal relevance) is not supported by this server");
  if (!query.is_object() || query.size() != 1)
    bad_request(where + " must be a vector, a point id, {\"nearest\": ...} or {\"recommend\": ...} (got " +
                value_excerpt(query) + ")");
  const std::string kind = query.begin().key();
  if (kind == "nearest") {
    const nlohmann::json& target = query["nearest"];
    if (target.is_array())
      q.search.vector = parse_vector(target, dim, where + ".nearest");
    else
      q.positive.push_back(parse_example(target, dim, where + ".nearest"));
  } else if (kind == "recommend") {
    parse_recommend(query["recommend"], dim, where + ".recommend", q);
  } else {
    bad_request(where + ": the " + simkit::quoted(kind) +
                " query is not supported (this server answers nearest and recommend queries)");
  }
}

void parse_params(const nlohmann::json& params, const std::string& where, QueryRequest& q) {
  if (params.is_null()) return;
  if (!params.is_object()) bad_request(where + " must be an object");
  check_fields(params, {"hnsw_ef", "exact", "indexed_only"}, where);
  if (params.contains("hnsw_ef") && !params["hnsw_ef"].is_null())
    q.search.hnsw_ef = int_field(params, "hnsw_ef", 0, 1, 1 << 20, where);
  q.exact = bool_field(params, "exact", false, where);
  bool_field(params, "indexed_only", false, where);  // every stored point is indexed here
}

}  // namespace

QueryRequest parse_query(const nlohmann::json& body, int64_t dim, int64_t max_limit, const std::string& where) {
  if (!body.is_object()) bad_request(where + " must be an object");
  check_fields(body,
               {"query", "filter", "limit", "offset", "score_threshold", "with_payload", "with_vector", "params",
                "using", "prefetch", "lookup_from", "shard_key"},
               where);
  for (const char* refused : {"prefetch", "lookup_from", "shard_key"})
    if (body.contains(refused) && !body[refused].is_null())
      bad_request(where + "." + refused + " is not supported by this server");
  if (body.contains("using") && !body["using"].is_null() && body["using"] != "")
    bad_request(where + ".using: named vectors are not supported (a collection has one unnamed vector)");
  if (!body.contains("query") || body["query"].is_null())
    bad_request(where + ".query is required: a vector, a point id, {\"nearest\": ...} or {\"recommend\": ...}");
  QueryRequest q;
  parse_what(body["query"], dim, where + ".query", q);
  q.search.limit = int_field(body, "limit", 10, 1, max_limit, where);
  q.search.offset = int_field(body, "offset", 0, 0, max_limit, where);
  q.search.score_threshold = score_threshold(body, where);
  // The Query API returns no payload unless asked, as Qdrant's does.
  if (body.contains("with_payload"))
    q.search.with_payload = parse_payload_selector(body["with_payload"], where + ".with_payload");
  q.search.with_vector = bool_field(body, "with_vector", false, where);
  if (body.contains("filter") && !body["filter"].is_null()) {
    q.search.filter = parse_filter(body["filter"], where + ".filter");
    if (q.search.filter->empty()) q.search.filter.reset();  // no condition: every point
  }
  if (body.contains("params")) parse_params(body["params"], where + ".params", q);
  return q;
}

std::vector<float> recommend_vector(const QueryRequest& q, bool cosine) {
  const size_t dim = q.positive.front().vector.size();
  auto average = [&](const std::vector<QueryExample>& examples) {
    std::vector<double> sum(dim, 0.0);
    for (const QueryExample& e : examples) {
      double norm = 0;
      for (float x : e.vector) norm += static_cast<double>(x) * x;
      const double scale = cosine && norm > 0 ? 1.0 / std::sqrt(norm) : 1.0;
      for (size_t i = 0; i < dim; ++i) sum[i] += e.vector[i] * scale;
    }
    for (double& s : sum) s /= static_cast<double>(examples.size());
    return sum;
  };
  const std::vector<double> pos = average(q.positive);
  std::vector<float> out(dim);
  if (q.negative.empty()) {
    for (size_t i = 0; i < dim; ++i) out[i] = static_cast<float>(pos[i]);
    return out;
  }
  const std::vector<double> neg = average(q.negative);
  for (size_t i = 0; i < dim; ++i) out[i] = static_cast<float>(2 * pos[i] - neg[i]);
  return out;
}

SearchQuery finish_query(QueryRequest& q, const Collection& collection) {
  if (!q.positive.empty()) {
    q.search.vector = recommend_vector(q, collection.config().distance == "Cosine");
    if (!scores_stay_finite(q.search.vector))
      bad_request("the recommendation's query vector is too long for its scores to stay finite");
  }
  const std::string description = q.exact ? collection.index_description() : std::string();
  if (q.exact && description != "flat" && description != "tree")
    bad_request("params.exact: collection '" + collection.name() + "' searches its " + description +
                " index approximately; exact search needs a flat collection");
  return std::move(q.search);
}

}  // namespace simkit::server
