#pragma once
// The on-disk form shared by every index type (the Index contract's save/load): a fixed header,
// named sections, and a length and checksum over everything before them.
//
//   offset      size  field
//   0           8     magic "SIMKIDX\n" (the newline also catches text-mode transfers)
//   8           4     format version, uint32 little endian (kIndexFileVersion)
//   12          4     number of sections
//   16          ...   each section: name length (uint32), name, payload length (uint64), payload
//   size - 16   8     the file's total size in bytes (uint64)
//   size - 8    8     checksum64 of every byte before it
//
// A reader trusts nothing before checking, in this order: the magic (a foreign file), the
// trailer's size against the file's (truncated or grown), the checksum (corrupted), the version
// (written by another format), and that the sections tile the body exactly. Only then does it
// hand out sections, so a damaged file is refused whole and never half-loaded. Writes go to a
// temporary file beside the target, are flushed to the disk (fsync) and then renamed over it:
// a crash leaves either the old file or the new one.
//
// Numbers are stored little endian, as the machines simkit builds for hold them.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace simkit::detail {

inline constexpr uint32_t kIndexFileVersion = 1;

/// A 64-bit checksum for catching damage (not an authenticator), fed in pieces of any size:
/// the result depends only on the bytes, never on how they were split.
class Checksum64 {
 public:
  void update(const void* data, size_t bytes);
  uint64_t digest() const;

 private:
  void block(const unsigned char* p);
  uint64_t lane_[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull, 0x082efa98ec4e6c89ull};
  unsigned char pending_[32] = {};
  size_t pending_bytes_ = 0;
  uint64_t total_ = 0;
};

/// Sections to write, in order; the bytes are referenced, not copied, until write().
class IndexFileWriter {
 public:
  void add(const std::string& name, const void* data, size_t bytes);
  void add_u64(const std::string& name, uint64_t value);
  void add_text(const std::string& name, const std::string& text);
  /// Writes the file atomically and durably (see above). Throws Error(io) on failure, leaving
  /// whatever was at `path` before untouched.
  void write(const std::string& path) const;

 private:
  struct Piece {
    std::string name;
    const void* data;
    size_t bytes;
  };
  std::vector<Piece> pieces_;
  std::vector<std::vector<unsigned char>> owned_;  // the small values add_u64 / add_text keep
};

/// A checked index file in memory. Sections are views into one buffer.
class IndexFile {
 public:
  /// Reads and checks `path`; throws Error(io) naming the file and what is wrong with it.
  static IndexFile read(const std::string& path);

  const std::string& path() const noexcept { return path_; }
  bool has(const std::string& name) const { return sections_.count(name) != 0; }
  /// The section's bytes; throws Error(io) when it is missing or, with `bytes` given, when its
  /// size differs.
  const unsigned char* bytes(const std::string& name, size_t* size = nullptr) const;
  const unsigned char* bytes_exactly(const std::string& name, size_t size) const;
  uint64_t u64(const std::string& name) const;
  std::string text(const std::string& name) const;

 private:
  struct Span {
    size_t offset, size;
  };
  const Span& span(const std::string& name) const;
  std::string path_;
  std::vector<unsigned char> data_;
  std::map<std::string, Span> sections_;
};

}  // namespace simkit::detail
