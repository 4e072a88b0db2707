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

/// Row i of the shards' lists merged by (key_of(entry), id) with a balanced tree of pairwise
/// merges (shard lists at level 0, their merges above), the first `cap` kept.
template <class KeyOf>
std::vector<Entry> merge_row(const std::vector<ShardTopK>& shards, int64_t i, int64_t cap, KeyOf key_of) {
  std::vector<std::vector<Entry>> level(shards.size());
  for (size_t s = 0; s < shards.size(); ++s) {
    const ShardTopK& sh = shards[s];
    const int64_t w = sh.ids.cols();
    for (int64_t j = 0; j < w && sh.ids(i, j) >= 0; ++j)
      level[s].push_back({key_of(sh, i * w + j), sh.ids(i, j), sh.values(i, j)});
  }
  std::vector<Entry> scratch;
  for (size_t step = 1; step < level.size(); step *= 2)
    for (size_t s = 0; s + step < level.size(); s += 2 * step) merge_into(level[s], level[s + step], cap, scratch);
  return level.empty() ? std::vector<Entry>{} : std::move(level[0]);
}

void write_row(const std::vector<Entry>& best, int64_t i, int64_t k, float pad_value, MatrixView<float> values,
               MatrixView<int64_t> ids) {
  for (int64_t j = 0; j < k; ++j) {
    const bool have = j < int64_t(best.size());
    values(i, j) = have ? best[size_t(j)].value : pad_value;
    ids(i, j) = have ? best[size_t(j)].id : -1;
  }
}

}  // namespace

void merge_shard_topk(const std::vector<ShardTopK>& shards, int64_t m, int64_t k, float pad_value,
                      MatrixView<float> values, MatrixView<int64_t> ids, int threads) {
  parallel_rows(m, threads, [&](int64_t i) {
    const auto key = [](const ShardTopK& sh, int64_t at) { return sh.keys[size_t(at)]; };
    write_row(merge_row(shards, i, k, key), i, k, pad_value, values, ids);
  });
}

void merge_shard_results(const MetricPlan& plan, MatrixView<const float> Q,
                         const std::function<const float*(int64_t)>& row_of, const std::vector<ShardTopK>& shards,
                         int64_t k, float pad_value, MatrixView<float> values, MatrixView<int64_t> ids, int threads) {
  int64_t total = 0;  // a run of equal values may reach past k: every entry is kept until the runs are settled
  for (const ShardTopK& sh : shards) total += sh.ids.cols();
  parallel_rows(Q.rows, threads, [&](int64_t i) {
    const auto by_value = [&](const ShardTopK& sh, int64_t at) {
      const double v = sh.values.data()[at];
      return plan.negate ? -v : v;
    };
    std::vector<Entry> best = merge_row(shards, i, total, by_value);
    for (size_t a = 0; a < best.size() && int64_t(a) < k;) {
      size_t b = a + 1;
      while (b < best.size() && best[b].key == best[a].key) ++b;
      if (b - a > 1) {
        for (size_t c = a; c < b; ++c)
          best[c].key = ranking_key(plan, Q.row(i), row_of(best[c].id), Q.cols, best[c].value);
        std::sort(best.begin() + std::ptrdiff_t(a), best.begin() + std::ptrdiff_t(b), before);
      }
      a = b;
    }
    write_row(best, i, k, pad_value, values, ids);
  });
}

}  // namespace simkit::detail
