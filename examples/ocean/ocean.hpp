#pragma once
// The ocean example's model problem and solvers (README.md): -laplacian(u) = f on the unit
// square, n x n interior points, u = g on the boundary, the 5-point stencil, float64, solved by
// red-black Gauss-Seidel with over-relaxation, in two memory layouts, on the CPU (OpenMP) or the
// GPU (CUDA, when simkit was built with it).

#include <cstdint>
#include <string>
#include <vector>

namespace ocean {

/// Row-major: one (n + 2) x (n + 2) array, boundary ring included, u[(i + 1) * (n + 2) + j + 1].
/// Block-major: the interior cut into blocks (one per CPU thread, one per GPU thread block),
/// each block's points contiguous, [block row][block column][row in block][column in block]
/// (the lecture's 4-D array); the boundary values are kept in four separate arrays.
enum class Layout { row_major, block_major };
const char* to_string(Layout layout);

/// The discrete problem. Interior point (i, j), i, j in [0, n), sits at x = (j + 1) h,
/// y = (i + 1) h with h = 1 / (n + 1): rows run along y, columns along x. Row -1 is the south
/// side (y = 0), row n the north side (y = 1), column -1 the west side, column n the east side.
struct Problem {
  int n = 0;
  double h = 0;
  std::vector<double> scaled_source;  // h^2 f(x_j, y_i), n x n, row-major
  std::vector<double> south, north;   // g along y = 0 and y = 1, indexed by column j
  std::vector<double> west, east;     // g along x = 0 and x = 1, indexed by row i
  /// The boundary value at a ring point (i or j equal to -1 or n).
  double boundary_at(int i, int j) const;
};

/// The example's forcing (two wind-driven gyres of opposite sign) and boundary values
/// (g = x^2 - y^2 + x y / 2, not zero and not symmetric), sampled for an n x n interior.
Problem make_problem(int n);

/// The exact solution of the same discrete system (not the continuous one), n x n row-major,
/// by the 2-D discrete sine transform, which diagonalises the 5-point Laplacian with Dirichlet
/// boundaries. Four dense n x n matrix products: O(n^3), meant for n <= reference_max_n.
std::vector<double> reference_solution(const Problem& problem);
inline constexpr int reference_max_n = 512;

/// The over-relaxation factor that minimises red-black SOR's spectral radius on this grid.
double optimal_omega(int n);

/// How the CPU interior is split among threads: rows x cols blocks, one per thread.
struct Tiling {
  int rows = 1, cols = 1;
  int threads() const { return rows * cols; }
};
/// rows x cols = threads, as square as possible, rows <= cols (so that 2 threads split the
/// columns: the split under which the two layouts differ).
Tiling default_tiling(int threads);

struct SolveSettings {
  Layout layout = Layout::block_major;
  Tiling tiling;  // CPU only
  double omega = 1;
  double tol = 1e-10;  // stop when a sweep's max |change| <= tol; 0: run max_sweeps
  int64_t max_sweeps = 100000;
  bool want_field = true;           // copy the solution out (the benchmark does not)
  bool record_sweep_times = false;  // the benchmark's per-sweep clock
};

struct SolveResult {
  int64_t sweeps = 0;
  double max_change = 0;  // of the last sweep
  bool converged = false;
  double seconds = 0;  // the sweeps alone, not allocation or start-up
  /// (n + 2) x (n + 2) row-major, boundary ring included (empty unless want_field).
  std::vector<double> field;
  /// Seconds from the start to the end of each sweep (when record_sweep_times).
  std::vector<double> sweep_end_seconds;
};

/// OpenMP, settings.tiling.threads() threads, one block each.
SolveResult solve_cpu(const Problem& problem, const SolveSettings& settings);

/// CUDA. Throws std::runtime_error when this build has no CUDA or no GPU answers.
SolveResult solve_gpu(const Problem& problem, const SolveSettings& settings);
/// Whether this executable was compiled with the CUDA solver.
bool gpu_solver_compiled();
/// What the GPU solver's tile is (for messages): "64 x 32".
std::string gpu_tile_description();

}  // namespace ocean
