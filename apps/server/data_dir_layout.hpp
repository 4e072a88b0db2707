#pragma once
// Which kind of server a data directory belongs to. One process keeps its collections in
// <data-dir>/collections; `mpirun -n P simkit serve` keeps rank r's shard of every collection in
// <data-dir>/rank-<r>-of-<P>/ (its own collections/, aliases.json and lock), so P is part of
// the layout: points are placed on ranks by a hash of their id modulo P (shard_wire.hpp), and a
// directory written by P ranks holds the wrong points for any other count. The server refuses
// to start on a directory written for another count rather than serve it wrongly.

#include <filesystem>

namespace simkit::server {

/// Rank `rank` of `ranks`'s folder: <data_dir>/rank-<rank>-of-<ranks>.
std::filesystem::path shard_dir(const std::filesystem::path& data_dir, int rank, int ranks);

/// Error(invalid_argument), naming what was found and how to serve it, when `data_dir` was
/// written for another number of processes than `ranks` (1: one process): rank-*-of-Q folders
/// with Q != ranks, or, for ranks > 1, a one-process server's non-empty collections folder. A
/// directory that does not exist yet is fine.
void check_data_dir_layout(const std::filesystem::path& data_dir, int ranks);

}  // namespace simkit::server
