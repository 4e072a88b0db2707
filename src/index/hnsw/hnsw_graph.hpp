#pragma once
// The hnsw family's graph (Malkov & Yashunin, "Efficient and robust approximate nearest
// neighbor search using Hierarchical Navigable Small World graphs"): what the index stores and
// what its CPU build and search (cpu/hnsw_build.cpp, cpu/hnsw_search.cpp) read and write.
//
// Layout, placed for the traversal: the vectors as given, node after node (node = insertion
// order; the repair after deletes renumbers the live ones and frees the rest); layer 0's links in one flat array of
// fixed stride 1 + 2m (a count, then up to 2m node numbers), so a node's links sit at node * stride with no
// indirection; the upper layers' lists (stride 1 + m each) packed for the few nodes that have them (about 1 in m),
// found through upper_at. Node numbers are uint32: half the bytes of the links an int64 would
// take, and 4 billion nodes is more than one host holds.
//
// The traversal distance ("space") is the metric's own order, in float32:
//   l2, sqeuclidean  squared distance          l1  l1 distance
//   dot              -q.x: a heuristic -- HNSW's guarantees come from a metric space, and the
//                    inner product is not one (a long vector is "near" everything), so recall
//                    depends on how the norms spread; unit-norm data behaves as cosine
//   cosine           -(q.x) |q|^-1 |x|^-1
//   pearson          -((q - mean q).(x - mean x)) |q - mean q|^-1 |x - mean x|^-1
// cosine and pearson keep the vectors as given plus one float (two for pearson) a node -- the
// inverse norm and the mean -- instead of a second, normalised copy: the final re-score is over
// the vectors as given (knn's rule), and the scale costs the traversal one multiply a pair.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

#include "core/metric_plan.hpp"

