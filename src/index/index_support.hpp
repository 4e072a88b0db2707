#pragma once
// What every index type does the same way: argument checks, padded results, results handed to
// device outputs, and the sections every saved index starts with.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <simkit/context.hpp>
#include <simkit/index.hpp>
#include <simkit/matrix.hpp>

#include "index/id_map.hpp"
#include "index/index_file.hpp"

namespace simkit::detail {

/// X is n x dim host rows, finite; `what` names the call ("add", "train").
void check_rows(const Context& ctx, MatrixView<const float> X, int64_t dim, const char* what);

/// Q is m x dim (host or device) and finite, k >= 1, values / ids m x k and both in one memory.
void check_search(const Context& ctx, MatrixView<const float> Q, int64_t dim, int64_t k, MatrixView<float> values,
                  MatrixView<int64_t> ids);

/// Appends the rows of X (host, n x d) with their ids to a row store (`rows` row-major, `row_ids`
/// beside it, `map` from id to row), in id order within the batch, so that a store kept in id
/// order stays so when the batch's ids all exceed its last. Returns false when they do not and
/// rows from `ordered_from` on were in id order (flat: the whole store; tree: its tail).
bool append_in_id_order(MatrixView<const float> X, const std::vector<int64_t>& ids, int64_t ordered_from,
                        std::vector<float>& rows, std::vector<int64_t>& row_ids, IdMap& map);

/// The metric's worst value: -inf for similarities, +inf for distances.
float worst_value(Metric metric);

/// Host buffers a search writes into, then hands to the caller's outputs (copied when those
/// are on the device).
class SearchOutput {
 public:
  SearchOutput(MatrixView<float> values, MatrixView<int64_t> ids);
  MatrixView<float> values() noexcept { return values_; }
  MatrixView<int64_t> ids() noexcept { return ids_; }
  /// Fills every row with (worst, -1).
  void pad_all(Metric metric);
  /// Copies to the caller's device outputs when they are on the device; nothing otherwise.
  void deliver(const Context& ctx) const;

 private:
  MatrixView<float> out_values_;
  MatrixView<int64_t> out_ids_;
  Matrix<float> own_values_;
  Matrix<int64_t> own_ids_;
  MatrixView<float> values_;
  MatrixView<int64_t> ids_;
};

/// The sections every index file carries: type, metric, dim, size, next id.
void write_common(IndexFileWriter& w, const std::string& type, Metric metric, int64_t dim, int64_t size,
                  int64_t next_id);

struct CommonHeader {
  Metric metric;
  int64_t dim, size, next_id;
};
/// Reads and checks them against the expected type.
CommonHeader read_common(const IndexFile& f, const std::string& type);

/// Error(io): "not a usable simkit index file: PATH: reason".
[[noreturn]] void refuse_file(const IndexFile& f, const std::string& reason);

/// A section holding exactly `count` values of T, copied out.
template <class T>
std::vector<T> read_array(const IndexFile& f, const std::string& name, int64_t count) {
  const unsigned char* p = f.bytes_exactly(name, static_cast<size_t>(count) * sizeof(T));
  std::vector<T> out(static_cast<size_t>(count));
  if (count > 0) std::memcpy(out.data(), p, static_cast<size_t>(count) * sizeof(T));
  return out;
}

/// Every value finite, or the file is refused.
void check_finite_section(const IndexFile& f, const std::string& name, const std::vector<float>& v);

}  // namespace simkit::detail
