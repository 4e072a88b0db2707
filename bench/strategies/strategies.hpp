#pragma once
// The CPU/GPU similarity study (the seed study of this project, bench/strategies/README.md):
// nine ways to fill the m x n matrix of one metric between query rows Q and base rows X, from
// a serial loop to a 2-D tiled CUDA kernel, kept here with the benchmarks -- never on the
// library's production path, which `simkit pairwise` is (a GEMM plus a fused epilogue).
//
// Every strategy writes out[i * n + j] = metric(Q_i, X_j) with float32 sums, the metrics as the
// study defines them:
//   euclidean    sqrt(sum (a - b)^2)
//   cosine       sum ab / (sqrt(sum a^2) sqrt(sum b^2))
//   pearson      the correlation: means first, then sum a'b' / (sqrt(sum a'^2) sqrt(sum b'^2))
//   pearson_opt  the same value from one pass over raw sums (the study's section 4):
//                (D sum ab - sum a sum b) / (sqrt(D sum a^2 - (sum a)^2) sqrt(D sum b^2 - (sum b)^2))
// A zero denominator gives 0, as simkit's metrics do.

#include <cstdint>
#include <string>
#include <vector>

namespace simkit::strategies {

enum class StudyMetric { euclidean, cosine, pearson, pearson_opt };

const char* name(StudyMetric metric);
/// "euclidean", "cosine", "pearson", "pearson_opt"; std::invalid_argument otherwise.
StudyMetric parse_study_metric(const std::string& text);

/// Row-major float32 inputs (host or device memory, as the strategy says): Q is m x d, X n x d.
struct Problem {
  const float* Q = nullptr;
  int64_t m = 0;
  const float* X = nullptr;
  int64_t n = 0;
  int64_t d = 0;
};

// ------------------------------------------------------------------ CPU (host memory)

/// One thread, the pairs in order (the study's section 5.1.1, serial).
void cpu_serial(const Problem& p, StudyMetric metric, float* out);
/// OpenMP over the query rows, each thread taking whole rows (section 5.1.1, parallel).
void cpu_query_parallel(const Problem& p, StudyMetric metric, float* out, int threads);
/// OpenMP reductions inside each pair's sums, the pairs in order (section 5.1.2).
void cpu_dim_reduction(const Problem& p, StudyMetric metric, float* out, int threads);

// ------------------------------------------------------------------ GPU (device memory)

/// One GPU strategy and the launch parameters the study swept for it.
struct GpuStrategy {
  const char* name;         // s1_pair_blocks, ...
  const char* what;         // one line for the table
  std::vector<int> blocks;  // threads per block (s7: TILE, a TILE x TILE block)
  /// Launches on the default stream; the caller synchronises. out is m x n on the device.
  void (*run)(const Problem& p, StudyMetric metric, int block, float* out);
};

/// S1, S2, S3, S5, S6, S7 in the study's order; empty in a build without CUDA.
const std::vector<GpuStrategy>& gpu_strategies();

}  // namespace simkit::strategies
