// k-center (include/simkit/kmeans.hpp): Gonzalez's farthest-point traversal over the backend's
// k-means engine (core/kmeans_engine.hpp), whose assignment against one center is that
// center's exact squared distance to every point.
#include <simkit/error.hpp>
#include <simkit/kmeans.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "core/expects.hpp"
#include "core/splitmix.hpp"
#include "core/validate.hpp"

namespace simkit {

KcenterResult kcenter(const Context& ctx, MatrixView<const float> X, int64_t k, uint64_t seed) {
  detail::check_points(X, "data");
  SIMKIT_EXPECTS(X.where == Memory::host, invalid_argument, "kcenter: the data must be in host memory");
  SIMKIT_EXPECTS(k >= 1, invalid_argument, "kcenter: k must be at least 1, got ", k);
  SIMKIT_EXPECTS(k <= X.rows, invalid_argument, "kcenter: k = ", k, " exceeds the ", X.rows, " points");
  SIMKIT_EXPECTS(k <= INT32_MAX, invalid_argument, "kcenter: k = ", k, " exceeds 2^31 - 1");
  detail::check_finite(ctx, X, "data");
  Context quiet = ctx;
  quiet.progress = nullptr;
  const std::unique_ptr<detail::KmeansEngine> engine =
      detail::backend_for(ctx, {Memory::host}).kmeans_engine(quiet, X, /*spherical=*/false);

  const int64_t n = X.rows, d = X.cols;
  KcenterResult r;
  r.centers = Matrix<float>(k, d);
  r.ids = Matrix<int64_t>(k, 1);
  int64_t next = detail::SplitMix64(seed).below(n);
  std::vector<double> nearest(static_cast<size_t>(n), INFINITY), fresh(static_cast<size_t>(n));
  for (int64_t c = 0; c < k; ++c) {
    r.ids(c, 0) = next;
    std::copy_n(X.row(next), d, &r.centers(c, 0));
    if (c + 1 == k) break;
    engine->assign(MatrixView<const float>(&r.centers(c, 0), 1, d));
    engine->costs(fresh.data());
    int64_t far = 0;
    for (int64_t i = 0; i < n; ++i) {
      nearest[size_t(i)] = std::min(nearest[size_t(i)], fresh[size_t(i)]);
      if (nearest[size_t(i)] > nearest[size_t(far)]) far = i;
    }
    next = far;
    if (ctx.progress) ctx.progress(double(c + 1) / double(k));
  }
  engine->assign(r.centers.view());
  r.labels = Matrix<int64_t>(n, 1);
  engine->labels(r.labels.data());
  engine->costs(nearest.data());
  r.radius = std::sqrt(std::max(0.0, *std::max_element(nearest.begin(), nearest.end())));
  if (ctx.progress) ctx.progress(1.0);
  return r;
}

}  // namespace simkit
