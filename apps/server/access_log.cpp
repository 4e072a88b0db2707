#include "access_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <simkit/error.hpp>

#include "log.hpp"

namespace simkit::server {

namespace {

constexpr size_t kMaxTarget = 1000;  // bytes of a request target kept in a line

// `text` as a JSON string. Bytes outside printable ASCII (controls, DEL, and every byte of a
// multi-byte sequence) become \u00XX, one per byte: a target is ASCII when the client
// percent-encodes as it should, and this way a hostile one cannot break the line or the JSON.
void append_json_string(std::string& out, std::string_view text, size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  out += '"';
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += ch;
    }
  }
  if (cut) out += "...";
  out += '"';
}

void append_utc(std::string& out, std::chrono::system_clock::time_point at) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  out += buf;
}

}  // namespace

std::string access_log_line(const Exchange& e, std::chrono::system_clock::time_point at) {
  std::string line;
  line.reserve(256 + std::min(e.target.size(), kMaxTarget));
  line += "{\"time\":\"";
  append_utc(line, at);
  line += "\",\"client\":";
  append_json_string(line, e.client, 100);
  line += ",\"method\":";
  if (e.method.empty())
    line += "null";
  else
    append_json_string(line, e.method, 32);
  line += ",\"target\":";
  if (e.method.empty())
    line += "null";
  else
    append_json_string(line, e.target, kMaxTarget);
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, ",\"status\":%u,\"bytes\":%zu,\"ms\":%.3f,\"route\":", e.status, e.bytes,
                std::chrono::duration<double, std::milli>(e.took).count());
  line += numbers;
  append_json_string(line, e.route, 200);
  line += '}';
  return line;
}

AccessLog::AccessLog(const std::string& where) : where_(where) {
  if (where == "-") {
    fd_ = STDOUT_FILENO;
  } else {
    fd_ = ::open(where.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw Error(ErrorCode::io, "--access-log " + simkit::quoted(where) + ": cannot open it for appending (" +
                                     std::strerror(errno) + ")");
    own_fd_ = true;
  }
  writer_ = std::thread([this] { write_loop(); });
}

AccessLog::~AccessLog() {
  {
    std::lock_guard g(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
  if (own_fd_) ::close(fd_);
}

void AccessLog::record(const Exchange& exchange) {
  std::string line = access_log_line(exchange, std::chrono::system_clock::now());
  line += '\n';
  {
    std::lock_guard g(mutex_);
    if (pending_.size() + line.size() > kMaxBehind) {
      ++dropped_;
      return;
    }
    pending_ += line;
  }
  wake_.notify_one();
}

void AccessLog::write_loop() {
  std::string batch;
  bool failing = false;  // said once when writes start failing, not once per batch
  for (;;) {
    uint64_t dropped = 0;
    bool last = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      batch.swap(pending_);
      pending_.clear();
      std::swap(dropped, dropped_);
      last = stopping_ && batch.empty();
    }
    for (size_t done = 0; done < batch.size();) {
      const ssize_t w = ::write(fd_, batch.data() + done, batch.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        if (!failing)
          log_line(LogLevel::error, "access log %s: write failed (%s); lines are lost until writes work again",
                   where_.c_str(), std::strerror(errno));
        failing = true;
        break;
      }
      done += static_cast<size_t>(w);
      failing = false;
    }
    if (dropped > 0)
      log_line(LogLevel::warn, "access log %s: %llu lines dropped (the disk fell more than 8 MiB behind)",
               where_.c_str(), static_cast<unsigned long long>(dropped));
    batch.clear();
    if (last) return;
  }
}

}  // namespace simkit::server
