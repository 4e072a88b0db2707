// core/shard_merge.hpp: the (key, id) merge of shards' top-k lists.

#include "core/shard_merge.hpp"

#include <algorithm>

#include "core/exact_metric.hpp"
#include "core/merge_path.hpp"

namespace simkit::detail {

double ranking_key(const MetricPlan& plan, const float* q, const float* x, int64_t d, float value) {
  if (!plan.rescores()) return plan.negate ? -static_cast<double>(value) : static_cast<double>(value);
  return exact_key(plan.exact, q, x, d);
}

void parallel_rows(int64_t m, int threads, const std::function<void(int64_t)>& body) {
#pragma omp parallel for schedule(dynamic, 16) num_threads(std::max(1, threads)) if (m > 64)
  for (int64_t i = 0; i < m; ++i) body(i);
}

namespace {

struct Entry {
  double key;
  int64_t id;
  float value;
};

bool before(const Entry& a, const Entry& b) { return a.key < b.key || (a.key == b.key && a.id < b.id); }

/// a := the first min(k, |a| + |b|) entries of the stable merge of a and b.
void merge_into(std::vector<Entry>& a, const std::vector<Entry>& b, int64_t k, std::vector<Entry>& scratch) {
  const int64_t na = int64_t(a.size()), nb = int64_t(b.size()), n = std::min(k, na + nb);
  scratch.resize(size_t(na + nb));
  serial_merge(
      na, nb, [&](int64_t i) -> const Entry& { return a[size_t(i)]; },
      [&](int64_t j) -> const Entry& { return b[size_t(j)]; }, before,
      [&](bool from_a, int64_t index, int64_t at) {
        scratch[size_t(at)] = from_a ? a[size_t(index)] : b[size_t(index)];
      });
  scratch.resize(size_t(n));
  a.swap(scratch);
}

}  // namespace

void merge_shard_topk(const std::vector<ShardTopK>& shards, int64_t m, int64_t k, float pad_value,
                      MatrixView<float> values, MatrixView<int64_t> ids, int threads) {
  parallel_rows(m, threads, [&](int64_t i) {
    // A balanced tree of pairwise merges: shard lists at level 0, their merges above.
    std::vector<std::vector<Entry>> level(shards.size());
    for (size_t s = 0; s < shards.size(); ++s) {
      const ShardTopK& sh = shards[s];
      const int64_t w = sh.ids.cols();
      for (int64_t j = 0; j < w && sh.ids(i, j) >= 0; ++j)
        level[s].push_back({sh.keys[size_t(i * w + j)], sh.ids(i, j), sh.values(i, j)});
    }
    std::vector<Entry> scratch;
    for (size_t step = 1; step < level.size(); step *= 2)
      for (size_t s = 0; s + step < level.size(); s += 2 * step) merge_into(level[s], level[s + step], k, scratch);
    const std::vector<Entry> none;
    const std::vector<Entry>& best = level.empty() ? none : level[0];
    for (int64_t j = 0; j < k; ++j) {
      const bool have = j < int64_t(best.size());
      values(i, j) = have ? best[size_t(j)].value : pad_value;
      ids(i, j) = have ? best[size_t(j)].id : -1;
    }
  });
}

}  // namespace simkit::detail
