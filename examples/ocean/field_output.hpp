#pragma once
// Writing the solved field: a float64 .npy, and a picture drawn by plot_field.py.

#include <string>
#include <vector>

namespace ocean {

/// rows x cols float64, C order, NumPy format 1.0; written atomically (simkit::write_atomically).
void write_npy(const std::string& path, const std::vector<double>& values, int rows, int cols);

/// Whether $SIMKIT_PYTHON (else python3) can import matplotlib; if not, why, as one line.
std::string plotting_problem();

/// Draws the (n + 2) x (n + 2) field into a PNG; throws std::runtime_error when the script fails.
void plot_field(const std::string& png_path, const std::vector<double>& field, int n, const std::string& title);

}  // namespace ocean