namespace simkit::detail {

class IdFilter;

enum class HnswSpace : uint8_t { sqdist, l1, neg_dot, cosine, pearson };

inline HnswSpace hnsw_space(Metric metric) {
  switch (metric) {
    case Metric::l2:
    case Metric::sqeuclidean: return HnswSpace::sqdist;
    case Metric::l1: return HnswSpace::l1;
    case Metric::dot: return HnswSpace::neg_dot;
    case Metric::cosine: return HnswSpace::cosine;
    case Metric::pearson: return HnswSpace::pearson;
  }
  return HnswSpace::sqdist;
}

/// The highest layer a node may reach: 2^-32 odds at m = 2 already; the level byte and the
/// file check rely on it.
inline constexpr int kHnswMaxLevel = 31;

/// Node `node`'s top layer: floor(-ln(U) / ln(m)), U uniform in (0, 1] drawn from (seed, node)
/// alone -- a hash, not a stream -- so that a graph loaded from a file, or grown by adds of any
/// size, draws the same levels as one built in a single call.
inline int hnsw_level(uint64_t seed, int64_t node, int64_t m) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(node) + 1);  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const double u = (static_cast<double>(z >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double level = std::floor(-std::log(u) / std::log(static_cast<double>(m)));
  return level < kHnswMaxLevel ? static_cast<int>(level) : kHnswMaxLevel;
}

/// Visited marks for one walk at a time: a stamp per node, and a new stamp per walk instead of
/// clearing n marks (the clear runs once in 65,535 walks). Two bytes a stamp: a walk tests the
/// mark of every link it meets, at random nodes, and half the bytes keep twice the nodes' marks
/// in cache (2 MB at 1,000,000 nodes, against 4 MB for four-byte stamps).
class VisitedList {
 public:
  /// Starts a walk over `nodes` nodes.
  void begin(int64_t nodes) {
    if (static_cast<int64_t>(marks_.size()) < nodes) marks_.resize(static_cast<size_t>(nodes), 0);
    if (++stamp_ == 0) {
      std::fill(marks_.begin(), marks_.end(), 0);
      stamp_ = 1;
    }
  }
  /// True the first time `node` is offered in this walk.
  bool first_visit(uint32_t node) {
    if (marks_[node] == stamp_) return false;
    marks_[node] = stamp_;
    return true;
  }
  bool visited(uint32_t node) const { return marks_[node] == stamp_; }
  const void* mark_address(uint32_t node) const { return marks_.data() + node; }

 private:
  std::vector<uint16_t> marks_;
  uint16_t stamp_ = 0;
};

/// Visited lists kept between searches (n stamps each: allocating them per call would cost a
/// one-query search on a large index more than its walk). Concurrent searches each take one.
class VisitedPool {
 public:
  std::unique_ptr<VisitedList> take() {
    std::lock_guard g(mutex_);
    if (free_.empty()) return std::make_unique<VisitedList>();
    std::unique_ptr<VisitedList> v = std::move(free_.back());
    free_.pop_back();
    return v;
  }
  void give_back(std::unique_ptr<VisitedList> v) {
    std::lock_guard g(mutex_);
    free_.push_back(std::move(v));
  }
  void clear() {
    std::lock_guard g(mutex_);
    free_.clear();
  }
  size_t memory_bytes(int64_t nodes) const {
    std::lock_guard g(mutex_);
    return free_.size() * static_cast<size_t>(nodes) * sizeof(uint16_t);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<VisitedList>> free_;
};

struct HnswGraph {
  int64_t dim = 0;
  int64_t m = 16;  // links a node keeps on the upper layers; 2m on layer 0
  HnswSpace space = HnswSpace::sqdist;
  std::vector<float> vectors;   // nodes x dim, as given
  std::vector<float> inv_norm;  // cosine, pearson: 1 / |x| (pearson: of x - mean), 0 for a zero row
  std::vector<float> mean;      // pearson: each row's mean
  // cosine, pearson: |x (- mean)|^2 and (pearson) the mean in double, the very sums of knn's
  // exact_cosine (core/exact_metric.hpp), so the re-score computes only the cross term.
  std::vector<double> norm2, mean64;
  std::vector<int64_t> ids;       // node -> id
  std::vector<uint8_t> level;     // node -> its top layer
  std::vector<uint8_t> deleted;   // node -> removed (still walked through, never returned)
  std::vector<uint32_t> links0;   // layer 0: node * stride0() -> count, then the links
  std::vector<int64_t> upper_at;  // node -> where its layer-1 list starts in `upper`; -1 at level 0
  std::vector<uint32_t> upper;    // layers 1 .. level of each such node, stride 1 + m each
  // storage=sq8 (hnsw_sq8.hpp): per-dimension uint8 codes the search walks on, the float32
  // vectors above kept for the build and the exact re-rank.
  bool sq8 = false;
  std::vector<float> sq_lo, sq_step;  // dim each: x ~ lo + step * code; empty until trained
  std::vector<uint8_t> codes;         // nodes x code_stride(), zero-padded
  std::vector<float> code_sq;         // sqdist: |decoded row|^2
  int64_t entry = -1;                 // the walk's start, a node of the top layer; -1 when empty
  int top = 0;                        // the top layer
  mutable VisitedPool visited;

  int64_t nodes() const noexcept { return static_cast<int64_t>(ids.size()); }
  int64_t stride0() const noexcept { return 1 + 2 * m; }
  int64_t capacity(int layer) const noexcept { return layer == 0 ? 2 * m : m; }
  const float* row(int64_t node) const noexcept { return vectors.data() + node * dim; }
  /// A code row's bytes: dim rounded up to 64, whole cache lines for the int8 kernel.
  int64_t code_stride() const noexcept { return (dim + 63) / 64 * 64; }
  const uint8_t* code(int64_t node) const noexcept { return codes.data() + node * code_stride(); }
  /// The list of `node` on `layer` (<= its level): [0] the count, then the links.
  uint32_t* links(int64_t node, int layer) noexcept {
    return layer == 0 ? links0.data() + node * stride0()
                      : upper.data() + upper_at[static_cast<size_t>(node)] + (layer - 1) * (1 + m);
  }
  const uint32_t* links(int64_t node, int layer) const noexcept {
    return const_cast<HnswGraph*>(this)->links(node, layer);
  }
  bool normalised() const noexcept { return space == HnswSpace::cosine || space == HnswSpace::pearson; }
};

/// The scales of nodes [from, nodes()) for cosine and pearson (nothing for the other spaces),
/// in double as knn's row statistics: the mean (pearson) and the inverse norm of the (centred)
/// row, 0 for a zero row, with the double sums themselves (norm2, mean64). Same order of
/// operations as exact_mean and exact_dot (core/exact_metric.hpp): the bits must match theirs. Derived from the
/// vectors, so files do not carry them.
inline void hnsw_row_scales(HnswGraph& g, int64_t from) {
  if (!g.normalised()) return;
  for (int64_t v = from; v < g.nodes(); ++v) {
    const float* x = g.row(v);
    double mean = 0, ss = 0;
    if (g.space == HnswSpace::pearson) {
      for (int64_t t = 0; t < g.dim; ++t) mean += x[t];
      mean /= static_cast<double>(g.dim);
      g.mean.push_back(static_cast<float>(mean));
    }
    for (int64_t t = 0; t < g.dim; ++t) ss += (x[t] - mean) * (x[t] - mean);
    g.inv_norm.push_back(ss > 0 ? static_cast<float>(1.0 / std::sqrt(ss)) : 0.0f);
    g.norm2.push_back(ss);
    if (g.space == HnswSpace::pearson) g.mean64.push_back(mean);
  }
}

/// What one search reads (index/hnsw/hnsw_index.cpp): host queries, host outputs Q.rows x k.
struct HnswSearchArgs {
  const HnswGraph* graph = nullptr;
  MetricPlan plan;
  MatrixView<const float> Q;
  int64_t k = 0;
  int64_t ef = 0;                    // >= k
  int64_t refine = 0;                // sq8: the walk's best refine x k re-ranked exactly
  const IdFilter* filter = nullptr;  // when set, only nodes whose ids it allows are returned
  bool any_removed = true;           // false: no node is marked, and the walk reads no marks
  MatrixView<float> values;
  MatrixView<int64_t> ids;
  int64_t* candidates = nullptr;  // += nodes whose distance was computed, over the queries
  int64_t* short_rows = nullptr;  // += queries that found fewer than k
};

namespace cpu {
/// Appends the rows of X (host, finite) as nodes with these ids and links them into g
/// (cpu/hnsw_build.cpp): deterministic for a given seed and batch of rows, whatever the thread
/// count. Reports progress through ctx.progress.
void hnsw_insert(const Context& ctx, HnswGraph& g, MatrixView<const float> X, const std::vector<int64_t>& ids,
                 int64_t ef_construction, uint64_t seed);
/// The k best live (and allowed) nodes of each query, by knn's re-score rule (cpu/hnsw_search.cpp).
void hnsw_search(const Context& ctx, const HnswSearchArgs& a);
/// Takes the removed nodes out of g (cpu/hnsw_repair.cpp): the lists that name them chosen again
/// from their neighbourhoods, the live nodes renumbered in order, the entry point kept live.
/// Deterministic whatever the thread count; on an exception g is unchanged.
void hnsw_repair(const Context& ctx, HnswGraph& g);
/// What a loaded sq8 graph derives from its codes rather than storing (cpu/hnsw_build.cpp).
void hnsw_derive_code_terms(HnswGraph& g);
}  // namespace cpu

}  // namespace simkit::detail
