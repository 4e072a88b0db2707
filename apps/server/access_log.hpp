#pragma once
// --access-log PATH|-: one JSON line per answered request (docs/API.md, "Access log"):
//
//   {"time":"2026-11-27T10:15:02.123Z","client":"127.0.0.1:53211","method":"POST",
//    "target":"/collections/docs/points/search?timeout=2","status":200,"bytes":61,"ms":2.417,
//    "route":"POST /collections/{name}/points/search"}
//
// (one line in the file). time: when the answer was written, UTC, milliseconds; target: the
// path and query as sent, cut at 1000 bytes (then ending in "..."), every byte outside printable
// ASCII written as \u00XX, so a line is always valid JSON and one line; bytes: the response
// body; ms: from the request's headers read to its answer written; route: the router's label
// (the metrics' `route`), "refused before routing" for a request the transport refused (413,
// 431, 501, a malformed request, 503 at accept), whose method and target are null when the
// request line was never read. Headers are never logged, so neither is an API key.
//
// Writing never blocks an I/O thread on the disk: record() formats the line and appends it to a
// buffer in memory; one writer thread writes what has gathered (a write(2) per wake-up, no
// stdio buffering, so a line reaches the file within microseconds of its answer). If the disk
// falls more than 8 MiB behind, further lines are dropped and counted, and a warning says how
// many; the server never slows down for its log.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "http_server.hpp"

namespace simkit::server {

/// One line, without its newline; `at` is the time the answer was written.
std::string access_log_line(const Exchange& exchange, std::chrono::system_clock::time_point at);

class AccessLog {
 public:
  /// "-" writes to stdout; anything else is a file opened for appending (created if missing).
  /// Throws simkit::Error(io) naming --access-log and the reason.
  explicit AccessLog(const std::string& where);
  /// Writes every line still buffered, then closes the file.
  ~AccessLog();
  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  /// Called on an I/O thread once the answer is written; returns without touching the disk.
  void record(const Exchange& exchange);

 private:
  void write_loop();

  static constexpr size_t kMaxBehind = 8u << 20;  // bytes buffered before lines are dropped
  std::string where_;
  int fd_ = -1;
  bool own_fd_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string pending_;    // lines not yet written (mutex_)
  uint64_t dropped_ = 0;   // lines dropped since the last warning (mutex_)
  bool stopping_ = false;  // (mutex_)
  std::thread writer_;
};

}  // namespace simkit::server
