// File I/O entry points: choose the format by extension, open files with messages that say why,
// and make every write atomic (temporary file beside the target, then rename).
#include <simkit/io.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <simkit/error.hpp>

#include "core/quoted_path.hpp"
#include "npy.hpp"
#include "vecs.hpp"

namespace simkit {

using detail::quoted_path;

namespace {

namespace fs = std::filesystem;

enum class Format { npy, fvecs, ivecs, bvecs };

Format format_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".npy") return Format::npy;
  if (ext == ".fvecs") return Format::fvecs;
  if (ext == ".ivecs") return Format::ivecs;
  if (ext == ".bvecs") return Format::bvecs;
  throw Error(ErrorCode::invalid_argument,
              quoted_path(path) + ": " +
                  (ext.empty() ? std::string("no file extension") : "unknown file extension " + simkit::quoted(ext)) +
                  "; supported: .npy, .fvecs, .ivecs, .bvecs");
}

detail::vecs::Kind kind_of(Format f) {
  switch (f) {
    case Format::fvecs: return detail::vecs::Kind::fvecs;
    case Format::ivecs: return detail::vecs::Kind::ivecs;
    default: return detail::vecs::Kind::bvecs;
  }
}

std::ifstream open_input(const std::string& path, uint64_t& size) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::io, quoted_path(path) + ": cannot open: " + std::strerror(errno ? errno : EIO));
  // Opening a directory for reading succeeds on Linux; only reading from it fails, so ask first.
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec) throw Error(ErrorCode::io, quoted_path(path) + ": cannot open: " + ec.message());
  if (fs::is_directory(st)) throw Error(ErrorCode::io, quoted_path(path) + ": cannot open: " + std::strerror(EISDIR));
  if (!fs::is_regular_file(st))
    throw Error(ErrorCode::io,
                quoted_path(path) + ": cannot open: not a regular file (its size must be known to check the header)");
  size = fs::file_size(path, ec);
  if (ec) throw Error(ErrorCode::io, quoted_path(path) + ": cannot open: " + ec.message());
  return in;
}

template <class T>
void check_host(MatrixView<const T> m, const std::string& path) {
  if (m.where != Memory::host)
    throw Error(ErrorCode::invalid_argument,
                quoted_path(path) + ": cannot write a device matrix; copy it to the host first");
  if (m.rows < 0 || m.cols < 0)
    throw Error(ErrorCode::invalid_argument,
                quoted_path(path) + ": negative shape " + std::to_string(m.rows) + " x " + std::to_string(m.cols));
  if (m.data == nullptr && m.size() > 0)
    throw Error(ErrorCode::invalid_argument, quoted_path(path) + ": the matrix has a null data pointer");
}

// Runs `body` on a binary stream opened on the temporary path; closing is checked too, since a
// full disk may only show up when the last buffer is flushed.
template <class Body>
void write_stream(const std::string& path, Body body) {
  write_atomically(path, [&](const std::string& tmp) {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw Error(ErrorCode::io, quoted_path(path) + ": cannot open a temporary file for writing: " +
                                     std::strerror(errno ? errno : EIO));
    body(out);
    out.close();
    if (!out) throw Error(ErrorCode::io, quoted_path(path) + ": write failed while closing the file");
  });
}

}  // namespace

Matrix<float> read_matrix(const std::string& path) {
  const Format f = format_of(path);
  uint64_t size = 0;
  std::ifstream in = open_input(path, size);
  if (f == Format::npy) return detail::npy::read_floats(in, size, path);
  return detail::vecs::read_floats(in, size, path, kind_of(f));
}

Matrix<float> read_matrix_rows(const std::string& path, int64_t first, int64_t count) {
  const Format f = format_of(path);
  uint64_t size = 0;
  std::ifstream in = open_input(path, size);
  if (count < 0)
    throw Error(ErrorCode::invalid_argument, quoted_path(path) + ": negative row count " + std::to_string(count));
  if (f == Format::npy) return detail::npy::read_floats(in, size, path, first, count);
  const Matrix<float> all = detail::vecs::read_floats(in, size, path, kind_of(f));
  if (first < 0 || first > all.rows() || count > all.rows() - first)
    throw Error(ErrorCode::invalid_argument, quoted_path(path) + ": rows [" + std::to_string(first) + ", " +
                                                 std::to_string(first + count) + ") are beyond its " +
                                                 std::to_string(all.rows()) + " rows");
  Matrix<float> out(count, all.cols());
  std::copy(all.data() + first * all.cols(), all.data() + (first + count) * all.cols(), out.data());
  return out;
}

