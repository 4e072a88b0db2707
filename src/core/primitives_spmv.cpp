// The public CSR SpMV (primitives.hpp): argument checks, then the backend. The structure of a
// host CSR matrix is checked here, in one pass over its offsets and indices; a device one is
// checked by the GPU kernel as it runs.
#include <simkit/error.hpp>
#include <simkit/primitives.hpp>

#include "core/primitives_check.hpp"

namespace simkit {

template <class V, IndexType I>
requires std::same_as<V, float> || std::same_as<V, double>
void spmv_csr(const Context& ctx, const CsrView<V, I>& A, ConstArray<V> x, ArrayView<V> y) {
  const char* fn = "spmv_csr";
  if (A.rows < 0 || A.cols < 0)
    detail::primitive_fail(
        fn, "the shape must be non-negative, got " + std::to_string(A.rows) + " x " + std::to_string(A.cols));
  detail::SpmvArgs s{
      A.rows,         A.cols,        detail::raw(A.row_offsets), detail::raw(A.col_indices), detail::raw(A.values),
      detail::raw(x), detail::raw(y)};
  detail::check_length(fn, s.offsets, A.rows + 1, "row_offsets");
  const int64_t nnz = A.values.size;
  detail::check_length(fn, s.values, nnz, "values");
  detail::check_length(fn, s.indices, nnz, "col_indices");
  detail::check_length(fn, s.x, A.cols, "x");
  detail::check_length(fn, s.y, A.rows, "y");
  for (const detail::Raw* in : {&s.offsets, &s.indices, &s.values, &s.x})
    detail::check_apart(fn, s.y, "y", *in, "an input");
  if (s.offsets.where == Memory::host) detail::check_offsets(fn, A.row_offsets.data, A.rows + 1, nnz, "row_offsets");
  if (s.indices.where == Memory::host) detail::check_indices(fn, A.col_indices.data, nnz, A.cols, "col_indices");
  if (A.rows == 0) return;
  const detail::Backend& backend = detail::primitive_backend(ctx, fn, {s.offsets, s.indices, s.values, s.x, s.y});
  backend.spmv(ctx, s);
}

template void spmv_csr(const Context&, const CsrView<float, int32_t>&, ConstArray<float>, ArrayView<float>);
template void spmv_csr(const Context&, const CsrView<float, int64_t>&, ConstArray<float>, ArrayView<float>);
template void spmv_csr(const Context&, const CsrView<double, int32_t>&, ConstArray<double>, ArrayView<double>);
template void spmv_csr(const Context&, const CsrView<double, int64_t>&, ConstArray<double>, ArrayView<double>);

}  // namespace simkit
