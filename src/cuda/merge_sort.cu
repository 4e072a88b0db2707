// Merge and merge sort on the GPU: launch sequences of the kernels in merge_kernels.cuh, for
// keys int32 / int64 / float, values none / 4 / 8 bytes (moved as raw bits), both orders.
//
// Sort: tile sort (SortShape::TILE keys per block), then one merge pass per doubling of the run
// width, ping-ponging between the array and a scratch copy. The tile sort writes to whichever
// buffer makes the last pass end in the caller's array, so no copy-back pass is needed.

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>

#include "check.hpp"
#include "core/key_order.hpp"
#include "merge_kernels.cuh"
#include "prim_launch.hpp"

namespace simkit::detail::cuda {

namespace {

size_t round_up(size_t b) { return (b + 255) / 256 * 256; }

template <class K, class V, class Less>
void run_merge(const K* a, const V* av, int64_t na, const K* b, const V* bv, int64_t nb, K* out, V* ov,
               cudaStream_t s) {
  using MS = MergeShape<K>;
  const int64_t n = na + nb;
  MergeParams<K, V> p{a, av, na, b, bv, nb, nullptr, nullptr, 0, 0, out, ov};
  merge_tiles<K, V, Less><<<unsigned((n + MS::TILE - 1) / MS::TILE), MS::THREADS, 0, s>>>(p, Less{});
  check_launch("merge_tiles");
}

template <class K, class V, class Less>
void run_sort(K* keys, V* values, int64_t n, void* scratch, cudaStream_t s) {
  using SS = SortShape<K>;
  using MS = MergeShape<K>;
  static_assert(SS::TILE % MS::TILE == 0, "a merge tile never straddles two runs");
  int passes = 0;
  for (int64_t w = SS::TILE; w < n; w *= 2) ++passes;
  K* tmp = static_cast<K*>(scratch);
  V* tmp_values = reinterpret_cast<V*>(static_cast<char*>(scratch) + round_up(size_t(n) * sizeof(K)));
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
    MergeParams<K, V> p{nullptr, nullptr, 0, nullptr, nullptr, 0, src, src_values, n, w, dst, dst_values};
    merge_tiles<K, V, Less><<<unsigned((n + MS::TILE - 1) / MS::TILE), MS::THREADS, 0, s>>>(p, Less{});
    check_launch("merge_tiles (sort pass)");
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

template <class K, class F>
void with_order(Order order, F&& f) {
  if (order == Order::descending) return f(Descending<K>{});
  return f(Ascending<K>{});
}

}  // namespace

void launch_merge(Dtype key, size_t value_bytes, Order order, const void* a, const void* a_values, int64_t na,
                  const void* b, const void* b_values, int64_t nb, void* out, void* out_values, cudaStream_t stream) {
  if (na + nb == 0) return;
  with_key(key, [&](auto k) {
    using K = decltype(k);
    with_value(value_bytes, [&](auto v) {
      using V = decltype(v);
      with_order<K>(order, [&](auto less) {
        run_merge<K, V, decltype(less)>(static_cast<const K*>(a), static_cast<const V*>(a_values), na,
                                        static_cast<const K*>(b), static_cast<const V*>(b_values), nb,
                                        static_cast<K*>(out), static_cast<V*>(out_values), stream);
      });
    });
  });
}

size_t sort_scratch_bytes(Dtype key, size_t value_bytes, int64_t n) {
  size_t tile = 0;
  with_key(key, [&](auto k) { tile = size_t(SortShape<decltype(k)>::TILE); });
  if (size_t(n) <= tile) return 0;  // one tile sorts in place
  return round_up(size_t(n) * dtype_size(key)) + round_up(size_t(n) * value_bytes);
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
