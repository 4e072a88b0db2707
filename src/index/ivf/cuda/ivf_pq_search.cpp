// GPU ivf_pq search: the codes uploaded once per index version in the interleaved layout
// (ivf_pq_kernels.hpp), with the original vectors when the re-rank runs on the device; the
// queries moved into the coded space (ivf_pq_lists.hpp) and probed there; a block per (query,
// probe) builds its lookup table and scans the list's codes (ivf_pq_scan.cu), blocks of one
// list side by side so its codes come from L2. The batching, probing, merge and ranking are the
// shared driver's (ivf_device_search.hpp): refine > 0 re-scores the best kc against the original
// vectors by knn's rule (float64 keys; l1 its float32 column-order sum), on the device or, when
// the vectors stay on the host, there; refine = 0 returns the best k by (approximate key, id),
// the key mapped to the metric's value.
// Where the device scan cannot serve the call the CPU backend does, on host copies: kc beyond
// kIvfMaxCandidates, a table beyond the shared memory a block may opt into, codes beyond half
// the working budget (no streaming yet: 10^7 rows at m = 32 take 0.32 GB).

#include <algorithm>
#include <memory>
#include <vector>

#include <simkit/error.hpp>

#include "core/exact_metric.hpp"
#include "cuda/check.hpp"
#include "cuda/select/top_k_lists.hpp"
#include "index/ivf/cuda/ivf_device_search.hpp"
#include "index/ivf/cuda/ivf_pq_kernels.hpp"
#include "index/ivf/ivf_searchers.hpp"

namespace simkit::detail::cuda {

namespace {

/// The device copy of one IvfPqLists (layout in ivf_pq_kernels.hpp).
class PqDeviceLists final : public IvfDeviceLists {
 public:
  PqDeviceLists(const Context& ctx, const IvfPqLists& arena, bool with_vectors)
      : gpu_id(ctx.gpu_id),
        has_vectors(with_vectors),
        m4((arena.m + 3) / 4),
        host(&compact_view(arena, packed)),
        ranks(ctx, host->arena) {
    const IvfPqLists& L = *host;
    const int64_t m = L.m, nlist = L.nlist;
    const std::vector<int64_t> group_start = group_starts(L.arena);
    // Bytes of word c of row `lane` in group g: ((g * m4 + c) * 32 + lane) * 4 + (j % 4), j = 4 c + ..
    std::vector<uint8_t> words(size_t(group_start.back() * m4 * 32 * 4), 0);
    for (int64_t l = 0; l < nlist; ++l)
      for (int64_t pos = L.arena.begin[size_t(l)]; pos < L.arena.end[size_t(l)]; ++pos) {
        const int64_t i = pos - L.arena.begin[size_t(l)], g = group_start[size_t(l)] + i / 32, lane = i % 32;
        const uint8_t* code = L.codes.data() + pos * m;
        for (int64_t j = 0; j < m; ++j) words[size_t(((g * m4 + j / 4) * 32 + lane) * 4 + j % 4)] = code[j];
      }
    words_d = upload(ctx, words);
    group_start_d = upload(ctx, group_start);
    row_start_d = upload(ctx, L.arena.offsets());
    centroids_d = upload(ctx, L.centroids);
    codebooks_d = upload(ctx, L.codebooks);
    if (has_vectors) vectors_d = upload(ctx, L.vectors);
  }

  static size_t code_bytes(const IvfPqLists& L) {
    return size_t(group_starts(L.arena).back()) * 32 * size_t((L.m + 3) / 4) * 4 + size_t(L.size()) * 24 +
           L.centroids.size() * 4;
  }

  int gpu_id;
  bool has_vectors;
  int64_t m4;
  std::unique_ptr<IvfPqLists> packed;  // the compact copy, when the index's arena is not compact
  const IvfPqLists* host;              // the compact lists the device copy mirrors (positions index them)
  IvfDeviceRanks ranks;
  DeviceMatrix<uint8_t> words_d;
  DeviceMatrix<float> centroids_d, codebooks_d, vectors_d;
  DeviceMatrix<int64_t> group_start_d, row_start_d;
};

PqForm form_of(PqTable t) {
  switch (t) {
    case PqTable::sqdist: return PqForm::sqdist;
    case PqTable::neg_dot: return PqForm::neg_dot;
    case PqTable::l1: break;
  }
  return PqForm::l1;
}

/// How refine = 0 turns the approximate key into the metric's value.
IvfValue value_map(Metric metric) {
  switch (metric) {
    case Metric::l2: return IvfValue::root;
    case Metric::cosine:
    case Metric::pearson: return IvfValue::cosine;
    case Metric::dot: return IvfValue::negate;
    case Metric::sqeuclidean:
    case Metric::l1: break;
  }
  return IvfValue::plain;
}

/// The code scan: a block per (query, probe) pair.
class PqScanner final : public IvfListScanner {
 public:
  explicit PqScanner(const PqDeviceLists& D) : D_(D), L_(*D.host) {}
  int64_t prepared_cols() const override { return L_.dim; }
  bool probes_prepared() const override { return true; }
  void prepare(const float* Q, int64_t rows, float* prepared, cudaStream_t s) const override {
    pq_prepare_queries(Q, rows, L_.dim, L_.plan.prep != RowPrep::none, L_.plan.prep == RowPrep::centre_normalize,
                       prepared, s);
  }
  void scan(const IvfScanBatch& b, cudaStream_t s) override {
    const PqScanArgs args{reinterpret_cast<const uint32_t*>(D_.words_d.view().data),
                          D_.m4,
                          D_.group_start_d.view().data,
                          D_.row_start_d.view().data,
                          D_.ranks.rank_of_pos.view().data,
                          D_.centroids_d.view().data,
                          D_.codebooks_d.view().data,
                          b.prepared,
                          b.probes,
                          b.pairs,
                          L_.dim,
                          L_.m,
                          L_.ksub,
                          L_.dsub(),
                          b.nprobe,
                          b.kc,
                          b.slot_keys,
                          b.slot_ranks,
                          b.mask};
    pq_scan(form_of(L_.table), b.capacity, b.queries * b.nprobe, args, s);
  }

