#include "loadgen_server.hpp"

#include <cstdio>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <nlohmann/json.hpp>
#include <simkit/error.hpp>

#include "cli_support.hpp"

namespace simkit::cli::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

Reply exchange(asio::io_context& ioc, const tcp::resolver::results_type& endpoints, const std::string& request,
               const std::string& where, std::chrono::seconds timeout) {
  tcp::socket socket(ioc);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64ull << 20);
  error_code result = asio::error::timed_out;
  bool done = false, connected = false;
  asio::async_connect(socket, endpoints, [&](error_code ec, const tcp::endpoint&) {
    if (ec) {
      result = ec;
      done = true;
      return;
    }
    connected = true;
    asio::async_write(socket, asio::buffer(request), [&](error_code ec, size_t) {
      if (ec) {
        result = ec;
        done = true;
        return;
      }
      http::async_read(socket, buffer, parser, [&](error_code ec, size_t) {
        result = ec;
        done = true;
      });
    });
  });
  ioc.restart();
  ioc.run_for(timeout);
  if (!done) {
    error_code ignored;
    socket.close(ignored);
    ioc.restart();
    ioc.poll();
    throw Error(ErrorCode::io, connected
                                   ? "no answer from " + where + " within " + std::to_string(timeout.count()) + " s"
                                   : "cannot connect to " + where + ": timed out");
  }
  if (result)
    throw Error(ErrorCode::io, connected ? "a request to " + where + " failed: " + result.message()
                                         : "cannot connect to " + where + ": " + result.message());
  Reply r;
  r.status = int(parser.get().result_int());
  r.reason = std::string(parser.get().reason());
  r.body = std::move(parser.get().body());
  return r;
}

std::string only_collection(asio::io_context& ioc, const tcp::resolver::results_type& endpoints, const Target& target,
                            const std::string& api_key) {
  std::string request = "GET " + target.prefix + "/collections HTTP/1.1\r\nHost: " + target.host_header +
                        "\r\nUser-Agent: simkit-loadgen\r\nConnection: close\r\n";
  if (!api_key.empty()) request += "api-key: " + api_key + "\r\n";
  const Reply r = exchange(ioc, endpoints, request + "\r\n", target.host_header, std::chrono::seconds(10));
  if (r.status != 200)
    bad("--collection not given, and GET /collections answered HTTP " + std::to_string(r.status) + " " +
        simkit::quoted(r.reason) + ": name the collection");
  std::vector<std::string> names;
  const nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("result") && j["result"].is_object() && j["result"].contains("collections") &&
      j["result"]["collections"].is_array())
    for (const auto& c : j["result"]["collections"])
      if (c.is_object() && c.contains("name") && c["name"].is_string()) names.push_back(c["name"].get<std::string>());
  if (names.size() == 1) return names.front();
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + simkit::quoted(n);
  bad(names.empty() ? "--collection not given, and the server lists no collection"
                    : "--collection not given, and the server has " + std::to_string(names.size()) + " collections (" +
                          list + "): name one");
}

void probe(asio::io_context& ioc, const tcp::resolver::results_type& endpoints, const std::string& request,
           const std::string& where) {
  Reply r = exchange(ioc, endpoints, request, where, std::chrono::seconds(10));
  const std::string body = r.body.empty() ? "" : simkit::quoted(r.body, 300);
  if (r.status >= 400 && r.status < 500 && r.status != 429)
    bad("the server refused a first search request: HTTP " + std::to_string(r.status) + " " + simkit::quoted(r.reason) +
        (body.empty() ? "" : ": " + body));
  if (r.status != 200)
    std::fprintf(stderr, "simkit loadgen: note: a first search request got HTTP %d %s; running anyway\n", r.status,
                 simkit::quoted(r.reason).c_str());
}

std::optional<BatchHistogram> read_batch_histogram(asio::io_context& ioc, const tcp::resolver::results_type& endpoints,
                                                   const Target& target, const std::string& api_key) {
  std::string request = "GET " + target.prefix + "/metrics HTTP/1.1\r\nHost: " + target.host_header +
                        "\r\nUser-Agent: simkit-loadgen\r\nConnection: close\r\n";
  if (!api_key.empty()) request += "api-key: " + api_key + "\r\n";
  request += "\r\n";
  try {
    const Reply r = exchange(ioc, endpoints, request, target.host_header, std::chrono::seconds(5));
    if (r.status != 200) return std::nullopt;
    return parse_batch_histogram(r.body);
  } catch (const Error&) {
    return std::nullopt;  // the report says the batch sizes are unknown
  }
}

}  // namespace simkit::cli::loadgen
