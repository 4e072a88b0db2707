#pragma once
// The HTTP threads: one io_context per thread, each connection pinned to one of them.
//
// One io_context run by eight threads sends every completion of every connection through one
// scheduler queue and one reactor lock. On the H100 machine that capped `simkit serve` near
// 20,000 searches/s: requests spent ~35 ms in that queue while the batcher waited 1 ms and the
// GPU 2 ms (bench/results/2026-11-24-serve.md). With a context per thread a connection's
// handlers all run on its one thread, so it needs no strand, and the threads share nothing
// but the hand-off of new connections.

#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace simkit::server {

class IoPool {
 public:
  explicit IoPool(int threads) {
    for (int i = 0; i < (threads > 0 ? threads : 1); ++i) {
      // Concurrency hint 1: each context is run by exactly one thread.
      contexts_.push_back(std::make_unique<boost::asio::io_context>(1));
      guards_.emplace_back(contexts_.back()->get_executor());
    }
  }

  size_t size() const noexcept { return contexts_.size(); }
  /// The context of the acceptor and the signal handlers.
  boost::asio::io_context& main() noexcept { return *contexts_.front(); }
  /// The context for the next new connection (round robin; called from main's thread only).
  boost::asio::io_context& next() noexcept { return *contexts_[next_++ % contexts_.size()]; }

  /// Runs every context, main's on the calling thread, until each has run out of work (after
  /// release()) or been stopped.
  void run() {
    std::vector<std::thread> threads;
    for (size_t i = 1; i < contexts_.size(); ++i) threads.emplace_back([c = contexts_[i].get()] { c->run(); });
    contexts_.front()->run();
    for (auto& t : threads) t.join();
  }

  /// Lets each context return once its connections and pending responses are done (a drain).
  void release() {
    for (auto& g : guards_) g.reset();
  }

  /// Ends every context now (a drain that took too long).
  void stop() {
    for (auto& c : contexts_) c->stop();
  }

 private:
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::vector<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guards_;
  size_t next_ = 0;
};

}  // namespace simkit::server
