// GPU ivf_flat search: the lists uploaded once per index version, then per batch of queries
//   1. the queries prepared (padded, centred for pearson) and their nprobe nearest centroids
//      found by this backend's exact k-NN;
//   2. the (query, probe) pairs grouped by list on the host (a counting sort of m x nprobe
//      small integers) into work items of up to kScanQueries queries of one list;
//   3. the list scan with its per-(query, probe) top-kc (ivf_scan.cu), then per query the best
//      kc of its nprobe slots;
//   4. knn's rule: those kc re-scored in float64 (rescore.cu) and ranked by (value, id) with
//      sort_output, the ranks turned into ids, short rows padded.
// The result is what the CPU backend returns, and with nprobe = nlist what flat returns.

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/exact_metric.hpp"
#include "core/rescore.hpp"
#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/rescore.hpp"
#include "cuda/resources.hpp"
#include "cuda/select/top_k_lists.hpp"
#include "index/ivf/cuda/filter_mask.hpp"
#include "index/ivf/cuda/ivf_kernels.hpp"
#include "index/ivf/ivf_searchers.hpp"
#include "index/ivf/probe_pairs.hpp"

namespace simkit::detail::cuda {

namespace {

/// The device copy of one IvfLists (see ivf_kernels.hpp for the layout).
class DeviceLists final : public IvfDeviceLists {
 public:
  /// With `stream`, the interleaved rows stay in host memory (inter_host) and each search
  /// uploads them a segment at a time; the row-major rows are not uploaded at all (the
  /// re-score then runs on the host).
  DeviceLists(const Context& ctx, const IvfLists& arena, bool stream)
      : gpu_id(ctx.gpu_id), streamed(stream), host(&compact_view(arena, packed)) {
    const IvfLists& L = *host;
    const int64_t n = L.size(), d = L.dim, nlist = L.nlist;
    dp4 = (d + 3) / 4;
    const int64_t dp = dp4 * 4;
    group_start.assign(size_t(nlist + 1), 0);
    for (int64_t l = 0; l < nlist; ++l)
      group_start[size_t(l + 1)] = group_start[size_t(l)] + (L.arena.length(l) + 31) / 32;
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
    const size_t count = static_cast<size_t>(n);
    std::vector<int64_t> pos_of_rank(count), rank_of_pos(count), uid_of_rank(count);
    std::iota(pos_of_rank.begin(), pos_of_rank.end(), int64_t{0});
    std::sort(pos_of_rank.begin(), pos_of_rank.end(),
              [&](int64_t a, int64_t b) { return L.arena.ids[size_t(a)] < L.arena.ids[size_t(b)]; });
    for (int64_t r = 0; r < n; ++r) {
      rank_of_pos[size_t(pos_of_rank[size_t(r)])] = r;
      uid_of_rank[size_t(r)] = L.arena.ids[size_t(pos_of_rank[size_t(r)])];
    }
    auto up = [&](auto& dst, const auto& host) {
      using T = typename std::decay_t<decltype(host)>::value_type;
      dst = DeviceMatrix<T>(ctx, MatrixView<const T>{host.data(), int64_t(host.size()), 1});
    };
    if (streamed) {
      inter_host = std::move(inter);
      pos_of_rank_host = pos_of_rank;
      uid_of_rank_host = uid_of_rank;
    } else {
      up(inter_d, inter);
      up(rows_d, L.vectors);
    }
    up(aux_d, aux);
    up(group_start_d, group_start);
    up(row_start_d, L.arena.offsets());
    up(rank_of_pos_d, rank_of_pos);
    up(pos_of_rank_d, pos_of_rank);
    up(uid_of_rank_d, uid_of_rank);
    up(centroids_d, L.centroids);
  }

