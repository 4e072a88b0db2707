// Barnes-Hut on the GPU: the radix tree of radix_tree.hpp, then one walk per warp.
//
// The walk. The targets are sorted in the tree's Morton order and cut into groups of at most 32,
// each a node of a radix tree over them (one cell of the Morton grid: 32 consecutive targets
// could straddle the box, and the walk of a group that spans the box opens almost every node),
// one group per warp, so a warp's targets sit close together and want almost the same nodes (the
// locality that the parallel case-studies lecture draws from cost zones). The warp walks the
// tree once for the whole group: a node is taken whole when the group's bounding box lies
// farther than its opening distance from its centre of mass, so one test speaks for every
// target, the walk never diverges, and each visited node serves the whole group (22.1 targets on
// average on Plummer spheres). The test runs on 32
// nodes at once, one per lane: of the nodes on top of the warp's stack, those taken whole and
// the bodies reached go to a list in shared memory (compacted by ballot), nodes of at most
// kBucket bodies are opened straight into their bodies (consecutive in Morton order), the rest
// push their two children. When the list is long enough every lane sums it against its own
// target, as the direct sum sums a tile: broadcast reads from shared memory, ~20 flops per pair.
//
// Warps are persistent (as many as fit at once) and take groups from a counter, so groups of
// unequal cost balance themselves; each warp's stack lives in global memory (kStack entries: a
// round pushes at most 32 more than it pops, and walks of 2^22-body Plummer spheres stay far
// below; a walk that would outgrow it stops the call with an error, never a wrong sum).
//
// Accuracy: monopoles in float32, each target's sum in float32 per list, the lists' sums in
// float32 (a few thousand terms; the approximation's own error is ~1e-4 .. 1e-3 at theta 0.5).

#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>
#include <string>

#include <simkit/error.hpp>

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "nbody/cuda/pair_force.cuh"
#include "nbody/cuda/radix_tree.hpp"
#include "nbody/nbody_tree.hpp"

