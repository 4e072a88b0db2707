// The index file format (src/index/index_file.hpp) refuses every damaged file whole: truncated at
// any length, any single byte changed, bytes appended, a foreign file, a missing section. A
// round trip gives back the same sections, and a failed write leaves the old file in place.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "expect_error.hpp"
#include "index/index_file.hpp"

namespace simkit::test {
namespace {

namespace fs = std::filesystem;
using detail::Checksum64;
using detail::IndexFile;
using detail::IndexFileWriter;

class IndexFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("simkit-index-file-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static std::vector<unsigned char> slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static void spit(const std::string& p, const std::vector<unsigned char>& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }

  /// A file with a text, a number and 1000 floats; returns the floats.
  std::vector<float> write_sample(const std::string& p) const {
    std::vector<float> v(1000);
    std::mt19937 rng(5);
    for (float& x : v) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    IndexFileWriter w;
    w.add_text("type", "flat");
    w.add_u64("dim", 1000);
    w.add("vectors", v.data(), v.size() * sizeof(float));
    w.write(p);
    return v;
  }

  fs::path dir_;
};

TEST_F(IndexFileTest, RoundTripGivesTheSectionsBack) {
  const std::string p = path("a.idx");
  const std::vector<float> v = write_sample(p);
  const IndexFile f = IndexFile::read(p);
  EXPECT_EQ(f.text("type"), "flat");
  EXPECT_EQ(f.u64("dim"), 1000u);
  const auto* got = reinterpret_cast<const float*>(f.bytes_exactly("vectors", v.size() * sizeof(float)));
  EXPECT_TRUE(std::equal(v.begin(), v.end(), got));
  EXPECT_FALSE(f.has("ids"));
  expect_error([&] { (void)f.u64("ids"); }, ErrorCode::io, "no 'ids' section");
  expect_error([&] { (void)f.bytes_exactly("vectors", 12); }, ErrorCode::io, "holds 4000 bytes where 12");
  // No temporary left beside it.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(IndexFileTest, EveryTruncationIsRefused) {
  const std::string p = path("a.idx");
  write_sample(p);
  const std::vector<unsigned char> whole = slurp(p);
  const std::string cut = path("cut.idx");
  for (size_t keep = 0; keep < whole.size(); keep += (keep < 64 || keep + 64 > whole.size()) ? 1 : 97) {
    spit(cut, std::vector<unsigned char>(whole.begin(), whole.begin() + std::ptrdiff_t(keep)));
    EXPECT_THROW((void)IndexFile::read(cut), Error) << "kept " << keep << " of " << whole.size() << " bytes";
  }
  spit(cut, std::vector<unsigned char>(whole.begin(), whole.end() - 1));
  expect_error([&] { (void)IndexFile::read(cut); }, ErrorCode::io, "truncated");
}

TEST_F(IndexFileTest, EverySingleByteChangeIsRefused) {
  const std::string p = path("a.idx");
  write_sample(p);
  const std::vector<unsigned char> whole = slurp(p);
  const std::string bad = path("bad.idx");
  int refused = 0, tried = 0;
  for (size_t at = 0; at < whole.size(); at += (at < 128 || at + 64 > whole.size()) ? 1 : 61) {
    for (unsigned char flip : {0x01, 0x80}) {
      std::vector<unsigned char> b = whole;
      b[at] ^= flip;
      spit(bad, b);
      ++tried;
      try {
        (void)IndexFile::read(bad);
        ADD_FAILURE() << "byte " << at << " ^ " << int(flip) << " was accepted";
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::io);
        ++refused;
      }
    }
  }
  EXPECT_EQ(refused, tried);
  std::vector<unsigned char> b = whole;
  b[whole.size() / 2] ^= 0x10;
  spit(bad, b);
  expect_error([&] { (void)IndexFile::read(bad); }, ErrorCode::io, "checksum mismatch");
}

TEST_F(IndexFileTest, AppendedForeignAndNewerFilesAreRefused) {
  const std::string p = path("a.idx");
  write_sample(p);
  std::vector<unsigned char> b = slurp(p);
  b.push_back(0);
  const std::string bad = path("bad.idx");
  spit(bad, b);
  expect_error([&] { (void)IndexFile::read(bad); }, ErrorCode::io, "grown");

  spit(bad, std::vector<unsigned char>{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 'v', 0, '{', '}'});
  expect_error([&] { (void)IndexFile::read(bad); }, ErrorCode::io, "SIMKIDX magic");
  spit(bad, {});
  expect_error([&] { (void)IndexFile::read(bad); }, ErrorCode::io, "SIMKIDX magic");
  expect_error([&] { (void)IndexFile::read(path("missing.idx")); }, ErrorCode::io, "cannot open");
  expect_error([&] { (void)IndexFile::read(dir_.string()); }, ErrorCode::io, "not a regular file");

  // A file a later format wrote (consistent checksum, version 2) names both versions.
  std::vector<unsigned char> v2 = slurp(p);
  v2[8] = 2;
  Checksum64 sum;
  sum.update(v2.data(), v2.size() - 8);
  const uint64_t digest = sum.digest();
  std::memcpy(v2.data() + v2.size() - 8, &digest, 8);
  spit(bad, v2);
  expect_error([&] { (void)IndexFile::read(bad); }, ErrorCode::io, "format version 2; this build reads version 1");
}

TEST_F(IndexFileTest, AFailedWriteLeavesTheOldFile) {
  const std::string p = path("a.idx");
  write_sample(p);
  const std::vector<unsigned char> before = slurp(p);
  IndexFileWriter w;
  w.add_text("type", "flat");
  expect_error([&] { w.add_text("type", "again"); }, ErrorCode::invalid_argument, "added twice");
  expect_error([&] { w.write(path("no-such-dir/x.idx")); }, ErrorCode::io, "does not exist");
  EXPECT_EQ(slurp(p), before);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST(Checksum64, DependsOnTheBytesNotOnHowTheyAreFed) {
  std::vector<unsigned char> data(1000);
  std::mt19937 rng(9);
  for (unsigned char& c : data) c = static_cast<unsigned char>(rng());
  Checksum64 whole;
  whole.update(data.data(), data.size());
  for (size_t piece : {1, 3, 31, 32, 33, 500}) {
    Checksum64 parts;
    for (size_t at = 0; at < data.size(); at += piece)
      parts.update(data.data() + at, std::min(piece, data.size() - at));
    EXPECT_EQ(parts.digest(), whole.digest()) << "pieces of " << piece;
  }
  Checksum64 shorter, padded;
  shorter.update(data.data(), 5);
  padded.update(data.data(), 5);
  const unsigned char zero = 0;
  padded.update(&zero, 1);
  EXPECT_NE(shorter.digest(), padded.digest()) << "a trailing zero must change the sum";
}

}  // namespace
}  // namespace simkit::test
