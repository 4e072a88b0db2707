// GPU ivf_pq search: the codes uploaded once per index version, then per batch of queries
//   1. the queries prepared into the coded space (ivf_pq_lists.hpp) and their nprobe nearest
//      centroids found by this backend's exact k-NN;
//   2. the (query, probe) pairs grouped by list on the host (a counting sort), so that the
//      blocks scanning one list run side by side and share its codes through L2;
//   3. per pair a lookup table and the list's codes scanned into its best kc (ivf_pq_scan.cu),
//      then per query the best kc of its nprobe slots (ivf_merge, shared with ivf_flat);
//   4. refine > 0: those kc re-scored against the original vectors by knn's rule (float64 keys,
//      l1 its float32 column-order sum) and ranked by (key, id), on the device or, when the
//      vectors stay on the host, there; refine = 0: the best k by (approximate key, id), the key
//      mapped to the metric's value.
// Where the device scan cannot serve the call the CPU backend does, on host copies: kc beyond
// kIvfMaxCandidates, a table beyond the shared memory a block may opt into, codes beyond half
// the working budget (no streaming yet: 10^7 rows at m = 32 take 0.32 GB).

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
#include "index/ivf/cuda/ivf_pq_kernels.hpp"
#include "index/ivf/ivf_searchers.hpp"
#include "index/ivf/probe_pairs.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int64_t kEmpty = std::numeric_limits<int64_t>::max();

/// The device copy of one IvfPqLists (layout in ivf_pq_kernels.hpp).
class PqDeviceLists final : public IvfDeviceLists {
 public:
  PqDeviceLists(const Context& ctx, const IvfPqLists& arena, bool with_vectors)
      : gpu_id(ctx.gpu_id), has_vectors(with_vectors), m4((arena.m + 3) / 4), host(&compact_view(arena, packed)) {
    const IvfPqLists& L = *host;
    const int64_t n = L.size(), m = L.m, nlist = L.nlist;
    std::vector<int64_t> group_start(size_t(nlist + 1), 0);
    for (int64_t l = 0; l < nlist; ++l)
      group_start[size_t(l + 1)] = group_start[size_t(l)] + (L.arena.length(l) + 31) / 32;
    // Bytes of word c of row `lane` in group g: ((g * m4 + c) * 32 + lane) * 4 + (j % 4), j = 4 c + ..
    std::vector<uint8_t> words(size_t(group_start.back() * m4 * 32 * 4), 0);
    for (int64_t l = 0; l < nlist; ++l)
      for (int64_t pos = L.arena.begin[size_t(l)]; pos < L.arena.end[size_t(l)]; ++pos) {
        const int64_t i = pos - L.arena.begin[size_t(l)], g = group_start[size_t(l)] + i / 32, lane = i % 32;
        const uint8_t* code = L.codes.data() + pos * m;
        for (int64_t j = 0; j < m; ++j) words[size_t(((g * m4 + j / 4) * 32 + lane) * 4 + j % 4)] = code[j];
      }
    // Ranks: positions ordered by id, so (key, rank) ties break to the lower id.
    std::vector<int64_t> rank_of_pos(static_cast<size_t>(n)), uid_of_rank(static_cast<size_t>(n));
    pos_of_rank_host.resize(size_t(n));
    std::iota(pos_of_rank_host.begin(), pos_of_rank_host.end(), int64_t(0));
    std::sort(pos_of_rank_host.begin(), pos_of_rank_host.end(),
              [&](int64_t a, int64_t b) { return L.arena.ids[size_t(a)] < L.arena.ids[size_t(b)]; });
    for (int64_t r = 0; r < n; ++r) {
      rank_of_pos[size_t(pos_of_rank_host[size_t(r)])] = r;
      uid_of_rank[size_t(r)] = L.arena.ids[size_t(pos_of_rank_host[size_t(r)])];
    }
    uid_of_rank_host = uid_of_rank;
    auto up = [&](auto& dst, const auto& host) {
      using T = typename std::decay_t<decltype(host)>::value_type;
      dst = DeviceMatrix<T>(ctx, MatrixView<const T>{host.data(), int64_t(host.size()), 1});
    };
    up(words_d, words);
    up(group_start_d, group_start);
    up(row_start_d, L.arena.offsets());
    up(rank_of_pos_d, rank_of_pos);
    up(pos_of_rank_d, pos_of_rank_host);
    up(uid_of_rank_d, uid_of_rank);
    up(centroids_d, L.centroids);
    up(codebooks_d, L.codebooks);
    if (has_vectors) up(vectors_d, L.vectors);
  }

