#include "cpu/select/top_k.hpp"

#include <algorithm>
#include <cmath>

namespace simkit::detail::cpu {

void TopK::reset(int64_t keep, int64_t offers, bool skip_nan) {
  keep_ = keep;
  skip_nan_ = skip_nan;
  // Room for keep_ + max(keep_, 64) pairs: enough slack that a prune pays for itself, and never
  // more than can be offered (then no prune happens at all).
  capacity_ = std::max(keep, std::min(offers, keep + std::max<int64_t>(keep, 64)));
  buf_.clear();
  buf_.reserve(static_cast<size_t>(capacity_));
  bounded_ = false;
  bound_key_ = std::numeric_limits<float>::infinity();
  bound_id_ = std::numeric_limits<int64_t>::max();
}

void TopK::consider(float key, int64_t id) {
  // A NaN (in k-NN only reachable through float overflow in the product) ranks with +inf: last.
  if (std::isnan(key)) {
    if (skip_nan_) return;
    key = std::numeric_limits<float>::infinity();
  }
  if (!(key < bound_key_ || (key == bound_key_ && id < bound_id_))) return;
  buf_.push_back({key, id});
  const auto size = static_cast<int64_t>(buf_.size());
  if (size > keep_ && size >= capacity_) {
    prune();
  } else if (!bounded_ && size == keep_) {
    // The first keep_ pairs already bound the answer: nothing worse than their worst can enter.
    const Candidate worst = *std::max_element(buf_.begin(), buf_.end(), ranks_before);
    bound_key_ = worst.key, bound_id_ = worst.id;
    bounded_ = true;
  }
}

void TopK::prune() {
  std::nth_element(buf_.begin(), buf_.begin() + (keep_ - 1), buf_.end(), ranks_before);
  buf_.resize(static_cast<size_t>(keep_));
  const Candidate& worst = buf_.back();
  bound_key_ = worst.key, bound_id_ = worst.id;
  bounded_ = true;
}

std::vector<Candidate>& TopK::best() {
  if (static_cast<int64_t>(buf_.size()) > keep_) prune();
  return buf_;
}

}  // namespace simkit::detail::cpu
