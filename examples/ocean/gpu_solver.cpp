// The GPU solver's host side: the grid in either layout on the device, two kernel launches a
// sweep, and the convergence test. Each tile's max |change| is left in an array on the device;
// simkit's scan with the max operator (a public primitive) folds them, so the sweep's max is
// its last element, and only those 8 bytes cross to the host each sweep.

#include <cuda_runtime.h>

#include <chrono>
#include <memory>
#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/primitives.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_kernels.hpp"
#include "ocean.hpp"

namespace ocean {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) { check(cudaMalloc(&data_, count * sizeof(T)), "cudaMalloc"); }
  DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    check(cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return data_; }

 private:
  T* data_ = nullptr;
};

class Stream {
 public:
  Stream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Where interior point (i, j) lives in each layout (the device kernels index the same way).
size_t host_index(const gpu::DeviceGrid& g, int i, int j) {
  if (g.layout == Layout::row_major) return static_cast<size_t>(i + 1) * (g.n + 2) + (j + 1);
  const size_t tile = static_cast<size_t>(i / gpu::tile_rows) * g.tiles_x + j / gpu::tile_cols;
  return tile * gpu::tile_points + (i % gpu::tile_rows) * gpu::tile_cols + j % gpu::tile_cols;
}

size_t storage_size(const gpu::DeviceGrid& g) {
  if (g.layout == Layout::row_major) return static_cast<size_t>(g.n + 2) * (g.n + 2);
  return static_cast<size_t>(g.tiles_x) * g.tiles_y * gpu::tile_points;
}

// The initial guess (0 inside, g on the row-major ring) and h^2 f, laid out for the device.
void lay_out(const Problem& p, const gpu::DeviceGrid& g, std::vector<double>& u, std::vector<double>& rhs) {
  u.assign(storage_size(g), 0.0), rhs.assign(storage_size(g), 0.0);
  if (g.layout == Layout::row_major)
    for (int i = -1; i <= p.n; ++i)
      for (int j = -1; j <= p.n; ++j)
        if (i < 0 || j < 0 || i == p.n || j == p.n)
          u[static_cast<size_t>(i + 1) * (p.n + 2) + j + 1] = p.boundary_at(i, j);
  for (int i = 0; i < p.n; ++i)
    for (int j = 0; j < p.n; ++j) rhs[host_index(g, i, j)] = p.scaled_source[static_cast<size_t>(i) * p.n + j];
}

std::vector<double> field_from(const Problem& p, const gpu::DeviceGrid& g, const std::vector<double>& u) {
  const int stride = p.n + 2;
  std::vector<double> out(static_cast<size_t>(stride) * stride);
  for (int i = -1; i <= p.n; ++i)
    for (int j = -1; j <= p.n; ++j) {
      const bool interior = i >= 0 && j >= 0 && i < p.n && j < p.n;
      out[static_cast<size_t>(i + 1) * stride + j + 1] = interior ? u[host_index(g, i, j)] : p.boundary_at(i, j);
    }
  return out;
}

}  // namespace

bool gpu_solver_compiled() { return true; }

std::string gpu_tile_description() {
  return std::to_string(gpu::tile_cols) + " x " + std::to_string(gpu::tile_rows) + " points a thread block";
}

SolveResult solve_gpu(const Problem& problem, const SolveSettings& settings) {
  const int n = problem.n;
  gpu::DeviceGrid grid{settings.layout, n, (n + gpu::tile_cols - 1) / gpu::tile_cols,
                       (n + gpu::tile_rows - 1) / gpu::tile_rows};
  std::vector<double> host_u, host_rhs;
  lay_out(problem, grid, host_u, host_rhs);
  DeviceBuffer<double> u(host_u), rhs(host_rhs);
  DeviceBuffer<double> south(problem.south), north(problem.north), west(problem.west), east(problem.east);
  grid.u = u.get(), grid.rhs = rhs.get();
  grid.south = south.get(), grid.north = north.get(), grid.west = west.get(), grid.east = east.get();
  const int64_t tiles = static_cast<int64_t>(grid.tiles_x) * grid.tiles_y;
  DeviceBuffer<double> tile_max(tiles);
  double* sweep_max = nullptr;  // pinned, so the 8-byte copy back is a plain DMA
  check(cudaMallocHost(&sweep_max, sizeof(double)), "cudaMallocHost");
  std::unique_ptr<double, decltype(&cudaFreeHost)> free_sweep_max(sweep_max, &cudaFreeHost);

  Stream stream;
  simkit::Context ctx;
  ctx.device = simkit::Device::gpu;
  ctx.stream = stream.get();  // the scan is queued behind the kernels, on the same stream
  const simkit::ArrayView<double> maxima(tile_max.get(), tiles, simkit::Memory::device);

  SolveResult result;
  check(cudaDeviceSynchronize(), "setting up");
  const auto start = std::chrono::steady_clock::now();
  while (result.sweeps < settings.max_sweeps && !result.converged) {
    gpu::relax_half_sweep(grid, 0, settings.omega, tile_max.get(), stream.get());
    gpu::relax_half_sweep(grid, 1, settings.omega, tile_max.get(), stream.get());
    simkit::inclusive_scan(ctx, simkit::ArrayView<const double>(maxima), maxima, simkit::ScanOp::max);
    check(cudaMemcpyAsync(sweep_max, tile_max.get() + tiles - 1, sizeof(double), cudaMemcpyDeviceToHost, stream.get()),
          "cudaMemcpyAsync");
    check(cudaStreamSynchronize(stream.get()), "sweep");
    result.max_change = *sweep_max;
    ++result.sweeps;
    result.converged = settings.tol > 0 && result.max_change <= settings.tol;
    if (settings.record_sweep_times)
      result.sweep_end_seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (settings.want_field) {
    check(cudaMemcpy(host_u.data(), u.get(), host_u.size() * sizeof(double), cudaMemcpyDeviceToHost), "cudaMemcpy");
    result.field = field_from(problem, grid, host_u);
  }
  return result;
}

}  // namespace ocean
