// simkit::mpi::build_shard and search_shards (include/simkit/mpi_index.hpp): one index per rank,
// trained as the one-process index on the whole base is, searched together and merged on the
// root by (float64 key, id) (mpi/merge.hpp, shared with mpi::knn).
//
// Training: the one-process train() draws its sample with the seed from the whole base
// (index/ivf/ivf_core.cpp, training_sample). Every rank draws the same row numbers
// (index/shard_hooks.hpp, training_draw), the ranks that hold them broadcast them in row order,
// and every rank trains on exactly that matrix: k-means and the product quantizer are
// deterministic for a seed, whatever the thread count, and the ranks compare what they learned.
//
// Search: a shard's list is the whole base's order restricted to its rows wherever a pair's
// key depends on the query and the row alone -- the float64 re-score, l1's float32 sum, ivf_pq's
// code estimate -- and the lists an inverted file probes depend on the query and the shared
// centroids alone. ivf_pq with a re-rank is the exception the two rounds exist for: its exact
// keys are taken for the best refine x k estimates of the whole base, so those are found first
// (round 1), and only they are re-ranked, by the rule of cpu/ivf_pq_search.cpp (round 2).

#include <simkit/mpi_index.hpp>

#include <algorithm>
#include <climits>
#include <limits>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/error.hpp>

#include "core/metric_plan.hpp"
#include "index/search_params.hpp"
#include "index/shard_hooks.hpp"
#include "mpi/collective.hpp"
#include "mpi/merge.hpp"

namespace simkit::mpi {

namespace {

using mpi_detail::agree;
using mpi_detail::agree_on;
using mpi_detail::comm_rank;
using mpi_detail::comm_size;
using mpi_detail::fingerprint;
using mpi_detail::MergedLists;
using mpi_detail::RankedLists;
constexpr const char* kBuild = "simkit::mpi::build_shard";
constexpr const char* kSearch = "simkit::mpi::search_shards";

int64_t text_fingerprint(std::string_view s) { return fingerprint(s.data(), s.size()); }

/// MPI_Bcast of `count` values in pieces (MPI counts are int).
template <class T>
void bcast_pieces(T* data, int64_t count, MPI_Datatype type, int from, MPI_Comm comm) {
  constexpr int64_t kPiece = int64_t{1} << 28;
  for (int64_t at = 0; at < count; at += kPiece)
    MPI_Bcast(data + at, static_cast<int>(std::min(kPiece, count - at)), type, from, comm);
}

// ------------------------------------------------------------------ build

/// The training rows of the whole base, in row order, on every rank: each rank copies the drawn
/// rows it holds into its block and broadcasts it. `layout` is contiguous_layout's.
Matrix<float> gather_training_rows(MPI_Comm comm, const detail::TrainingRows& draw, MatrixView<const float> X_local,
                                   int64_t row_offset, const std::vector<int64_t>& layout) {
  const int ranks = comm_size(comm), rank = comm_rank(comm);
  const int64_t d = X_local.cols;
  std::vector<int64_t> start(static_cast<size_t>(ranks) + 1, 0), from(static_cast<size_t>(ranks) + 1, 0);
  for (int r = 0; r < ranks; ++r) {
    const int64_t first = layout[2 * size_t(r)], rows = layout[2 * size_t(r) + 1];
    const auto lo = std::lower_bound(draw.rows.begin(), draw.rows.end(), first);
    const auto hi = std::lower_bound(draw.rows.begin(), draw.rows.end(), first + rows);
    from[size_t(r)] = lo - draw.rows.begin();
    start[size_t(r) + 1] = start[size_t(r)] + (draw.all ? rows : hi - lo);
  }
  Matrix<float> T(start.back(), d);
  const int64_t mine = start[size_t(rank) + 1] - start[size_t(rank)];
  for (int64_t i = 0; i < mine; ++i) {
    const int64_t local = draw.all ? i : draw.rows[size_t(from[size_t(rank)] + i)] - row_offset;
    std::copy_n(X_local.row(local), d, T.data() + (start[size_t(rank)] + i) * d);
  }
  for (int r = 0; r < ranks; ++r)
    bcast_pieces(T.data() + start[size_t(r)] * d, (start[size_t(r) + 1] - start[size_t(r)]) * d, MPI_FLOAT, r, comm);
  return T;
}

/// Every rank must have learned the same cells and code books from the same rows.
void check_same_training(MPI_Comm comm, const detail::ShardableIndex& shard) {
  const std::vector<float> state = shard.trained_state();
  const int64_t mine = fingerprint(state.data(), state.size() * sizeof(float));
  int64_t lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_INT64_T, MPI_MIN, comm);
  MPI_Allreduce(&mine, &hi, 1, MPI_INT64_T, MPI_MAX, comm);
  if (lo != hi)
    throw Error(ErrorCode::unsupported, std::string(kBuild) +
                                            ": the ranks learned different cells from the same training rows (do "
                                            "they run on different devices?); the shards would not be one index");
}

}  // namespace

