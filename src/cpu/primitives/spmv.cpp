// CSR y = A x on the CPU, balanced by merge path as on the GPU (src/cuda/primitives/spmv.cu).
//
// The merge of the row ends (offsets[1..rows]) with the non-zero indices 0..nnz-1 is cut into
// pieces of kPiece items. Each piece sums, row by row, the non-zeros of every row that ends in
// it. A row closed inside the piece that also began there is written at
// once; the piece's first row, if it began in an earlier piece, leaves its partial sum in
// `fix`; the row still open at the end leaves its partial in `carry`. A serial pass over the
// pieces then adds each fixed row's carries from the pieces before it. Pieces are fixed by the
// matrix alone and sums run in double, so y does not depend on the thread count.

#include <algorithm>
#include <cstdint>
#include <vector>

#include <simkit/detail/scan_custom.hpp>

#include "core/merge_path.hpp"
#include "core/parallel.hpp"
#include "cpu/cpu_backend.hpp"

namespace simkit::detail::cpu {

namespace {

constexpr int64_t kPiece = int64_t{1} << 14;

struct Partial {
  int64_t row = -1;  // -1: none
  double value = 0;
};

template <class V, class I>
void spmv_typed(const Context& ctx, const SpmvArgs& a) {
  const I* off = a.offsets.as<const I>();
  const I* col = a.indices.as<const I>();
  const V* val = a.values.as<const V>();
  const V* x = a.x.as<const V>();
  V* y = a.y.as<V>();
  const int64_t rows = a.rows, nnz = a.values.size, total = rows + nnz;
  const int64_t pieces = (total + kPiece - 1) / kPiece;
  std::vector<Partial> carry(static_cast<size_t>(pieces)), fix(static_cast<size_t>(pieces));
  auto row_end = [off](int64_t i) { return int64_t(off[i + 1]); };
  auto index = [](int64_t j) { return j; };
  auto less = [](int64_t u, int64_t v) { return u < v; };

  // The products of non-zeros [j0, j1) summed in double, four running sums: the adds of one
  // row do not wait on each other, and the order is fixed by the matrix alone.
  auto row_sum = [&](int64_t j0, int64_t j1) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t k = j0;
    for (; k + 4 <= j1; k += 4) {
      s0 += double(val[k]) * double(x[col[k]]);
      s1 += double(val[k + 1]) * double(x[col[k + 1]]);
      s2 += double(val[k + 2]) * double(x[col[k + 2]]);
      s3 += double(val[k + 3]) * double(x[col[k + 3]]);
    }
    for (; k < j1; ++k) s0 += double(val[k]) * double(x[col[k]]);
    return (s0 + s1) + (s2 + s3);
  };

  cpu_parallel_for(ctx, pieces, [&](int64_t p) {
    const int64_t d0 = p * kPiece, d1 = std::min(total, d0 + kPiece);
    const int64_t i0 = merge_path_split(d0, rows, nnz, row_end, index, less);
    const int64_t i1 = merge_path_split(d1, rows, nnz, row_end, index, less), j1 = d1 - i1;
    int64_t j = d0 - i0;
    // Rows i0 .. i1 - 1 end in this piece (their non-zeros before j are in earlier pieces);
    // row i1 is still open at its end.
    for (int64_t r = i0; r < i1; ++r) {
      const int64_t end = row_end(r);
      const double sum = row_sum(j, end);
      if (r == i0 && int64_t(off[r]) < d0 - i0)  // begun in an earlier piece: settled below
        fix[size_t(p)] = {r, sum};
      else
        y[r] = V(sum);
      j = end;
    }
    carry[size_t(p)] = {i1, row_sum(j, j1)};
  });

  Partial running;  // the reduce-by-row of the carries of the pieces seen so far
  for (int64_t p = 0; p < pieces; ++p) {
    const Partial& f = fix[size_t(p)];
    if (f.row >= 0) y[f.row] = V(f.value + (running.row == f.row ? running.value : 0.0));
    const Partial& c = carry[size_t(p)];
    if (c.row == running.row)
      running.value += c.value;
    else
      running = c;
  }
}

}  // namespace

void CpuBackend::spmv(const Context& ctx, const SpmvArgs& a) const {
  translate_bad_alloc("spmv_csr", [&] {
    const bool wide = a.offsets.type == Dtype::i64;
    if (a.values.type == Dtype::f64)
      wide ? spmv_typed<double, int64_t>(ctx, a) : spmv_typed<double, int32_t>(ctx, a);
    else
      wide ? spmv_typed<float, int64_t>(ctx, a) : spmv_typed<float, int32_t>(ctx, a);
  });
}

}  // namespace simkit::detail::cpu
