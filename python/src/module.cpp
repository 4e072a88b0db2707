// simkit._simkit: the extension module. This file holds what is not a computation: errors,
// the Context, build information, file I/O and device buffers; the computations are bound in
// bind_*.cpp. The public Python API (argument conversion, outputs in the caller's framework,
// docstrings) is the package around it, python/simkit/.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdlib>
#include <optional>
#include <string>

#include <simkit/context.hpp>
#include <simkit/device_matrix.hpp>
#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "bindings.hpp"
#include "convert.hpp"
#include "numpy_out.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simkit::python {

namespace {

PyObject* python_type(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return PyExc_ValueError;
    case ErrorCode::io: return PyExc_OSError;
    case ErrorCode::out_of_memory: return PyExc_MemoryError;
    case ErrorCode::device:
    case ErrorCode::unsupported: return PyExc_RuntimeError;
  }
  return PyExc_RuntimeError;
}

/// 'cpu', 'gpu', 'auto', or 'gpu:0,1' for several GPUs: what set_device reads back.
std::string device_name(const Context& c) {
  std::string name = to_string(c.device);
  for (size_t i = 0; i < c.gpu_ids.size(); ++i) name += (i == 0 ? ":" : ",") + std::to_string(c.gpu_ids[i]);
  return name;
}

void bind_context(nb::module_& m) {
  nb::class_<Context>(
      m, "Context",
      "Where and how simkit runs. Every function also takes these as keywords.\n\n"
      "device: 'auto' (the GPU when this build has CUDA and one is visible, else the CPU), "
      "'cpu', 'gpu' (or 'cuda'), one GPU 'gpu:1', or several: 'gpu:0,1', 'gpu:all' (or 'cuda:all'; "
      "function keywords also take a list of GPU ids): knn and the flat, ivf_flat and ivf_pq searches then "
      "split the base over them and merge (the same answer as one GPU).\n"
      "threads: CPU threads, 0 = all.\n"
      "gpu_memory: bytes of GPU working memory simkit may allocate; None = 80% of what is free.\n"
      "gpu_id: the CUDA device (arrays already on a GPU decide it themselves).\n\n"
      ">>> ctx = simkit.Context(device='cpu', threads=4)\n"
      ">>> D, I = simkit.knn(Q, X, 10, context=ctx)")
      .def(
          "__init__",
          [](Context* c, const std::string& device, int threads, std::optional<int64_t> gpu_memory, int gpu_id) {
            if (threads < 0)
              throw Error(ErrorCode::invalid_argument,
                          "threads must be >= 0 (0 = all), got " + std::to_string(threads));
            if (gpu_memory && *gpu_memory <= 0)
              throw Error(ErrorCode::invalid_argument,
                          "gpu_memory must be a positive number of bytes or None, got " + std::to_string(*gpu_memory));
            if (gpu_id < 0) throw Error(ErrorCode::invalid_argument, "gpu_id must be >= 0");
            new (c) Context();
            c->threads = threads;
            c->gpu_memory_budget = gpu_memory ? static_cast<size_t>(*gpu_memory) : 0;
            c->gpu_id = gpu_id;
            // PyTorch's spelling of the GPU ('cuda', 'cuda:1') is simkit's 'gpu'.
            set_device(*c, device.rfind("cuda", 0) == 0 ? "gpu" + device.substr(4) : device);
          },
          "device"_a = "auto", "threads"_a = 0, "gpu_memory"_a = nb::none(), "gpu_id"_a = 0)
      .def_prop_ro("device", [](const Context& c) { return device_name(c); })
      .def_prop_ro(
          "gpu_ids", [](const Context& c) { return c.gpu_ids; }, "The GPUs work is split over ([] for one).")
      .def_prop_ro("threads", [](const Context& c) { return c.threads; })
      .def_prop_ro("gpu_memory",
                   [](const Context& c) -> std::optional<int64_t> {
                     if (c.gpu_memory_budget == 0) return std::nullopt;
                     return static_cast<int64_t>(c.gpu_memory_budget);
                   })
      .def_prop_ro("gpu_id", [](const Context& c) { return c.gpu_id; })
      .def(
          "resolved_device", [](const Context& c) { return std::string(to_string(resolve_device(c))); },
          "'cpu' or 'gpu': where a call with only host arrays runs.")
      .def("__repr__", [](const Context& c) {
        std::string budget = c.gpu_memory_budget ? std::to_string(c.gpu_memory_budget) : "None";
        return "simkit.Context(device='" + device_name(c) + "', threads=" + std::to_string(c.threads) +
               ", gpu_memory=" + budget + ", gpu_id=" + std::to_string(c.gpu_id) + ")";
      });
}

