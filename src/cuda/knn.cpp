// k-NN on the GPU without an m x n matrix, in four steps:
//
//   plan       the selection key of the metric plan (knn_keys; expanded distances of data far
//              from the origin move the origin first, translation_for), the tile and batch sizes
//              within the budget (plan_knn, with the measurements behind them in knn_plan.cpp)
//   stage      the arena carved once: query batch, two tile slots, running lists, outputs;
//              host arguments go through RowStage (cuda/staging.hpp)
//   tile loop  per tile: the product (or the l1 kernel) writes an mb x nb score tile on the
//              main stream; the selection (select/select_tile.cuh) folds it into each query's
//              running list of the best C candidates on the select stream, so it hides under
//              the compute-bound product of the next tile; a host base streams in through
//              pinned memory on the copy stream. Each slot's events (Resources::slot) say
//              when its buffers may be reused.
//   finish     the kc candidates re-scored in float64 (cuda/rescore.cu on the device, or
//              core/rescore.cpp when the base lives on the host), ranked by (key, id), the best
//              k written out -- the rule the CPU backend applies too; then the check of
//              core/knn_certify.hpp, and the queries it does not settle (heavy ties at the k-th
//              key) redone against every base row.
//
// Memory is bounded by the budget whatever n: two tiles, one query batch, its lists. k > 1024
// goes to the host-selection fallback (knn_fallback.cpp).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <simkit/device_matrix.hpp>

#include "core/rescore.hpp"
#include "cuda/call.hpp"
#include "cuda/check.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/gemm.hpp"
#include "cuda/knn_plan.hpp"
#include "cuda/l1.hpp"
#include "cuda/rescore.hpp"
#include "cuda/resources.hpp"
#include "cuda/rows.hpp"
#include "cuda/select/top_k_lists.hpp"
#include "cuda/staging.hpp"

