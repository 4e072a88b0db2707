#pragma once
// The `ocean` command's options (ocean --help).

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "ocean.hpp"

namespace ocean {

/// A bad command line: main prints the message on one line and exits 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  int n = 256;
  bool n_given = false;
  Layout layout = Layout::block_major;
  bool gpu = false;
  int threads = 0;  // 0: OpenMP's default (OMP_NUM_THREADS, else every hardware thread)
  std::optional<Tiling> tiling;
  std::optional<double> omega;  // empty: the optimal SOR omega
  double tol = 1e-10;
  int64_t max_sweeps = 100000;
  bool check = false;
  bool bench = false;
  std::string field_path;  // .npy
  std::string plot_path;   // .png
  bool help = false;
};

/// Throws UsageError naming the option at fault.
Options parse_options(int argc, char** argv);

const char* help_text();

}  // namespace ocean
