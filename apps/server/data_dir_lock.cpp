#include "data_dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <simkit/error.hpp>

namespace simkit::server {

namespace {

// What the holder wrote: "<pid> <command>", or empty when it is still writing it.
std::string holder_of(int fd) {
  char text[256];
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string s(text, n > 0 ? static_cast<size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

DataDirLock::DataDirLock(const std::filesystem::path& dir, const std::string& holder, const std::string& advice) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path file = dir / ".lock";
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw Error(ErrorCode::io, "cannot open " + simkit::quoted(file.string()) +
                                   " to lock the data directory: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string other = holder_of(fd_);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK)
      throw Error(ErrorCode::io, "cannot lock " + simkit::quoted(file.string()) + ": " + std::strerror(err));
    // "1234 simkit serve" -> "a running simkit serve (pid 1234)"
    const size_t space = other.find(' ');
    const std::string who = space == std::string::npos
                                ? "another simkit process"
                                : "a running " + other.substr(space + 1) + " (pid " + other.substr(0, space) + ")";
    throw Error(ErrorCode::io,
                "the data directory " + simkit::quoted(dir.string()) + " is in use by " + who + "; " + advice);
  }
  const std::string text = std::to_string(::getpid()) + " " + holder + "\n";
  // Best effort: the lock is the flock; the text only names its holder in a refusal.
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t written = ::pwrite(fd_, text.data(), text.size(), 0);
  }
}

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace simkit::server
