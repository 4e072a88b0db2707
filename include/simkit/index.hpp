#pragma once
// Nearest-neighbour indexes: one contract, several kinds.
//
//   flat       every stored vector is compared with every query: exact, the same code and the
//              same results as simkit::knn (knn.hpp) on the stored rows.
//   ivf_flat   an inverted file: k-means (kmeans.hpp) splits the space into `nlist` cells, each
//              vector is stored in its cell's list, and a query scans only the `nprobe` lists
//              whose centroids are nearest to it. Approximate; nprobe = nlist is exact.
//   ivf_pq     the same cells, but each vector is stored as m one-byte codes of its residual to
//              its cell's centroid (product quantization): m bytes per vector instead of 4 dim.
//              Lists are scanned through per-(query, cell) lookup tables; with refine = R the
//              best R k of them are re-ranked exactly against the original vectors, kept for
//              that purpose (refine = 0 keeps codes only and returns the codes' estimates).
//   lsh        locality-sensitive hashing: `tables` hash tables, each keyed by `bits` hashes --
//              random hyperplane signs for dot / cosine / pearson, quantized random projections
//              (p-stable: Gaussian for l2, Cauchy for l1) for distances. A query's candidates
//              are the vectors sharing a probed bucket in any table, re-scored exactly. The
//              defaults (6 tables x 2 bits, one probe) are a small, fast configuration; more
//              tables and probes raise recall (bench/results/ has the sweeps).
//   tree       exact, for l2 and sqeuclidean in d <= 8 alone (make_index refuses anything else):
//              the bounding-volume tree of knn(method = tree) over the stored vectors, with the
//              vectors written since it was built searched beside it by brute force; the same
//              results as flat. On the GPU it searches its vectors as flat does (the GPU tree of
//              knn(method = tree) is built per call; the index does not keep one yet).
//   hnsw       a hierarchical navigable small-world graph (Malkov & Yashunin): each vector is a
//              node linked to m neighbours on each of its layers (2m on the bottom one), chosen
//              by the neighbour-selection heuristic; a query descends greedily through the upper
//              layers and searches the bottom one best-first, keeping the `ef` nearest nodes
//              (HnswSearchParams::ef; ef >= k), whose best are re-scored by knn's rule.
//              Approximate: recall rises with ef; ef >= size() compares every stored vector, the
//              exact answer. No training. The build runs on Context::threads and gives the same
//              graph for a given seed whatever the thread count (it depends on how the rows are
//              split into add() calls). cosine and pearson walk by the inner product of the
//              normalised (pearson: centred) rows; dot walks by the raw inner product, a
//              heuristic whose recall depends on how the vectors' norms spread. remove() marks a
//              node: searches walk through it and never return it. The remove() that brings the
//              marks to a tenth of the nodes repairs the graph: the marked nodes' neighbours
//              are re-linked through the marked nodes' own links, the marked nodes are dropped
//              and their memory returned (it runs on all hardware threads: remove() takes no
//              Context). Recall at a given ef after removing 30% and adding 20% stays that of
//              a graph built fresh over the same rows. The graph lives in host memory and is searched
//              on the CPU: with Context::device = gpu, queries on the device are copied to the
//              host, and the results are written where the outputs are.
//
// All run on the CPU or the GPU (Context::device), hnsw on the CPU alone (see above). flat,
// ivf_flat, lsh, tree and hnsw store the vectors as given (float32).
// Results follow knn's rule: candidates are re-scored in float64 and ranked by (value, id), best
// first, with the metric's own value (a distance, or a similarity for dot / cosine / pearson).
// Where fewer than k vectors can be returned (k > size(), or the probed lists or the allow-list
// hold fewer), the row is padded with id -1 and the metric's worst value (+inf for distances,
// -inf for similarities).
//
// A search may be restricted to an allow-list of ids (SearchParams::allowed): the top-k is then
// taken among the allowed stored vectors alone, not filtered out of an unrestricted top-k, so a
// selective filter still fills k slots where it can. How, a planner decides by the list's size
// (the threshold measured, bench/results/): a selective list's vectors are gathered and searched
// exactly -- simkit::knn over the allowed rows, whatever the kind, as vector databases do for
// selective filters -- and a broad one is tested inside the index's own scan (flat's k-NN,
// ivf_flat's and ivf_pq's list scans), where the disallowed rows are skipped as they are met: flat
// stays exact, the others are approximate exactly as their unfiltered search is (the same nprobe,
// the same refine) and exact in their exhaustive modes. Never a post-filter of a short list. The
// exceptions: lsh always gathers, and an ivf_pq index built with refine=0 keeps no vectors to be
// exact with, so it ranks a selective list's rows by their code estimates (every list scanned).
// hnsw tests a broad list inside its walk: the walk passes through disallowed nodes as through
// removed ones and keeps only allowed ones, so the ef it keeps are all allowed. It gathers while
// allowed^2 < c ef 2m n, c measured: 4.5 for storage=sq8, 12 for float32 (on WordNet at ef 48,
// sq8: below about a quarter of the rows). SearchStats::gathered says which plan ran.
//
// Writes cost the batch, not the index: vectors are appended (flat: after the stored rows; the
// inverted files: merged by id into their list's block, which keeps room to grow), removals fill
// holes (flat moves its last row in) or close up one list, and the GPU copies follow the rows that
// changed (flat) or are rebuilt at the next GPU search (the inverted files).
//
//   auto index = simkit::make_index("ivf_flat,nlist=1024", 384, simkit::Metric::cosine);
//   index->train(ctx, X.view());            // k-means on (a sample of) X
//   index->add(ctx, X.view());              // ids 0 .. n-1
//   simkit::IvfSearchParams sp;
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

