// lsh hashing, bucket tables and the multi-probe sequence (index/lsh_hash.hpp).

#include "index/lsh/lsh_hash.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <numeric>

#include <simkit/knn.hpp>
#include <simkit/primitives.hpp>

#include "core/exact_metric.hpp"
#include "core/parallel.hpp"
#include "core/row_stats.hpp"
#include "core/sample_rows.hpp"
#include "core/splitmix.hpp"

namespace simkit::detail {

namespace {

/// A standard normal variate (Box-Muller on splitmix64: the same numbers on every platform).
double gaussian(SplitMix64& rng) {
  const double u = 1.0 - rng.uniform();  // (0, 1]: the log stays finite
  const double v = rng.uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * v);
}

/// A standard Cauchy variate (the 1-stable law: sum a_i x_i ~ |x|_1 C), its tails cut at
/// about 1e9 so that products with the data stay far from float overflow.
double cauchy(SplitMix64& rng) {
  const double u = std::clamp(rng.uniform(), 1e-9, 1.0 - 1e-9);
  return std::tan(std::numbers::pi * (u - 0.5));
}

constexpr int64_t kProjectChunk = 1024;  // rows per sgemm task

}  // namespace

void lsh_configure(LshTables& T, int64_t dim, Metric metric, int64_t tables, int64_t bits) {
  T.dim = dim;
  T.tables = tables;
  T.bits = bits;
  T.plan = plan_metric(metric);
  T.sign = metric == Metric::dot || metric == Metric::cosine || metric == Metric::pearson;
  T.centre = metric == Metric::pearson;
  T.key_start.assign(static_cast<size_t>(tables + 1), 0);
  T.bucket_start.assign(1, 0);
}

void lsh_draw(LshTables& T, uint64_t seed) {
  SplitMix64 rng(seed ^ 0x15a4b17e5eedull);
  const int64_t H = T.hashes(), d = T.dim;
  const bool l1 = T.plan.metric == Metric::l1;
  T.projections.resize(static_cast<size_t>(H * d));
  for (int64_t h = 0; h < H; ++h) {
    float* a = T.projections.data() + h * d;
    for (int64_t i = 0; i < d; ++i) a[i] = static_cast<float>(l1 ? cauchy(rng) : gaussian(rng));
    if (T.centre) {
      // Centred hyperplanes: a . 1 = 0, so the hash cannot see a row's mean (see lsh_hash.hpp).
      const double mean = exact_mean(a, d);
      for (int64_t i = 0; i < d; ++i) a[i] = static_cast<float>(a[i] - mean);
    }
  }
  T.offsets.clear();
  if (!T.sign) {
    T.offsets.resize(static_cast<size_t>(H));
    for (float& b : T.offsets) b = static_cast<float>(rng.uniform() * T.width);
  }
}

// The width rule: w = 4 (l1: 10) x the median distance from a sample row to its nearest other sample
// row. For a Gaussian projection the chance that two points at distance r share a slab is
// 1 - 2 Phi(-w/r) - 2 / (sqrt(2 pi) w/r) (1 - exp(-(w/r)^2 / 2)) (Datar et al.), 0.80 at w = 4r:
// a near neighbour then survives each of a table's hashes with probability ~0.8, while rows
// several times farther collide with probability ~1/3 per hash, so `bits` hashes separate them.
// The nearest distance within a sample of 2,000 rows overestimates the nearest distance within
// the full data -- which errs towards wider slabs and more candidates, the safe side for recall.
// Cauchy projections (l1) collide with probability 2 atan(w/r) / pi - ln(1 + (w/r)^2) / (pi w/r),
// which reaches the same 0.8 only at w = 10r, so l1 takes 10x. Duplicates (distance 0) are left out of the median; with
// no positive distance at all the width is 1.
double lsh_width_from_data(const Context& ctx, MatrixView<const float> X, Metric metric, uint64_t seed) {
  constexpr int64_t kSample = 2000;
  if (X.rows < 2) return 1.0;
  SplitMix64 rng(seed ^ 0x3d1a5eedull);
  Matrix<float> sample;
  MatrixView<const float> S = X;
  if (X.rows > kSample) {
    sample = draw_sample(X, kSample, rng);
    S = sample.view();
  }
  Context quiet = ctx;
  quiet.progress = nullptr;
  const KnnResult r = knn(quiet, S, S, 2, metric == Metric::l1 ? Metric::l1 : Metric::l2);
  std::vector<double> nearest;
  for (int64_t i = 0; i < S.rows; ++i) {
    const int64_t slot = r.ids(i, 0) == i ? 1 : 0;
    const double v = r.values(i, slot);
    if (v > 0 && std::isfinite(v)) nearest.push_back(v);
  }
  if (nearest.empty()) return 1.0;
  auto mid = nearest.begin() + static_cast<std::ptrdiff_t>(nearest.size() / 2);
  std::nth_element(nearest.begin(), mid, nearest.end());
  return (metric == Metric::l1 ? 10.0 : 4.0) * *mid;
}

