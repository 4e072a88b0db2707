// apps/server/shard_wire.hpp: the sharded server's messages as bytes.

#include "shard_wire.hpp"

#include <cstring>

#include <simkit/error.hpp>

namespace simkit::server {

namespace {

class Writer {
 public:
  Writer() = default;
  explicit Writer(ShardOp op) { u8(static_cast<uint8_t>(op)); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f32(float v) { raw(&v, sizeof v); }
  void text(std::string_view s) {
    i64(static_cast<int64_t>(s.size()));
    out_.append(s);
  }
  void floats(const std::vector<float>& v) {
    i64(static_cast<int64_t>(v.size()));
    raw(v.data(), v.size() * sizeof(float));
  }
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint8_t u8() { return static_cast<uint8_t>(*take(1)); }
  uint32_t u32() { return number<uint32_t>(); }
  int64_t i64() { return number<int64_t>(); }
  float f32() { return number<float>(); }
  std::string text() {
    const size_t n = size();
    return std::string(take(n), n);
  }
  std::vector<float> floats() {
    const size_t n = size();
    std::vector<float> v(n);
    std::memcpy(v.data(), take(n * sizeof(float)), n * sizeof(float));
    return v;
  }
  /// A count that must fit what is left (each item takes at least `least` bytes).
  size_t count(size_t least = 1) {
    const uint32_t n = u32();
    if (static_cast<size_t>(n) * least > in_.size() - at_) fail();
    return n;
  }
  void end() const {
    if (at_ != in_.size()) fail();
  }

 private:
  template <class T>
  T number() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  size_t size() {
    const int64_t n = i64();
    if (n < 0 || static_cast<uint64_t>(n) > in_.size() - at_) fail();
    return static_cast<size_t>(n);
  }
  const char* take(size_t n) {
    if (n > in_.size() - at_) fail();
    const char* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  [[noreturn]] void fail() const { throw Error(ErrorCode::io, "a sharded server's message is malformed"); }
  std::string_view in_;
  size_t at_ = 0;
};

Reader request(std::string_view message, ShardOp op) {
  if (op_of(message) != op) throw Error(ErrorCode::io, "a sharded server's message is not the one expected");
  return Reader(message.substr(1));
}

void put_id(Writer& w, const PointId& id) {
  w.i64(id.number);
  w.text(id.uuid);
}

PointId get_id(Reader& r) {
  PointId id;
  id.number = r.i64();
  id.uuid = r.text();
  return id;
}

void put_point(Writer& w, const StoredPoint& p) {
  w.i64(p.id);
  w.text(p.uuid);
  w.floats(p.vector);
  w.text(p.payload);
}

StoredPoint get_point(Reader& r) {
  StoredPoint p;
  p.id = r.i64();
  p.uuid = r.text();
  p.vector = r.floats();
  p.payload = r.text();
  return p;
}

void put_points(Writer& w, const std::vector<StoredPoint>& points) {
  w.u32(static_cast<uint32_t>(points.size()));
  for (const StoredPoint& p : points) put_point(w, p);
}

std::vector<StoredPoint> get_points(Reader& r) {
  std::vector<StoredPoint> points(r.count(32));
  for (StoredPoint& p : points) p = get_point(r);
  return points;
}

void put_query(Writer& w, const SearchQuery& q) {
  w.floats(q.vector);
  w.i64(q.limit);
  w.i64(q.offset);
  w.u8(static_cast<uint8_t>(q.with_payload.kind));
  w.u32(static_cast<uint32_t>(q.with_payload.keys.size()));
  for (const std::string& k : q.with_payload.keys) w.text(k);
  w.u8(q.with_vector ? 1 : 0);
  w.u8(q.score_threshold ? 1 : 0);
  w.f32(q.score_threshold.value_or(0.0f));
  w.u32(static_cast<uint32_t>(q.exclude_points.size()));
  for (const PointId& id : q.exclude_points) put_id(w, id);
  w.text(q.filter ? q.filter->key() : std::string());
  w.i64(q.hnsw_ef);
}

SearchQuery get_query(Reader& r) {
  SearchQuery q;
  q.vector = r.floats();
  q.limit = r.i64();
  q.offset = r.i64();
  const uint8_t kind = r.u8();
  if (kind > static_cast<uint8_t>(PayloadSelector::Kind::exclude))
    throw Error(ErrorCode::io, "a sharded server's message is malformed");
  q.with_payload.kind = static_cast<PayloadSelector::Kind>(kind);
  q.with_payload.keys.resize(r.count(8));
  for (std::string& k : q.with_payload.keys) k = r.text();
  q.with_vector = r.u8() != 0;
  const bool threshold = r.u8() != 0;
  const float value = r.f32();
  if (threshold) q.score_threshold = value;
  q.exclude_points.resize(r.count(16));
  for (PointId& id : q.exclude_points) id = get_id(r);
  const std::string filter = r.text();
  if (!filter.empty()) q.filter = parse_filter(nlohmann::json::parse(filter));
  q.hnsw_ef = r.i64();
  return q;
}

}  // namespace

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

namespace {

uint64_t uuid_hash(const std::string& canonical) {
  // Canonical: 8-4-4-4-12 lower-case hex digits; the hyphens do not count.
  uint64_t half[2] = {0, 0};
  int digits = 0;
  for (char c : canonical) {
    if (c == '-') continue;
    const uint64_t v = c <= '9' ? static_cast<uint64_t>(c - '0') : static_cast<uint64_t>(c - 'a' + 10);
    half[digits / 16] = half[digits / 16] << 4 | v;
    if (++digits == 32) break;
  }
  return splitmix64(splitmix64(half[0]) ^ half[1]);
}

}  // namespace

int owner_rank(const PointId& id, int ranks) {
  const uint64_t h = id.is_uuid() ? uuid_hash(id.uuid) : splitmix64(static_cast<uint64_t>(id.number));
  return static_cast<int>(h % static_cast<uint64_t>(ranks));
}

int owner_rank(const StoredPoint& p, int ranks) {
  PointId id;
  if (p.uuid.empty())
    id.number = p.id;
  else
    id.uuid = p.uuid;
  return owner_rank(id, ranks);
}

ShardOp op_of(std::string_view message) {
  if (message.empty() || message[0] < static_cast<char>(ShardOp::forward) ||
      message[0] > static_cast<char>(ShardOp::loaded))
    throw Error(ErrorCode::io, "a sharded server's message names no operation");
  return static_cast<ShardOp>(message[0]);
}

std::string encode_forward(const HttpRequest& q) {
  Writer w(ShardOp::forward);
  for (const std::string* s : {&q.method, &q.path, &q.query, &q.body, &q.api_key, &q.authorization}) w.text(*s);
  return w.take();
}

HttpRequest decode_forward(std::string_view message) {
  Reader r = request(message, ShardOp::forward);
  HttpRequest q;
  for (std::string* s : {&q.method, &q.path, &q.query, &q.body, &q.api_key, &q.authorization}) *s = r.text();
  r.end();
  q.received = std::chrono::steady_clock::now();
  return q;
}

std::string encode_reply(const ForwardReply& reply) {
  Writer w;
  w.u32(reply.status);
  w.text(reply.body);
  w.text(reply.content_type);
  w.u32(static_cast<uint32_t>(reply.headers.size()));
  for (const auto& [name, value] : reply.headers) {
    w.text(name);
    w.text(value);
  }
  return w.take();
}

ForwardReply decode_forward_reply(std::string_view bytes) {
  Reader r(bytes);
  ForwardReply reply;
  reply.status = r.u32();
  reply.body = r.text();
  reply.content_type = r.text();
  reply.headers.resize(r.count(16));
  for (auto& [name, value] : reply.headers) {
    name = r.text();
    value = r.text();
  }
  r.end();
  return reply;
}

std::string encode_upsert(const ShardUpsert& upsert) {
  Writer w(ShardOp::upsert);
  w.text(upsert.collection);
  put_points(w, upsert.points);
  return w.take();
}

ShardUpsert decode_upsert(std::string_view message) {
  Reader r = request(message, ShardOp::upsert);
  ShardUpsert u;
  u.collection = r.text();
  u.points = get_points(r);
  r.end();
  return u;
}

std::string encode_search(const ShardSearch& search) {
  Writer w(ShardOp::search);
  w.text(search.collection);
  w.u32(static_cast<uint32_t>(search.queries.size()));
  for (const SearchQuery& q : search.queries) put_query(w, q);
  return w.take();
}

ShardSearch decode_search(std::string_view message) {
  Reader r = request(message, ShardOp::search);
  ShardSearch s;
  s.collection = r.text();
  s.queries.resize(r.count(40));
  for (SearchQuery& q : s.queries) q = get_query(r);
  r.end();
  return s;
}

std::string encode_outcomes(const std::vector<SearchOutcome>& outcomes) {
  Writer w;
  w.u32(static_cast<uint32_t>(outcomes.size()));
  for (const SearchOutcome& o : outcomes) {
    w.u32(o.status);
    w.text(o.error);
    w.text(o.hits);
  }
  return w.take();
}

std::vector<SearchOutcome> decode_outcomes(std::string_view bytes) {
  Reader r(bytes);
  std::vector<SearchOutcome> outcomes(r.count(20));
  for (SearchOutcome& o : outcomes) {
    o.status = r.u32();
    o.error = r.text();
    o.hits = r.text();
  }
  r.end();
  return outcomes;
}

std::string encode_scroll(const ShardScroll& s) {
  Writer w(ShardOp::scroll);
  w.text(s.collection);
  w.i64(s.from);
  w.i64(s.from_rank);
  w.i64(s.limit);
  w.u8(s.with_vector ? 1 : 0);
  w.text(s.filter);
  return w.take();
}

ShardScroll decode_scroll(std::string_view message) {
  Reader r = request(message, ShardOp::scroll);
  ShardScroll s;
  s.collection = r.text();
  s.from = r.i64();
  s.from_rank = static_cast<int>(r.i64());
  s.limit = r.i64();
  s.with_vector = r.u8() != 0;
  s.filter = r.text();
  r.end();
  return s;
}

std::string encode_scroll_share(const ScrollShare& share) {
  Writer w;
  w.u32(share.status);
  w.text(share.error);
  put_points(w, share.points);
  return w.take();
}

ScrollShare decode_scroll_share(std::string_view bytes) {
  Reader r(bytes);
  ScrollShare share;
  share.status = r.u32();
  share.error = r.text();
  share.points = get_points(r);
  r.end();
  return share;
}

std::string encode_resolve(const ShardResolve& resolve) {
  Writer w(ShardOp::resolve);
  w.text(resolve.collection);
  put_id(w, resolve.id);
  return w.take();
}

ShardResolve decode_resolve(std::string_view message) {
  Reader r = request(message, ShardOp::resolve);
  ShardResolve s;
  s.collection = r.text();
  s.id = get_id(r);
  r.end();
  return s;
}

std::string encode_loaded() { return Writer(ShardOp::loaded).take(); }

std::string encode_status(const StatusReply& reply) {
  Writer w;
  w.u32(reply.status);
  w.text(reply.error);
  w.i64(reply.value);
  return w.take();
}

StatusReply decode_status(std::string_view bytes) {
  Reader r(bytes);
  StatusReply s;
  s.status = r.u32();
  s.error = r.text();
  s.value = r.i64();
  r.end();
  return s;
}

}  // namespace simkit::server