 private:
  const PqDeviceLists& D_;
  const IvfPqLists& L_;
};

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
  h.Q = host_queries(ctx, a.Q, q);
  Context host = ctx;
  host.device = Device::cpu;
  cpu::ivf_pq_search(host, h);
  if (a.device_scan) *a.device_scan = false;
  if (!a.lists->plan.rescores() && a.refine > 0) l1_values_as_on_the_gpu(*a.lists, h.Q.data, a);
}

}  // namespace

void ivf_pq_search(const Context& ctx, const IvfPqSearchArgs& a) {
  const IvfPqLists& given = *a.lists;  // the index's arena; the device copy mirrors its compact form
  const int64_t d = given.dim, k = a.k, n = given.size();
  // At least k slots even when the index holds fewer rows: the slots never filled come out padded.
  const int64_t kc = a.refine > 0 ? std::max(std::min(a.refine, n), k) : k;
  if (a.refine > 0 && !given.keeps_vectors)
    throw Error(ErrorCode::invalid_argument, "ivf_pq search: refine > 0 on an index that keeps no vectors");
  if (a.keys.data != nullptr && a.refine > 0)
    throw Error(ErrorCode::invalid_argument, "ivf_pq search: the code estimates are given without a re-rank only");
  if (kc > kIvfMaxCandidates) return search_on_host(ctx, a);
  {
    DeviceGuard guard(ctx.gpu_id);
    int optin = 0;
    check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, ctx.gpu_id),
               "cudaDeviceGetAttribute");
    // A block's table must sit in shared memory whole (its look-ups are random); a larger one
    // (m * ksub beyond ~50,000 entries on sm_90) would need a global-memory table the scan
    // would be bound by. Such indexes are rare (m > 192 at ksub = 256): the CPU serves them.
    if (pq_scan_smem(given.m, given.ksub, d, select_capacity(kc)) + 1024 > size_t(optin)) return search_on_host(ctx, a);
  }
  IvfDeviceDriver driver(ctx);
  const size_t budget = driver.budget();
  if (PqDeviceLists::code_bytes(given) > budget / 2) return search_on_host(ctx, a);
  const bool refine = a.refine > 0;
  // The vectors go to the device only when asked and when they fit next to the codes; else the
  // re-rank reads them on the host.
  const bool with_vectors = refine && given.keeps_vectors && given.refine_on_device &&
                            PqDeviceLists::code_bytes(given) + size_t(n * d) * 4 <= budget / 2;
  const std::shared_ptr<const PqDeviceLists> D = cached_device_copy<PqDeviceLists>(
      given, ctx.gpu_id,
      [&](const PqDeviceLists& have) { return have.gpu_id == ctx.gpu_id && have.has_vectors == with_vectors; },
      [&] { return std::make_shared<const PqDeviceLists>(ctx, given, with_vectors); });
  const IvfPqLists& L = *D->host;  // positions on the device index the compact lists
  PqScanner scanner(*D);
  IvfDeviceSearch s;
  s.lists = &L;
  s.given = &given.arena;
  s.ranks = &D->ranks;
  s.centroids = D->centroids_d.view().data;
  s.Q = a.Q, s.k = k, s.nprobe = a.nprobe, s.kc = kc;
  s.values = a.values, s.ids = a.ids;
  s.filter = a.filter;
  // The original queries and rows, not the coded space: knn's rule exactly.
  s.rerank = !refine ? IvfRerank::scan_keys : L.plan.rescores() ? IvfRerank::exact : IvfRerank::l1_column_order;
  s.value = value_map(L.plan.metric);
  s.keys = a.keys;
  s.rows_device = D->has_vectors ? D->vectors_d.view().data : nullptr;
  s.rows_host = L.vectors.data();
  s.short_rows = a.short_rows, s.candidates = a.candidates;
  s.what = "ivf_pq search";
  driver.run(s, scanner);
  if (a.device_scan) *a.device_scan = true;
}

}  // namespace simkit::detail::cuda
