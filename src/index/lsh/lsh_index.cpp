// lsh: hash tables over random projections (index/lsh_hash.hpp), bucket tables as sorted CSRs
// (index/lsh_tables.hpp), and the backends' probe-and-rank searches (cpu/lsh/, cuda/lsh/).
//
// Unlike the seed document's version, a query whose probed buckets hold fewer than k rows is
// not answered by a silent full scan: its row is padded and SearchStats::short_rows counts it,
// so a caller sees that the configuration is too selective (more probes, more tables, fewer
// bits) instead of paying a flat search without knowing.

#include "index/lsh/lsh_index.hpp"
#include "index/search_params.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/parallel.hpp"
#include "index/filtered_search.hpp"
#include "index/id_map.hpp"
#include "index/index_support.hpp"
#include "index/lsh/lsh_hash.hpp"
#include "index/lsh/lsh_searchers.hpp"

namespace simkit::detail {

namespace {

class LshIndex final : public Index {
 public:
  LshIndex(int64_t dim, Metric metric, const LshParams& p) : params_(p), metric_(metric) {
    lsh_configure(T_, dim, metric, p.tables, p.bits);
    T_.width = p.width;
  }

  std::string type() const override { return "lsh"; }
  std::string description() const override { return describe_lsh(params_); }
  int64_t dim() const noexcept override { return T_.dim; }
  Metric metric() const noexcept override { return metric_; }
  int64_t size() const override {
    std::shared_lock lock(mutex_);
    return T_.size();
  }
  bool is_trained() const override {
    std::shared_lock lock(mutex_);
    return T_.trained();
  }
  size_t memory_bytes() const override {
    std::shared_lock lock(mutex_);
    return (T_.vectors.size() + T_.projections.size() + T_.offsets.size()) * sizeof(float) +
           (T_.ids.size() + T_.row_keys.size() + T_.keys.size() + T_.key_start.size() + T_.bucket_start.size() +
            T_.members.size() + static_cast<size_t>(ids_.size())) *
               sizeof(int64_t);
  }
  int64_t next_id() const override {
    std::shared_lock lock(mutex_);
    return ids_.next();
  }

  void train(const Context& ctx, MatrixView<const float> X) override {
    check_rows(ctx, X, T_.dim, "train");
    std::unique_lock lock(mutex_);
    SIMKIT_EXPECTS(T_.size() == 0, invalid_argument, "train: the index already holds ", T_.size(),
                   " vectors, which new hash functions would misplace; build a new index");
    if (!T_.sign) T_.width = params_.width > 0 ? params_.width : lsh_width_from_data(ctx, X, metric_, params_.seed);
    lsh_draw(T_, params_.seed);
    drop_device_copy();
    if (ctx.progress) ctx.progress(1.0);
  }

  void add(const Context& ctx, MatrixView<const float> X, ArrayView<const int64_t> given) override {
    check_rows(ctx, X, T_.dim, "add");
    std::unique_lock lock(mutex_);
    SIMKIT_EXPECTS(T_.trained(), invalid_argument, "add: train the lsh index first");
    const std::vector<int64_t> ids = ids_.assign(given, X.rows);
    const int64_t L = T_.tables, d = T_.dim, m = X.rows, n_old = T_.size();
    const std::vector<int64_t> fresh_keys = lsh_row_keys(T_, X, cpu_threads(ctx));
    std::vector<int64_t> fresh(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) fresh[size_t(i)] = i;
    std::sort(fresh.begin(), fresh.end(), [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });

    // Merge by id: rows stay in id order (lsh_tables.hpp).
    std::vector<float> vectors(static_cast<size_t>((n_old + m) * d));
    std::vector<int64_t> all_ids, row_keys;
    all_ids.reserve(static_cast<size_t>(n_old + m));
    row_keys.reserve(static_cast<size_t>((n_old + m) * L));
    float* out = vectors.data();
    int64_t r = 0;
    size_t f = 0;
    while (r < n_old || f < fresh.size()) {
      const bool take_old = f == fresh.size() || (r < n_old && T_.ids[size_t(r)] < ids[size_t(fresh[f])]);
      if (take_old) {
        out = std::copy_n(T_.vectors.data() + r * d, d, out);
        all_ids.push_back(T_.ids[size_t(r)]);
        row_keys.insert(row_keys.end(), T_.row_keys.begin() + r * L, T_.row_keys.begin() + (r + 1) * L);
        ++r;
      } else {
        const int64_t i = fresh[f++];
        out = std::copy_n(X.row(i), d, out);
        all_ids.push_back(ids[size_t(i)]);
        row_keys.insert(row_keys.end(), fresh_keys.begin() + i * L, fresh_keys.begin() + (i + 1) * L);
      }
    }
    T_.vectors = std::move(vectors);
    T_.ids = std::move(all_ids);
    T_.row_keys = std::move(row_keys);
    lsh_build_buckets(T_);
    ids_.insert(ids);
    drop_device_copy();
    if (ctx.progress) ctx.progress(1.0);
  }