void bind_info(nb::module_& m) {
  m.def("built_with_cuda", &built_with_cuda, "True when this build has the CUDA backend.");
  m.def("build_info", &build_info, "Compiler, BLAS, OpenMP and CUDA details (what `simkit info` prints).");
  m.def("blas_kernels", &blas_kernels, "The kernels OpenBLAS chose for this CPU ('Haswell', 'SkylakeX', ...).");
  m.def(
      "gpus",
      [] {
        nb::typed<nb::list, Record> out;
        for (const GpuInfo& g : gpus()) {
          Record d;
          d["id"] = g.id;
          d["name"] = g.name;
          d["compute_capability"] = nb::make_tuple(g.sm_major, g.sm_minor);
          d["multiprocessors"] = g.multiprocessors;
          d["total_memory"] = g.total_memory;
          d["free_memory"] = g.free_memory;
          d["fp32_tflops"] = g.fp32_tflops;
          d["memory_bandwidth_gbs"] = g.memory_bandwidth_gbs;
          out.append(d);
        }
        return out;
      },
      "The CUDA devices this process can use, as dicts (empty without CUDA or a GPU).");
}

void bind_io(nb::module_& m) {
  m.def(
      "read_matrix", [](const std::string& path) { return to_numpy(read_matrix(path)); }, "path"_a,
      "float32 rows from .npy / .fvecs / .bvecs / .ivecs, every header checked against the file.");
  m.def(
      "read_ids", [](const std::string& path) { return to_numpy(read_ids(path)); }, "path"_a,
      "int64 ids from .ivecs or an integer .npy.");
  m.def(
      "write_matrix",
      [](const std::string& path, const InArray& a) {
        CallContext call(Context{}, 0);
        write_matrix(path, call.matrix<const float>(a, "array"));
      },
      "path"_a, "array"_a, "Writes float32 rows atomically to .npy / .fvecs / .bvecs.");
  m.def(
      "write_ids",
      [](const std::string& path, const InArray& a) {
        CallContext call(Context{}, 0);
        write_ids(path, call.matrix<const int64_t>(a, "array"));
      },
      "path"_a, "array"_a, "Writes int64 ids atomically to .npy (int64) or .ivecs (int32).");
}

// A device allocation that a DLPack consumer (JAX, or any framework simkit does not allocate
// through) takes over; freed when the last consumer lets go.
template <class T>
OutArray device_empty(int64_t rows, int64_t cols, int gpu_id, size_t ndim) {
  Context ctx;
  ctx.device = Device::gpu;
  ctx.gpu_id = gpu_id;
  auto* owned = new DeviceMatrix<T>(ctx, rows, cols);
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<DeviceMatrix<T>*>(p); });
  const size_t shape[2] = {static_cast<size_t>(rows), static_cast<size_t>(cols)};
  return OutArray(owned->view().data, ndim, ndim == 2 ? shape : shape + 0, owner, nullptr, nb::dtype<T>(),
                  nb::device::cuda::value, gpu_id);
}

void bind_device_buffers(nb::module_& m) {
  m.def(
      "array_info",
      [](const InArray& a) {
        std::vector<int64_t> shape(a.ndim());
        for (size_t i = 0; i < a.ndim(); ++i) shape[i] = static_cast<int64_t>(a.shape(i));
        return std::make_pair(shape, dtype_name(a.dtype()));
      },
      "array"_a, "The shape and dtype name ('float32', ...) of any DLPack array, as nanobind reads it.");
  m.def(
      "device_empty",
      [](int64_t rows, int64_t cols, const std::string& dtype, int gpu_id, size_t ndim) {
        if (rows < 0 || cols < 0 || (ndim != 1 && ndim != 2))
          throw Error(ErrorCode::invalid_argument, "device_empty: bad shape");
        if (dtype == "float32") return device_empty<float>(rows, cols, gpu_id, ndim);
        if (dtype == "float64") return device_empty<double>(rows, cols, gpu_id, ndim);
        if (dtype == "int64") return device_empty<int64_t>(rows, cols, gpu_id, ndim);
        if (dtype == "int32") return device_empty<int32_t>(rows, cols, gpu_id, ndim);
        throw Error(ErrorCode::invalid_argument, "device_empty: unsupported dtype " + dtype);
      },
      "rows"_a, "cols"_a, "dtype"_a, "gpu_id"_a, "ndim"_a = 2,
      "Uninitialised CUDA memory as a DLPack array (for frameworks simkit does not allocate through).");
}

}  // namespace

}  // namespace simkit::python

NB_MODULE(_simkit, m) {
  using namespace simkit::python;
  m.doc() = "simkit's compiled core; use the `simkit` package, which wraps it.";
  m.def(
      "version", [] { return std::string(SIMKIT_VERSION_STRING); }, "The version of simkit, as in its CMake project.");
  remember_main_thread();
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const simkit::Error& e) {
      PyErr_SetString(python_type(e.code()), e.what());
    }
  });
  bind_context(m);
  bind_info(m);
  bind_io(m);
  bind_device_buffers(m);
  bind_compute(m);
  bind_clustering(m);
  bind_primitives(m);
  bind_index(m);
  bind_nbody(m);
}
