// select_k on the CPU: the k-NN's selection (cpu/select.hpp) run over each input row. With
// fewer rows than threads (one row of 100M values), rows are cut into column stripes, each
// selecting its best k, and the stripes' picks merged per row, as k-NN does with its base.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/parallel.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/select/top_k.hpp"

namespace simkit::detail::cpu {

namespace {

constexpr int64_t kMinStripe = int64_t{1} << 16;

/// Sorts the candidates, writes the best k of them (value, id) and pads with (NaN, -1).
void write_row(std::vector<Candidate>& best, int64_t k, bool negated, float* values, int64_t* ids) {
  std::sort(best.begin(), best.end(), ranks_before);
  const int64_t have = std::min<int64_t>(k, static_cast<int64_t>(best.size()));
  for (int64_t c = 0; c < have; ++c) {
    values[c] = negated ? -best[size_t(c)].key : best[size_t(c)].key;
    ids[c] = best[size_t(c)].id;
  }
  for (int64_t c = have; c < k; ++c) values[c] = std::numeric_limits<float>::quiet_NaN(), ids[c] = -1;
}

}  // namespace

void CpuBackend::select_k(const Context& ctx, const SelectKArgs& a) const {
  translate_bad_alloc("select_k", [&] {
    const int threads = cpu_threads(ctx);
    const int64_t rows = a.in.rows, cols = a.in.cols, k = a.k;
    const bool negate = a.order == Order::descending;  // the k largest: smallest of the negated
    int64_t stripes = 1;
    if (rows < 4 * int64_t(threads))
      stripes = std::max<int64_t>(1, std::min((4 * int64_t(threads) + rows - 1) / rows, cols / kMinStripe));
    const int64_t width = (cols + stripes - 1) / stripes;
    stripes = (cols + width - 1) / width;
    std::vector<TopK> lists(static_cast<size_t>(threads));
    std::vector<std::vector<Candidate>> picks(stripes > 1 ? static_cast<size_t>(rows * stripes) : 0);

    run_tasks(ctx, threads, rows * stripes, [&](int64_t task, int tid) {
      const int64_t r = task / stripes, s = task % stripes;
      const int64_t lo = s * width, len = std::min(width, cols - lo);
      TopK& list = lists[size_t(tid)];
      list.reset(k, len, /*skip_nan=*/true);
      const float* row = a.in.row(r) + lo;
      if (negate)
        list.offer<true>(row, len, lo);
      else
        list.offer<false>(row, len, lo);
      std::vector<Candidate>& best = list.best();
      if (stripes == 1)
        write_row(best, k, negate, a.values.row(r), a.ids.row(r));
      else
        picks[size_t(task)] = best;
    });
    if (stripes == 1) return;
    run_tasks(ctx, threads, rows, [&](int64_t r, int) {
      std::vector<Candidate> all;
      for (int64_t s = 0; s < stripes; ++s) {
        const auto& p = picks[size_t(r * stripes + s)];
        all.insert(all.end(), p.begin(), p.end());
      }
      write_row(all, k, negate, a.values.row(r), a.ids.row(r));
    });
  });
}

}  // namespace simkit::detail::cpu
