#pragma once
// The six ways simkit compares two vectors q and x of dimension d.
//
//   l2           sqrt(sum (q_i - x_i)^2)                     distance, smaller is better
//   sqeuclidean  sum (q_i - x_i)^2                           distance, smaller is better
//   l1           sum |q_i - x_i|                             distance, smaller is better
//   dot          sum q_i x_i                                 similarity, larger is better
//   cosine       dot(q, x) / (|q| |x|)                       similarity, larger is better
//   pearson      cosine of the mean-centred vectors          similarity, larger is better
//
// Zero vectors: cosine with a zero-norm row, and pearson with a constant row (zero norm after
// centring), are defined as 0 -- "no similarity", the value scikit-learn's cosine_similarity
// gives. This keeps every output finite; such rows rank below any positively correlated row.

#include <string>
#include <string_view>

namespace simkit {

enum class Metric { l2, sqeuclidean, cosine, dot, pearson, l1 };

/// True for the similarities (dot, cosine, pearson), whose best neighbours are the largest.
constexpr bool larger_is_better(Metric m) noexcept {
  return m == Metric::dot || m == Metric::cosine || m == Metric::pearson;
}

/// True for the metrics computed through a matrix product plus a per-row epilogue.
constexpr bool is_dot_family(Metric m) noexcept { return m != Metric::l1; }

/// "l2", "sqeuclidean", ...
const char* to_string(Metric m) noexcept;

/// Parses a metric name (case-sensitive, as printed by to_string); throws
/// Error(invalid_argument) naming the accepted values otherwise.
Metric parse_metric(std::string_view name);

}  // namespace simkit
