// Parsing and checking the `ocean` command line; the help text.

#include "options.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace ocean {
namespace {

constexpr int max_n = 16384;  // two float64 arrays of 16386^2: 4.3 GB

template <class Int>
Int parse_int(std::string_view option, std::string_view text, Int low, Int high) {
  Int value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < low || value > high)
    throw UsageError(std::string(option) + " wants an integer from " + std::to_string(low) + " to " +
                     std::to_string(high) + ", not '" + std::string(text) + "'");
  return value;
}

double parse_double(std::string_view option, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value))
    throw UsageError(std::string(option) + " wants a finite number, not '" + text + "'");
  return value;
}

// "RxC", e.g. 2x2.
Tiling parse_tiling(const std::string& text) {
  const size_t x = text.find('x');
  if (x == std::string::npos) throw UsageError("--tiles wants ROWSxCOLS (e.g. 1x2), not '" + text + "'");
  return Tiling{parse_int<int>("--tiles rows", std::string_view(text).substr(0, x), 1, 1024),
                parse_int<int>("--tiles columns", std::string_view(text).substr(x + 1), 1, 1024)};
}

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The checks that involve more than one option.
void check_combination(const Options& o) {
  if (o.tiling && o.threads && o.tiling->threads() != o.threads)
    throw UsageError("--tiles " + std::to_string(o.tiling->rows) + "x" + std::to_string(o.tiling->cols) + " makes " +
                     std::to_string(o.tiling->threads()) + " blocks but --threads is " + std::to_string(o.threads) +
                     " (one block per thread)");
  if (o.tiling && (o.tiling->rows > o.n || o.tiling->cols > o.n))
    throw UsageError("--tiles cuts the grid into more blocks than --n " + std::to_string(o.n) + " has rows or columns");
  if (o.check && o.n > reference_max_n)
    throw UsageError("--check needs --n <= " + std::to_string(reference_max_n) +
                     " (its reference is an O(n^3) direct solve)");
  if (o.bench && (o.check || !o.field_path.empty() || !o.plot_path.empty()))
    throw UsageError("--bench only times sweeps: run --check, --field or --plot without it");
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  for (int a = 1; a < argc; ++a) {
    const std::string option = argv[a];
    auto value = [&]() -> std::string {
      if (a + 1 >= argc) throw UsageError(option + " needs a value (ocean --help)");
      return argv[++a];
    };
    if (option == "--help" || option == "-h") {
      o.help = true;
    } else if (option == "--n") {
      o.n = parse_int<int>(option, value(), 4, max_n), o.n_given = true;
    } else if (option == "--layout") {
      const std::string v = value();
      if (v != "row" && v != "block") throw UsageError("--layout is row or block, not '" + v + "'");
      o.layout = v == "row" ? Layout::row_major : Layout::block_major;
    } else if (option == "--device") {
      const std::string v = value();
      if (v != "cpu" && v != "gpu") throw UsageError("--device is cpu or gpu, not '" + v + "'");
      o.gpu = v == "gpu";
    } else if (option == "--threads") {
      o.threads = parse_int<int>(option, value(), 1, 1024);
    } else if (option == "--tiles") {
      o.tiling = parse_tiling(value());
    } else if (option == "--omega") {
      o.omega = parse_double(option, value());
      if (*o.omega <= 0 || *o.omega >= 2) throw UsageError("--omega must lie in (0, 2), where SOR converges");
    } else if (option == "--tol") {
      o.tol = parse_double(option, value());
      if (o.tol < 0) throw UsageError("--tol must be >= 0 (0: run exactly --max-sweeps sweeps)");
    } else if (option == "--max-sweeps") {
      o.max_sweeps = parse_int<int64_t>(option, value(), 1, int64_t{1} << 40);
    } else if (option == "--check") {
      o.check = true;
    } else if (option == "--bench") {
      o.bench = true;
    } else if (option == "--field") {
      o.field_path = value();
      if (!ends_with(o.field_path, ".npy")) throw UsageError("--field writes NumPy .npy: give a path ending in .npy");
    } else if (option == "--plot") {
      o.plot_path = value();
      if (!ends_with(o.plot_path, ".png")) throw UsageError("--plot draws a PNG: give a path ending in .png");
    } else {
      throw UsageError("unknown option '" + option + "' (ocean --help lists them)");
    }
  }
  check_combination(o);
  return o;
}

const char* help_text() {
  return R"(ocean: the grid solver of the ocean case study (simkit worked example, examples/ocean/README.md)

Solves -laplacian(u) = f on the unit square, n x n interior points, u = g on the boundary, with
the 5-point stencil in float64:  4 u[i][j] - (u[i-1][j] + u[i+1][j] + u[i][j-1] + u[i][j+1]) = h^2 f[i][j],
h = 1/(n+1). f is two wind-driven gyres of opposite sign, g = x^2 - y^2 + xy/2.

Method: red-black Gauss-Seidel with over-relaxation (SOR). Points with i+j even are red, odd
black; a red point's neighbours are all black, so every red point can be updated at once (one
half-sweep), then every black one. Each sweep ends with a reduction: the max |change| over all
points, which stops the solve when it falls to --tol (on the GPU: simkit::inclusive_scan with
ScanOp::max over each tile's max, on the device).

Layouts (the case study's point): the grid is cut into blocks, one per CPU thread (one per
thread block on the GPU), in both layouts. row: one row-major (n+2) x (n+2) array, so a
block's rows are strided and cache lines and pages at block edges are shared between threads.
block: a 4-D array [block row][block column][row][column], each block contiguous (on the CPU
page-aligned), so a thread's points share no line or page with another's.

Usage: ocean [options]
  --n N             interior points per side (default 256; 4..16384)
  --layout L        row | block (default block)
  --device D        cpu | gpu (default cpu; gpu needs simkit built with CUDA and a GPU)
  --threads T       CPU threads (default: OpenMP's, OMP_NUM_THREADS or every hardware thread)
  --tiles RxC       CPU blocks, R x C = threads (default: as square as possible, R <= C; 2
                    threads give 1x2, a split of the columns, where the layouts differ)
  --omega W         over-relaxation in (0, 2) (default: optimal 2/(1 + sin(pi h)); 1 = Gauss-Seidel)
  --tol T           stop when a sweep's max |change| <= T (default 1e-10; 0: run --max-sweeps).
                    The change underestimates the error by about 1/(1 - rho), rho the method's
                    convergence rate: --check measures the error itself
  --max-sweeps K    give up after K sweeps (default 100000)
  --check           compare with the exact solution of the same discrete system (discrete sine
                    transform, float64, n <= 512); print the max error, fail if it is > 1e-6
  --bench           time a sweep (both half-sweeps and the reduction) in both layouts on the
                    chosen device: at --n if given, else n = 1024, 2048, 4096 (and 8192 on a GPU)
  --field F.npy     write the solved field, (n+2) x (n+2) float64 with the boundary
  --plot F.png      draw the solved field ($SIMKIT_PYTHON, else python3, with matplotlib)
  --help            this text

Exit status: 0 done; 1 not converged within --max-sweeps, --check failed, or a run-time error;
2 a bad option; 3 --device gpu but no GPU solver or no usable GPU.

Examples:
  ocean --n 128 --check                       # SOR, block layout, every CPU thread
  ocean --n 128 --omega 1 --layout row --check  # plain Gauss-Seidel (many more sweeps)
  ocean --bench --threads 2                   # the layouts side by side on 2 cores
  ocean --n 256 --plot ocean.png
)";
}

}  // namespace ocean