void lsh_project(const LshTables& T, MatrixView<const float> X, float* out, int threads) {
  const int64_t H = T.hashes(), d = T.dim;
  const BlasSerialScope serial;
  const int64_t chunks = (X.rows + kProjectChunk - 1) / kProjectChunk;
  std::vector<std::vector<float>> centred(static_cast<size_t>(std::max(1, threads)));
  run_tasks(Context{}, threads, chunks, [&](int64_t c, int tid) {
    const int64_t r0 = c * kProjectChunk, rows = std::min(kProjectChunk, X.rows - r0);
    const float* src = X.row(r0);
    if (T.centre) {
      std::vector<float>& buf = centred[static_cast<size_t>(tid)];
      buf.resize(static_cast<size_t>(rows * d));
      for (int64_t r = 0; r < rows; ++r) {
        const float* x = X.row(r0 + r);
        const double mean = exact_mean(x, d);
        for (int64_t i = 0; i < d; ++i) buf[static_cast<size_t>(r * d + i)] = static_cast<float>(x[i] - mean);
      }
      src = buf.data();
    }
    gemm_nt(src, rows, T.projections.data(), H, d, out + r0 * H, H);
  });
}

int64_t lsh_key(const LshTables& T, const float* proj, int64_t t) {
  const int64_t b = T.bits;
  const float* p = proj + t * b;
  if (T.sign) {
    uint64_t key = 0;
    for (int64_t j = 0; j < b; ++j) key |= static_cast<uint64_t>(p[j] >= 0) << j;
    return static_cast<int64_t>(key);
  }
  uint64_t key = kLshKeySeed;
  for (int64_t j = 0; j < b; ++j) key = lsh_mix_key(key, lsh_slab(p[j], T.offsets[size_t(t * b + j)], T.width));
  return static_cast<int64_t>(key);
}

std::vector<int64_t> lsh_row_keys(const LshTables& T, MatrixView<const float> X, int threads) {
  const int64_t H = T.hashes();
  std::vector<float> proj(static_cast<size_t>(X.rows * H));
  lsh_project(T, X, proj.data(), threads);
  std::vector<int64_t> keys(static_cast<size_t>(X.rows * T.tables));
  for (int64_t r = 0; r < X.rows; ++r)
    for (int64_t t = 0; t < T.tables; ++t)
      keys[static_cast<size_t>(r * T.tables + t)] = lsh_key(T, proj.data() + r * H, t);
  return keys;
}

void lsh_build_buckets(LshTables& T) {
  const int64_t n = T.size(), L = T.tables;
  Context host;
  host.device = Device::cpu;
  T.members.resize(static_cast<size_t>(L * n));
  T.keys.clear();
  T.key_start.assign(static_cast<size_t>(L + 1), 0);
  T.bucket_start.clear();
  std::vector<int64_t> sorted(static_cast<size_t>(n));
  for (int64_t t = 0; t < L; ++t) {
    int64_t* rows = T.members.data() + t * n;
    for (int64_t r = 0; r < n; ++r) {
      sorted[static_cast<size_t>(r)] = T.row_keys[static_cast<size_t>(r * L + t)];
      rows[r] = r;
    }
    // Stable: a bucket's rows stay ascending, which is id order.
    if (n > 0) simkit::sort(host, ArrayView<int64_t>(sorted), ArrayView<int64_t>(rows, n));
    for (int64_t r = 0; r < n; ++r) {
      if (r == 0 || sorted[size_t(r)] != sorted[size_t(r - 1)]) {
        T.keys.push_back(sorted[static_cast<size_t>(r)]);
        T.bucket_start.push_back(t * n + r);
      }
    }
    T.key_start[static_cast<size_t>(t + 1)] = static_cast<int64_t>(T.keys.size());
  }
  T.bucket_start.push_back(L * n);
}