std::unique_ptr<Index> build_shard(const Context& ctx, MPI_Comm comm, std::string_view description, Metric metric,
                                   MatrixView<const float> X_local, int64_t row_offset) {
  std::string local;
  if (X_local.where != Memory::host)
    local = "the base slice must be in host memory";
  else if (X_local.rows < 0 || X_local.cols < 1 || row_offset < 0)
    local = "a slice of " + std::to_string(X_local.rows) + " x " + std::to_string(X_local.cols) + " at row " +
            std::to_string(row_offset) + " (every rank passes d >= 1 columns, also with no rows)";
  agree(comm, kBuild, ErrorCode::invalid_argument, local);
  mpi_detail::check_same(comm, kBuild,
                         {{"dimension", X_local.cols},
                          {"metric", static_cast<int64_t>(metric)},
                          {"description", text_fingerprint(description)}});
  int64_t n = 0;
  const std::vector<int64_t> layout = mpi_detail::contiguous_layout(comm, kBuild, row_offset, X_local.rows, n);
  if (n == 0) throw Error(ErrorCode::invalid_argument, std::string(kBuild) + ": the ranks hold no vectors");

  std::unique_ptr<Index> index;
  detail::ShardableIndex* shard = nullptr;
  agree_on(comm, kBuild, [&] {
    index = make_index(description, X_local.cols, metric);
    shard = detail::shardable(*index);
    if (shard == nullptr)
      throw Error(ErrorCode::invalid_argument, "a " + index->type() +
                                                   " index cannot be sharded (flat, ivf_flat and ivf_pq can: an "
                                                   "lsh, tree or hnsw index is built from the whole base)");
  });
  const detail::TrainingRows draw = shard->training_draw(n);
  if (draw.all || !draw.rows.empty()) {
    const Matrix<float> T = gather_training_rows(comm, draw, X_local, row_offset, layout);
    agree_on(comm, kBuild, [&] { shard->train_on_rows(ctx, T.view(), n); });
    check_same_training(comm, *shard);
  }
  agree_on(comm, kBuild, [&] {
    if (X_local.rows == 0) return;
    std::vector<int64_t> ids(static_cast<size_t>(X_local.rows));
    for (int64_t i = 0; i < X_local.rows; ++i) ids[size_t(i)] = row_offset + i;
    index->add(ctx, X_local, ArrayView<const int64_t>(ids.data(), X_local.rows));
  });
  return index;
}

