#include "index/ivf/ivf_pq_shards.hpp"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/exact_metric.hpp"
#include "core/rescore.hpp"
#include "core/shard_merge.hpp"
#include "core/shards.hpp"
#include "index/ivf/ivf_searchers.hpp"

namespace simkit::detail {

namespace {

constexpr int64_t kEmpty = std::numeric_limits<int64_t>::max();

/// The GPU's rule (cuda/ivf_device_search.cpp, step 4): every candidate by its float64 key (l1:
/// the GPU k-NN's float32 sum), ranked by (key, id).
void rank_as_the_gpu(const PqShardSearch& s, const Matrix<int64_t>& cand, float worst, int threads) {
  const IvfPqLists& L = *s.whole;
  const int64_t m = s.Q.rows, w = cand.cols(), d = L.dim;
  std::vector<double> keys(size_t(m * w));
  std::vector<int64_t> ranks(size_t(m * w));
  parallel_rows(m, threads, [&](int64_t i) {
    for (int64_t j = 0; j < w; ++j) {
      const int64_t id = cand(i, j);
      const size_t at = size_t(i * w + j);
      ranks[at] = id >= 0 ? id : kEmpty;
      if (id < 0) {
        keys[at] = std::numeric_limits<double>::infinity();
        continue;
      }
      const float* x = L.vectors.data() + s.arena_row(id) * d;
      keys[at] = L.plan.rescores() ? exact_key(L.plan.exact, s.Q.row(i), x, d) : l1_column_order(s.Q.row(i), x, d);
    }
  });
  rank_exact_rows(L.plan, keys.data(), ranks.data(), m, w, s.k, s.values.data, s.ids.data);
  for (int64_t i = 0; i < m * s.k; ++i)
    if (s.ids.data[i] < 0 || s.ids.data[i] == kEmpty) s.ids.data[i] = -1, s.values.data[i] = worst;
}

/// The CPU's rule (cpu/ivf_pq_search.cpp): the candidates' float32 shortlist keys, the first
/// ivf_pq_shortlist of them by (shortlist key, id), those ranked by (float64 key, id).
void rank_as_the_cpu(const PqShardSearch& s, const Matrix<int64_t>& cand, int threads) {
  const IvfPqLists& L = *s.whole;
  const int64_t w = cand.cols();
  parallel_rows(s.Q.rows, threads, [&](int64_t i) {
    std::vector<int64_t> rows;
    for (int64_t j = 0; j < w && cand(i, j) >= 0; ++j) rows.push_back(s.arena_row(cand(i, j)));
    const int64_t found = int64_t(rows.size());
    std::vector<float> shortlist(rows.size());
    std::vector<double> exact(rows.size());
    cpu::ivf_pq_rerank_keys(L, s.Q.row(i), rows.data(), found, shortlist.data(), exact.data());
    std::vector<std::pair<std::pair<float, int64_t>, double>> by_shortlist;
    for (int64_t j = 0; j < found; ++j) by_shortlist.push_back({{shortlist[size_t(j)], cand(i, j)}, exact[size_t(j)]});
    std::sort(by_shortlist.begin(), by_shortlist.end());
    std::vector<std::pair<double, int64_t>> ranked;
    for (const auto& [key, exact_key] : by_shortlist) ranked.emplace_back(exact_key, key.second);
    cpu::ivf_pq_rank_shortlist(L.plan, ranked, s.k, s.values.row(i), s.ids.row(i));
  });
}

}  // namespace

void ivf_pq_search_shards(const std::vector<Context>& shards, const PqShardSearch& s, int threads) {
  const int64_t P = int64_t(shards.size()), m = s.Q.rows;
  std::vector<ShardTopK> parts(static_cast<size_t>(P));
  std::vector<int64_t> candidates(static_cast<size_t>(P), 0);
  std::vector<int> on_device(static_cast<size_t>(P), -1);  // -1: an empty slice, nothing scanned
  // Round 1: each slice's best `keep` by (estimate, id), with the estimates.
  run_on_shards(P, [&](int64_t p) {
    const IvfPqLists& L = *(*s.slices)[size_t(p)];
    ShardTopK& part = parts[size_t(p)];
    const int64_t width = L.size() > 0 ? s.keep : 0;
    part.values = Matrix<float>(m, width);
    part.ids = Matrix<int64_t>(m, width);
    if (width == 0) return;
    Matrix<float> keys(m, width);
    int64_t padded = 0;
    bool device = false;
    IvfPqSearchArgs args{
        &L, s.Q, width, s.nprobe, 0, part.values.view(), part.ids.view(), &padded, &candidates[size_t(p)]};
    args.keys = keys.view();
    args.device_scan = &device;
    const Context& on = shards[size_t(p)];
    on.device == Device::gpu ? cuda::ivf_pq_search(on, args) : cpu::ivf_pq_search(on, args);
    on_device[size_t(p)] = device ? 1 : 0;
    part.keys.assign(keys.data(), keys.data() + keys.size());
  });
  const float worst =
      s.whole->plan.negate ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  if (!s.rerank) {
    merge_shard_topk(parts, m, s.k, worst, s.values, s.ids, threads);
  } else {
    // The whole index's best `keep` estimates, then round 2 on them.
    Matrix<float> kept(m, s.keep);
    Matrix<int64_t> cand(m, s.keep);
    merge_shard_topk(parts, m, s.keep, worst, kept.view(), cand.view(), threads);
    const bool gpu_rule = std::none_of(on_device.begin(), on_device.end(), [](int v) { return v == 0; }) &&
                          std::any_of(on_device.begin(), on_device.end(), [](int v) { return v == 1; });
    gpu_rule ? rank_as_the_gpu(s, cand, worst, threads) : rank_as_the_cpu(s, cand, threads);
  }
  if (s.short_rows)
    for (int64_t i = 0; i < m; ++i) *s.short_rows += s.ids(i, s.k - 1) < 0 ? 1 : 0;
  if (s.candidates)
    for (int64_t c : candidates) *s.candidates += c;
}

}  // namespace simkit::detail
