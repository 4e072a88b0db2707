#include "cuda/resources.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

#include <simkit/error.hpp>

#include "cuda/check.hpp"

namespace simkit::detail::cuda {

void DeviceArena::reserve(size_t bytes, size_t limit) {
  if (data_ != nullptr && capacity_ >= bytes && capacity_ <= std::max(limit, bytes)) return;
  release();
  // Round up to 2 MiB so that small growth does not reallocate every call, but never past the
  // caller's limit.
  constexpr size_t granule = size_t(2) << 20;
  size_t want = (bytes + granule - 1) / granule * granule;
  want = std::max(bytes, std::min(want, limit));
  if (want == 0) return;
  const cudaError_t e = cudaMalloc(&data_, want);
  if (e != cudaSuccess) {
    data_ = nullptr;
    (void)cudaGetLastError();
    throw Error(ErrorCode::out_of_memory,
                "cudaMalloc of " + std::to_string(want >> 20) + " MiB of GPU working memory: " + cudaGetErrorString(e));
  }
  capacity_ = want;
}

void DeviceArena::release() noexcept {
  if (data_ != nullptr) (void)cudaFree(data_);
  data_ = nullptr;
  capacity_ = 0;
}

void PinnedBuffer::reserve(size_t bytes) {
  if (capacity_ >= bytes) return;
  if (data_ != nullptr) (void)cudaFreeHost(data_);
  data_ = nullptr;
  capacity_ = 0;
  const cudaError_t e = cudaMallocHost(&data_, bytes);
  if (e != cudaSuccess) {
    data_ = nullptr;
    (void)cudaGetLastError();
    throw Error(ErrorCode::out_of_memory, "cudaMallocHost of " + std::to_string(bytes >> 20) +
                                              " MiB of pinned staging memory: " + cudaGetErrorString(e));
  }
  capacity_ = bytes;
}

namespace {

Resources* create(int device) {
  auto* r = new Resources;
  r->device = device;
  try {
    cudaDeviceProp p{};
    check_cuda(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    r->multiprocessors = p.multiProcessorCount;
    r->sm_major = p.major;
    r->smem_optin = p.sharedMemPerBlockOptin;
    for (cudaStream_t* s : {&r->compute, &r->select, &r->copy}) check_cuda(cudaStreamCreate(s), "cudaStreamCreate");
    for (cudaEvent_t* e : {&r->fork, &r->join[0], &r->join[1], &r->released, &r->slot[0].copied, &r->slot[0].computed,
                           &r->slot[0].selected, &r->slot[1].copied, &r->slot[1].computed, &r->slot[1].selected})
      check_cuda(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate");
    check_cublas(cublasLtCreate(&r->lt), "cublasLtCreate");
    r->pinned_small.reserve(4096);
  } catch (...) {
    // Half-built resources are dropped (leaked handles are harmless next to the failure).
    delete r;
    throw;
  }
  return r;
}

struct Pool {
  std::mutex mutex;
  std::vector<Resources*> idle;
};

Pool& pool() {
  static Pool* p = new Pool;  // deliberately never destroyed, see resources.hpp
  return *p;
}

}  // namespace

Lease::Lease(int device, cudaStream_t caller) : r_(nullptr) {
  {
    std::lock_guard<std::mutex> lock(pool().mutex);
    auto& idle = pool().idle;
    for (size_t i = 0; i < idle.size(); ++i)
      if (idle[i]->device == device) {
        r_ = idle[i];
        idle.erase(idle.begin() + std::ptrdiff_t(i));
        break;
      }
  }
  if (r_ == nullptr) r_ = create(device);
  if (r_->release_pending) {
    // The last call on these Resources returned with its work in flight on its caller's
    // stream; the arena it used is ours now only after that work.
    for (cudaStream_t s : {r_->compute, r_->select, r_->copy, caller})
      if (s != nullptr) check_cuda(cudaStreamWaitEvent(s, r_->released, 0), "cudaStreamWaitEvent");
    r_->release_pending = false;
  }
}

void Lease::release_later(cudaStream_t stream) {
  check_cuda(cudaEventRecord(r_->released, stream), "cudaEventRecord");
  r_->release_pending = true;
  later_ = true;
}

Lease::~Lease() {
  // Nothing may still run on these streams when another call picks them up and reuses the
  // arena. After an error this also waits for whatever was already queued.
  if (!later_)
    for (cudaStream_t s : {r_->compute, r_->select, r_->copy}) (void)cudaStreamSynchronize(s);
  (void)cudaGetLastError();
  std::lock_guard<std::mutex> lock(pool().mutex);
  pool().idle.push_back(r_);
}

size_t working_budget(const Context& ctx, const Resources& r) {
  if (ctx.gpu_memory_budget > 0) return ctx.gpu_memory_budget;
  size_t free_bytes = 0, total = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  return size_t(0.8 * double(free_bytes + r.arena.capacity()));
}

void Carver::overflow() {
  throw Error(ErrorCode::out_of_memory, "internal: GPU scratch plan exceeded the reserved arena");
}

void stream_wait(cudaStream_t to, cudaStream_t from, cudaEvent_t event) {
  if (to == from) return;
  check_cuda(cudaEventRecord(event, from), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(to, event, 0), "cudaStreamWaitEvent");
}

}  // namespace simkit::detail::cuda
