// Checked before any device is touched, so a bad sweep value fails with a message that names it
// rather than as a CUDA launch error.

#include "study_args.hpp"

#include <string>

#include <simkit/error.hpp>

namespace simkit::mergesort::detail {

void check_sort_args(const int32_t* keys, int64_t n, int64_t size_i) {
  if (n < 0) throw Error(ErrorCode::invalid_argument, "mergesort study: n must be >= 0, got " + std::to_string(n));
  if (size_i < 1)
    throw Error(ErrorCode::invalid_argument, "mergesort study: size_i must be >= 1, got " + std::to_string(size_i));
  if (n > 0 && keys == nullptr) throw Error(ErrorCode::invalid_argument, "mergesort study: no keys for n > 0");
}

unsigned blocks_for(int64_t threads, int block) {
  if (block < 1 || block > 1024)
    throw Error(ErrorCode::invalid_argument,
                "mergesort study: threads per block must be in [1, 1024], got " + std::to_string(block));
  const int64_t blocks = (threads + block - 1) / block;
  // gridDim.x allows 2^31 - 1 blocks: block = 1 with n past 2^31 keys would not fit.
  if (blocks > 0x7fffffff)
    throw Error(ErrorCode::invalid_argument, "mergesort study: " + std::to_string(threads) + " threads in blocks of " +
                                                 std::to_string(block) + " need more blocks than a grid holds");
  return unsigned(blocks);
}

}  // namespace simkit::mergesort::detail
