#pragma once
// What `simkit loadgen` asks the server outside the timed run, each time on a connection of its
// own: which collection to search when none is named, one search before the run (the probe,
// which turns a 4xx into one clear error instead of a run of failures), and GET /metrics just
// before and just after the run (the batch sizes the server reports for the run's window).

#include <chrono>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "loadgen_stats.hpp"

namespace simkit::cli::loadgen {

struct Reply {
  int status = 0;
  std::string reason, body;
};

/// Sends `request` (complete HTTP/1.1 bytes) on a new connection and reads the response.
/// Error(io) naming `where` when it cannot connect, fails or has no answer within `timeout`.
Reply exchange(boost::asio::io_context& ioc, const boost::asio::ip::tcp::resolver::results_type& endpoints,
               const std::string& request, const std::string& where, std::chrono::seconds timeout);

/// The collection to search when --collection is not given: the server's only one (GET
/// /collections); Error(invalid_argument) naming them when it has none or several.
std::string only_collection(boost::asio::io_context& ioc, const boost::asio::ip::tcp::resolver::results_type& endpoints,
                            const Target& target, const std::string& api_key);

/// The first search request, before the run: a 4xx other than 429 is Error(invalid_argument)
/// quoting the server; 429 and 5xx (an overloaded server) only print a note.
void probe(boost::asio::io_context& ioc, const boost::asio::ip::tcp::resolver::results_type& endpoints,
           const std::string& request, const std::string& where);

/// The server's simkit_batch_size histogram now; nullopt when /metrics cannot be read or does
/// not hold it (a server other than simkit's, or one that refuses the key).
std::optional<BatchHistogram> read_batch_histogram(boost::asio::io_context& ioc,
                                                   const boost::asio::ip::tcp::resolver::results_type& endpoints,
                                                   const Target& target, const std::string& api_key);

}  // namespace simkit::cli::loadgen