  int64_t remove(ArrayView<const int64_t> gone) override {
    std::unique_lock lock(mutex_);
    const int64_t removed = ids_.erase(gone);
    if (removed == 0) return 0;
    std::vector<int64_t> sorted_gone(gone.data, gone.data + gone.size);
    std::sort(sorted_gone.begin(), sorted_gone.end());
    const int64_t d = T_.dim, L = T_.tables;
    int64_t out = 0;
    for (int64_t r = 0; r < T_.size(); ++r) {
      if (std::binary_search(sorted_gone.begin(), sorted_gone.end(), T_.ids[size_t(r)])) continue;
      if (out != r) {
        std::copy_n(T_.vectors.data() + r * d, d, T_.vectors.data() + out * d);
        std::copy_n(T_.row_keys.data() + r * L, L, T_.row_keys.data() + out * L);
        T_.ids[size_t(out)] = T_.ids[size_t(r)];
      }
      ++out;
    }
    T_.vectors.resize(static_cast<size_t>(out * d));
    T_.row_keys.resize(static_cast<size_t>(out * L));
    T_.ids.resize(static_cast<size_t>(out));
    lsh_build_buckets(T_);
    drop_device_copy();
    return removed;
  }

  void search(const Context& ctx, MatrixView<const float> Q, int64_t k, const SearchParams& sp,
              MatrixView<float> values, MatrixView<int64_t> ids) const override {
    check_search(ctx, Q, T_.dim, k, values, ids);
    const LshSearchParams* own = own_search_params<LshSearchParams>(sp, "lsh", "LshSearchParams");
    const int64_t asked = own ? own->probes : 0;
    SIMKIT_EXPECTS(asked >= 0, invalid_argument, "search: probes must be >= 1 (0: the index's default), got ", asked);
    const int64_t probes = asked > 0 ? asked : params_.probes;
    if (sp.allowed) check_allowed(*sp.allowed);
    std::shared_lock lock(mutex_);
    if (sp.allowed) {
      // An allow-list is met exactly over its rows, whatever buckets hold them (index.hpp).
      // search_allowed counts the rows as candidates, a short list's queries, and the gather.
      return search_allowed(ctx, Q, k, metric_, T_.rows(), allowed_rows_sorted(T_.ids, *sp.allowed), values, ids,
                            sp.stats);
    }
    SearchOutput out(values, ids);
    if (T_.size() == 0 || !T_.trained()) {
      out.pad_all(metric_);
      if (sp.stats) sp.stats->short_rows += Q.rows;
    } else {
      const Backend& backend = backend_for(ctx, {Q.where}, "search");
      int64_t short_rows = 0, candidates = 0;
      const LshSearchArgs args{&T_, Q, k, probes, out.values(), out.ids(), &short_rows, &candidates};
      backend.device() == Device::gpu ? cuda::lsh_search(ctx, args) : cpu::lsh_search(ctx, args);
      if (sp.stats) {
        sp.stats->short_rows += short_rows;
        sp.stats->candidates += candidates;
      }
    }
    out.deliver(ctx);
  }

  void save(const std::string& path) const override {
    std::shared_lock lock(mutex_);
    IndexFileWriter w;
    write_common(w, "lsh", metric_, T_.dim, T_.size(), ids_.next());
    w.add_text("description", describe_lsh(params_));
    w.add_u64("trained", T_.trained() ? 1 : 0);
    w.add_u64("width", std::bit_cast<uint64_t>(T_.width));
    w.add("projections", T_.projections.data(), T_.projections.size() * sizeof(float));
    w.add("offsets", T_.offsets.data(), T_.offsets.size() * sizeof(float));
    w.add("ids", T_.ids.data(), T_.ids.size() * sizeof(int64_t));
    w.add("vectors", T_.vectors.data(), T_.vectors.size() * sizeof(float));
    w.add("key_start", T_.key_start.data(), T_.key_start.size() * sizeof(int64_t));
    w.add("keys", T_.keys.data(), T_.keys.size() * sizeof(int64_t));
    w.add("bucket_start", T_.bucket_start.data(), T_.bucket_start.size() * sizeof(int64_t));
    w.add("members", T_.members.data(), T_.members.size() * sizeof(int64_t));
    w.write(path);
  }

