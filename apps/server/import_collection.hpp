#pragma once
// `simkit import`: a collection written into a data directory offline, at the speed of the
// disk rather than of HTTP and JSON. The result is what a server would have written for the
// same points upserted over REST (the same points.sqlite, through PointStore), and `simkit
// serve` opens it like any other collection (building its index from the points at start).
//
// In order: the data directory is locked (data_dir_lock.hpp: refused while a server or another
// import holds it) and the collection must not exist; the inputs are read, then checked
// (import_inputs.hpp); the database is written under a temporary name in large transactions
// without a per-transaction fsync (nobody can see it yet), then checkpointed and synced, and
// only then renamed into place (and the folder synced). A failure at any point leaves the data
// directory as it was: the temporary folder is removed (and a server's start sweeps away one
// that a crash left).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "request_limits.hpp"

namespace simkit::server {

struct ImportOptions {
  std::filesystem::path data_dir;
  std::string collection;
  std::string vectors;   // path (import_inputs.hpp says which formats)
  std::string payloads;  // path or empty
  std::string ids;       // path or empty: 0 .. n-1
  std::string distance = "Cosine";
  std::string index = "flat";  // the description the server builds the collection's index from
  PayloadLimits limits;        // the server's defaults
  int64_t points_per_transaction = 16384;
  /// Called with a line of progress every few seconds while the import runs.
  std::function<void(const std::string&)> progress;
};

/// Where the time went, in seconds: read (the files off the disk), check (the values, ids and
/// payloads), write (the SQLite transactions), sync (checkpoint, fsync, rename).
struct ImportReport {
  int64_t points = 0;
  int64_t dim = 0;
  double read = 0, check = 0, write = 0, sync = 0;
};

/// Runs the import; Error(invalid_argument) or Error(io) naming the problem otherwise.
ImportReport import_collection(const ImportOptions& options);

}  // namespace simkit::server
