// Merge and merge sort on the GPU: launch sequences of the kernels in merge_kernels.cuh, for
// keys int32 / int64 / float, values none / 4 / 8 bytes (moved as raw bits), both orders.
//
// Sort: tile sort (SortShape::TILE keys per block), then one merge pass per doubling of the run
// width, ping-ponging between the array and a scratch copy. The tile sort writes to whichever
// buffer makes the last pass end in the caller's array, so no copy-back pass is needed.

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "core/key_order.hpp"
#include "cuda/check.hpp"
#include "cuda/primitives/merge_kernels.cuh"
#include "cuda/primitives/prim_launch.hpp"

namespace simkit::detail::cuda {

namespace {

size_t round_up(size_t b) { return (b + 255) / 256 * 256; }

template <class V>
constexpr size_t value_size() {
  if constexpr (std::is_same_v<V, NoValue>)
    return 0;
  else
    return sizeof(V);
}

template <class K>
int64_t merge_tiles_for(int64_t n) {
  return (n + MergeShape<K>::TILE - 1) / MergeShape<K>::TILE;
}

/// One merge launch: the partition (every tile's split into `splits`), then the tiles.
template <class K, class V, class Less>
void launch_merge_pass(MergeParams<K, V> p, int64_t n, int64_t* splits, cudaStream_t s, const char* what) {
  const int64_t tiles = merge_tiles_for<K>(n);
  p.splits = splits;
  merge_partition<K, V, Less><<<unsigned((tiles + 255) / 256), 256, 0, s>>>(p, Less{}, tiles);
  check_launch("merge_partition");
  merge_tiles<K, V, Less><<<unsigned(tiles), MergeShape<K>::THREADS, 0, s>>>(p, Less{});
  check_launch(what);
}

template <class K, class V, class Less>
void run_merge(const K* a, const V* av, int64_t na, const K* b, const V* bv, int64_t nb, K* out, V* ov, void* scratch,
               cudaStream_t s) {
  MergeParams<K, V> p{a, av, na, b, bv, nb, nullptr, nullptr, 0, 0, out, ov, nullptr};
  launch_merge_pass<K, V, Less>(p, na + nb, static_cast<int64_t*>(scratch), s, "merge_tiles");
}

template <class K, class V, class Less>
void run_sort(K* keys, V* values, int64_t n, void* scratch, cudaStream_t s) {
  using SS = SortShape<K>;
  using MS = MergeShape<K>;
  static_assert(SS::TILE % MS::TILE == 0, "a merge tile never straddles two runs");
  int passes = 0;
  for (int64_t w = SS::TILE; w < n; w *= 2) ++passes;
  // scratch: n keys, n values (when there are values), the merge passes' tile splits.
  K* tmp = static_cast<K*>(scratch);
  V* tmp_values = reinterpret_cast<V*>(static_cast<char*>(scratch) + round_up(size_t(n) * sizeof(K)));
  int64_t* splits = passes == 0
                        ? nullptr
                        : reinterpret_cast<int64_t*>(static_cast<char*>(scratch) + round_up(size_t(n) * sizeof(K)) +
                                                     round_up(size_t(n) * value_size<V>()));
  K* src = passes % 2 == 0 ? keys : tmp;
  V* src_values = passes % 2 == 0 ? values : tmp_values;
  K* dst = passes % 2 == 0 ? tmp : keys;
  V* dst_values = passes % 2 == 0 ? tmp_values : values;

  auto tile_kernel = sort_tiles<K, V, Less>;
  check_cuda(cudaFuncSetAttribute(tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(SS::SMEM)),
             "cudaFuncSetAttribute");
  tile_kernel<<<unsigned((n + SS::TILE - 1) / SS::TILE), SS::THREADS, SS::SMEM, s>>>(keys, values, src, src_values, n,
                                                                                     Less{});
  check_launch("sort_tiles");
  for (int64_t w = SS::TILE; w < n; w *= 2) {
    MergeParams<K, V> p{nullptr, nullptr, 0, nullptr, nullptr, 0, src, src_values, n, w, dst, dst_values, nullptr};
    launch_merge_pass<K, V, Less>(p, n, splits, s, "merge_tiles (sort pass)");
    std::swap(src, dst);
    std::swap(src_values, dst_values);
  }
}

template <class F>
void with_key(Dtype t, F&& f) {
  switch (t) {
    case Dtype::i32: return f(int32_t{});
    case Dtype::i64: return f(int64_t{});
    default: return f(float{});
  }
}

template <class F>
void with_value(size_t bytes, F&& f) {
  if (bytes == 0) return f(NoValue{});
  if (bytes == 4) return f(uint32_t{});
  return f(uint64_t{});
}

}  // namespace

size_t merge_scratch_bytes(Dtype key, int64_t n) {
  size_t bytes = 0;
  with_key(key, [&](auto k) { bytes = round_up(size_t(merge_tiles_for<decltype(k)>(n)) * sizeof(int64_t)); });
  return bytes;
}

void launch_merge(Dtype key, size_t value_bytes, Order order, const void* a, const void* a_values, int64_t na,
                  const void* b, const void* b_values, int64_t nb, void* out, void* out_values, void* scratch,
                  cudaStream_t stream) {
  if (na + nb == 0) return;
  with_key(key, [&](auto k) {
    using K = decltype(k);
    with_value(value_bytes, [&](auto v) {
      using V = decltype(v);
      with_order<K>(order, [&](auto less) {
        run_merge<K, V, decltype(less)>(static_cast<const K*>(a), static_cast<const V*>(a_values), na,
                                        static_cast<const K*>(b), static_cast<const V*>(b_values), nb,
                                        static_cast<K*>(out), static_cast<V*>(out_values), scratch, stream);
      });
    });
  });
}

size_t sort_scratch_bytes(Dtype key, size_t value_bytes, int64_t n) {
  size_t tile = 0;
  with_key(key, [&](auto k) { tile = size_t(SortShape<decltype(k)>::TILE); });
  if (size_t(n) <= tile) return 0;  // one tile sorts in place
  return round_up(size_t(n) * dtype_size(key)) + round_up(size_t(n) * value_bytes) + merge_scratch_bytes(key, n);
}

void launch_sort(Dtype key, size_t value_bytes, Order order, void* keys, void* values, int64_t n, void* scratch,
                 cudaStream_t stream) {
  if (n <= 1) return;
  with_key(key, [&](auto k) {
    using K = decltype(k);
    with_value(value_bytes, [&](auto v) {
      using V = decltype(v);
      with_order<K>(order, [&](auto less) {
        run_sort<K, V, decltype(less)>(static_cast<K*>(keys), static_cast<V*>(values), n, scratch, stream);
      });
    });
  });
}

}  // namespace simkit::detail::cuda
