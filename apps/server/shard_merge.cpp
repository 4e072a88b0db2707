// apps/server/shard_merge.hpp: the ranks' answers combined into one.

#include "shard_merge.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <tuple>
#include <unordered_map>

#include <simkit/error.hpp>

namespace simkit::server {

namespace {

using nlohmann::json;

// A hit as Collection::write_hits writes it: {"id":ID,"version":0,"score":S,...}.
struct Hit {
  std::string_view text;
  std::string_view uuid;  // empty for an integer id
  int64_t number = 0;
  double score = 0;
  bool scored = true;  // false: null, a score float32 could not hold
};

// The elements of a JSON array the server wrote (valid JSON), as text.
std::vector<std::string_view> elements(std::string_view array) {
  std::vector<std::string_view> out;
  int depth = 0;
  bool in_string = false;
  size_t start = 1;
  for (size_t i = 1; i < array.size(); ++i) {
    const char c = array[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || (c == ']' && depth > 0)) {
      --depth;
    } else if (c == ']' || (c == ',' && depth == 0)) {
      if (i > start) out.push_back(array.substr(start, i - start));
      start = i + 1;
      if (c == ']') break;
    }
  }
  return out;
}

Hit read_hit(std::string_view text) {
  Hit h;
  h.text = text;
  const std::string_view head = "{\"id\":";
  if (text.substr(0, head.size()) != head) throw Error(ErrorCode::io, "a rank's hit is malformed");
  size_t at = head.size();
  if (at < text.size() && text[at] == '"') {
    const size_t end = text.find('"', at + 1);
    h.uuid = text.substr(at + 1, end - at - 1);
  } else {
    std::from_chars(text.data() + at, text.data() + text.size(), h.number);
  }
  const std::string_view key = "\"score\":";
  at = text.find(key, at);
  if (at == std::string_view::npos) throw Error(ErrorCode::io, "a rank's hit has no score");
  at += key.size();
  const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), h.score);
  h.scored = ec == std::errc() && std::isfinite(h.score);
  return h;
}

}  // namespace

int first_failure(const std::vector<ForwardReply>& replies) {
  for (size_t r = 0; r < replies.size(); ++r)
    if (replies[r].status < 200 || replies[r].status >= 300) return static_cast<int>(r);
  return -1;
}

json body_of(const ForwardReply& reply) {
  json body = json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) throw Error(ErrorCode::io, "a rank answered with a body that is not a JSON object");
  return body;
}

std::string error_of(const ForwardReply& reply) {
  const json body = json::parse(reply.body, nullptr, false);
  if (body.is_object() && body.contains("status") && body["status"].is_object() && body["status"].contains("error") &&
      body["status"]["error"].is_string())
    return body["status"]["error"].get<std::string>();
  return reply.body.substr(0, 200);
}

json merge_update(const std::vector<ForwardReply>& replies) {
  json result = body_of(replies.at(0))["result"];
  if (!result.is_object()) return result;
  for (const char* key : {"operation_id", "deleted"}) {
    if (!result.contains(key)) continue;
    int64_t sum = 0;
    for (const ForwardReply& r : replies) sum += body_of(r)["result"].value(key, int64_t{0});
    result[key] = sum;
  }
  return result;
}

