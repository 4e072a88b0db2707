// Fuzzes the public array readers (include/simkit/io.hpp): read_matrix and read_ids.
//
// Input: one byte choosing the file name's extension (kExtensions below: the four formats, in
// upper case too since the extension is case-insensitive, and two the readers must refuse), then
// the file's bytes. Both readers run on every input.
//
// What must hold: a refusal is simkit::Error (io for the file's contents, invalid_argument for
// the extension); a matrix that is read has a non-negative shape and as many values as it says;
// and writing it back (.npy, and .fvecs / .ivecs where the values fit) and reading that again
// gives the same bits. Any other exception, a crash or a sanitizer report is a finding.

#include <cstdint>
#include <cstring>
#include <string>

#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "fuzz_support.hpp"

namespace {

using simkit::fuzz::check;

constexpr const char* kExtensions[] = {".npy", ".fvecs", ".ivecs", ".bvecs", ".NPY", ".Fvecs", ".txt", ""};
constexpr int kFormats = 4;  // the first four are the formats themselves

template <class T>
bool same(const simkit::Matrix<T>& a, const simkit::Matrix<T>& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(T) * static_cast<size_t>(a.size())) == 0);
}

void refused(const simkit::Error& e, int ext, const char* what) {
  simkit::fuzz::check_message(e);
  const bool known = ext < 6;
  check(e.code() == simkit::ErrorCode::io || e.code() == simkit::ErrorCode::invalid_argument,
        std::string(what) + " refused a file with code " + simkit::to_string(e.code()) + ": " + e.what());
  if (!known)
    check(e.code() == simkit::ErrorCode::invalid_argument,
          std::string(what) + ": an unknown extension must be invalid_argument: " + e.what());
}

template <class T>
void check_shape(const simkit::Matrix<T>& m, const char* what) {
  check(m.rows() >= 0 && m.cols() >= 0, std::string(what) + " returned a negative shape");
  check(m.cols() == 0 || m.rows() <= INT64_MAX / m.cols(), std::string(what) + " returned an overflowing shape");
}

/// Writes m in `format` and reads it back: the same bits, or a refusal to write (a value the
/// format cannot hold, e.g. a fraction in .ivecs) before anything is written.
void round_trip_floats(const simkit::Matrix<float>& m, const char* ext) {
  const std::string out = simkit::fuzz::scratch_path(std::string("out") + ext);
  try {
    simkit::write_matrix(out, m.view());
  } catch (const simkit::Error& e) {
    check(std::string(ext) != ".npy",
          std::string("write_matrix(.npy) refused a matrix read_matrix returned: ") + e.what());
    check(e.code() == simkit::ErrorCode::invalid_argument, std::string("write_matrix failed: ") + e.what());
    return;
  }
  simkit::Matrix<float> back;
  try {
    back = simkit::read_matrix(out);
  } catch (const simkit::Error& e) {
    // .fvecs cannot hold a matrix with no rows or no columns; the writer may accept it and the
    // reader refuse the empty file ("no vectors").
    check(m.size() == 0, std::string("read_matrix refused what write_matrix wrote: ") + e.what());
    return;
  }
  check(same(m, back), std::string("write_matrix + read_matrix changed the values (") + ext + ")");
}

void round_trip_ids(const simkit::Matrix<int64_t>& m, const char* ext) {
  const std::string out = simkit::fuzz::scratch_path(std::string("ids") + ext);
  try {
    simkit::write_ids(out, m.view());
  } catch (const simkit::Error& e) {
    check(std::string(ext) != ".npy", std::string("write_ids(.npy) refused ids read_ids returned: ") + e.what());
    check(e.code() == simkit::ErrorCode::invalid_argument, std::string("write_ids failed: ") + e.what());
    return;
  }
  simkit::Matrix<int64_t> back;
  try {
    back = simkit::read_ids(out);
  } catch (const simkit::Error& e) {
    check(m.size() == 0, std::string("read_ids refused what write_ids wrote: ") + e.what());
    return;
  }
  check(same(m, back), std::string("write_ids + read_ids changed the ids (") + ext + ")");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  constexpr int kCount = sizeof kExtensions / sizeof kExtensions[0];
  const int ext = data[0] % kCount;
  const std::string in = simkit::fuzz::scratch_path(std::string("in") + kExtensions[ext]);
  simkit::fuzz::write_file(in, data + 1, size - 1);

  try {
    const simkit::Matrix<float> m = simkit::read_matrix(in);
    check(ext < 6, "read_matrix accepted an unknown extension");
    check_shape(m, "read_matrix");
    // The .npy writer takes every float matrix; .fvecs only rows >= 1 of a known width.
    round_trip_floats(m, ".npy");
    if (ext % kFormats != 0 && m.size() > 0) round_trip_floats(m, ".fvecs");
  } catch (const simkit::Error& e) {
    refused(e, ext, "read_matrix");
  }

  try {
    const simkit::Matrix<int64_t> ids = simkit::read_ids(in);
    check(ext % kFormats == 0 || ext % kFormats == 2, "read_ids accepted a float format");
    check_shape(ids, "read_ids");
    round_trip_ids(ids, ".npy");
    if (ids.size() > 0) round_trip_ids(ids, ".ivecs");
  } catch (const simkit::Error& e) {
    refused(e, ext, "read_ids");
  }
  return 0;
}
