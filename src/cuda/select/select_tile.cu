// Instantiations and launch of the tile selection kernel (select_tile.cuh).
#include "cuda/select/top_k_lists.hpp"

#include <string>

#include <simkit/error.hpp>

#include "cuda/check.hpp"
#include "cuda/rows.hpp"
#include "cuda/select/select_tile.cuh"

namespace simkit::detail::cuda {

int select_capacity(int64_t kc) {
  int c = 32;
  while (c < kc) c *= 2;
  return c;
}

namespace {

template <int C, KeyMode MODE>
void launch(const SelectArgs& a, cudaStream_t s) {
  using S = SelectShape<C>;
  auto kernel = select_merge_kernel<C, MODE>;
  if (S::SMEM > 48 * 1024 - 64)
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(S::SMEM)),
               "cudaFuncSetAttribute");
  const int blocks = (a.rows + S::TEAMS_PER_BLOCK - 1) / S::TEAMS_PER_BLOCK;
  kernel<<<blocks, S::THREADS, S::SMEM, s>>>(a);
  check_launch("select_merge_kernel");
}

template <KeyMode MODE>
void dispatch(int capacity, const SelectArgs& a, cudaStream_t s) {
  switch (capacity) {
    case 32: return launch<32, MODE>(a, s);
    case 64: return launch<64, MODE>(a, s);
    case 128: return launch<128, MODE>(a, s);
    case 256: return launch<256, MODE>(a, s);
    case 512: return launch<512, MODE>(a, s);
    case 1024: return launch<1024, MODE>(a, s);
    case 2048: return launch<2048, MODE>(a, s);
    default:
      throw Error(ErrorCode::invalid_argument,
                  "internal: no selection kernel for capacity " + std::to_string(capacity));
  }
}

}  // namespace

void select_tile(int capacity, KeyMode mode, const SelectArgs& args, cudaStream_t stream) {
  if (args.rows <= 0 || args.cols <= 0) return;
  switch (mode) {
    case KeyMode::plain: return dispatch<KeyMode::plain>(capacity, args, stream);
    case KeyMode::add_aux: return dispatch<KeyMode::add_aux>(capacity, args, stream);
    case KeyMode::mul_aux: return dispatch<KeyMode::mul_aux>(capacity, args, stream);
    case KeyMode::negate: return dispatch<KeyMode::negate>(capacity, args, stream);
  }
}

void TopKLists::reset(cudaStream_t stream) const { fill_empty(keys, ids, int64_t(rows) * capacity, stream); }

}  // namespace simkit::detail::cuda
