#pragma once
// The seam between src/core (validation, dispatch) and the two backends. Core validates every
// argument before calling in, so backends may assume: non-empty sets, equal dimensions,
// 1 <= k <= n, finite inputs, correctly shaped outputs. One exception: cuda::pairwise checks
// its device-resident inputs for NaN / Inf itself and throws the same invalid_argument.

#include <cstdint>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>
#include <simkit/metric.hpp>

namespace simkit::detail {

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

namespace cpu {
// Host memory only.
void pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric,
              MatrixView<float> out);
void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids);
/// Direct Gauss transform: out[j] = sum_i q[i] exp(-|Y_j - X_i|^2 / h^2); q has X.rows values.
void gauss_direct(const Context& ctx, MatrixView<const float> X, const double* q, MatrixView<const float> Y, double h,
                  double* out);
/// The IFGT with a plan from plan_ifgt (host views).
IfgtFinal gauss_ifgt(const Context& ctx, MatrixView<const float> X, const double* q, MatrixView<const float> Y,
                     double h, const IfgtChoice& choice, double* out);
}  // namespace cpu

namespace cuda {
// In a CPU-only build these are defined in src/core/cuda_absent.cpp: gpus() is empty and the
// rest throw Error(unsupported).
std::vector<GpuInfo> gpus();
/// How many devices gpus() lists, without its per-call free-memory queries: what every call's
/// device resolution needs, cheaply.
int device_count();
// Views may be host or device, independently.
void pairwise(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, Metric metric,
              MatrixView<float> out);
void knn(const Context& ctx, MatrixView<const float> Q, MatrixView<const float> X, int64_t k, Metric metric,
         MatrixView<float> values, MatrixView<int64_t> ids);
/// Direct Gauss transform on the GPU; X, Y, out host or device, q on the host.
void gauss_direct(const Context& ctx, MatrixView<const float> X, const double* q, MatrixView<const float> Y, double h,
                  MatrixView<double> out);
/// The IFGT on the GPU with a plan from plan_ifgt (d <= kIfgtMaxGpuDims); views as above.
IfgtFinal gauss_ifgt(const Context& ctx, MatrixView<const float> X, const double* q, MatrixView<const float> Y,
                     double h, const IfgtChoice& choice, MatrixView<double> out);
/// The IFGT plan's sample of sources and targets, either of them host or device (ifgt.cu).
IfgtSample ifgt_sample(const Context& ctx, MatrixView<const float> X, MatrixView<const float> Y);
/// True when every element of a device-resident matrix is finite.
bool all_finite_on_device(const Context& ctx, MatrixView<const float> m);
/// CUDA architectures this library was compiled for, e.g. "80;86;89;90".
const char* compiled_architectures() noexcept;
}  // namespace cuda

}  // namespace simkit::detail
