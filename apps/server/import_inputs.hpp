#pragma once
// What `simkit import` reads, checked by the rules an upsert over REST follows (upsert_body.hpp),
// so that an imported collection holds nothing the server would have refused:
//   vectors   any array file simkit reads (.npy of float16/32/64 or integers, .fvecs, .bvecs,
//             .ivecs): n rows of d values, d in 1..65536, every value finite in float32 and
//             every row's squared norm within 2^125 (scores_stay_finite);
//   ids       none (0 .. n-1), an .npy of integers, or a text file of one id per line, each an
//             integer in 0 .. 2^62 - 1 or a UUID (point_id.hpp), no id twice;
//   payloads  none, or JSON Lines: line i is point i's payload, a JSON object (null: none),
//             stored as the compact text payload_text writes, within PayloadLimits.
// Each error is Error(invalid_argument) or Error(io) naming the file and the row or line.
//
// Reading (the bytes, off the disk) and checking (the values) are separate steps, so that the
// import can say which of the two its time went to.

#include <cstdint>
#include <string>
#include <vector>

#include <simkit/matrix.hpp>

#include "point_id.hpp"
#include "request_limits.hpp"

namespace simkit::server {

/// The vectors' file, read whole (float32).
Matrix<float> read_import_vectors(const std::string& path);
/// Every value finite in float32 and every row's scores finite; Error(invalid_argument) naming
/// the first row that is not.
void check_import_vectors(MatrixView<const float> vectors, const std::string& path);

/// The ids' file as read: integers from an .npy, or the text of a .txt (one id per line).
struct IdsFile {
  std::vector<int64_t> numbers;  // an .npy's
  std::string text;              // a .txt's
  bool is_text = false;
};
IdsFile read_import_ids(const std::string& path);
/// n ids from the file (or 0 .. n-1 when `path` is empty), each valid and none twice.
std::vector<PointId> check_import_ids(const IdsFile& file, const std::string& path, int64_t n);

/// The payloads' file, read whole.
std::string read_import_payloads(const std::string& path);
/// One compact text per line (empty: none), n lines, each within `limits`.
std::vector<std::string> check_import_payloads(const std::string& text, const std::string& path, int64_t n,
                                               const PayloadLimits& limits);

}  // namespace simkit::server
