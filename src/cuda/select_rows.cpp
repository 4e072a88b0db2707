// select_k on the GPU: the k-NN selection (select_k.cuh through TopKLists) run over the rows of
// a matrix instead of over score tiles. Rows go in batches that fit the budget (with their
// running lists, and staging when the input or outputs are on the host); a row longer than
// 2^30 columns is fed as several tiles, as k-NN feeds its base. k beyond the device lists
// (kMaxListCapacity) is selected on the host by the CPU backend, in row batches.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "check.hpp"
#include "core/primitives_backend.hpp"
#include "resources.hpp"
#include "select.hpp"

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
  for (int64_t r0 = 0; r0 < rows; r0 += batch) {
    const int64_t mb = std::min(batch, rows - r0);
    MatrixView<const float> src(a.in.data + r0 * cols, mb, cols);
    if (a.in.where == Memory::device) {
      in.resize(size_t(mb * cols));
      check_cuda(cudaMemcpy(in.data(), src.data, size_t(mb * cols) * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
      src.data = in.data();
    }
    MatrixView<float> v(a.values.data + r0 * k, mb, k);
    MatrixView<int64_t> i(a.ids.data + r0 * k, mb, k);
    if (a.values.where == Memory::device) values.resize(size_t(mb * k)), v.data = values.data();
    if (a.ids.where == Memory::device) ids.resize(size_t(mb * k)), i.data = ids.data();
    cpu::select_k(host, SelectKArgs{src, k, a.order, v, i});
    if (a.values.where == Memory::device)
      check_cuda(cudaMemcpy(a.values.data + r0 * k, v.data, size_t(mb * k) * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    if (a.ids.where == Memory::device)
      check_cuda(cudaMemcpy(a.ids.data + r0 * k, i.data, size_t(mb * k) * 8, cudaMemcpyHostToDevice), "cudaMemcpy");
  }
}

}  // namespace

void select_k(const Context& ctx, const SelectKArgs& a) {
  const int64_t rows = a.in.rows, cols = a.in.cols, k = a.k;
  DeviceGuard guard(ctx.gpu_id);
  if (k > kMaxListCapacity) return select_on_host(ctx, a);
  Lease lease(ctx.gpu_id);
  Resources& r = *lease;
  const cudaStream_t s = r.stream[0];
  const int C = select_capacity(k);
  const bool in_host = a.in.where == Memory::host;
  const bool out_host = a.values.where == Memory::host || a.ids.where == Memory::host;
  const size_t per_row = size_t(C) * 12 + (in_host ? size_t(cols) * 4 : 0) + (out_host ? size_t(k) * 12 : 0);
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
  float* stage_in = in_host ? carve.take<float>(size_t(mb) * cols) : nullptr;
  float* stage_v = out_host ? carve.take<float>(size_t(mb) * k) : nullptr;
  int64_t* stage_i = out_host ? carve.take<int64_t>(size_t(mb) * k) : nullptr;
  const KeyMode mode = a.order == Order::descending ? KeyMode::negate : KeyMode::plain;
  const float sign = a.order == Order::descending ? -1.f : 1.f;

  for (int64_t r0 = 0; r0 < rows; r0 += mb) {
    const int64_t m = std::min(mb, rows - r0);
    const float* src = a.in.data + r0 * cols;
    if (in_host) {
      check_cuda(cudaMemcpyAsync(stage_in, src, size_t(m * cols) * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
      src = stage_in;
    }
    const TopKLists lists{keys, ids, C, int(k), int(m)};
    lists.reset(s);
    for (int64_t c0 = 0; c0 < cols; c0 += kMaxTileCols)
      lists.add_tile(src + c0, cols, int(std::min(kMaxTileCols, cols - c0)), mode, nullptr, c0, s);
    float* v = a.values.where == Memory::device ? a.values.data + r0 * k : stage_v;
    int64_t* i = a.ids.where == Memory::device ? a.ids.data + r0 * k : stage_i;
    lists.finish(k, sign, v, i, s);
    if (a.values.where == Memory::host)
      check_cuda(cudaMemcpyAsync(a.values.data + r0 * k, v, size_t(m * k) * 4, cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
    if (a.ids.where == Memory::host)
      check_cuda(cudaMemcpyAsync(a.ids.data + r0 * k, i, size_t(m * k) * 8, cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
  }
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

}  // namespace simkit::detail::cuda
