#include "http_server.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <nlohmann/json.hpp>
#include <simkit/error.hpp>

namespace simkit::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

std::string error_body(const std::string& message) {
  const nlohmann::json body = {{"status", {{"error", message}}}, {"time", 0}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Beast decodes chunked framing and nothing else: a body sent with another transfer coding
// (gzip, deflate) or content coding would be read as if it were plain JSON. Such requests are
// refused whole (501, as RFC 9112 asks for an unknown transfer coding) rather than misread.
std::string unsupported_coding(const http::request_header<>& h) {
  if (auto it = h.find(http::field::transfer_encoding); it != h.end()) {
    std::string te(it->value());
    for (char& c : te) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    te.erase(std::remove_if(te.begin(), te.end(), [](char c) { return c == ' ' || c == '\t'; }), te.end());
    if (te != "chunked")
      return "Transfer-Encoding " + simkit::quoted(std::string_view(it->value())) +
             " is not supported: send the body plain or chunked";
  }
  if (auto it = h.find(http::field::content_encoding); it != h.end()) {
    std::string ce(it->value());
    for (char& c : ce) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (ce != "identity")
      return "Content-Encoding " + simkit::quoted(std::string_view(it->value())) +
             " is not supported: send the body uncompressed";
  }
  return "";
}

// The peer as the access log shows it: "10.0.0.7:53211", "[::1]:53211".
std::string peer_of(const tcp::socket& socket) {
  beast::error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  const std::string address = peer.address().to_string();
  return (peer.address().is_v6() ? "[" + address + "]" : address) + ":" + std::to_string(peer.port());
}

constexpr const char* kRefusedRoute = "refused before routing";  // the metrics' label too

}  // namespace

class HttpServer::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, asio::io_context& io, HttpServer& server)
      : client_(server.limits_.answered ? peer_of(socket) : ""), stream_(std::move(socket)), io_(io), server_(server) {}
  ~Session() {
    std::lock_guard g(server_.sessions_mutex_);
    server_.sessions_.erase(this);
  }

  void run(bool reject) {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this(), reject] {
      if (reject) {
        self->closing_ = true;
        self->received_ = std::chrono::steady_clock::now();
        self->write({503,
                     error_body("too many open connections; retry later"),
                     "application/json",
                     {{"Retry-After", "1"}},
                     kRefusedRoute});
      } else {
        self->read();
      }
    });
  }

  /// On drain: an idle connection closes now, a busy one after its response. A request whose
  /// headers were read is in flight too: its body is read and it is answered, then the close.
  void close_if_idle() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->closing_ = true;
      if (!self->busy_ && !self->in_request_) self->close();
    });
  }

 private:
  void read() {
    method_.clear();  // what the access log says of a request refused before its line is read
    target_.clear();
    parser_.emplace();
    parser_->body_limit(server_.limits_.max_body_bytes);
    parser_->header_limit(64 * 1024);
    stream_.expires_after(server_.limits_.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return fail_read(ec);
    // The drain may have closed the socket after this read completed but before this handler
    // ran: the request cannot be answered, so it must not run (a write would be applied unanswered).
    if (!stream_.socket().is_open()) return;
    in_request_ = true;
    received_ = std::chrono::steady_clock::now();
    if (server_.limits_.answered) {
      method_ = std::string(parser_->get().method_string());
      target_ = std::string(parser_->get().target());
    }
    // Refuse an oversized body from its Content-Length, before reading any of it.
    if (const auto length = parser_->content_length(); length && *length > server_.limits_.max_body_bytes)
      return refuse(413, "request body of " + std::to_string(*length) + " bytes exceeds the limit of " +
                             std::to_string(server_.limits_.max_body_bytes) + " bytes (--max-body-mb)");
    if (const std::string why = unsupported_coding(parser_->get()); !why.empty()) return refuse(501, why);
    stream_.expires_after(server_.limits_.request_timeout);
    if (parser_->is_done()) return on_body({});
    if (const auto length = parser_->content_length(); length && *length >= kDirectBodyBytes && !parser_->chunked())
      return read_body_direct(static_cast<size_t>(*length));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code e, size_t) { self->on_body(e); });
  }

  // A large body with a Content-Length is read straight into its string, as much at a time as
  // the socket holds: Beast's parser reads 64 KiB per operation (a timer armed, an executor
  // copied, a syscall, then a copy into the body each time), which cost a quarter of the
  // server's CPU in an ingest of 1,000 x 384 floats per request (8.5 MB). The string keeps
  // kBodyPadding bytes of spare capacity, so the JSON parser reads it without a padded copy.
  void read_body_direct(size_t length) {
    direct_length_ = length;
    direct_filled_ = std::min(buffer_.size(), length);  // body bytes read with the headers
    direct_body_.reserve(length + kBodyPadding);        // address space only, as Beast reserves it
    direct_body_.resize(direct_filled_);
    asio::buffer_copy(asio::buffer(direct_body_.data(), direct_filled_), buffer_.data());
    buffer_.consume(direct_filled_);
    read_body_more();
  }

  // The string grows ahead of the bytes by at most as many as have arrived (64 KiB at first), so
  // that memory follows what a client sent, not what its Content-Length announced, and every
  // byte is zeroed once.
  void read_body_more() {
    if (direct_filled_ == direct_length_) return on_body({});
    if (direct_filled_ == direct_body_.size())
      direct_body_.resize(std::min(direct_length_, direct_filled_ + std::max<size_t>(64 * 1024, direct_filled_)));
    stream_.async_read_some(asio::buffer(direct_body_.data() + direct_filled_, direct_body_.size() - direct_filled_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->direct_filled_ += n;
                              if (ec) return self->on_body(ec);
                              self->read_body_more();
                            });
  }

  void on_body(beast::error_code ec) {
    in_request_ = false;
    if (ec) {
      direct_body_ = std::string();
      return fail_read(ec);
    }
    if (!stream_.socket().is_open()) return;  // closed meanwhile (see on_header): never run it
    busy_ = true;
    stream_.expires_never();
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    HttpRequest r;
    r.method = std::string(req.method_string());
    const std::string_view target = req.target();
    const size_t q = target.find('?');
    r.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
    r.body = direct_body_.empty() ? std::move(req.body()) : std::move(direct_body_);
    direct_body_ = std::string();
    if (auto it = req.find("api-key"); it != req.end()) r.api_key = std::string(it->value());
    if (auto it = req.find(http::field::authorization); it != req.end()) r.authorization = std::string(it->value());
    r.received = received_;
    // The responder may be called from any thread; it holds the connection's io_context's work
    // so that its run() does not return while a request is being answered elsewhere (a batcher).
    auto work = asio::prefer(io_.get_executor(), asio::execution::outstanding_work.tracked);
    Responder respond = [self = shared_from_this(), work](HttpResponse&& response) {
      asio::post(self->stream_.get_executor(),
                 [self, response = std::move(response)]() mutable { self->write(std::move(response)); });
    };
    server_.handler_(std::move(r), std::move(respond));
  }

  void fail_read(beast::error_code ec) {
    if (ec == http::error::body_limit)
      return refuse(413, "request body exceeds the limit of " + std::to_string(server_.limits_.max_body_bytes) +
                             " bytes (--max-body-mb)");
    if (ec == http::error::header_limit) return refuse(431, "request headers exceed 64 KiB");
    // A peer that closed or timed out gets no answer; a malformed request gets a 400.
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || ec == asio::error::eof || buffer_.size() == 0)
      return close();
    refuse(400, "malformed HTTP request: " + ec.message());
  }

  void refuse(unsigned status, const std::string& message) {
    if (server_.limits_.refused) server_.limits_.refused(status);
    if (!in_request_) received_ = std::chrono::steady_clock::now();  // its headers were never read
    // Beast refuses a too large Content-Length (413) or headers (431) while it parses them, after
    // the request line: the access log can still say what the request was. A malformed request
    // (400) may have stopped anywhere in that line, so it is logged without one.
    if (server_.limits_.answered && method_.empty() && parser_ && status != 400) {
      method_ = std::string(parser_->get().method_string());
      target_ = std::string(parser_->get().target());
    }
    closing_ = true;
    busy_ = true;
    write({status, error_body(message), "application/json", {}, kRefusedRoute});
  }

  void write(HttpResponse&& r) {
    response_ = {};
    response_.version(11);
    response_.result(r.status);
    response_.set(http::field::server, "simkit");
    response_.set(http::field::content_type, r.content_type);
    for (auto& [name, value] : r.headers) response_.set(name, value);
    answered_route_ = std::move(r.route);
    response_.body() = std::move(r.body);
    const bool keep = keep_alive_ && !closing_;
    response_.keep_alive(keep);
    response_.prepare_payload();
    stream_.expires_after(server_.limits_.request_timeout);
    http::async_write(stream_, response_, [self = shared_from_this(), keep](beast::error_code ec, size_t) {
      self->busy_ = false;
      self->report();
      if (ec || !keep || self->closing_) return self->close();
      self->read();
    });
  }

  // The answer is written (or its write failed: the client went away): tell the access log.
  void report() {
    if (!server_.limits_.answered) return;
    Exchange e;
    e.client = client_;
    e.method = method_;
    e.target = target_;
    e.status = response_.result_int();
    e.bytes = response_.body().size();
    e.took = std::chrono::steady_clock::now() - received_;
    e.route = answered_route_.empty() ? "unknown" : answered_route_;
    server_.limits_.answered(e);
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  const std::string client_;  // the peer's address (only when there is an access log)
  // Bodies from this size on are read by read_body_direct; smaller ones (searches) by Beast.
  static constexpr uint64_t kDirectBodyBytes = 256 * 1024;

  beast::tcp_stream stream_;
  asio::io_context& io_;  // the one thread that runs every handler of this connection
  beast::flat_buffer buffer_;
  std::string direct_body_;   // read_body_direct's body, until on_body hands it on
  size_t direct_length_ = 0;  // its Content-Length
  size_t direct_filled_ = 0;  // bytes of it received so far
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  HttpServer& server_;
  std::chrono::steady_clock::time_point received_;
  std::string method_, target_;  // of the request being answered (only when there is an access log)
  std::string answered_route_;   // the handler's label of the response being written
  bool keep_alive_ = false;
  bool busy_ = false;
  bool closing_ = false;
  bool in_request_ = false;  // between a request's headers and its body's end
};

