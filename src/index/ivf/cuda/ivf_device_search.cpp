#include "index/ivf/cuda/ivf_device_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/exact_metric.hpp"
#include "core/rescore.hpp"
#include "cuda/rescore.hpp"
#include "cuda/select/top_k_lists.hpp"
#include "index/ivf/cuda/filter_mask.hpp"
#include "index/ivf/probe_pairs.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int64_t kEmpty = std::numeric_limits<int64_t>::max();

void copy_sync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

/// The device scratch of one batch.
struct BatchBuffers {
  float *q_dev, *prepared, *probe_values, *slot_keys, *cand_keys, *l1_keys, *out_values, *final_values;
  int64_t *probes, *pairs, *slot_ranks, *cand_ranks, *cand_pos, *out_ranks, *final_ids;
  double* exact;

  BatchBuffers(Carver& c, int64_t mb, int64_t d, int64_t pd, int64_t nprobe, int64_t kc, int64_t k, bool q_host) {
    q_dev = q_host ? c.take<float>(size_t(mb * d)) : nullptr;
    prepared = c.take<float>(size_t(mb * pd));
    probe_values = c.take<float>(size_t(mb * nprobe));
    probes = c.take<int64_t>(size_t(mb * nprobe));
    pairs = c.take<int64_t>(size_t(mb * nprobe));
    slot_keys = c.take<float>(size_t(mb * nprobe * kc));
    slot_ranks = c.take<int64_t>(size_t(mb * nprobe * kc));
    cand_keys = c.take<float>(size_t(mb * kc));
    cand_ranks = c.take<int64_t>(size_t(mb * kc));
    cand_pos = c.take<int64_t>(size_t(mb * kc));
    exact = c.take<double>(size_t(mb * kc));
    l1_keys = c.take<float>(size_t(mb * kc));
    out_values = c.take<float>(size_t(mb * k));
    out_ranks = c.take<int64_t>(size_t(mb * k));
    final_values = c.take<float>(size_t(mb * k));
    final_ids = c.take<int64_t>(size_t(mb * k));
  }
  /// What the constructor takes per query, and the alignment slack of its 16 arrays.
  static size_t per_query(int64_t d, int64_t pd, int64_t nprobe, int64_t kc, int64_t k, bool q_host) {
    return size_t(q_host ? d * 4 : 0) + size_t(pd) * 4 + size_t(nprobe) * 20 + size_t(nprobe * kc) * 12 +
           size_t(kc) * 32 + size_t(k) * 24;
  }
  static constexpr size_t kSlack = 16 * Carver::alignment;
};

/// Step 4 on the host, when the rows are there: each query's kc candidates re-scored and
/// ranked by (key, id) as core/rescore.hpp, then ranks turned into ids.
void rank_on_host(const IvfDeviceSearch& s, const float* Qb, int64_t q0, int64_t b, const int64_t* cand_ranks,
                  float worst, cudaStream_t stream) {
  const IvfCore& L = *s.lists;
  const int64_t d = L.dim, k = s.k, kc = s.kc;
  std::vector<int64_t> ranks(size_t(b * kc));
  std::vector<float> q(size_t(b * d));
  copy_sync(ranks.data(), cand_ranks, ranks.size() * 8, cudaMemcpyDeviceToHost, stream);
  copy_sync(q.data(), Qb, q.size() * 4, cudaMemcpyDeviceToHost, stream);
  std::vector<double> keys(size_t(b * kc));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 0; i < b * kc; ++i) {
    const int64_t rank = ranks[size_t(i)];
    if (rank == kEmpty) {
      keys[size_t(i)] = std::numeric_limits<double>::infinity();
      continue;
    }
    const float* x = s.rows_host + s.ranks->pos_of_rank_host[size_t(rank)] * d;
    const float* qi = q.data() + (i / kc) * d;
    keys[size_t(i)] = s.rerank == IvfRerank::exact ? exact_key(L.plan.exact, qi, x, d) : l1_column_order(qi, x, d);
  }
  float* values = s.values.row(q0);
  int64_t* ids = s.ids.row(q0);
  rank_exact_rows(L.plan, keys.data(), ranks.data(), b, kc, k, values, ids);
  for (int64_t i = 0; i < b * k; ++i) {
    if (ids[i] < 0 || ids[i] == kEmpty) {
      ids[i] = -1, values[i] = worst;
    } else {
      ids[i] = s.ranks->uid_of_rank_host[size_t(ids[i])];
    }
  }
}

