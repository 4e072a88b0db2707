#pragma once
// Nearest-neighbour indexes: one contract, several kinds.
//
//   flat       every stored vector is compared with every query: exact, the same code and the
//              same results as simkit::knn (knn.hpp) on the stored rows.
//   ivf_flat   an inverted file: k-means (kmeans.hpp) splits the space into `nlist` cells, each
//              vector is stored in its cell's list, and a query scans only the `nprobe` lists
//              whose centroids are nearest to it. Approximate; nprobe = nlist is exact.
//
// Both store the vectors as given (float32) and run on the CPU or the GPU (Context::device).
// Results follow knn's rule: candidates are re-scored in float64 and ranked by (value, id), best
// first, with the metric's own value (a distance, or a similarity for dot / cosine / pearson).
// Where fewer than k vectors can be returned (k > size(), or the probed lists or the allow-list
// hold fewer), the row is padded with id -1 and the metric's worst value (+inf for distances,
// -inf for similarities).
//
// A search may be restricted to an allow-list of ids (SearchParams::allowed): the top-k is then
// taken among the allowed stored vectors alone, not filtered out of an unrestricted top-k, so a
// selective filter still fills k slots where it can. The restricted search is exact for every
// kind -- ivf_flat scans the allowed rows themselves instead of probing lists, as vector
// databases do for selective filters -- and equals simkit::knn over the allowed rows.
//
//   auto index = simkit::make_index("ivf_flat,nlist=1024", 384, simkit::Metric::cosine);
//   index->train(ctx, X.view());            // k-means on (a sample of) X
//   index->add(ctx, X.view());              // ids 0 .. n-1
//   simkit::SearchParams sp;
//   sp.nprobe = 32;
//   simkit::IndexSearchResult r = index->search(ctx, Q.view(), 10, sp);
//   std::vector<int64_t> english = {3, 17, 42, 108};  // ascending
//   sp.allowed = english;                   // the 10 best of these four: 4 found, 6 padded
//   r = index->search(ctx, Q.view(), 10, sp);
//   index->save("wordnet.simkit");          // atomic; simkit::load_index reads it back
//
// Thread safety: concurrent search() calls on one index are safe; add, remove and train take
// the index exclusively (a search waits for them, and they for it).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit {

/// nprobe value meaning "the seed document's rule": probe ceil(0.8 * nlist) lists.
inline constexpr int64_t kSeedProbes = -1;

/// Per-search knobs; 0 means the index's own default.
struct SearchParams {
  /// ivf_flat: lists scanned per query, 1..nlist (larger values are clamped to nlist), or
  /// kSeedProbes. 0: the default set at build time ("nprobe=" in the description), which is
  /// itself max(1, nlist / 32) unless given. Ignored by flat, and with `allowed`.
  int64_t nprobe = 0;
  /// When set, only stored vectors whose ids are in this list may be returned; the list is
  /// sorted ascending without repeats (Error(invalid_argument) otherwise: sorted, it meets the
  /// index's ids in one walk) and in host memory. Ids not stored are ignored; an empty list
  /// returns only padding. The k best allowed vectors are found exactly, by every kind (see
  /// above), at the cost of copying the allowed vectors on each search.
  std::optional<ArrayView<const int64_t>> allowed;
};

/// Build parameters of ivf_flat, as the factory parses them from "ivf_flat,key=value,...".
struct IvfFlatParams {
  int64_t nlist = 1024;      // k-means cells ("nlist=")
  int64_t nprobe = 0;        // default lists per search, 0: max(1, nlist / 32) ("nprobe=", or "nprobe=seed")
  int64_t train_sample = 0;  // k-means trains on this many rows drawn with the seed; 0: min(n, 256 nlist)
  int iterations = 25;       // Lloyd iterations at most ("iterations=")
  uint64_t seed = 0;         // k-means++ and the sample ("seed=")
};

struct IndexSearchResult {
  Matrix<float> values;  // m x k, best first
  Matrix<int64_t> ids;   // m x k, the ids given to add(); -1 in padded slots
};

class Index {
 public:
  virtual ~Index() = default;

  /// "flat" or "ivf_flat".
  virtual std::string type() const = 0;
  /// A description the factory turns back into an empty index of the same kind and parameters.
  virtual std::string description() const = 0;
  virtual int64_t dim() const noexcept = 0;
  virtual Metric metric() const noexcept = 0;
  /// Vectors stored.
  virtual int64_t size() const = 0;
  /// Whether add() may be called: always for flat; after train() for ivf_flat.
  virtual bool is_trained() const = 0;
  /// Bytes the index holds in host memory (vectors, ids, centroids, per-row norms).
  virtual size_t memory_bytes() const = 0;

  /// Learns what the index needs from representative vectors (n x dim, host): the k-means
  /// cells of ivf_flat (n >= nlist); nothing for flat. Training again discards nothing only
  /// when the index is empty: a non-empty index refuses it (Error(invalid_argument)).
  virtual void train(const Context& ctx, MatrixView<const float> X) = 0;

  /// Stores the n x dim host rows of X under `ids` (n of them, int64, none already stored nor
  /// repeated), or when `ids` is empty under next_id(), next_id() + 1, ... Rows with NaN/Inf,
  /// a wrong dimension, or ids that clash are refused before anything is stored.
  virtual void add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> ids = {}) = 0;

  /// Removes the vectors with these ids; ids not stored are ignored. Returns how many were removed.
  virtual int64_t remove(ArrayView<const int64_t> ids) = 0;

  /// The id add() gives the next row when no ids are passed: one past the largest id ever stored.
  virtual int64_t next_id() const = 0;

  /// For each row of Q (m x dim, host or device), the k stored vectors best under metric():
  /// values and ids are m x k (host or device, as Q). k >= 1; k > size() pads (see above).
  virtual void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& params,
                      MatrixView<float> values, MatrixView<int64_t> ids) const = 0;

  /// Convenience form returning host matrices.
  IndexSearchResult search(const Context& ctx, MatrixView<const float> Q, int64_t k,
                           const SearchParams& params = {}) const;

  /// Writes the whole index to `path` atomically (a temporary file beside it, flushed, then
  /// renamed): a failure or a crash leaves the previous file as it was. Error(io) on failure.
  virtual void save(const std::string& path) const = 0;
};

/// An empty index from a description: "flat", or "ivf_flat" with optional ",key=value" pairs
/// (nlist, nprobe, train_sample, iterations, seed; see IvfFlatParams). Throws
/// Error(invalid_argument) naming the unknown kind, key or bad value, or a bad dim.
std::unique_ptr<Index> make_index(std::string_view description, int64_t dim, Metric metric);

/// Reads an index written by Index::save. A missing, truncated, corrupted, foreign or
/// newer-format file, or one whose contents contradict each other, is refused with Error(io)
/// naming the problem; nothing is half-loaded.
std::unique_ptr<Index> load_index(const std::string& path);

}  // namespace simkit
