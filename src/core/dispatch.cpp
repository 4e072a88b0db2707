// backend_for: which backend runs a call (core/backend.hpp).
#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"

namespace simkit::detail {

const Backend& backend_for(const Context& ctx, std::initializer_list<Memory> arrays, const char* fn) {
  const Device dev = resolve_device(ctx);
  if (dev == Device::gpu) {
    const Backend* cuda = cuda_backend();
    SIMKIT_EXPECTS(cuda != nullptr, unsupported, "this simkit was built without CUDA; use --device cpu");
    return *cuda;
  }
  for (Memory where : arrays)
    SIMKIT_EXPECTS(where == Memory::host, invalid_argument, fn ? fn : "", fn ? ": " : "",
                   "the CPU backend needs host memory; pass host arrays or use the GPU");
  return cpu_backend();
}

}  // namespace simkit::detail

namespace simkit::detail {

void Backend::copy_to_device(const Context&, void*, const void*, size_t) const {
  throw Error(ErrorCode::unsupported, "the CPU backend has no device memory to copy into");
}

void Backend::copy_to_host(const Context&, void*, const void*, size_t) const {
  throw Error(ErrorCode::unsupported, "the CPU backend has no device memory to copy from");
}

}  // namespace simkit::detail
