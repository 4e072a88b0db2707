// Context::stream: GPU calls ordered on a caller's stream. The inputs are written by an
// asynchronous copy queued on that stream just before each call, and the results read back by
// one queued just after, with a single synchronisation at the end: any call that did not order
// its work on the stream would read inputs still being copied. Calls that may return early
// (select_k, sort, knn on device arrays) are followed at once by calls on simkit's own streams,
// which lease the same working memory and must wait for the stream on the device. Built only
// with the CUDA backend (it creates streams itself); skips where no CUDA device is visible.

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/knn.hpp>
#include <simkit/primitives.hpp>

#include "contexts.hpp"
#include "reference.hpp"

namespace simkit::test {
namespace {

void ok(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }

/// A non-blocking stream (no implicit ordering with the legacy default stream), destroyed at
/// the end of the test.
class Stream {
 public:
  Stream() { ok(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { (void)cudaStreamDestroy(s_); }
  cudaStream_t get() const { return s_; }
  Context context() const {
    Context ctx = gpu_context();
    ctx.stream = s_;
    return ctx;
  }

 private:
  cudaStream_t s_ = nullptr;
};

TEST(GpuStream, KnnOrderedOnCallersStream) {
  SIMKIT_REQUIRE_GPU();
  const Matrix<float> Q = random_matrix(300, 96, 71), X = random_matrix(20011, 96, 72);
  const int64_t k = 17;
  const KnnResult want = knn(cpu_context(), Q.view(), X.view(), k, Metric::cosine);
  Stream stream;
  const Context ctx = stream.context();
  DeviceMatrix<float> dq(gpu_context(), Q.rows(), Q.cols()), dx(gpu_context(), X.rows(), X.cols());
  DeviceMatrix<float> dv(gpu_context(), Q.rows(), k);
  DeviceMatrix<int64_t> di(gpu_context(), Q.rows(), k);
  for (int round = 0; round < 3; ++round) {
    ok(cudaMemcpyAsync(dq.view().data, Q.data(), size_t(Q.size()) * 4, cudaMemcpyHostToDevice, stream.get()));
    ok(cudaMemcpyAsync(dx.view().data, X.data(), size_t(X.size()) * 4, cudaMemcpyHostToDevice, stream.get()));
    knn(ctx, dq.view(), dx.view(), k, Metric::cosine, dv.view(), di.view());
    std::vector<int64_t> ids(size_t(Q.rows() * k), -7);
    ok(cudaMemcpyAsync(ids.data(), di.view().data, ids.size() * 8, cudaMemcpyDeviceToHost, stream.get()));
    // Right away, on simkit's own streams: the same working memory, leased after the call above.
    const KnnResult other = knn(gpu_context(), Q.view(), X.view(), k, Metric::cosine);
    ok(cudaStreamSynchronize(stream.get()));
    for (int64_t i = 0; i < Q.rows(); ++i)
      for (int64_t p = 0; p < k; ++p) {
        ASSERT_EQ(ids[size_t(i * k + p)], want.ids(i, p)) << "round " << round << " query " << i << " position " << p;
        ASSERT_EQ(other.ids(i, p), want.ids(i, p)) << "round " << round << " query " << i << " position " << p;
      }
  }
}

TEST(GpuStream, SelectKAndSortReturnEarlyYetOrdered) {
  SIMKIT_REQUIRE_GPU();
  const int64_t rows = 257, cols = 30011, k = 40;
  const Matrix<float> in = random_matrix(rows, cols, 73);
  const SelectResult want = select_k(cpu_context(), in.view(), k, Order::descending);
  std::vector<int32_t> keys(1 << 20);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = int32_t((i * 2654435761u) % 1000003u) - 500000;
  std::vector<int32_t> sorted = keys;
  std::stable_sort(sorted.begin(), sorted.end());

  Stream stream;
  const Context ctx = stream.context();
  DeviceMatrix<float> din(gpu_context(), rows, cols), dv(gpu_context(), rows, k);
  DeviceMatrix<int64_t> di(gpu_context(), rows, k);
  DeviceMatrix<int32_t> dkeys(gpu_context(), 1, int64_t(keys.size()));
  ok(cudaMemcpyAsync(din.view().data, in.data(), size_t(in.size()) * 4, cudaMemcpyHostToDevice, stream.get()));
  ok(cudaMemcpyAsync(dkeys.view().data, keys.data(), keys.size() * 4, cudaMemcpyHostToDevice, stream.get()));
  select_k(ctx, din.view(), k, Order::descending, dv.view(), di.view());
  sort<int32_t>(ctx, ArrayView<int32_t>(dkeys.view().data, int64_t(keys.size()), Memory::device));
  std::vector<int64_t> ids(size_t(rows * k));
  std::vector<int32_t> got(keys.size());
  ok(cudaMemcpyAsync(ids.data(), di.view().data, ids.size() * 8, cudaMemcpyDeviceToHost, stream.get()));
  ok(cudaMemcpyAsync(got.data(), dkeys.view().data, got.size() * 4, cudaMemcpyDeviceToHost, stream.get()));
  // Host arrays on simkit's own streams, at once: a different caller of the same pool.
  std::vector<int32_t> again = keys;
  sort<int32_t>(gpu_context(), again);
  synchronize(ctx);
  EXPECT_EQ(got, sorted);
  EXPECT_EQ(again, sorted);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < k; ++p) ASSERT_EQ(ids[size_t(r * k + p)], want.ids(r, p)) << "row " << r << " at " << p;
}

}  // namespace
}  // namespace simkit::test
