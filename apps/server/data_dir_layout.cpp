#include "data_dir_layout.hpp"

#include <charconv>
#include <string>
#include <system_error>

#include <simkit/error.hpp>

namespace simkit::server {

namespace fs = std::filesystem;

namespace {

// Q of a folder named rank-<r>-of-<Q>, or 0 for any other name.
int ranks_of(const std::string& name) {
  const std::string head = "rank-";
  const size_t of = name.find("-of-");
  if (name.rfind(head, 0) != 0 || of == std::string::npos) return 0;
  int rank = -1, ranks = 0;
  const char* r_end = name.data() + of;
  const auto [p1, e1] = std::from_chars(name.data() + head.size(), r_end, rank);
  const char* q = name.data() + of + 4;
  const auto [p2, e2] = std::from_chars(q, name.data() + name.size(), ranks);
  if (e1 != std::errc() || p1 != r_end || e2 != std::errc() || p2 != name.data() + name.size()) return 0;
  return rank >= 0 && ranks > rank ? ranks : 0;
}

std::string serve_with(int ranks) {
  return ranks == 1 ? "simkit serve without mpirun" : "mpirun -n " + std::to_string(ranks) + " simkit serve";
}

}  // namespace

fs::path shard_dir(const fs::path& data_dir, int rank, int ranks) {
  return data_dir / ("rank-" + std::to_string(rank) + "-of-" + std::to_string(ranks));
}

void check_data_dir_layout(const fs::path& data_dir, int ranks) {
  std::error_code ec;
  if (!fs::is_directory(data_dir, ec)) return;
  const std::string where = "--data-dir " + simkit::quoted(data_dir.string());
  for (const auto& entry : fs::directory_iterator(data_dir, ec)) {
    const int found = ranks_of(entry.path().filename().string());
    if (found == 0 || found == ranks || !entry.is_directory(ec)) continue;
    throw Error(ErrorCode::invalid_argument,
                where + " holds the shards of a server of " + std::to_string(found) + " MPI ranks (" +
                    entry.path().filename().string() + "): serve it with " + serve_with(found) +
                    "; its points are placed by their id's hash modulo the number of ranks, so another count "
                    "cannot serve them (docs/API.md, \"Sharded over MPI ranks\")");
  }
  const fs::path one = data_dir / "collections";
  if (ranks > 1 && fs::is_directory(one, ec) && !fs::is_empty(one, ec))
    throw Error(ErrorCode::invalid_argument, where + " holds the collections of a one-process server (" + one.string() +
                                                 "): serve it with " + serve_with(1) +
                                                 ", or give the sharded server a directory of its own");
}

}  // namespace simkit::server