namespace {

// ------------------------------------------------------------------ search

/// The knobs of `sp`, refused unless sp is a plain SearchParams or the kind's own struct.
SearchKnobs knobs_of(const Index& shard, const SearchParams& sp) {
  const std::string type = shard.type();
  SearchKnobs knobs;
  if (type == "ivf_pq") {
    if (const auto* p = detail::own_search_params<IvfPqSearchParams>(sp, "ivf_pq", "IvfPqSearchParams"))
      knobs.nprobe = p->nprobe, knobs.refine = p->refine;
  } else if (type == "ivf_flat") {
    if (const auto* p = detail::own_search_params<IvfSearchParams>(sp, "ivf_flat", "IvfSearchParams"))
      knobs.nprobe = p->nprobe;
  } else {
    detail::own_search_params<SearchParams>(sp, type.c_str(), "SearchParams");
  }
  return knobs;
}

/// An allow-list is served where the planner's two plans (gather the allowed rows, or test them
/// in the scan) give one answer: its choice depends on the shard's size, not the whole base's.
void check_allowed_served(const Index& shard, const SearchKnobs& knobs) {
  const std::string type = shard.type();
  if (type == "flat") return;  // exact either way
  if (type == "ivf_flat") {
    const detail::IvfProbes p = detail::ivf_probes(shard, knobs.nprobe);
    if (p.nprobe >= p.nlist) return;  // exact either way
    throw Error(ErrorCode::invalid_argument,
                "an allow-list over ivf_flat shards needs nprobe = nlist (got nprobe = " + std::to_string(p.nprobe) +
                    " of " + std::to_string(p.nlist) +
                    "): the planner gathers or scans by each shard's size, and below nlist its two plans differ");
  }
  throw Error(ErrorCode::invalid_argument,
              "an allow-list over " + type +
                  " shards is not served: the planner's choice depends on each shard's size, and ivf_pq's plans "
                  "differ at every setting (flat and ivf_flat with nprobe = nlist serve allow-lists)");
}

/// flat and ivf_flat: the shard's own search, and the float64 key of each result from its
/// stored row (the key it was ranked by; checked against the value it gave).
RankedLists scored_lists(const Context& ctx, const Index& shard, MatrixView<const float> Q, int64_t k,
                         const SearchKnobs& knobs, const SearchParams& given, SearchStats& stats) {
  const std::unique_ptr<SearchParams> sp = make_search_params(shard, knobs);
  sp->allowed = given.allowed;
  sp->stats = &stats;
  const int64_t m = Q.rows, d = Q.cols, width = std::min(k, shard.size());
  const IndexSearchResult r = shard.search(ctx, Q, k, *sp);
  const detail::MetricPlan plan = detail::plan_metric(shard.metric());
  RankedLists out(m, width);
  std::vector<int64_t> found;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < width && r.ids(i, j) >= 0; ++j) found.push_back(r.ids(i, j));
  Matrix<float> rows(static_cast<int64_t>(found.size()), d);
  detail::shardable(shard)->stored_rows(ArrayView<const int64_t>(found.data(), rows.rows()), rows.view());
  int64_t f = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < width && r.ids(i, j) >= 0; ++j, ++f) {
      const float value = r.values(i, j);
      const double key = mpi_detail::key_of(plan, Q.row(i), rows.data() + f * d, d, value);
      if (!mpi_detail::key_gives_value(plan, key, value))
        throw Error(ErrorCode::unsupported, "the float64 key of query " + std::to_string(i) + ", id " +
                                                std::to_string(r.ids(i, j)) +
                                                " does not reproduce the index's value (a build mismatch)");
      out.keys[out.at(i, j)] = key;
      out.ids[out.at(i, j)] = r.ids(i, j);
      out.extra[out.at(i, j)] = value;
    }
  return out;
}

/// ivf_pq round 1: this shard's best `keep` by (code estimate, id), with the value of each.
RankedLists estimate_lists(const Context& ctx, const Index& shard, MatrixView<const float> Q, int64_t nprobe,
                           int64_t keep, SearchStats& stats, bool* device_scan = nullptr) {
  const int64_t m = Q.rows, width = std::min(keep, shard.size());
  Matrix<float> keys(m, keep), values(m, keep);
  Matrix<int64_t> ids(m, keep);
  detail::ivf_pq_estimates(shard, ctx, Q, nprobe, keep, keys.view(), values.view(), ids.view(), &stats.candidates,
                           device_scan);
  RankedLists out(m, width);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < width && ids(i, j) >= 0; ++j) {
      out.keys[out.at(i, j)] = keys(i, j);
      out.ids[out.at(i, j)] = ids(i, j);
      out.extra[out.at(i, j)] = values(i, j);
    }
  return out;
}

