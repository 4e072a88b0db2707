// `simkit info`: how this binary was built and which GPUs it can use, so a bug report or a
// benchmark table can say exactly what ran.

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/error.hpp>

#include "commands.hpp"

namespace simkit::cli {

namespace {

void print_info() {
  std::fputs(build_info().c_str(), stdout);
  const long hw = sysconf(_SC_NPROCESSORS_ONLN);
  std::printf("  CPU threads:  %ld online\n", hw);

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

}  // namespace

void add_info_command(CLI::App& app) {
  auto* sub = app.add_subcommand("info",
                                 "Print the build configuration (version, compiler, BLAS, OpenMP, CUDA "
                                 "architectures) and the GPUs this process can use");
  sub->footer("Example:\n  simkit info");
  sub->callback(print_info);
}

}  // namespace simkit::cli
