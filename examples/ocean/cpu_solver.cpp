// The CPU solver: OpenMP, one thread per block of the interior, red-black SOR sweeps, and a
// reduction of every block's max |change| after each sweep to decide convergence (the lecture's
// shared `diff`). The two layouts differ only in where a row of a block lives; the relaxation
// of a row is the same code for both, so the measured difference is the layout's.

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>

#include "ocean.hpp"

namespace ocean {
namespace {

// Blocks start on a page boundary and fill whole pages, so no page (and no cache line) holds
// two threads' points in the block-major layout: the property the lecture's 4-D array is for.
constexpr size_t page_doubles = 4096 / sizeof(double);

struct FreeAligned {
  void operator()(double* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<double[], FreeAligned>;

// Not zeroed here: each thread writes its own block first, so on a NUMA machine its pages are
// placed near it (first touch).
Buffer allocate(size_t count) {
  const size_t bytes = (count + page_doubles - 1) / page_doubles * page_doubles * sizeof(double);
  void* p = std::aligned_alloc(4096, bytes);
  if (!p) throw std::bad_alloc();
  return Buffer(static_cast<double*>(p));
}

// Where part `part` of `parts` equal parts of [0, n) starts.
int split_point(int part, int parts, int n) { return static_cast<int>(static_cast<int64_t>(part) * n / parts); }

// One row of one block as the relaxation sees it: the block's points of that row, contiguous,
// the same columns one row south (i - 1) and north (i + 1), and the two points just outside
// (pointers: read only when the edge point next to them is relaxed, since otherwise they are
// of the colour another thread is writing).
struct RowSegment {
  double* u;
  const double* rhs;  // h^2 f
  const double* south;
  const double* north;
  const double* west;
  const double* east;
  int width;
};

enum Color { red = 0, black = 1 };  // the colour of point (i, j) is (i + j) mod 2

// Relaxes the points of one colour in a row from `first` on (every other point) and returns
// the largest |change|. Points of one colour only read the other colour, so the order within
// a half-sweep does not matter and the blocks can be relaxed at the same time.
double relax_row(const RowSegment& s, int first, double omega) {
  double max_change = 0;
  auto relax = [&](int jj, double west, double east) {
    const double gauss_seidel = 0.25 * (s.south[jj] + s.north[jj] + west + east + s.rhs[jj]);
    const double change = omega * (gauss_seidel - s.u[jj]);
    s.u[jj] += change;
    max_change = std::max(max_change, std::abs(change));
  };
  int jj = first;
  if (jj == 0) {
    relax(0, *s.west, s.width > 1 ? s.u[1] : *s.east);
    jj = 2;
  }
  for (; jj + 1 < s.width; jj += 2) relax(jj, s.u[jj - 1], s.u[jj + 1]);
  if (jj == s.width - 1) relax(jj, s.u[jj - 1], *s.east);
  return max_change;
}

class CpuGrid {
 public:
  CpuGrid(const Problem& problem, Layout layout, Tiling tiling)
      : problem_(problem),
        layout_(layout),
        tiling_(tiling),
        n_(problem.n),
        row_block_(problem.n),
        south_(problem.south),
        north_(problem.north) {
    for (int bi = 0; bi < tiling.rows; ++bi)
      for (int i = row_begin(bi); i < row_begin(bi + 1); ++i) row_block_[i] = bi;
    if (layout == Layout::row_major) {
      const size_t count = static_cast<size_t>(n_ + 2) * (n_ + 2);
      u_ = allocate(count), rhs_ = allocate(count);
      return;
    }
    block_offset_.push_back(0);
    for (int bi = 0; bi < tiling.rows; ++bi)
      for (int bj = 0; bj < tiling.cols; ++bj) {
        const size_t points = static_cast<size_t>(rows_in(bi)) * cols_in(bj);
        block_offset_.push_back(block_offset_.back() + (points + page_doubles - 1) / page_doubles * page_doubles);
      }
    u_ = allocate(block_offset_.back()), rhs_ = allocate(block_offset_.back());
  }

  int row_begin(int bi) const { return split_point(bi, tiling_.rows, n_); }
  int col_begin(int bj) const { return split_point(bj, tiling_.cols, n_); }
  int rows_in(int bi) const { return row_begin(bi + 1) - row_begin(bi); }
  int cols_in(int bj) const { return col_begin(bj + 1) - col_begin(bj); }

  // Row i (-1 and n: the boundary) at block column bj's first column.
  double* row_start(double* base, int i, int bj) {
    if (layout_ == Layout::row_major) return base + static_cast<size_t>(i + 1) * (n_ + 2) + col_begin(bj) + 1;
    if (i < 0) return south_.data() + col_begin(bj);
    if (i >= n_) return north_.data() + col_begin(bj);
    const int bi = row_block_[i];
    return base + block_offset_[bi * tiling_.cols + bj] + static_cast<size_t>(i - row_begin(bi)) * cols_in(bj);
  }

  RowSegment segment(int i, int bj) {
    RowSegment s{.u = row_start(u_.get(), i, bj),
                 .rhs = row_start(rhs_.get(), i, bj),
                 .south = row_start(u_.get(), i - 1, bj),
                 .north = row_start(u_.get(), i + 1, bj),
                 .west = nullptr,
                 .east = nullptr,
                 .width = cols_in(bj)};
    if (layout_ == Layout::row_major) {
      s.west = s.u - 1, s.east = s.u + s.width;
    } else {
      s.west = bj == 0 ? &problem_.west[i] : row_start(u_.get(), i, bj - 1) + cols_in(bj - 1) - 1;
      s.east = bj == tiling_.cols - 1 ? &problem_.east[i] : row_start(u_.get(), i, bj + 1);
    }
    return s;
  }

  double relax_block(int bi, int bj, Color color, double omega) {
    double max_change = 0;
    for (int i = row_begin(bi); i < row_begin(bi + 1); ++i)
      max_change = std::max(max_change, relax_row(segment(i, bj), (color + i + col_begin(bj)) & 1, omega));
    return max_change;
  }

  // The initial guess (0), the source and, in the row-major layout, the boundary ring next to
  // this block: written by the block's own thread.
  void fill_block(int bi, int bj) {
    const bool ring = layout_ == Layout::row_major;
    const int i0 = row_begin(bi) - (ring && bi == 0), i1 = row_begin(bi + 1) + (ring && bi == tiling_.rows - 1);
    const int j0 = col_begin(bj) - (ring && bj == 0), j1 = col_begin(bj + 1) + (ring && bj == tiling_.cols - 1);
    for (int i = i0; i < i1; ++i) {
      double* u = row_start(u_.get(), i, bj);  // at column col_begin(bj); the ring column is u[-1]
      double* rhs = row_start(rhs_.get(), i, bj);
      for (int j = j0; j < j1; ++j) {
        const bool interior = i >= 0 && i < n_ && j >= 0 && j < n_;
        u[j - col_begin(bj)] = interior ? 0.0 : problem_.boundary_at(i, j);
        rhs[j - col_begin(bj)] = interior ? problem_.scaled_source[static_cast<size_t>(i) * n_ + j] : 0.0;
      }
    }
  }

  std::vector<double> field() {
    const int stride = n_ + 2;
    std::vector<double> out(static_cast<size_t>(stride) * stride);
    for (int i = -1; i <= n_; ++i)
      for (int j = -1; j <= n_; ++j) out[static_cast<size_t>(i + 1) * stride + j + 1] = problem_.boundary_at(i, j);
    for (int i = 0; i < n_; ++i)
      for (int bj = 0; bj < tiling_.cols; ++bj) {
        const double* row = row_start(u_.get(), i, bj);
        std::copy(row, row + cols_in(bj), &out[static_cast<size_t>(i + 1) * stride + col_begin(bj) + 1]);
      }
    return out;
  }

 private:
  const Problem& problem_;
  Layout layout_;
  Tiling tiling_;
  int n_;
  std::vector<int> row_block_;         // the block row of each interior row
  std::vector<size_t> block_offset_;   // block-major: where block (bi, bj) starts, bi * cols + bj
  std::vector<double> south_, north_;  // block-major: the boundary rows, read as rows -1 and n
  Buffer u_, rhs_;
};

struct alignas(64) PartialMax {  // a cache line each, so threads do not share one
  double value = 0;
};

// One thread's whole solve. Two barriers a sweep: after the red half-sweep (black points read
// red ones) and after every block has posted its max |change|. One slot per thread suffices:
// every thread reads the slots before the next sweep's first barrier, and writes its slot
// again only after it.
void solve_block(CpuGrid& grid, const SolveSettings& settings, int thread, std::vector<PartialMax>& partial,
                 SolveResult& result) {
  const int bi = thread / settings.tiling.cols, bj = thread % settings.tiling.cols;
  const auto start = std::chrono::steady_clock::now();
  int64_t sweep = 0;
  double max_change = 0;
  bool converged = false;
  while (sweep < settings.max_sweeps && !converged) {
    double local = grid.relax_block(bi, bj, red, settings.omega);
#pragma omp barrier
    local = std::max(local, grid.relax_block(bi, bj, black, settings.omega));
    partial[thread].value = local;
#pragma omp barrier
    max_change = 0;
    for (const PartialMax& p : partial) max_change = std::max(max_change, p.value);
    ++sweep;
    converged = settings.tol > 0 && max_change <= settings.tol;
    if (thread == 0 && settings.record_sweep_times)
      result.sweep_end_seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (thread == 0) {
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.sweeps = sweep, result.max_change = max_change, result.converged = converged;
  }
}

}  // namespace

SolveResult solve_cpu(const Problem& problem, const SolveSettings& settings) {
  const int threads = settings.tiling.threads();
  CpuGrid grid(problem, settings.layout, settings.tiling);
  std::vector<PartialMax> partial(threads);
  SolveResult result;
  if (settings.record_sweep_times) result.sweep_end_seconds.reserve(settings.max_sweeps);
  int team = 0;
  omp_set_dynamic(0);
#pragma omp parallel num_threads(threads)
  {
    const int thread = omp_get_thread_num();
    if (thread == 0) team = omp_get_num_threads();
#pragma omp barrier
    if (team == threads) {  // else the blocks would not all be relaxed: reported below
      grid.fill_block(thread / settings.tiling.cols, thread % settings.tiling.cols);
#pragma omp barrier
      solve_block(grid, settings, thread, partial, result);
    }
  }
  if (team != threads)
    throw std::runtime_error("OpenMP gave " + std::to_string(team) + " threads, not the " + std::to_string(threads) +
                             " asked for (OMP_THREAD_LIMIT?)");
  if (settings.want_field) result.field = grid.field();
  return result;
}

}  // namespace ocean
