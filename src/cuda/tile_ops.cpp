#include "cuda/tile_ops.hpp"

#include "cuda/epilogue.hpp"
#include "cuda/gemm.hpp"
#include "cuda/l1.hpp"
#include "cuda/rows.hpp"

namespace simkit::detail::cuda {

size_t operand_scratch_floats(const MetricPlan& plan, int64_t rows, int64_t d, bool raw_writable) {
  if (plan.prep != RowPrep::none) return raw_writable ? 0 : size_t(rows) * size_t(d);
  if (plan.expanded) return size_t(rows);  // the squared norms
  return 0;
}

Operand prepare_operand(const MetricPlan& plan, const float* raw, bool raw_writable, int64_t rows, int64_t d,
                        float* scratch, cudaStream_t stream, int* non_finite) {
  Operand op;
  op.raw = raw;
  op.prep = raw;
  if (plan.prep != RowPrep::none) {
    float* out = raw_writable ? const_cast<float*>(raw) : scratch;
    row_prep(plan.prep == RowPrep::normalize ? RowOp::normalize : RowOp::centre_normalize, raw, d, out, d, nullptr,
             rows, d, stream, non_finite);
    op.prep = out;
    op.raw = nullptr;  // overwritten when prepared in place; nothing downstream needs it
  } else if (plan.expanded) {
    row_prep(RowOp::sq_norms, raw, d, nullptr, 0, scratch, rows, d, stream, non_finite);
    op.sq_norms = scratch;
  }
  return op;
}

void metric_tile(Resources& r, cudaStream_t stream, const MetricPlan& plan, const Operand& q, int64_t m,
                 const Operand& x, int64_t n, int64_t d, float* out, int64_t ldo, void* workspace,
                 size_t workspace_bytes) {
  if (!plan.product) {
    l1_tile(q.raw, d, x.raw, d, out, ldo, m, n, d, stream);
  } else if (plan.expanded) {
    dot_tile(r, stream, m, n, d, -2.f, q.raw, d, x.raw, d, out, ldo, workspace, workspace_bytes);
    l2_epilogue(out, ldo, m, n, q.sq_norms, x.sq_norms, q.raw, d, x.raw, d, d, plan.root, stream);
  } else {
    dot_tile(r, stream, m, n, d, 1.f, q.prep, d, x.prep, d, out, ldo, workspace, workspace_bytes);
  }
}

}  // namespace simkit::detail::cuda
