// The n-body entry points: argument checks, host copies of the inputs (the checks read every
// value, and the searchers take host inputs: an O(n) copy beside an O(n m) sum), then the
// direct sum of the backend that runs the call.

#include <simkit/nbody.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "nbody/nbody_direct.hpp"
#include "nbody/nbody_tree.hpp"

namespace simkit {

namespace {

/// The rows of `v` on the host: `v` itself, or a copy made through `backend`.
const float* host_rows(const Context& ctx, const detail::Backend& backend, MatrixView<const float> v,
                       std::vector<float>& holder) {
  if (v.where == Memory::host) return v.data;
  holder.resize(size_t(v.size()));
  backend.copy_to_host(ctx, holder.data(), v.data, holder.size() * sizeof(float));
  return holder.data();
}

void check_rows(const float* rows, int64_t count, int64_t cols, bool masses, const char* what) {
  for (int64_t i = 0; i < count; ++i)
    for (int64_t c = 0; c < cols; ++c) {
      const float v = rows[i * cols + c];
      SIMKIT_EXPECTS(std::isfinite(v), invalid_argument, "nbody: ", what, " row ", i, " column ", c, " is ", v,
                     " (every coordinate and mass must be finite)");
      SIMKIT_EXPECTS(!(masses && c == 3 && v < 0), invalid_argument, "nbody: ", what, " row ", i, " has mass ", v,
                     " (masses must be >= 0)");
    }
}

NbodyReport run(const Context& ctx, MatrixView<const float> targets, bool targets_are_bodies,
                MatrixView<const float> sources, MatrixView<float> accel, ArrayView<float> potential,
                const NbodyOptions& o) {
  SIMKIT_EXPECTS(sources.cols == 4, invalid_argument, "nbody: bodies must be n x 4 rows (x, y, z, mass), got ",
                 sources.rows, " x ", sources.cols, sources.cols == 3 ? " (no masses: add a fourth column)" : "");
  SIMKIT_EXPECTS(sources.rows >= 1, invalid_argument, "nbody: no bodies (n = 0)");
  SIMKIT_EXPECTS(targets_are_bodies || targets.cols == 3, invalid_argument,
                 "nbody: targets must be m x 3 rows (x, y, z), got ", targets.rows, " x ", targets.cols);
  SIMKIT_EXPECTS(targets.rows >= 1, invalid_argument, "nbody: no targets (m = 0)");
  SIMKIT_EXPECTS(accel.rows == targets.rows && accel.cols == 3, invalid_argument, "nbody: accel must be ", targets.rows,
                 " x 3, got ", accel.rows, " x ", accel.cols);
  SIMKIT_EXPECTS(potential.empty() || potential.size == targets.rows, invalid_argument, "nbody: potential must hold ",
                 targets.rows, " values (or none), got ", potential.size);
  SIMKIT_EXPECTS(std::isfinite(o.G) && o.G > 0, invalid_argument, "nbody: G must be finite and > 0, got ", o.G);
  SIMKIT_EXPECTS(std::isfinite(o.softening) && o.softening >= 0, invalid_argument,
                 "nbody: the softening must be finite and >= 0, got ", o.softening);
  SIMKIT_EXPECTS(std::isfinite(o.theta) && o.theta >= 0, invalid_argument, "nbody: theta must be finite and >= 0, got ",
                 o.theta);
  SIMKIT_EXPECTS(o.costs.empty() || (o.costs.size == targets.rows && o.costs.where == Memory::host), invalid_argument,
                 "nbody: costs must hold ", targets.rows, " host values (or none), got ", o.costs.size);
  // Host data is checked before the device is resolved, so bad input fails with its own message
  // alone (as in knn and gauss); device data once it has been copied down.
  const char* source_name = targets_are_bodies ? "bodies" : "sources";
  if (sources.where == Memory::host) check_rows(sources.data, sources.rows, 4, true, source_name);
  if (!targets_are_bodies && targets.where == Memory::host) check_rows(targets.data, targets.rows, 3, false, "targets");
  const detail::Backend& backend = detail::backend_for(
      ctx, {targets.where, sources.where, accel.where, potential.empty() ? Memory::host : potential.where}, "nbody");
  std::vector<float> source_copy, target_copy;
  const float* S = host_rows(ctx, backend, sources, source_copy);
  if (sources.where != Memory::host) check_rows(S, sources.rows, 4, true, source_name);
  const float* T = S;
  if (!targets_are_bodies) {
    T = host_rows(ctx, backend, targets, target_copy);
    if (targets.where != Memory::host) check_rows(T, targets.rows, 3, false, "targets");
  }
  detail::NbodyArgs a;
  a.targets = T, a.m = targets.rows, a.target_stride = targets_are_bodies ? 4 : 3;
  a.sources = S, a.n = sources.rows;
  a.accel = accel, a.potential = potential;
  a.G = o.G, a.softening = o.softening;
  if (o.method == NbodyMethod::barnes_hut) {
    SIMKIT_EXPECTS(backend.device() == Device::cpu, unsupported,
                   "nbody: barnes_hut runs on the CPU in this version (use --device cpu, or direct on the GPU)");
    return detail::cpu::nbody_barnes_hut(ctx, a, o.theta, o.quadrupole, o.costs);
  }
  if (backend.device() == Device::gpu)
    detail::cuda::nbody_direct(ctx, a);
  else
    detail::cpu::nbody_direct(ctx, a);
  NbodyReport report;
  report.interactions = a.m * a.n;
  return report;
}

}  // namespace

NbodyReport nbody_accel(const Context& ctx, MatrixView<const float> bodies, MatrixView<float> accel,
                        ArrayView<float> potential, const NbodyOptions& options) {
  return run(ctx, bodies, true, bodies, accel, potential, options);
}

NbodyReport nbody_field(const Context& ctx, MatrixView<const float> targets, MatrixView<const float> sources,
                        MatrixView<float> accel, ArrayView<float> potential, const NbodyOptions& options) {
  return run(ctx, targets, false, sources, accel, potential, options);
}

}  // namespace simkit
