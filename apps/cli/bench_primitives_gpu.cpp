// The GPU half of `simkit bench primitives`: inputs made on the host (select_k's 40 GB matrix
// on the device), copied over once; simkit and its CUB / cuSPARSE peer each timed on data
// resident on the GPU, with their outputs copied back afterwards for the checks.

#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "bench_primitives.hpp"

#if SIMKIT_CLI_CUDA
#include <algorithm>
#include <cstdlib>
#include <numeric>

#include <simkit/device_matrix.hpp>
#include <simkit/primitives.hpp>

#include "gpu_peers.hpp"
#endif

namespace simkit::cli::bench::primitives {

#if SIMKIT_CLI_CUDA
namespace {

/// A device array of n elements, uninitialised or a copy of a host vector.
template <class T>
struct DeviceArray {
  DeviceMatrix<T> m;
  DeviceArray(const Context& ctx, int64_t n) : m(ctx, 1, std::max<int64_t>(n, 1)) {}
  DeviceArray(const Context& ctx, const std::vector<T>& host)
      : m(ctx, MatrixView<const T>{host.data(), 1, static_cast<int64_t>(host.size())}) {}
  T* data() { return m.view().data; }
  int64_t size() const { return m.cols(); }
  ArrayView<T> view() { return {data(), size(), Memory::device}; }
  std::vector<T> download() {
    std::vector<T> h(static_cast<size_t>(size()));
    gpu_peers::to_host(h.data(), data(), h.size() * sizeof(T));
    return h;
  }
};

/// While alive, the primitives run simkit's own kernels even where CUB serves them by default
/// (SIMKIT_PRIMITIVES_OWN, read by the library at every call).
class OwnKernels {
 public:
  OwnKernels() {
    if (const char* v = std::getenv("SIMKIT_PRIMITIVES_OWN")) saved_ = v, had_ = true;
    setenv("SIMKIT_PRIMITIVES_OWN", "1", 1);
  }
  ~OwnKernels() {
    if (had_)
      setenv("SIMKIT_PRIMITIVES_OWN", saved_.c_str(), 1);
    else
      unsetenv("SIMKIT_PRIMITIVES_OWN");
  }
  OwnKernels(const OwnKernels&) = delete;
  OwnKernels& operator=(const OwnKernels&) = delete;