/// nprobe value meaning "probe four lists in five": ceil(0.8 * nlist) lists ("nprobe=seed" in a
/// description, the rule of the similarity study this project grew from).
inline constexpr int64_t kProbeFourFifths = -1;
/// The same value under its earlier name.
inline constexpr int64_t kSeedProbes = kProbeFourFifths;

/// What one search found, for the caller to inspect (SearchParams::stats). Counts add up over
/// the searches given the same struct.
struct SearchStats {
  /// Queries that got fewer than k candidates (lsh's buckets, ivf_pq / ivf_flat's probed lists
  /// or an allow-list held fewer): their rows are padded, never topped up by a silent full scan.
  int64_t short_rows = 0;
  /// Candidates compared with the queries, summed over the queries (flat and allow-lists: the
  /// rows searched; lsh: distinct bucket members; ivf_pq: rows of the probed lists; ivf_flat
  /// does not count them).
  int64_t candidates = 0;
  /// Searches with an allow-list that gathered the allowed rows and searched them exactly (the
  /// planner's choice for a selective list); the others tested the list inside their scan.
  int64_t gathered = 0;
};

/// What every search reads. Each index type's own knobs extend it: IvfSearchParams (ivf_flat),
/// IvfPqSearchParams (ivf_pq), LshSearchParams (lsh), HnswSearchParams (hnsw); flat and tree
/// have none. A plain SearchParams gives any index its defaults; an index given another type's
/// parameters refuses them (Error(invalid_argument)) rather than ignore a knob the caller
/// believed was used. A caller that holds an index of any type (a server, a command line,
/// bindings) makes the right struct with make_search_params().
struct SearchParams {
  virtual ~SearchParams() = default;
  /// When set, the search adds what it found to *stats (see SearchStats).
  SearchStats* stats = nullptr;
  /// When set, only stored vectors whose ids are in this list may be returned; the list is
  /// sorted ascending without repeats (Error(invalid_argument) otherwise: sorted, it is read in
  /// one pass) and in host memory. Ids not stored are ignored; an empty list returns only
  /// padding. The planner (see above) gathers a selective list's vectors or tests a broad one
  /// inside the scan.
  std::optional<ArrayView<const int64_t>> allowed;
};

/// ivf_flat's search parameters (0 means the index's own default).
struct IvfSearchParams : SearchParams {
  /// Lists scanned per query, 1..nlist (larger values are clamped to nlist), or
  /// kProbeFourFifths. 0: the default set at build time ("nprobe=" in the description), which is
  /// itself max(1, nlist / 32) unless given. Ignored where an allow-list is gathered (see above).
  int64_t nprobe = 0;
};

/// ivf_pq's: the lists as ivf_flat's, and the re-rank depth.
struct IvfPqSearchParams : IvfSearchParams {
  /// Re-rank the best refine * k candidates of the code scan exactly (more than the probed lists
  /// hold: all of them). 0: the index's "refine=". An index built with refine=0 keeps no vectors
  /// to re-rank with and refuses a positive value.
  int64_t refine = 0;
};

