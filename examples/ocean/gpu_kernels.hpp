#pragma once
// The GPU half-sweep kernels' host interface (no CUDA types, so gpu_solver.cpp and the kernels
// share it). A "block" of the lecture is here a thread block's tile of tile_rows x tile_cols
// points: in the block-major layout each tile is contiguous, [tile row][tile column][row][col].

#include "ocean.hpp"

namespace ocean::gpu {

inline constexpr int tile_cols = 64;  // 32 threads a row, each relaxing one of two columns
inline constexpr int tile_rows = 32;  // 8 rows of threads, each taking every 8th row
inline constexpr int tile_points = tile_cols * tile_rows;

struct DeviceGrid {
  Layout layout = Layout::row_major;
  int n = 0;
  int tiles_x = 0, tiles_y = 0;   // tiles across the columns and the rows
  double* u = nullptr;            // row-major: (n + 2)^2 with the ring; block-major: tiles, padded
  const double* rhs = nullptr;    // h^2 f, in the same layout as u
  const double* south = nullptr;  // block-major: the boundary (the ring is part of row-major u)
  const double* north = nullptr;
  const double* west = nullptr;
  const double* east = nullptr;
};

/// Relaxes the points of one colour (0 red, 1 black: (i + j) mod 2) on `stream` (a
/// cudaStream_t). Each tile's max |change| goes to tile_max[tile]: written by the red half,
/// folded in (max) by the black half, so after both it is the tile's max over the sweep.
void relax_half_sweep(const DeviceGrid& grid, int color, double omega, double* tile_max, void* stream);

}  // namespace ocean::gpu