  /// Bytes the resident form takes beyond the small per-row arrays: interleaved plus row-major rows.
  static size_t resident_bytes(const IvfLists& L) {
    int64_t groups = 0;
    for (int64_t l = 0; l < L.nlist; ++l) groups += (L.arena.length(l) + 31) / 32;
    return size_t(groups) * 32 * size_t((L.dim + 3) / 4 * 4) * 4 + size_t(L.size() * L.dim) * 4;
  }

  int gpu_id;
  bool streamed;
  std::unique_ptr<IvfLists> packed;  // the compact copy, when the index's arena is not compact
  const IvfLists* host;              // the compact lists the device copy mirrors (positions index them)
  int64_t dp4 = 0;
  std::vector<int64_t> group_start;
  std::vector<float> inter_host;  // streamed only
  std::vector<int64_t> pos_of_rank_host, uid_of_rank_host;
  DeviceMatrix<float> inter_d, aux_d, rows_d, centroids_d;
  DeviceMatrix<int64_t> group_start_d, row_start_d, rank_of_pos_d, pos_of_rank_d, uid_of_rank_d;
};

/// The cached device form, made on first use: resident when it takes at most half the working
/// budget, else streamed.
std::shared_ptr<const DeviceLists> device_lists(const Context& ctx, const IvfLists& L, size_t budget) {
  std::lock_guard g(L.device_mutex);
  auto have = std::dynamic_pointer_cast<const DeviceLists>(L.device);
  if (!have || have->gpu_id != ctx.gpu_id) {
    have = std::make_shared<const DeviceLists>(ctx, L, DeviceLists::resident_bytes(L) > budget / 2);
    L.device = std::const_pointer_cast<DeviceLists>(have);
  }
  return have;
}

IvfKey key_for(const MetricPlan& plan) {
  if (!plan.product) return IvfKey::l1;
  if (plan.expanded) return IvfKey::sqdist;
  if (plan.prep != RowPrep::none) return IvfKey::scaled;
  return IvfKey::dot;
}

void copy_sync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

/// The host path for what the device scan does not keep (kc beyond kIvfMaxCandidates).
void search_on_host(const Context& ctx, const IvfSearchArgs& a) {
  Matrix<float> q;
  IvfSearchArgs h = a;
  if (a.Q.where == Memory::device) {
    q = Matrix<float>(a.Q.rows, a.Q.cols);
    DeviceGuard guard(ctx.gpu_id);
    check_cuda(cudaMemcpy(q.data(), a.Q.data, size_t(q.size()) * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    h.Q = q.view();
  }
  Context host = ctx;
  host.device = Device::cpu;
  cpu::ivf_flat_search(host, h);
}

/// Step 4 on the host, for streamed lists (the rows are not on the device): each query's kc
/// candidates re-scored against the host rows and ranked by (value, id), as core/rescore.hpp.
void rank_on_host(const IvfLists& L, const DeviceLists& D, const IvfSearchArgs& a, int64_t q0, int64_t b, int64_t kc,
                  const float* cand_keys, const int64_t* cand_ranks, cudaStream_t s) {
  const int64_t d = L.dim, k = a.k;
  std::vector<float> keys_f(size_t(b * kc)), q;
  std::vector<int64_t> ranks(size_t(b * kc));
  check_cuda(cudaMemcpyAsync(keys_f.data(), cand_keys, keys_f.size() * 4, cudaMemcpyDeviceToHost, s),
             "cudaMemcpyAsync");
  copy_sync(ranks.data(), cand_ranks, ranks.size() * 8, cudaMemcpyDeviceToHost, s);
  const float* Q = a.Q.data + q0 * d;
  if (a.Q.where == Memory::device) {
    q.resize(size_t(b * d));
    copy_sync(q.data(), Q, q.size() * 4, cudaMemcpyDeviceToHost, s);
    Q = q.data();
  }
  constexpr int64_t kEmpty = std::numeric_limits<int64_t>::max();
  std::vector<double> keys(size_t(b * kc));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 0; i < b * kc; ++i) {
    const int64_t rank = ranks[size_t(i)];
    if (rank == kEmpty) {
      keys[size_t(i)] = std::numeric_limits<double>::infinity();
    } else if (L.plan.rescores()) {
      const int64_t pos = D.pos_of_rank_host[size_t(rank)];
      keys[size_t(i)] = exact_key(L.plan.exact, Q + (i / kc) * d, L.vectors.data() + pos * d, d);
    } else {
      keys[size_t(i)] = double(keys_f[size_t(i)]);
    }
  }
  float* values = a.values.row(q0);
  int64_t* ids = a.ids.row(q0);
  rank_exact_rows(L.plan, keys.data(), ranks.data(), b, kc, k, values, ids);
  const float worst = L.plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < b * k; ++i) {
    if (ids[i] < 0 || ids[i] == kEmpty) {
      ids[i] = -1, values[i] = worst;
    } else {
      ids[i] = D.uid_of_rank_host[size_t(ids[i])];
    }
  }
}

}  // namespace

void ivf_flat_search(const Context& ctx, const IvfSearchArgs& a) {
  const int64_t m = a.Q.rows, d = a.lists->dim, k = a.k, nprobe = a.nprobe, nlist = a.lists->nlist;
  // At least k slots even when the index holds fewer rows: sort_output writes k of kc, and
  // the slots never filled come out padded.
  const int64_t kc = std::max(a.lists->plan.candidates(k, a.lists->size()), k);
  if (kc > kIvfMaxCandidates) return search_on_host(ctx, a);
  Call call(ctx);
  Resources& r = call.r();
  const cudaStream_t s = call.stream();
  const size_t budget = working_budget(ctx, r);
  const std::shared_ptr<const DeviceLists> D = device_lists(ctx, *a.lists, budget);
  const IvfLists& L = *D->host;  // positions on the device index the compact lists
  const DeviceFilterMask mask(a.filter, a.lists->arena, D->uid_of_rank_d.view().data, D->rank_of_pos_d.view().data,
                              L.size(), s);
  const int64_t dp4 = D->dp4, dp = 4 * dp4;
  const int capacity = select_capacity(kc);
  // Streamed: a segment buffer of whole lists, at least the largest list, else a quarter of the budget.
  size_t segment_bytes = 0;
  if (D->streamed) {
    size_t largest = 0;
    for (int64_t l = 0; l < nlist; ++l)
      largest =
          std::max(largest, size_t(D->group_start[size_t(l + 1)] - D->group_start[size_t(l)]) * 32 * size_t(dp) * 4);
    segment_bytes = std::max(largest, std::min(D->inter_host.size() * 4, budget / 4));
  }
  const bool q_host = a.Q.where == Memory::host;
  const size_t per_query = size_t(q_host ? d * 4 : 0) + size_t(dp) * 4 + size_t(nprobe) * (4 + 8 + 8 + 20) +
                           size_t(nprobe) * size_t(kc) * 12 + size_t(kc) * 28 + size_t(k) * 24;
  const size_t fixed = size_t(nlist) * 20 + segment_bytes + 32 * Carver::alignment;
  if (budget < fixed + per_query)
    throw Error(ErrorCode::out_of_memory, "ivf_flat search: one query needs " +
                                              std::to_string((fixed + per_query) >> 20) +
                                              " MiB of GPU working memory, more than the budget");
  // Batches of at most 16,384 queries keep the host's pair grouping small next to the scan.
  const int64_t mb = std::min<int64_t>({m, int64_t((budget - fixed) / per_query), 16384});
  r.arena.reserve(fixed + size_t(mb) * per_query, budget);

  Carver carve(r.arena);
  float* q_dev = q_host ? carve.take<float>(size_t(mb * d)) : nullptr;
  float* q_prep = carve.take<float>(size_t(mb * dp));
  float* probe_values = carve.take<float>(size_t(mb * nprobe));
  int64_t* probes = carve.take<int64_t>(size_t(mb * nprobe));
  int64_t* pairs_d = carve.take<int64_t>(size_t(mb * nprobe));
  const int64_t max_items = mb * nprobe / kScanQueries + nlist + 1;
  int64_t* item_list_d = carve.take<int64_t>(size_t(max_items));
  int64_t* item_first_d = carve.take<int64_t>(size_t(max_items));
  int32_t* item_count_d = carve.take<int32_t>(size_t(max_items));
  float* slot_keys = carve.take<float>(size_t(mb * nprobe * kc));
  int64_t* slot_ranks = carve.take<int64_t>(size_t(mb * nprobe * kc));
  float* cand_keys = carve.take<float>(size_t(mb * kc));
  int64_t* cand_ranks = carve.take<int64_t>(size_t(mb * kc));
  int64_t* cand_pos = carve.take<int64_t>(size_t(mb * kc));
  double* exact = carve.take<double>(size_t(mb * kc));
  float* out_values = carve.take<float>(size_t(mb * k));
  int64_t* out_ranks = carve.take<int64_t>(size_t(mb * k));
  float* final_values = carve.take<float>(size_t(mb * k));
  int64_t* final_ids = carve.take<int64_t>(size_t(mb * k));
  float* segment = D->streamed ? carve.take<float>(segment_bytes / 4) : nullptr;

  std::vector<int64_t> probes_h, pairs_h, start(size_t(nlist + 1)), item_list, item_first;
  std::vector<int32_t> item_count;
  const MetricPlan coarse = plan_metric(L.coarse);
  const float worst = L.plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  Context quiet = ctx;
  quiet.progress = nullptr;

  for (int64_t q0 = 0; q0 < m; q0 += mb) {
    const int64_t b = std::min(mb, m - q0);
    const float* Qb = a.Q.data + q0 * d;
    if (q_host) {
      check_cuda(cudaMemcpyAsync(q_dev, Qb, size_t(b * d) * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
      Qb = q_dev;
    }
    ivf_prepare_queries(Qb, b, d, dp, L.plan.prep == RowPrep::centre_normalize, q_prep, s);
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");  // the coarse k-NN runs on its own streams

    // 1-2. Probes, then the pairs grouped by list.
    cuda_backend()->knn(quiet, KnnArgs{MatrixView<const float>{Qb, b, d, Memory::device},
                                       MatrixView<const float>{D->centroids_d.view().data, nlist, d, Memory::device},
                                       nprobe, coarse, MatrixView<float>{probe_values, b, nprobe, Memory::device},
                                       MatrixView<int64_t>{probes, b, nprobe, Memory::device}});
    probes_h.resize(size_t(b * nprobe));
    copy_sync(probes_h.data(), probes, probes_h.size() * 8, cudaMemcpyDeviceToHost, s);
    group_pairs_by_list(probes_h.data(), int64_t(probes_h.size()), nlist, start, pairs_h);
    item_list.clear(), item_first.clear(), item_count.clear();
    for (int64_t l = 0; l < nlist; ++l)
      for (int64_t p = start[size_t(l)]; p < start[size_t(l + 1)]; p += kScanQueries) {
        item_list.push_back(l);
        item_first.push_back(p);
        item_count.push_back(int32_t(std::min<int64_t>(kScanQueries, start[size_t(l + 1)] - p)));
      }
    const int64_t items = int64_t(item_list.size());
    check_cuda(cudaMemcpyAsync(pairs_d, pairs_h.data(), pairs_h.size() * 8, cudaMemcpyHostToDevice, s),
               "cudaMemcpyAsync");
    check_cuda(cudaMemcpyAsync(item_list_d, item_list.data(), size_t(items) * 8, cudaMemcpyHostToDevice, s),
               "cudaMemcpyAsync");
    check_cuda(cudaMemcpyAsync(item_first_d, item_first.data(), size_t(items) * 8, cudaMemcpyHostToDevice, s),
               "cudaMemcpyAsync");
    check_cuda(cudaMemcpyAsync(item_count_d, item_count.data(), size_t(items) * 4, cudaMemcpyHostToDevice, s),
               "cudaMemcpyAsync");

    // 3. Scan, then each query's best kc.
    const IvfScanArgs args{reinterpret_cast<const float4*>(D->inter_d.view().data),
                           0,
                           dp4,
                           D->group_start_d.view().data,
                           D->row_start_d.view().data,
                           D->aux_d.view().data,
                           D->rank_of_pos_d.view().data,
                           reinterpret_cast<const float4*>(q_prep),
                           item_list_d,
                           item_first_d,
                           item_count_d,
                           pairs_d,
                           nprobe,
                           int(kc),
                           slot_keys,
                           slot_ranks,
                           mask.bits()};
    if (!D->streamed) {
      ivf_scan(key_for(L.plan), capacity, items, args, s);
    } else {
      // Segments of consecutive lists that fit the buffer: upload, scan their items, next.
      int64_t item = 0;
      for (int64_t l0 = 0; l0 < nlist;) {
        int64_t l1 = l0 + 1;
        const int64_t g0 = D->group_start[size_t(l0)];
        while (l1 < nlist && size_t(D->group_start[size_t(l1 + 1)] - g0) * 32 * size_t(dp) * 4 <= segment_bytes) ++l1;
        const int64_t first = item;
        while (item < items && item_list[size_t(item)] < l1) ++item;
        if (item > first) {
          const size_t bytes = size_t(D->group_start[size_t(l1)] - g0) * 32 * size_t(dp) * 4;
          check_cuda(cudaMemcpyAsync(segment, D->inter_host.data() + size_t(g0) * 32 * size_t(dp), bytes,
                                     cudaMemcpyHostToDevice, s),
                     "cudaMemcpyAsync");
          IvfScanArgs part = args;
          part.inter = reinterpret_cast<const float4*>(segment);
          part.group_base = g0;
          part.item_list += first, part.item_first += first, part.item_count += first;
          ivf_scan(key_for(L.plan), capacity, item - first, part, s);
        }
        l0 = l1;
      }
    }
    ivf_merge(capacity, b, nprobe * kc, int(kc), slot_keys, slot_ranks, cand_keys, cand_ranks, s);

    // 4. Re-score and rank.
    if (D->streamed) {
      rank_on_host(L, *D, a, q0, b, kc, cand_keys, cand_ranks, s);
      if (ctx.progress) ctx.progress(double(q0 + b) / double(m));
      continue;
    }
    if (L.plan.rescores()) {
      ivf_lookup(cand_ranks, b * kc, D->pos_of_rank_d.view().data, std::numeric_limits<int64_t>::max(), cand_pos, s);
      rescore_keys(L.plan.exact, Qb, d, D->rows_d.view().data, d, d, cand_pos, kc, exact, kc, b, kc, s);
      sort_output(exact, cand_ranks, kc, b, kc, k, KeyToValue{L.plan.negate, L.plan.root}, out_values, out_ranks, s);
    } else {
      sort_output(cand_keys, cand_ranks, kc, b, kc, k, KeyToValue{false, false}, out_values, out_ranks, s);
    }
    ivf_finish(out_ranks, out_values, b * k, D->uid_of_rank_d.view().data, worst, final_ids, final_values, s);
    check_cuda(cudaMemcpyAsync(a.values.row(q0), final_values, size_t(b * k) * 4, cudaMemcpyDeviceToHost, s),
               "cudaMemcpyAsync");
    copy_sync(a.ids.row(q0), final_ids, size_t(b * k) * 8, cudaMemcpyDeviceToHost, s);
    if (ctx.progress) ctx.progress(double(q0 + b) / double(m));
  }
  call.finish();
}

}  // namespace simkit::detail::cuda
