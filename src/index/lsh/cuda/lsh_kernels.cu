#include "index/lsh/cuda/lsh_kernels.hpp"

#include <algorithm>
#include <cmath>

#include "cuda/check.hpp"

namespace simkit::detail::cuda {

namespace {

constexpr int kThreads = 256;
// Queries per block of lsh_mark: one bit each in a row's membership word.
constexpr int kMarkQueries = 32;
// The probe lists of a block's queries are staged in shared memory when they fit here: the
// default 48 KiB a block may use without opting in, less the kernel's static per-query counters
// (a list of exactly 48 KiB plus those was refused at launch: 8 tables x 64 probes x 24 queries);
// longer lists are read from global memory (L1 / L2 cached).
constexpr int64_t kMarkSharedBytes = 48 * 1024 - kMarkQueries * int64_t(sizeof(unsigned));

__global__ void l1_keys_kernel(const float* __restrict__ Q, const float* __restrict__ X, int64_t d,
                               const int64_t* __restrict__ ids, int64_t rows, int64_t C, double* __restrict__ keys) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= rows * C) return;
  const int64_t id = ids[e];
  if (id == INT64_MAX) {
    keys[e] = INFINITY;
    return;
  }
  const float* q = Q + (e / C) * d;
  const float* x = X + id * d;
  float acc = 0.f;
  for (int64_t t = 0; t < d; ++t) acc += fabsf(q[t] - x[t]);  // the tile kernel's order and rounding
  keys[e] = double(acc);
}

// One thread per base row, `tile` queries per block (blockIdx.y). Each thread reads its row's
// bucket once per table (coalesced) and tests it against every query's short list for that
// table; all lanes of a warp read the same list entry, a shared-memory broadcast. Counting goes
// through warp ballots into one shared counter per query, then one global atomic per block.
__global__ void mark_kernel(const int32_t* __restrict__ bucket_of, int64_t n, int tables,
                            const int32_t* __restrict__ lists, int P, int64_t rows, int tile, bool staged,
                            float* __restrict__ scores, int64_t ld, unsigned long long* __restrict__ counts) {
  extern __shared__ int32_t s_lists[];
  __shared__ unsigned s_count[kMarkQueries];
  const int64_t q0 = int64_t(blockIdx.y) * tile;
  const int tq = rows - q0 < tile ? int(rows - q0) : tile;
  const int64_t per_query = int64_t(tables) * P;
  const int32_t* my = lists + q0 * per_query;
  if (staged) {
    for (int64_t e = threadIdx.x; e < tq * per_query; e += blockDim.x) s_lists[e] = my[e];
    my = s_lists;
  }
  if (threadIdx.x < kMarkQueries) s_count[threadIdx.x] = 0;
  __syncthreads();

  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned member = 0;  // bit q: candidate of query q0 + q
  if (r < n) {
    for (int t = 0; t < tables; ++t) {
      const int32_t b = bucket_of[int64_t(t) * n + r];
      for (int q = 0; q < tq; ++q) {
        if (member >> q & 1u) continue;
        const int32_t* l = my + q * per_query + int64_t(t) * P;
        for (int p = 0; p < P && l[p] >= 0; ++p) {
          if (l[p] == b) {
            member |= 1u << q;
            break;
          }
        }
      }
    }
    if (scores)
      for (int q = 0; q < tq; ++q)
        if (!(member >> q & 1u)) scores[(q0 + q) * ld + r] = NAN;
  }
  if (counts) {  // uniform over the block: every lane reaches the ballots and the barrier
    for (int q = 0; q < tq; ++q) {
      const unsigned hits = __ballot_sync(0xffffffffu, member >> q & 1u);
      if ((threadIdx.x & 31) == 0 && hits) atomicAdd(&s_count[q], unsigned(__popc(hits)));
    }
    __syncthreads();
    if (int(threadIdx.x) < tq && s_count[threadIdx.x])
      atomicAdd(&counts[q0 + threadIdx.x], (unsigned long long)s_count[threadIdx.x]);
  }
}

__global__ void empty_ids_kernel(int64_t* __restrict__ ids, int64_t count) {
  const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < count && ids[e] < 0) ids[e] = INT64_MAX;
}

unsigned blocks_for(int64_t count) { return unsigned((count + kThreads - 1) / kThreads); }

}  // namespace

void lsh_l1_keys(const float* Q, const float* X, int64_t d, const int64_t* ids, int64_t rows, int64_t C, double* keys,
                 cudaStream_t stream) {
  if (rows * C == 0) return;
  l1_keys_kernel<<<blocks_for(rows * C), kThreads, 0, stream>>>(Q, X, d, ids, rows, C, keys);
  check_launch("lsh_l1_keys");
}

void lsh_mark(const int32_t* bucket_of, int64_t n, int64_t tables, const int32_t* lists, int64_t P, int64_t rows,
              float* scores, int64_t ld, int64_t* counts, cudaStream_t stream) {
  if (n == 0 || rows == 0 || (!scores && !counts)) return;
  const int64_t per_query_bytes = std::max<int64_t>(1, tables * P * int64_t(sizeof(int32_t)));
  const int64_t fit = kMarkSharedBytes / per_query_bytes;
  const bool staged = fit >= 1;
  const int tile = int(std::clamp<int64_t>(fit, 1, kMarkQueries));
  const size_t shared = staged ? size_t(tile) * size_t(tables * P) * sizeof(int32_t) : 0;
  const dim3 grid(blocks_for(n), unsigned((rows + tile - 1) / tile));
  static_assert(sizeof(int64_t) == sizeof(unsigned long long));
  mark_kernel<<<grid, kThreads, shared, stream>>>(bucket_of, n, int(tables), lists, int(P), rows, tile, staged, scores,
                                                  ld, reinterpret_cast<unsigned long long*>(counts));
  check_launch("lsh_mark");
}

void lsh_empty_ids(int64_t* ids, int64_t count, cudaStream_t stream) {
  if (count == 0) return;
  empty_ids_kernel<<<blocks_for(count), kThreads, 0, stream>>>(ids, count);
  check_launch("lsh_empty_ids");
}

}  // namespace simkit::detail::cuda
