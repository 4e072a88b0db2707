#pragma once
// One rank's share of the sharded server's work (`mpirun -n P simkit serve`): every rank keeps its
// points in an Api of its own over <data-dir>/rank-<r>-of-<P>/ (data_dir_layout.hpp), and runs
// there what rank 0 asks (shard_wire.hpp): HTTP requests through that Api, and its share of
// upserts, search batches and scrolls straight on its collections. Rank 0 runs its own share
// with the same functions (shard_router.hpp); ranks 1..P-1 through ShardWorker, fed by the
// transport's thread (apps/cli/mpi_serve.cpp).

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "api.hpp"
#include "shard_wire.hpp"

namespace simkit::server {

/// The status and message an exception being handled answers with, as Api answers it: an
/// ApiError's status, 400 for simkit's invalid_argument, 500 for anything else.
StatusReply status_of_current_exception();

/// Upserts a rank's points (none: nothing is written) and answers the collection's sequence
/// number once they are durable and visible.
StatusReply upsert_share(Collection& collection, std::vector<StoredPoint> points);

/// Runs a batch of searches on the rank's points now: each query's exclude_points resolved to
/// this rank's ids; one outcome per query, in order. `enqueued`: when each was queued (the queue
/// wait metric; none: now).
std::vector<SearchOutcome> search_share(Collection& collection, std::vector<SearchQuery> queries,
                                        const std::vector<Clock::time_point>& enqueued = {});

/// The rank's page of a sharded scroll (shard_wire.hpp, ShardScroll).
ScrollShare scroll_share(Collection& collection, const ShardScroll& scroll, int rank);

/// Ranks 1..P-1: runs rank 0's messages against this rank's Api.
class ShardWorker {
 public:
  ShardWorker(Api& api, int rank);
  ~ShardWorker();
  ShardWorker(const ShardWorker&) = delete;
  ShardWorker& operator=(const ShardWorker&) = delete;

  /// Runs one message; `done` gets the answer exactly once, on any thread. Called from the
  /// transport's thread: what may wait (the disk, a search) runs on a pool of its own.
  void execute(std::string message, std::function<void(std::string)> done);
  /// The loader's end: the collections are open (`error` empty) or could not be.
  void set_loaded(std::string error);
  /// Waits for the work in hand to finish (before the Api closes).
  void join();

 private:
  void run(const std::string& message, const std::function<void(std::string)>& done);
  Api& api_;
  int rank_;
  boost::asio::thread_pool pool_;
  std::mutex mutex_;
  std::condition_variable loaded_cv_;
  bool loaded_ = false;
  std::string load_error_;
};

}  // namespace simkit::server