// ------------------------------------------------------------------------------ multi-probe

void LshCandidates::add_bucket(const LshTables& T, int64_t g) {
  for (int64_t p = T.bucket_start[size_t(g)]; p < T.bucket_start[size_t(g + 1)]; ++p) {
    const int64_t r = T.members[static_cast<size_t>(p)];
    if (stamp_[static_cast<size_t>(r)] == now_) continue;
    stamp_[static_cast<size_t>(r)] = now_;
    rows_.push_back(r);
  }
}

bool lsh_whole_table(const LshTables& T, int64_t t, int64_t probes) {
  return probes >= T.buckets(t) || (T.sign && T.bits < 62 && probes >= (int64_t(1) << T.bits));
}

// The multi-probe sequence (after Lv et al., "Multi-probe LSH", VLDB 2007). A perturbation
// changes one hash of the query's key; its cost says how likely a near neighbour is to sit on
// the other side:
//   sign       flipping bit j costs |a_j . q|: a hyperplane the query nearly lies on separates
//              it from its neighbours most often (the cost is comparable within one query and
//              table, which is all the order needs);
//   p-stable   moving slab j by -1 costs f^2 and by +1 costs (1 - f)^2, f in [0, 1) being the
//              query's position within its slab: the squared distance to the slab boundary it
//              crosses, in slab widths.
// Sets of perturbations are visited in increasing total cost without listing them all: with
// the single costs sorted, a min-heap starts from {0} and each popped set {.., top} yields
// "shift" (top replaced by top + 1) and "expand" (top + 1 added); every set is reached exactly
// once and never before a cheaper one. p-stable sets holding both moves of one hash are no
// bucket and are skipped (their children are still generated). The query's own bucket comes
// first, then `probes - 1` perturbed ones; a perturbed key no stored row has is still a probe.
const std::vector<int64_t>& LshCandidates::probe(const LshTables& T, const float* proj, int64_t t, int64_t probes) {
  buckets_.clear();
  const int64_t k0 = T.key_start[size_t(t)], k1 = T.key_start[size_t(t + 1)];
  if (lsh_whole_table(T, t, probes)) {
    for (int64_t g = k0; g < k1; ++g) buckets_.push_back(g);
    return buckets_;
  }
  const int64_t* first = T.keys.data() + k0;
  const int64_t* last = T.keys.data() + k1;
  auto look_up = [&](int64_t key) {
    const int64_t* at = std::lower_bound(first, last, key);
    if (at != last && *at == key) buckets_.push_back(k0 + (at - first));
  };
  const int64_t b = T.bits;
  const float* p = proj + t * b;
  const int positions = static_cast<int>(T.sign ? b : 2 * b);
  cost_.resize(static_cast<size_t>(positions));
  slab_.resize(static_cast<size_t>(b));
  if (T.sign) {
    for (int64_t j = 0; j < b; ++j) cost_[size_t(j)] = std::fabs(static_cast<double>(p[j]));
  } else {
    for (int64_t j = 0; j < b; ++j) {
      const float off = T.offsets[size_t(t * b + j)];
      slab_[size_t(j)] = lsh_slab(p[j], off, T.width);
      const double f =
          std::clamp((static_cast<double>(p[j]) + off) / T.width - static_cast<double>(slab_[size_t(j)]), 0.0, 1.0);
      cost_[size_t(2 * j)] = f * f;                  // slab - 1
      cost_[size_t(2 * j + 1)] = (1 - f) * (1 - f);  // slab + 1
    }
  }
  order_.resize(static_cast<size_t>(positions));
  std::iota(order_.begin(), order_.end(), 0);
  std::stable_sort(order_.begin(), order_.end(), [&](int x, int y) { return cost_[size_t(x)] < cost_[size_t(y)]; });

  auto key_of = [&](uint64_t mask) -> int64_t {
    if (T.sign) {
      uint64_t key = static_cast<uint64_t>(lsh_key(T, proj, t));
      for (int s = 0; s < positions; ++s)
        if (mask >> s & 1) key ^= uint64_t(1) << order_[size_t(s)];
      return static_cast<int64_t>(key);
    }
    uint64_t key = kLshKeySeed;
    for (int64_t j = 0; j < b; ++j) {
      int64_t h = slab_[size_t(j)];
      for (int s = 0; s < positions; ++s)
        if ((mask >> s & 1) && order_[size_t(s)] / 2 == j) h += order_[size_t(s)] % 2 ? 1 : -1;
      key = lsh_mix_key(key, h);
    }
    return static_cast<int64_t>(key);
  };
  auto valid = [&](uint64_t mask) {
    if (T.sign) return true;
    uint64_t seen = 0;
    for (int s = 0; s < positions; ++s) {
      if (!(mask >> s & 1)) continue;
      const uint64_t bit = uint64_t(1) << (order_[size_t(s)] / 2);
      if (seen & bit) return false;
      seen |= bit;
    }
    return true;
  };
  auto later = [](const Node& x, const Node& y) { return x.cost > y.cost || (x.cost == y.cost && x.mask > y.mask); };

  look_up(lsh_key(T, proj, t));
  int64_t emitted = 1;
  heap_.clear();
  if (positions > 0) heap_.push_back({cost_[size_t(order_[0])], 1, 0});
  while (emitted < probes && !heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Node n = heap_.back();
    heap_.pop_back();
    if (valid(n.mask)) {
      look_up(key_of(n.mask));
      ++emitted;
    }
    if (n.top + 1 < positions) {
      const double next = cost_[size_t(order_[size_t(n.top + 1)])];
      const uint64_t up = uint64_t(1) << (n.top + 1);
      heap_.push_back(
          {n.cost - cost_[size_t(order_[size_t(n.top)])] + next, (n.mask & ~(uint64_t(1) << n.top)) | up, n.top + 1});
      std::push_heap(heap_.begin(), heap_.end(), later);
      heap_.push_back({n.cost + next, n.mask | up, n.top + 1});
      std::push_heap(heap_.begin(), heap_.end(), later);
    }
  }
  return buckets_;
}

