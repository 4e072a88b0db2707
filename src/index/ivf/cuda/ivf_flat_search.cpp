// GPU ivf_flat search: the lists uploaded once per index version in the interleaved layout
// (ivf_flat_kernels.hpp), resident when they fit half the working budget, else kept on the host
// and uploaded a segment of whole lists at a time per batch; the queries padded (centred for
// pearson) and scanned a block per (list, up to kScanQueries queries that probe it). The
// batching, probing, merge and ranking are the shared driver's (ivf_device_search.hpp), which
// ranks by knn's rule: the result is what the CPU backend returns, and with nprobe = nlist what
// flat returns.

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/resources.hpp"
#include "index/ivf/cuda/ivf_device_search.hpp"
#include "index/ivf/cuda/ivf_flat_kernels.hpp"
#include "index/ivf/ivf_searchers.hpp"

namespace simkit::detail::cuda {

namespace {

/// The device copy of one IvfLists (see ivf_flat_kernels.hpp for the layout).
class DeviceLists final : public IvfDeviceLists {
 public:
  /// With `stream`, the interleaved rows stay in host memory (inter_host) and each search
  /// uploads them a segment at a time; the row-major rows are not uploaded at all (the
  /// re-score then runs on the host).
  DeviceLists(const Context& ctx, const IvfLists& arena, bool stream)
      : gpu_id(ctx.gpu_id),
        streamed(stream),
        host(&compact_view(arena, packed)),
        dp4((host->dim + 3) / 4),
        group_start(group_starts(host->arena)),
        ranks(ctx, host->arena) {
    const IvfLists& L = *host;
    const int64_t n = L.size(), d = L.dim, nlist = L.nlist, dp = dp4 * 4;
    std::vector<float> inter(size_t(group_start.back() * 32 * dp), 0.f);
    for (int64_t l = 0; l < nlist; ++l)
      for (int64_t pos = L.arena.begin[size_t(l)]; pos < L.arena.end[size_t(l)]; ++pos) {
        const int64_t j = pos - L.arena.begin[size_t(l)], g = group_start[size_t(l)] + j / 32, lane = j % 32;
        const float* x = L.vectors.data() + pos * d;
        for (int64_t t = 0; t < d; ++t) inter[size_t(((g * dp4 + t / 4) * 32 + lane) * 4 + t % 4)] = x[t];
      }
    std::vector<float> aux(size_t(n), 0.f);
    const std::vector<double>& src = L.plan.expanded ? L.stats.sq : L.stats.inv;
    if (!src.empty())
      for (int64_t i = 0; i < n; ++i) aux[size_t(i)] = float(src[size_t(i)]);
    if (streamed) {
      inter_host = std::move(inter);
    } else {
      inter_d = upload(ctx, inter);
      rows_d = upload(ctx, L.vectors);
    }
    aux_d = upload(ctx, aux);
    group_start_d = upload(ctx, group_start);
    row_start_d = upload(ctx, L.arena.offsets());
    centroids_d = upload(ctx, L.centroids);
  }

  /// Bytes the resident form takes beyond the small per-row arrays: interleaved plus row-major rows.
  static size_t resident_bytes(const IvfLists& L) {
    return size_t(group_starts(L.arena).back()) * 32 * size_t((L.dim + 3) / 4 * 4) * 4 + size_t(L.size() * L.dim) * 4;
  }

  int gpu_id;
  bool streamed;
  std::unique_ptr<IvfLists> packed;  // the compact copy, when the index's arena is not compact
  const IvfLists* host;              // the compact lists the device copy mirrors (positions index them)
  int64_t dp4;
  std::vector<int64_t> group_start;
  IvfDeviceRanks ranks;
  std::vector<float> inter_host;  // streamed only
  DeviceMatrix<float> inter_d, aux_d, rows_d, centroids_d;
  DeviceMatrix<int64_t> group_start_d, row_start_d;
};

IvfKey key_for(const MetricPlan& plan) {
  if (!plan.product) return IvfKey::l1;
  if (plan.expanded) return IvfKey::sqdist;
  if (plan.prep != RowPrep::none) return IvfKey::scaled;
  return IvfKey::dot;
}

/// The list scan: work items of up to kScanQueries queries of one list, over the resident
/// lists or over segments of whole lists streamed into a buffer.
class FlatScanner final : public IvfListScanner {
 public:
  FlatScanner(const DeviceLists& D, size_t budget) : D_(D), L_(*D.host) {
    if (!D.streamed) return;
    // A segment buffer of whole lists: at least the largest list, else a quarter of the budget.
    size_t largest = 0;
    for (int64_t l = 0; l < L_.nlist; ++l) largest = std::max(largest, group_bytes(l, l + 1));
    segment_bytes_ = std::max(largest, std::min(D.inter_host.size() * 4, budget / 4));
  }

  int64_t prepared_cols() const override { return 4 * D_.dp4; }
  bool probes_prepared() const override { return false; }
  size_t fixed_bytes() const override { return size_t(L_.nlist) * 20 + segment_bytes_ + 4 * Carver::alignment; }
  size_t bytes_per_query(int64_t nprobe) const override { return size_t(nprobe) * 20; }
  void carve(Carver& c, int64_t batch, int64_t nprobe) override {
    const int64_t max_items = batch * nprobe / kScanQueries + L_.nlist + 1;
    item_list_d_ = c.take<int64_t>(size_t(max_items));
    item_first_d_ = c.take<int64_t>(size_t(max_items));
    item_count_d_ = c.take<int32_t>(size_t(max_items));
    segment_ = D_.streamed ? c.take<float>(segment_bytes_ / 4) : nullptr;
  }
  void prepare(const float* Q, int64_t rows, float* prepared, cudaStream_t s) const override {
    ivf_prepare_queries(Q, rows, L_.dim, 4 * D_.dp4, L_.plan.prep == RowPrep::centre_normalize, prepared, s);
  }
  void scan(const IvfScanBatch& b, cudaStream_t s) override;