/// lsh's.
struct LshSearchParams : SearchParams {
  /// Buckets probed per table, the query's own first, then those reached by flipping its least
  /// confident hashes (multi-probe). At least the table's bucket count: every bucket. 0: the
  /// index's "probes=".
  int64_t probes = 0;
};

/// hnsw's.
struct HnswSearchParams : SearchParams {
  /// Nodes the bottom layer's search keeps (its beam): more is slower and finds more of the true
  /// neighbours; max(ef, k) is used, and ef >= size() compares every stored vector (exact). 0:
  /// the index's "ef=".
  int64_t ef = 0;
};

/// The knobs of any index type by name, for callers that hold an index of any type; 0 leaves a
/// knob at the index's default.
struct SearchKnobs {
  int64_t nprobe = 0;  // ivf_flat, ivf_pq
  int64_t refine = 0;  // ivf_pq
  int64_t probes = 0;  // lsh
  int64_t ef = 0;      // hnsw
};

/// Build parameters of ivf_flat, as the factory parses them from "ivf_flat,key=value,...".
struct IvfFlatParams {
  int64_t nlist = 1024;      // k-means cells ("nlist=")
  int64_t nprobe = 0;        // default lists per search, 0: max(1, nlist / 32) ("nprobe=", or "nprobe=seed")
  int64_t train_sample = 0;  // k-means trains on this many rows drawn with the seed; 0: min(n, 256 nlist)
  int iterations = 25;       // Lloyd iterations at most ("iterations=")
  uint64_t seed = 0;         // k-means++ and the sample ("seed=")
};

/// Build parameters of ivf_pq, from "ivf_pq,key=value,...". Codes are 8 bits (256 centroids
/// per sub-space, fewer when training has fewer rows).
struct IvfPqParams {
  int64_t nlist = 1024;          // coarse k-means cells ("nlist=")
  int64_t m = 0;                 // sub-quantizers, a divisor of dim ("m="); 0: the largest divisor <= dim / 4
  int64_t refine = 0;            // default re-rank depth ("refine="); > 0 keeps the original vectors
  bool refine_on_device = true;  // GPU searches re-rank on the device ("refine_on=device|host")
  int64_t nprobe = 0;            // as ivf_flat ("nprobe=", "nprobe=seed")
  int64_t train_sample = 0;      // rows drawn for both k-means stages; 0: min(n, max(256 nlist, 65,536))
  int iterations = 25;           // Lloyd iterations, coarse and per sub-space ("iterations=")
  uint64_t seed = 0;             // ("seed=")
};

/// Build parameters of lsh, from "lsh,key=value,...". The defaults: 6 tables of 2 bits, one
/// bucket probed per table.
struct LshParams {
  int64_t tables = 6;  // hash tables ("tables=")
  int64_t bits = 2;    // hashes per table, 1..32 ("bits=")
  int64_t probes = 1;  // default buckets probed per table ("probes=")
  double width = 0;    // p-stable bucket width ("width="); 0: set by train() from the data
  uint64_t seed = 0;   // the random projections ("seed=")
};

/// Build parameters of hnsw, from "hnsw,key=value,...".
struct HnswParams {
  int64_t m = 16;                 // links a node keeps on each upper layer, 2m on the bottom one ("m=")
  int64_t ef_construction = 200;  // the beam of the build's searches ("ef_construction=")
  int64_t ef = 64;                // default search beam ("ef=")
  uint64_t seed = 0;              // the nodes' layers ("seed=")
  /// How the search walks the graph ("storage="): "float32", the vectors as given; or "sq8",
  /// also one uint8 code per dimension (a per-dimension min/max quantizer trained on the first
  /// add's rows, later rows clamped to its range), walked by int8 dot products, the best
  /// refine x k of the walk re-ranked on the float32 vectors (dim + 64-byte-rounded dim bytes a
  /// node). The graph is the same either way: the build always measures the float32 vectors.
  std::string storage = "float32";
  int64_t refine = 4;  // sq8: the walk's best refine x k re-ranked exactly ("refine=")
};

struct IndexSearchResult {
  Matrix<float> values;  // m x k, best first
  Matrix<int64_t> ids;   // m x k, the ids given to add(); -1 in padded slots
};

