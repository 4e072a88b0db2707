// A sharded index on disk (include/simkit/mpi_index.hpp): save_shards, read_manifest, load_shard.
//
// Nothing half-written: each rank first saves its shard under a temporary name (Index::save,
// itself atomic); only when every rank has, the root removes the old manifest, every rank
// renames its shard into place, and the root writes the new manifest (a temporary file, flushed
// to the disk, renamed). A failure before the renames leaves the previous index whole; one
// during them leaves no manifest, so the directory is refused rather than read as a mix.
// A manifest is trusted for nothing it does not prove: every field is checked, the slices must
// tile the total, and each shard loaded is checked against its entry.

#include <simkit/mpi_index.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <simkit/error.hpp>

#include "mpi/collective.hpp"

namespace simkit::mpi {

namespace {

namespace fs = std::filesystem;
using mpi_detail::agree_on;
using mpi_detail::comm_rank;
using mpi_detail::comm_size;
constexpr const char* kSave = "simkit::mpi::save_shards";
constexpr const char* kLoad = "simkit::mpi::load_shard";
constexpr const char* kFormat = "simkit-sharded-index";
constexpr int kVersion = 1;

std::string shard_name(int rank, int ranks) {
  return "shard-" + std::to_string(rank) + "-of-" + std::to_string(ranks) + ".simkit";
}

/// DIR/manifest.json for a directory, the path itself for a file.
fs::path manifest_path(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ? fs::path(path) / "manifest.json" : fs::path(path);
}

[[noreturn]] void refuse(const fs::path& path, const std::string& why) {
  throw Error(ErrorCode::io, "not a usable sharded index manifest: " + simkit::quoted(path.string(), 256) + ": " + why);
}

std::string manifest_text(const ShardManifest& m) {
  nlohmann::ordered_json doc{{"format", kFormat},
                             {"version", m.version},
                             {"type", m.type},
                             {"description", m.description},
                             {"metric", to_string(m.metric)},
                             {"dim", m.dim},
                             {"total", m.total},
                             {"shards", nlohmann::ordered_json::array()}};
  for (const ShardManifest::Shard& e : m.shards)
    doc["shards"].push_back({{"file", e.file}, {"first", e.first}, {"rows", e.rows}});
  return doc.dump(2) + "\n";
}

/// The member `key` of object `o`: a string, or an integer in [lo, hi]; anything else refused.
std::string text_at(const fs::path& at, const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_string()) refuse(at, std::string("\"") + key + "\" is missing or not a string");
  return it->get<std::string>();
}

int64_t int_at(const fs::path& at, const nlohmann::json& o, const char* key, int64_t lo, int64_t hi) {
  const auto it = o.find(key);
  if (it == o.end() || !it->is_number_integer())
    refuse(at, std::string("\"") + key + "\" is missing or not an integer");
  const bool unsigned_big = it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX);
  const int64_t v = unsigned_big ? hi : it->get<int64_t>();
  if (unsigned_big || v < lo || v > hi)
    refuse(at, std::string("\"") + key + "\" is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

/// `text` to `path` through a temporary file beside it, flushed to the disk, then renamed.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  if (fd >= 0) ok = ::close(fd) == 0 && ok;
  std::error_code ec;
  if (ok) fs::rename(tmp, path, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    throw Error(ErrorCode::io, "cannot write " + simkit::quoted(path.string(), 256));
  }
}

ShardManifest manifest_of(MPI_Comm comm, const Index& shard, int64_t row_offset) {
  const int ranks = comm_size(comm);
  int64_t total = 0;
  const std::vector<int64_t> layout = mpi_detail::contiguous_layout(comm, kSave, row_offset, shard.size(), total);
  ShardManifest m;
  m.version = kVersion;
  m.type = shard.type();
  m.description = shard.description();
  m.metric = shard.metric();
  m.dim = shard.dim();
  m.total = total;
  for (int r = 0; r < ranks; ++r)
    m.shards.push_back({shard_name(r, ranks), layout[2 * size_t(r)], layout[2 * size_t(r) + 1]});
  return m;
}

}  // namespace

ShardManifest save_shards(MPI_Comm comm, const Index& shard, int64_t row_offset, const std::string& dir, int root) {
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  mpi_detail::check_same(
      comm, kSave,
      {{"root", root},
       {"shards' metric", static_cast<int64_t>(shard.metric())},
       {"shards' dimension", shard.dim()},
       {"shards' description", mpi_detail::fingerprint(shard.description().data(), shard.description().size())}});
  const ShardManifest m = manifest_of(comm, shard, row_offset);
  const fs::path folder(dir), mine = folder / shard_name(rank, ranks);
  std::string hidden(1, '.');  // built in steps: GCC 12's -Wrestrict misfires on "." + string
  hidden += shard_name(rank, ranks);
  hidden += ".staged";
  const fs::path staged = folder / hidden;
  try {
    agree_on(comm, kSave, [&] {
      std::error_code ec;
      if (!fs::is_directory(folder, ec))
        throw Error(ErrorCode::io, simkit::quoted(dir, 256) + " is not a directory (create it first)");
      shard.save(staged.string());
    });
  } catch (const Error&) {  // some rank could not save: the others' staged shards go too
    std::error_code ec;
    fs::remove(staged, ec);
    throw;
  }
  agree_on(comm, kSave, [&] {
    std::error_code ec;
    if (rank == root && fs::exists(folder / "manifest.json", ec) && !fs::remove(folder / "manifest.json", ec))
      throw Error(ErrorCode::io, "cannot replace " + simkit::quoted((folder / "manifest.json").string(), 256));
  });
  agree_on(comm, kSave, [&] {
    std::error_code ec;
    fs::rename(staged, mine, ec);
    if (ec) {
      fs::remove(staged, ec);
      throw Error(ErrorCode::io, "cannot write " + simkit::quoted(mine.string(), 256));
    }
  });
  agree_on(comm, kSave, [&] {
    if (rank == root) write_atomically(folder / "manifest.json", manifest_text(m));
  });
  return m;
}

