#pragma once
// The one path between host memory and the kernels: every argument reaches a kernel as device
// memory. A device-resident argument is used where it is; a host one is copied into scratch
// carved from the leased arena (inputs over before the kernels, outputs back after them), so
// the implementations only ever see device pointers (FAISS's GpuIndex stages the same way).
//
//   ArrayStage   whole arrays (the primitives): plan with add(), carve with place(), back()
//   RowStage     a matrix a block of rows at a time (k-NN, pairwise, select_k): query batches,
//                base tiles, output rows; optionally two slots streamed through pinned memory
//                while the GPU computes on the other slot
//
// Plan first (bytes()), reserve the arena once, then carve in the same order.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include <simkit/matrix.hpp>

#include "core/raw_array.hpp"
#include "cuda/check.hpp"
#include "cuda/resources.hpp"

namespace simkit::detail::cuda {

/// True when any of the arrays holds data in host memory: the call must then wait for its
/// stream before it returns (Call::finish).
inline bool any_on_host(std::initializer_list<Raw> arrays) {
  for (const Raw& a : arrays)
    if (a.present() && a.size > 0 && a.where == Memory::host) return true;
  return false;
}

/// Whole arrays of one call.
class ArrayStage {
 public:
  void add(const Raw& a) {
    if (a.present() && a.where == Memory::host && a.size > 0) bytes_ += Carver::round(a.bytes());
  }
  size_t bytes() const noexcept { return bytes_; }

  /// The device address of `a`; a host input is copied over on `s`.
  static void* place(Carver& carve, const Raw& a, bool input, cudaStream_t s) {
    if (!a.present() || a.size == 0) return nullptr;
    if (a.where == Memory::device) return a.data;
    void* d = carve.take<unsigned char>(a.bytes());
    if (input) check_cuda(cudaMemcpyAsync(d, a.data, a.bytes(), cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
    return d;
  }

  /// Copies a host output back from its device copy `d`.
  static void back(const Raw& a, const void* d, cudaStream_t s) {
    if (a.present() && a.where == Memory::host && a.size > 0)
      check_cuda(cudaMemcpyAsync(a.data, d, a.bytes(), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync");
  }

 private:
  size_t bytes_ = 0;
};

/// A row-major matrix argument, `block` rows at a time, in `slots` device buffers when it is
/// on the host.
template <class T>
class RowStage {
 public:
  using Elem = std::remove_const_t<T>;

  RowStage() = default;
  RowStage(MatrixView<T> view, int64_t block, int slots = 1) : view_(view), block_(block), slots_(slots) {}

  /// Output blocks narrower than the view (pairwise's column blocks): their width.
  void set_block_cols(int64_t cols) noexcept { block_cols_ = cols; }

  bool staged() const noexcept { return view_.where == Memory::host; }
  size_t bytes() const noexcept { return staged() ? size_t(slots_) * Carver::round(count() * sizeof(Elem)) : 0; }
  void carve(Carver& c) {
    if (staged())
      for (int s = 0; s < slots_; ++s) buf_[s] = c.take<Elem>(count());
  }
  /// The device buffer of a slot (null for a device view): scratch the caller may also use.
  Elem* buffer(int slot = 0) const noexcept { return buf_[slot]; }

  /// Device rows [r0, r0 + rows) of an input; host rows are copied into `slot` on `s` first.
  const Elem* in(int64_t r0, int64_t rows, cudaStream_t s, int slot = 0) const {
    const Elem* src = view_.data + r0 * view_.cols;
    if (!staged()) return src;
    check_cuda(cudaMemcpyAsync(buf_[slot], src, size_t(rows * view_.cols) * sizeof(Elem), cudaMemcpyHostToDevice, s),
               "cudaMemcpyAsync");
    return buf_[slot];
  }

  /// in() for a pipeline over two slots: the host rows go through `pinned` (this slot's pinned
  /// buffer, at least block rows) so that the copy runs on `copy` beside the compute on `use`.
  /// `ev.computed` must mark the last reader of this slot's device rows; `use` waits for the copy.
  const Elem* in_streamed(int64_t r0, int64_t rows, int slot, PinnedBuffer& pinned, SlotEvents& ev, cudaStream_t copy,
                          cudaStream_t use) const {
    const Elem* src = view_.data + r0 * view_.cols;
    if (!staged()) return src;
    const size_t bytes = size_t(rows * view_.cols) * sizeof(Elem);
    // The copy that last read this pinned buffer must be done before it is refilled.
    check_cuda(cudaEventSynchronize(ev.copied), "cudaEventSynchronize");
    std::memcpy(pinned.data(), src, bytes);
    check_cuda(cudaStreamWaitEvent(copy, ev.computed, 0), "cudaStreamWaitEvent");
    check_cuda(cudaMemcpyAsync(buf_[slot], pinned.data(), bytes, cudaMemcpyHostToDevice, copy), "cudaMemcpyAsync");
    check_cuda(cudaEventRecord(ev.copied, copy), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(use, ev.copied, 0), "cudaStreamWaitEvent");
    return buf_[slot];
  }

  /// Where kernels write output rows starting at r0: the view itself, or the slot's buffer.
  Elem* out(int64_t r0, int slot = 0) const noexcept {
    return staged() ? buf_[slot] : const_cast<Elem*>(view_.data) + r0 * view_.cols;
  }
  /// Copies rows [r0, r0 + rows) written at out(r0, slot) back to a host view.
  void back(int64_t r0, int64_t rows, cudaStream_t s, int slot = 0) const {
    if (!staged()) return;
    check_cuda(cudaMemcpyAsync(const_cast<Elem*>(view_.data) + r0 * view_.cols, buf_[slot],
                               size_t(rows * view_.cols) * sizeof(Elem), cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync");
  }

  /// For outputs written a block of columns at a time (pairwise): where the kernels write
  /// rows from r0, columns from c0, and their row stride.
  Elem* out_block(int64_t r0, int64_t c0, int64_t cols, int64_t& ld) const noexcept {
    ld = staged() ? cols : view_.cols;
    return staged() ? buf_[0] : const_cast<Elem*>(view_.data) + r0 * view_.cols + c0;
  }
  /// Copies a rows x cols block written at out_block back to a host view.
  void back_block(int64_t r0, int64_t rows, int64_t c0, int64_t cols, cudaStream_t s) const {
    if (!staged()) return;
    check_cuda(cudaMemcpy2DAsync(const_cast<Elem*>(view_.data) + r0 * view_.cols + c0,
                                 size_t(view_.cols) * sizeof(Elem), buf_[0], size_t(cols) * sizeof(Elem),
                                 size_t(cols) * sizeof(Elem), size_t(rows), cudaMemcpyDeviceToHost, s),
               "cudaMemcpy2DAsync");
  }

 private:
  size_t count() const noexcept { return size_t(block_) * size_t(block_cols_ > 0 ? block_cols_ : view_.cols); }

  MatrixView<T> view_;
  int64_t block_ = 0, block_cols_ = 0;
  int slots_ = 1;
  Elem* buf_[2] = {nullptr, nullptr};
};

}  // namespace simkit::detail::cuda
