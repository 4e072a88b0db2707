#include "index/ivf/ivf_core.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <simkit/index.hpp>
#include <simkit/knn.hpp>

#include "core/expects.hpp"
#include "core/sample_rows.hpp"
#include "index/resident_rows.hpp"

namespace simkit::detail {

GpuSplit gpu_split(const IvfCore& core, const std::vector<Context>& shards, size_t device_bytes) {
  if (const char* forced = std::getenv("SIMKIT_GPU_SPLIT")) {
    if (std::strcmp(forced, "queries") == 0) return GpuSplit::queries;
    if (std::strcmp(forced, "rows") == 0) return GpuSplit::rows;
  }
  std::vector<int> gpus;
  for (const Context& c : shards) gpus.push_back(c.gpu_id);
  std::lock_guard g(core.device_mutex);
  if (core.split_gpus != gpus) {
    // A GPU that holds this index's copy already counts its memory as free.
    const auto fits = [&](const Context& c) {
      if (c.device != Device::gpu) return false;
      const auto held = core.device.find(c.gpu_id);
      return ResidentRows::fits(c.gpu_id, device_bytes, held != core.device.end() && held->second ? device_bytes : 0);
    };
    core.split = std::all_of(shards.begin(), shards.end(), fits) ? GpuSplit::queries : GpuSplit::rows;
    core.split_gpus = gpus;
  }
  return core.split;
}

Metric coarse_metric(Metric m) {
  switch (m) {
    case Metric::cosine: return Metric::cosine;
    case Metric::pearson: return Metric::pearson;
    case Metric::dot: return Metric::dot;
    default: return Metric::sqeuclidean;
  }
}

Metric kmeans_metric(Metric coarse) {
  return coarse == Metric::cosine || coarse == Metric::pearson ? Metric::cosine : Metric::sqeuclidean;
}

int64_t resolve_nprobe(int64_t asked, int64_t build_default, int64_t nlist) {
  if (asked == 0) asked = build_default;
  if (asked == 0) return std::max<int64_t>(1, nlist / 32);
  if (asked == kProbeFourFifths) return std::min<int64_t>(nlist, (8 * nlist + 9) / 10);
  SIMKIT_EXPECTS(asked >= 1, invalid_argument, "search: nprobe must be >= 1 (or kProbeFourFifths), got ", asked);
  return std::min(asked, nlist);
}

namespace {
SplitMix64 sample_rng(uint64_t seed) { return SplitMix64(seed ^ 0x1f0a5eedull); }
}  // namespace

MatrixView<const float> training_sample(MatrixView<const float> X, int64_t cap, int64_t nlist, uint64_t seed,
                                        Matrix<float>& holder) {
  if (cap >= X.rows) return X;
  SplitMix64 rng = sample_rng(seed);
  holder = draw_sample(X, std::max(cap, nlist), rng);
  return holder.view();
}

std::vector<int64_t> training_indices(int64_t n, int64_t cap, int64_t nlist, uint64_t seed) {
  if (cap >= n) return {};
  SplitMix64 rng = sample_rng(seed);
  return draw_sample_rows(n, std::max(cap, nlist), rng);
}

std::vector<int64_t> nearest_cells(const Context& ctx, MatrixView<const float> X, const IvfCore& core) {
  Context quiet = ctx;
  quiet.progress = nullptr;
  const KnnResult cell = knn(quiet, X, core.centroid_rows(), 1, core.coarse);
  return std::vector<int64_t>(cell.ids.data(), cell.ids.data() + X.rows);
}

}  // namespace simkit::detail
