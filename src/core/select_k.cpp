// The public select_k (primitives.hpp): argument checks, then the backend. The backends share
// their selection code with k-NN (src/cpu/select.hpp, src/cuda/select_k.cuh).
#include <simkit/error.hpp>
#include <simkit/primitives.hpp>

#include <string>

#include "core/primitives_check.hpp"
#include "core/validate.hpp"

namespace simkit {

namespace {

void check_k(MatrixView<const float> in, int64_t k) {
  if (in.rows < 0 || in.cols < 0)
    detail::primitive_fail("select_k", "the input shape must be non-negative, got " + std::to_string(in.rows) + " x " +
                                           std::to_string(in.cols));
  if (k < 1) detail::primitive_fail("select_k", "k must be at least 1, got " + std::to_string(k));
  if (k > in.cols)
    detail::primitive_fail("select_k",
                           "k = " + std::to_string(k) + " exceeds the row length " + std::to_string(in.cols));
}

}  // namespace

void select_k(const Context& ctx, MatrixView<const float> in, int64_t k, Order order, MatrixView<float> values,
              MatrixView<int64_t> ids) {
  const char* fn = "select_k";
  check_k(in, k);
  if (order != Order::ascending && order != Order::descending) detail::primitive_fail(fn, "unknown Order");
  if (in.size() > 0 && in.data == nullptr) detail::primitive_fail(fn, "the input has a null data pointer");
  if (in.rows == 0) return;
  detail::check_output_shape(values, in.rows, k, "values");
  detail::check_output_shape(ids, in.rows, k, "ids");
  const auto whole = [](auto m) { return detail::raw(ArrayView(m)); };
  detail::check_apart(fn, whole(values), "values", whole(in), "the input");
  detail::check_apart(fn, whole(ids), "ids", whole(in), "the input");
  detail::check_apart(fn, whole(ids), "ids", whole(values), "values");
  const detail::Backend& backend = detail::primitive_backend(ctx, fn, {whole(in), whole(values), whole(ids)});
  const detail::SelectKArgs args{in, k, order, values, ids};
  backend.select_k(ctx, args);
}

SelectResult select_k(const Context& ctx, MatrixView<const float> in, int64_t k, Order order) {
  check_k(in, k);  // before allocating rows x k from k
  SelectResult r{Matrix<float>(in.rows, k), Matrix<int64_t>(in.rows, k)};
  select_k(ctx, in, k, order, r.values.view(), r.ids.view());
  return r;
}

}  // namespace simkit
