#pragma once
// Running top-k lists on the device: tile selection (select_tile.cuh) and the final per-row
// sort (sort_output.cu), shared by k-NN and select_k.

#include <cuda_runtime.h>

#include <cstdint>

namespace simkit::detail::cuda {

/// Largest running-list capacity the device selection supports; a larger kc takes the host
/// fallback (knn_fallback.cpp).
constexpr int64_t kMaxListCapacity = 2048;

/// How the selection turns a tile score into a key (smaller is better): as is, plus the
/// column's aux value (|x|^2 for l2), times it (1 / |x| for cosine), or negated (select_k of
/// the largest values).
enum class KeyMode { plain, add_aux, mul_aux, negate };

/// One tile for the selection kernel (select_tile.cuh).
struct SelectArgs {
  const float* tile;
  int64_t ldt;  // row stride; rows need not be 16-byte aligned (select_k's are not) unless aux is used
  int rows;
  int cols;
  const float* aux;  // per column, 16-byte aligned at column 0; unused for KeyMode::plain
  int64_t id0;
  float* state_keys;
  int64_t* state_ids;
  int kc;  // the threshold is the kc-th entry of the list (kc <= C)
  /// When set, column c is a candidate only if bit (id0 + c) is set (word (id0 + c) / 32, device
  /// memory): k-NN's row filter.
  const uint32_t* mask = nullptr;
};

/// The list capacity used for kc candidates: the power of two >= max(kc, 32).
int select_capacity(int64_t kc);

/// Merges one tile into the running lists (capacity C = select_capacity(kc)).
void select_tile(int capacity, KeyMode mode, const SelectArgs& args, cudaStream_t stream);

/// How a sorted key becomes the value written out: negated back (similarities, the k largest),
/// or its square root (l2 ranks squared distances).
struct KeyToValue {
  bool negate = false;
  bool root = false;
};

/// Sorts each row's first kc (key, id) pairs by (key, id) and writes the best k as values and
/// ids, row-major with stride k. kc <= kMaxListCapacity. A slot never filled (fewer than k
/// candidates were offered: NaNs are never taken) comes out as (NaN, -1). Float keys come from
/// the selection, double keys from the re-score (cuda/rescore.hpp).
void sort_output(const float* keys, const int64_t* ids, int64_t stride, int64_t rows, int64_t kc, int64_t k,
                 KeyToValue to, float* out_values, int64_t* out_ids, cudaStream_t stream);
void sort_output(const double* keys, const int64_t* ids, int64_t stride, int64_t rows, int64_t kc, int64_t k,
                 KeyToValue to, float* out_values, int64_t* out_ids, cudaStream_t stream);

/// Running top-k lists of a batch of rows in device memory: what select_k and k-NN select with.
/// reset, then add_tile for every tile of columns (ids id0, id0 + 1, ...), then finish.
struct TopKLists {
  float* keys;   // rows x capacity
  int64_t* ids;  // rows x capacity
  int capacity;  // select_capacity(kc)
  int kc;        // the selection keeps the best kc
  int rows;

  void reset(cudaStream_t stream) const;
  void add_tile(const float* tile, int64_t ldt, int cols, KeyMode mode, const float* aux, int64_t id0,
                cudaStream_t stream, const uint32_t* mask = nullptr) const {
    select_tile(capacity, mode, SelectArgs{tile, ldt, rows, cols, aux, id0, keys, ids, kc, mask}, stream);
  }
  /// The best k (<= kc) of each row, sorted, as values.
  void finish(int64_t k, KeyToValue to, float* out_values, int64_t* out_ids, cudaStream_t stream) const {
    sort_output(keys, ids, capacity, rows, kc, k, to, out_values, out_ids, stream);
  }
};

}  // namespace simkit::detail::cuda
