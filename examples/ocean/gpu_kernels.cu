// The red and black half-sweep kernels, one template over the two layouts. A thread block owns
// one tile; a warp takes one row of it, 64 points wide, and each thread relaxes the one of its
// two adjacent points that has the colour being relaxed.

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "gpu_kernels.hpp"

namespace ocean::gpu {
namespace {

constexpr int threads_x = 32, threads_y = 8;

struct RowMajorAccess {
  DeviceGrid g;
  __device__ size_t index(int i, int j) const { return static_cast<size_t>(i + 1) * (g.n + 2) + (j + 1); }
  // The ring is part of the array, so a neighbour needs no test.
  __device__ double neighbour(int i, int j) const { return g.u[index(i, j)]; }
};

struct BlockMajorAccess {
  DeviceGrid g;
  __device__ size_t index(int i, int j) const {
    const unsigned row = i, col = j;  // never negative here: unsigned division is a shift
    const size_t tile = static_cast<size_t>(row / tile_rows) * g.tiles_x + col / tile_cols;
    return tile * tile_points + (row % tile_rows) * tile_cols + col % tile_cols;
  }
  // The boundary lives outside the tiles, and a tile's padding beyond n is never read.
  __device__ double neighbour(int i, int j) const {
    if (i < 0) return g.south[j];
    if (i >= g.n) return g.north[j];
    if (j < 0) return g.west[i];
    if (j >= g.n) return g.east[i];
    return g.u[index(i, j)];
  }
};

// The largest of every thread's value, in thread 0. Each row of threads is one warp.
__device__ double block_max(double value) {
  __shared__ double warp_max[threads_y];
  for (int offset = 16; offset > 0; offset /= 2) value = fmax(value, __shfl_xor_sync(0xffffffffu, value, offset));
  if (threadIdx.x == 0) warp_max[threadIdx.y] = value;
  __syncthreads();
  if (threadIdx.y == 0) {
    value = threadIdx.x < threads_y ? warp_max[threadIdx.x] : 0.0;
    for (int offset = 16; offset > 0; offset /= 2) value = fmax(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

template <class Access>
__global__ void relax_kernel(Access grid, int color, double omega, double* tile_max) {
  const int col0 = blockIdx.x * tile_cols, row0 = blockIdx.y * tile_rows;
  const int n = grid.g.n;
  double max_change = 0;
  for (int r = threadIdx.y; r < tile_rows; r += threads_y) {
    const int i = row0 + r;
    const int j = col0 + 2 * threadIdx.x + ((color + i) & 1);  // col0 is even
    if (i >= n || j >= n) continue;
    const double sum = grid.neighbour(i - 1, j) + grid.neighbour(i + 1, j) + grid.neighbour(i, j - 1) +
                       grid.neighbour(i, j + 1) + grid.g.rhs[grid.index(i, j)];
    double& u = grid.g.u[grid.index(i, j)];
    const double change = omega * (0.25 * sum - u);
    u += change;
    max_change = fmax(max_change, fabs(change));
  }
  max_change = block_max(max_change);
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    const size_t tile = static_cast<size_t>(blockIdx.y) * gridDim.x + blockIdx.x;
    tile_max[tile] = color == 0 ? max_change : fmax(tile_max[tile], max_change);
  }
}

}  // namespace

void relax_half_sweep(const DeviceGrid& grid, int color, double omega, double* tile_max, void* stream) {
  const dim3 threads(threads_x, threads_y), tiles(grid.tiles_x, grid.tiles_y);
  const auto s = static_cast<cudaStream_t>(stream);
  if (grid.layout == Layout::row_major)
    relax_kernel<<<tiles, threads, 0, s>>>(RowMajorAccess{grid}, color, omega, tile_max);
  else
    relax_kernel<<<tiles, threads, 0, s>>>(BlockMajorAccess{grid}, color, omega, tile_max);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw std::runtime_error(std::string("relax kernel launch: ") + cudaGetErrorString(status));
}

}  // namespace ocean::gpu
