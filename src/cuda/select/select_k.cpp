// select_k on the GPU: the k-NN selection (select_tile.cuh through TopKLists) run over the rows of
// a matrix instead of over score tiles. Rows go in batches that fit the budget (with their
// running lists, and staging when the input or outputs are on the host); a row longer than
// 2^30 columns is fed as several tiles, as k-NN feeds its base. k beyond the device lists
// (kMaxListCapacity) is selected on the host by the CPU backend, in row batches.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/resources.hpp"
#include "cuda/select/top_k_lists.hpp"
#include "cuda/staging.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int64_t kMaxTileCols = int64_t{1} << 30;
constexpr int64_t kHostBatchBytes = int64_t{1} << 30;

// k > kMaxListCapacity: bring row batches to the host and select there.
void select_on_host(const Context& ctx, const SelectKArgs& a) {
  const int64_t rows = a.in.rows, cols = a.in.cols, k = a.k;
  const int64_t batch = std::max<int64_t>(1, kHostBatchBytes / std::max<int64_t>(1, cols * 4));
  std::vector<float> in, values;
  std::vector<int64_t> ids;
  Context host = ctx;
  host.device = Device::cpu;
  Call call(ctx);  // copies in the caller's stream order
  const cudaStream_t s = call.stream();
  auto copy = [&](void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  };
  for (int64_t r0 = 0; r0 < rows; r0 += batch) {
    const int64_t mb = std::min(batch, rows - r0);
    MatrixView<const float> src(a.in.data + r0 * cols, mb, cols);
    if (a.in.where == Memory::device) {
      in.resize(size_t(mb * cols));
      copy(in.data(), src.data, size_t(mb * cols) * 4, cudaMemcpyDeviceToHost);
      src.data = in.data();
    }
    MatrixView<float> v(a.values.data + r0 * k, mb, k);
    MatrixView<int64_t> i(a.ids.data + r0 * k, mb, k);
    if (a.values.where == Memory::device) values.resize(size_t(mb * k)), v.data = values.data();
    if (a.ids.where == Memory::device) ids.resize(size_t(mb * k)), i.data = ids.data();
    cpu_backend().select_k(host, SelectKArgs{src, k, a.order, v, i});
    if (a.values.where == Memory::device)
      copy(a.values.data + r0 * k, v.data, size_t(mb * k) * 4, cudaMemcpyHostToDevice);
    if (a.ids.where == Memory::device) copy(a.ids.data + r0 * k, i.data, size_t(mb * k) * 8, cudaMemcpyHostToDevice);
  }
  call.finish();
}

}  // namespace

void CudaBackend::select_k(const Context& ctx, const SelectKArgs& a) const {
  const int64_t rows = a.in.rows, cols = a.in.cols, k = a.k;
  if (k > kMaxListCapacity) return select_on_host(ctx, a);
  Call call(ctx);
  Resources& r = call.r();
  const cudaStream_t s = call.stream();
  const int C = select_capacity(k);
  const bool in_host = a.in.where == Memory::host;
  const bool values_host = a.values.where == Memory::host, ids_host = a.ids.where == Memory::host;
  const size_t per_row = size_t(C) * 12 + (in_host ? size_t(cols) * 4 : 0) + (values_host ? size_t(k) * 4 : 0) +
                         (ids_host ? size_t(k) * 8 : 0);
  // A batch: every row when it fits, else what the budget holds (the budget is asked only then).
  int64_t mb = std::min<int64_t>(rows, int64_t(1) << 30);
  auto bytes_for = [&](int64_t m) { return size_t(m) * per_row + 6 * Carver::alignment; };
  if (r.arena.capacity() < bytes_for(mb)) {
    const size_t budget = working_budget(ctx, r);
    mb = std::min<int64_t>(mb, int64_t(budget / per_row) - 1);
    if (mb < 1)
      throw Error(ErrorCode::out_of_memory, "select_k: one row needs " + std::to_string(per_row >> 20) +
                                                " MiB of GPU working memory, more than the budget");
    r.arena.reserve(bytes_for(mb), budget);
  }
  Carver carve(r.arena);
  float* keys = carve.take<float>(size_t(mb) * C);
  int64_t* ids = carve.take<int64_t>(size_t(mb) * C);
  RowStage<const float> in(a.in, mb);
  RowStage<float> values(a.values, mb);
  RowStage<int64_t> out_ids(a.ids, mb);
  in.carve(carve);
  values.carve(carve);
  out_ids.carve(carve);
  const bool largest = a.order == Order::descending;
  const KeyMode mode = largest ? KeyMode::negate : KeyMode::plain;

  for (int64_t r0 = 0; r0 < rows; r0 += mb) {
    const int64_t m = std::min(mb, rows - r0);
    const float* src = in.in(r0, m, s);
    const TopKLists lists{keys, ids, C, int(k), int(m)};
    lists.reset(s);
    for (int64_t c0 = 0; c0 < cols; c0 += kMaxTileCols)
      lists.add_tile(src + c0, cols, int(std::min(kMaxTileCols, cols - c0)), mode, nullptr, c0, s);
    lists.finish(k, KeyToValue{largest, false}, values.out(r0), out_ids.out(r0), s);
    values.back(r0, m, s);
    out_ids.back(r0, m, s);
  }
  call.finish(in_host || values_host || ids_host);
}

}  // namespace simkit::detail::cuda
