// The primitives on the GPU, host side: lease the device's resources (cuda/call.hpp), stage host
// arrays into the arena (cuda/staging.hpp; device arrays are used where they are), size and carve the kernels' scratch,
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

#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/primitives/cub_routes.hpp"
#include "cuda/primitives/prim_launch.hpp"
#include "cuda/resources.hpp"
#include "cuda/staging.hpp"

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

constexpr size_t kErrorWord = 256;  // an int, rounded to the carve granularity

}  // namespace

void CudaBackend::scan(const Context& ctx, const ScanArgs& a) const {
  Call call(ctx);
  Resources& r = call.r();
  const int64_t n = a.in.size;
  const bool segmented = a.segments.present();
  const bool offsets = segmented && a.segments.type != Dtype::u8;
  ArrayStage st;
  st.add(a.in);
  if (a.out.data != a.in.data || a.out.where != a.in.where) st.add(a.out);
  st.add(a.segments);
  const bool by_cub = cub_route::serves_scan(a.in.type, a.op, segmented);
  const size_t scratch = by_cub ? cub_route::scan_bytes(a.in.type, a.op, n, a.exclusive)
                                : scan_scratch_bytes(a.in.type, a.op, segmented, n);
  const size_t heads_bytes = offsets ? Carver::round(size_t(n)) : 0;
  ensure_arena(ctx, r, st.bytes() + Carver::round(scratch) + heads_bytes + kErrorWord, "scan");
  Carver carve(r.arena);
  const cudaStream_t s = call.stream();
  void* in = ArrayStage::place(carve, a.in, true, s);
  void* out = (a.out.data == a.in.data && a.out.where == a.in.where) ? in : ArrayStage::place(carve, a.out, false, s);
  const void* seg = ArrayStage::place(carve, a.segments, true, s);
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
  ArrayStage::back(a.out, out, s);
  if (error == nullptr) return call.finish(any_on_host({a.in, a.out, a.segments}));
  if (call.finish_reading(error) != 0)
    throw Error(ErrorCode::invalid_argument,
                "segmented scan: the offsets (checked on the device) do not rise from 0 to " + std::to_string(n));
}

void CudaBackend::merge(const Context& ctx, const MergeArgs& a) const {
  Call call(ctx);
  Resources& r = call.r();
  ArrayStage st;
  for (const Raw* x : {&a.a_keys, &a.b_keys, &a.out_keys, &a.a_values, &a.b_values, &a.out_values}) st.add(*x);
  const size_t vb = a.out_values.present() ? dtype_size(a.out_values.type) : 0;
  const bool by_cub = cub_route::serves_merge(a.a_keys.type, vb);
  const size_t scratch = by_cub ? cub_route::merge_bytes(a.a_keys.type, a.order, a.a_keys.size, a.b_keys.size)
                                : merge_scratch_bytes(a.a_keys.type, a.a_keys.size + a.b_keys.size);
  ensure_arena(ctx, r, st.bytes() + Carver::round(scratch), "merge");
  Carver carve(r.arena);
  const cudaStream_t s = call.stream();
  const void* ak = ArrayStage::place(carve, a.a_keys, true, s);
  const void* bk = ArrayStage::place(carve, a.b_keys, true, s);
  void* ok = ArrayStage::place(carve, a.out_keys, false, s);
  const void* av = ArrayStage::place(carve, a.a_values, true, s);
  const void* bv = ArrayStage::place(carve, a.b_values, true, s);
  void* ov = ArrayStage::place(carve, a.out_values, false, s);
  void* work = carve.take<unsigned char>(scratch);
  if (by_cub)
    cub_route::merge(a.a_keys.type, a.order, ak, a.a_keys.size, bk, a.b_keys.size, ok, work, scratch, s);
  else
    launch_merge(a.a_keys.type, vb, a.order, ak, av, a.a_keys.size, bk, bv, a.b_keys.size, ok, ov, work, s);
  ArrayStage::back(a.out_keys, ok, s);
  ArrayStage::back(a.out_values, ov, s);
  call.finish(any_on_host({a.a_keys, a.b_keys, a.out_keys, a.a_values, a.b_values, a.out_values}));
}

void CudaBackend::sort(const Context& ctx, const SortArgs& a) const {
  Call call(ctx);
  Resources& r = call.r();
  ArrayStage st;
  st.add(a.keys);
  st.add(a.values);
  const size_t vb = a.values.present() ? dtype_size(a.values.type) : 0;
  const bool by_cub = cub_route::serves_sort(a.keys.type, vb);
  const size_t scratch = by_cub ? cub_route::sort_bytes(a.keys.type, vb, a.order, a.keys.size)
                                : sort_scratch_bytes(a.keys.type, vb, a.keys.size);
  ensure_arena(ctx, r, st.bytes() + Carver::round(scratch), "sort");
  Carver carve(r.arena);
  const cudaStream_t s = call.stream();
  void* keys = ArrayStage::place(carve, a.keys, true, s);
  void* values = ArrayStage::place(carve, a.values, true, s);
  void* work = carve.take<unsigned char>(scratch);
  if (by_cub)
    cub_route::sort(a.keys.type, vb, a.order, keys, values, a.keys.size, work, scratch, s);
  else
    launch_sort(a.keys.type, vb, a.order, keys, values, a.keys.size, work, s);
  ArrayStage::back(a.keys, keys, s);
  ArrayStage::back(a.values, values, s);
  call.finish(any_on_host({a.keys, a.values}));
}

void CudaBackend::spmv(const Context& ctx, const SpmvArgs& a) const {
  Call call(ctx);
  Resources& r = call.r();
  ArrayStage st;
  for (const Raw* x : {&a.offsets, &a.indices, &a.values, &a.x, &a.y}) st.add(*x);
  const int64_t nnz = a.values.size;
  const size_t scratch = spmv_scratch_bytes(a.rows, nnz);
  ensure_arena(ctx, r, st.bytes() + Carver::round(scratch) + kErrorWord, "spmv_csr");
  Carver carve(r.arena);
  const cudaStream_t s = call.stream();
  const void* off = ArrayStage::place(carve, a.offsets, true, s);
  const void* idx = ArrayStage::place(carve, a.indices, true, s);
  const void* val = ArrayStage::place(carve, a.values, true, s);
  const void* x = ArrayStage::place(carve, a.x, true, s);
  void* y = ArrayStage::place(carve, a.y, false, s);
  void* work = carve.take<unsigned char>(scratch);
  int* error = carve.take<int>(1);
  check_cuda(cudaMemsetAsync(error, 0, sizeof(int), s), "cudaMemsetAsync");
  launch_spmv(a.values.type, a.offsets.type, off, idx, val, x, y, a.rows, a.cols, nnz, work, error, s);
  ArrayStage::back(a.y, y, s);
  const int bits = call.finish_reading(error);
  if (bits & 2)
    throw Error(ErrorCode::invalid_argument,
                "spmv_csr: row_offsets (checked on the device) do not rise from 0 to nnz = " + std::to_string(nnz));
  if (bits & 1)
    throw Error(
        ErrorCode::invalid_argument,
        "spmv_csr: col_indices (checked on the device) hold an index outside [0, " + std::to_string(a.cols) + ")");
}

}  // namespace simkit::detail::cuda