void LshCandidates::restart(const LshTables& T) {
  const int64_t n = T.size();
  if (static_cast<int64_t>(stamp_.size()) != n) {
    stamp_.assign(static_cast<size_t>(n), 0);
    now_ = 0;
  }
  if (++now_ == 0) {  // wrapped: old stamps could alias
    std::fill(stamp_.begin(), stamp_.end(), 0);
    now_ = 1;
  }
  rows_.clear();
}

void LshCandidates::gather(const LshTables& T, const float* proj, int64_t probes) {
  restart(T);
  for (int64_t t = 0; t < T.tables; ++t)
    for (int64_t g : probe(T, proj, t, probes)) add_bucket(T, g);
}

void LshCandidates::gather(const LshTables& T, const int32_t* buckets, const int64_t* length) {
  restart(T);
  for (int64_t t = 0; t < T.tables; ++t) {
    const int64_t g0 = T.key_start[static_cast<size_t>(t)];
    for (int64_t e = 0; e < length[t]; ++e) add_bucket(T, g0 + *buckets++);
  }
}

int64_t LshCandidates::mark(const LshTables& T, const float* proj, int64_t probes, uint64_t* bits) {
  for (int64_t t = 0; t < T.tables; ++t)
    for (int64_t g : probe(T, proj, t, probes))
      for (int64_t p = T.bucket_start[size_t(g)]; p < T.bucket_start[size_t(g + 1)]; ++p) {
        const int64_t r = T.members[static_cast<size_t>(p)];
        bits[r >> 6] |= uint64_t{1} << (r & 63);
      }
  int64_t count = 0;
  for (int64_t w = 0; w < (T.size() + 63) / 64; ++w) count += std::popcount(bits[w]);
  return count;
}

}  // namespace simkit::detail