class Index {
 public:
  virtual ~Index() = default;

  /// "flat", "ivf_flat", "ivf_pq", "lsh", "tree" or "hnsw".
  virtual std::string type() const = 0;
  /// A description the factory turns back into an empty index of the same kind and parameters.
  virtual std::string description() const = 0;
  virtual int64_t dim() const noexcept = 0;
  virtual Metric metric() const noexcept = 0;
  /// Vectors stored.
  virtual int64_t size() const = 0;
  /// Whether add() may be called: always for flat, tree and hnsw; after train() for the others.
  virtual bool is_trained() const = 0;
  /// Bytes the index holds in host memory (vectors or codes, ids, centroids, code books, hash
  /// tables, per-row norms). ivf_pq: n (m + 8) bytes (codes, the lists' ids) and the id map,
  /// 4 n more for the CPU scan's per-row table term (every metric but dot and l1), 4 dim n more
  /// with refine > 0, plus centroids, code books and list offsets -- where n counts the lists'
  /// room to grow as well as their rows (inverted files), and the id map about 40 bytes an id.
  /// hnsw: per node (removed ones included until the repair) 4 dim for the vector, 4 (2m + 1) for the bottom
  /// layer's links, ~4 (m + 1) / ln(m) for the upper layers', 18 more (id, layer, mark, upper
  /// offset), 4 more for cosine (8 for pearson), plus the id map and the searches' visited lists
  /// (2 bytes a node each, kept between searches).
  virtual size_t memory_bytes() const = 0;

  /// Learns what the index needs from representative vectors (n x dim, host): the k-means
  /// cells of ivf_flat (n >= nlist); those and the code books of ivf_pq; the projections (and
  /// the p-stable width) of lsh; nothing for flat. Training again discards nothing only
  /// when the index is empty: a non-empty index refuses it (Error(invalid_argument)).
  virtual void train(const Context& ctx, MatrixView<const float> X) = 0;

  /// Stores the n x dim host rows of X under `ids` (n of them, int64, none already stored nor
  /// repeated), or when `ids` is empty under next_id(), next_id() + 1, ... Rows with NaN/Inf,
  /// a wrong dimension, or ids that clash are refused before anything is stored.
  virtual void add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> ids = {}) = 0;

  /// Makes room for `rows` rows in all before a base is added in batches: the storage grows once
  /// instead of by half again at a time, when the old and the new arrays are both held (2.5x the
  /// rows at the peak, which decides how large a base fits in host memory). Flat's rows and ids;
  /// the other kinds, whose layout depends on the rows, take it as a hint they may ignore.
  /// Error(invalid_argument) for rows < 0.
  virtual void reserve(int64_t rows);

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

/// An empty index from a description: "flat"; "ivf_flat" with optional ",key=value" pairs
/// (nlist, nprobe, train_sample, iterations, seed; see IvfFlatParams); "ivf_pq" (nlist, m,
/// refine, refine_on, nprobe, train_sample, iterations, seed; IvfPqParams), e.g.
/// "ivf_pq,nlist=4096,m=32,refine=4"; "lsh" (tables, bits, probes, width, seed; LshParams), e.g.
/// "lsh,tables=6,bits=2"; "tree" (no parameters; l2 and sqeuclidean, dim <= 8); "hnsw" (m,
/// ef_construction, ef, seed, storage, refine; HnswParams), e.g. "hnsw,m=16,ef_construction=200,ef=64,seed=0".
/// Throws Error(invalid_argument) naming the unknown kind, key or bad value, or a bad dim (or a metric or
/// dim the tree does not serve).
std::unique_ptr<Index> make_index(std::string_view description, int64_t dim, Metric metric);

/// Reads an index written by Index::save. A missing, truncated, corrupted, foreign or
/// newer-format file, or one whose contents contradict each other, is refused with Error(io)
/// naming the problem; nothing is half-loaded.
std::unique_ptr<Index> load_index(const std::string& path);

/// The search parameters of `index`'s type with `knobs` set, for a caller that holds an index of
/// any type (set stats and allowed on the result as on any SearchParams). Error(invalid_argument)
/// naming a non-zero knob the type does not read ("refine applies to ivf_pq; this index is
/// ivf_flat").
std::unique_ptr<SearchParams> make_search_params(const Index& index, const SearchKnobs& knobs);

}  // namespace simkit
