// pairwise, knn, radius_search and the Gauss transform: inputs and outputs may each be host or
// device arrays (the outputs are allocated by the Python layer in the caller's framework);
// radius_search, whose answer is ragged, reads host arrays and returns NumPy arrays.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/gauss.hpp>
#include <simkit/knn.hpp>
#include <simkit/pairwise.hpp>
#include <simkit/radius.hpp>

#include "bindings.hpp"
#include "convert.hpp"
#include "numpy_out.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simkit::python {

namespace {

void pairwise_call(const InArray& Q, const InArray& X, const std::string& metric, const OutArray& out,
                   const Context& base, uintptr_t stream) {
  CallContext call(base, stream);
  const MatrixView<const float> q = call.matrix<const float>(Q, "Q"), x = call.matrix<const float>(X, "X");
  const MatrixView<float> o = call.matrix<float>(out, "out");
  const Metric mt = parse_metric(metric);
  Context& ctx = call.get();
  run_released(ctx, [&] { pairwise(ctx, q, x, mt, o); });
}

KnnMethod parse_knn_method(const std::string& name) {
  if (name == "auto") return KnnMethod::automatic;
  if (name == "brute") return KnnMethod::brute;
  if (name == "tree") return KnnMethod::tree;
  throw Error(ErrorCode::invalid_argument, "method must be 'auto', 'brute' or 'tree', got " + simkit::quoted(name));
}

void knn_call(const InArray& Q, const InArray& X, int64_t k, const std::string& metric, const OutArray& D,
              const OutArray& I, const Context& base, uintptr_t stream, const std::string& method) {
  CallContext call(base, stream);
  const MatrixView<const float> q = call.matrix<const float>(Q, "Q"), x = call.matrix<const float>(X, "X");
  const MatrixView<float> d = call.matrix<float>(D, "D");
  const MatrixView<int64_t> i = call.matrix<int64_t>(I, "I");
  const Metric mt = parse_metric(metric);
  const KnnMethod how = parse_knn_method(method);
  Context& ctx = call.get();
  run_released(ctx, [&] { knn(ctx, q, x, k, mt, d, i, how); });
}

// The lists are ragged and come back to the host, so the Python layer hands over host arrays;
// the tree runs where the context says (device='gpu' copies them over).
Record radius_call(const InArray& Q, const InArray& X, double radius, const std::string& metric, int64_t max_neighbors,
                   const Context& base) {
  CallContext call(base, 0);
  const MatrixView<const float> q = call.matrix<const float>(Q, "Q"), x = call.matrix<const float>(X, "X");
  const Metric mt = parse_metric(metric);
  Context& ctx = call.get();
  RadiusResult r = run_released(ctx, [&] { return radius_search(ctx, q, x, radius, mt, max_neighbors); });
  Record out;
  out["offsets"] = to_numpy(std::move(r.offsets));
  out["ids"] = to_numpy(std::move(r.ids));
  out["values"] = to_numpy(std::move(r.values));
  out["capped"] = r.capped;
  return out;
}

Record gauss_call(const InArray& X, const InArray& Y, double h, const std::optional<InArray>& weights,
                  const OutArray& out, const std::string& method, double eps, int64_t clusters, int order,
                  const Context& base, uintptr_t stream) {
  CallContext call(base, stream);
  const MatrixView<const float> x = call.matrix<const float>(X, "X"), y = call.matrix<const float>(Y, "Y");
  const ArrayView<double> o = call.array<double>(out, "out");
  std::vector<double> q;
  if (weights) {
    CallContext host(Context{}, 0);  // weights are read on the host (gauss.hpp)
    const ArrayView<const double> w = host.array<const double>(*weights, "weights");
    if (w.where != Memory::host) throw Error(ErrorCode::invalid_argument, "weights must be a host array");
    q.assign(w.data, w.data + w.size);
  }
  GaussOptions options;
  options.method = parse_gauss_method(method);
  options.eps = eps;
  options.ifgt_clusters = clusters;
  options.ifgt_order = order;
  Context& ctx = call.get();
  const MatrixView<double> column(o.data, o.size, 1, o.where);
  const GaussReport r = run_released(ctx, [&] { return gauss_transform(ctx, x, q, y, h, column, options); });
  Record report;
  report["method"] = to_string(r.method);
  report["clusters"] = r.clusters;
  report["order"] = r.order;
  report["cutoff_radius"] = r.cutoff_radius;
  report["error_bound"] = r.error_bound;
  report["note"] = r.note;
  return report;
}

}  // namespace

void bind_compute(nb::module_& m) {
  m.def("pairwise", &pairwise_call, "Q"_a, "X"_a, "metric"_a, "out"_a, "context"_a, "stream"_a = 0);
  m.def("knn", &knn_call, "Q"_a, "X"_a, "k"_a, "metric"_a, "D"_a, "I"_a, "context"_a, "stream"_a = 0,
        "method"_a = "auto");
  m.def("radius_search", &radius_call, "Q"_a, "X"_a, "radius"_a, "metric"_a, "max_neighbors"_a, "context"_a);
  m.def(
      "kde_bandwidth",
      [](const InArray& X, const std::string& rule) {
        CallContext host(Context{}, 0);
        const MatrixView<const float> x = host.matrix<const float>(X, "X");
        if (x.where != Memory::host) throw Error(ErrorCode::invalid_argument, "X must be a host array");
        return kde_bandwidth(x, parse_bandwidth_rule(rule));
      },
      "X"_a, "rule"_a);
  m.def("gauss", &gauss_call, "X"_a, "Y"_a, "h"_a, "weights"_a.none(), "out"_a, "method"_a, "eps"_a, "clusters"_a,
        "order"_a, "context"_a, "stream"_a = 0);
}

}  // namespace simkit::python