namespace {

// j[key] when j is an object holding it, else an empty object: rank answers are the server's own,
// but a missing member must not be read out of bounds.
const json& member(const json& j, const char* key) {
  static const json empty = json::object();
  return j.is_object() && j.contains(key) && j[key].is_object() ? j[key] : empty;
}

int64_t number(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : 0;
}

// Adds one rank's description into rank 0's.
void add_info(json& info, const json& part, size_t rank) {
  for (const char* key : {"points_count", "indexed_vectors_count", "queue_depth"})
    info[key] = number(info, key) + number(part, key);
  const json& index = member(part, "index");
  info["index"]["memory_bytes"] = number(info["index"], "memory_bytes") + number(index, "memory_bytes");
  if (part.value("status", "green") != "green") info["status"] = part["status"];
  if (info.value("optimizer_status", json("ok")) == "ok" && part.value("optimizer_status", json("ok")) != "ok")
    info["optimizer_status"] = part["optimizer_status"];
  // "building ..." or "failed: ..." as a lone server says it (clients poll for the prefix).
  const std::string build = index.value("build", "ready");
  if (info["index"].value("build", "ready") == "ready" && build != "ready")
    info["index"]["build"] =
        build.rfind("failed: ", 0) == 0 ? "failed: rank " + std::to_string(rank) + ": " + build.substr(8) : build;
  const json& schema = member(part, "payload_schema");
  if (!info["payload_schema"].is_object()) return;
  for (auto it = info["payload_schema"].begin(); it != info["payload_schema"].end(); ++it)
    if (it->is_object()) (*it)["points"] = number(*it, "points") + number(member(schema, it.key().c_str()), "points");
}

}  // namespace

json merge_info(const std::vector<ForwardReply>& replies) {
  json info = body_of(replies.at(0))["result"];
  if (!info.is_object()) throw Error(ErrorCode::io, "rank 0 described the collection with no object");
  json shards = json::array();
  for (size_t r = 0; r < replies.size(); ++r) {
    const json part = r == 0 ? info : body_of(replies[r])["result"];
    shards.push_back({{"rank", r}, {"points_count", number(part, "points_count")}});
    if (r > 0) add_info(info, part, r);
  }
  info["config"]["params"]["shard_number"] = replies.size();
  info["shards"] = std::move(shards);
  return info;
}

int64_t merge_count(const std::vector<ForwardReply>& replies) {
  int64_t sum = 0;
  for (const ForwardReply& r : replies) sum += body_of(r)["result"].value("count", int64_t{0});
  return sum;
}

json merge_retrieve(const std::vector<ForwardReply>& replies, const json& ids) {
  std::unordered_map<std::string, json> found;  // the id as JSON text -> its point
  for (const ForwardReply& r : replies) {
    json body = body_of(r);
    for (json& p : body["result"]) found.emplace(p["id"].dump(), std::move(p));
  }
  json list = json::array();
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto it = found.find(parse_point_id(ids[i], "body.ids[" + std::to_string(i) + "]").json().dump());
    if (it != found.end()) list.push_back(it->second);
  }
  return list;
}

std::string merge_hits(const std::vector<std::string_view>& ranks, int64_t offset, int64_t limit,
                       bool larger_is_better) {
  std::vector<Hit> hits;
  for (std::string_view text : ranks)
    for (std::string_view e : elements(text)) hits.push_back(read_hit(e));
  const auto better = [larger_is_better](const Hit& a, const Hit& b) {
    if (a.scored != b.scored) return a.scored;
    if (a.scored && a.score != b.score) return larger_is_better ? a.score > b.score : a.score < b.score;
    const bool au = !a.uuid.empty(), bu = !b.uuid.empty();
    return std::tie(au, a.number, a.uuid) < std::tie(bu, b.number, b.uuid);
  };
  std::sort(hits.begin(), hits.end(), better);
  std::string out = "[";
  for (int64_t i = offset; i < static_cast<int64_t>(hits.size()) && i < offset + limit; ++i) {
    if (i > offset) out += ',';
    out += hits[static_cast<size_t>(i)].text;
  }
  out += ']';
  return out;
}

ScrollPage merge_scroll(std::vector<ScrollShare>& shares, int64_t limit) {
  std::vector<std::tuple<int64_t, size_t, StoredPoint*>> order;  // (id, rank, point)
  for (size_t r = 0; r < shares.size(); ++r)
    for (StoredPoint& p : shares[r].points) order.emplace_back(p.id, r, &p);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  ScrollPage page;
  for (size_t i = 0; i < order.size() && static_cast<int64_t>(i) <= limit; ++i) {
    StoredPoint& p = *std::get<2>(order[i]);
    if (static_cast<int64_t>(i) < limit)
      page.points.push_back(std::move(p));
    else
      page.next = std::move(p);
  }
  return page;
}

}  // namespace simkit::server
