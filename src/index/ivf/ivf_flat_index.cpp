// ivf_flat: k-means cells, one list of full vectors per cell (ivf_lists.hpp), and the backends'
// list scans (cpu/, cuda/). Training, add and remove are the inverted file's (ivf_index_base.hpp);
// what is particular here is what a row stores and the search.
//
// The metric decides how vectors meet centroids (ivf_core.hpp, coarse_metric):
//   l2, sqeuclidean, l1   k-means on squared distances; rows join, and queries probe, the
//                         cells nearest in squared distance
//   cosine                spherical k-means; nearest by cosine
//   pearson               spherical k-means on mean-centred rows; nearest by pearson
//   dot                   k-means on squared distances, cells nearest by inner product
//
// An allow-list (index.hpp) is met by the planner (filtered_search.hpp): a selective one probes
// no lists -- the allowed rows are gathered and searched exactly, the plan vector databases
// switch to when probing nprobe lists would leave few allowed rows to rank -- and a broad one is
// tested inside the list scan, approximate like the unfiltered search.

#include "index/ivf/ivf_flat_index.hpp"
#include "index/search_params.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/parallel.hpp"
#include "core/shard_merge.hpp"
#include "core/shards.hpp"
#include "index/ivf/ivf_index_base.hpp"
#include "index/ivf/ivf_lists.hpp"
#include "index/ivf/ivf_searchers.hpp"

namespace simkit::detail {

namespace {

IvfCellParams cell_params(const IvfFlatParams& p) { return {p.nlist, p.nprobe, p.train_sample, p.iterations, p.seed}; }

class IvfFlatIndex final : public IvfIndexBase {
 public:
  IvfFlatIndex(int64_t dim, Metric metric, const IvfFlatParams& p)
      : IvfIndexBase(metric, cell_params(p)), params_(p), columns_(lists_) {
    lists_.dim = dim;
    lists_.nlist = p.nlist;
    lists_.plan = plan_metric(metric);
    lists_.coarse = coarse_metric(metric);
  }

  std::string type() const override { return "ivf_flat"; }
  std::string description() const override { return describe_ivf_flat(params_); }
  size_t memory_bytes() const override {
    std::shared_lock lock(mutex_);
    const auto& s = lists_.stats;
    return (lists_.vectors.size() + lists_.centroids.size()) * sizeof(float) +
           (lists_.arena.ids.size() + 3 * lists_.arena.begin.size()) * sizeof(int64_t) + ids_.memory_bytes() +
           (s.sq.size() + s.inv.size() + s.mean.size()) * sizeof(double);
  }

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
              MatrixView<float> values, MatrixView<int64_t> ids) const override {
    check_search(ctx, Q, lists_.dim, k, values, ids);
    const IvfSearchParams* own = own_search_params<IvfSearchParams>(sp, "ivf_flat", "IvfSearchParams");
    const int64_t lists = nprobe(own ? own->nprobe : 0);
    if (sp.allowed) check_allowed(*sp.allowed);
    std::shared_lock lock(mutex_);
    SearchOutput out(values, ids);
    if (lists_.size() == 0) {
      out.pad_all(metric_);
      out.deliver(ctx);
      return;
    }
    const Device device = backend_for(ctx, {Q.where}, "search").device();
    if (!sp.allowed)
      if (const std::vector<Context> shards = gpu_shard_contexts(ctx, {Q.where, values.where, ids.where});
          !shards.empty()) {
        if (gpu_split(lists_, shards, 2 * memory_bytes()) == GpuSplit::queries) {
          search_replicas(shards, Q, k, lists, values, ids);
        } else {
          search_shards(shards, Q, k, lists, values, ids);
        }
        if (sp.stats)
          for (int64_t r = 0; r < Q.rows; ++r) sp.stats->short_rows += ids.row(r)[k - 1] < 0 ? 1 : 0;
        return;
      }
    IvfSearchArgs args{&lists_, Q, k, lists, out.values(), out.ids()};
    std::optional<IdFilter> filter;
    if (sp.allowed) {
      if (!scan_filters(device, *sp.allowed, lists, k))
        return search_allowed(ctx, Q, k, metric_, lists_.rows(), allowed_rows(*sp.allowed), values, ids, sp.stats);
      filter.emplace(*sp.allowed);
      args.filter = &*filter;
    }
    device == Device::gpu ? cuda::ivf_flat_search(ctx, args) : cpu::ivf_flat_search(ctx, args);
    if (sp.stats)  // a row is padded exactly when its probed lists held fewer than k rows
      for (int64_t r = 0; r < Q.rows; ++r) sp.stats->short_rows += out.ids().row(r)[k - 1] < 0 ? 1 : 0;
    out.deliver(ctx);
  }

  void save(const std::string& path) const override {
    std::shared_lock lock(mutex_);
    const std::vector<int64_t> order = lists_.arena.compact_order();  // the file holds the compact form
    std::vector<int64_t> ids(order.size()), offsets;
    std::vector<float> vectors(order.size() * size_t(lists_.dim));
    for (size_t i = 0; i < order.size(); ++i) {
      ids[i] = lists_.arena.ids[size_t(order[i])];
      std::copy_n(lists_.vectors.data() + order[i] * lists_.dim, lists_.dim, vectors.data() + i * size_t(lists_.dim));
    }
    IndexFileWriter w;
    write_lists(w, "ivf_flat", describe_ivf_flat(params_), ids, offsets);
    w.add("vectors", vectors.data(), vectors.size() * sizeof(float));
    w.write(path);
  }

