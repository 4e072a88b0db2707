#include "index/index_support.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <simkit/error.hpp>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/quoted_path.hpp"
#include "core/validate.hpp"

namespace simkit::detail {

void check_rows(const Context& ctx, MatrixView<const float> X, int64_t dim, const char* what) {
  SIMKIT_EXPECTS(X.data != nullptr || X.empty(), invalid_argument, what, ": the vectors have no data");
  SIMKIT_EXPECTS(X.rows >= 1, invalid_argument, what, ": no vectors given");
  SIMKIT_EXPECTS(X.where == Memory::host, invalid_argument, what, ": the vectors must be in host memory");
  SIMKIT_EXPECTS(X.cols == dim, invalid_argument, what, ": vectors of dimension ", X.cols,
                 " for an index of dimension ", dim);
  check_host_finite(ctx, {{X, "vectors"}});
}

void check_search(const Context& ctx, MatrixView<const float> Q, int64_t dim, int64_t k, MatrixView<float> values,
                  MatrixView<int64_t> ids) {
  check_points(Q, "queries");
  SIMKIT_EXPECTS(Q.cols == dim, invalid_argument, "search: queries of dimension ", Q.cols,
                 " for an index of dimension ", dim);
  SIMKIT_EXPECTS(k >= 1, invalid_argument, "search: k must be at least 1, got ", k);
  check_output_shape(values, Q.rows, k, "values");
  check_output_shape(ids, Q.rows, k, "ids");
  SIMKIT_EXPECTS(values.where == ids.where, invalid_argument, "search: values and ids must be in the same memory");
  check_host_finite(ctx, {{Q, "queries"}});
  check_device_finite(ctx, {{Q, "queries"}});
}

bool append_in_id_order(MatrixView<const float> X, const std::vector<int64_t>& ids, int64_t ordered_from,
                        std::vector<float>& rows, std::vector<int64_t>& row_ids, IdMap& map) {
  std::vector<int64_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return ids[size_t(a)] < ids[size_t(b)]; });
  const int64_t first = int64_t(row_ids.size());
  const bool in_order = order.empty() || first <= ordered_from || ids[size_t(order.front())] > row_ids.back();
  const size_t d = static_cast<size_t>(X.cols);
  const size_t needed = rows.size() + static_cast<size_t>(X.rows) * d;
  // Growth by half: a stream of small adds copies the store O(log n) times.
  if (needed > rows.capacity()) rows.reserve(std::max(needed, rows.size() + rows.size() / 2));
  rows.resize(needed);
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t id = ids[size_t(order[i])];
    std::copy_n(X.row(order[i]), d, rows.data() + (static_cast<size_t>(first) + i) * d);
    row_ids.push_back(id);
    map.set(id, first + static_cast<int64_t>(i));
  }
  return in_order;
}

float worst_value(Metric metric) {
  return larger_is_better(metric) ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
}

SearchOutput::SearchOutput(MatrixView<float> values, MatrixView<int64_t> ids)
    : out_values_(values), out_ids_(ids), values_(values), ids_(ids) {
  if (values.where == Memory::device) {
    own_values_ = Matrix<float>(values.rows, values.cols);
    own_ids_ = Matrix<int64_t>(ids.rows, ids.cols);
    values_ = own_values_.view();
    ids_ = own_ids_.view();
  }
}

void SearchOutput::pad_all(Metric metric) {
  const float worst = worst_value(metric);
  for (int64_t i = 0; i < values_.size(); ++i) values_.data[i] = worst, ids_.data[i] = -1;
}

void SearchOutput::deliver(const Context& ctx) const {
  if (out_values_.where != Memory::device) return;
  const Backend& backend = backend_for(ctx, {Memory::device}, "search");
  backend.copy_to_device(ctx, out_values_.data, values_.data, static_cast<size_t>(values_.size()) * sizeof(float));
  backend.copy_to_device(ctx, out_ids_.data, ids_.data, static_cast<size_t>(ids_.size()) * sizeof(int64_t));
}

void write_common(IndexFileWriter& w, const std::string& type, Metric metric, int64_t dim, int64_t size,
                  int64_t next_id) {
  w.add_text("type", type);
  w.add_text("metric", to_string(metric));
  w.add_u64("dim", static_cast<uint64_t>(dim));
  w.add_u64("size", static_cast<uint64_t>(size));
  w.add_u64("next_id", static_cast<uint64_t>(next_id));
}

void refuse_file(const IndexFile& f, const std::string& reason) {
  throw Error(ErrorCode::io, "not a usable simkit index file: " + quoted_path(f.path()) + ": " + reason);
}

CommonHeader read_common(const IndexFile& f, const std::string& type) {
  const std::string stored = f.text("type");
  if (stored != type) refuse_file(f, "holds a " + simkit::quoted(stored) + " index, not '" + type + "'");
  CommonHeader h{};
  try {
    h.metric = parse_metric(f.text("metric"));
  } catch (const Error&) {
    refuse_file(f, "unknown metric " + simkit::quoted(f.text("metric")));
  }
  const uint64_t dim = f.u64("dim"), size = f.u64("size"), next = f.u64("next_id");
  constexpr uint64_t kLimit = uint64_t(1) << 40;
  if (dim < 1 || dim > (1u << 20)) refuse_file(f, "dimension " + std::to_string(dim) + " is out of range");
  if (size > kLimit || next > uint64_t(INT64_MAX)) refuse_file(f, "size or next id out of range");
  h.dim = static_cast<int64_t>(dim);
  h.size = static_cast<int64_t>(size);
  h.next_id = static_cast<int64_t>(next);
  return h;
}

void check_finite_section(const IndexFile& f, const std::string& name, const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) refuse_file(f, "section '" + name + "' holds a NaN or infinite value");
}

}  // namespace simkit::detail
