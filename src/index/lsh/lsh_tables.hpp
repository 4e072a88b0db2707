#pragma once
// What an lsh index stores, in the form both backends read (core/backend.hpp,
// Backend::lsh_search). The index (index/lsh_index.cpp) owns it and changes it only under its
// exclusive lock; a search reads it under the shared lock.
//
// Rows. `vectors` holds the rows as given (float32, not normalised), in ascending id order, so
// that row order is id order: ranking candidates by (key, row) is ranking them by (key, id),
// knn's tie rule, and the float64 re-score sees exactly what knn sees.
//
// Hashes (index/lsh_hash.hpp). `projections` is tables * bits rows of dim: row t * bits + j is
// hash j of table t. Sign hashing (dot, cosine, pearson) keys a table by its bits' signs packed
// into an integer, bit j = projection j >= 0. p-stable hashing (l2, sqeuclidean, l1) takes
// h_j = floor((projection_j + offsets[t * bits + j]) / width) and keys the table by a 64-bit mix
// of its h_j (lsh_mix_key); the integers themselves are recomputed from a query's projections
// when multi-probe needs them.
//
// Buckets: one CSR per table, all tables in one array. Table t owns the distinct keys
// keys[key_start[t] .. key_start[t + 1]) (strictly ascending) and the row numbers
// members[t * n .. (t + 1) * n) sorted by key (simkit::sort, stable, so within a bucket the
// rows ascend). Bucket g (a global index into keys) holds members[bucket_start[g] ..
// bucket_start[g + 1]); bucket_start has one entry past the last bucket, tables * n, and the
// first bucket of table t starts at t * n. A query finds its bucket by binary search in its
// table's keys: no hash map, the same lookup on the host and the device.

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <simkit/matrix.hpp>

#include "core/hd.hpp"
#include "core/metric_plan.hpp"
#include "core/row_stats.hpp"

namespace simkit::detail {

/// Whatever a GPU backend keeps resident for one LshTables (cuda/lsh/); dropped on any change.
class LshDeviceTables {
 public:
  virtual ~LshDeviceTables() = default;
};

/// Folds one p-stable hash integer into a table's running key (start from kLshKeySeed). A
/// splitmix-style finaliser: every input bit reaches every output bit, so nearby integer
/// vectors get unrelated keys and the sorted keys carry no spatial order to skew the buckets.
inline constexpr uint64_t kLshKeySeed = 0x6a09e667f3bcc909ull;
SIMKIT_HD uint64_t lsh_mix_key(uint64_t key, int64_t h) {
  uint64_t z = key ^ (static_cast<uint64_t>(h) + 0x9e3779b97f4a7c15ull + (key << 6) + (key >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The p-stable hash integer of one projection, clamped so that a Cauchy projection's huge
/// values stay representable; computed in float64 on both backends.
SIMKIT_HD int64_t lsh_slab(float projection, float offset, double width) {
  double s = (static_cast<double>(projection) + static_cast<double>(offset)) / width;
  s = s < -4.0e18 ? -4.0e18 : (s > 4.0e18 ? 4.0e18 : s);
  const int64_t f = static_cast<int64_t>(s);
  return (static_cast<double>(f) > s) ? f - 1 : f;  // floor
}

struct LshTables {
  int64_t dim = 0;
  int64_t tables = 0, bits = 0;
  MetricPlan plan;
  bool sign = true;                // random-hyperplane signs; false: p-stable slabs
  bool centre = false;             // pearson: rows are centred before they are projected
  double width = 0;                // p-stable slab width (> 0 once trained)
  std::vector<float> projections;  // tables * bits x dim; empty until trained
  std::vector<float> offsets;      // p-stable: tables * bits, each in [0, width)

  std::vector<float> vectors;         // size() x dim, in id order
  std::vector<int64_t> ids;           // ascending
  std::vector<int64_t> row_keys;      // size() x tables: each row's key in each table
  std::vector<int64_t> keys;          // every table's distinct keys, table after table
  std::vector<int64_t> key_start;     // tables + 1
  std::vector<int64_t> bucket_start;  // keys.size() + 1, into members
  std::vector<int64_t> members;       // tables x size(), row numbers sorted by key per table

  int64_t size() const noexcept { return static_cast<int64_t>(ids.size()); }
  bool trained() const noexcept { return !projections.empty(); }
  int64_t hashes() const noexcept { return tables * bits; }
  MatrixView<const float> rows() const noexcept { return {vectors.data(), size(), dim}; }
  int64_t buckets(int64_t t) const noexcept {
    return key_start[static_cast<size_t>(t + 1)] - key_start[static_cast<size_t>(t)];
  }

  /// The rows' epilogue statistics (cpu/dot_family.hpp) for the CPU search's float32 keys,
  /// computed on first use and reset by every change, like the device copy.
  mutable std::mutex stats_mutex;
  mutable std::shared_ptr<const RowStats> stats;

  /// The device copy, made by the CUDA backend on first use and reset by every change.
  mutable std::mutex device_mutex;
  mutable std::shared_ptr<LshDeviceTables> device;
};

}  // namespace simkit::detail
