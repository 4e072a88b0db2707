#include "index/index_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "core/quoted_path.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

namespace simkit::detail {

namespace {

constexpr unsigned char kMagic[8] = {'S', 'I', 'M', 'K', 'I', 'D', 'X', '\n'};
constexpr size_t kHeaderBytes = 16, kTrailerBytes = 16;

constexpr uint64_t kPrime1 = 0x9e3779b185ebca87ull, kPrime2 = 0xc2b2ae3d27d4eb4full;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t load_u64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t load_u32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void put_u64(std::vector<unsigned char>& out, uint64_t v) {
  const size_t at = out.size();
  out.resize(at + 8);
  std::memcpy(out.data() + at, &v, 8);
}
void put_u32(std::vector<unsigned char>& out, uint32_t v) {
  const size_t at = out.size();
  out.resize(at + 4);
  std::memcpy(out.data() + at, &v, 4);
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw Error(ErrorCode::io, quoted_path(path) + ": not a usable simkit index file: " + why);
}

/// Writes all of [data, data + bytes) to fd, feeding the checksum.
void write_all(int fd, const void* data, size_t bytes, Checksum64* sum, const std::string& path) {
  if (sum) sum->update(data, bytes);
  const auto* p = static_cast<const unsigned char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, std::min<size_t>(bytes, size_t(1) << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::io, quoted_path(path) + ": write failed: " + std::strerror(errno));
    }
    p += n;
    bytes -= size_t(n);
  }
}

}  // namespace

// Four independent lanes over 32-byte blocks (so the loop is not one long dependency chain),
// each word multiplied in and rotated; the tail is zero-padded and the length mixed in last,
// so "ab" and "ab\0" differ.
void Checksum64::block(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) lane_[i] = rotl(lane_[i] + load_u64(p + 8 * i) * kPrime2, 31) * kPrime1;
}

void Checksum64::update(const void* data, size_t bytes) {
  if (bytes == 0) return;  // data may then be null, which memcpy must not be given even for 0 bytes
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += bytes;
  if (pending_bytes_ > 0) {
    const size_t take = std::min(bytes, sizeof pending_ - pending_bytes_);
    std::memcpy(pending_ + pending_bytes_, p, take);
    pending_bytes_ += take, p += take, bytes -= take;
    if (pending_bytes_ < sizeof pending_) return;
    block(pending_);
    pending_bytes_ = 0;
  }
  for (; bytes >= 32; p += 32, bytes -= 32) block(p);
  std::memcpy(pending_, p, bytes);
  pending_bytes_ = bytes;
}

uint64_t Checksum64::digest() const {
  Checksum64 c = *this;
  if (c.pending_bytes_ > 0) {
    std::memset(c.pending_ + c.pending_bytes_, 0, sizeof c.pending_ - c.pending_bytes_);
    c.block(c.pending_);
  }
  uint64_t h = total_ * kPrime1;
  for (int i = 0; i < 4; ++i) h = rotl(h ^ (c.lane_[i] * kPrime2), 27) * kPrime1 + kPrime2;
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  return h;
}

void IndexFileWriter::add(const std::string& name, const void* data, size_t bytes) {
  if (name.empty() || name.size() > 255) throw Error(ErrorCode::invalid_argument, "index file: bad section name");
  for (const Piece& p : pieces_)
    if (p.name == name) throw Error(ErrorCode::invalid_argument, "index file: section '" + name + "' added twice");
  pieces_.push_back({name, bytes ? data : nullptr, bytes});
}

void IndexFileWriter::add_u64(const std::string& name, uint64_t value) {
  owned_.emplace_back(8);
  std::memcpy(owned_.back().data(), &value, 8);
  add(name, owned_.back().data(), 8);
}

void IndexFileWriter::add_text(const std::string& name, const std::string& text) {
  owned_.emplace_back(text.begin(), text.end());
  add(name, owned_.back().data(), text.size());
}

