// The primitives on the GPU, host side: lease the device's resources, stage host arrays into
// the arena (device arrays are used where they are), size and carve the kernels' scratch,
// launch simkit's kernels (prim_launch.hpp) or, for the calls CUB was measured faster on, CUB
// (cub_routes.hpp), copy host outputs back, and turn a data check made on the device
// (CSR structure, segment offsets) into the same invalid_argument the host checks throw.
//
// The arena grows only when a call needs more than it holds, so a repeated call makes no
// allocation and no cudaMemGetInfo query: its host cost is the launches and one synchronise.

#include <cstring>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "check.hpp"
#include "core/primitives_backend.hpp"
#include "cub_routes.hpp"
#include "prim_launch.hpp"
#include "resources.hpp"

namespace simkit::detail::cuda {

namespace {

/// Makes room for `bytes` of scratch in the leased arena, within the budget.
void ensure_arena(const Context& ctx, Resources& r, size_t bytes, const char* fn) {
  const size_t have = r.arena.capacity();
  if (have >= bytes && (ctx.gpu_memory_budget == 0 || have <= ctx.gpu_memory_budget)) return;
  const size_t budget = working_budget(ctx, r);
  if (bytes > budget)
    throw Error(ErrorCode::out_of_memory, std::string(fn) + ": needs " + std::to_string((bytes >> 20) + 1) +
                                              " MiB of GPU working memory, the budget allows " +
                                              std::to_string(budget >> 20) + " MiB");
  r.arena.reserve(bytes, budget);
}

/// The arrays of one call: host ones get a device copy in the arena, device ones are used as
/// they are. Plan every array (add), reserve, then carve in the same order (place).
class Staging {
 public:
  void add(const Raw& a) {
    if (a.present() && a.where == Memory::host && a.size > 0) bytes_ += Carver::round(a.bytes());
  }
  size_t bytes() const { return bytes_; }