  static size_t code_bytes(const IvfPqLists& L) {
    int64_t groups = 0;
    for (int64_t l = 0; l < L.nlist; ++l) groups += (L.arena.length(l) + 31) / 32;
    return size_t(groups) * 32 * size_t((L.m + 3) / 4) * 4 + size_t(L.size()) * 24 + L.centroids.size() * 4;
  }

  int gpu_id;
  bool has_vectors;
  int64_t m4;
  std::unique_ptr<IvfPqLists> packed;  // the compact copy, when the index's arena is not compact
  const IvfPqLists* host;              // the compact lists the device copy mirrors (positions index them)
  std::vector<int64_t> pos_of_rank_host, uid_of_rank_host;
  DeviceMatrix<uint8_t> words_d;
  DeviceMatrix<float> centroids_d, codebooks_d, vectors_d;
  DeviceMatrix<int64_t> group_start_d, row_start_d, rank_of_pos_d, pos_of_rank_d, uid_of_rank_d;
};

/// The cached device form, made on first use or when the re-rank's place changed.
std::shared_ptr<const PqDeviceLists> device_lists(const Context& ctx, const IvfPqLists& L, bool with_vectors) {
  std::lock_guard g(L.device_mutex);
  auto have = std::dynamic_pointer_cast<const PqDeviceLists>(L.device);
  if (!have || have->gpu_id != ctx.gpu_id || have->has_vectors != with_vectors) {
    have.reset();
    L.device.reset();  // the old copy's memory back before the new one is made
    have = std::make_shared<const PqDeviceLists>(ctx, L, with_vectors);
    L.device = std::const_pointer_cast<PqDeviceLists>(have);
  }
  return have;
}

PqForm form_of(PqTable t) {
  switch (t) {
    case PqTable::sqdist: return PqForm::sqdist;
    case PqTable::neg_dot: return PqForm::neg_dot;
    case PqTable::l1: break;
  }
  return PqForm::l1;
}

PqValue value_map(Metric metric) {
  switch (metric) {
    case Metric::l2: return PqValue::root;
    case Metric::cosine:
    case Metric::pearson: return PqValue::cosine;
    case Metric::dot: return PqValue::negate;
    case Metric::sqeuclidean:
    case Metric::l1: break;
  }
  return PqValue::plain;
}

