// Softened gravity (simkit/nbody.hpp): accelerations and potentials of point masses (inputs and
// outputs host or device, outputs allocated by the Python layer in the caller's framework),
// initial conditions, float64 diagnostics, and the leapfrog integrator on host arrays.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/nbody.hpp>

#include "bindings.hpp"
#include "convert.hpp"
#include "numpy_out.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simkit::python {

namespace {

NbodyMethod parse_nbody_method(const std::string& name) {
  if (name == "direct") return NbodyMethod::direct;
  if (name == "bh" || name == "barnes_hut") return NbodyMethod::barnes_hut;
  throw Error(ErrorCode::invalid_argument,
              "method must be 'direct' (every pair) or 'bh' (Barnes-Hut), got " + simkit::quoted(name));
}

/// A host view of float32 rows; diagnostics and the integrator read their arrays on the host.
template <class T, class Array>
MatrixView<T> host_matrix(CallContext& call, const Array& a, const char* name) {
  const MatrixView<T> v = call.template matrix<T>(a, name);
  if (v.where != Memory::host) throw Error(ErrorCode::invalid_argument, std::string(name) + " must be a host array");
  return v;
}

Record diagnostics_record(const NbodyDiagnostics& d) {
  Record r;
  r["kinetic"] = d.kinetic;
  r["potential"] = d.potential;
  r["total"] = d.total;
  r["momentum"] = nb::make_tuple(d.momentum[0], d.momentum[1], d.momentum[2]);
  return r;
}

Record accel_call(const InArray& bodies, const std::optional<InArray>& targets, double G, double softening,
                  const std::string& method, double theta, bool quadrupole, const OutArray& accel,
                  const std::optional<OutArray>& potential, const std::optional<OutArray>& costs, const Context& base,
                  uintptr_t stream) {
  CallContext call(base, stream);
  NbodyOptions options;
  options.G = G;
  options.softening = softening;
  options.method = parse_nbody_method(method);
  options.theta = theta;
  options.quadrupole = quadrupole;
  if (costs) {
    CallContext host(Context{}, 0);  // the cost counts live on the host (nbody.hpp)
    const ArrayView<int64_t> c = host.array<int64_t>(*costs, "costs");
    if (c.where != Memory::host) throw Error(ErrorCode::invalid_argument, "costs must be a host array");
    options.costs = c;
  }
  const MatrixView<const float> b = call.matrix<const float>(bodies, "bodies");
  MatrixView<const float> t;
  if (targets) t = call.matrix<const float>(*targets, "targets");
  const MatrixView<float> a = call.matrix<float>(accel, "accel");
  ArrayView<float> phi;
  if (potential) phi = call.array<float>(*potential, "potential");
  Context& ctx = call.get();
  const NbodyReport r = run_released(
      ctx, [&] { return targets ? nbody_field(ctx, t, b, a, phi, options) : nbody_accel(ctx, b, a, phi, options); });
  Record report;
  report["interactions"] = r.interactions;
  report["threads"] = r.threads;
  report["imbalance"] = r.imbalance;
  report["imbalance_equal_count"] = r.imbalance_equal_count;
  report["build_ms"] = r.build_ms;
  report["walk_ms"] = r.walk_ms;
  report["groups"] = r.groups;
  report["nodes_tested"] = r.nodes_tested;
  return report;
}

std::tuple<nb::ndarray<nb::numpy, float>, nb::ndarray<nb::numpy, float>> initial_call(const std::string& kind,
                                                                                      int64_t n, uint64_t seed) {
  NbodySystem s;
  {
    nb::gil_scoped_release release;
    s = nbody_initial(kind, n, seed);
  }
  return {to_numpy(std::move(s.bodies)), to_numpy(std::move(s.velocities))};
}

Record diagnostics_call(const InArray& bodies, const InArray& velocities, double G, double softening,
                        const Context& base) {
  CallContext call(base, 0);
  const MatrixView<const float> b = host_matrix<const float>(call, bodies, "bodies");
  const MatrixView<const float> v = host_matrix<const float>(call, velocities, "velocities");
  NbodyOptions options;
  options.G = G;
  options.softening = softening;
  Context& ctx = call.get();
  const NbodyDiagnostics d = run_released(ctx, [&] { return nbody_diagnostics(ctx, b, v, options); });
  return diagnostics_record(d);
}

/// The integration runs with the GIL released; the diagnostics are taken in C++ inside the
/// step callback (no Python is touched there) and turned into dicts once it is over.
nb::typed<nb::list, Record> run_call(const OutArray& bodies, const OutArray& velocities, double dt, int64_t steps,
                                     double G, double softening, int64_t every, const Context& base) {
  if (every < 0) throw Error(ErrorCode::invalid_argument, "every must be >= 0, got " + std::to_string(every));
  CallContext call(base, 0);
  const MatrixView<float> b = host_matrix<float>(call, bodies, "bodies");
  const MatrixView<float> v = host_matrix<float>(call, velocities, "velocities");
  NbodyOptions options;
  options.G = G;
  options.softening = softening;
  Context& ctx = call.get();
  std::vector<std::pair<int64_t, NbodyDiagnostics>> taken;
  run_released(ctx, [&] {
    std::function<void(int64_t)> after_step;
    if (every > 0) {
      taken.emplace_back(0, nbody_diagnostics(ctx, b, v, options));
      after_step = [&](int64_t step) {
        if (step % every == 0) taken.emplace_back(step, nbody_diagnostics(ctx, b, v, options));
      };
    }
    nbody_leapfrog(ctx, b, v, dt, steps, options, after_step);
  });
  nb::typed<nb::list, Record> out;
  for (const auto& [step, d] : taken) {
    Record r = diagnostics_record(d);
    r["step"] = step;
    out.append(r);
  }
  return out;
}

}  // namespace

void bind_nbody(nb::module_& m) {
  m.def("nbody_accel", &accel_call, "bodies"_a, "targets"_a.none(), "G"_a, "softening"_a, "method"_a, "theta"_a,
        "quadrupole"_a, "accel"_a, "potential"_a.none(), "costs"_a.none(), "context"_a, "stream"_a = 0);
  m.def("nbody_initial", &initial_call, "kind"_a, "n"_a, "seed"_a);
  m.def("nbody_diagnostics", &diagnostics_call, "bodies"_a, "velocities"_a, "G"_a, "softening"_a, "context"_a);
  m.def("nbody_run", &run_call, "bodies"_a, "velocities"_a, "dt"_a, "steps"_a, "G"_a, "softening"_a, "every"_a,
        "context"_a);
}

}  // namespace simkit::python
