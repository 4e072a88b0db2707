// The GPU Barnes-Hut tree (radix_tree.hpp): bounds, Morton codes, sort, Karras nodes, moments.

#include <cuda_runtime.h>

#include <cfloat>
#include <climits>
#include <cstdint>

#include <simkit/error.hpp>

#include "cuda/check.hpp"
#include "cuda/ordered_float.cuh"
#include "cuda/primitives/sort_codes.hpp"
#include "nbody/cuda/radix_tree.hpp"
#include "nbody/morton.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kBlock = 256;

int grid(int64_t work, int multiprocessors) {
  const int64_t blocks = (work + kBlock - 1) / kBlock;
  return int(blocks < int64_t(multiprocessors) * 8 ? (blocks > 0 ? blocks : 1) : int64_t(multiprocessors) * 8);
}

int blocks_for(int64_t work) { return int((work + kBlock - 1) / kBlock); }

__global__ void bounds_init_kernel(int* box) {
  if (threadIdx.x < 3) box[threadIdx.x] = INT_MAX, box[3 + threadIdx.x] = INT_MIN;
}

__global__ void __launch_bounds__(kBlock) bounds_kernel(const float* __restrict__ rows, int64_t n, int* box) {
  float lo[3] = {FLT_MAX, FLT_MAX, FLT_MAX}, hi[3] = {-FLT_MAX, -FLT_MAX, -FLT_MAX};
  for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < n; i += int64_t(gridDim.x) * kBlock)
    for (int c = 0; c < 3; ++c) lo[c] = fminf(lo[c], rows[i * 4 + c]), hi[c] = fmaxf(hi[c], rows[i * 4 + c]);
  for (int o = 16; o > 0; o /= 2)
    for (int c = 0; c < 3; ++c)
      lo[c] = fminf(lo[c], __shfl_xor_sync(0xffffffffu, lo[c], o)),
      hi[c] = fmaxf(hi[c], __shfl_xor_sync(0xffffffffu, hi[c], o));
  if (threadIdx.x % 32 == 0)
    for (int c = 0; c < 3; ++c) atomicMin(box + c, ordered(lo[c])), atomicMax(box + 3 + c, ordered(hi[c]));
}

/// The Morton cube: lower corner and side (the longest extent, a little widened so that the
/// highest coordinate falls inside the last cell), as 4 floats over the 6 ints of `box`.
__global__ void cube_kernel(int* box) {
  if (threadIdx.x != 0) return;
  float lo[3], side = 0;
  for (int c = 0; c < 3; ++c) lo[c] = unordered(box[c]), side = fmaxf(side, unordered(box[3 + c]) - lo[c]);
  side = fmaxf(side * (1.f + 1e-5f), 1e-30f);
  float* cube = reinterpret_cast<float*>(box);
  for (int c = 0; c < 3; ++c) cube[c] = lo[c];
  cube[3] = side;
}

__global__ void __launch_bounds__(kBlock)
    codes_kernel(const float* __restrict__ rows, int64_t count, int64_t stride, const float* __restrict__ cube,
                 int64_t* __restrict__ codes, int* __restrict__ index) {
  const int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (i >= count) return;
  const float scale = 2097152.f / cube[3];
  uint64_t cell[3];
  for (int c = 0; c < 3; ++c)
    cell[c] = uint64_t(fminf(fmaxf((rows[i * stride + c] - cube[c]) * scale, 0.f), 2097151.f));
  codes[i] = int64_t(nbody::morton_code(cell[0], cell[1], cell[2]));
  index[i] = int(i);
}

__global__ void __launch_bounds__(kBlock)
    gather_kernel(const float* __restrict__ rows, int64_t count, int64_t stride, bool masses,
                  const int* __restrict__ index, float4* __restrict__ out) {
  const int64_t p = int64_t(blockIdx.x) * kBlock + threadIdx.x;
  if (p >= count) return;
  const float* r = rows + int64_t(index[p]) * stride;
  out[p] = make_float4(r[0], r[1], r[2], masses ? r[3] : 0.f);
}

