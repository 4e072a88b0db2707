#pragma once
// A team's running best-kc list of (key, id) pairs in shared memory: the selection step that
// k-NN's tile selection (select_tile.cuh), the two inverted-file list scans (ivf_scan.cu,
// ivf_pq_scan.cu) and their slot merge all share. A team is one warp (WarpTopK: the scans and
// the merge, and select_tile up to C = 128) or a whole block (select_tile beyond, where the
// buffer and the merges need more hands; its lanes count survivors through a shared counter).
//
// The list holds C pairs sorted by (key, id); the threshold is its kc-th entry. A candidate is
// tested against the threshold with one comparison, which rejects nearly every row once the
// list has filled; the few that pass are appended to a buffer of B pairs (one ballot and a
// prefix count for the warp's 32 lanes), and the buffer is sorted and merged into the list
// (bitonic.cuh) when the next 32 might not fit. Merging is what tightens the threshold, so a
// larger buffer merges less often but lets more stale candidates through: B = max(C, 64) is
// what the scans were measured with (ivf_scan.cu's tile note).
//
// Every thread of the team calls every member together (they ballot and synchronise).

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/select/bitonic.cuh"

namespace simkit::detail::cuda {

/// Buffer pairs a warp's list of capacity C is given: at least two rounds of 32 survivors.
template <int C>
constexpr int warp_buffer_of() {
  return C < 64 ? 64 : C;
}

/// TEAM = 32 (one warp) or blockDim.x (the whole block; then `shared_count` points at an int
/// in shared memory the block's warps count through).
template <int TEAM, int C, int B>
class TeamTopK {
 public:
  static constexpr int kCapacity = C, kBuffer = B;
  /// Shared-memory bytes of one team's list and buffer.
  static constexpr size_t kBytes = size_t(C + B) * (sizeof(float) + sizeof(int64_t));

  /// The list at (lk, li), C pairs, the buffer at (bk, bi), B pairs; the threshold is entry
  /// kc - 1 (kc <= C). The list's contents are the caller's: reset() empties it, or the caller
  /// loads it (select_tile keeps lists in global memory between tiles) and says what its
  /// threshold is (set_threshold) so that a tile nothing survives never loads it.
  __device__ TeamTopK(float* lk, int64_t* li, float* bk, int64_t* bi, int kc, int* shared_count = nullptr)
      : lk_(lk), li_(li), bk_(bk), bi_(bi), shared_count_(shared_count), kc_(kc) {
    static_assert(TEAM == 32 || TEAM % 32 == 0, "a team is a warp or whole warps");
  }

  /// Every slot empty: (+inf, INT64_MAX), which sorts after any real candidate. Ends synchronised.
  __device__ void reset(int tid) {
    for (int i = tid; i < C; i += TEAM) lk_[i] = kInf, li_[i] = kNoId;
    zero_count(tid);
    thr_key_ = kInf, thr_id_ = kNoId;
  }

  /// Starts from a list the caller holds (elsewhere) with this threshold. Ends synchronised.
  __device__ void set_threshold(float key, int64_t id, int tid) {
    zero_count(tid);
    thr_key_ = key, thr_id_ = id;
  }

  /// Whether (key, id) would enter the list as it stands: the full order, for streams whose
  /// ids are not known to rise (the slot merge, k-NN tiles before the list has filled).
  __device__ bool beats(float key, int64_t id) const { return before(key, id, thr_key_, thr_id_); }
  /// Key only: right when every id offered exceeds every id in the list (a scan in id order),
  /// so that a key equal to the threshold loses the tie.
  __device__ bool beats(float key) const { return key < thr_key_; }

