#include "index/resident_rows.hpp"

#include <algorithm>
#include <limits>

#include "core/backend.hpp"

namespace simkit::detail {

namespace {
constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
}

void ResidentRows::mark_row(int64_t r) {
  std::lock_guard g(mutex_);
  if (rows_ && r < changed_from_) changed_.push_back(r);
}

void ResidentRows::mark_from(int64_t r) {
  std::lock_guard g(mutex_);
  if (rows_) changed_from_ = std::min(changed_from_, r);
}

void ResidentRows::drop() {
  std::lock_guard g(mutex_);
  drop_locked();
}

void ResidentRows::drop_locked() const {
  rows_.reset();
  changed_.clear();
  changed_from_ = kNone;
}

bool ResidentRows::fits(int gpu, size_t bytes, size_t held) {
  for (const GpuInfo& g : gpus())
    if (g.id == gpu) return double(bytes) <= kResidentShare * double(g.free_memory + held);
  return true;  // not a GPU gpus() lists: the allocation reports what is wrong
}

void ResidentRows::upload(const Context& ctx, MatrixView<const float> host, int64_t first, int64_t count) const {
  if (count <= 0) return;
  const size_t row_bytes = static_cast<size_t>(host.cols) * sizeof(float);
  backend_for(ctx, {Memory::device})
      .copy_to_device(ctx, rows_->view().row(first), host.row(first), static_cast<size_t>(count) * row_bytes);
}

std::shared_ptr<const DeviceMatrix<float>> ResidentRows::sync(const Context& ctx, MatrixView<const float> host) const {
  std::lock_guard g(mutex_);
  const int64_t n = host.rows;
  const bool fresh = !rows_ || gpu_ != ctx.gpu_id || rows_->rows() < n || rows_->cols() != host.cols;
  // Scattered rows cost a copy call each; past n / 64 of them one bulk copy is cheaper.
  const bool bulk = static_cast<int64_t>(changed_.size()) > n / 64 + 16;
  if (fresh) {
    const int64_t capacity = rows_ && gpu_ == ctx.gpu_id ? std::max(n, rows_->rows() + rows_->rows() / 2) : n;
    const size_t held = rows_ && gpu_ == ctx.gpu_id ? size_t(rows_->rows() * rows_->cols()) * sizeof(float) : 0;
    if (!fits(ctx.gpu_id, size_t(capacity) * size_t(host.cols) * sizeof(float), held)) {
      drop_locked();
      return nullptr;
    }
    rows_.reset();  // free the old copy before the new one is allocated
    rows_ = std::make_shared<DeviceMatrix<float>>(ctx, std::max<int64_t>(capacity, 1), host.cols);
    gpu_ = ctx.gpu_id;
    upload(ctx, host, 0, n);
  } else if (bulk) {
    upload(ctx, host, 0, n);
  } else {
    std::sort(changed_.begin(), changed_.end());
    changed_.erase(std::unique(changed_.begin(), changed_.end()), changed_.end());
    for (size_t i = 0; i < changed_.size();) {  // runs of consecutive rows, one copy each
      size_t j = i + 1;
      while (j < changed_.size() && changed_[j] == changed_[j - 1] + 1) ++j;
      const int64_t first = changed_[i], last = std::min(changed_[j - 1] + 1, std::min(changed_from_, n));
      upload(ctx, host, first, last - first);
      i = j;
    }
    if (changed_from_ < n) upload(ctx, host, changed_from_, n - changed_from_);
  }
  changed_.clear();
  changed_from_ = kNone;
  return rows_;
}

}  // namespace simkit::detail
