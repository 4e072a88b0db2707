#include "cuda/call.hpp"

#include <cstring>

namespace simkit::detail::cuda {

Call::Call(const Context& ctx)
    : guard_(ctx.gpu_id),
      lease_(ctx.gpu_id, static_cast<cudaStream_t>(ctx.stream)),
      main_(ctx.stream != nullptr ? static_cast<cudaStream_t>(ctx.stream) : lease_->compute),
      callers_(ctx.stream != nullptr) {}

Call::~Call() {
  if (!finished_ && callers_) (void)cudaStreamSynchronize(main_);
}

cudaStream_t Call::fork(cudaStream_t side, int which) {
  if (!forked_[which]) {
    stream_wait(side, main_, lease_->fork);
    forked_[which] = true;
  }
  return side;
}

cudaStream_t Call::select_stream(bool separate) { return separate ? fork(lease_->select, 0) : main_; }

cudaStream_t Call::copy_stream() { return fork(lease_->copy, 1); }

void Call::finish(bool host_reads) {
  const cudaStream_t sides[2] = {lease_->select, lease_->copy};
  for (int i = 0; i < 2; ++i)
    if (forked_[i]) stream_wait(main_, sides[i], lease_->join[i]);
  if (callers_ && !host_reads)
    lease_.release_later(main_);
  else
    check_cuda(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
  finished_ = true;
}

int Call::finish_reading(const int* word) {
  void* host = lease_->pinned_small.data();
  check_cuda(cudaMemcpyAsync(host, word, sizeof(int), cudaMemcpyDeviceToHost, main_), "cudaMemcpyAsync");
  finish(true);
  int value = 0;
  std::memcpy(&value, host, sizeof value);
  return value;
}

}  // namespace simkit::detail::cuda