void IndexFileWriter::write(const std::string& path) const {
  write_atomically(path, [&](const std::string& tmp) {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw Error(ErrorCode::io, quoted_path(path) + ": cannot open for writing: " + std::strerror(errno));
    try {
      Checksum64 sum;
      uint64_t total = 0;
      std::vector<unsigned char> head(kMagic, kMagic + 8);
      put_u32(head, kIndexFileVersion);
      put_u32(head, uint32_t(pieces_.size()));
      write_all(fd, head.data(), head.size(), &sum, path);
      total += head.size();
      for (const Piece& p : pieces_) {
        std::vector<unsigned char> frame;
        put_u32(frame, uint32_t(p.name.size()));
        frame.insert(frame.end(), p.name.begin(), p.name.end());
        put_u64(frame, p.bytes);
        write_all(fd, frame.data(), frame.size(), &sum, path);
        write_all(fd, p.data, p.bytes, &sum, path);
        total += frame.size() + p.bytes;
      }
      std::vector<unsigned char> tail;
      put_u64(tail, total + kTrailerBytes);
      sum.update(tail.data(), 8);
      put_u64(tail, sum.digest());
      write_all(fd, tail.data(), tail.size(), nullptr, path);
      // On the disk before the rename makes it visible: a crash cannot expose a short file.
      if (::fsync(fd) != 0) throw Error(ErrorCode::io, quoted_path(path) + ": fsync failed: " + std::strerror(errno));
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw Error(ErrorCode::io, quoted_path(path) + ": close failed: " + std::strerror(errno));
  });
  // The rename itself is durable once the directory is flushed.
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = std::filesystem::current_path();
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

IndexFile IndexFile::read(const std::string& path) {
  IndexFile f;
  f.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(ErrorCode::io, quoted_path(path) + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(ErrorCode::io, quoted_path(path) + ": not a regular file");
  }
  f.data_.resize(size_t(st.st_size));
  size_t got = 0;
  while (got < f.data_.size()) {
    const ssize_t n = ::read(fd, f.data_.data() + got, f.data_.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw Error(ErrorCode::io, quoted_path(path) + ": read failed after " + std::to_string(got) + " bytes");
    }
    got += size_t(n);
  }
  ::close(fd);

  const std::vector<unsigned char>& d = f.data_;
  const size_t size = d.size();
  if (size < 8 || std::memcmp(d.data(), kMagic, 8) != 0) refuse(path, "it does not start with the SIMKIDX magic");
  if (size < kHeaderBytes + kTrailerBytes) refuse(path, "truncated (" + std::to_string(size) + " bytes)");
  const uint64_t recorded = load_u64(d.data() + size - 16);
  // A cut or appended file moves the trailer, so what it "records" is then any number.
  if (recorded != size)
    refuse(path, "it holds " + std::to_string(size) + " bytes but its trailer records " + std::to_string(recorded) +
                     " (truncated, grown or damaged)");
  Checksum64 sum;
  sum.update(d.data(), size - 8);
  if (sum.digest() != load_u64(d.data() + size - 8)) refuse(path, "checksum mismatch: the file is corrupted");
  const uint32_t version = load_u32(d.data() + 8);
  if (version != kIndexFileVersion)
    refuse(path, "format version " + std::to_string(version) + "; this build reads version " +
                     std::to_string(kIndexFileVersion));
  const uint32_t count = load_u32(d.data() + 12);
  size_t at = kHeaderBytes;
  const size_t end = size - kTrailerBytes;
  for (uint32_t s = 0; s < count; ++s) {
    if (end - at < 4) refuse(path, "section " + std::to_string(s) + " runs past the end");
    const uint32_t name_bytes = load_u32(d.data() + at);
    at += 4;
    if (name_bytes == 0 || end - at < size_t(name_bytes) + 8)
      refuse(path, "section " + std::to_string(s) + " is malformed");
    std::string name(reinterpret_cast<const char*>(d.data() + at), name_bytes);
    at += name_bytes;
    const uint64_t bytes = load_u64(d.data() + at);
    at += 8;
    if (bytes > end - at) refuse(path, "section " + simkit::quoted(name) + " runs past the end");
    if (!f.sections_.emplace(name, Span{at, size_t(bytes)}).second)
      refuse(path, "section " + simkit::quoted(name) + " twice");
    at += size_t(bytes);
  }
  if (at != end) refuse(path, std::to_string(end - at) + " bytes after the last section");
  return f;
}

const IndexFile::Span& IndexFile::span(const std::string& name) const {
  const auto it = sections_.find(name);
  if (it == sections_.end()) refuse(path_, "it has no '" + name + "' section");
  return it->second;
}

const unsigned char* IndexFile::bytes(const std::string& name, size_t* size) const {
  const Span& s = span(name);
  if (size) *size = s.size;
  return data_.data() + s.offset;
}

const unsigned char* IndexFile::bytes_exactly(const std::string& name, size_t size) const {
  const Span& s = span(name);
  if (s.size != size)
    refuse(path_, "section '" + name + "' holds " + std::to_string(s.size) + " bytes where " + std::to_string(size) +
                      " were expected");
  return data_.data() + s.offset;
}

uint64_t IndexFile::u64(const std::string& name) const { return load_u64(bytes_exactly(name, 8)); }

std::string IndexFile::text(const std::string& name) const {
  size_t n = 0;
  const unsigned char* p = bytes(name, &n);
  return std::string(reinterpret_cast<const char*>(p), n);
}

}  // namespace simkit::detail
