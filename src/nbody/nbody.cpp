// The n-body entry points: argument checks (every value read, on the host or on the device
// where the data lives), then the method of the backend that runs the call.

#include <simkit/nbody.hpp>

#include <cmath>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "nbody/nbody_direct.hpp"
#include "nbody/nbody_tree.hpp"

namespace simkit {

namespace {

void check_value(float v, int64_t row, int64_t col, bool masses, const char* what) {
  SIMKIT_EXPECTS(std::isfinite(v), invalid_argument, "nbody: ", what, " row ", row, " column ", col, " is ", v,
                 " (every coordinate and mass must be finite)");
  SIMKIT_EXPECTS(!(masses && col == 3 && v < 0), invalid_argument, "nbody: ", what, " row ", row, " has mass ", v,
                 " (masses must be >= 0)");
}

/// Every value of `rows`: finite, and with `masses` a fourth column >= 0. Host rows are read
/// here; device rows (GPU backend) on the device, and only the offending value comes back.
void check_rows(const Context& ctx, const detail::Backend* backend, MatrixView<const float> rows, bool masses,
                const char* what) {
  if (rows.where == Memory::host) {
    for (int64_t i = 0; i < rows.rows; ++i)
      for (int64_t c = 0; c < rows.cols; ++c) check_value(rows.data[i * rows.cols + c], i, c, masses, what);
    return;
  }
  const int64_t at = detail::cuda::first_invalid_value(ctx, rows.data, rows.rows, rows.cols, masses);
  if (at < 0) return;
  float v = 0;
  backend->copy_to_host(ctx, &v, rows.data + at, sizeof v);
  check_value(v, at / rows.cols, at % rows.cols, masses, what);
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
  // alone (as in knn and gauss); device data on the device once the backend is known.
  const char* source_name = targets_are_bodies ? "bodies" : "sources";
  if (sources.where == Memory::host) check_rows(ctx, nullptr, sources, true, source_name);
  if (!targets_are_bodies && targets.where == Memory::host) check_rows(ctx, nullptr, targets, false, "targets");
  const detail::Backend& backend = detail::backend_for(
      ctx, {targets.where, sources.where, accel.where, potential.empty() ? Memory::host : potential.where}, "nbody");
  if (sources.where != Memory::host) check_rows(ctx, &backend, sources, true, source_name);
  if (!targets_are_bodies && targets.where != Memory::host) check_rows(ctx, &backend, targets, false, "targets");
  detail::NbodyArgs a;
  a.sources = sources.data, a.sources_where = sources.where, a.n = sources.rows;
  a.targets = targets_are_bodies ? sources.data : targets.data;
  a.targets_where = targets_are_bodies ? sources.where : targets.where;
  a.m = targets.rows, a.target_stride = targets_are_bodies ? 4 : 3;
  a.accel = accel, a.potential = potential;
  a.G = o.G, a.softening = o.softening;
  const bool gpu = backend.device() == Device::gpu;
  if (o.method == NbodyMethod::barnes_hut) {
    if (!gpu) return detail::cpu::nbody_barnes_hut(ctx, a, o.theta, o.quadrupole, o.costs);
    SIMKIT_EXPECTS(!o.quadrupole, unsupported,
                   "nbody: quadrupole moments are summed on the CPU only in this version (drop the option, "
                   "or use --device cpu)");
    return detail::cuda::nbody_barnes_hut(ctx, a, o.theta, o.costs);
  }
  if (gpu)
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