 private:
  size_t group_bytes(int64_t l0, int64_t l1) const {
    return size_t(D_.group_start[size_t(l1)] - D_.group_start[size_t(l0)]) * 32 * size_t(D_.dp4) * 16;
  }

  const DeviceLists& D_;
  const IvfLists& L_;
  size_t segment_bytes_ = 0;
  int64_t *item_list_d_ = nullptr, *item_first_d_ = nullptr;
  int32_t* item_count_d_ = nullptr;
  float* segment_ = nullptr;
  std::vector<int64_t> item_list_, item_first_;
  std::vector<int32_t> item_count_;
};

void FlatScanner::scan(const IvfScanBatch& b, cudaStream_t s) {
  const std::vector<int64_t>& start = *b.start;
  const int64_t nlist = L_.nlist;
  item_list_.clear(), item_first_.clear(), item_count_.clear();
  for (int64_t l = 0; l < nlist; ++l)
    for (int64_t p = start[size_t(l)]; p < start[size_t(l + 1)]; p += kScanQueries) {
      item_list_.push_back(l);
      item_first_.push_back(p);
      item_count_.push_back(int32_t(std::min<int64_t>(kScanQueries, start[size_t(l + 1)] - p)));
    }
  const int64_t items = int64_t(item_list_.size());
  auto up = [&](void* dst, const void* src, size_t bytes) {
    check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  };
  up(item_list_d_, item_list_.data(), size_t(items) * 8);
  up(item_first_d_, item_first_.data(), size_t(items) * 8);
  up(item_count_d_, item_count_.data(), size_t(items) * 4);
  const IvfScanArgs args{reinterpret_cast<const float4*>(D_.inter_d.view().data),
                         0,
                         D_.dp4,
                         D_.group_start_d.view().data,
                         D_.row_start_d.view().data,
                         D_.aux_d.view().data,
                         D_.ranks.rank_of_pos.view().data,
                         reinterpret_cast<const float4*>(b.prepared),
                         item_list_d_,
                         item_first_d_,
                         item_count_d_,
                         b.pairs,
                         b.nprobe,
                         b.kc,
                         b.slot_keys,
                         b.slot_ranks,
                         b.mask};
  const IvfKey key = key_for(L_.plan);
  if (!D_.streamed) return ivf_scan(key, b.capacity, items, args, s);
  // Segments of consecutive lists that fit the buffer: upload, scan their items, next.
  int64_t item = 0;
  for (int64_t l0 = 0; l0 < nlist;) {
    int64_t l1 = l0 + 1;
    while (l1 < nlist && group_bytes(l0, l1 + 1) <= segment_bytes_) ++l1;
    const int64_t first = item;
    while (item < items && item_list_[size_t(item)] < l1) ++item;
    if (item > first) {
      const int64_t g0 = D_.group_start[size_t(l0)];
      up(segment_, D_.inter_host.data() + size_t(g0) * 32 * size_t(4 * D_.dp4), group_bytes(l0, l1));
      IvfScanArgs part = args;
      part.inter = reinterpret_cast<const float4*>(segment_);
      part.group_base = g0;
      part.item_list += first, part.item_first += first, part.item_count += first;
      ivf_scan(key, b.capacity, item - first, part, s);
    }
    l0 = l1;
  }
}

}  // namespace

void ivf_flat_search(const Context& ctx, const IvfSearchArgs& a) {
  const IvfLists& given = *a.lists;
  // At least k slots even when the index holds fewer rows: sort_output writes k of kc, and
  // the slots never filled come out padded.
  const int64_t kc = std::max(given.plan.candidates(a.k, given.size()), a.k);
  if (kc > kIvfMaxCandidates) {  // beyond what the device scan keeps: the CPU backend
    Matrix<float> q;
    IvfSearchArgs h = a;
    h.Q = host_queries(ctx, a.Q, q);
    Context host = ctx;
    host.device = Device::cpu;
    return cpu::ivf_flat_search(host, h);
  }
  IvfDeviceDriver driver(ctx);
  const size_t budget = driver.budget();
  const std::shared_ptr<const DeviceLists> D = cached_device_copy<DeviceLists>(
      given, ctx.gpu_id, [&](const DeviceLists& have) { return have.gpu_id == ctx.gpu_id; },
      [&] { return std::make_shared<const DeviceLists>(ctx, given, DeviceLists::resident_bytes(given) > budget / 2); });
  const IvfLists& L = *D->host;
  FlatScanner scanner(*D, budget);
  IvfDeviceSearch s;
  s.lists = &L;
  s.given = &given.arena;
  s.ranks = &D->ranks;
  s.centroids = D->centroids_d.view().data;
  s.Q = a.Q, s.k = a.k, s.nprobe = a.nprobe, s.kc = kc;
  s.values = a.values, s.ids = a.ids;
  s.filter = a.filter;
  // l1 scan keys are already the GPU k-NN's values (column-order float32 sums).
  s.rerank = L.plan.rescores() ? IvfRerank::exact : IvfRerank::scan_keys;
  s.rows_device = D->streamed ? nullptr : D->rows_d.view().data;
  s.rows_host = L.vectors.data();
  s.what = "ivf_flat search";
  driver.run(s, scanner);
}

}  // namespace simkit::detail::cuda
