// The GPU strategies in the study's order, each with the launch sizes the study swept: block
// sizes 32 .. 1024 (S1 is a block of one thread by definition), TILE 8, 16, 30, 31, 32 for S7.
// The study numbers its GPU strategies S1-S3 and S5-S7 (it has no S4); the names keep that.

#include "gpu_strategies.hpp"

namespace simkit::strategies {

const std::vector<GpuStrategy>& gpu_strategies() {
  static const std::vector<int> blocks = {32, 64, 128, 256, 512, 1024};
  static const std::vector<GpuStrategy> all = {
      {"s1_pair_blocks", "a 1-thread block per pair", {1}, run_s1},
      {"s2_query_blocks", "a block per query, threads over the base", blocks, run_s2},
      {"s3_base_blocks", "a block per base row, threads over the queries", blocks, run_s3},
      {"s5_query_reduce", "a block per query in shared memory, tree reduction over d", blocks, run_s5},
      {"s6_base_reduce", "a block per base row in shared memory, tree reduction over d", blocks, run_s6},
      {"s7_tiled", "2-D tiles of TILE x TILE in shared memory, a pair per thread", {8, 16, 30, 31, 32}, run_s7},
  };
  return all;
}

}  // namespace simkit::strategies
