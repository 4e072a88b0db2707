// Sorting codes with row indices (sort_codes.hpp).

#include "cuda/primitives/sort_codes.hpp"

#include "cuda/primitives/cub_routes.hpp"
#include "cuda/primitives/prim_launch.hpp"

namespace simkit::detail::cuda {

size_t sort_codes_bytes(int64_t n) {
  return cub_route::serves_sort(Dtype::i64, 4) ? cub_route::sort_bytes(Dtype::i64, 4, Order::ascending, n)
                                               : sort_scratch_bytes(Dtype::i64, 4, n);
}

void sort_codes(int64_t* codes, int* index, int64_t n, Carver& carve, cudaStream_t stream) {
  const size_t bytes = sort_codes_bytes(n);
  void* work = carve.take<unsigned char>(bytes);
  if (cub_route::serves_sort(Dtype::i64, 4))
    cub_route::sort(Dtype::i64, 4, Order::ascending, codes, index, n, work, bytes, stream);
  else
    launch_sort(Dtype::i64, 4, Order::ascending, codes, index, n, work, stream);
}

}  // namespace simkit::detail::cuda
