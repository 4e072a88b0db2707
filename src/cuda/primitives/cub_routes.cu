// The primitives' calls served by CUB (cub_routes.hpp says which, and why).

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <cub/device/device_merge.cuh>
#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <type_traits>

#include "core/key_order.hpp"
#include "core/scan_ops.hpp"
#include "cuda/check.hpp"
#include "cuda/primitives/cub_routes.hpp"

namespace simkit::detail::cuda::cub_route {

namespace {

size_t round_up(size_t b) { return (b + 255) / 256 * 256; }

template <class F>
decltype(auto) with_int(Dtype t, F&& f) {
  if (t == Dtype::i64) return f(int64_t{});
  return f(int32_t{});
}

template <class F>
decltype(auto) with_value(size_t bytes, F&& f) {
  if (bytes == 8) return f(uint64_t{});
  return f(uint32_t{});  // 4 bytes; keys-only calls pass a null values pointer
}

/// One CUB scan call; temp == nullptr asks for the size. Sums use CUB's own sum entry points,
/// which carry CUB's tuning for plus on built-in types (its generic scan does not).
template <class T, class Op>
cudaError_t scan_call(void* temp, size_t& bytes, const T* in, T* out, int64_t n, bool exclusive, cudaStream_t s) {
  if constexpr (std::is_same_v<Op, SumOp<T>>) {
    return exclusive ? cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, n, s)
                     : cub::DeviceScan::InclusiveSum(temp, bytes, in, out, n, s);
  } else {
    return exclusive ? cub::DeviceScan::ExclusiveScan(temp, bytes, in, out, Op{}, Op::identity(), n, s)
                     : cub::DeviceScan::InclusiveScan(temp, bytes, in, out, Op{}, n, s);
  }
}

/// Radix sort of int keys through double buffers (the second halves in temp); the result is
/// copied back when CUB leaves it in the second buffer (an odd number of digit passes).
template <class K, class V>
cudaError_t radix_call(void* temp, size_t& bytes, bool pairs, K* keys, V* values, K* alt_keys, V* alt_values, int64_t n,
                       bool descending, cudaStream_t s) {
  cub::DoubleBuffer<K> k(keys, alt_keys);
  cub::DoubleBuffer<V> v(values, alt_values);
  constexpr int bits = int(sizeof(K)) * 8;
  cudaError_t e;
  if (!pairs)
    e = descending ? cub::DeviceRadixSort::SortKeysDescending(temp, bytes, k, n, 0, bits, s)
                   : cub::DeviceRadixSort::SortKeys(temp, bytes, k, n, 0, bits, s);
  else
    e = descending ? cub::DeviceRadixSort::SortPairsDescending(temp, bytes, k, v, n, 0, bits, s)
                   : cub::DeviceRadixSort::SortPairs(temp, bytes, k, v, n, 0, bits, s);
  if (e != cudaSuccess || temp == nullptr) return e;
  if (k.Current() != keys) {
    e = cudaMemcpyAsync(keys, k.Current(), size_t(n) * sizeof(K), cudaMemcpyDeviceToDevice, s);
    if (e == cudaSuccess && pairs)
      e = cudaMemcpyAsync(values, v.Current(), size_t(n) * sizeof(V), cudaMemcpyDeviceToDevice, s);
  }
  return e;
}

template <class K, class V, class Less>
cudaError_t merge_sort_call(void* temp, size_t& bytes, bool pairs, K* keys, V* values, int64_t n, cudaStream_t s) {
  if (!pairs) return cub::DeviceMergeSort::StableSortKeys(temp, bytes, keys, n, Less{}, s);
  return cub::DeviceMergeSort::StableSortPairs(temp, bytes, keys, values, n, Less{}, s);
}

}  // namespace

bool enabled() {
  const char* own = std::getenv("SIMKIT_PRIMITIVES_OWN");
  return own == nullptr || *own == '\0' || std::strcmp(own, "0") == 0;
}

// ------------------------------------------------------------------------------------ scan

bool serves_scan(Dtype type, ScanOp, bool segmented) {
  return enabled() && !segmented && (type == Dtype::i32 || type == Dtype::i64);
}

size_t scan_bytes(Dtype type, ScanOp op, int64_t n, bool exclusive) {
  size_t bytes = 0;
  with_int(type, [&](auto t) {
    using T = decltype(t);
    with_scan_op<T>(op, [&](auto o) {
      check_cuda(scan_call<T, decltype(o)>(nullptr, bytes, nullptr, nullptr, n, exclusive, nullptr), "cub scan size");
    });
  });
  return bytes;
}

