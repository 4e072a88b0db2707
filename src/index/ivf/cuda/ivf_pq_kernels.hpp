#pragma once
// The ivf_pq kernels (ivf_pq_scan.cu) and what the host side (ivf_pq_search.cpp) hands them.
//
// Device layout of the codes: each list starts a new group of 32 rows; a row's m code bytes
// are padded with zeros to m4 = ceil(m / 4) 32-bit words, and group g stores word c of its 32
// rows side by side (words[(g * m4 + c) * 32 + lane]). A warp, one row per lane, then reads
// word c of 32 rows as one 128-byte coalesced load. The padding rows of a group are real
// memory (zeros), so reading them is in bounds; they are never offered as candidates.
//
// The arithmetic of the GPU keys (ivf_pq_lists.hpp's table forms):
//   q'        the prepared query: cosine q / |q|, pearson (q - mean) / |q - mean| with mean
//             and the norm in float64 and each coordinate rounded once to float32; else q;
//   r         float32(q'_t - c_t) (dot: q_t), the query's residual in the probed cell;
//   T[j][s]   float32 of the float64 sum, over the dsub coordinates in order, of
//             (r_t - b_t)^2 (sqdist), |r_t - b_t| (l1) or r_t b_t (dot, then negated), b the
//             code book entry; float64 makes the rounded entry independent of summation order;
//   key       float32 sum of T[j][code_j] for j = 0 .. m - 1 in order, starting from 0, then
//             + bias (dot: float32(-sum q_t c_t), accumulated in float64; else no addition).
// The CPU backend does not follow this to the bit: it builds its tables in float32, for the
// squared distance from the index's list terms (|e|^2 + 2 c.e) plus a per-query -2 q'.e, with
// |q' - c|^2 as the bias (cpu/ivf/ivf_pq_search.cpp). So the two backends' approximate keys
// agree to float rounding, not exactly: with every probed row re-ranked the results are the
// same; otherwise the ids may differ among near-equal keys (tests/test_gpu_ivf_pq.cpp).
// Candidates carry the row's rank among the index's ids, as in ivf_flat (ivf_driver_kernels.hpp).

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

/// The table forms of ivf_pq_lists.hpp's PqTable, as the kernels see them.
enum class PqForm : int { sqdist, neg_dot, l1 };

/// Threads of a scan block: 8 warps. Each warp scans every 8th group of the list with its own
/// running list and the 8 lists are merged at the end, so the scan itself needs no block-wide
/// synchronisation. The table build wants many threads (m * ksub entries, 8,192 at m = 32) and
/// the shared memory (table + 8 lists) must still allow 2-5 blocks per SM: 256 is the middle.
/// To be measured: 128 vs 256 vs 512 threads at m = 32, kc = 32 and kc = 128 (QPS at nprobe 32).
constexpr int kPqScanThreads = 256;
constexpr int kPqScanWarps = kPqScanThreads / 32;

struct PqScanArgs {
  const uint32_t* words;       // the interleaved codes (see above)
  int64_t m4;                  // words per row
  const int64_t* group_start;  // nlist + 1: each list's first group
  const int64_t* row_start;    // nlist + 1: each list's first row (position)
  const int64_t* rank_of_pos;  // per position
  const float* centroids;      // nlist x d, coded space
  const float* codebooks;      // (m * ksub) x dsub
  const float* queries;        // prepared queries, rows of d
  const int64_t* probes;       // (query * nprobe + probe) -> list
  const int64_t* pairs;        // the (query * nprobe + probe) indices, grouped by list
  int64_t d, m, ksub, dsub;
  int64_t nprobe;
  int kc;               // candidates kept per (query, probe)
  float* slot_keys;     // (query * nprobe + probe) * kc + i
  int64_t* slot_ranks;  //   the same, ranks; an empty slot is (+inf, INT64_MAX)
  /// When set, a row is a candidate only if bit (position) is set (word position / 32).
  const uint32_t* mask = nullptr;
};

/// Dynamic shared memory of a scan block: the table (m4 * 4 rows of ksub floats, the padding
/// rows zero), the residual, and each warp's list and buffer at capacity C.
size_t pq_scan_smem(int64_t m, int64_t ksub, int64_t d, int capacity);

/// One block per entry of `pairs` (count of them). capacity = select_capacity(kc) <= 256.
/// The caller has checked pq_scan_smem against the device's opt-in limit.
void pq_scan(PqForm form, int capacity, int64_t count, const PqScanArgs& a, cudaStream_t s);

/// Prepared queries (rows of d) from the originals: unit norm (`normalize`), centred first
/// (`centre`), or copied.
void pq_prepare_queries(const float* Q, int64_t rows, int64_t d, bool normalize, bool centre, float* out,
                        cudaStream_t s);

}  // namespace simkit::detail::cuda