HttpServer::HttpServer(IoPool& pool, const tcp::endpoint& at, HttpLimits limits, Handler handler)
    : pool_(pool), acceptor_(pool.main()), limits_(std::move(limits)), handler_(std::move(handler)) {
  acceptor_.open(at.protocol());
  acceptor_.set_option(asio::socket_base::reuse_address(true));
  acceptor_.bind(at);
  acceptor_.listen(asio::socket_base::max_listen_connections);
}

HttpServer::~HttpServer() = default;

uint16_t HttpServer::port() const { return acceptor_.local_endpoint().port(); }

void HttpServer::start() { accept(); }

void HttpServer::accept() {
  asio::io_context& io = pool_.next();
  acceptor_.async_accept(io, [this, &io](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
      return accept();  // e.g. out of file descriptors for a moment: keep serving the others
    }
    // Responses are small and latency matters: no Nagle delay waiting for the client's ACK.
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto session = std::make_shared<Session>(std::move(socket), io, *this);
    bool reject;
    {
      std::lock_guard g(sessions_mutex_);
      reject = draining_ || static_cast<int64_t>(sessions_.size()) >= limits_.max_connections;
      sessions_.emplace(session.get(), session);
    }
    if (reject && limits_.refused) limits_.refused(503);
    session->run(reject);
    accept();
  });
}

void HttpServer::drain() {
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  std::vector<std::shared_ptr<Session>> open;
  {
    std::lock_guard g(sessions_mutex_);
    draining_ = true;
    for (auto& [raw, weak] : sessions_)
      if (auto s = weak.lock()) open.push_back(std::move(s));
  }
  for (auto& s : open) s->close_if_idle();
}

}  // namespace simkit::server