namespace simkit::detail::cuda {

namespace {

// Tile choice: 4 warps a block, buckets of 8, lists summed past 224 entries -- first choices, not
// yet swept against others; with them a 2^22-body walk at theta 0.5 takes 15.9 ms and its list
// sums run at 13.3 TFLOP/s (bench/results/2026-11-26-nbody-trees.md). The next tuning step.
constexpr int kWarps = 4;                            // warps per block
constexpr int kBucket = 8;                           // an opened node of <= 8 bodies adds its bodies
constexpr int kFlushAt = 224;                        // sum the list once it holds more than this
constexpr int kList = kFlushAt + 32 * kBucket + 32;  // one round adds <= 32 entries or buckets
constexpr int kStack = 4096;

struct WalkArgs {
  RadixTree tree;
  const float4* targets;    // m, in Morton order
  const int* target_order;  // Morton position -> input row
  Groups groups;
  float eps2, G;
  float* accel;      // m x 3, input order
  float* potential;  // m or null
  int64_t* counts;   // m or null: each target's list entries
  int* next_group;
  int* stacks;
  int* overflow;
  unsigned long long* stats;  // [0] list entries summed over targets, [1] nodes tested
};

struct Sums {
  float ax = 0, ay = 0, az = 0, p = 0;
};

/// Every lane's target against the first `count` entries of the warp's list (kGuard, kPotential:
/// as add_pull; an entry may be the target itself, which adds nothing either way).
template <bool kGuard, bool kPotential>
__device__ __forceinline__ void sum_list(const float4* list, int count, float4 me, float eps2, Sums& s) {
#pragma unroll 4
  for (int e = 0; e < count; ++e) add_pull<kGuard, kPotential>(list[e], me.x, me.y, me.z, eps2, s.ax, s.ay, s.az, s.p);
}

__device__ __forceinline__ float warp_min(float v) {
  for (int o = 16; o > 0; o /= 2) v = fminf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Squared distance from c to the box [lo, hi] (0 inside it).
__device__ __forceinline__ float box_distance2(float4 c, float3 lo, float3 hi) {
  const float dx = fmaxf(fmaxf(lo.x - c.x, c.x - hi.x), 0.f), dy = fmaxf(fmaxf(lo.y - c.y, c.y - hi.y), 0.f),
              dz = fmaxf(fmaxf(lo.z - c.z, c.z - hi.z), 0.f);
  return dx * dx + dy * dy + dz * dz;
}

enum Kind { kNone, kEntry, kBucketed, kOpen };

/// One group's walk; returns false when the stack would overflow.
template <bool kGuard, bool kPotential>
__device__ bool walk_group(const WalkArgs& a, float4* list, int* stack, float3 lo, float3 hi, float4 me, Sums& s,
                           unsigned long long& entries, unsigned long long& tested) {
  const int lane = threadIdx.x % 32;
  const unsigned below = (1u << lane) - 1u;
  const RadixTree& t = a.tree;
  if (lane == 0) stack[0] = t.root;
  __syncwarp();
  int top = 1, count = 0;
  while (top > 0) {
    const int k = min(32, top);
    int node = 0;
    if (lane < k) node = stack[top - k + lane];
    __syncwarp();
    top -= k;
    tested += k;
    Kind kind = kNone;
    float4 entry = make_float4(0.f, 0.f, 0.f, 0.f);
    int4 link = make_int4(0, 0, 0, 0);
    int bucket = 0;
    if (lane < k) {
      if (node < 0) {
        entry = t.bodies[~node], kind = kEntry;
      } else {
        entry = t.mass_centre[node];
        if (box_distance2(entry, lo, hi) > t.open2[node]) {
          kind = kEntry;
        } else {
          link = t.links[node];
          bucket = link.w - link.z + 1;
          if (bucket <= kBucket)
            kind = kBucketed;
          else
            kind = kOpen, bucket = 0;
        }
      }
    }
    const unsigned taken = __ballot_sync(0xffffffffu, kind == kEntry);
    if (kind == kEntry) list[count + __popc(taken & below)] = entry;
    count += __popc(taken);
    int end = bucket;  // inclusive scan of the bucket sizes
    for (int o = 1; o < 32; o *= 2) {
      const int v = __shfl_up_sync(0xffffffffu, end, o);
      if (lane >= o) end += v;
    }
    for (int b = 0; b < bucket; ++b) list[count + end - bucket + b] = t.bodies[link.z + b];
    count += __shfl_sync(0xffffffffu, end, 31);
    const unsigned opened = __ballot_sync(0xffffffffu, kind == kOpen);
    if (top + 2 * __popc(opened) > kStack) return false;
    if (kind == kOpen) {
      const int at = top + 2 * __popc(opened & below);
      stack[at] = link.x, stack[at + 1] = link.y;
    }
    top += 2 * __popc(opened);
    __syncwarp();
    if (count > kFlushAt) {
      sum_list<kGuard, kPotential>(list, count, me, a.eps2, s);
      entries += count, count = 0;
      __syncwarp();
    }
  }
  sum_list<kGuard, kPotential>(list, count, me, a.eps2, s);
  entries += count;
  __syncwarp();
  return true;
}

template <bool kGuard, bool kPotential>
__global__ void __launch_bounds__(kWarps * 32) walk_kernel(WalkArgs a) {
  __shared__ float4 lists[kWarps][kList];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float4* list = lists[warp];
  int* stack = a.stacks + (int64_t(blockIdx.x) * kWarps + warp) * kStack;
  unsigned long long entries = 0, tested = 0;
  for (;;) {
    int group = 0;
    if (lane == 0) group = atomicAdd(a.next_group, 1);
    group = __shfl_sync(0xffffffffu, group, 0);
    if (group >= *a.groups.count) break;
    const int2 range = a.groups.ranges[group];
    const int i = range.x + lane;
    const bool active = i <= range.y;
    const float4 me = a.targets[active ? i : range.x];
    const float3 lo = make_float3(warp_min(me.x), warp_min(me.y), warp_min(me.z));
    const float3 hi = make_float3(warp_max(me.x), warp_max(me.y), warp_max(me.z));
    Sums s;
    unsigned long long group_entries = 0;
    if (!walk_group<kGuard, kPotential>(a, list, stack, lo, hi, me, s, group_entries, tested)) {
      if (lane == 0) atomicExch(a.overflow, 1);
      return;
    }
    entries += group_entries * unsigned(__popc(__ballot_sync(0xffffffffu, active)));
    if (active) {
      const int64_t row = a.target_order[i];
      a.accel[row * 3] = a.G * s.ax, a.accel[row * 3 + 1] = a.G * s.ay, a.accel[row * 3 + 2] = a.G * s.az;
      if constexpr (kPotential) a.potential[row] = -a.G * s.p;
      if (a.counts) a.counts[row] = int64_t(group_entries);
    }
  }
  if (lane == 0) atomicAdd(a.stats, entries), atomicAdd(a.stats + 1, tested);
}

/// Timing events for the build / walk split.
struct Events {
  cudaEvent_t e[3] = {};
  Events() {
    for (auto& x : e) check_cuda(cudaEventCreate(&x), "cudaEventCreate");
  }
  ~Events() {
    for (auto& x : e) cudaEventDestroy(x);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  float ms(int from, int to) const {
    float v = 0;
    check_cuda(cudaEventElapsedTime(&v, e[from], e[to]), "cudaEventElapsedTime");
    return v;
  }
};

}  // namespace

NbodyReport nbody_barnes_hut(const Context& ctx, const NbodyArgs& a, double theta, ArrayView<int64_t> costs) {
  Call call(ctx);
  Resources& r = call.r();
  const cudaStream_t s = call.stream();
  if (a.m >= INT32_MAX) throw Error(ErrorCode::invalid_argument, "nbody: Barnes-Hut on the GPU takes < 2^31 targets");
  const bool self = a.targets == a.sources && a.target_stride == 4;
  const bool sources_host = a.sources_where == Memory::host, targets_host = !self && a.targets_where == Memory::host;
  const bool accel_host = a.accel.where == Memory::host;
  const bool phi_host = !a.potential.empty() && a.potential.where == Memory::host;
  const auto kernel = !a.potential.empty()                          ? walk_kernel<true, true>
                      : float(a.softening * a.softening) >= FLT_MIN ? walk_kernel<false, false>
                                                                    : walk_kernel<true, false>;
  int blocks_per_sm = 0;
  check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kWarps * 32, 0),
             "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  const int blocks = std::max(1, blocks_per_sm) * r.multiprocessors;
  const size_t m = size_t(a.m), n = size_t(a.n);
  size_t bytes = radix_tree_bytes(a.n) + Carver::round(size_t(blocks) * kWarps * kStack * 4) + Carver::round(64);
  if (sources_host) bytes += Carver::round(n * 16);
  if (targets_host) bytes += Carver::round(m * size_t(a.target_stride) * 4);
  bytes += self ? groups_bytes(a.m) : sorted_targets_bytes(a.m);
  if (accel_host) bytes += Carver::round(m * 12);
  if (phi_host) bytes += Carver::round(m * 4);
  if (!costs.empty()) bytes += Carver::round(m * 8);
  const size_t budget = working_budget(ctx, r);
  if (bytes > budget)
    throw Error(ErrorCode::out_of_memory, "nbody: Barnes-Hut needs " + std::to_string((bytes >> 20) + 1) +
                                              " MiB of GPU working memory, the budget allows " +
                                              std::to_string(budget >> 20) + " MiB");
  r.arena.reserve(bytes, budget);
  Carver carve(r.arena);
  auto place = [&](const float* p, bool host, size_t count) -> const float* {
    if (!host) return p;
    float* d = carve.take<float>(count);
    check_cuda(cudaMemcpyAsync(d, p, count * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    return d;
  };
  Events ev;
  const float* sources = place(a.sources, sources_host, n * 4);
  check_cuda(cudaEventRecord(ev.e[0], s), "cudaEventRecord");
  WalkArgs w{};
  w.tree = build_radix_tree(sources, a.n, theta, carve, r.multiprocessors, s);
  if (self) {
    w.targets = w.tree.bodies, w.target_order = w.tree.order;
    w.groups = make_groups(w.tree.links, a.n, carve, s);
  } else {
    const float* targets = place(a.targets, targets_host, m * size_t(a.target_stride));
    const SortedTargets sorted = sort_targets(w.tree, targets, a.m, a.target_stride, carve, s);
    w.targets = sorted.positions, w.target_order = sorted.order, w.groups = sorted.groups;
  }
  w.eps2 = float(a.softening * a.softening), w.G = float(a.G);
  w.accel = accel_host ? carve.take<float>(m * 3) : a.accel.data;
  w.potential = a.potential.empty() ? nullptr : (phi_host ? carve.take<float>(m) : a.potential.data);
  w.counts = costs.empty() ? nullptr : carve.take<int64_t>(m);
  int* words = carve.take<int>(16);
  w.next_group = words, w.overflow = words + 1;
  w.stats = reinterpret_cast<unsigned long long*>(words + 2);
  w.stacks = carve.take<int>(size_t(blocks) * kWarps * kStack);
  check_cuda(cudaMemsetAsync(words, 0, 64, s), "cudaMemsetAsync");
  check_cuda(cudaEventRecord(ev.e[1], s), "cudaEventRecord");
  kernel<<<blocks, kWarps * 32, 0, s>>>(w);
  check_launch("nbody walk_kernel");
  check_cuda(cudaEventRecord(ev.e[2], s), "cudaEventRecord");
  if (accel_host)
    check_cuda(cudaMemcpyAsync(a.accel.data, w.accel, m * 12, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  if (phi_host)
    check_cuda(cudaMemcpyAsync(a.potential.data, w.potential, m * 4, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  if (w.counts) check_cuda(cudaMemcpyAsync(costs.data, w.counts, m * 8, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  int host_words[6] = {}, groups = 0;
  check_cuda(cudaMemcpyAsync(host_words, words, sizeof host_words, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  check_cuda(cudaMemcpyAsync(&groups, w.groups.count, 4, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  call.finish();
  if (host_words[1] != 0)
    throw Error(ErrorCode::device, "nbody: the Barnes-Hut walk outgrew its stack (a tree deeper than 128 levels?)");
  unsigned long long stats[2];
  std::memcpy(stats, host_words + 2, sizeof stats);
  NbodyReport report;
  report.interactions = int64_t(stats[0]);
  report.nodes_tested = int64_t(stats[1]);
  report.groups = groups;
  report.threads = blocks * kWarps * 32;
  report.build_ms = ev.ms(0, 1), report.walk_ms = ev.ms(1, 2);
  return report;
}

}  // namespace simkit::detail::cuda