  /// The device address of `a`; a host input is copied over on `s`.
  void* place(Carver& carve, const Raw& a, bool input, cudaStream_t s) {
    if (!a.present() || a.size == 0) return nullptr;
    if (a.where == Memory::device) return a.data;
    void* d = carve.take<unsigned char>(a.bytes());
    if (input) check_cuda(cudaMemcpyAsync(d, a.data, a.bytes(), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    return d;
  }

  static void back(const Raw& a, const void* d, cudaStream_t s) {
    if (a.present() && a.where == Memory::host && a.size > 0)
      check_cuda(cudaMemcpyAsync(a.data, d, a.bytes(), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  }

 private:
  size_t bytes_ = 0;
};

/// A call's lease, stream, and an error word checked by the kernels.
struct Call {
  DeviceGuard guard;
  Lease lease;
  cudaStream_t stream;
  explicit Call(const Context& ctx) : guard(ctx.gpu_id), lease(ctx.gpu_id), stream(lease->stream[0]) {}

  /// Waits for the stream; returns the error word (0 when none was placed).
  int finish(const int* error) {
    int bits = 0;
    if (error != nullptr)
      check_cuda(cudaMemcpyAsync(lease->pinned_small.data(), error, sizeof(int), cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    if (error != nullptr) std::memcpy(&bits, lease->pinned_small.data(), sizeof bits);
    return bits;
  }
};

constexpr size_t kErrorWord = 256;  // an int, rounded to the carve granularity

}  // namespace

void scan(const Context& ctx, const ScanArgs& a) {
  Call call(ctx);
  Resources& r = *call.lease;
  const int64_t n = a.in.size;
  const bool segmented = a.segments.present();
  const bool offsets = segmented && a.segments.type != Dtype::u8;
  Staging st;
  st.add(a.in);
  if (a.out.data != a.in.data || a.out.where != a.in.where) st.add(a.out);
  st.add(a.segments);
  const bool by_cub = cub_route::serves_scan(a.in.type, a.op, segmented);
  const size_t scratch = by_cub ? cub_route::scan_bytes(a.in.type, a.op, n, a.exclusive)
                                : scan_scratch_bytes(a.in.type, a.op, segmented, n);
  const size_t heads_bytes = offsets ? Carver::round(size_t(n)) : 0;
  ensure_arena(ctx, r, st.bytes() + Carver::round(scratch) + heads_bytes + kErrorWord, "scan");
  Carver carve(r.arena);
  const cudaStream_t s = call.stream;
  void* in = st.place(carve, a.in, true, s);
  void* out = (a.out.data == a.in.data && a.out.where == a.in.where) ? in : st.place(carve, a.out, false, s);
  const void* seg = st.place(carve, a.segments, true, s);
  void* work = carve.take<unsigned char>(scratch);
  int* error = nullptr;
  if (by_cub) {
    cub_route::scan(a.in.type, a.op, in, out, n, a.exclusive, work, scratch, s);
  } else if (!segmented) {
    launch_scan(a.in.type, a.op, in, out, n, a.exclusive, work, s);
  } else {
    const uint8_t* heads = static_cast<const uint8_t*>(seg);
    if (offsets) {
      uint8_t* made = carve.take<uint8_t>(size_t(n));
      error = carve.take<int>(1);
      check_cuda(cudaMemsetAsync(error, 0, sizeof(int), s), "cudaMemsetAsync");
      launch_heads_from_offsets(a.segments.type, seg, a.segments.size - 1, n, made, error, s);
      heads = made;
    }
    launch_segmented_scan(a.in.type, a.op, in, heads, out, n, a.exclusive, work, s);
  }
  Staging::back(a.out, out, s);
  if (call.finish(error) != 0)
    throw Error(ErrorCode::invalid_argument,
                "segmented scan: the offsets (checked on the device) do not rise from 0 to " + std::to_string(n));
}

void merge(const Context& ctx, const MergeArgs& a) {
  Call call(ctx);
  Resources& r = *call.lease;
  Staging st;
  for (const Raw* x : {&a.a_keys, &a.b_keys, &a.out_keys, &a.a_values, &a.b_values, &a.out_values}) st.add(*x);
  const size_t vb = a.out_values.present() ? dtype_size(a.out_values.type) : 0;
  const bool by_cub = cub_route::serves_merge(a.a_keys.type, vb);
  const size_t scratch = by_cub ? cub_route::merge_bytes(a.a_keys.type, a.order, a.a_keys.size, a.b_keys.size)
                                : merge_scratch_bytes(a.a_keys.type, a.a_keys.size + a.b_keys.size);
  ensure_arena(ctx, r, st.bytes() + Carver::round(scratch), "merge");
  Carver carve(r.arena);
  const cudaStream_t s = call.stream;
  const void* ak = st.place(carve, a.a_keys, true, s);
  const void* bk = st.place(carve, a.b_keys, true, s);
  void* ok = st.place(carve, a.out_keys, false, s);
  const void* av = st.place(carve, a.a_values, true, s);
  const void* bv = st.place(carve, a.b_values, true, s);
  void* ov = st.place(carve, a.out_values, false, s);
  void* work = carve.take<unsigned char>(scratch);
  if (by_cub)
    cub_route::merge(a.a_keys.type, a.order, ak, a.a_keys.size, bk, a.b_keys.size, ok, work, scratch, s);
  else
    launch_merge(a.a_keys.type, vb, a.order, ak, av, a.a_keys.size, bk, bv, a.b_keys.size, ok, ov, work, s);
  Staging::back(a.out_keys, ok, s);
  Staging::back(a.out_values, ov, s);
  call.finish(nullptr);
}

void sort(const Context& ctx, const SortArgs& a) {
  Call call(ctx);
  Resources& r = *call.lease;
  Staging st;
  st.add(a.keys);
  st.add(a.values);
  const size_t vb = a.values.present() ? dtype_size(a.values.type) : 0;
  const bool by_cub = cub_route::serves_sort(a.keys.type, vb);
  const size_t scratch = by_cub ? cub_route::sort_bytes(a.keys.type, vb, a.order, a.keys.size)
                                : sort_scratch_bytes(a.keys.type, vb, a.keys.size);
  ensure_arena(ctx, r, st.bytes() + Carver::round(scratch), "sort");
  Carver carve(r.arena);
  const cudaStream_t s = call.stream;
  void* keys = st.place(carve, a.keys, true, s);
  void* values = st.place(carve, a.values, true, s);
  void* work = carve.take<unsigned char>(scratch);
  if (by_cub)
    cub_route::sort(a.keys.type, vb, a.order, keys, values, a.keys.size, work, scratch, s);
  else
    launch_sort(a.keys.type, vb, a.order, keys, values, a.keys.size, work, s);
  Staging::back(a.keys, keys, s);
  Staging::back(a.values, values, s);
  call.finish(nullptr);
}

void spmv(const Context& ctx, const SpmvArgs& a) {
  Call call(ctx);
  Resources& r = *call.lease;
  Staging st;
  for (const Raw* x : {&a.offsets, &a.indices, &a.values, &a.x, &a.y}) st.add(*x);
  const int64_t nnz = a.values.size;
  const size_t scratch = spmv_scratch_bytes(a.rows, nnz);
  ensure_arena(ctx, r, st.bytes() + Carver::round(scratch) + kErrorWord, "spmv_csr");
  Carver carve(r.arena);
  const cudaStream_t s = call.stream;
  const void* off = st.place(carve, a.offsets, true, s);
  const void* idx = st.place(carve, a.indices, true, s);
  const void* val = st.place(carve, a.values, true, s);
  const void* x = st.place(carve, a.x, true, s);
  void* y = st.place(carve, a.y, false, s);
  void* work = carve.take<unsigned char>(scratch);
  int* error = carve.take<int>(1);
  check_cuda(cudaMemsetAsync(error, 0, sizeof(int), s), "cudaMemsetAsync");
  launch_spmv(a.values.type, a.offsets.type, off, idx, val, x, y, a.rows, a.cols, nnz, work, error, s);
  Staging::back(a.y, y, s);
  const int bits = call.finish(error);
  if (bits & 2)
    throw Error(ErrorCode::invalid_argument,
                "spmv_csr: row_offsets (checked on the device) do not rise from 0 to nnz = " + std::to_string(nnz));
  if (bits & 1)
    throw Error(
        ErrorCode::invalid_argument,
        "spmv_csr: col_indices (checked on the device) hold an index outside [0, " + std::to_string(a.cols) + ")");
}

}  // namespace simkit::detail::cuda