ShardManifest read_manifest(const std::string& path) {
  const fs::path at = manifest_path(path);
  std::ifstream in(at, std::ios::binary);
  if (!in) refuse(at, "cannot open it (a sharded index is the directory `index build` wrote under mpirun)");
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    refuse(at, std::string("not JSON: ") + e.what());
  }
  if (!doc.is_object()) refuse(at, "it is not a JSON object");
  ShardManifest m;
  try {
    if (text_at(at, doc, "format") != kFormat) refuse(at, "its format is not " + std::string(kFormat));
    m.version = static_cast<int>(int_at(at, doc, "version", 1, 1 << 20));
    if (m.version != kVersion)
      refuse(at, "format version " + std::to_string(m.version) + " (this simkit reads version " +
                     std::to_string(kVersion) + ")");
    m.type = text_at(at, doc, "type");
    m.description = text_at(at, doc, "description");
    if (m.type != "flat" && m.type != "ivf_flat" && m.type != "ivf_pq") refuse(at, "unknown index type");
    if (m.description.rfind(m.type, 0) != 0) refuse(at, "the description does not name the type");
    m.metric = parse_metric(text_at(at, doc, "metric"));
    m.dim = int_at(at, doc, "dim", 1, int64_t{1} << 31);
    m.total = int_at(at, doc, "total", 0, INT64_MAX);
    const auto shards = doc.find("shards");
    if (shards == doc.end() || !shards->is_array()) refuse(at, "\"shards\" is missing or not an array");
    if (shards->empty()) refuse(at, "it lists no shards");
    int64_t next = 0;
    for (const nlohmann::json& s : *shards) {
      if (!s.is_object()) refuse(at, "a shard entry is not an object");
      ShardManifest::Shard e{text_at(at, s, "file"), int_at(at, s, "first", 0, INT64_MAX),
                             int_at(at, s, "rows", 0, INT64_MAX)};
      if (e.file.empty() || e.file.find('/') != std::string::npos || e.file[0] == '.')
        refuse(at, "shard file " + simkit::quoted(e.file) + " is not a plain file name");
      if (e.first != next)
        refuse(at, "shard " + std::to_string(m.shards.size()) + " starts at row " + std::to_string(e.first) +
                       " where the shards before it end at row " + std::to_string(next));
      next += e.rows;
      m.shards.push_back(std::move(e));
    }
    if (next != m.total)
      refuse(at, "its shards hold " + std::to_string(next) + " rows, not the total " + std::to_string(m.total));
  } catch (const Error& e) {
    if (e.code() == ErrorCode::io) throw;
    refuse(at, e.what());
  }
  return m;
}

std::unique_ptr<Index> load_shard(MPI_Comm comm, const std::string& path, ShardManifest* manifest) {
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  ShardManifest m;
  agree_on(comm, kLoad, [&] { m = read_manifest(path); });
  const std::string text = manifest_text(m);
  mpi_detail::check_same(comm, kLoad, {{"manifest", mpi_detail::fingerprint(text.data(), text.size())}});
  if (static_cast<int64_t>(m.shards.size()) != ranks)
    throw Error(ErrorCode::invalid_argument,
                "the sharded index " + simkit::quoted(path, 256) + " has " + std::to_string(m.shards.size()) +
                    " shards; search it with mpirun -n " + std::to_string(m.shards.size()) + " (this run has " +
                    std::to_string(ranks) + " ranks)");
  std::unique_ptr<Index> index;
  agree_on(comm, kLoad, [&] {
    const ShardManifest::Shard& s = m.shards[size_t(rank)];
    const fs::path file = manifest_path(path).parent_path() / s.file;
    index = load_index(file.string());
    const auto differs = [&](const std::string& what) {
      throw Error(ErrorCode::io,
                  "shard " + simkit::quoted(file.string(), 256) + " does not match the manifest: " + what);
    };
    if (index->type() != m.type || index->description() != m.description) differs("its description");
    if (index->metric() != m.metric) differs("its metric");
    if (index->dim() != m.dim) differs("its dimension");
    if (index->size() != s.rows)
      differs("it holds " + std::to_string(index->size()) + " vectors, the manifest says " + std::to_string(s.rows));
    if (s.rows > 0 && index->next_id() != s.first + s.rows)
      differs("its ids do not end at row " + std::to_string(s.first + s.rows));
  });
  if (manifest) *manifest = m;
  return index;
}

}  // namespace simkit::mpi
