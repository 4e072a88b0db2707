#pragma once
// The float64 k-NN / k-means keys on the device, one warp per pair: lanes stride over d
// (coalesced), double accumulation, a butterfly reduction. The same forms and zero-row
// conventions as core/exact_metric.hpp on the host. The centred form makes two passes (the
// means first), as the host does, so that rows far from the origin lose nothing to
// cancellation.

#include <cstdint>

#include "core/metric_plan.hpp"

namespace simkit::detail::cuda {

__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ double cosine_of(double ab, double aa, double bb) {
  if (!(aa > 0 && bb > 0)) return 0.0;
  const double c = ab / (sqrt(aa) * sqrt(bb));
  return c > 1.0 ? 1.0 : (c < -1.0 ? -1.0 : c);
}

template <ExactForm F>
__device__ __forceinline__ double exact_key(const float* q, const float* x, int64_t d, int lane) {
  if constexpr (F == ExactForm::sqdist) {
    double acc = 0;
    for (int64_t t = lane; t < d; t += 32) {
      const double e = double(q[t]) - double(x[t]);
      acc += e * e;
    }
    return warp_sum(acc);
  } else if constexpr (F == ExactForm::dot) {
    double acc = 0;
    for (int64_t t = lane; t < d; t += 32) acc += double(q[t]) * double(x[t]);
    return -warp_sum(acc);
  } else {
    double mq = 0, mx = 0;
    if constexpr (F == ExactForm::centred_cosine) {
      for (int64_t t = lane; t < d; t += 32) mq += q[t], mx += x[t];
      mq = warp_sum(mq) / double(d);
      mx = warp_sum(mx) / double(d);
    }
    double ab = 0, aa = 0, bb = 0;
    for (int64_t t = lane; t < d; t += 32) {
      const double a = double(q[t]) - mq, b = double(x[t]) - mx;
      ab += a * b, aa += a * a, bb += b * b;
    }
    return -cosine_of(warp_sum(ab), warp_sum(aa), warp_sum(bb));
  }
}

}  // namespace simkit::detail::cuda
