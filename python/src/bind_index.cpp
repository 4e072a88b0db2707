// simkit.Index's core: a handle on a shared simkit::Index. close() lets go of the handle's
// reference; a search already running keeps its own, so closing never pulls an index from
// under a call in another thread.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include <simkit/error.hpp>
#include <simkit/index.hpp>

#include "bindings.hpp"
#include "convert.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simkit::python {

namespace {

class IndexHandle {
 public:
  explicit IndexHandle(std::unique_ptr<Index> index) : index_(std::move(index)) {}

  std::shared_ptr<Index> get() const {
    std::lock_guard lock(mutex_);
    if (!index_) throw Error(ErrorCode::invalid_argument, "the index is closed");
    return index_;
  }
  void close() {
    std::lock_guard lock(mutex_);
    index_.reset();
  }
  bool closed() const {
    std::lock_guard lock(mutex_);
    return !index_;
  }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<Index> index_;
};

MatrixView<const float> host_rows(CallContext& call, const InArray& a, const char* name) {
  const MatrixView<const float> v = call.matrix<const float>(a, name);
  if (v.where != Memory::host) throw Error(ErrorCode::invalid_argument, std::string(name) + " must be a host array");
  return v;
}

}  // namespace

void bind_index(nb::module_& m) {
  nb::class_<IndexHandle>(m, "IndexHandle")
      .def(
          "__init__",
          [](IndexHandle* h, const std::string& description, int64_t dim, const std::string& metric) {
            new (h) IndexHandle(make_index(description, dim, parse_metric(metric)));
          },
          "description"_a, "dim"_a, "metric"_a)
      .def_static(
          "load",
          [](const std::string& path) {
            std::unique_ptr<Index> index;
            {
              nb::gil_scoped_release release;
              index = load_index(path);
            }
            return new IndexHandle(std::move(index));
          },
          "path"_a)
      .def("close", &IndexHandle::close)
      .def_prop_ro("closed", &IndexHandle::closed)
      .def_prop_ro("type", [](const IndexHandle& h) { return h.get()->type(); })
      .def_prop_ro("description", [](const IndexHandle& h) { return h.get()->description(); })
      .def_prop_ro("dim", [](const IndexHandle& h) { return h.get()->dim(); })
      .def_prop_ro("metric", [](const IndexHandle& h) { return std::string(to_string(h.get()->metric())); })
      .def_prop_ro("size", [](const IndexHandle& h) { return h.get()->size(); })
      .def_prop_ro("is_trained", [](const IndexHandle& h) { return h.get()->is_trained(); })
      .def_prop_ro("memory_bytes", [](const IndexHandle& h) { return h.get()->memory_bytes(); })
      .def_prop_ro("next_id", [](const IndexHandle& h) { return h.get()->next_id(); })
      .def(
          "reserve", [](const IndexHandle& h, int64_t rows) { h.get()->reserve(rows); }, "rows"_a)
      .def(
          "train",
          [](const IndexHandle& h, const InArray& X, const Context& base) {
            std::shared_ptr<Index> index = h.get();
            CallContext call(base, 0);
            const MatrixView<const float> x = host_rows(call, X, "X");
            Context& ctx = call.get();
            run_released(ctx, [&] { index->train(ctx, x); });
          },
          "X"_a, "context"_a)
      .def(
          "add",
          [](const IndexHandle& h, const InArray& X, const std::optional<InArray>& ids, const Context& base) {
            std::shared_ptr<Index> index = h.get();
            CallContext call(base, 0);
            const MatrixView<const float> x = host_rows(call, X, "X");
            ArrayView<const int64_t> id_view;
            if (ids) {
              id_view = call.array<const int64_t>(*ids, "ids");
              if (id_view.where != Memory::host) throw Error(ErrorCode::invalid_argument, "ids must be a host array");
              if (id_view.size != x.rows)
                throw Error(ErrorCode::invalid_argument, "ids holds " + std::to_string(id_view.size) +
                                                             " ids but X has " + std::to_string(x.rows) + " rows");
            }
            Context& ctx = call.get();
            run_released(ctx, [&] { index->add(ctx, x, id_view); });
          },
          "X"_a, "ids"_a.none(), "context"_a)
      .def(
          "remove",
          [](const IndexHandle& h, const InArray& ids) {
            std::shared_ptr<Index> index = h.get();
            CallContext call(Context{}, 0);
            const ArrayView<const int64_t> v = call.array<const int64_t>(ids, "ids");
            if (v.where != Memory::host) throw Error(ErrorCode::invalid_argument, "ids must be a host array");
            nb::gil_scoped_release release;
            return index->remove(v);
          },
          "ids"_a)
      .def(
          "search",
          [](const IndexHandle& h, const InArray& Q, int64_t k, int64_t nprobe, int64_t refine, int64_t probes,
             int64_t ef, const std::optional<InArray>& allowed, const OutArray& D, const OutArray& I,
             const Context& base, uintptr_t stream) {
            std::shared_ptr<Index> index = h.get();
            CallContext call(base, stream);
            // The index's own parameter type; a knob it does not read is refused, by name.
            SearchKnobs knobs{nprobe, refine, probes};
            knobs.ef = ef;
            const std::unique_ptr<SearchParams> own = make_search_params(*index, knobs);
            SearchParams& params = *own;
            // The allow-list must be in host memory (index.hpp). The Python layer has converted
            // and checked it already; this is the last word. It is read before Q so that a GPU
            // allow-list is refused as such, not as an argument on another GPU than Q's.
            if (allowed) {
              const ArrayView<const int64_t> a = call.array<const int64_t>(*allowed, "allowed");
              if (a.where != Memory::host) throw Error(ErrorCode::invalid_argument, "allowed must be a host array");
              params.allowed = a;
            }
            const MatrixView<const float> q = call.matrix<const float>(Q, "Q");
            const MatrixView<float> d = call.matrix<float>(D, "D");
            const MatrixView<int64_t> i = call.matrix<int64_t>(I, "I");
            SearchStats stats;
            params.stats = &stats;
            Context& ctx = call.get();
            run_released(ctx, [&] { index->search(ctx, q, k, params, d, i); });
            return std::make_tuple(stats.short_rows, stats.candidates, stats.gathered);
          },
          "Q"_a, "k"_a, "nprobe"_a, "refine"_a, "probes"_a, "ef"_a, "allowed"_a.none(), "D"_a, "I"_a, "context"_a,
          "stream"_a = 0)
      .def(
          "save",
          [](const IndexHandle& h, const std::string& path) {
            std::shared_ptr<Index> index = h.get();
            nb::gil_scoped_release release;
            index->save(path);
          },
          "path"_a);
  m.attr("SEED_PROBES") = kProbeFourFifths;
}

}  // namespace simkit::python