namespace simkit::detail::cuda {

void knn_fallback(const Context& ctx, Call& call, const KnnArgs& a, int64_t kc, size_t budget);

namespace {

/// SIMKIT_KNN_STREAMS=1 runs the selection on the main stream (the measurement switch for
/// what the second stream buys; README's tuning table).
bool two_streams() {
  static const bool on = [] {
    const char* v = std::getenv("SIMKIT_KNN_STREAMS");
    return v == nullptr || std::strcmp(v, "1") != 0;
  }();
  return on;
}

// When to move the origin. The expanded squared distance |q|^2 + |x|^2 - 2 q.x of rows far from
// the origin next to their spread cancels: it keeps log2(D / S) fewer bits, S = |q|^2 + |x|^2,
// and the float32 selection can no longer tell near neighbours apart (the CPU recomputes such
// entries directly; data at an offset of 1000 with a spread of 0.01 lose everything). Moving
// the origin to a point c of the data changes no distance and brings S down to D's scale;
// x - c is exact in float for coordinates within a factor of 2 of c's. c is the mean of 64 base
// rows spread evenly over X, rounded to float; the move is made when their mean |x|^2 exceeds
// kTranslateRatio times their mean |x - c|^2 -- never for data around the origin (uniform,
// normalised embeddings), where it would only cost a pass over each tile. Non-negative data
// such as pixel counts sit at ratios of 2 to 4.
constexpr double kTranslateRatio = 16;
constexpr int64_t kTranslateSample = 64;

std::vector<float> translation_for(const KnnArgs& a, cudaStream_t s) {
  const MatrixView<const float> X = a.X;
  const int64_t n = X.rows, d = X.cols;
  if (!a.plan.expanded) return {};
  const int64_t count = std::min(n, kTranslateSample), step = n / count;
  std::vector<float> rows(size_t(count * d));
  if (X.where == Memory::device) {
    check_cuda(cudaMemcpy2DAsync(rows.data(), size_t(d) * 4, X.data, size_t(step * d) * 4, size_t(d) * 4, size_t(count),
                                 cudaMemcpyDeviceToHost, s),
               "cudaMemcpy2DAsync");
    check_cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  } else {
    for (int64_t i = 0; i < count; ++i) std::copy_n(X.row(i * step), d, rows.begin() + i * d);
  }
  std::vector<double> mean(size_t(d), 0.0);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < d; ++j) mean[size_t(j)] += rows[size_t(i * d + j)];
  std::vector<float> c(static_cast<size_t>(d));
  for (int64_t j = 0; j < d; ++j) c[size_t(j)] = float(mean[size_t(j)] / double(count));
  double norm2 = 0, spread2 = 0;
  for (int64_t i = 0; i < count; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const double v = rows[size_t(i * d + j)], e = v - double(c[size_t(j)]);
      norm2 += v * v, spread2 += e * e;
    }
  if (norm2 <= kTranslateRatio * spread2) return {};
  return c;
}

KnnShape shape_of(const KnnArgs& a, int64_t kc, size_t budget, bool translated) {
  KnnShape s;
  s.plan = a.plan;
  s.keys = knn_keys(a.plan, translated);
  s.translated = translated;
  s.m = a.Q.rows, s.n = a.X.rows, s.d = a.Q.cols, s.k = a.k, s.kc = kc;
  s.capacity = select_capacity(kc);
  s.q_host = a.Q.where == Memory::host;
  s.x_host = a.X.where == Memory::host;
  s.values_host = a.values.where == Memory::host;
  s.ids_host = a.ids.where == Memory::host;
  s.workspace = a.plan.product ? gemm_workspace_bytes(budget) : 0;
  s.global_aux = s.keys.needs_aux() && !s.keys.aux_from_prep() && !s.x_host && size_t(s.n) * 4 <= budget / 4;
  s.tile_aux = s.keys.needs_aux() && !s.global_aux;
  s.rescore_on_device = a.plan.rescores() && !s.x_host;
  return s;
}

/// One k-NN call after planning: the carved buffers and the per-batch work.
class KnnRun {
 public:
  KnnRun(const Context& ctx, Call& call, const KnnArgs& a, const KnnShape& shape, const KnnPlan& p,
         const std::vector<float>& centre)
      : ctx_(ctx),
        call_(call),
        a_(a),
        s_(shape),
        p_(p),
        q_rows_(a.Q, p.mb),
        x_rows_(a.X, p.nb, 2),
        values_(a.values, p.mb),
        ids_(a.ids, p.mb) {
    Resources& r = call.r();
    const int64_t d = s_.d;
    if (a.row_mask) {  // the row filter, a bit per base row, read by the selection
      const int64_t words = (a.X.rows + 63) / 64;
      mask_ =
          DeviceMatrix<int64_t>(ctx, MatrixView<const int64_t>{reinterpret_cast<const int64_t*>(a.row_mask), words, 1});
    }
    Carver carve(r.arena);
    ws_ = s_.workspace ? carve.take<unsigned char>(s_.workspace) : nullptr;
    if (s_.translated) {
      centre_ = carve.take<float>(centre.size());
      check_cuda(cudaMemcpyAsync(centre_, centre.data(), centre.size() * 4, cudaMemcpyHostToDevice, call.stream()),
                 "cudaMemcpyAsync");
    }
    aux_all_ = s_.global_aux ? carve.take<float>(size_t(s_.n)) : nullptr;
    q_rows_.carve(carve);
    q_prep_ = s_.keys.prep_q ? carve.take<float>(size_t(p.mb) * d) : nullptr;
    state_k_ = carve.take<float>(size_t(p.mb) * s_.capacity);
    state_i_ = carve.take<int64_t>(size_t(p.mb) * s_.capacity);
    // Keys with the lists' stride, so that sort_output reads both alike.
    exact_ = s_.rescore_on_device ? carve.take<double>(size_t(p.mb) * s_.capacity) : nullptr;
    values_.carve(carve);
    ids_.carve(carve);
    x_rows_.carve(carve);
    for (int slot = 0; slot < 2; ++slot) {
      Slot& sl = slot_[slot];
      sl.tile = carve.take<float>(size_t(p.mb) * p.ldt);
      sl.x_stage = x_rows_.buffer(slot);
      if (s_.keys.prep_x && !s_.x_host) sl.x_prep = carve.take<float>(size_t(p.nb) * d);
      if (s_.tile_aux) sl.aux = carve.take<float>(size_t(p.nb));
      sl.events = &r.slot[slot];
    }
    if (s_.x_host)
      for (PinnedBuffer& pinned : r.pinned) pinned.reserve(size_t(p.nb) * d * 4);
    main_ = call.stream();
    select_ = call.select_stream(two_streams());
    copy_ = s_.x_host ? call.copy_stream() : main_;
    if (s_.global_aux) row_prep(s_.keys.aux_op, a.X.data, d, nullptr, 0, aux_all_, s_.n, d, main_);
    set_up_check(centre);
  }

