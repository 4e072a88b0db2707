// core/shards.hpp: several GPUs of one process.

#include "core/shards.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include <pthread.h>

namespace simkit::detail {

namespace {
const std::vector<Context>* g_test_shards = nullptr;
}

ScopedShardContexts::ScopedShardContexts(std::vector<Context> shards) {
  g_test_shards = new std::vector<Context>(std::move(shards));
}

ScopedShardContexts::~ScopedShardContexts() {
  delete g_test_shards;
  g_test_shards = nullptr;
}

std::vector<Context> gpu_shard_contexts(const Context& ctx, std::initializer_list<Memory> arrays) {
  if (ctx.gpu_ids.size() < 2) return {};  // shard contexts have none: a shard's own calls do not split
  if (std::any_of(arrays.begin(), arrays.end(), [](Memory m) { return m != Memory::host; })) return {};
  if (g_test_shards != nullptr) return *g_test_shards;
  if (ctx.device == Device::cpu) return {};
  Context first = ctx;
  first.gpu_id = ctx.gpu_ids.front();
  if (resolve_device(first) != Device::gpu) return {};
  std::vector<Context> out;
  for (int id : ctx.gpu_ids) {
    Context c = ctx;
    c.device = Device::gpu;
    c.gpu_id = id;
    c.gpu_ids.clear();
    c.stream = nullptr;
    c.progress = nullptr;  // progress is reported from the caller's thread only
    out.push_back(std::move(c));
  }
  return out;
}

RowRange shard_rows(int64_t n, int64_t shards, int64_t s) {
  const int64_t base = n / shards, extra = n % shards;
  return {s * base + std::min(s, extra), base + (s < extra ? 1 : 0)};
}

namespace {

// Shard 0 runs on the caller's thread, the others on worker threads kept for the process (idle
// ones are reused; a new one is made only while all are busy). A fresh thread per shard and call
// paid its creation and, for any OpenMP region in the task (the host re-score of a streamed
// base, the rank of candidates), a new OpenMP team torn down again when the thread exited.

/// One call's shards that run on workers: the caller waits until `left` is 0.
struct Batch {
  std::mutex mutex;
  std::condition_variable finished;
  int64_t left = 0;
};

struct Worker {
  std::mutex mutex;
  std::condition_variable wake;
  std::function<void()> job;  // set by the caller; the worker clears it once it has run it
  Batch* batch = nullptr;
};

struct WorkerPool {
  std::mutex mutex;
  std::vector<Worker*> idle;
};

WorkerPool* g_pool = nullptr;

WorkerPool& pool() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_pool = new WorkerPool;  // never destroyed: its threads wait on it until the process exits
    // A forked child has none of the parent's threads: it starts an empty pool of its own.
    pthread_atfork(nullptr, nullptr, [] { g_pool = new WorkerPool; });
  });
  return *g_pool;
}

/// A worker's loop: run the job, go back to the idle list, then tell the caller (so that every
/// worker of a call is idle again when the call returns).
void serve(Worker* w) {
  for (;;) {
    std::function<void()> job;
    Batch* batch = nullptr;
    {
      std::unique_lock lock(w->mutex);
      w->wake.wait(lock, [&] { return static_cast<bool>(w->job); });
      job = std::move(w->job);
      w->job = nullptr;
      batch = w->batch;
    }
    job();
    {
      std::lock_guard lock(pool().mutex);
      pool().idle.push_back(w);
    }
    std::lock_guard lock(batch->mutex);
    if (--batch->left == 0) batch->finished.notify_one();
  }
}

Worker* take_worker() {
  {
    std::lock_guard lock(pool().mutex);
    if (!pool().idle.empty()) {
      Worker* w = pool().idle.back();
      pool().idle.pop_back();
      return w;
    }
  }
  auto* w = new Worker;  // threads are made only while every existing one is busy
  std::thread(serve, w).detach();
  return w;
}

}  // namespace

void run_on_shards(int64_t shards, const std::function<void(int64_t)>& task) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(std::max<int64_t>(shards, 0)));
  const auto guarded = [&](int64_t s) {
    try {
      task(s);
    } catch (...) {
      errors[size_t(s)] = std::current_exception();
    }
  };
  Batch batch;
  batch.left = std::max<int64_t>(shards - 1, 0);
  for (int64_t s = 1; s < shards; ++s) {  // shard 0 runs on the caller's thread
    Worker* w = take_worker();
    std::lock_guard lock(w->mutex);
    w->job = [&guarded, s] { guarded(s); };
    w->batch = &batch;
    w->wake.notify_one();
  }
  if (shards > 0) guarded(0);
  {
    std::unique_lock lock(batch.mutex);
    batch.finished.wait(lock, [&] { return batch.left == 0; });
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

void run_on_query_slices(const std::vector<Context>& shards, int64_t queries,
                         const std::function<void(const Context&, RowRange)>& search) {
  const int64_t P = int64_t(shards.size());
  run_on_shards(P, [&](int64_t s) {
    const RowRange r = shard_rows(queries, P, s);
    if (r.rows > 0) search(shards[size_t(s)], r);
  });
}

}  // namespace simkit::detail
