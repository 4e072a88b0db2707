#pragma once
// What the GPU tree's knn and radius calls share on the host: the working memory they need, the
// inputs placed on the device, the tree and the sorted queries built, the walk's launch shape
// and its counters, and the dimension as a template argument.

#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include <simkit/error.hpp>
#include <simkit/matrix.hpp>

#include "cuda/call.hpp"
#include "spatial/cuda/device_tree.hpp"
#include "spatial/cuda/packet_walk.cuh"
#include "spatial/gpu_tree.hpp"

namespace simkit::detail::spatial::cuda {

using detail::cuda::Call;
using detail::cuda::check_cuda;
using detail::cuda::Resources;

/// Threads of a walk block: 4 warps. The walk is latency-bound (a dependent chain of node
/// fetches per packet), so what matters is warps in flight, which local-memory lists limit
/// before the block size does.
constexpr int kWalkBlock = 128;

/// Rows per leaf on the GPU: a leaf is scanned by each active lane of a packet, row by row, the
/// rows read by all of them at once (broadcast loads). First choice, the CPU's measured size;
/// bench tree's leaf sweep is what would move it.
constexpr int64_t kLeafSize = 32;

/// f(std::integral_constant<int, D>{}) for the runtime dimension 1 <= d <= 8.
template <class F>
void with_dim(int64_t d, F&& f) {
  switch (d) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    default: return f(std::integral_constant<int, 8>{});
  }
}

/// One search's set-up on the device: the tree over X, Q's rows in its Morton order, the
/// counters, and timing events around the build and the walk.
class WalkCall {
 public:
  /// `extra` bytes are carved after the tree for the caller (outputs, lists).
  WalkCall(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t leaf_size, size_t extra,
           const char* what)
      : call_(ctx), carve_((reserve(ctx, Q, X, leaf_size, extra, what), call_.r().arena)) {
    const cudaStream_t s = call_.stream();
    for (auto& e : events_) check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    const float *x = place(X), *q = place(Q);
    check_cuda(cudaEventRecord(events_[0], s), "cudaEventRecord");
    tree_ = build_device_tree(x, X.cols, X.rows, X.cols, leaf_size, carve_, s);
    sorted_ = sort_queries(tree_, q, Q.cols, Q.rows, carve_, s);
    q_ = q;
    counters_ = carve_.take<PacketCounters>(1);
    check_cuda(cudaMemsetAsync(counters_, 0, sizeof(PacketCounters), s), "cudaMemsetAsync");
    check_cuda(cudaEventRecord(events_[1], s), "cudaEventRecord");
  }
  ~WalkCall() {
    for (auto& e : events_) cudaEventDestroy(e);
  }
  WalkCall(const WalkCall&) = delete;
  WalkCall& operator=(const WalkCall&) = delete;

  Call& call() { return call_; }
  cudaStream_t stream() const { return call_.stream(); }
  detail::cuda::Carver& carve() { return carve_; }
  const DeviceTree& tree() const { return tree_; }
  const SortedQueries& sorted() const { return sorted_; }
  const float* queries() const { return q_; }
  PacketCounters* counters() const { return counters_; }
  int grid(int64_t m) const { return int((m + kWalkBlock - 1) / kWalkBlock); }

  /// Marks the end of the walk (call after its launches).
  void walked() { check_cuda(cudaEventRecord(events_[2], call_.stream()), "cudaEventRecord"); }
  /// After call().finish(): the counters and timings.
  gpu::WalkReport report() const {
    PacketCounters c{};
    check_cuda(cudaMemcpy(&c, counters_, sizeof c, cudaMemcpyDeviceToHost), "cudaMemcpy");
    gpu::WalkReport r;
    r.packets = int64_t(c.packets), r.node_visits = int64_t(c.node_visits), r.leaf_visits = int64_t(c.leaf_visits);
    r.leaf_lanes = int64_t(c.leaf_lanes), r.pairs = int64_t(c.pairs);
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, events_[0], events_[1]), "cudaEventElapsedTime");
    r.build_ms = ms;
    check_cuda(cudaEventElapsedTime(&ms, events_[1], events_[2]), "cudaEventElapsedTime");
    r.search_ms = ms;
    return r;
  }

 private:
  static size_t bytes_for(MatrixView<const float> M) {
    return M.where == Memory::host ? size_t(M.rows * M.cols) * 4 : 0;
  }

  void reserve(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t leaf_size,
               size_t extra, const char* what) {
    using detail::cuda::Carver;
    const size_t bytes = Carver::round(bytes_for(Q)) + Carver::round(bytes_for(X)) +
                         device_tree_bytes(X.rows, X.cols, leaf_size) + sorted_queries_bytes(Q.rows) +
                         Carver::round(sizeof(PacketCounters)) + extra;
    Resources& r = call_.r();
    const size_t budget = detail::cuda::working_budget(ctx, r);
    if (bytes > budget)
      throw Error(ErrorCode::out_of_memory,
                  std::string(what) + ": the GPU tree needs " + std::to_string((bytes >> 20) + 1) +
                      " MiB of GPU working memory, the budget allows " + std::to_string(budget >> 20) + " MiB");
    r.arena.reserve(bytes, budget);
  }

  /// The rows on the device: a host matrix copied, a device one as is.
  const float* place(MatrixView<const float> M) {
    if (M.where != Memory::host) return M.data;
    float* d = carve_.take<float>(size_t(M.rows * M.cols));
    check_cuda(cudaMemcpyAsync(d, M.data, size_t(M.rows * M.cols) * 4, cudaMemcpyHostToDevice, call_.stream()),
               "cudaMemcpyAsync");
    return d;
  }

  Call call_;
  detail::cuda::Carver carve_;
  cudaEvent_t events_[3] = {};
  DeviceTree tree_;
  SortedQueries sorted_;
  const float* q_ = nullptr;
  PacketCounters* counters_ = nullptr;
};

}  // namespace simkit::detail::spatial::cuda
