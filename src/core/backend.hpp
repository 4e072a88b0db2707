#pragma once
// The seam between src/core and the two backends: one interface, one argument struct per
// operation. Core validates every argument, builds the metric plan and picks the backend
// (backend_for); a backend may then assume non-empty sets, equal dimensions, 1 <= k <= n,
// finite host inputs, correctly shaped outputs, lengths and element types that agree, and --
// on the CPU -- host memory only. Data that lives on the device is checked by the CUDA backend
// during its own passes (NaN / Inf in pairwise inputs, CSR structure, segment offsets) and
// reported with the same invalid_argument the host checks throw.
//
// The CPU backend is always built (src/cpu/backend.cpp); the CUDA backend exists when the
// build has CUDA (src/cuda/backend.cpp) and cuda_backend() is null otherwise.

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/primitives.hpp>

#include "core/kmeans_engine.hpp"
#include "core/metric_plan.hpp"
#include "core/raw_array.hpp"

namespace simkit::detail {

struct PairwiseArgs {
  MatrixView<const float> Q, X;
  MetricPlan plan;
  MatrixView<float> out;  // Q.rows x X.rows
};

struct KnnArgs {
  MatrixView<const float> Q, X;
  int64_t k = 0;
  MetricPlan plan;
  MatrixView<float> values;  // Q.rows x k
  MatrixView<int64_t> ids;   // Q.rows x k
  /// When set, only the rows of X whose bit is set (bit r of word r / 64, host memory) are
  /// candidates: a filter tested inside the scan. At least k rows must be set.
  const uint64_t* row_mask = nullptr;
};

/// out[j] = sum_i q[i] exp(-|Y_j - X_i|^2 / h^2); q has X.rows values, on the host.
struct GaussArgs {
  MatrixView<const float> X;
  const double* q = nullptr;
  MatrixView<const float> Y;
  double h = 0;
  MatrixView<double> out;
};

/// The IFGT plan for one problem (core/ifgt_plan.cpp): clusters, centres, order, cut-off, and
/// the predicted costs that `auto` compares.
struct IfgtChoice {
  bool feasible = false;               // a (K, p) exists that meets eps within the limits
  int64_t clusters = 0;                // K
  int order = 0;                       // p: monomials of total degree < p (planned; finalize_ifgt settles it)
  bool fixed_order = false;            // p was given by the caller, not chosen from eps
  double cutoff_radius = 0;            // r: clusters farther than r + their radius from a target are skipped
  double target = 0;                   // the bound the order is chosen to meet (0.99 eps)
  double error_bound = 0;              // the planned bound on |error| / sum|q| (from the sample's radii)
  std::vector<double> centres;         // K x d, row-major
  std::vector<double> box_lo, box_hi;  // the targets' bounding box (d values each)
  double ifgt_cost = 0;                // predicted seconds on the planned device
  double direct_cost = 0;              // the direct sum's, same units
  std::string why;                     // one line: the choice, or why it is infeasible
};

/// What the IFGT's plan reads of the data (core/ifgt_plan.hpp): a fixed sample of the sources
/// and targets (rows i * n / S, float64, row-major) and the targets' bounding box.
struct IfgtSample {
  int64_t n = 0, m = 0, d = 0;
  std::vector<double> x, y;
  std::vector<double> lo, hi;
};

/// What the transform settled after clustering every source (core/ifgt_plan.hpp).
struct IfgtFinal {
  int order = 0;
  double error_bound = 0;     // max(max_k T_p(A_k, B_k), E_r if any cut-off): holds for every target
  std::vector<double> reach;  // per cluster: r + its radius, the cut-off distance from its centre
};

struct ScanArgs {
  Raw in, out;
  Raw segments;  // none: a plain scan; u8: head flags; i32 / i64: offsets (segments.size - 1 segments)
  ScanOp op = ScanOp::sum;
  bool exclusive = false;
};

struct SpmvArgs {
  int64_t rows = 0, cols = 0;
  Raw offsets, indices, values, x, y;  // offsets and indices share their type, values, x, y theirs
};

/// values absent (Dtype::none) in every slot: keys only.
struct MergeArgs {
  Raw a_keys, a_values, b_keys, b_values, out_keys, out_values;
  Order order = Order::ascending;
};

struct SortArgs {
  Raw keys, values;
  Order order = Order::ascending;
};

struct SelectKArgs {
  MatrixView<const float> in;
  int64_t k = 0;
  Order order = Order::ascending;
  MatrixView<float> values;
  MatrixView<int64_t> ids;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const noexcept = 0;

  virtual void pairwise(const Context& ctx, const PairwiseArgs& a) const = 0;
  virtual void knn(const Context& ctx, const KnnArgs& a) const = 0;
  virtual void gauss_direct(const Context& ctx, const GaussArgs& a) const = 0;
  /// The IFGT with a plan from plan_ifgt.
  virtual IfgtFinal gauss_ifgt(const Context& ctx, const GaussArgs& a, const IfgtChoice& choice) const = 0;
  /// The IFGT plan's sample of sources and targets where this backend keeps them.
  virtual IfgtSample ifgt_sample(const Context& ctx, MatrixView<const float> X, MatrixView<const float> Y) const = 0;

  virtual void scan(const Context& ctx, const ScanArgs& a) const = 0;
  virtual void spmv(const Context& ctx, const SpmvArgs& a) const = 0;
  virtual void merge(const Context& ctx, const MergeArgs& a) const = 0;
  virtual void sort(const Context& ctx, const SortArgs& a) const = 0;
  virtual void select_k(const Context& ctx, const SelectKArgs& a) const = 0;

  /// k-means' training points X (n x d, host) held by this backend (core/kmeans_engine.hpp);
  /// spherical: the cosine metric.
  virtual std::unique_ptr<KmeansEngine> kmeans_engine(const Context& ctx, MatrixView<const float> X,
                                                      bool spherical) const = 0;

  /// Copies host bytes into device memory (indexes hand their host results to device outputs).
  virtual void copy_to_device(const Context& ctx, void* dst, const void* src, size_t bytes) const;
  /// Copies device bytes into host memory (an index re-ranking ties of device queries).
  virtual void copy_to_host(const Context& ctx, void* dst, const void* src, size_t bytes) const;

  /// True when every element of a matrix this backend can read is finite.
  virtual bool all_finite(const Context& ctx, MatrixView<const float> m) const = 0;

  // The devices behind the backend (none for the CPU).
  virtual std::vector<GpuInfo> gpus() const { return {}; }
  /// How many devices gpus() lists, without its per-call free-memory queries.
  virtual int device_count() const { return 0; }
  /// CUDA architectures the backend was compiled for, e.g. "80;86;89;90".
  virtual const char* architectures() const noexcept { return ""; }
};

const Backend& cpu_backend();
/// OpenBLAS's name for the kernels it chose for this CPU (src/cpu/parallel.cpp).
std::string blas_core_name();
/// The CUDA backend, or null in a build without CUDA (src/core/cuda_absent.cpp).
const Backend* cuda_backend();

/// The backend that runs a call: the device Context asks for (resolve_device); refuses with
/// invalid_argument, prefixed by `fn` when given, a device-resident array on the CPU.
const Backend& backend_for(const Context& ctx, std::initializer_list<Memory> arrays, const char* fn = nullptr);

}  // namespace simkit::detail