  /// Queries [q0, q0 + mb): the running lists over every tile, then the best k out.
  void batch(int64_t q0, int64_t mb, int64_t batch, int64_t batches) {
    const int64_t d = s_.d;
    const float* q_raw = q_rows_.in(q0, mb, main_);
    const float* q_use = q_raw;
    if (s_.keys.prep_q) {
      row_prep(s_.keys.prep_op, q_raw, d, q_prep_, d, nullptr, mb, d, main_, nullptr, centre_);
      q_use = q_prep_;
    }
    const TopKLists lists{state_k_, state_i_, s_.capacity, int(s_.kc), int(mb)};
    lists.reset(main_);
    const int64_t tiles = (s_.n + p_.nb - 1) / p_.nb;
    for (int64_t t = 0; t < tiles; ++t) {
      tile(lists, q_raw, q_use, mb, t);
      if (ctx_.progress) ctx_.progress(double(batch * tiles + t + 1) / double(batches * tiles + 1));
    }
    // The lists are complete once the select stream is done with them.
    stream_wait(main_, select_, call_.r().join[0]);
    finish(lists, q0, mb, q_raw);
  }

 private:
  struct Slot {
    float* tile = nullptr;
    float* x_stage = nullptr;  // host base rows, staged
    float* x_prep = nullptr;   // device base rows, prepared (centred) into our own copy
    float* aux = nullptr;      // per-tile aux
    SlotEvents* events = nullptr;
  };

  void tile(const TopKLists& lists, const float* q_raw, const float* q_use, int64_t mb, int64_t t) {
    Resources& r = call_.r();
    const int64_t d = s_.d;
    const int which = int(t & 1);
    Slot& sl = slot_[which];
    const int64_t j0 = t * p_.nb, nb = std::min(p_.nb, s_.n - j0);
    const float* x_raw = x_rows_.in_streamed(j0, nb, which, r.pinned[which], *sl.events, copy_, main_);
    // The tile, aux and prepared rows of this slot were last read by the selection two tiles ago.
    check_cuda(cudaStreamWaitEvent(main_, sl.events->selected, 0), "cudaStreamWaitEvent");
    const float* x_use = x_raw;
    if (s_.keys.prep_x) {
      float* dst = s_.x_host ? sl.x_stage : sl.x_prep;  // a staged copy is ours to prepare in place
      row_prep(s_.keys.prep_op, x_raw, d, dst, d, s_.keys.aux_from_prep() ? sl.aux : nullptr, nb, d, main_, nullptr,
               centre_);
      x_use = dst;
    }
    const float* aux = s_.global_aux ? aux_all_ + j0 : nullptr;
    if (s_.tile_aux) {
      if (!s_.keys.aux_from_prep()) row_prep(s_.keys.aux_op, x_raw, d, nullptr, 0, sl.aux, nb, d, main_);
      aux = sl.aux;
    }
    if (s_.plan.product)
      dot_tile(r, main_, mb, nb, d, s_.keys.alpha, q_use, d, x_use, d, sl.tile, p_.ldt, ws_, s_.workspace);
    else
      l1_tile(q_raw, d, x_raw, d, sl.tile, p_.ldt, mb, nb, d, main_);
    check_cuda(cudaEventRecord(sl.events->computed, main_), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(select_, sl.events->computed, 0), "cudaStreamWaitEvent");
    lists.add_tile(sl.tile, p_.ldt, int(nb), s_.keys.mode, aux, j0, select_,
                   a_.row_mask ? reinterpret_cast<const uint32_t*>(mask_.view().data) : nullptr);
    check_cuda(cudaEventRecord(sl.events->selected, select_), "cudaEventRecord");
  }

