// The parallel primitives, in place on arrays the Python layer prepared (copies of the
// caller's, so that the Python functions return new arrays as NumPy's do). The element type is
// read from the array and dispatched to the matching template.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <optional>
#include <string>
#include <type_traits>

#include <simkit/error.hpp>
#include <simkit/primitives.hpp>

#include "bindings.hpp"
#include "convert.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace simkit::python {

namespace {

[[noreturn]] void bad(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

/// Calls f(T{}) for the element type of `d` among the primitives' value types.
template <class F>
void with_value_type(const nb::dlpack::dtype& d, const char* name, F&& f) {
  if (holds<int32_t>(d)) return f(int32_t{});
  if (holds<int64_t>(d)) return f(int64_t{});
  if (holds<float>(d)) return f(float{});
  if (holds<double>(d)) return f(double{});
  bad(std::string(name) + " must hold int32, int64, float32 or float64, got " + dtype_name(d));
}

/// The same among sort and merge keys.
template <class F>
void with_key_type(const nb::dlpack::dtype& d, const char* name, F&& f) {
  if (holds<int32_t>(d)) return f(int32_t{});
  if (holds<int64_t>(d)) return f(int64_t{});
  if (holds<float>(d)) return f(float{});
  bad(std::string(name) + " must hold int32, int64 or float32, got " + dtype_name(d));
}

ScanOp parse_op(const std::string& op) {
  if (op == "sum") return ScanOp::sum;
  if (op == "product") return ScanOp::product;
  if (op == "min") return ScanOp::min;
  if (op == "max") return ScanOp::max;
  bad("op must be 'sum', 'product', 'min' or 'max', got " + simkit::quoted(op));
}

Order parse_order(bool descending) { return descending ? Order::descending : Order::ascending; }

void scan_call(const InArray& in, const OutArray& out, const std::string& op, bool exclusive, const Context& base,
               uintptr_t stream) {
  const ScanOp sop = parse_op(op);
  with_value_type(in.dtype(), "x", [&](auto tag) {
    using T = decltype(tag);
    CallContext call(base, stream);
    const ArrayView<const T> a = call.array<const T>(in, "x");
    const ArrayView<T> o = call.array<T>(out, "out");
    Context& ctx = call.get();
    run_released(ctx, [&] { exclusive ? exclusive_scan<T>(ctx, a, o, sop) : inclusive_scan<T>(ctx, a, o, sop); });
  });
}

void segmented_scan_call(const InArray& in, const std::optional<InArray>& heads, const std::optional<InArray>& offsets,
                         const OutArray& out, const std::string& op, bool exclusive, const Context& base,
                         uintptr_t stream) {
  const ScanOp sop = parse_op(op);
  if (heads.has_value() == offsets.has_value()) bad("give exactly one of heads and offsets");
  with_value_type(in.dtype(), "x", [&](auto tag) {
    using T = decltype(tag);
    CallContext call(base, stream);
    const ArrayView<const T> a = call.array<const T>(in, "x");
    const ArrayView<T> o = call.array<T>(out, "out");
    if (heads) {
      const ArrayView<const uint8_t> h = call.array<const uint8_t>(*heads, "heads");
      Context& ctx = call.get();
      run_released(ctx, [&] {
        exclusive ? segmented_exclusive_scan<T>(ctx, a, h, o, sop) : segmented_inclusive_scan<T>(ctx, a, h, o, sop);
      });
      return;
    }
    auto with_offsets = [&](auto itag) {
      using I = decltype(itag);
      const ArrayView<const I> off = call.array<const I>(*offsets, "offsets");
      Context& ctx = call.get();
      run_released(ctx, [&] {
        exclusive ? segmented_exclusive_scan<T>(ctx, a, off, o, sop) : segmented_inclusive_scan<T>(ctx, a, off, o, sop);
      });
    };
    if (holds<int32_t>(offsets->dtype()))
      with_offsets(int32_t{});
    else if (holds<int64_t>(offsets->dtype()))
      with_offsets(int64_t{});
    else
      bad("offsets must hold int32 or int64, got " + dtype_name(offsets->dtype()));
  });
}

void sort_call(const OutArray& keys, const std::optional<OutArray>& values, bool descending, const Context& base,
               uintptr_t stream) {
  with_key_type(keys.dtype(), "keys", [&](auto ktag) {
    using K = decltype(ktag);
    CallContext call(base, stream);
    const ArrayView<K> k = call.array<K>(keys, "keys");
    if (!values) {
      Context& ctx = call.get();
      run_released(ctx, [&] { sort<K>(ctx, k, parse_order(descending)); });
      return;
    }
    with_value_type(values->dtype(), "values", [&](auto vtag) {
      using V = decltype(vtag);
      const ArrayView<V> v = call.array<V>(*values, "values");
      Context& ctx = call.get();
      run_released(ctx, [&] { sort<K, V>(ctx, k, v, parse_order(descending)); });
    });
  });
}

void merge_call(const InArray& a, const InArray& b, const OutArray& out, const std::optional<InArray>& a_values,
                const std::optional<InArray>& b_values, const std::optional<OutArray>& out_values, bool descending,
                const Context& base, uintptr_t stream) {
  if (a.dtype() != b.dtype())
    bad("a and b must hold the same type, got " + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()));
  with_key_type(a.dtype(), "a", [&](auto ktag) {
    using K = decltype(ktag);
    CallContext call(base, stream);
    const ArrayView<const K> ka = call.array<const K>(a, "a"), kb = call.array<const K>(b, "b");
    const ArrayView<K> ko = call.array<K>(out, "out");
    if (!a_values) {
      Context& ctx = call.get();
      run_released(ctx, [&] { merge<K>(ctx, ka, kb, ko, parse_order(descending)); });
      return;
    }
    if (!b_values || !out_values) bad("give a_values and b_values together");
    if (a_values->dtype() != b_values->dtype())
      bad("a_values and b_values must hold the same type, got " + dtype_name(a_values->dtype()) + " and " +
          dtype_name(b_values->dtype()));
    with_value_type(a_values->dtype(), "a_values", [&](auto vtag) {
      using V = decltype(vtag);
      const ArrayView<const V> va = call.array<const V>(*a_values, "a_values"),
                               vb = call.array<const V>(*b_values, "b_values");
      const ArrayView<V> vo = call.array<V>(*out_values, "out_values");
      Context& ctx = call.get();
      run_released(ctx, [&] { merge<K, V>(ctx, ka, va, kb, vb, ko, vo, parse_order(descending)); });
    });
  });
}

void select_k_call(const InArray& in, int64_t k, bool largest, const OutArray& values, const OutArray& ids,
                   const Context& base, uintptr_t stream) {
  CallContext call(base, stream);
  const MatrixView<const float> x = call.matrix<const float>(in, "x");
  const MatrixView<float> v = call.matrix<float>(values, "values");
  const MatrixView<int64_t> i = call.matrix<int64_t>(ids, "ids");
  Context& ctx = call.get();
  run_released(ctx, [&] { select_k(ctx, x, k, parse_order(largest), v, i); });
}

void spmv_call(const InArray& indptr, const InArray& indices, const InArray& data, int64_t cols, const InArray& x,
               const OutArray& y, const Context& base, uintptr_t stream) {
  if (indptr.dtype() != indices.dtype())
    bad("indptr and indices must hold the same integer type, got " + dtype_name(indptr.dtype()) + " and " +
        dtype_name(indices.dtype()));
  auto run = [&](auto vtag, auto itag) {
    using V = decltype(vtag);
    using I = decltype(itag);
    CallContext call(base, stream);
    CsrView<V, I> A;
    A.row_offsets = call.array<const I>(indptr, "indptr");
    A.col_indices = call.array<const I>(indices, "indices");
    A.values = call.array<const V>(data, "data");
    A.rows = A.row_offsets.size - 1;
    A.cols = cols;
    const ArrayView<const V> xv = call.array<const V>(x, "x");
    const ArrayView<V> yv = call.array<V>(y, "y");
    Context& ctx = call.get();
    run_released(ctx, [&] { spmv_csr<V, I>(ctx, A, xv, yv); });
  };
  auto with_index = [&](auto vtag) {
    if (holds<int32_t>(indptr.dtype())) return run(vtag, int32_t{});
    if (holds<int64_t>(indptr.dtype())) return run(vtag, int64_t{});
    bad("indptr must hold int32 or int64, got " + dtype_name(indptr.dtype()));
  };
  if (holds<float>(data.dtype())) return with_index(float{});
  if (holds<double>(data.dtype())) return with_index(double{});
  bad("data must hold float32 or float64, got " + dtype_name(data.dtype()));
}

}  // namespace

void bind_primitives(nb::module_& m) {
  m.def("scan", &scan_call, "x"_a, "out"_a, "op"_a, "exclusive"_a, "context"_a, "stream"_a = 0);
  m.def("segmented_scan", &segmented_scan_call, "x"_a, "heads"_a.none(), "offsets"_a.none(), "out"_a, "op"_a,
        "exclusive"_a, "context"_a, "stream"_a = 0);
  m.def("sort", &sort_call, "keys"_a, "values"_a.none(), "descending"_a, "context"_a, "stream"_a = 0);
  m.def("merge", &merge_call, "a"_a, "b"_a, "out"_a, "a_values"_a.none(), "b_values"_a.none(), "out_values"_a.none(),
        "descending"_a, "context"_a, "stream"_a = 0);
  m.def("select_k", &select_k_call, "x"_a, "k"_a, "largest"_a, "values"_a, "ids"_a, "context"_a, "stream"_a = 0);
  m.def("spmv_csr", &spmv_call, "indptr"_a, "indices"_a, "data"_a, "cols"_a, "x"_a, "y"_a, "context"_a, "stream"_a = 0);
}

}  // namespace simkit::python