/// Step 4 on the device: the sorted best k as (value, rank), then ids and padding, copied down.
void rank_on_device(const IvfDeviceSearch& s, const BatchBuffers& w, const float* Qb, int64_t q0, int64_t b,
                    float worst, cudaStream_t stream) {
  const IvfCore& L = *s.lists;
  const int64_t d = L.dim, k = s.k, kc = s.kc;
  const int64_t* uid = s.ranks->uid_of_rank.view().data;
  if (s.rerank == IvfRerank::scan_keys) {
    sort_output(w.cand_keys, w.cand_ranks, kc, b, kc, k, KeyToValue{false, false}, w.out_values, w.out_ranks, stream);
    if (s.keys.data != nullptr)
      check_cuda(cudaMemcpyAsync(s.keys.row(q0), w.out_values, size_t(b * k) * 4, cudaMemcpyDeviceToHost, stream),
                 "cudaMemcpyAsync");
    ivf_finish(w.out_ranks, w.out_values, b * k, uid, s.value, worst, w.final_ids, w.final_values, stream);
  } else {
    ivf_lookup(w.cand_ranks, b * kc, s.ranks->pos_of_rank.view().data, kEmpty, w.cand_pos, stream);
    if (s.rerank == IvfRerank::exact) {
      rescore_keys(L.plan.exact, Qb, d, s.rows_device, d, d, w.cand_pos, kc, w.exact, kc, b, kc, stream);
      sort_output(w.exact, w.cand_ranks, kc, b, kc, k, KeyToValue{L.plan.negate, L.plan.root}, w.out_values,
                  w.out_ranks, stream);
    } else {
      ivf_l1_keys(Qb, s.rows_device, d, w.cand_pos, b, kc, w.l1_keys, stream);
      sort_output(w.l1_keys, w.cand_ranks, kc, b, kc, k, KeyToValue{false, false}, w.out_values, w.out_ranks, stream);
    }
    ivf_finish(w.out_ranks, w.out_values, b * k, uid, IvfValue::plain, worst, w.final_ids, w.final_values, stream);
  }
  check_cuda(cudaMemcpyAsync(s.values.row(q0), w.final_values, size_t(b * k) * 4, cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync");
  copy_sync(s.ids.row(q0), w.final_ids, size_t(b * k) * 8, cudaMemcpyDeviceToHost, stream);
}

}  // namespace

std::vector<int64_t> group_starts(const ListArena& arena) {
  const int64_t nlist = int64_t(arena.begin.size());
  std::vector<int64_t> start(size_t(nlist + 1), 0);
  for (int64_t l = 0; l < nlist; ++l) start[size_t(l + 1)] = start[size_t(l)] + (arena.length(l) + 31) / 32;
  return start;
}

IvfDeviceRanks::IvfDeviceRanks(const Context& ctx, const ListArena& compact) {
  const std::vector<int64_t>& ids = compact.ids;
  const size_t n = ids.size();
  std::vector<int64_t> rank_of_pos_host(n);
  pos_of_rank_host.resize(n);
  uid_of_rank_host.resize(n);
  std::iota(pos_of_rank_host.begin(), pos_of_rank_host.end(), int64_t{0});
  std::sort(pos_of_rank_host.begin(), pos_of_rank_host.end(),
            [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
  for (size_t r = 0; r < n; ++r) {
    rank_of_pos_host[size_t(pos_of_rank_host[r])] = int64_t(r);
    uid_of_rank_host[r] = ids[size_t(pos_of_rank_host[r])];
  }
  rank_of_pos = upload(ctx, rank_of_pos_host);
  pos_of_rank = upload(ctx, pos_of_rank_host);
  uid_of_rank = upload(ctx, uid_of_rank_host);
}

MatrixView<const float> host_queries(const Context& ctx, MatrixView<const float> Q, Matrix<float>& holder) {
  if (Q.where != Memory::device) return Q;
  holder = Matrix<float>(Q.rows, Q.cols);
  DeviceGuard guard(ctx.gpu_id);
  check_cuda(cudaMemcpy(holder.data(), Q.data, size_t(holder.size()) * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
  return holder.view();
}

IvfDeviceDriver::IvfDeviceDriver(const Context& ctx) : ctx_(ctx), call_(ctx), budget_(working_budget(ctx, call_.r())) {}

void IvfDeviceDriver::run(const IvfDeviceSearch& s, IvfListScanner& scanner) {
  const Context& ctx = ctx_;
  const IvfCore& L = *s.lists;
  const int64_t m = s.Q.rows, d = L.dim, k = s.k, nprobe = s.nprobe, nlist = L.nlist, kc = s.kc;
  const int64_t pd = scanner.prepared_cols();
  const bool q_host = s.Q.where == Memory::host;
  const bool host_rank = s.rerank != IvfRerank::scan_keys && s.rows_device == nullptr;
  Resources& r = call_.r();
  const cudaStream_t stream = call_.stream();
  const size_t budget = budget_;
  const DeviceFilterMask mask(s.filter, *s.given, s.ranks->uid_of_rank.view().data, s.ranks->rank_of_pos.view().data,
                              L.size(), stream);
  const size_t per_query = BatchBuffers::per_query(d, pd, nprobe, kc, k, q_host) + scanner.bytes_per_query(nprobe);
  const size_t fixed = BatchBuffers::kSlack + scanner.fixed_bytes();
  if (budget < fixed + per_query)
    throw Error(ErrorCode::out_of_memory, std::string(s.what) + ": one query needs " +
                                              std::to_string((fixed + per_query) >> 20) +
                                              " MiB of GPU working memory, more than the budget");
  // Batches of at most 16,384 queries keep the host's pair grouping small next to the scan.
  const int64_t mb = std::min<int64_t>({m, int64_t((budget - fixed) / per_query), 16384});
  r.arena.reserve(fixed + size_t(mb) * per_query, budget);
  Carver carve(r.arena);
  const BatchBuffers w(carve, mb, d, pd, nprobe, kc, k, q_host);
  scanner.carve(carve, mb, nprobe);

  std::vector<int64_t> probes_h, pairs_h, start(size_t(nlist + 1));
  const MetricPlan coarse = plan_metric(L.coarse);
  const float worst = L.plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  Context quiet = ctx;
  quiet.progress = nullptr;
  int64_t short_rows = 0, candidates = 0;

  for (int64_t q0 = 0; q0 < m; q0 += mb) {
    const int64_t b = std::min(mb, m - q0);
    const float* Qb = s.Q.data + q0 * d;
    if (q_host) {
      check_cuda(cudaMemcpyAsync(w.q_dev, Qb, size_t(b * d) * 4, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
      Qb = w.q_dev;
    }
    scanner.prepare(Qb, b, w.prepared, stream);
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");  // the coarse k-NN runs on its own streams

    // 1-2. Probes, then the pairs grouped by list.
    const float* probe_rows = scanner.probes_prepared() ? w.prepared : Qb;
    cuda_backend()->knn(quiet, KnnArgs{MatrixView<const float>{probe_rows, b, d, Memory::device},
                                       MatrixView<const float>{s.centroids, nlist, d, Memory::device}, nprobe, coarse,
                                       MatrixView<float>{w.probe_values, b, nprobe, Memory::device},
                                       MatrixView<int64_t>{w.probes, b, nprobe, Memory::device}});
    probes_h.resize(size_t(b * nprobe));
    copy_sync(probes_h.data(), w.probes, probes_h.size() * 8, cudaMemcpyDeviceToHost, stream);
    if (s.candidates)
      for (int64_t p : probes_h) candidates += L.arena.length(p);
    group_pairs_by_list(probes_h.data(), int64_t(probes_h.size()), nlist, start, pairs_h);
    check_cuda(cudaMemcpyAsync(w.pairs, pairs_h.data(), pairs_h.size() * 8, cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync");

    // 3. The family's scan, then each query's best kc.
    const int capacity = select_capacity(kc);
    scanner.scan(IvfScanBatch{b, nprobe, int(kc), capacity, w.prepared, w.probes, &start, w.pairs, w.slot_keys,
                              w.slot_ranks, mask.bits()},
                 stream);
    ivf_merge(capacity, b, nprobe * kc, int(kc), w.slot_keys, w.slot_ranks, w.cand_keys, w.cand_ranks, stream);

    // 4. Rank, then the outputs.
    if (host_rank) {
      rank_on_host(s, Qb, q0, b, w.cand_ranks, worst, stream);
    } else {
      rank_on_device(s, w, Qb, q0, b, worst, stream);
    }
    for (int64_t i = 0; i < b; ++i) short_rows += s.ids.row(q0 + i)[k - 1] < 0 ? 1 : 0;
    if (s.keys.data != nullptr)
      for (int64_t i = q0; i < q0 + b; ++i)
        for (int64_t j = 0; j < k; ++j)
          if (s.ids.row(i)[j] < 0) s.keys.row(i)[j] = std::numeric_limits<float>::infinity();
    if (ctx.progress) ctx.progress(double(q0 + b) / double(m));
  }
  call_.finish();
  if (s.short_rows) *s.short_rows += short_rows;
  if (s.candidates) *s.candidates += candidates;
}

}  // namespace simkit::detail::cuda
