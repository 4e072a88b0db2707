#pragma once
// What the harnesses share: a private scratch directory for the files they write (on /dev/shm
// when there is one, so a write costs no disk), writing the input there, and failing loudly.
//
// A harness "fails" by aborting with a message on stderr: libFuzzer then saves the input as a
// crash-* file, and scripts/fuzz.sh reports the harness as crashed.

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include <simkit/error.hpp>

namespace simkit::fuzz {

/// Prints "fuzz check failed: <what>" and aborts: a finding, not an ordinary refusal.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz check failed: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

/// A directory of this process's own, removed at exit. SIMKIT_FUZZ_TMPDIR, else /dev/shm, else
/// TMPDIR, else /tmp. The path lives on the heap for good: the atexit handler that removes the
/// directory may run after function-local statics are destroyed.
inline const std::string& scratch_dir() {
  static const std::string* const dir = [] {
    std::string base;
    if (const char* t = std::getenv("SIMKIT_FUZZ_TMPDIR"); t && *t)
      base = t;
    else if (std::filesystem::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0)
      base = "/dev/shm";
    else if (const char* t = std::getenv("TMPDIR"); t && *t)
      base = t;
    else
      base = "/tmp";
    auto* path = new std::string(base + "/simkit-fuzz-XXXXXX");
    if (::mkdtemp(path->data()) == nullptr) fail("cannot create a scratch directory under " + base);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(*dir, ec);
    });
    return path;
  }();
  return *dir;
}

/// `name` inside the scratch directory.
inline std::string scratch_path(const std::string& name) { return scratch_dir() + "/" + name; }

/// Replaces `path` with exactly these bytes.
inline void write_file(const std::string& path, const void* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("cannot write " + path);
  if (size > 0 && std::fwrite(data, 1, size, f) != size) fail("short write to " + path);
  if (std::fclose(f) != 0) fail("cannot close " + path);
}

/// An error message that is empty or holds a control character (a newline splitting the CLI's
/// one-line error, an escape reaching a terminal) is a finding: every text from the input must
/// reach a message through simkit::quoted.
inline void check_message(const std::exception& e) {
  const std::string_view m = e.what();
  check(!m.empty(), "an empty error message");
  for (const char c : m)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      fail("a control character in the error message: " + std::string(m));
}

}  // namespace simkit::fuzz
