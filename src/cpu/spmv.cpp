// CSR y = A x on the CPU, balanced by merge path as on the GPU (src/cuda/spmv.cu).
//
// The merge of the row ends (offsets[1..rows]) with the non-zero indices 0..nnz-1 is cut into
// pieces of kPiece items. Each piece walks its share: a non-zero adds its product to the open
// row, a row end closes it. A row closed inside the piece that also began there is written at
// once; the piece's first row, if it began in an earlier piece, leaves its partial sum in
// `fix`; the row still open at the end leaves its partial in `carry`. A serial pass over the
// pieces then adds each fixed row's carries from the pieces before it. Pieces are fixed by the
// matrix alone and sums run in double, so y does not depend on the thread count.

#include <algorithm>
#include <cstdint>
#include <vector>

#include <simkit/detail/scan_custom.hpp>

#include "core/merge_path.hpp"
#include "core/primitives_backend.hpp"
#include "cpu/parallel.hpp"

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

  cpu_parallel_for(ctx, pieces, [&](int64_t p) {
    const int64_t d0 = p * kPiece, d1 = std::min(total, d0 + kPiece);
    int64_t i = merge_path_split(d0, rows, nnz, row_end, index, less), j = d0 - i;
    const int64_t i_end = merge_path_split(d1, rows, nnz, row_end, index, less), j_end = d1 - i_end;
    const bool begun_before = i < rows && int64_t(off[i]) < j;
    bool first = true;
    double acc = 0;
    while (i < i_end || j < j_end) {
      if (i < i_end && (j == j_end || row_end(i) <= j)) {
        if (first && begun_before)
          fix[size_t(p)] = {i, acc};
        else
          y[i] = V(acc);
        first = false;
        acc = 0;
        ++i;
      } else {
        acc += double(val[j]) * double(x[col[j]]);
        ++j;
      }
    }
    carry[size_t(p)] = {i, acc};
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

void spmv(const Context& ctx, const SpmvArgs& a) {
  translate_bad_alloc("spmv_csr", [&] {
    const bool wide = a.offsets.type == Dtype::i64;
    if (a.values.type == Dtype::f64)
      wide ? spmv_typed<double, int64_t>(ctx, a) : spmv_typed<double, int32_t>(ctx, a);
    else
      wide ? spmv_typed<float, int64_t>(ctx, a) : spmv_typed<float, int32_t>(ctx, a);
  });
}

}  // namespace simkit::detail::cpu
