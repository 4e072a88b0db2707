// The host side of the OpenCL Merge Path (opencl_sort.hpp): device listing and choice, a cache
// of built programs per device, and the sort itself, shaped like gpu_sort.cu's sort_on_gpu so
// that the CUDA and OpenCL times measure the same steps.

#include "opencl_sort.hpp"

#include <CL/opencl.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <simkit/error.hpp>

#include "merge_path_cl.hpp"
#include "study_args.hpp"

namespace simkit::mergesort {
namespace {

constexpr cl_int kNoPlatform = -1001;  // CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no driver

[[noreturn]] void throw_translated(const cl::Error& e) {
  const cl_int code = e.err();
  if (code == kNoPlatform)
    throw Error(ErrorCode::unsupported,
                "mergesort study (OpenCL): no OpenCL platform is installed (on a CPU, PoCL: apt-get install "
                "pocl-opencl-icd)");
  const bool memory =
      code == CL_MEM_OBJECT_ALLOCATION_FAILURE || code == CL_OUT_OF_HOST_MEMORY || code == CL_INVALID_BUFFER_SIZE;
  throw Error(memory ? ErrorCode::out_of_memory : ErrorCode::device,
              std::string("mergesort study (OpenCL): ") + e.what() + ": " + opencl_error_name(code));
}

/// A kernel that does not compile is a bug to fix, so the message carries the compiler's log.
[[noreturn]] void throw_build_error(const cl::BuildError& e) {
  std::string log;
  for (const auto& [device, text] : e.getBuildLog()) log += "\n" + device.getInfo<CL_DEVICE_NAME>() + ":\n" + text;
  throw Error(ErrorCode::device,
              "mergesort study (OpenCL): merge_path.cl failed to build: " + opencl_error_name(e.err()) + log);
}

/// Runs `f`, turning the C++ bindings' exceptions into simkit::Error: the only place they are
/// caught, so every public function goes through it.
template <class F>
auto translated(F&& f) {
  try {
    return f();
  } catch (const cl::BuildError& e) {
    throw_build_error(e);
  } catch (const cl::Error& e) {
    throw_translated(e);
  }
}

std::string type_name(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "gpu";
  if (type & CL_DEVICE_TYPE_CPU) return "cpu";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  return "other";
}

struct Listed {
  cl::Device device;
  OpenClDevice info;
};

/// Every device of every platform, numbered as opencl_sort.hpp says; empty without a platform.
std::vector<Listed> list_devices() {
  std::vector<cl::Platform> platforms;
  try {
    cl::Platform::get(&platforms);
  } catch (const cl::Error& e) {
    if (e.err() == kNoPlatform) return {};
    throw;
  }
  std::vector<Listed> out;
  for (size_t p = 0; p < platforms.size(); ++p) {
    std::vector<cl::Device> devices;
    try {
      platforms[p].getDevices(CL_DEVICE_TYPE_ALL, &devices);
    } catch (const cl::Error& e) {
      if (e.err() == CL_DEVICE_NOT_FOUND) continue;  // a platform with no device is legal, and no error here
      throw;
    }
    for (size_t d = 0; d < devices.size(); ++d) {
      OpenClDevice info;
      info.index = int(out.size());
      info.platform_index = int(p);
      info.device_in_platform = int(d);
      info.platform = platforms[p].getInfo<CL_PLATFORM_NAME>();
      info.name = devices[d].getInfo<CL_DEVICE_NAME>();
      info.type = type_name(devices[d].getInfo<CL_DEVICE_TYPE>());
      info.version = devices[d].getInfo<CL_DEVICE_VERSION>();
      info.driver = devices[d].getInfo<CL_DRIVER_VERSION>();
      info.compute_units = int(devices[d].getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>());
      info.global_memory = devices[d].getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
      info.max_work_group_size = int64_t(devices[d].getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>());
      out.push_back({devices[d], std::move(info)});
    }
  }
  return out;
}

/// SIMKIT_OPENCL_DEVICE=platform:device, when set.
std::optional<std::pair<int, int>> device_from_env() {
  const char* env = std::getenv("SIMKIT_OPENCL_DEVICE");
  if (env == nullptr || *env == '\0') return std::nullopt;
  const std::string text(env);
  const size_t colon = text.find(':');
  int platform = -1, device = -1;
  const char* end = text.data() + text.size();
  const bool ok = colon != std::string::npos &&
                  std::from_chars(text.data(), text.data() + colon, platform).ptr == text.data() + colon &&
                  std::from_chars(text.data() + colon + 1, end, device).ptr == end && colon + 1 < text.size();
  if (!ok || platform < 0 || device < 0)
    throw Error(ErrorCode::invalid_argument,
                "mergesort study (OpenCL): SIMKIT_OPENCL_DEVICE must be platform:device "
                "(e.g. 0:0, as `simkit info` numbers them), got " +
                    simkit::quoted(text));
  return std::make_pair(platform, device);
}

Listed choose_device(int device_index) {
  std::vector<Listed> all = list_devices();
  if (all.empty())
    throw Error(ErrorCode::unsupported,
                "mergesort study (OpenCL): no OpenCL platform or device found (on a CPU, PoCL: apt-get install "
                "pocl-opencl-icd)");
  if (device_index >= 0) {
    if (device_index >= int(all.size()))
      throw Error(ErrorCode::invalid_argument, "mergesort study (OpenCL): no device " + std::to_string(device_index) +
                                                   " (" + std::to_string(all.size()) + " found)");
    return all[size_t(device_index)];
  }
  if (const auto env = device_from_env()) {
    for (const Listed& l : all)
      if (l.info.platform_index == env->first && l.info.device_in_platform == env->second) return l;
    throw Error(ErrorCode::invalid_argument,
                "mergesort study (OpenCL): SIMKIT_OPENCL_DEVICE=" + std::to_string(env->first) + ":" +
                    std::to_string(env->second) + " names no device (`simkit info` lists them)");
  }
  const auto gpu = std::find_if(all.begin(), all.end(), [](const Listed& l) { return l.info.type == "gpu"; });
  return gpu != all.end() ? *gpu : all.front();
}

/// What a device keeps between sorts: building the program costs from tens of milliseconds to
/// seconds (PoCL compiles through LLVM), which the seed's times, like CUDA's context creation,
/// leave out. `mutex` serialises sorts on the device, since kernel arguments are shared state.
struct DeviceState {
  cl::Context context;
  cl::CommandQueue queue;
  cl::Kernel insertion, level;
  size_t max_block = 0;  // the largest work-group both kernels take on this device
  std::mutex mutex;
};

DeviceState& state_for(const Listed& chosen) {
  // Never destroyed: releasing OpenCL objects from static destructors races the drivers' own
  // teardown at exit (PoCL's among them), and the process is ending anyway.
  static auto* states = new std::map<std::pair<int, int>, std::unique_ptr<DeviceState>>;
  static std::mutex states_mutex;
  const std::lock_guard lock(states_mutex);
  std::unique_ptr<DeviceState>& slot = (*states)[{chosen.info.platform_index, chosen.info.device_in_platform}];
  if (slot) return *slot;
  auto s = std::make_unique<DeviceState>();
  s->context = cl::Context(chosen.device);
  s->queue = cl::CommandQueue(s->context, chosen.device, CL_QUEUE_PROFILING_ENABLE);
  cl::Program program(s->context, std::string(detail::merge_path_cl));
  program.build(std::vector<cl::Device>{chosen.device}, "-cl-std=CL1.2");
  s->insertion = cl::Kernel(program, "insertion_kernel");
  s->level = cl::Kernel(program, "merge_path_level");
  s->max_block = std::min(s->insertion.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(chosen.device),
                          s->level.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(chosen.device));
  slot = std::move(s);
  return *slot;
}

/// Milliseconds from the start of `from` to the end of `to` on the device's profiling clock.
double span_ms(const cl::Event& from, const cl::Event& to) {
  return double(to.getProfilingInfo<CL_PROFILING_COMMAND_END>() - from.getProfilingInfo<CL_PROFILING_COMMAND_START>()) /
         1e6;
}

/// The sort proper, as sort_on_gpu runs the CUDA version: copy in, insertion, the levels
/// ping-ponging between two buffers, copy out, on one in-order queue.
StudyTiming run_sort(DeviceState& s, int32_t* host, int64_t n, int64_t size_i, size_t block) {
  const size_t bytes = size_t(n) * sizeof(int32_t);
  cl::Buffer keys(s.context, CL_MEM_READ_WRITE, bytes), spare(s.context, CL_MEM_READ_WRITE, bytes);
  // OpenCL drivers allocate a buffer at its first use; filling both now keeps that allocation
  // out of the timed copy, as the CUDA version's cudaMalloc is.
  s.queue.enqueueFillBuffer(keys, cl_int(0), 0, bytes);
  s.queue.enqueueFillBuffer(spare, cl_int(0), 0, bytes);
  s.queue.finish();

  // OpenCL 1.2 wants the global size a multiple of the work-group size: the spare work-items of
  // the last group return at once, like the CUDA threads past the last run.
  const size_t runs = size_t((n + size_i - 1) / size_i);
  const cl::NDRange global((runs + block - 1) / block * block), local(block);
  std::vector<cl::Event> events;

  const auto t0 = std::chrono::steady_clock::now();
  s.queue.enqueueWriteBuffer(keys, CL_TRUE, 0, bytes, host);
  s.insertion.setArg(0, keys);
  s.insertion.setArg(1, cl_long(n));
  s.insertion.setArg(2, cl_long(size_i));
  s.queue.enqueueNDRangeKernel(s.insertion, cl::NullRange, global, local, nullptr, &events.emplace_back());
  cl::Buffer *src = &keys, *dst = &spare;
  for (int64_t width = size_i; width < n; width *= 2) {
    s.level.setArg(0, *src);
    s.level.setArg(1, *dst);
    s.level.setArg(2, cl_long(n));
    s.level.setArg(3, cl_long(width));
    s.level.setArg(4, cl_long(size_i));
    s.queue.enqueueNDRangeKernel(s.level, cl::NullRange, global, local, nullptr, &events.emplace_back());
    std::swap(src, dst);
  }
  s.queue.enqueueReadBuffer(*src, CL_TRUE, 0, bytes, host);
  const auto t1 = std::chrono::steady_clock::now();

  StudyTiming timing;
  timing.total_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  // Spans, not sums of the kernels' own times: the CUDA version's events bracket the launches,
  // so its times include the device's idle gaps between kernels, and so must these for the two
  // APIs' launch overheads to show. merge_ms runs from the insertion's end, as CUDA's does.
  timing.insertion_ms = span_ms(events.front(), events.front());
  timing.kernel_ms = span_ms(events.front(), events.back());
  timing.merge_ms = timing.kernel_ms - timing.insertion_ms;
  return timing;
}

}  // namespace

std::vector<OpenClDevice> opencl_devices() {
  return translated([] {
    std::vector<OpenClDevice> out;
    for (Listed& l : list_devices()) out.push_back(std::move(l.info));
    return out;
  });
}

OpenClDevice opencl_device(int device_index) {
  return translated([&] { return choose_device(device_index).info; });
}

StudyTiming merge_path_sort_opencl(int32_t* host, int64_t n, int64_t size_i, int block, int device_index) {
  detail::check_sort_args(host, n, size_i);
  if (block < 1)
    throw Error(ErrorCode::invalid_argument,
                "mergesort study (OpenCL): work-group size must be >= 1, got " + std::to_string(block));
  return translated([&] {
    const Listed chosen = choose_device(device_index);
    if (n == 0) return StudyTiming{};
    DeviceState& s = state_for(chosen);
    if (size_t(block) > s.max_block)
      throw Error(ErrorCode::invalid_argument, "mergesort study (OpenCL): work-group size " + std::to_string(block) +
                                                   " exceeds the kernels' limit of " + std::to_string(s.max_block) +
                                                   " on " + chosen.info.name);
    const std::lock_guard lock(s.mutex);
    return run_sort(s, host, n, size_i, size_t(block));
  });
}

}  // namespace simkit::mergesort