/// Which one-process search ivf_pq's two rounds reproduce (cpu/ and cuda/ivf_pq_search.cpp).
enum class RerankRule {
  cpu,  // the float32 shortlist, then (float64 key, id)
  gpu,  // every rank scanned on its GPU: every candidate by (the GPU's key, id)
  // GPU ranks whose scans fell to the host (a re-rank deeper than the device scan keeps): the
  // CPU's rule, then l1's values as the GPU computes them, re-sorted by (value, id)
  cpu_then_gpu_l1,
};

/// ivf_pq round 2 on this rank: the survivors (m x depth, the root's merge of round 1, sent to
/// every rank) this rank proposed, with the re-rank's two keys, ranked by (shortlist key, id).
RankedLists rerank_lists(const Index& shard, MatrixView<const float> Q, const std::vector<int64_t>& survivors,
                         const std::vector<int>& source, int64_t depth, int rank, RerankRule rule) {
  const int64_t m = Q.rows;
  Matrix<int64_t> own(m, depth);
  int64_t width = 0;
  for (int64_t i = 0; i < m; ++i) {
    int64_t count = 0;
    for (int64_t j = 0; j < depth; ++j) {
      const size_t at = size_t(i * depth + j);
      own(i, j) = source[at] == rank ? survivors[at] : -1;
      count += own(i, j) >= 0 ? 1 : 0;
    }
    width = std::max(width, count);
  }
  Matrix<float> shortlist(m, depth);
  Matrix<double> exact(m, depth);
  detail::ivf_pq_rerank_keys(shard, Q, own.view(), shortlist.view(), exact.view(), rule == RerankRule::gpu);
  // l1's shortlist keeps every candidate, so its key is free to carry the GPU's value to the root.
  if (rule == RerankRule::cpu_then_gpu_l1) {
    Matrix<float> unused(m, depth);
    Matrix<double> gpu(m, depth);
    detail::ivf_pq_rerank_keys(shard, Q, own.view(), unused.view(), gpu.view(), true);
    for (int64_t i = 0; i < shortlist.size(); ++i) shortlist.data()[i] = static_cast<float>(gpu.data()[i]);
  }
  RankedLists out(m, width);
  std::vector<std::pair<std::pair<float, int64_t>, double>> row;
  for (int64_t i = 0; i < m; ++i) {
    row.clear();
    for (int64_t j = 0; j < depth; ++j)
      if (own(i, j) >= 0) row.push_back({{shortlist(i, j), own(i, j)}, exact(i, j)});
    std::sort(row.begin(), row.end());
    for (size_t c = 0; c < row.size(); ++c) {
      const size_t at = out.at(i, int64_t(c));
      out.keys[at] = row[c].first.first;
      out.ids[at] = row[c].first.second;
      out.extra[at] = row[c].second;
    }
  }
  return out;
}

/// On the root, the re-rank's rule over the whole base's survivors, merged in (shortlist key, id)
/// order: the CPU's (cpu/ivf_pq_search.cpp) ranks the shortlist's first `keep` of them by (exact
/// key, id), the GPU's every one by (its final key, id); the value of each is the metric's value
/// of its key, or with cpu_then_gpu_l1 the GPU's l1 value the merge carried as its key.
void finish_rerank(const Index& shard, const MergedLists& g, int64_t k, RerankRule rule, IndexSearchResult& out) {
  std::vector<std::pair<double, int64_t>> ranked;
  std::vector<std::pair<float, int64_t>> by_value;
  for (int64_t i = 0; i < g.rows; ++i) {
    ranked.clear();
    for (int64_t c = 0; c < g.width && g.ids[g.at(i, c)] >= 0; ++c)
      ranked.emplace_back(g.extra[g.at(i, c)], g.ids[g.at(i, c)]);
    detail::ivf_pq_rank_shortlist(shard, ranked, k, &out.values(i, 0), &out.ids(i, 0), rule == RerankRule::gpu);
    if (rule != RerankRule::cpu_then_gpu_l1) continue;
    by_value.clear();
    for (int64_t s = 0; s < k && out.ids(i, s) >= 0; ++s)
      for (int64_t c = 0; c < g.width; ++c)
        if (g.ids[g.at(i, c)] == out.ids(i, s)) {
          by_value.emplace_back(static_cast<float>(g.keys[g.at(i, c)]), out.ids(i, s));
          break;
        }
    std::sort(by_value.begin(), by_value.end());
    for (size_t s = 0; s < by_value.size(); ++s)
      out.values(i, int64_t(s)) = by_value[s].first, out.ids(i, int64_t(s)) = by_value[s].second;
  }
}