void copy_sync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
  if (bytes == 0) return;
  check_cuda(cudaMemcpyAsync(dst, src, bytes, kind, s), "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

/// The l1 value the GPU k-NN gives: a float32 sum in column order (see pq_l1_keys).
double l1_column_order(const float* q, const float* x, int64_t d) {
  float acc = 0.f;
  for (int64_t t = 0; t < d; ++t) acc += std::fabs(q[t] - x[t]);
  return double(acc);
}

/// l1 re-ranked on the host gives the CPU k-NN's values, which fold partial sums differently
/// from the GPU's: the returned rows get the GPU's values (l1_column_order) and are re-ordered
/// by them, so a GPU search agrees with the GPU k-NN whichever side ranked it.
void l1_values_as_on_the_gpu(const IvfPqLists& L, const float* Q, const IvfPqSearchArgs& a) {
  std::vector<int64_t> wanted(a.ids.data, a.ids.data + a.ids.size());
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::vector<int64_t> pos(wanted.size(), -1);
  for (int64_t l = 0; l < L.nlist; ++l)
    for (int64_t p = L.arena.begin[size_t(l)]; p < L.arena.end[size_t(l)]; ++p) {
      const auto it = std::lower_bound(wanted.begin(), wanted.end(), L.arena.ids[size_t(p)]);
      if (it != wanted.end() && *it == L.arena.ids[size_t(p)]) pos[size_t(it - wanted.begin())] = p;
    }
  const int64_t d = L.dim, k = a.k;
  std::vector<std::pair<float, int64_t>> row;
  for (int64_t i = 0; i < a.Q.rows; ++i) {
    row.clear();
    for (int64_t c = 0; c < k && a.ids.row(i)[c] >= 0; ++c) {
      const int64_t id = a.ids.row(i)[c];
      const int64_t p = pos[size_t(std::lower_bound(wanted.begin(), wanted.end(), id) - wanted.begin())];
      row.emplace_back(float(l1_column_order(Q + i * d, L.vectors.data() + p * d, d)), id);
    }
    std::sort(row.begin(), row.end());
    for (size_t c = 0; c < row.size(); ++c) a.values.row(i)[c] = row[c].first, a.ids.row(i)[c] = row[c].second;
  }
}

/// What the device scan does not serve, on the CPU backend with host copies of the queries.
void search_on_host(const Context& ctx, const IvfPqSearchArgs& a) {
  Matrix<float> q;
  IvfPqSearchArgs h = a;
  if (a.Q.where == Memory::device) {
    q = Matrix<float>(a.Q.rows, a.Q.cols);
    DeviceGuard guard(ctx.gpu_id);
    check_cuda(cudaMemcpy(q.data(), a.Q.data, size_t(q.size()) * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    h.Q = q.view();
  }
  Context host = ctx;
  host.device = Device::cpu;
  cpu::ivf_pq_search(host, h);
  if (!a.lists->plan.rescores() && a.refine > 0) l1_values_as_on_the_gpu(*a.lists, h.Q.data, a);
}

/// Step 4 on the host, when the vectors stay there: each query's kc candidates re-scored
/// against the host rows and ranked by (key, id), as core/rescore.hpp.
void rank_on_host(const IvfPqLists& L, const PqDeviceLists& D, const IvfPqSearchArgs& a, int64_t q0, int64_t b,
                  int64_t kc, const int64_t* cand_ranks, float worst, cudaStream_t s) {
  const int64_t d = L.dim, k = a.k;
  std::vector<int64_t> ranks(size_t(b * kc));
  std::vector<float> q;
  copy_sync(ranks.data(), cand_ranks, ranks.size() * 8, cudaMemcpyDeviceToHost, s);
  const float* Q = a.Q.data + q0 * d;
  if (a.Q.where == Memory::device) {
    q.resize(size_t(b * d));
    copy_sync(q.data(), Q, q.size() * 4, cudaMemcpyDeviceToHost, s);
    Q = q.data();
  }
  std::vector<double> keys(size_t(b * kc));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 0; i < b * kc; ++i) {
    const int64_t rank = ranks[size_t(i)];
    if (rank == kEmpty) {
      keys[size_t(i)] = std::numeric_limits<double>::infinity();
      continue;
    }
    const float* x = L.vectors.data() + D.pos_of_rank_host[size_t(rank)] * d;
    const float* qi = Q + (i / kc) * d;
    keys[size_t(i)] = L.plan.rescores() ? exact_key(L.plan.exact, qi, x, d) : l1_column_order(qi, x, d);
  }
  float* values = a.values.row(q0);
  int64_t* ids = a.ids.row(q0);
  rank_exact_rows(L.plan, keys.data(), ranks.data(), b, kc, k, values, ids);
  for (int64_t i = 0; i < b * k; ++i) {
    if (ids[i] < 0 || ids[i] == kEmpty) {
      ids[i] = -1, values[i] = worst;
    } else {
      ids[i] = D.uid_of_rank_host[size_t(ids[i])];
    }
  }
}

}  // namespace

void ivf_pq_search(const Context& ctx, const IvfPqSearchArgs& a) {
  const IvfPqLists& given = *a.lists;  // the index's arena; the device copy mirrors its compact form
  const int64_t m = a.Q.rows, d = given.dim, k = a.k, nprobe = a.nprobe, nlist = given.nlist, n = given.size();
  // At least k slots even when the index holds fewer rows: the slots never filled come out padded.
  const int64_t kc = a.refine > 0 ? std::max(std::min(a.refine, n), k) : k;
  if (a.refine > 0 && !given.keeps_vectors)
    throw Error(ErrorCode::invalid_argument, "ivf_pq search: refine > 0 on an index that keeps no vectors");
  if (kc > kIvfMaxCandidates) return search_on_host(ctx, a);
  const int capacity = select_capacity(kc);
  const size_t smem = pq_scan_smem(given.m, given.ksub, d, capacity);
  {
    DeviceGuard guard(ctx.gpu_id);
    int optin = 0;
    check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx.gpu_id),
               "cudaDeviceGetAttribute");
    // A block's table must sit in shared memory whole (its look-ups are random); a larger one
    // (m * ksub beyond ~50,000 entries on sm_90) would need a global-memory table the scan
    // would be bound by. Such indexes are rare (m > 192 at ksub = 256): the CPU serves them.
    if (smem + 1024 > size_t(optin)) return search_on_host(ctx, a);
  }
  Call call(ctx);
  Resources& r = call.r();
  const cudaStream_t s = call.stream();
  const size_t budget = working_budget(ctx, r);
  if (PqDeviceLists::code_bytes(given) > budget / 2) return search_on_host(ctx, a);
  const bool refine = a.refine > 0;
  // The vectors go to the device only when asked and when they fit next to the codes; else the
  // re-rank reads them on the host.
  const bool with_vectors = refine && given.keeps_vectors && given.refine_on_device &&
                            PqDeviceLists::code_bytes(given) + size_t(n * d) * 4 <= budget / 2;
  const std::shared_ptr<const PqDeviceLists> D = device_lists(ctx, given, with_vectors);
  const IvfPqLists& L = *D->host;  // positions on the device index the compact lists
  const DeviceFilterMask mask(a.filter, given.arena, D->uid_of_rank_d.view().data, D->rank_of_pos_d.view().data,
                              L.size(), s);

  const bool q_host = a.Q.where == Memory::host;
  const size_t per_query = size_t(q_host ? d * 4 : 0) + size_t(d) * 4 + size_t(nprobe) * (4 + 8 + 8) +
                           size_t(nprobe) * size_t(kc) * 12 + size_t(kc) * 32 + size_t(k) * 24;
  const size_t fixed = 24 * Carver::alignment;
  if (budget < fixed + per_query)
    throw Error(ErrorCode::out_of_memory, "ivf_pq search: one query needs " +
                                              std::to_string((fixed + per_query) >> 20) +
                                              " MiB of GPU working memory, more than the budget");
  // Batches of at most 16,384 queries keep the host's pair grouping small next to the scan.
  const int64_t mb = std::min<int64_t>({m, int64_t((budget - fixed) / per_query), 16384});
  r.arena.reserve(fixed + size_t(mb) * per_query, budget);

  Carver carve(r.arena);
  float* q_dev = q_host ? carve.take<float>(size_t(mb * d)) : nullptr;
  float* q_prep = carve.take<float>(size_t(mb * d));
  float* probe_values = carve.take<float>(size_t(mb * nprobe));
  int64_t* probes = carve.take<int64_t>(size_t(mb * nprobe));
  int64_t* pairs_d = carve.take<int64_t>(size_t(mb * nprobe));
  float* slot_keys = carve.take<float>(size_t(mb * nprobe * kc));
  int64_t* slot_ranks = carve.take<int64_t>(size_t(mb * nprobe * kc));
  float* cand_keys = carve.take<float>(size_t(mb * kc));
  int64_t* cand_ranks = carve.take<int64_t>(size_t(mb * kc));
  int64_t* cand_pos = carve.take<int64_t>(size_t(mb * kc));
  double* exact = carve.take<double>(size_t(mb * kc));
  float* l1_keys = carve.take<float>(size_t(mb * kc));
  float* out_values = carve.take<float>(size_t(mb * k));
  int64_t* out_ranks = carve.take<int64_t>(size_t(mb * k));
  float* final_values = carve.take<float>(size_t(mb * k));
  int64_t* final_ids = carve.take<int64_t>(size_t(mb * k));

  std::vector<int64_t> probes_h, pairs_h, start(size_t(nlist + 1));
  const MetricPlan coarse = plan_metric(L.coarse);
  const float worst = L.plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  Context quiet = ctx;
  quiet.progress = nullptr;
  int64_t short_rows = 0, candidates = 0;

  for (int64_t q0 = 0; q0 < m; q0 += mb) {
    const int64_t b = std::min(mb, m - q0);
    const float* Qb = a.Q.data + q0 * d;
    if (q_host) {
      check_cuda(cudaMemcpyAsync(q_dev, Qb, size_t(b * d) * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
      Qb = q_dev;
    }
    pq_prepare_queries(Qb, b, d, L.plan.prep != RowPrep::none, L.plan.prep == RowPrep::centre_normalize, q_prep, s);
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");  // the coarse k-NN runs on its own streams

    // 1-2. Probes of the prepared queries (rows joined their cells prepared), then the pairs
    // grouped by list.
    cuda_backend()->knn(quiet, KnnArgs{MatrixView<const float>{q_prep, b, d, Memory::device},
                                       MatrixView<const float>{D->centroids_d.view().data, nlist, d, Memory::device},
                                       nprobe, coarse, MatrixView<float>{probe_values, b, nprobe, Memory::device},
                                       MatrixView<int64_t>{probes, b, nprobe, Memory::device}});
    probes_h.resize(size_t(b * nprobe));
    copy_sync(probes_h.data(), probes, probes_h.size() * 8, cudaMemcpyDeviceToHost, s);
    for (int64_t p : probes_h) candidates += L.arena.length(p);
    group_pairs_by_list(probes_h.data(), int64_t(probes_h.size()), nlist, start, pairs_h);
    check_cuda(cudaMemcpyAsync(pairs_d, pairs_h.data(), pairs_h.size() * 8, cudaMemcpyHostToDevice, s),
               "cudaMemcpyAsync");

    // 3. Scan, then each query's best kc.
    const PqScanArgs args{reinterpret_cast<const uint32_t*>(D->words_d.view().data),
                          D->m4,
                          D->group_start_d.view().data,
                          D->row_start_d.view().data,
                          D->rank_of_pos_d.view().data,
                          D->centroids_d.view().data,
                          D->codebooks_d.view().data,
                          q_prep,
                          probes,
                          pairs_d,
                          d,
                          L.m,
                          L.ksub,
                          L.dsub(),
                          nprobe,
                          int(kc),
                          slot_keys,
                          slot_ranks,
                          mask.bits()};
    pq_scan(form_of(L.table), capacity, b * nprobe, args, s);
    ivf_merge(capacity, b, nprobe * kc, int(kc), slot_keys, slot_ranks, cand_keys, cand_ranks, s);

    // 4. Re-rank (or map the approximate keys), then the outputs.
    if (refine && !D->has_vectors) {
      rank_on_host(L, *D, a, q0, b, kc, cand_ranks, worst, s);
    } else {
      if (refine) {
        ivf_lookup(cand_ranks, b * kc, D->pos_of_rank_d.view().data, kEmpty, cand_pos, s);
        const float* X = D->vectors_d.view().data;
        if (L.plan.rescores()) {
          // The original queries and rows, not the coded space: knn's rule exactly.
          rescore_keys(L.plan.exact, Qb, d, X, d, d, cand_pos, kc, exact, kc, b, kc, s);
          sort_output(exact, cand_ranks, kc, b, kc, k, KeyToValue{L.plan.negate, L.plan.root}, out_values, out_ranks,
                      s);
        } else {
          pq_l1_keys(Qb, X, d, cand_pos, b, kc, l1_keys, s);
          sort_output(l1_keys, cand_ranks, kc, b, kc, k, KeyToValue{false, false}, out_values, out_ranks, s);
        }
        ivf_finish(out_ranks, out_values, b * k, D->uid_of_rank_d.view().data, worst, final_ids, final_values, s);
      } else {
        sort_output(cand_keys, cand_ranks, kc, b, kc, k, KeyToValue{false, false}, out_values, out_ranks, s);
        pq_finish(out_ranks, out_values, b * k, D->uid_of_rank_d.view().data, value_map(L.plan.metric), worst,
                  final_ids, final_values, s);
      }
      check_cuda(cudaMemcpyAsync(a.values.row(q0), final_values, size_t(b * k) * 4, cudaMemcpyDeviceToHost, s),
                 "cudaMemcpyAsync");
      copy_sync(a.ids.row(q0), final_ids, size_t(b * k) * 8, cudaMemcpyDeviceToHost, s);
    }
    for (int64_t i = 0; i < b; ++i) short_rows += a.ids.row(q0 + i)[k - 1] < 0 ? 1 : 0;
    if (ctx.progress) ctx.progress(double(q0 + b) / double(m));
  }
  call.finish();
  if (a.short_rows) *a.short_rows += short_rows;
  if (a.candidates) *a.candidates += candidates;
}

}  // namespace simkit::detail::cuda