/// Common prefix length of codes i and j (positions break ties: 64 + the positions' prefix);
/// -1 when j is outside [0, n).
__device__ __forceinline__ int prefix(const int64_t* __restrict__ codes, int n, int i, int j) {
  if (j < 0 || j >= n) return -1;
  const uint64_t a = uint64_t(codes[i]), b = uint64_t(codes[j]);
  return a == b ? 64 + __clz(i ^ j) : __clzll(a ^ b);
}

/// Internal node i: the direction of its range, its far end, its split (Karras 2012, fig. 4).
__global__ void __launch_bounds__(kBlock)
    nodes_kernel(const int64_t* __restrict__ codes, int n, int4* __restrict__ links, int* __restrict__ parent,
                 int* __restrict__ body_parent) {
  const int i = blockIdx.x * kBlock + threadIdx.x;
  if (i >= n - 1) return;
  const int d = prefix(codes, n, i, i + 1) > prefix(codes, n, i, i - 1) ? 1 : -1;
  const int floor = prefix(codes, n, i, i - d);
  int reach = 2;
  while (prefix(codes, n, i, i + reach * d) > floor) reach *= 2;
  int length = 0;
  for (int t = reach / 2; t >= 1; t /= 2)
    if (prefix(codes, n, i, i + (length + t) * d) > floor) length += t;
  const int j = i + length * d;
  const int shared = prefix(codes, n, i, j);
  int split = 0;
  for (int div = 2;; div *= 2) {
    const int t = (length + div - 1) / div;
    if (prefix(codes, n, i, i + (split + t) * d) > shared) split += t;
    if (t == 1) break;
  }
  const int gamma = i + split * d + min(d, 0);
  const int first = min(i, j), last = max(i, j);
  const int left = first == gamma ? ~gamma : gamma, right = last == gamma + 1 ? ~(gamma + 1) : gamma + 1;
  links[i] = make_int4(left, right, first, last);
  if (left >= 0)
    parent[left] = i;
  else
    body_parent[~left] = i;
  if (right >= 0)
    parent[right] = i;
  else
    body_parent[~right] = i;
  if (i == 0) parent[0] = -1;
}

struct Moments {
  float4 mc;  // centre of mass, mass
  float3 lo, hi;
};

__device__ __forceinline__ Moments child_moments(int c, const float4* bodies, const float4* mc, const float4* lo,
                                                 const float4* hi) {
  if (c < 0) {
    const float4 b = bodies[~c];
    return {b, make_float3(b.x, b.y, b.z), make_float3(b.x, b.y, b.z)};
  }
  // Written by another thread of this launch: read through L2, past this SM's L1.
  const float4 l = __ldcg(lo + c), h = __ldcg(hi + c);
  return {__ldcg(mc + c), make_float3(l.x, l.y, l.z), make_float3(h.x, h.y, h.z)};
}