/// ivf_pq with a re-rank of `depth` candidates: the two rounds. The result on the root.
void search_reranked(const Context& ctx, MPI_Comm comm, const Index& shard, MatrixView<const float> Q, int64_t k,
                     int64_t nprobe, int64_t depth, int root, SearchStats& stats, IndexSearchResult& out) {
  const int rank = comm_rank(comm);
  const int64_t m = Q.rows;
  RankedLists mine;
  bool on_gpu = false;
  agree_on(comm, kSearch, [&] { mine = estimate_lists(ctx, shard, Q, nprobe, depth, stats, &on_gpu); });
  // Every rank scanned on its GPU: one GPU's rule. Every rank on a GPU whose scan fell to the host:
  // one GPU's search fell to the host too (the same depth), which gives l1 the GPU's values.
  int every[2] = {on_gpu ? 1 : 0, resolve_device(ctx) == Device::gpu ? 1 : 0};
  MPI_Allreduce(MPI_IN_PLACE, every, 2, MPI_INT, MPI_MIN, comm);
  const bool l1 = !detail::plan_metric(shard.metric()).rescores();
  const RerankRule rule = every[0] == 1         ? RerankRule::gpu
                          : every[1] == 1 && l1 ? RerankRule::cpu_then_gpu_l1
                                                : RerankRule::cpu;
  const MergedLists survivors = mpi_detail::merge_on_root(comm, root, mine, depth);
  std::vector<int64_t> ids = rank == root ? survivors.ids : std::vector<int64_t>(static_cast<size_t>(m * depth));
  std::vector<int> source = rank == root ? survivors.source : std::vector<int>(static_cast<size_t>(m * depth));
  bcast_pieces(ids.data(), m * depth, MPI_INT64_T, root, comm);
  bcast_pieces(source.data(), m * depth, MPI_INT, root, comm);
  agree_on(comm, kSearch, [&] { mine = rerank_lists(shard, Q, ids, source, depth, rank, rule); });
  const MergedLists g = mpi_detail::merge_on_root(comm, root, mine, depth);
  if (rank == root) finish_rerank(shard, g, k, rule, out);
}

/// Copies the merged lists into the result on the root, padding with the metric's worst value.
void write_merged(const MergedLists& g, Metric metric, IndexSearchResult& out) {
  const bool negate = detail::plan_metric(metric).negate;
  const float worst = negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < g.rows; ++i)
    for (int64_t j = 0; j < g.width; ++j) {
      const size_t at = g.at(i, j);
      out.ids(i, j) = g.ids[at];
      out.values(i, j) = g.ids[at] >= 0 ? static_cast<float>(g.extra[at]) : worst;
    }
}

