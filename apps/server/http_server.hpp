#pragma once
// The HTTP/1.1 transport (Boost.Beast over Asio): keep-alive connections, one request at a time
// per connection, a body limit enforced from the headers (413 before any body byte is read),
// a connection limit (503 at accept), idle and slow-client timeouts, and a drain that stops
// accepting, closes idle connections and lets in-flight requests finish.
//
// It knows nothing of the API: each request goes to a Handler together with a Responder, which
// the handler (or a batcher thread, later) calls exactly once to send the response.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "io_pool.hpp"

namespace simkit::server {

/// Spare capacity a large body's string has past its end (HttpRequest::body): room for a JSON
/// parser that reads a few bytes beyond the text (simdjson's padding), so it needs no copy.
constexpr size_t kBodyPadding = 64;

struct HttpRequest {
  std::string method;  // "GET", "PUT", ...
  std::string path;    // the target up to '?', not decoded
  std::string query;   // after '?', not decoded
  std::string body;
  std::string api_key;                             // the api-key header
  std::string authorization;                       // the Authorization header
  std::chrono::steady_clock::time_point received;  // when its headers were read
};

struct HttpResponse {
  unsigned status = 200;
  std::string body;  // JSON unless content_type says otherwise
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string route;  // the handler's label of the request, for the access log (not sent)
};

/// One request and its answer as the transport saw them, once the answer is written: what the
/// access log records (access_log.hpp).
struct Exchange {
  std::string client;  // the peer, "127.0.0.1:53211" or "[::1]:53211"
  std::string method;  // empty when the request line was never read (a malformed request, 503 at accept)
  std::string target;  // path and query as sent, not decoded
  unsigned status = 0;
  size_t bytes = 0;                          // of the response body
  std::chrono::steady_clock::duration took;  // from the headers read (or the accept) to the answer written
  std::string route;                         // HttpResponse::route; "refused before routing" for the transport's own
};

using Responder = std::function<void(HttpResponse&&)>;
using Handler = std::function<void(HttpRequest&&, Responder)>;

struct HttpLimits {
  size_t max_body_bytes = 32u << 20;
  int64_t max_connections = 4096;
  std::chrono::seconds idle_timeout{60};     // a keep-alive connection with no request
  std::chrono::seconds request_timeout{30};  // reading one request's headers and body
  /// Called when a request is refused before the handler sees it (413, 400, 503 at accept),
  /// with the status: the API counts these in its metrics.
  std::function<void(unsigned)> refused;
  /// Called on the connection's I/O thread after each answer is written, refusals included
  /// (--access-log); must not block. Unset: nothing is gathered.
  std::function<void(const Exchange&)> answered;
};

class HttpServer {
 public:
  /// Listens at `at` on the pool's main context; each connection is served by one context.
  HttpServer(IoPool& pool, const boost::asio::ip::tcp::endpoint& at, HttpLimits limits, Handler handler);
  ~HttpServer();
  /// The port actually bound (port 0 picks a free one).
  uint16_t port() const;
  void start();
  /// Stops accepting, closes idle connections now and every other one after its response.
  void drain();

  class Session;  // one connection (http_server.cpp)

 private:
  void accept();
  IoPool& pool_;
  boost::asio::ip::tcp::acceptor acceptor_;
  HttpLimits limits_;
  Handler handler_;
  std::mutex sessions_mutex_;
  std::unordered_map<Session*, std::weak_ptr<Session>> sessions_;
  bool draining_ = false;
  friend class Session;
};

}  // namespace simkit::server