void scan(Dtype type, ScanOp op, const void* in, void* out, int64_t n, bool exclusive, void* temp, size_t temp_bytes,
          cudaStream_t stream) {
  if (n == 0) return;
  with_int(type, [&](auto t) {
    using T = decltype(t);
    with_scan_op<T>(op, [&](auto o) {
      check_cuda(scan_call<T, decltype(o)>(temp, temp_bytes, static_cast<const T*>(in), static_cast<T*>(out), n,
                                           exclusive, stream),
                 "cub::DeviceScan");
    });
  });
}

// ----------------------------------------------------------------------------------- merge

bool serves_merge(Dtype key, size_t value_bytes) {
  return enabled() && value_bytes == 0 && (key == Dtype::i32 || key == Dtype::i64);
}

size_t merge_bytes(Dtype key, Order order, int64_t na, int64_t nb) {
  size_t bytes = 0;
  with_int(key, [&](auto k) {
    using K = decltype(k);
    with_order<K>(order, [&](auto less) {
      check_cuda(cub::DeviceMerge::MergeKeys(nullptr, bytes, (const K*)nullptr, na, (const K*)nullptr, nb, (K*)nullptr,
                                             less, nullptr),
                 "cub merge size");
    });
  });
  return bytes;
}

void merge(Dtype key, Order order, const void* a, int64_t na, const void* b, int64_t nb, void* out, void* temp,
           size_t temp_bytes, cudaStream_t stream) {
  if (na + nb == 0) return;
  with_int(key, [&](auto k) {
    using K = decltype(k);
    with_order<K>(order, [&](auto less) {
      check_cuda(cub::DeviceMerge::MergeKeys(temp, temp_bytes, static_cast<const K*>(a), na, static_cast<const K*>(b),
                                             nb, static_cast<K*>(out), less, stream),
                 "cub::DeviceMerge::MergeKeys");
    });
  });
}

// ------------------------------------------------------------------------------------ sort

bool serves_sort(Dtype key, size_t) {
  return enabled() && (key == Dtype::i32 || key == Dtype::i64 || key == Dtype::f32);
}

size_t sort_bytes(Dtype key, size_t value_bytes, Order order, int64_t n) {
  size_t bytes = 0;
  const bool pairs = value_bytes != 0;
  with_value(value_bytes, [&](auto v) {
    using V = decltype(v);
    if (key == Dtype::f32) {
      with_order<float>(order, [&](auto less) {
        check_cuda(merge_sort_call<float, V, decltype(less)>(nullptr, bytes, pairs, nullptr, nullptr, n, nullptr),
                   "cub merge sort size");
      });
      return;
    }
    with_int(key, [&](auto k) {
      using K = decltype(k);
      check_cuda(radix_call<K, V>(nullptr, bytes, pairs, nullptr, nullptr, nullptr, nullptr, n,
                                  order == Order::descending, nullptr),
                 "cub radix sort size");
      bytes += round_up(size_t(n) * sizeof(K)) + round_up(size_t(n) * value_bytes);
    });
  });
  return bytes;
}

void sort(Dtype key, size_t value_bytes, Order order, void* keys, void* values, int64_t n, void* temp,
          size_t temp_bytes, cudaStream_t stream) {
  if (n <= 1) return;
  const bool pairs = value_bytes != 0;
  with_value(value_bytes, [&](auto v) {
    using V = decltype(v);
    V* vals = static_cast<V*>(values);
    if (key == Dtype::f32) {
      with_order<float>(order, [&](auto less) {
        check_cuda(merge_sort_call<float, V, decltype(less)>(temp, temp_bytes, pairs, static_cast<float*>(keys), vals,
                                                             n, stream),
                   "cub::DeviceMergeSort");
      });
      return;
    }
    with_int(key, [&](auto k) {
      using K = decltype(k);
      // temp: the second key buffer, the second value buffer, then CUB's own scratch.
      const size_t kb = round_up(size_t(n) * sizeof(K)), vb = round_up(size_t(n) * value_bytes);
      char* t = static_cast<char*>(temp);
      size_t cub_bytes = temp_bytes - kb - vb;
      check_cuda(radix_call<K, V>(t + kb + vb, cub_bytes, pairs, static_cast<K*>(keys), vals, reinterpret_cast<K*>(t),
                                  reinterpret_cast<V*>(t + kb), n, order == Order::descending, stream),
                 "cub::DeviceRadixSort");
    });
  });
}

}  // namespace simkit::detail::cuda::cub_route