  // The check of core/knn_certify.hpp: the bound of the call (for dot, the largest base norm,
  // summed on the device into state_i_'s first word before any batch uses it).
  void set_up_check(const std::vector<float>& centre) {
    const MetricPlan& plan = s_.plan;
    if (!plan.rescores() || !knn_checked(plan.exact)) return;
    check_ = KnnCheck::make(plan, a_.X, a_.row_mask);
    check_.centre = centre.empty() ? nullptr : centre.data();
    check_.gpu_keys = true;
    if (plan.exact == ExactForm::dot && !s_.x_host) {
      unsigned long long bits = 0;
      auto* acc = reinterpret_cast<unsigned long long*>(state_i_);
      check_cuda(cudaMemsetAsync(acc, 0, sizeof bits, main_), "cudaMemsetAsync");
      max_sq_norm(a_.X.data, s_.d, s_.n, s_.d, acc, main_);
      check_cuda(cudaMemcpyAsync(&bits, acc, sizeof bits, cudaMemcpyDeviceToHost, main_), "cudaMemcpyAsync");
      check_cuda(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
      double sq = 0;
      std::memcpy(&sq, &bits, sizeof sq);
      check_.bound.x_max = std::sqrt(sq);
    }
    checking_ = true;
  }

  void finish(const TopKLists& lists, int64_t q0, int64_t mb, const float* q_raw) {
    const int64_t k = s_.k, d = s_.d, C = s_.capacity;
    const MetricPlan& plan = s_.plan;
    if (plan.rescores() && s_.x_host) {
      finish_on_host(q0, mb, q_raw);
      return;
    }
    float* v = values_.out(q0);
    int64_t* i = ids_.out(q0);
    if (plan.rescores()) {
      rescore_keys(plan.exact, q_raw, d, a_.X.data, d, d, state_i_, C, exact_, C, mb, s_.kc, main_);
      sort_output(exact_, state_i_, C, mb, s_.kc, k, KeyToValue{plan.negate, plan.root}, v, i, main_);
    } else {
      lists.finish(k, KeyToValue{plan.negate, plan.root}, v, i, main_);
    }
    values_.back(q0, mb, main_);
    ids_.back(q0, mb, main_);
    if (checking_) settle_on_device(q0, mb, q_raw, v);
  }

  // The check for a batch whose candidates were re-scored on the device; the queries it does
  // not settle (rare: heavy ties at the k-th key) are redone against every base row.
  void settle_on_device(int64_t q0, int64_t mb, const float* q_raw, const float* v) {
    const KeyToValue to{s_.plan.negate, s_.plan.root};
    // exact_ is free once sort_output has read it: it takes the per-query bounds.
    unsettled_queries(UnsettledArgs{check_.bound, to, q_raw, s_.d, s_.d, s_.translated ? centre_ : nullptr, state_k_,
                                    state_i_, s_.capacity, s_.kc, v, s_.k, mb},
                      exact_, main_);
    host_upper_.resize(size_t(mb));
    check_cuda(cudaMemcpyAsync(host_upper_.data(), exact_, size_t(mb) * 8, cudaMemcpyDeviceToHost, main_),
               "cudaMemcpyAsync");
    // Also completes the outputs' copies back, which the redone rows then overwrite.
    check_cuda(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
    for (int64_t r = 0; r < mb; ++r)
      if (!std::isnan(host_upper_[size_t(r)])) redo_on_device(q0 + r, q_raw + r * s_.d, host_upper_[size_t(r)]);
  }

  // Query `query` (device row q) ranked exactly against every allowed base row: the float64
  // keys in chunks through the first tile slot (free after the selection), filtered by U on
  // the host, ranked there, written over the query's output row.
  void redo_on_device(int64_t query, const float* q, double upper) {
    const int64_t n = s_.n, k = s_.k, chunk = std::max<int64_t>(1, p_.mb * p_.ldt / 2);
    auto* keys = reinterpret_cast<double*>(slot_[0].tile);
    host_keys_.resize(size_t(std::min(chunk, n)));
    pairs_.clear();
    for (int64_t j0 = 0; j0 < n; j0 += chunk) {
      const int64_t count = std::min(chunk, n - j0);
      exact_keys_rows(s_.plan.exact, q, a_.X.data, s_.d, s_.d, j0, count, keys, main_);
      check_cuda(cudaMemcpyAsync(host_keys_.data(), keys, size_t(count) * 8, cudaMemcpyDeviceToHost, main_),
                 "cudaMemcpyAsync");
      check_cuda(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
      for (int64_t c = 0; c < count; ++c) {
        const int64_t j = j0 + c;
        if (a_.row_mask != nullptr && ((a_.row_mask[j >> 6] >> (j & 63)) & 1u) == 0) continue;
        if (!(host_keys_[size_t(c)] > upper)) pairs_.emplace_back(host_keys_[size_t(c)], j);
      }
    }
    host_values_.resize(size_t(k));
    host_out_ids_.resize(size_t(k));
    rank_pairs(s_.plan, pairs_, k, host_values_.data(), host_out_ids_.data());
    // cudaMemcpyDefault: each destination may be host or device.
    check_cuda(cudaMemcpy(a_.values.data + query * k, host_values_.data(), size_t(k) * 4, cudaMemcpyDefault),
               "cudaMemcpy");
    check_cuda(cudaMemcpy(a_.ids.data + query * k, host_out_ids_.data(), size_t(k) * 8, cudaMemcpyDefault),
               "cudaMemcpy");
  }

  // The base is on the host: the candidates are re-scored there (their rows never come over).
  void finish_on_host(int64_t q0, int64_t mb, const float* q_raw) {
    const int64_t k = s_.k, d = s_.d, C = s_.capacity;
    host_ids_.resize(size_t(mb) * C);
    check_cuda(cudaMemcpyAsync(host_ids_.data(), state_i_, size_t(mb) * C * 8, cudaMemcpyDeviceToHost, main_),
               "cudaMemcpyAsync");
    if (checking_) {  // the worst kept float key of each query, for the check
      host_worst_.resize(size_t(mb));
      check_cuda(cudaMemcpy2DAsync(host_worst_.data(), 4, state_k_ + (s_.kc - 1), size_t(C) * 4, 4, size_t(mb),
                                   cudaMemcpyDeviceToHost, main_),
                 "cudaMemcpy2DAsync");
    }
    const float* q_host = a_.Q.data + q0 * d;
    if (!s_.q_host) {
      host_q_.resize(size_t(mb) * d);
      check_cuda(cudaMemcpyAsync(host_q_.data(), q_raw, size_t(mb) * d * 4, cudaMemcpyDeviceToHost, main_),
                 "cudaMemcpyAsync");
      q_host = host_q_.data();
    }
    check_cuda(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
    const bool direct = s_.values_host && s_.ids_host;
    host_values_.resize(direct ? 0 : size_t(mb) * k);
    host_out_ids_.resize(direct ? 0 : size_t(mb) * k);
    float* v = direct ? a_.values.data + q0 * k : host_values_.data();
    int64_t* i = direct ? a_.ids.data + q0 * k : host_out_ids_.data();
    rescore_rank_rows(s_.plan, MatrixView<const float>(q_host, mb, d), a_.X, host_ids_.data(), C, s_.kc, k, v, i,
                      checking_ ? &check_ : nullptr, host_worst_.data());
    if (!direct) {
      // cudaMemcpyDefault: each destination may be host or device independently.
      check_cuda(cudaMemcpyAsync(a_.values.data + q0 * k, v, size_t(mb) * k * 4, cudaMemcpyDefault, main_),
                 "cudaMemcpyAsync");
      check_cuda(cudaMemcpyAsync(a_.ids.data + q0 * k, i, size_t(mb) * k * 8, cudaMemcpyDefault, main_),
                 "cudaMemcpyAsync");
      check_cuda(cudaStreamSynchronize(main_), "cudaStreamSynchronize");
    }
  }

  const Context& ctx_;
  Call& call_;
  const KnnArgs& a_;
  const KnnShape& s_;
  const KnnPlan& p_;
  RowStage<const float> q_rows_, x_rows_;
  RowStage<float> values_;
  RowStage<int64_t> ids_;
  void* ws_ = nullptr;
  float *aux_all_ = nullptr, *q_prep_ = nullptr, *state_k_ = nullptr, *centre_ = nullptr;
  int64_t* state_i_ = nullptr;
  double* exact_ = nullptr;
  Slot slot_[2];
  DeviceMatrix<int64_t> mask_;  // KnnArgs::row_mask on the device (32-bit words, little-endian)
  cudaStream_t main_ = nullptr, select_ = nullptr, copy_ = nullptr;
  std::vector<float> host_q_, host_values_, host_worst_;
  std::vector<int64_t> host_ids_, host_out_ids_;
  KnnCheck check_;  // core/knn_certify.hpp's check, when checking_
  bool checking_ = false;
  std::vector<double> host_upper_, host_keys_;
  ExactPairs pairs_;
};

}  // namespace

void CudaBackend::knn(const Context& ctx, const KnnArgs& a) const {
  Call call(ctx);
  const int64_t m = a.Q.rows, n = a.X.rows;
  const int64_t kc = a.plan.candidates(a.k, n);
  const size_t budget = working_budget(ctx, call.r());
  if (a.k > 1024 || kc > kMaxListCapacity) return knn_fallback(ctx, call, a, kc, budget);

  const std::vector<float> centre = translation_for(a, call.stream());
  const KnnShape shape = shape_of(a, kc, budget, !centre.empty());
  const KnnPlan p = plan_knn(shape, budget);
  call.r().arena.reserve(p.bytes, budget);
  KnnRun run(ctx, call, a, shape, p, centre);
  const int64_t batches = (m + p.mb - 1) / p.mb;
  for (int64_t q0 = 0, b = 0; q0 < m; q0 += p.mb, ++b) run.batch(q0, std::min(p.mb, m - q0), b, batches);
  call.finish(shape.q_host || shape.x_host || shape.values_host || shape.ids_host);
  if (ctx.progress) ctx.progress(1.0);
}

}  // namespace simkit::detail::cuda