 private:
  std::string saved_;
  bool had_ = false;
};

struct Gpu {
  const Setup& s;
  Report& report;
  std::optional<double> pct(double gb) const {
    if (s.gpu->memory_bandwidth_gbs > 0) return 100.0 * gb / s.gpu->memory_bandwidth_gbs;
    return std::nullopt;
  }
  Stats timed(const std::function<void()>& fn, const std::function<void()>& before = {}) const {
    return primitives::timed(s, fn, before);
  }
};

template <class T>
void scan_case(Gpu& g, int64_t n, uint64_t seed) {
  const Context& ctx = g.s.ctx;
  const char* type = std::is_same_v<T, float> ? "float32" : "int32";
  const auto host = scan_input<T>(n, seed);
  DeviceArray<T> in(ctx, host), ours_out(ctx, n), peer_out(ctx, n);
  const Stats ours = g.timed([&] { inclusive_scan<T>(ctx, in.view(), ours_out.view()); });
  const Stats theirs = g.timed(gpu_peers::cub_inclusive_sum<T>(in.data(), peer_out.data(), n));
  double err = 0, peer_err = 0, own_err = 0;
  bool pass = false, peer_pass = false;
  std::optional<Stats> own;
  if constexpr (std::is_same_v<T, float>) {
    // A float prefix sum rounds at every level; 1e-5 of the running total is far above any
    // sound summation order at 2^28 and far below a lost or doubled element (>= 1 / n).
    err = scan_error(host, ours_out.download()), peer_err = scan_error(host, peer_out.download());
    pass = err <= 1e-5, peer_pass = peer_err <= 1e-5;
  } else {
    err = double(scan_mismatches(host, ours_out.download()));
    peer_err = double(scan_mismatches(host, peer_out.download()));
    pass = err == 0, peer_pass = peer_err == 0;
    OwnKernels guard;  // integer scans are served by CUB by default
    own = g.timed([&] { inclusive_scan<T>(ctx, in.view(), ours_out.view()); });
    own_err = double(scan_mismatches(host, ours_out.download()));
  }
  const double bytes = 2.0 * double(n) * sizeof(T), gb = gbps(bytes, ours.median_ms);
  const double pgb = gbps(bytes, theirs.median_ms);
  const std::vector<Row> peers{
      make_row("scan", type, "small", 1, n, 0, "cub", theirs, pgb, g.pct(pgb), peer_err, peer_pass)};
  g.report.add(std::string("scan ") + (std::is_same_v<T, float> ? "float" : "int32"), size_label(n),
               make_row("scan", type, "small", 1, n, 0, "gpu", ours, gb, g.pct(gb), err, pass), "GB/s", peers);
  if (own) {
    const double ogb = gbps(bytes, own->median_ms);
    g.report.add_own(make_row("scan", type, "small", 1, n, 0, "gpu-own", *own, ogb, g.pct(ogb), own_err, own_err == 0),
                     "GB/s", peers);
  }
}

void merge_case(Gpu& g, int64_t n, Pattern pat, uint64_t seed) {
  const Context& ctx = g.s.ctx;
  const auto [a, b] = merge_input(n, pat, seed);
  std::vector<int32_t> ref(static_cast<size_t>(n));
  std::merge(a.begin(), a.end(), b.begin(), b.end(), ref.begin());
  DeviceArray<int32_t> da(ctx, a), db(ctx, b), ours_out(ctx, n), peer_out(ctx, n);
  const Stats ours = g.timed([&] { merge<int32_t>(ctx, da.view(), db.view(), ours_out.view()); });
  const Stats theirs =
      g.timed(gpu_peers::cub_merge_keys(da.data(), int64_t(a.size()), db.data(), int64_t(b.size()), peer_out.data()));
  auto mismatches = [&](const std::vector<int32_t>& got) {
    int64_t bad = 0;
    for (size_t i = 0; i < ref.size(); ++i) bad += got[i] != ref[i];
    return double(bad);
  };
  const double bad = mismatches(ours_out.download()), peer_bad = mismatches(peer_out.download());
  Stats own;
  double own_bad = 0;
  {
    OwnKernels guard;  // int keys without values are merged by CUB by default
    own = g.timed([&] { merge<int32_t>(ctx, da.view(), db.view(), ours_out.view()); });
    own_bad = mismatches(ours_out.download());
  }
  const double bytes = 2.0 * double(n) * 4, gb = gbps(bytes, ours.median_ms), pgb = gbps(bytes, theirs.median_ms);
  const double ogb = gbps(bytes, own.median_ms);
  const std::vector<Row> peers{
      make_row("merge", "int32", name(pat), 1, n, 0, "cub", theirs, pgb, g.pct(pgb), peer_bad, peer_bad == 0)};
  g.report.add(std::string("merge int32 ") + name(pat), size_label(n),
               make_row("merge", "int32", name(pat), 1, n, 0, "gpu", ours, gb, g.pct(gb), bad, bad == 0), "GB/s",
               peers);
  g.report.add_own(
      make_row("merge", "int32", name(pat), 1, n, 0, "gpu-own", own, ogb, g.pct(ogb), own_bad, own_bad == 0), "GB/s",
      peers);
}

/// Keys (and with `pairs` an int32 value per key, its input position) sorted by simkit, by
/// CUB's merge sort and by CUB's radix sort; simkit's result must equal both, bit for bit
/// (all three are stable).
void sort_case(Gpu& g, int64_t n, Pattern pat, bool pairs, uint64_t seed) {
  const Context& ctx = g.s.ctx;
  const char* op = pairs ? "sortpairs" : "sort";
  std::vector<int32_t> iota(pairs ? size_t(n) : 0);
  std::iota(iota.begin(), iota.end(), 0);
  DeviceArray<int32_t> original(ctx, sort_input(n, pat, seed)), positions(ctx, pairs ? iota : std::vector<int32_t>{0});
  DeviceArray<int32_t> keys(ctx, n), values(ctx, n), peer_keys(ctx, n), peer_values(ctx, n), radix_keys(ctx, n),
      radix_values(ctx, n);
  auto reset = [&](DeviceArray<int32_t>& k, DeviceArray<int32_t>& v) {
    gpu_peers::device_copy(k.data(), original.data(), size_t(n) * 4);
    if (pairs) gpu_peers::device_copy(v.data(), positions.data(), size_t(n) * 4);
  };
  auto simkit_sort = [&] {
    if (pairs)
      sort<int32_t, int32_t>(ctx, keys.view(), values.view());
    else
      sort<int32_t>(ctx, keys.view());
  };
  const Stats ours = g.timed(simkit_sort, [&] { reset(keys, values); });
  const Stats theirs = g.timed(gpu_peers::cub_merge_sort(peer_keys.data(), pairs ? peer_values.data() : nullptr, n),
                               [&] { reset(peer_keys, peer_values); });
  const Stats radix = g.timed(gpu_peers::cub_radix_sort(original.data(), radix_keys.data(),
                                                        pairs ? positions.data() : nullptr, radix_values.data(), n));
  const auto k_peer = peer_keys.download();
  const auto v_peer = pairs ? peer_values.download() : std::vector<int32_t>{};
  auto mismatches = [&](DeviceArray<int32_t>& k, DeviceArray<int32_t>& v) {
    const auto hk = k.download();
    const auto hv = pairs ? v.download() : std::vector<int32_t>{};
    int64_t bad = 0;
    for (size_t i = 0; i < size_t(n); ++i) bad += hk[i] != k_peer[i] || (pairs && hv[i] != v_peer[i]);
    return bad;
  };
  int64_t peer_bad = 0;
  for (size_t i = 1; i < size_t(n); ++i) peer_bad += k_peer[i - 1] > k_peer[i];  // the peer itself: sorted
  const int64_t bad = mismatches(keys, values), radix_bad = mismatches(radix_keys, radix_values);
  Stats own;
  int64_t own_bad = 0;
  {
    OwnKernels guard;  // int keys are radix-sorted by CUB by default
    own = g.timed(simkit_sort, [&] { reset(keys, values); });
    own_bad = mismatches(keys, values);
  }
  const double gk = 1e-9 * double(n);
  const std::vector<Row> peers{make_row(op, "int32", name(pat), 1, n, 0, "cub", theirs, gk / (theirs.median_ms * 1e-3),
                                        {}, double(peer_bad), peer_bad == 0),
                               make_row(op, "int32", name(pat), 1, n, 0, "cub-radix", radix,
                                        gk / (radix.median_ms * 1e-3), {}, double(radix_bad), radix_bad == 0)};
  g.report.add(
      std::string(op) + " int32 " + name(pat), size_label(n),
      make_row(op, "int32", name(pat), 1, n, 0, "gpu", ours, gk / (ours.median_ms * 1e-3), {}, double(bad), bad == 0),
      "Gkeys/s", peers);
  g.report.add_own(make_row(op, "int32", name(pat), 1, n, 0, "gpu-own", own, gk / (own.median_ms * 1e-3), {},
                            double(own_bad), own_bad == 0),
                   "Gkeys/s", peers);
}

void spmv_case(Gpu& g, const Plan& plan, uint64_t seed) {
  const Context& ctx = g.s.ctx;
  const Csr A = power_law_csr(plan.spmv_rows, plan.spmv_nnz, plan.spmv_long_row, seed);
  std::vector<float> x(size_t(A.cols));
  for (size_t j = 0; j < x.size(); ++j) x[j] = float(j % 17) / 8.0f - 1.0f;
  DeviceArray<int32_t> off(ctx, A.offsets), idx(ctx, A.indices);
  DeviceArray<float> val(ctx, A.values), dx(ctx, x), y(ctx, A.rows), peer_y(ctx, A.rows);
  const int64_t nnz = int64_t(A.values.size());
  const CsrView<float, int32_t> view{A.rows, A.cols, off.view(), idx.view(), val.view()};
  const Stats ours = g.timed([&] { spmv_csr<float, int32_t>(ctx, view, dx.view(), y.view()); });
  const Stats theirs = g.timed(
      gpu_peers::cusparse_spmv(A.rows, A.cols, nnz, off.data(), idx.data(), val.data(), dx.data(), peer_y.data()));
  const double err = spmv_error(A, x, y.download()), peer_err = spmv_error(A, x, peer_y.download());
  const double bytes = 8.0 * double(nnz) + 8.0 * double(A.rows) + 4.0 * double(A.cols);
  const double gb = gbps(bytes, ours.median_ms), pgb = gbps(bytes, theirs.median_ms);
  g.report.add("spmv float power-law",
               std::to_string(A.rows) + " rows, " + std::to_string(nnz) + " nnz, longest " + std::to_string(A.longest),
               make_row("spmv", "float32", "powerlaw", A.rows, nnz, 0, "gpu", ours, gb, g.pct(gb), err, err <= 1e-6),
               "GB/s",
               {make_row("spmv", "float32", "powerlaw", A.rows, nnz, 0, "cusparse", theirs, pgb, g.pct(pgb), peer_err,
                         peer_err <= 1e-6)});
}

void select_cases(Gpu& g, const Plan& plan, uint64_t seed) {
  const Context& ctx = g.s.ctx;
  const int64_t rows = plan.select_rows, cols = plan.select_cols;
  DeviceMatrix<float> data(ctx, rows, cols);
  gpu_peers::fill_uniform(data.view().data, rows * cols, seed);
  const std::vector<int64_t> checked = sample_rows(rows, 16);
  std::vector<std::vector<float>> sample;
  for (int64_t r : checked) {
    sample.emplace_back(size_t(cols));
    gpu_peers::to_host(sample.back().data(), data.view().row(r), size_t(cols) * 4);
  }
  for (int64_t k : plan.select_k) {
    DeviceMatrix<float> values(ctx, rows, k);
    DeviceMatrix<int64_t> ids(ctx, rows, k);
    const Stats ours = g.timed([&] { select_k(ctx, data.view(), k, Order::ascending, values.view(), ids.view()); });
    Matrix<float> hv(rows, k);
    Matrix<int64_t> hi(rows, k);
    values.copy_to_host(hv.view());
    ids.copy_to_host(hi.view());
    int64_t bad = 0;
    for (size_t i = 0; i < checked.size(); ++i) {
      const auto ref = smallest_k(sample[i].data(), cols, k);
      for (int64_t j = 0; j < k; ++j)
        bad += hv(checked[i], j) != ref[size_t(j)].first || hi(checked[i], j) != ref[size_t(j)].second;
    }
    const double gb = gbps(4.0 * double(rows) * double(cols), ours.median_ms);
    g.report.add(
        "select float k=" + std::to_string(k), std::to_string(rows) + "x" + std::to_string(cols),
        make_row("select", "float32", "uniform", rows, cols, k, "gpu", ours, gb, g.pct(gb), double(bad), bad == 0),
        "GB/s");
  }
}

}  // namespace

void run_gpu(const Setup& s, const Plan& plan, uint64_t seed, Report& report) {
  Gpu g{s, report};
  auto has = [&](const char* c) { return std::find(plan.cases.begin(), plan.cases.end(), c) != plan.cases.end(); };
  for (int ls : plan.log_sizes) {
    const int64_t n = int64_t{1} << ls;
    if (has("scan")) scan_case<int32_t>(g, n, seed), scan_case<float>(g, n, seed);
    for (Pattern p : plan.patterns) {
      if (has("merge")) merge_case(g, n, p, seed);
      if (has("sort")) sort_case(g, n, p, false, seed);
      if (has("sortpairs")) sort_case(g, n, p, true, seed);
    }
  }
  if (has("spmv")) spmv_case(g, plan, seed);
  if (has("select")) select_cases(g, plan, seed);
}

#else

void run_gpu(const Setup&, const Plan&, uint64_t, Report&) {
  throw Error(ErrorCode::unsupported, "bench primitives: this simkit was built without CUDA (no GPU peers)");
}

#endif

}  // namespace simkit::cli::bench::primitives
