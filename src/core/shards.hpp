#pragma once
// Work split over several GPUs of one process (Context::gpu_ids): the shard contexts, the
// contiguous slices of a base, and running one task per shard concurrently.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/knn.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail {

/// One Context per GPU of ctx.gpu_ids (gpu_id set; gpu_ids, stream and progress cleared: a
/// progress callback is only ever called from the caller's thread) when ctx names two or more GPUs, resolves to the
/// GPU, and every array of the call is in host memory; otherwise none (the call runs on one device as usual).
std::vector<Context> gpu_shard_contexts(const Context& ctx, std::initializer_list<Memory> arrays);

/// For the tests, on machines without several GPUs: while one lives, gpu_shard_contexts returns
/// these contexts (CPU ones, say) for every call whose Context names two or more gpu_ids (on
/// any device) and has host arrays, so the split-and-merge paths run as they do over GPUs. Not thread-safe; one at a
/// time.
class ScopedShardContexts {
 public:
  explicit ScopedShardContexts(std::vector<Context> shards);
  ~ScopedShardContexts();
  ScopedShardContexts(const ScopedShardContexts&) = delete;
  ScopedShardContexts& operator=(const ScopedShardContexts&) = delete;
};

/// Shard s of n rows cut into `shards` contiguous slices, the first n % shards one row longer
/// (the rule of simkit::mpi::row_slice).
struct RowRange {
  int64_t first = 0, rows = 0;
};
RowRange shard_rows(int64_t n, int64_t shards, int64_t s);

/// Rows r of m (host views).
template <class T>
MatrixView<T> view_rows(MatrixView<T> m, RowRange r) {
  return {m.data + r.first * m.cols, r.rows, m.cols, m.where};
}

/// task(s) for every shard concurrently, all done before returning: shard 0 on the caller's
/// thread, the others on worker threads kept for the process (their OpenMP teams with them).
/// The exception of the lowest failing shard is rethrown.
void run_on_shards(int64_t shards, const std::function<void(int64_t)>& task);

/// search(shards[s], r) for every shard concurrently (run_on_shards), r = shard_rows(queries,
/// P, s): replicas of one index, each answering a contiguous slice of the queries; the slices'
/// answers need no merge.
void run_on_query_slices(const std::vector<Context>& shards, int64_t queries,
                         const std::function<void(const Context&, RowRange)>& search);

/// simkit::knn split over `shards` (one Context each, from gpu_shard_contexts, or CPU contexts in
/// the tests): the rows of X cut by shard_rows, each slice searched on its context concurrently,
/// the lists merged by (key, id) (core/shard_merge.hpp) into values and ids (host, m x k): the
/// one-search answer, bit for bit. The arguments are knn's, already checked; `threads` host
/// threads compute the merge keys.
void knn_over_shards(const std::vector<Context>& shards, MatrixView<const float> Q, MatrixView<const float> X,
                     int64_t k, Metric metric, MatrixView<float> values, MatrixView<int64_t> ids, KnnMethod method,
                     int threads);

}  // namespace simkit::detail
