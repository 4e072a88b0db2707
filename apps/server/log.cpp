#include "log.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>

#include <simkit/error.hpp>

namespace simkit::server {

namespace {

std::atomic<LogLevel> current{LogLevel::info};
char log_name[96] = "simkit serve";

}  // namespace

LogLevel parse_log_level(std::string_view name) {
  for (LogLevel l : {LogLevel::error, LogLevel::warn, LogLevel::info, LogLevel::debug})
    if (name == to_string(l)) return l;
  throw Error(ErrorCode::invalid_argument,
              "--log-level " + simkit::quoted(name) + " is not a level: use error, warn, info or debug");
}

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::error: return "error";
    case LogLevel::warn: return "warn";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
  }
  return "info";
}

void set_log_name(std::string_view name) {
  const size_t n = std::min(name.size(), sizeof log_name - 1);
  name.copy(log_name, n);
  log_name[n] = '\0';
}

void set_log_level(LogLevel level) { current.store(level, std::memory_order_relaxed); }

bool logging(LogLevel level) { return level <= current.load(std::memory_order_relaxed); }

void log_line(LogLevel level, const char* format, ...) {
  if (!logging(level)) return;
  // One buffer, one write(2): stdio's stderr is unbuffered and would write the prefix, the text
  // and the newline separately, which other threads' lines could split.
  char line[2048];
  int n = std::snprintf(line, sizeof line, "%s: ", log_name);
  va_list args;
  va_start(args, format);
  const int text = std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n) - 1, format, args);
  va_end(args);
  if (text > 0) n = std::min<int>(n + text, static_cast<int>(sizeof line) - 2);  // a longer line is cut
  line[n++] = '\n';
  std::fflush(stderr);  // whatever stdio still holds goes first
  for (ssize_t done = 0; done < n;) {
    const ssize_t w = ::write(STDERR_FILENO, line + done, static_cast<size_t>(n - done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;  // stderr closed: a log line is not worth failing for
    done += w;
  }
}

}  // namespace simkit::server