  /// Offers one candidate per lane (warp teams). `wants(list)` says whether this lane's
  /// candidate passes, asked again after a merge tightened the threshold; `id()` is evaluated
  /// only for lanes whose candidate is kept, so a scan can look the id up lazily.
  template <class Wants, class Id>
  __device__ void offer(float key, Wants wants, Id id, int lane) {
    static_assert(TEAM == 32, "a block team checks room at its synchronisation points (room, merge)");
    bool take = wants(*this);
    unsigned ballot = __ballot_sync(0xffffffffu, take);
    if (ballot == 0) return;
    if (count_ + 32 > B) {
      merge(lane);
      take = wants(*this);
      ballot = __ballot_sync(0xffffffffu, take);
    }
    append(take, ballot, key, id, lane);
    __syncwarp();
  }

  /// Appends without checking room, for callers that offer several values per lane between
  /// merges: a block team then calls sync_count() before room().
  template <class Id>
  __device__ void append(bool take, float key, Id id, int lane) {
    const unsigned ballot = __ballot_sync(0xffffffffu, take);
    if (ballot != 0) append(take, ballot, key, id, lane);
  }

  /// A block team's count made the same in every thread (a warp team's always is). Ends synchronised.
  __device__ void sync_count() {
    if constexpr (TEAM == 32) {
      __syncwarp();
    } else {
      __syncthreads();
      count_ = *shared_count_;
      __syncthreads();  // everyone has read it before the next append adds to it
    }
  }

  /// Buffer pairs still free (after sync_count() in a block team).
  __device__ int room() const { return B - count_; }
  __device__ bool empty() const { return count_ == 0; }

  /// Sorts the buffer into the list and re-reads the threshold; ends synchronised.
  __device__ void merge(int tid) {
    team_sync<TEAM>();
    merge_into_list<TEAM, C, B>(lk_, li_, bk_, bi_, count_, tid);
    thr_key_ = lk_[kc_ - 1], thr_id_ = li_[kc_ - 1];
    zero_count(tid);
  }
  /// merge() when the buffer holds anything.
  __device__ void flush(int tid) {
    if (count_ > 0) merge(tid);
  }

  /// Takes the best kc of another sorted list of kc pairs (another team's, free to be
  /// overwritten: it serves as the buffer). Ends synchronised.
  __device__ void absorb(float* other_keys, int64_t* other_ids, int tid) {
    merge_into_list<TEAM, C, C>(lk_, li_, other_keys, other_ids, kc_, tid);
    thr_key_ = lk_[kc_ - 1], thr_id_ = li_[kc_ - 1];
  }

  /// The first `count` entries of the sorted list to keys[] and ids[].
  __device__ void store(float* keys, int64_t* ids, int count, int tid) const {
    for (int i = tid; i < count; i += TEAM) keys[i] = lk_[i], ids[i] = li_[i];
  }

 private:
  template <class Id>
  __device__ void append(bool take, unsigned ballot, float key, Id id, int lane) {
    int at;
    if constexpr (TEAM == 32) {
      at = count_;
      count_ += __popc(ballot);
    } else {
      const int leader = __ffs(ballot) - 1;
      int first = 0;
      if (lane == leader) first = atomicAdd(shared_count_, __popc(ballot));
      at = __shfl_sync(0xffffffffu, first, leader);
    }
    if (take) {
      const int slot = at + __popc(ballot & ((1u << lane) - 1u));
      bk_[slot] = key;
      bi_[slot] = id();
    }
  }

  __device__ void zero_count(int tid) {
    count_ = 0;
    if constexpr (TEAM != 32) {
      if (tid == 0) *shared_count_ = 0;
    }
    team_sync<TEAM>();
  }

  float* lk_;
  int64_t* li_;
  float* bk_;
  int64_t* bi_;
  int* shared_count_;
  int kc_;
  int count_ = 0;
  float thr_key_ = kInf;
  int64_t thr_id_ = kNoId;
};

/// One warp's list with the scans' buffer.
template <int C>
using WarpTopK = TeamTopK<32, C, warp_buffer_of<C>()>;

}  // namespace simkit::detail::cuda
