#include "tile_ops.hpp"

#include "epilogue.hpp"
#include "gemm.hpp"
#include "l1.hpp"
#include "rows.hpp"

namespace simkit::detail::cuda {

size_t operand_scratch_floats(Metric metric, int64_t rows, int64_t d, bool raw_writable) {
  switch (metric) {
    case Metric::cosine:
    case Metric::pearson: return raw_writable ? 0 : size_t(rows) * size_t(d);
    case Metric::l2:
    case Metric::sqeuclidean: return size_t(rows);
    case Metric::dot:
    case Metric::l1: return 0;
  }
  return 0;
}

Operand prepare_operand(Metric metric, const float* raw, bool raw_writable, int64_t rows, int64_t d, float* scratch,
                        cudaStream_t stream, int* non_finite) {
  Operand op;
  op.raw = raw;
  op.prep = raw;
  switch (metric) {
    case Metric::cosine:
    case Metric::pearson: {
      float* out = raw_writable ? const_cast<float*>(raw) : scratch;
      row_prep(metric == Metric::cosine ? RowOp::normalize : RowOp::centre_normalize, raw, d, out, d, nullptr, rows, d,
               stream, non_finite);
      op.prep = out;
      op.raw = nullptr;  // overwritten when prepared in place; nothing downstream needs it
      break;
    }
    case Metric::l2:
    case Metric::sqeuclidean:
      row_prep(RowOp::sq_norms, raw, d, nullptr, 0, scratch, rows, d, stream, non_finite);
      op.sq_norms = scratch;
      break;
    case Metric::dot:
    case Metric::l1: break;
  }
  return op;
}

void metric_tile(Resources& r, cudaStream_t stream, Metric metric, const Operand& q, int64_t m, const Operand& x,
                 int64_t n, int64_t d, float* out, int64_t ldo, void* workspace, size_t workspace_bytes) {
  switch (metric) {
    case Metric::l1: l1_tile(q.raw, d, x.raw, d, out, ldo, m, n, d, stream); return;
    case Metric::dot:
    case Metric::cosine:
    case Metric::pearson:
      dot_tile(r, stream, m, n, d, 1.f, q.prep, d, x.prep, d, out, ldo, workspace, workspace_bytes);
      return;
    case Metric::l2:
    case Metric::sqeuclidean:
      dot_tile(r, stream, m, n, d, -2.f, q.raw, d, x.raw, d, out, ldo, workspace, workspace_bytes);
      l2_epilogue(out, ldo, m, n, q.sq_norms, x.sq_norms, q.raw, d, x.raw, d, d, metric == Metric::l2, stream);
      return;
  }
}

}  // namespace simkit::detail::cuda