  void load(const IndexFile& f, const CommonHeader& h, const Context& ctx) {
    read_lists(f, h);
    lists_.vectors = read_array<float>(f, "vectors", h.size * h.dim);
    check_finite_section(f, "vectors", lists_.vectors);
    if (lists_.trained()) lists_.stats = row_stats(lists_.rows(), lists_.plan, cpu_threads(ctx));
  }

 private:
  /// Several GPUs holding the whole index each (GpuSplit::queries): a slice of the queries on
  /// each, searched as on one device. Under the shared lock.
  void search_replicas(const std::vector<Context>& shards, MatrixView<const float> Q, int64_t k, int64_t nprobe,
                       MatrixView<float> values, MatrixView<int64_t> ids) const {
    run_on_query_slices(shards, Q.rows, [&](const Context& on, RowRange r) {
      const IvfSearchArgs args{&lists_, view_rows(Q, r), k, nprobe, view_rows(values, r), view_rows(ids, r)};
      on.device == Device::gpu ? cuda::ivf_flat_search(on, args) : cpu::ivf_flat_search(on, args);
    });
  }

  /// Several GPUs (Context::gpu_ids): every GPU scans its slice of the same probed lists, and
  /// the shards' top-k merge by (key, id) into one GPU's answer. Under the shared lock.
  void search_shards(const std::vector<Context>& shards, MatrixView<const float> Q, int64_t k, int64_t nprobe,
                     MatrixView<float> values, MatrixView<int64_t> ids) const {
    const int64_t P = int64_t(shards.size());
    const std::shared_ptr<const SplitLists<IvfLists>> split = split_over(lists_, P);
    std::vector<ShardTopK> parts(shards.size());
    run_on_shards(P, [&](int64_t s) {
      const IvfLists& L = *split->lists[size_t(s)];
      ShardTopK& part = parts[size_t(s)];
      const int64_t ks = L.size() > 0 ? k : 0;
      part.values = Matrix<float>(Q.rows, ks);
      part.ids = Matrix<int64_t>(Q.rows, ks);
      if (ks == 0) return;
      const IvfSearchArgs args{&L, Q, k, nprobe, part.values.view(), part.ids.view()};
      const Context& on = shards[size_t(s)];
      on.device == Device::gpu ? cuda::ivf_flat_search(on, args) : cpu::ivf_flat_search(on, args);
    });
    const auto row_of = [&](int64_t id) -> const float* {
      return lists_.vectors.data() + lists_.arena.find(*ids_.find(id), id) * lists_.dim;
    };
    merge_shard_results(lists_.plan, Q, row_of, parts, k, worst_value(metric_), values, ids, cpu_threads(shards[0]));
  }

  IvfCore& core() noexcept override { return lists_; }
  const IvfCore& core() const noexcept override { return lists_; }
  ListArena::Columns& columns() override { return columns_; }

  int64_t default_sample() const override { return 256 * params_.nlist; }

  /// Pearson's cells are trained on mean-centred rows, the centring its k-NN uses.
  MatrixView<const float> training_rows(const Context& ctx, MatrixView<const float> T,
                                        Matrix<float>& holder) const override {
    if (metric_ != Metric::pearson) return T;
    const RowStats stats = row_stats(T, plan_metric(Metric::pearson), cpu_threads(ctx));
    holder = Matrix<float>(T.rows, T.cols);
    centre_rows(T.data, T.rows, T.cols, stats.mean.data(), holder.data());
    return holder.view();
  }

  void trained(const Context&, Matrix<float>&) override {}
  const float* stored_row(int64_t at) const override { return lists_.vectors.data() + at * lists_.dim; }

  std::vector<int64_t> stage(const Context& ctx, MatrixView<const float> X) override {
    staged_ = X;
    staged_stats_ = row_stats(X, lists_.plan, cpu_threads(ctx));
    return nearest_cells(ctx, X, lists_);
  }
  void put(int64_t at, int64_t i, int64_t) override { columns_.put(at, staged_, staged_stats_, i); }
  void unstage() override {
    staged_ = {};
    staged_stats_ = RowStats{};
  }

  IvfFlatParams params_;
  IvfLists lists_;
  IvfFlatColumns columns_;
  MatrixView<const float> staged_;  // the rows of the add in progress, and their statistics
  RowStats staged_stats_;
};

}  // namespace

std::string describe_ivf_flat(const IvfFlatParams& p) {
  std::string s = "ivf_flat,nlist=" + std::to_string(p.nlist);
  if (p.nprobe == kProbeFourFifths) s += ",nprobe=seed";
  if (p.nprobe > 0) s += ",nprobe=" + std::to_string(p.nprobe);
  if (p.train_sample > 0) s += ",train_sample=" + std::to_string(p.train_sample);
  s += ",iterations=" + std::to_string(p.iterations) + ",seed=" + std::to_string(p.seed);
  return s;
}

std::unique_ptr<Index> make_ivf_flat_index(int64_t dim, Metric metric, const IvfFlatParams& p) {
  return std::make_unique<IvfFlatIndex>(dim, metric, p);
}

std::unique_ptr<Index> load_ivf_flat_index(const IndexFile& f, const IvfFlatParams& p) {
  const CommonHeader h = read_common(f, "ivf_flat");
  auto index = std::make_unique<IvfFlatIndex>(h.dim, h.metric, p);
  index->load(f, h, Context{});
  return index;
}

}  // namespace simkit::detail
