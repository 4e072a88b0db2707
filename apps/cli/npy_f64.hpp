#pragma once
// float64 vectors in .npy for the kernel-sum commands (`simkit gauss`, `simkit kde`): the
// library's writers hold float32 and int64 only, and weights and sums lose digits in float32.

#include <string>
#include <string_view>
#include <vector>

namespace simkit::cli {

/// Writes `values` as an m x 1 '<f8' .npy (format 1.0, header padded to 64 bytes), atomically:
/// a failure leaves no file and an existing one untouched.
void write_f64_column(const std::string& path, const std::vector<double>& values);

/// Reads a weight vector: a 1-D or n x 1 (or 1 x n) .npy of '<f8' or '<f4' exactly as stored;
/// any other .npy dtype or .fvecs / .ivecs / .bvecs through simkit::read_matrix (values that a
/// float holds exactly), one value per row or one row of values. `option` names the flag in
/// errors (Error io for an unreadable file, invalid_argument for a wrong shape or NaN/Inf).
std::vector<double> read_f64_vector(const std::string& path, std::string_view option);

}  // namespace simkit::cli
