// The CUB and cuSPARSE peers of `simkit bench primitives` (gpu_peers.hpp). Each peer runs on
// its own stream, with its temporary storage allocated once here, outside the timed calls.

#include <cuda_runtime.h>
#include <curand.h>
#include <cusparse.h>

#include <cub/device/device_merge.cuh>
#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <memory>
#include <string>

#include <simkit/error.hpp>

#include "gpu_peers.hpp"

namespace simkit::cli::bench::gpu_peers {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(ErrorCode::device, std::string(what) + ": " + cudaGetErrorString(e));
}

void check(cusparseStatus_t e, const char* what) {
  if (e != CUSPARSE_STATUS_SUCCESS)
    throw Error(ErrorCode::device, std::string(what) + ": " + cusparseGetErrorString(e));
}

/// Device memory and a stream owned by a peer's callable (shared, since std::function copies).
struct Owned {
  void* temp = nullptr;
  cudaStream_t stream = nullptr;
  Owned() { check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Owned() {
    cudaFree(temp);
    cudaStreamDestroy(stream);
  }
  void allocate(size_t bytes) { check(cudaMalloc(&temp, bytes > 0 ? bytes : 1), "cudaMalloc (peer scratch)"); }
  void wait(const char* what) {
    check(cudaGetLastError(), what);
    check(cudaStreamSynchronize(stream), what);
  }
};

}  // namespace

template <class T>
Run cub_inclusive_sum(const T* in, T* out, int64_t n) {
  auto o = std::make_shared<Owned>();
  size_t bytes = 0;
  check(cub::DeviceScan::InclusiveSum(nullptr, bytes, in, out, n, o->stream), "cub::DeviceScan::InclusiveSum");
  o->allocate(bytes);
  return [o, bytes, in, out, n] {
    size_t b = bytes;
    check(cub::DeviceScan::InclusiveSum(o->temp, b, in, out, n, o->stream), "cub::DeviceScan::InclusiveSum");
    o->wait("cub::DeviceScan::InclusiveSum");
  };
}
template Run cub_inclusive_sum<int32_t>(const int32_t*, int32_t*, int64_t);
template Run cub_inclusive_sum<float>(const float*, float*, int64_t);

Run cub_merge_keys(const int32_t* a, int64_t na, const int32_t* b, int64_t nb, int32_t* out) {
  auto o = std::make_shared<Owned>();
  size_t bytes = 0;
  const ::cuda::std::less<int32_t> less;
  check(cub::DeviceMerge::MergeKeys(nullptr, bytes, a, na, b, nb, out, less, o->stream), "cub::DeviceMerge::MergeKeys");
  o->allocate(bytes);
  return [=] {
    size_t t = bytes;
    check(cub::DeviceMerge::MergeKeys(o->temp, t, a, na, b, nb, out, less, o->stream), "cub::DeviceMerge::MergeKeys");
    o->wait("cub::DeviceMerge::MergeKeys");
  };
}

Run cub_merge_sort(int32_t* keys, int32_t* values, int64_t n) {
  auto o = std::make_shared<Owned>();
  size_t bytes = 0;
  const ::cuda::std::less<int32_t> less;
  if (values != nullptr)
    check(cub::DeviceMergeSort::StableSortPairs(nullptr, bytes, keys, values, n, less, o->stream),
          "cub::DeviceMergeSort::StableSortPairs");
  else
    check(cub::DeviceMergeSort::StableSortKeys(nullptr, bytes, keys, n, less, o->stream),
          "cub::DeviceMergeSort::StableSortKeys");
  o->allocate(bytes);
  return [=] {
    size_t t = bytes;
    if (values != nullptr)
      check(cub::DeviceMergeSort::StableSortPairs(o->temp, t, keys, values, n, less, o->stream),
            "cub::DeviceMergeSort::StableSortPairs");
    else
      check(cub::DeviceMergeSort::StableSortKeys(o->temp, t, keys, n, less, o->stream),
            "cub::DeviceMergeSort::StableSortKeys");
    o->wait("cub::DeviceMergeSort");
  };
}