MatrixShape read_matrix_shape(const std::string& path) {
  const Format f = format_of(path);
  uint64_t size = 0;
  std::ifstream in = open_input(path, size);
  if (f == Format::npy) {
    const detail::npy::Header h = detail::npy::read_header(in, size, path);
    return {h.rows, h.cols};
  }
  const Matrix<float> all = detail::vecs::read_floats(in, size, path, kind_of(f));
  return {all.rows(), all.cols()};
}

Matrix<int64_t> read_ids(const std::string& path) {
  const Format f = format_of(path);
  if (f == Format::fvecs || f == Format::bvecs)
    throw Error(ErrorCode::invalid_argument, quoted_path(path) + ": ids are read from .ivecs or an integer .npy file");
  uint64_t size = 0;
  std::ifstream in = open_input(path, size);
  if (f == Format::npy) return detail::npy::read_ints(in, size, path);
  return detail::vecs::read_ints(in, size, path);
}

void write_matrix(const std::string& path, MatrixView<const float> m) {
  const Format f = format_of(path);
  check_host(m, path);
  if (f == Format::npy) {
    write_stream(path, [&](std::ostream& out) { detail::npy::write_floats(out, m, path); });
    return;
  }
  const auto kind = kind_of(f);
  detail::vecs::check_writable(m, kind, path);
  write_stream(path, [&](std::ostream& out) { detail::vecs::write_floats(out, m, kind, path); });
}

void write_ids(const std::string& path, MatrixView<const int64_t> ids) {
  const Format f = format_of(path);
  if (f == Format::fvecs || f == Format::bvecs)
    throw Error(ErrorCode::invalid_argument, quoted_path(path) + ": ids are written to .ivecs (int32) or .npy (int64)");
  check_host(ids, path);
  if (f == Format::npy) {
    write_stream(path, [&](std::ostream& out) { detail::npy::write_ints(out, ids, path); });
    return;
  }
  detail::vecs::check_writable(ids, path);
  write_stream(path, [&](std::ostream& out) { detail::vecs::write_ints(out, ids, path); });
}

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  if (path.empty()) throw Error(ErrorCode::invalid_argument, "empty output path");
  const fs::path target(path);
  fs::path dir = target.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  const fs::file_status dir_status = fs::status(dir, ec);
  if (!fs::is_directory(dir_status))
    throw Error(ErrorCode::io, quoted_path(path) + ": cannot write: directory " + quoted_path(dir.string()) + " " +
                                   (fs::exists(dir_status) ? "is not a directory" : "does not exist"));
  if (fs::is_directory(fs::status(target, ec)))
    throw Error(ErrorCode::io, quoted_path(path) + ": cannot write: it is a directory");

  // The temporary lives in the target's directory so the rename cannot cross file systems. The
  // name is reserved with O_EXCL: pid + counter make clashes unlikely, O_EXCL makes them harmless.
  static std::atomic<uint64_t> counter{0};
  std::string stem = target.filename().string();
  stem.insert(stem.begin(), '.');  // hidden; built in place because GCC 12 misfires -Wrestrict on "." + string
  stem += ".tmp-" + std::to_string(::getpid()) + "-";
  fs::path tmp;
  for (int attempt = 0;; ++attempt) {
    tmp = dir / (stem + std::to_string(counter.fetch_add(1)));
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      ::close(fd);
      break;
    }
    if (errno != EEXIST || attempt >= 100)
      throw Error(ErrorCode::io, quoted_path(path) + ": cannot create a temporary file in " +
                                     quoted_path(dir.string()) + ": " + std::strerror(errno));
  }

  try {
    write(tmp.string());
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(ErrorCode::io, quoted_path(path) + ": cannot move the finished file into place: " + ec.message());
  }
}

}  // namespace simkit
