#pragma once
// One process at a time on a data directory: `simkit serve` holds it while it runs, and
// `simkit import` while it writes a collection there. Two servers on one directory would each
// hold its collections' indexes in memory and overwrite each other's writes; an import under a
// running server would go unseen by it, and its startup sweep removes half-written imports.
//
// The lock is flock(2) on <data-dir>/.lock, which holds the holder's pid and command for the
// message of whoever is refused. The kernel releases it when the holder exits, however it exits
// (kill -9 included), so a crash never leaves a stale lock behind.

#include <filesystem>
#include <string>

namespace simkit::server {

class DataDirLock {
 public:
  /// Takes the lock of `dir` (created if missing) for `holder` ("simkit serve"), or throws
  /// Error(io) "the data directory D is in use by a running simkit serve (pid N); " + `advice`.
  DataDirLock(const std::filesystem::path& dir, const std::string& holder, const std::string& advice);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace simkit::server