__global__ void __launch_bounds__(kBlock)
    moments_kernel(const float4* __restrict__ bodies, int n, const int4* __restrict__ links,
                   const int* __restrict__ parent, const int* __restrict__ body_parent, int* visits, float4* mc,
                   float4* lo, float4* hi, float* open2, float inv_theta) {
  const int p = blockIdx.x * kBlock + threadIdx.x;
  if (p >= n) return;
  int node = body_parent[p];
  while (node >= 0) {
    __threadfence();  // this thread's node (if any) is visible before its sibling's thread may read it
    if (atomicAdd(visits + node, 1) == 0) return;  // the other child's thread finishes this node
    const int4 l = links[node];
    const Moments a = child_moments(l.x, bodies, mc, lo, hi), b = child_moments(l.y, bodies, mc, lo, hi);
    const float mass = a.mc.w + b.mc.w;
    const float3 blo = make_float3(fminf(a.lo.x, b.lo.x), fminf(a.lo.y, b.lo.y), fminf(a.lo.z, b.lo.z));
    const float3 bhi = make_float3(fmaxf(a.hi.x, b.hi.x), fmaxf(a.hi.y, b.hi.y), fmaxf(a.hi.z, b.hi.z));
    const float3 mid = make_float3(0.5f * (blo.x + bhi.x), 0.5f * (blo.y + bhi.y), 0.5f * (blo.z + bhi.z));
    float4 c = make_float4(mid.x, mid.y, mid.z, mass);  // a massless node: its box's centre
    if (mass > 0) {
      const float wa = a.mc.w / mass, wb = b.mc.w / mass;
      c.x = wa * a.mc.x + wb * b.mc.x, c.y = wa * a.mc.y + wb * b.mc.y, c.z = wa * a.mc.z + wb * b.mc.z;
    }
    const float side = fmaxf(bhi.x - blo.x, fmaxf(bhi.y - blo.y, bhi.z - blo.z));
    const float dx = c.x - mid.x, dy = c.y - mid.y, dz = c.z - mid.z;
    // Never below the reach of the box seen from the centre of mass (half its diagonal plus the
    // offset), so that a group of targets inside the node never takes it whole, whatever theta.
    const float r = fmaxf(side * inv_theta, 0.8660254f * side) + sqrtf(dx * dx + dy * dy + dz * dz);
    mc[node] = c, lo[node] = make_float4(blo.x, blo.y, blo.z, 0.f), hi[node] = make_float4(bhi.x, bhi.y, bhi.z, 0.f);
    open2[node] = isinf(inv_theta) ? INFINITY : r * r;
    node = parent[node];
  }
}

/// The walk's groups: children of size <= kGroup of nodes larger than that (or the root, when
/// all of it fits), appended in any order.
__global__ void __launch_bounds__(kBlock)
    groups_kernel(const int4* __restrict__ links, int count, int2* __restrict__ groups, int* __restrict__ groups_made) {
  const int i = blockIdx.x * kBlock + threadIdx.x;
  if (count <= kGroup) {
    if (i == 0) groups[0] = make_int2(0, count - 1), *groups_made = 1;
    return;
  }
  if (i >= count - 1) return;
  const int4 l = links[i];
  if (l.w - l.z + 1 <= kGroup) return;
  for (const int child : {l.x, l.y}) {
    const int2 range = child < 0 ? make_int2(~child, ~child) : make_int2(links[child].z, links[child].w);
    if (range.y - range.x + 1 <= kGroup) groups[atomicAdd(groups_made, 1)] = range;
  }
}

}  // namespace

size_t radix_tree_bytes(int64_t n) {
  const size_t inner = size_t(n > 1 ? n - 1 : 1);
  return Carver::round(64) + Carver::round(size_t(n) * 8) + Carver::round(size_t(n) * 4) * 2 +
         Carver::round(size_t(n) * 16) + Carver::round(inner * 16) * 4 + Carver::round(inner * 4) * 3 +
         Carver::round(sort_codes_bytes(n));
}

