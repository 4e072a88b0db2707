// core/shards.hpp: several GPUs of one process.

#include "core/shards.hpp"

#include <algorithm>
#include <exception>
#include <thread>

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

void run_on_shards(int64_t shards, const std::function<void(int64_t)>& task) {
  std::vector<std::exception_ptr> errors(static_cast<size_t>(shards));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(shards));
  for (int64_t s = 0; s < shards; ++s)
    threads.emplace_back([&, s] {
      try {
        task(s);
      } catch (...) {
        errors[size_t(s)] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace simkit::detail
