// apps/cli/mpi_serve.hpp: `mpirun -n P simkit serve`, the MPI half.

#include "mpi_serve.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "../server/api.hpp"
#include "../server/data_dir_layout.hpp"
#include "../server/data_dir_lock.hpp"
#include "../server/log.hpp"
#include "../server/metrics.hpp"
#include "../server/shard_router.hpp"
#include "../server/shard_worker.hpp"
#include "mpi_launch.hpp"

namespace simkit::cli {

namespace {

namespace fs = std::filesystem;
using server::log_line;
using server::LogLevel;

// What a message is, by its MPI tag. kAsk and kAnswer start with the 8-byte number that pairs them.
enum Tag : int {
  kAsk = 11,      // rank 0 -> rank: a request (shard_wire.hpp)
  kAnswer = 12,   // rank -> rank 0: its answer
  kStop = 13,     // rank 0 -> rank: the server has drained; close and exit
  kStopped = 14,  // rank -> rank 0: closed
  kDrain = 15,    // rank -> rank 0: this rank was signalled; drain the server
};

volatile std::sig_atomic_t signalled = 0;  // ranks > 0: SIGTERM or SIGINT arrived

extern "C" void note_signal(int) { signalled = 1; }

std::string with_number(uint64_t number, std::string_view payload) {
  std::string m(sizeof number + payload.size(), '\0');
  std::memcpy(m.data(), &number, sizeof number);
  std::memcpy(m.data() + sizeof number, payload.data(), payload.size());
  return m;
}

uint64_t number_of(const std::string& m) {
  uint64_t number = 0;
  if (m.size() >= sizeof number) std::memcpy(&number, m.data(), sizeof number);
  return number;
}

// A rank's MPI, driven by its main thread alone; other threads only queue messages for it.
class MpiPort final : public server::ShardLink {
 public:
  explicit MpiPort(int ranks) : ranks_(ranks) {}

  void send(int to, std::shared_ptr<const std::string> message, std::function<void(std::string&&)> answer) override {
    std::lock_guard g(mutex_);
    const uint64_t number = next_++;
    waiting_.emplace(number, std::move(answer));
    out_.push_back({to, kAsk, std::make_shared<const std::string>(with_number(number, *message))});
    cv_.notify_one();
  }

  void queue(int to, int tag, std::string bytes) {
    std::lock_guard g(mutex_);
    out_.push_back({to, tag, std::make_shared<const std::string>(std::move(bytes))});
    cv_.notify_one();
  }

  void wake() {
    std::lock_guard g(mutex_);
    woken_ = true;
    cv_.notify_one();
  }

  /// Rank 0: carries the server's requests until `finished`, then stops every rank.
  void serve_front(const std::atomic<bool>& finished, const std::function<void()>& drain);
  /// Ranks > 0: runs rank 0's requests on `worker` until rank 0 says stop.
  void serve_rank(server::ShardWorker& worker);
  /// Ranks > 0, once closed: tells rank 0, and returns when that has been sent.
  void report_stopped();

 private:
  struct Out {
    int to, tag;
    std::shared_ptr<const std::string> bytes;
  };
  struct Flying {
    MPI_Request request;
    std::shared_ptr<const std::string> bytes;
  };

  bool flush();
  template <class Got>
  bool poll(int source, Got got);
  void rest(bool busy);
  void deliver(std::string&& bytes);
  bool idle();