RadixTree build_radix_tree(const float* sources, int64_t n, double theta, Carver& carve, int multiprocessors,
                           cudaStream_t s) {
  if (n >= INT_MAX) throw Error(ErrorCode::invalid_argument, "nbody: Barnes-Hut on the GPU takes < 2^31 bodies");
  RadixTree t;
  t.n = int(n);
  t.root = n > 1 ? 0 : ~0;
  int* box = carve.take<int>(16);
  t.box = reinterpret_cast<const float*>(box);
  int64_t* codes = carve.take<int64_t>(size_t(n));
  t.order = carve.take<int>(size_t(n));
  t.bodies = carve.take<float4>(size_t(n));
  const size_t inner = size_t(n > 1 ? n - 1 : 1);
  t.mass_centre = carve.take<float4>(inner);
  t.links = carve.take<int4>(inner);
  float4* lo = carve.take<float4>(inner);
  float4* hi = carve.take<float4>(inner);
  t.open2 = carve.take<float>(inner);
  int* parent = carve.take<int>(inner);
  int* visits = carve.take<int>(inner);
  int* body_parent = carve.take<int>(size_t(n));

  bounds_init_kernel<<<1, 32, 0, s>>>(box);
  bounds_kernel<<<grid(n, multiprocessors), kBlock, 0, s>>>(sources, n, box);
  cube_kernel<<<1, 32, 0, s>>>(box);
  codes_kernel<<<blocks_for(n), kBlock, 0, s>>>(sources, n, 4, t.box, codes, t.order);
  check_launch("nbody radix tree: bounds and codes");
  sort_codes(codes, t.order, n, carve, s);
  gather_kernel<<<blocks_for(n), kBlock, 0, s>>>(sources, n, 4, true, t.order, t.bodies);
  if (n > 1) {
    nodes_kernel<<<blocks_for(n - 1), kBlock, 0, s>>>(codes, t.n, t.links, parent, body_parent);
    check_cuda(cudaMemsetAsync(visits, 0, inner * 4, s), "cudaMemsetAsync");
    const float inv_theta = theta > 0 ? float(1.0 / theta) : INFINITY;
    moments_kernel<<<blocks_for(n), kBlock, 0, s>>>(t.bodies, t.n, t.links, parent, body_parent, visits, t.mass_centre,
                                                    lo, hi, t.open2, inv_theta);
  }
  check_launch("nbody radix tree: nodes and moments");
  return t;
}

size_t groups_bytes(int64_t m) { return Carver::round(size_t(m) * 8) + Carver::round(64); }

Groups make_groups(const int4* links, int64_t count, Carver& carve, cudaStream_t s) {
  Groups g;
  g.ranges = carve.take<int2>(size_t(count));
  g.count = carve.take<int>(16);
  check_cuda(cudaMemsetAsync(g.count, 0, 4, s), "cudaMemsetAsync");
  groups_kernel<<<blocks_for(count), kBlock, 0, s>>>(links, int(count), g.ranges, g.count);
  check_launch("nbody groups_kernel");
  return g;
}

size_t sorted_targets_bytes(int64_t m) {
  const size_t inner = size_t(m > 1 ? m - 1 : 1);
  return Carver::round(size_t(m) * 8) + Carver::round(size_t(m) * 16) + Carver::round(size_t(m) * 4) * 2 +
         Carver::round(inner * 16) + Carver::round(inner * 4) + Carver::round(sort_codes_bytes(m)) + groups_bytes(m);
}

SortedTargets sort_targets(const RadixTree& tree, const float* targets, int64_t m, int64_t stride, Carver& carve,
                           cudaStream_t s) {
  if (m >= INT_MAX) throw Error(ErrorCode::invalid_argument, "nbody: Barnes-Hut on the GPU takes < 2^31 targets");
  SortedTargets t;
  int64_t* codes = carve.take<int64_t>(size_t(m));
  t.positions = carve.take<float4>(size_t(m));
  t.order = carve.take<int>(size_t(m));
  int* leaf_parent = carve.take<int>(size_t(m));
  const size_t inner = size_t(m > 1 ? m - 1 : 1);
  int4* links = carve.take<int4>(inner);
  int* parent = carve.take<int>(inner);
  codes_kernel<<<blocks_for(m), kBlock, 0, s>>>(targets, m, stride, tree.box, codes, t.order);
  check_launch("nbody target codes");
  sort_codes(codes, t.order, m, carve, s);
  gather_kernel<<<blocks_for(m), kBlock, 0, s>>>(targets, m, stride, false, t.order, t.positions);
  // The targets' own radix tree (links only) cuts them into compact groups.
  if (m > 1) nodes_kernel<<<blocks_for(m - 1), kBlock, 0, s>>>(codes, int(m), links, parent, leaf_parent);
  check_launch("nbody target tree");
  t.groups = make_groups(links, m, carve, s);
  return t;
}

}  // namespace simkit::detail::cuda