Run cub_radix_sort(const int32_t* keys_in, int32_t* keys_out, const int32_t* values_in, int32_t* values_out,
                   int64_t n) {
  auto o = std::make_shared<Owned>();
  size_t bytes = 0;
  if (values_in != nullptr)
    check(
        cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, values_in, values_out, n, 0, 32, o->stream),
        "cub::DeviceRadixSort::SortPairs");
  else
    check(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys_in, keys_out, n, 0, 32, o->stream),
          "cub::DeviceRadixSort::SortKeys");
  o->allocate(bytes);
  return [=] {
    size_t t = bytes;
    if (values_in != nullptr)
      check(cub::DeviceRadixSort::SortPairs(o->temp, t, keys_in, keys_out, values_in, values_out, n, 0, 32, o->stream),
            "cub::DeviceRadixSort::SortPairs");
    else
      check(cub::DeviceRadixSort::SortKeys(o->temp, t, keys_in, keys_out, n, 0, 32, o->stream),
            "cub::DeviceRadixSort::SortKeys");
    o->wait("cub::DeviceRadixSort");
  };
}

Run cusparse_spmv(int64_t rows, int64_t cols, int64_t nnz, const int32_t* offsets, const int32_t* indices,
                  const float* values, const float* x, float* y) {
  struct Sparse : Owned {
    cusparseHandle_t handle = nullptr;
    cusparseSpMatDescr_t A = nullptr;
    cusparseDnVecDescr_t vx = nullptr, vy = nullptr;
    ~Sparse() {
      if (vy) cusparseDestroyDnVec(vy);
      if (vx) cusparseDestroyDnVec(vx);
      if (A) cusparseDestroySpMat(A);
      if (handle) cusparseDestroy(handle);
    }
  };
  auto o = std::make_shared<Sparse>();
  check(cusparseCreate(&o->handle), "cusparseCreate");
  check(cusparseSetStream(o->handle, o->stream), "cusparseSetStream");
  check(cusparseCreateCsr(&o->A, rows, cols, nnz, const_cast<int32_t*>(offsets), const_cast<int32_t*>(indices),
                          const_cast<float*>(values), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                          CUDA_R_32F),
        "cusparseCreateCsr");
  check(cusparseCreateDnVec(&o->vx, cols, const_cast<float*>(x), CUDA_R_32F), "cusparseCreateDnVec");
  check(cusparseCreateDnVec(&o->vy, rows, y, CUDA_R_32F), "cusparseCreateDnVec");
  const float alpha = 1, beta = 0;
  size_t bytes = 0;
  check(cusparseSpMV_bufferSize(o->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, o->A, o->vx, &beta, o->vy,
                                CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &bytes),
        "cusparseSpMV_bufferSize");
  o->allocate(bytes);
  return [o, alpha, beta] {
    check(cusparseSpMV(o->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, o->A, o->vx, &beta, o->vy, CUDA_R_32F,
                       CUSPARSE_SPMV_ALG_DEFAULT, o->temp),
          "cusparseSpMV");
    o->wait("cusparseSpMV");
  };
}

void fill_uniform(float* device, int64_t n, uint64_t seed) {
  curandGenerator_t g = nullptr;
  if (curandCreateGenerator(&g, CURAND_RNG_PSEUDO_PHILOX4_32_10) != CURAND_STATUS_SUCCESS)
    throw Error(ErrorCode::device, "curandCreateGenerator failed");
  const bool ok = curandSetPseudoRandomGeneratorSeed(g, seed) == CURAND_STATUS_SUCCESS &&
                  curandGenerateUniform(g, device, size_t(n)) == CURAND_STATUS_SUCCESS;
  curandDestroyGenerator(g);
  if (!ok) throw Error(ErrorCode::device, "curandGenerateUniform failed");
  check(cudaDeviceSynchronize(), "curandGenerateUniform");
}

void to_device(void* device, const void* host, size_t bytes) {
  check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}
void to_host(void* host, const void* device, size_t bytes) {
  check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}
void device_copy(void* to, const void* from, size_t bytes) {
  // A device-to-device cudaMemcpy may return before the copy is done, and the peers' streams
  // do not wait for the default stream: wait here, or a sort may start on a half-copied input.
  check(cudaMemcpy(to, from, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace simkit::cli::bench::gpu_peers