  int ranks_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Out> out_;
  std::unordered_map<uint64_t, std::function<void(std::string&&)>> waiting_;  // rank 0: asked, not answered
  uint64_t next_ = 1;
  bool woken_ = false;
  std::vector<Flying> flying_;  // the main thread's
  std::chrono::microseconds pause_{0};
};

// Posts what was queued and completes what was sent; true when anything moved.
bool MpiPort::flush() {
  std::deque<Out> out;
  {
    std::lock_guard g(mutex_);
    out.swap(out_);
  }
  for (Out& o : out) {
    if (o.bytes->size() > static_cast<size_t>(INT_MAX)) {
      log_line(LogLevel::error, "a message of %zu bytes is past MPI's 2 GiB count; stopping the job", o.bytes->size());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    Flying f{MPI_REQUEST_NULL, std::move(o.bytes)};
    MPI_Isend(f.bytes->data(), static_cast<int>(f.bytes->size()), MPI_BYTE, o.to, o.tag, MPI_COMM_WORLD, &f.request);
    flying_.push_back(std::move(f));
  }
  bool moved = !out.empty();
  for (size_t i = 0; i < flying_.size();) {
    int done = 0;
    MPI_Test(&flying_[i].request, &done, MPI_STATUS_IGNORE);
    if (done) {
      flying_[i] = std::move(flying_.back());
      flying_.pop_back();
      moved = true;
    } else {
      ++i;
    }
  }
  return moved;
}

// Receives every message that has arrived from `source`: got(from, tag, bytes).
template <class Got>
bool MpiPort::poll(int source, Got got) {
  bool any = false;
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    MPI_Iprobe(source, MPI_ANY_TAG, MPI_COMM_WORLD, &arrived, &status);
    if (!arrived) return any;
    int n = 0;
    MPI_Get_count(&status, MPI_BYTE, &n);
    std::string bytes(static_cast<size_t>(n), '\0');
    MPI_Recv(bytes.data(), n, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    got(status.MPI_SOURCE, status.MPI_TAG, std::move(bytes));
    any = true;
  }
}

// Idle: waits a little before looking again, longer the longer nothing comes (20 us to 1 ms);
// a message queued here wakes it at once. Messages from other ranks are seen at the next look.
void MpiPort::rest(bool busy) {
  using std::chrono::microseconds;
  if (busy) {
    pause_ = microseconds(0);
    return;
  }
  pause_ = std::clamp(pause_ * 2, microseconds(20), microseconds(1000));
  std::unique_lock lock(mutex_);
  cv_.wait_for(lock, pause_, [this] { return !out_.empty() || woken_; });
  woken_ = false;
}

bool MpiPort::idle() {
  std::lock_guard g(mutex_);
  return out_.empty() && flying_.empty();
}

void MpiPort::deliver(std::string&& bytes) {
  std::function<void(std::string &&)> answer;
  {
    std::lock_guard g(mutex_);
    const auto it = waiting_.find(number_of(bytes));
    if (it == waiting_.end()) return;
    answer = std::move(it->second);
    waiting_.erase(it);
  }
  answer(bytes.substr(sizeof(uint64_t)));
}

void MpiPort::serve_front(const std::atomic<bool>& finished, const std::function<void()>& drain) {
  int stopped = 0;
  bool stopping = false;
  for (;;) {
    bool busy = flush();
    busy = poll(MPI_ANY_SOURCE,
                [&](int from, int tag, std::string&& bytes) {
                  if (tag == kAnswer) {
                    deliver(std::move(bytes));
                  } else if (tag == kDrain) {
                    log_line(LogLevel::info, "rank %d was signalled: draining", from);
                    drain();
                  } else if (tag == kStopped) {
                    ++stopped;
                  }
                }) ||
           busy;
    if (finished && !stopping) {  // the server has drained and closed: every request is answered
      for (int r = 1; r < ranks_; ++r) queue(r, kStop, {});
      stopping = true;
      continue;
    }
    if (stopping && stopped == ranks_ - 1 && idle()) return;
    rest(busy);
  }
}

void MpiPort::serve_rank(server::ShardWorker& worker) {
  bool stop = false, asked = false;
  while (!stop) {
    bool busy = flush();
    busy = poll(0,
                [&](int, int tag, std::string&& bytes) {
                  if (tag == kAsk) {
                    const uint64_t number = number_of(bytes);
                    worker.execute(bytes.substr(sizeof number), [this, number](std::string answer) {
                      queue(0, kAnswer, with_number(number, answer));
                    });
                  } else if (tag == kStop) {
                    stop = true;
                  }
                }) ||
           busy;
    if (signalled && !asked) {
      log_line(LogLevel::info, "signalled: rank 0 drains the server, and this rank stops when it says");
      queue(0, kDrain, {});
      asked = true;
    }
    if (!stop) rest(busy);
  }
}

void MpiPort::report_stopped() {
  queue(0, kStopped, {});
  while (flush() || !idle()) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

int serve_front(MpiPort& port, server::ServeOptions o, int ranks) {
  server::ShardRouter router(port, ranks);
  o.shards = &router;
  std::atomic<bool> finished{false};
  std::exception_ptr error;
  int status = 0;
  std::thread http([&] {
    try {
      status = server::run_server(o);
    } catch (...) {
      error = std::current_exception();
    }
    finished = true;
    port.wake();
  });
  port.serve_front(finished, [&router] { router.drain(); });
  http.join();
  if (error) std::rethrow_exception(error);
  return status;
}

int serve_rank(MpiPort& port, server::Api& api, int rank) {
  server::ShardWorker worker(api, rank);
  std::thread loader([&] {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const int64_t n = api.load_collections();
      log_line(LogLevel::info, "ready: %lld collections loaded in %.2f s", static_cast<long long>(n),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      worker.set_loaded({});
    } catch (const std::exception& e) {
      log_line(LogLevel::error, "loading the collections failed: %s", e.what());
      worker.set_loaded(e.what());
    }
  });
  port.serve_rank(worker);
  api.set_draining();  // a load still running stops between collections
  loader.join();
  worker.join();
  api.close();  // indexes saved
  log_line(LogLevel::info, "stopped");
  port.report_stopped();
  return 0;
}

}  // namespace

int run_serve_mpi(const server::ServeOptions& options) {
  const MpiScope mpi;
  if (mpi.ranks == 1) return server::run_server(options);
  server::set_log_level(options.log_level);
  server::set_log_name("simkit serve[rank " + std::to_string(mpi.rank) + " of " + std::to_string(mpi.ranks) + "]");
  server::ServeOptions mine = options;
  mine.data_dir = server::shard_dir(options.data_dir, mpi.rank, mpi.ranks);
  std::unique_ptr<server::DataDirLock> whole;  // rank 0: the directory is this job's
  on_every_rank([&] {
    server::check_data_dir_layout(options.data_dir, mpi.ranks);
    if (mpi.rank == 0)
      whole = std::make_unique<server::DataDirLock>(options.data_dir, "simkit serve",
                                                    "stop it or serve another --data-dir");
    fs::create_directories(mine.data_dir);
  });
  log_line(LogLevel::info, "pid %d, shard folder %s", static_cast<int>(::getpid()), mine.data_dir.c_str());
  server::Metrics metrics;
  std::unique_ptr<server::Api> api;  // ranks > 0 (rank 0's is run_server's)
  on_every_rank([&] {                // their data directory locks, agreed before rank 0 listens
    if (mpi.rank == 0) return;
    server::ApiSettings settings = server::serve_api_settings(mine);
    settings.api_key.clear();  // only rank 0 is reached over HTTP, and it checks the key
    api = std::make_unique<server::Api>(std::move(settings), metrics);
  });
  MpiPort port(mpi.ranks);
  if (mpi.rank == 0) return serve_front(port, mine, mpi.ranks);
  struct sigaction action {};
  action.sa_handler = note_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  return serve_rank(port, *api, mpi.rank);
}

}  // namespace simkit::cli
