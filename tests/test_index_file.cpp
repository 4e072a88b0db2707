// The index file format (src/index/index_file.hpp) refuses every damaged file whole: truncated at
// any length, any single byte changed, bytes appended, a foreign file, a missing section. A
// round trip gives back the same sections, and a failed write leaves the old file in place. Text
// from a file or a description reaches a message escaped (simkit::quoted).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/index.hpp>

#include "contexts.hpp"
#include "expect_error.hpp"
#include "index/index_file.hpp"
#include "reference.hpp"

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

  using Sections = std::vector<std::pair<std::string, std::string>>;

  /// The named sections of a well-formed file, in order (the layout of index_file.hpp).
  static Sections sections_of(const std::vector<unsigned char>& file) {
    const auto u32 = [&](size_t at) {
      uint32_t v;
      std::memcpy(&v, file.data() + at, 4);
      return v;
    };
    Sections out;
    size_t at = 16;
    for (uint32_t s = 0, count = u32(12); s < count; ++s) {
      const uint32_t name_bytes = u32(at);
      std::string name(reinterpret_cast<const char*>(file.data() + at + 4), name_bytes);
      at += 4 + name_bytes;
      uint64_t bytes;
      std::memcpy(&bytes, file.data() + at, 8);
      out.emplace_back(name, std::string(reinterpret_cast<const char*>(file.data() + at + 8), size_t(bytes)));
      at += 8 + size_t(bytes);
    }
    return out;
  }

  /// `file`'s magic and version with these sections and a trailer that agrees (size and
  /// checksum): a file a lying writer made, which only the loader's own checks can refuse.
  static std::vector<unsigned char> sealed(const std::vector<unsigned char>& file, const Sections& sections) {
    std::vector<unsigned char> out(file.begin(), file.begin() + 12);
    const auto put = [&](const void* p, size_t n) {
      out.insert(out.end(), static_cast<const unsigned char*>(p), static_cast<const unsigned char*>(p) + n);
    };
    const auto count = uint32_t(sections.size());
    put(&count, 4);
    for (const auto& [name, payload] : sections) {
      const auto name_bytes = uint32_t(name.size());
      const uint64_t bytes = payload.size();
      put(&name_bytes, 4);
      put(name.data(), name.size());
      put(&bytes, 8);
      put(payload.data(), payload.size());
    }
    const uint64_t total = out.size() + 16;
    put(&total, 8);
    Checksum64 sum;
    sum.update(out.data(), out.size());
    const uint64_t digest = sum.digest();
    put(&digest, 8);
    return out;
  }

  fs::path dir_;
};

TEST_F(IndexFileTest, RoundTripGivesTheSectionsBack) {
  const std::string p = path("a.idx");
  const std::vector<float> v = write_sample(p);
  const IndexFile f = IndexFile::read(p);
  EXPECT_EQ(f.text("type"), "flat");
  EXPECT_EQ(f.u64("dim"), 1000u);
  // Sections start at any byte offset: copy the floats out rather than read them in place.
  std::vector<float> got(v.size());
  std::memcpy(got.data(), f.bytes_exactly("vectors", v.size() * sizeof(float)), v.size() * sizeof(float));
  EXPECT_EQ(got, v);
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

// A file whose type, metric, description or section names carry a newline and an escape
// sequence (checksum intact) is refused with one printable line that shows them escaped.
TEST_F(IndexFileTest, HostileTextInAFileIsEscapedInMessages) {
  const Context ctx = cpu_context();
  const Matrix<float> X = random_matrix(40, 4, 7);
  auto index = make_index("ivf_flat,nlist=2", 4, Metric::l2);
  index->train(ctx, X.view());
  index->add(ctx, X.view());
  const std::string good = path("good.simkit");
  index->save(good);
  const std::vector<unsigned char> whole = slurp(good);
  const std::string bad = path("bad.simkit");
  spit(bad, sealed(whole, sections_of(whole)));
  ASSERT_EQ(load_index(bad)->size(), 40) << "the re-sealed copy of a good file loads";

  const std::string hostile = "\n\x1b[2J";
  const std::string long_tail(100000, 'x');
  struct Case {
    std::string section, payload, needle;
  };
  const Case cases[] = {
      {"type", "flat" + hostile, "unknown index type 'flat\\n\\x1b[2J'"},
      {"type", hostile, "unknown index type '\\n\\x1b[2J'"},
      {"metric", "l2" + hostile, "unknown metric 'l2\\n\\x1b[2J'"},
      {"description", "ivf_flat,nlist=2" + hostile, "nlist must be an integer in [1, 16777216], got '2\\n\\x1b[2J'"},
      {"description", "ivf_flat,nlist=2,\x1b]0;title\x07=1", "unknown 'ivf_flat' parameter '\\x1b]0;title\\x07'"},
      {"description", "ivf_flat,nlist=2," + long_tail, "... (100017 bytes)"},
  };
  for (const Case& c : cases) {
    Sections s = sections_of(whole);
    const auto it = std::find_if(s.begin(), s.end(), [&](const auto& p) { return p.first == c.section; });
    ASSERT_NE(it, s.end()) << c.section;
    it->second = c.payload;
    spit(bad, sealed(whole, s));
    expect_escaped_error([&] { (void)load_index(bad); }, ErrorCode::io, c.needle);
  }
  // Two sections renamed to the same hostile name.
  Sections s = sections_of(whole);
  s[s.size() - 1].first = s[s.size() - 2].first = hostile;
  spit(bad, sealed(whole, s));
  expect_escaped_error([&] { (void)load_index(bad); }, ErrorCode::io, "section '\\n\\x1b[2J' twice");

  // The path the caller gave is escaped too.
  const std::string odd = path("idx" + hostile + ".simkit");
  spit(odd, std::vector<unsigned char>(whole.begin(), whole.end() - 1));
  expect_escaped_error([&] { (void)load_index(odd); }, ErrorCode::io, "idx\\n\\x1b[2J.simkit': not a usable");
  expect_escaped_error([&] { (void)load_index(path("no" + hostile)); }, ErrorCode::io, "no\\n\\x1b[2J': cannot open");
}

// The factory repeats a description it cannot use escaped, and cut when it is long.
TEST(IndexFactoryMessages, HostileDescriptionsAreEscaped) {
  const struct {
    std::string description, needle;
  } cases[] = {
      {"hnsw\n\x1b[2J", "unknown index type 'hnsw\\n\\x1b[2J' in 'hnsw\\n\\x1b[2J'"},
      {"ivf_flat,nlist=\x1b[2J8", "nlist must be an integer in [1, 16777216], got '\\x1b[2J8'"},
      {"ivf_flat,n\nlist=8", "unknown 'ivf_flat' parameter 'n\\nlist'"},
      {"ivf_flat,\x1b", "'\\x1b' is not key=value"},
      {"ivf_pq,refine_on=\x1b]0;x\x07", "refine_on must be device or host, got '\\x1b]0;x\\x07'"},
      {std::string("lsh,width=\x9b") + "1m", "got '\\x9b1m'"},
      {"flat,\r", "index description 'flat,\\r': flat takes no parameters"},
      {"it's\\", "unknown index type 'it\\'s\\\\'"},
      {std::string(100000, 'z'), "... (100000 bytes)"},
  };
  for (const auto& c : cases)
    expect_escaped_error([&] { (void)make_index(c.description, 4, Metric::l2); }, ErrorCode::invalid_argument,
                         c.needle);
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