/// The checks every rank makes together before a search; returns the rows of every shard.
int64_t agree_on_search(MPI_Comm comm, const Index& shard, MatrixView<const float> Q, int64_t k,
                        const SearchParams& params, SearchKnobs& knobs) {
  std::string local;
  if (Q.where != Memory::host)
    local = "the queries must be in host memory";
  else if (detail::shardable(shard) == nullptr)
    local = "a " + shard.type() + " index is not a shard (flat, ivf_flat and ivf_pq are)";
  else if (Q.cols != shard.dim())
    local =
        "queries of dimension " + std::to_string(Q.cols) + " for shards of dimension " + std::to_string(shard.dim());
  else if (k < 1)
    local = "k must be at least 1, got " + std::to_string(k);
  agree(comm, kSearch, ErrorCode::invalid_argument, local);
  agree_on(comm, kSearch, [&] {
    knobs = knobs_of(shard, params);
    if (params.allowed) check_allowed_served(shard, knobs);
  });
  const ArrayView<const int64_t> allowed = params.allowed.value_or(ArrayView<const int64_t>{});
  mpi_detail::check_same(comm, kSearch,
                         {{"query rows", Q.rows},
                          {"query dimension", Q.cols},
                          {"query values", fingerprint(Q.data, static_cast<size_t>(Q.size()) * sizeof(float))},
                          {"k", k},
                          {"shards' metric", static_cast<int64_t>(shard.metric())},
                          {"shards' description", text_fingerprint(shard.description())},
                          {"nprobe", knobs.nprobe},
                          {"refine", knobs.refine},
                          {"allow-list", params.allowed ? allowed.size : -1},
                          {"allow-list's ids", fingerprint(allowed.data, size_t(allowed.size) * sizeof(int64_t))}});
  int64_t mine = shard.size(), n = 0;
  MPI_Allreduce(&mine, &n, 1, MPI_INT64_T, MPI_SUM, comm);
  return n;
}

/// The stats the ranks counted, summed on the root, and its padded rows.
void report_stats(MPI_Comm comm, int root, const SearchStats& local, const IndexSearchResult& out, SearchStats* to) {
  int64_t mine[2] = {local.candidates, local.gathered > 0 ? 1 : 0}, sum[2] = {0, 0};
  MPI_Reduce(mine, sum, 2, MPI_INT64_T, MPI_SUM, root, comm);
  if (comm_rank(comm) != root || to == nullptr) return;
  to->candidates += sum[0];
  to->gathered += sum[1] > 0 ? 1 : 0;
  for (int64_t i = 0; i < out.ids.rows(); ++i) to->short_rows += out.ids(i, out.ids.cols() - 1) < 0 ? 1 : 0;
}

}  // namespace

IndexSearchResult search_shards(const Context& ctx, MPI_Comm comm, const Index& shard, MatrixView<const float> Q,
                                int64_t k, const SearchParams& params, int root) {
  const int rank = comm_rank(comm), ranks = comm_size(comm);
  if (root < 0 || root >= ranks)
    throw Error(ErrorCode::invalid_argument, std::string(kSearch) + ": root " + std::to_string(root) +
                                                 " is not a rank of the communicator (size " + std::to_string(ranks) +
                                                 ")");
  SearchKnobs knobs;
  const int64_t n = agree_on_search(comm, shard, Q, k, params, knobs);
  const bool at_root = rank == root;
  IndexSearchResult out{Matrix<float>(at_root ? Q.rows : 0, at_root ? k : 0),
                        Matrix<int64_t>(at_root ? Q.rows : 0, at_root ? k : 0)};
  SearchStats stats;
  if (shard.type() == "ivf_pq") {
    int64_t depth = 0;
    agree_on(comm, kSearch, [&] { depth = detail::ivf_pq_depth(shard, knobs.refine, k, n); });
    if (depth > 0) {
      search_reranked(ctx, comm, shard, Q, k, knobs.nprobe, depth, root, stats, out);
    } else {  // codes only: the estimates are the keys
      RankedLists mine;
      agree_on(comm, kSearch, [&] { mine = estimate_lists(ctx, shard, Q, knobs.nprobe, k, stats); });
      write_merged(mpi_detail::merge_on_root(comm, root, mine, k), shard.metric(), out);
    }
  } else {
    RankedLists mine;
    agree_on(comm, kSearch, [&] { mine = scored_lists(ctx, shard, Q, k, knobs, params, stats); });
    write_merged(mpi_detail::merge_on_root(comm, root, mine, k), shard.metric(), out);
  }
  report_stats(comm, root, stats, out, params.stats);
  return out;
}

}  // namespace simkit::mpi
