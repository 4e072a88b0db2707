#pragma once
// The metric, decided once. Core builds a MetricPlan from the caller's Metric and hands it to
// the backend; the CPU and CUDA code read its fields and never branch on Metric themselves, so
// they compute, rank and re-score every metric the same way by construction (hnswlib's space
// objects play this part there).
//
//   metric       computed as                                 prep              key (smaller is better)
//   dot          q.x                                         none              -value
//   cosine       q'.x', rows scaled to unit norm             normalize         -value
//   pearson      q'.x', rows centred, then unit norm         centre_normalize  -value
//   sqeuclidean  |q|^2 + |x|^2 - 2 q.x (expanded)            none              value
//   l2           the root of sqeuclidean                     none              squared value
//   l1           sum |q_i - x_i|, directly                   none              value
//
// k-NN selects on the fast float32 key, keeps candidates(k, n) of them, and re-scores those
// in float64 (ExactForm) before ranking by (exact key, id): float32 products cannot separate
// values closer than ~1e-7 relative, and equal rows need not get equal bits from a GEMM.
// l1 is a direct float sum with no expansion to cancel, so it is ranked on its own values.

#include <cmath>
#include <cstdint>

#include <simkit/metric.hpp>

namespace simkit::detail {

/// What a row goes through before the matrix product.
enum class RowPrep : uint8_t {
  none,
  normalize,         // x / |x|; a zero row stays zero, so its cosines are 0
  centre_normalize,  // (x - mean) / |x - mean|; a constant row becomes zero
};

/// The float64 form a candidate is re-scored with (core/exact_metric.hpp, cuda/rescore.cu).
enum class ExactForm : uint8_t {
  none,           // the selection's own value is final (l1)
  sqdist,         // sum (q_i - x_i)^2
  dot,            // sum q_i x_i
  cosine,         // dot / (|q| |x|), 0 for a zero row
  centred_cosine  // cosine of the mean-centred rows (pearson)
};

struct MetricPlan {
  Metric metric = Metric::l2;
  /// Through a matrix product q.x and a per-row epilogue; false: the direct l1 kernel.
  bool product = true;
  /// |q|^2 + |x|^2 - 2 q.x: the squared norms of both sides are needed.
  bool expanded = false;
  /// The value is the square root of what is ranked (l2 ranks squared distances).
  bool root = false;
  RowPrep prep = RowPrep::none;
  /// Larger values are better: the selection key is the negated value.
  bool negate = false;
  ExactForm exact = ExactForm::none;

  bool rescores() const noexcept { return exact != ExactForm::none; }

  /// How many candidates k-NN keeps by the float32 key before the float64 re-score: k plus a
  /// margin for the float32 ranking errors near the k-th value (k when nothing is re-scored).
  int64_t candidates(int64_t k, int64_t n) const noexcept {
    if (!rescores()) return k;
    const int64_t margin = k / 8 > 16 ? k / 8 : 16;
    return k + margin < n ? k + margin : n;
  }

  /// The metric's value of a float64 key (re-scored keys are ranked squared and negated).
  double value_of_key(double key) const noexcept { return root ? std::sqrt(key) : (negate ? -key : key); }
};

MetricPlan plan_metric(Metric metric);

}  // namespace simkit::detail
