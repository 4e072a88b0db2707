// k-means and k-center: host inputs (the Python layer copies device arrays over), NumPy results.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <string>

#include <simkit/error.hpp>
#include <simkit/kmeans.hpp>

#include "bindings.hpp"
#include "convert.hpp"
#include "numpy_out.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simkit::python {

namespace {

MatrixView<const float> host_points(CallContext& call, const InArray& a, const char* name) {
  const MatrixView<const float> v = call.matrix<const float>(a, name);
  if (v.where != Memory::host) throw Error(ErrorCode::invalid_argument, std::string(name) + " must be a host array");
  return v;
}

Record kmeans_call(const InArray& X, int64_t k, const std::string& metric, const std::string& init,
                   const std::optional<InArray>& initial, int iterations, double tolerance, uint64_t seed,
                   int64_t sample, const Context& base) {
  CallContext call(base, 0);
  KmeansParams p;
  const MatrixView<const float> x = host_points(call, X, "X");
  p.k = k;
  p.metric = parse_metric(metric);
  if (initial) {
    p.init = KmeansInit::given;
    p.initial = host_points(call, *initial, "init");
  } else if (init == "kmeans++") {
    p.init = KmeansInit::kmeans_plus_plus;
  } else if (init == "random") {
    p.init = KmeansInit::random;
  } else {
    throw Error(ErrorCode::invalid_argument,
                "init must be 'kmeans++', 'random' or a k x d array, got " + simkit::quoted(init));
  }
  if (iterations < 0) throw Error(ErrorCode::invalid_argument, "iterations must be >= 0");
  p.max_iterations = iterations;
  p.tolerance = tolerance;
  p.seed = seed;
  p.sample = sample;
  Context& ctx = call.get();
  KmeansResult r = run_released(ctx, [&] { return kmeans(ctx, x, p); });
  Record out;
  out["centroids"] = to_numpy(std::move(r.centroids));
  out["labels"] = column_to_numpy(std::move(r.labels));
  out["inertia"] = r.inertia;
  out["iterations"] = r.iterations;
  out["history"] = to_numpy(std::move(r.history));
  out["empty_reseeded"] = r.empty_reseeded;
  out["points_ranked_exactly"] = r.points_ranked_exactly;
  return out;
}

Record kcenter_call(const InArray& X, int64_t k, uint64_t seed, const Context& base) {
  CallContext call(base, 0);
  const MatrixView<const float> x = host_points(call, X, "X");
  Context& ctx = call.get();
  KcenterResult r = run_released(ctx, [&] { return kcenter(ctx, x, k, seed); });
  Record out;
  out["centers"] = to_numpy(std::move(r.centers));
  out["ids"] = column_to_numpy(std::move(r.ids));
  out["labels"] = column_to_numpy(std::move(r.labels));
  out["radius"] = r.radius;
  return out;
}

}  // namespace

void bind_clustering(nb::module_& m) {
  m.def("kmeans", &kmeans_call, "X"_a, "k"_a, "metric"_a, "init"_a, "initial"_a.none(), "iterations"_a, "tolerance"_a,
        "seed"_a, "sample"_a, "context"_a);
  m.def("kcenter", &kcenter_call, "X"_a, "k"_a, "seed"_a, "context"_a);
}

}  // namespace simkit::python
