#include "cuda/l1.hpp"

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/l1_tile.cuh"

namespace simkit::detail::cuda {

void l1_tile(const float* Q, int64_t ldq, const float* X, int64_t ldx, float* out, int64_t ldo, int64_t m, int64_t n,
             int64_t d, cudaStream_t stream) {
  using P = L1Policy;
  if (m <= 0 || n <= 0) return;
  // 16-byte loads need 16-byte aligned rows.
  const bool vec = ldq % 4 == 0 && ldx % 4 == 0 && reinterpret_cast<uintptr_t>(Q) % 16 == 0 &&
                   reinterpret_cast<uintptr_t>(X) % 16 == 0;
  const int64_t col_tiles = (n + P::BN - 1) / P::BN;
  // grid.y is limited to 65535 tiles of rows: launch in slabs.
  constexpr int64_t max_row_tiles = 65535;
  for (int64_t r0 = 0; r0 < m; r0 += max_row_tiles * P::BM) {
    const int64_t rows = m - r0 < max_row_tiles * P::BM ? m - r0 : max_row_tiles * P::BM;
    const dim3 grid(unsigned(col_tiles), unsigned((rows + P::BM - 1) / P::BM));
    if (vec)
      l1_tile_kernel<P, true>
          <<<grid, P::THREADS, 0, stream>>>(Q + r0 * ldq, ldq, X, ldx, out + r0 * ldo, ldo, rows, n, d);
    else
      l1_tile_kernel<P, false>
          <<<grid, P::THREADS, 0, stream>>>(Q + r0 * ldq, ldq, X, ldx, out + r0 * ldo, ldo, rows, n, d);
    check_launch("l1_tile_kernel");
  }
}

}  // namespace simkit::detail::cuda
