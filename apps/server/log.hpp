#pragma once
// What `simkit serve` tells its operator on stderr, gated by --log-level. One call writes one
// whole line ("simkit serve: ..." and a newline) with a single write, so lines from the I/O
// threads, the loader and the batchers never interleave mid-line.
//
//   error  something failed that the operator must act on (a collection that cannot load)
//   warn   something was cut short or degraded (a drain that ran out of time)
//   info   the server's life: settings at start, each collection loaded, ready, draining, stopped
//   debug  more detail: the settings in full, each collection as its load begins
//
// "listening on http://HOST:PORT" is not a log line: it goes to stdout whatever the level, since
// scripts (and tests/server/conftest.py) read the port from it.

#include <string>
#include <string_view>

namespace simkit::server {

enum class LogLevel { error = 0, warn = 1, info = 2, debug = 3 };

/// "error", "warn", "info" or "debug" (as --log-level takes them); anything else throws
/// simkit::Error(invalid_argument) naming the flag and the choices.
LogLevel parse_log_level(std::string_view name);
const char* to_string(LogLevel level);

/// What each line starts with (default "simkit serve"; a rank of a sharded server says which,
/// "simkit serve[rank 1 of 3]"). Set once at start-up, before any thread logs.
void set_log_name(std::string_view name);

/// The process's level (default info). Set once at start-up, before any thread logs.
void set_log_level(LogLevel level);
bool logging(LogLevel level);

/// printf-style; writes "simkit serve: <text>\n" (the log name) to stderr when `level` is enabled.
void log_line(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace simkit::server
