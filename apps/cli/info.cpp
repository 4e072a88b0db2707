// `simkit info`: how this binary was built and which GPUs (and OpenCL devices) it can use, so a
// bug report or a benchmark table can say exactly what ran.

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/error.hpp>

#include "commands.hpp"
#if SIMKIT_CLI_OPENCL
#include "opencl_sort.hpp"
#endif

namespace simkit::cli {

namespace {

/// The OpenCL devices the merge sort study's OpenCL port (bench/mergesort/opencl, simkit's only
/// OpenCL) can run on, numbered as SIMKIT_OPENCL_DEVICE=platform:device names them.
void print_opencl() {
#if SIMKIT_CLI_OPENCL
  std::vector<mergesort::OpenClDevice> devices;
  try {
    devices = mergesort::opencl_devices();
  } catch (const Error& e) {
    std::printf("  OpenCL:       none usable (%s)\n", e.what());
    return;
  }
  if (devices.empty()) {
    std::printf("  OpenCL:       none found (no platform installed; on a CPU: apt-get install pocl-opencl-icd)\n");
    return;
  }
  std::printf("  OpenCL:       %zu device%s\n", devices.size(), devices.size() == 1 ? "" : "s");
  for (const mergesort::OpenClDevice& d : devices)
    std::printf("    %d:%d %s: %s (%s), %d compute units, %.1f GiB, max work-group %lld, %s\n", d.platform_index,
                d.device_in_platform, d.platform.c_str(), d.name.c_str(), d.type.c_str(), d.compute_units,
                double(d.global_memory) / double(1ull << 30), static_cast<long long>(d.max_work_group_size),
                d.version.c_str());
#else
  std::printf("  OpenCL:       not built (no OpenCL headers / ICD loader at configure time; scripts/setup.sh)\n");
#endif
}

void print_gpus() {
  if (!built_with_cuda()) {
    std::printf("  GPUs:         none (CPU-only build)\n");
    return;
  }
  std::vector<GpuInfo> devices;
  try {
    devices = gpus();
  } catch (const Error& e) {
    std::printf("  GPUs:         none usable (%s)\n", e.what());
    return;
  }
  if (devices.empty()) {
    std::printf("  GPUs:         none visible (--device auto runs on the CPU)\n");
    return;
  }
  std::printf("  GPUs:         %zu visible\n", devices.size());
  for (const GpuInfo& g : devices) {
    const double gib = double(1ull << 30);
    std::printf("    gpu %d: %s, sm_%d%d, %d SMs, %.1f GiB (%.1f GiB free), FP32 peak %.1f TFLOP/s, memory %.0f GB/s\n",
                g.id, g.name.c_str(), g.sm_major, g.sm_minor, g.multiprocessors, double(g.total_memory) / gib,
                double(g.free_memory) / gib, g.fp32_tflops, g.memory_bandwidth_gbs);
  }
}

void print_info() {
  std::fputs(build_info().c_str(), stdout);
  const long hw = sysconf(_SC_NPROCESSORS_ONLN);
  std::printf("  CPU threads:  %ld online\n", hw);
  print_gpus();
  print_opencl();
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* sub = app.add_subcommand("info",
                                 "Print the build configuration (version, compiler, BLAS, OpenMP, CUDA "
                                 "architectures), the GPUs and the OpenCL devices this process can use");
  sub->footer("Example:\n  simkit info");
  sub->callback(print_info);
}

}  // namespace simkit::cli