  void load(const IndexFile& f, const CommonHeader& h) {
    const bool trained = f.u64("trained") != 0;
    if (!trained && h.size != 0) refuse_file(f, "an untrained lsh index cannot hold vectors");
    const int64_t n = h.size, d = h.dim, L = T_.tables, H = T_.hashes();
    const double width = std::bit_cast<double>(f.u64("width"));
    if (trained) {
      T_.projections = read_array<float>(f, "projections", H * d);
      check_finite_section(f, "projections", T_.projections);
      if (!T_.sign) {
        if (!(std::isfinite(width) && width > 0)) refuse_file(f, "the p-stable width is not a positive number");
        if (params_.width > 0 && width != params_.width)
          refuse_file(f, "the stored width contradicts the description's width=");
        T_.offsets = read_array<float>(f, "offsets", H);
        for (float b : T_.offsets)
          if (!(b >= 0 && b < width)) refuse_file(f, "a p-stable offset lies outside [0, width)");
        T_.width = width;
      }
    }
    std::vector<int64_t> ids = read_array<int64_t>(f, "ids", n);
    if (!std::is_sorted(ids.begin(), ids.end())) refuse_file(f, "the lsh index's ids are not in order");
    T_.vectors = read_array<float>(f, "vectors", n * d);
    check_finite_section(f, "vectors", T_.vectors);

    // The bucket tables: each table's offsets partition its n members, keys ascend strictly,
    // members are row numbers, each row once per table.
    size_t bytes = 0;
    f.bytes("keys", &bytes);
    const int64_t nkeys = static_cast<int64_t>(bytes / sizeof(int64_t));
    if (nkeys > L * n) refuse_file(f, "more buckets than rows");
    T_.keys = read_array<int64_t>(f, "keys", nkeys);
    T_.key_start = read_array<int64_t>(f, "key_start", L + 1);
    T_.bucket_start = read_array<int64_t>(f, "bucket_start", nkeys + 1);
    T_.members = read_array<int64_t>(f, "members", L * n);
    const auto& ks = T_.key_start;
    const auto& bs = T_.bucket_start;
    if (ks.front() != 0 || ks.back() != nkeys || !std::is_sorted(ks.begin(), ks.end()))
      refuse_file(f, "the tables' key offsets do not partition the " + std::to_string(nkeys) + " buckets");
    if (bs.back() != L * n) refuse_file(f, "the bucket offsets do not end at tables x size");
    std::vector<uint8_t> seen(static_cast<size_t>(n));
    T_.row_keys.assign(static_cast<size_t>(n * L), 0);
    for (int64_t t = 0; t < L; ++t) {
      if ((n == 0) != (ks[size_t(t + 1)] == ks[size_t(t)]))
        refuse_file(f, "table " + std::to_string(t) + " has buckets without rows or rows without buckets");
      if (n > 0 && bs[size_t(ks[size_t(t)])] != t * n)
        refuse_file(f, "the bucket offsets of table " + std::to_string(t) + " do not partition its rows");
      std::fill(seen.begin(), seen.end(), 0);
      for (int64_t g = ks[size_t(t)]; g < ks[size_t(t + 1)]; ++g) {
        const int64_t end = g + 1 < ks[size_t(t + 1)] ? bs[size_t(g + 1)] : (t + 1) * n;
        if (!(bs[size_t(g)] < end) || end > (t + 1) * n)
          refuse_file(f, "the bucket offsets of table " + std::to_string(t) + " do not partition its rows");
        if (g > ks[size_t(t)] && !(T_.keys[size_t(g - 1)] < T_.keys[size_t(g)]))
          refuse_file(f, "the keys of table " + std::to_string(t) + " are not ascending");
        for (int64_t p = bs[size_t(g)]; p < end; ++p) {
          const int64_t r = T_.members[size_t(p)];
          if (r < 0 || r >= n) refuse_file(f, "a bucket member is out of range");
          if (seen[size_t(r)]++) refuse_file(f, "a row sits twice in table " + std::to_string(t));
          T_.row_keys[size_t(r * L + t)] = T_.keys[size_t(g)];
        }
      }
    }
    T_.ids = ids;
    ids_.reset(std::move(ids), h.next_id, f.path());
  }

 private:
  void drop_device_copy() {
    {
      std::lock_guard g(T_.stats_mutex);
      T_.stats.reset();
    }
    std::lock_guard g(T_.device_mutex);
    T_.device.reset();
  }

  LshParams params_;
  Metric metric_;
  LshTables T_;
  IdMap ids_;
  mutable std::shared_mutex mutex_;
};

}  // namespace

std::string describe_lsh(const LshParams& p) {
  char width[64];
  const auto res = std::to_chars(width, width + sizeof(width), p.width);  // shortest form that parses back
  return "lsh,tables=" + std::to_string(p.tables) + ",bits=" + std::to_string(p.bits) +
         ",probes=" + std::to_string(p.probes) + ",width=" + std::string(width, res.ptr) +
         ",seed=" + std::to_string(p.seed);
}

std::unique_ptr<Index> make_lsh_index(int64_t dim, Metric metric, const LshParams& p) {
  return std::make_unique<LshIndex>(dim, metric, p);
}

std::unique_ptr<Index> load_lsh_index(const IndexFile& f, const LshParams& p) {
  const CommonHeader h = read_common(f, "lsh");
  auto index = std::make_unique<LshIndex>(h.dim, h.metric, p);
  index->load(f, h);
  return index;
}

}  // namespace simkit::detail
