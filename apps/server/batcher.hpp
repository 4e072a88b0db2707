#pragma once
// The dynamic batcher: single-query searches wait (at most `max_delay`) to be run together as
// one matrix-shaped search of up to `max_batch` rows, which turns many bandwidth-bound
// matrix-vector products into one matrix product.
//
// Its queue is bounded: submit() refuses at once when `max_queue` jobs wait, so a burst costs
// a fast 503 rather than memory. A job whose deadline passes while it waits is answered
// "expired" (504) and never run. `workers` threads take batches and hand each to `run`; while
// they run, the next batch fills, so a busy batcher batches more. One worker is the default:
// more keep a GPU busy between calls but split the queue into smaller batches (serve --help).

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace simkit::server {

using Clock = std::chrono::steady_clock;

struct BatcherLimits {
  int64_t max_batch = 64;
  std::chrono::microseconds max_delay{2000};
  int64_t max_queue = 4096;
  int workers = 1;
};

/// What a batch runs on. A job is opaque to the batcher except for its times.
template <class Job>
struct Queued {
  Job job;
  Clock::time_point enqueued;
  Clock::time_point deadline;
};

template <class Job>
class Batcher {
 public:
  struct Hooks {
    /// Runs one batch (never empty); called on the batcher's thread.
    std::function<void(std::vector<Queued<Job>>&)> run;
    /// Answers a job whose deadline passed while it waited.
    std::function<void(Queued<Job>&)> expire;
    /// Observes the queue's depth after each change (for a gauge); may be empty.
    std::function<void(int64_t)> depth;
  };

  Batcher(BatcherLimits limits, Hooks hooks) : limits_(limits), hooks_(std::move(hooks)) {
    for (int i = 0; i < std::max(1, limits_.workers); ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Batcher() { stop(); }
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  /// Queues all of `jobs` or none: false when they do not fit or the batcher is stopping.
  bool submit(std::vector<Queued<Job>>& jobs) {
    int64_t depth = 0;
    {
      std::lock_guard g(mutex_);
      if (stopping_ || static_cast<int64_t>(queue_.size() + jobs.size()) > limits_.max_queue) return false;
      for (auto& j : jobs) queue_.push_back(std::move(j));
      depth = static_cast<int64_t>(queue_.size());
    }
    ready_.notify_one();
    if (hooks_.depth) hooks_.depth(depth);
    return true;
  }

  int64_t depth() const {
    std::lock_guard g(mutex_);
    return static_cast<int64_t>(queue_.size());
  }

  /// True once stop() began: submit() refuses for good, not for a moment.
  bool stopping() const {
    std::lock_guard g(mutex_);
    return stopping_;
  }

  /// Runs what is queued, then stops the thread. Idempotent.
  void stop() {
    {
      std::lock_guard g(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      // Wait for a full batch, or until the oldest job has waited max_delay.
      const Clock::time_point close = queue_.front().enqueued + limits_.max_delay;
      ready_.wait_until(lock, close,
                        [&] { return stopping_ || static_cast<int64_t>(queue_.size()) >= limits_.max_batch; });
      std::vector<Queued<Job>> batch, expired;
      const Clock::time_point now = Clock::now();
      while (!queue_.empty() && static_cast<int64_t>(batch.size()) < limits_.max_batch) {
        Queued<Job>& q = queue_.front();
        (q.deadline <= now ? expired : batch).push_back(std::move(q));
        queue_.pop_front();
      }
      const int64_t depth = static_cast<int64_t>(queue_.size());
      lock.unlock();
      if (depth > 0) ready_.notify_one();  // another worker may start on what is left
      if (hooks_.depth) hooks_.depth(depth);
      for (auto& e : expired) hooks_.expire(e);
      if (!batch.empty()) hooks_.run(batch);
      lock.lock();
    }
  }

  BatcherLimits limits_;
  Hooks hooks_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Queued<Job>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace simkit::server
