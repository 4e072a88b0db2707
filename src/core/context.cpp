#include <simkit/context.hpp>
#include <simkit/error.hpp>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "build_config.hpp"
#include "core/backend.hpp"

namespace simkit {

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "gpu") return Device::gpu;
  if (name == "auto") return Device::automatic;
  throw Error(ErrorCode::invalid_argument, "unknown device " + simkit::quoted(name) + " (expected cpu, gpu or auto)");
}

void set_device(Context& ctx, const std::string& name) {
  ctx.gpu_ids.clear();
  if (name.rfind("gpu:", 0) != 0) {
    ctx.device = parse_device(name);
    return;
  }
  ctx.device = Device::gpu;
  const std::string list = name.substr(4);
  std::vector<int> ids;
  if (list == "all") {
    for (const GpuInfo& g : gpus()) ids.push_back(g.id);
    if (ids.empty()) throw Error(ErrorCode::device, "--device gpu:all: no CUDA device is visible to this process");
  } else {
    size_t at = 0;
    while (at <= list.size()) {
      const size_t comma = std::min(list.find(',', at), list.size());
      const std::string item = list.substr(at, comma - at);
      const bool digits = !item.empty() && item.size() <= 4 &&
                          std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits)
        throw Error(ErrorCode::invalid_argument,
                    "unknown device " + simkit::quoted(name) + " (expected gpu:N, gpu:0,1,... or gpu:all)");
      const int id = std::stoi(item);
      if (std::find(ids.begin(), ids.end(), id) != ids.end())
        throw Error(ErrorCode::invalid_argument, "device " + simkit::quoted(name) + " names GPU " + item + " twice");
      ids.push_back(id);
      at = comma + 1;
    }
  }
  ctx.gpu_id = ids.front();
  if (ids.size() > 1) ctx.gpu_ids = std::move(ids);
}

const char* to_string(Device d) noexcept {
  switch (d) {
    case Device::cpu: return "cpu";
    case Device::gpu: return "gpu";
    case Device::automatic: return "auto";
  }
  return "?";
}

bool built_with_cuda() noexcept { return SIMKIT_BUILT_WITH_CUDA != 0; }

std::vector<GpuInfo> gpus() {
  const detail::Backend* cuda = detail::cuda_backend();
  return cuda != nullptr ? cuda->gpus() : std::vector<GpuInfo>{};
}

Device resolve_device(const Context& ctx) {
  if (ctx.device == Device::cpu) return Device::cpu;
  if (!built_with_cuda()) {
    if (ctx.device == Device::gpu)
      throw Error(ErrorCode::unsupported, "this simkit was built without CUDA; use --device cpu or auto");
    return Device::cpu;
  }
  const int count = detail::cuda_backend()->device_count();
  for (int id : ctx.gpu_ids)
    if (id < 0 || id >= count)
      throw Error(ErrorCode::device,
                  "no CUDA device with id " + std::to_string(id) + " (" + std::to_string(count) + " visible)");
  const bool have = ctx.gpu_id >= 0 && ctx.gpu_id < count;
  if (have) return Device::gpu;
  if (ctx.device == Device::gpu)
    throw Error(ErrorCode::device, count == 0 ? "no CUDA device is visible to this process"
                                              : "no CUDA device with id " + std::to_string(ctx.gpu_id));
  static std::once_flag notice;
  std::call_once(notice, [] { std::fprintf(stderr, "simkit: no usable CUDA device, running on the CPU\n"); });
  return Device::cpu;
}

std::string blas_kernels() { return detail::blas_core_name(); }

std::string build_info() {
  std::ostringstream s;
  s << "simkit " << SIMKIT_VERSION << "\n"
    << "  compiler:     " << SIMKIT_CXX_COMPILER << "\n"
    << "  build type:   " << SIMKIT_BUILD_TYPE << "\n"
    << "  BLAS:         " << SIMKIT_BLAS_VENDOR << ", " << blas_kernels() << " kernels\n";
#ifdef _OPENMP
  s << "  OpenMP:       " << _OPENMP << ", " << omp_get_max_threads() << " threads\n";
#else
  s << "  OpenMP:       off\n";
#endif
  if (built_with_cuda())
    s << "  CUDA:         on, architectures " << detail::cuda_backend()->architectures() << "\n";
  else
    s << "  CUDA:         off (CPU-only build)\n";
  s << "  MPI:          " << SIMKIT_BUILT_WITH_MPI << "\n";
  return s.str();
}

}  // namespace simkit
