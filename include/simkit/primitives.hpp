#pragma once
// Parallel primitives: scan, segmented scan, CSR sparse matrix-vector product, merge, merge
// sort and top-k selection, on the CPU (OpenMP) and on the GPU (simkit's own CUDA kernels).
//
// Where they run. Every function takes a Context and runs on the device it resolves to. Arrays
// (array.hpp) may live on the host or, for the GPU backend, on the device, each independently:
// host arrays are copied over and back. The CPU backend needs host arrays and refuses device
// ones. Calls return when the result is in place.
//
// Whose kernels. On the GPU, a few calls go to CUB, where CUB was measured faster and gives the
// same result: integer scans (not segmented), integer merges without values, and sorts (CUB's
// stable radix sort for integer keys, its merge sort with this file's float order for float
// keys). Everything else runs simkit's own kernels. SIMKIT_PRIMITIVES_OWN=1 in the environment
// sends every call to simkit's own kernels (the tests check both; `simkit bench primitives`
// times both).
//
// Types. Values are int32, int64, float or double (PrimitiveValue); sort and merge keys are
// int32, int64 or float (SortKey); select_k works on float. Integer sums and products wrap
// around (two's complement), as they do in CUB.
//
// Determinism. The same input on the same device gives the same output, bit for bit, whatever
// the thread count or the GPU's scheduling: the work is cut at fixed sizes, never by thread
// count, and float sums are combined in a fixed order (see each function).
//
// Float order. Keys are ordered by <, with every NaN after +inf (NumPy's and PyTorch's rule):
// last in an ascending sort, first in a descending one; -0.0 and +0.0 are equal (their order
// is kept, like any tie). Equal keys keep their input order (every sort and merge is stable).
//
// Errors. Every call checks its arguments first and throws Error(invalid_argument) naming the
// problem: lengths that disagree, arrays that overlap other than exactly (in place), CSR
// offsets that do not rise from 0 to nnz, column indices out of range, k outside [1, cols].
// Two checks need the data itself: they are made on the host for host arrays before any work,
// and for device arrays on the GPU during the work (the call still throws, and the output then
// holds no result): CSR structure (spmv_csr) and segment offsets (segmented scans). Sortedness
// of merge inputs is the caller's promise and is not checked (unsorted inputs give some
// permutation of them, never a crash). GPU working memory beyond the budget in Context is
// Error(out_of_memory).

#include <concepts>
#include <cstdint>
#include <span>
#include <type_traits>

#include <simkit/array.hpp>
#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit {

template <class T>
concept PrimitiveValue =
    std::same_as<T, int32_t> || std::same_as<T, int64_t> || std::same_as<T, float> || std::same_as<T, double>;
template <class T>
concept SortKey = std::same_as<T, int32_t> || std::same_as<T, int64_t> || std::same_as<T, float>;
template <class T>
concept IndexType = std::same_as<T, int32_t> || std::same_as<T, int64_t>;

/// The associative operators of the built-in scans, with their identities: sum (0), product
/// (1), min (the type's largest value, +inf for floats), max (lowest, -inf). Float min and max
/// ignore NaN unless every operand is NaN (fmin / fmax).
enum class ScanOp { sum, product, min, max };

enum class Order { ascending, descending };

template <class T>
using ConstArray = std::type_identity_t<ArrayView<const T>>;  // an input; T is deduced from the output

// ------------------------------------------------------------------------------------ scan

/// out[i] = in[0] op in[1] op ... op in[i]. `out` has in.size elements; it may be `in` itself.
/// O(n) work. CPU: two passes over fixed blocks of 64K elements (block totals, then each block
/// from its carry). GPU: one pass, decoupled look-back between tiles; float and double sums
/// and products take a second, reading pass instead (tile totals first) so that their rounding
/// does not depend on scheduling.
template <PrimitiveValue T>
void inclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<T> out, ScanOp op = ScanOp::sum);

/// out[0] = identity, out[i] = in[0] op ... op in[i - 1]. Otherwise as inclusive_scan.
template <PrimitiveValue T>
void exclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<T> out, ScanOp op = ScanOp::sum);

/// Any associative `op` with its `identity`, on the CPU (ctx.threads threads), host memory:
/// the same two-pass blocked scan. `op(a, b)` is called with a before b in the sequence.
template <class T, class Op>
void inclusive_scan(const Context& ctx, std::span<const T> in, std::span<T> out, Op op, T identity);
template <class T, class Op>
void exclusive_scan(const Context& ctx, std::span<const T> in, std::span<T> out, Op op, T identity);

// ------------------------------------------------------------------------- segmented scan

/// A scan restarted at every segment. Segments are given either by head flags (heads[i] != 0
/// starts a segment at i; element 0 always starts one; heads.size == in.size) or by offsets
/// (segment s is [offsets[s], offsets[s + 1]); offsets rise from 0 to in.size; empty segments
/// are allowed). The exclusive form gives the identity at the first element of each segment.
/// O(n); the GPU scans (head, value) pairs in the same single pass as inclusive_scan, offsets
/// being turned into heads first (n bytes of scratch).
template <PrimitiveValue T>
void segmented_inclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<const uint8_t> heads, ArrayView<T> out,
                              ScanOp op = ScanOp::sum);
template <PrimitiveValue T>
void segmented_exclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<const uint8_t> heads, ArrayView<T> out,
                              ScanOp op = ScanOp::sum);
/// Offsets may be int32 or int64 (a view of const or mutable elements).
template <PrimitiveValue T, class I>
requires IndexType<std::remove_const_t<I>>
void segmented_inclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<I> offsets, ArrayView<T> out,
                              ScanOp op = ScanOp::sum);
template <PrimitiveValue T, class I>
requires IndexType<std::remove_const_t<I>>
void segmented_exclusive_scan(const Context& ctx, ConstArray<T> in, ArrayView<I> offsets, ArrayView<T> out,
                              ScanOp op = ScanOp::sum);

// ------------------------------------------------------------------------------- CSR SpMV

/// A sparse matrix in compressed sparse row form: row r holds values[j] at column
/// col_indices[j] for j in [row_offsets[r], row_offsets[r + 1]). Column indices need not be
/// sorted within a row; repeated ones add up.
template <class V, class I>
struct CsrView {
  int64_t rows = 0, cols = 0;
  ArrayView<const I> row_offsets;  // rows + 1 entries, from 0 up to nnz
  ArrayView<const I> col_indices;  // nnz entries in [0, cols)
  ArrayView<const V> values;       // nnz entries
};

/// y = A x, V float or double, I int32 or int64; x has A.cols elements, y A.rows.
/// Every product is formed and summed in double and each y[r] rounded once, so y matches a
/// float64 reference to float precision (relative to sum_j |a_rj x_j|) whatever the row
/// lengths. O(rows + nnz), balanced by merge path over (row ends, non-zeros): every thread gets
/// the same number of both together, so one row of 1M entries is shared by many threads.
template <class V, IndexType I>
requires std::same_as<V, float> || std::same_as<V, double>
void spmv_csr(const Context& ctx, const CsrView<V, I>& A, ConstArray<V> x, ArrayView<V> y);

// ---------------------------------------------------------------------------------- merge

/// Merges sorted a and b (both in `order`) into out (a.size + b.size), stable: of equal keys,
/// those of a come first, each side in its own order. O(n) work; the GPU splits the output in
/// equal tiles by merge path (a binary search on each tile's diagonal), so skew costs nothing.
template <SortKey K>
void merge(const Context& ctx, ConstArray<K> a, ConstArray<K> b, ArrayView<K> out, Order order = Order::ascending);

/// Key-value form: values travel with their keys.
template <SortKey K, PrimitiveValue V>
void merge(const Context& ctx, ConstArray<K> a_keys, ConstArray<V> a_values, ConstArray<K> b_keys,
           ConstArray<V> b_values, ArrayView<K> out_keys, ArrayView<V> out_values, Order order = Order::ascending);

// ----------------------------------------------------------------------------------- sort

/// Sorts keys in place, stable. Merge sort: tiles sorted in one piece, then log2(n / tile)
/// merge passes (CPU: std::stable_sort on 32K-key chunks, then merge passes split across
/// threads by merge path; an array already in order costs one read, and runs already in
/// order are copied rather than merged). O(n log n); the GPU needs n more keys (and values)
/// of scratch. On the GPU, CUB serves the sorts by default (see "Whose kernels" above).
template <SortKey K>
void sort(const Context& ctx, ArrayView<K> keys, Order order = Order::ascending);

/// Sorts keys in place and applies the same permutation to values (values.size == keys.size).
template <SortKey K, PrimitiveValue V>
void sort(const Context& ctx, ArrayView<K> keys, ArrayView<V> values, Order order = Order::ascending);

// ------------------------------------------------------------------------------- select_k

struct SelectResult {
  Matrix<float> values;  // rows x k
  Matrix<int64_t> ids;   // rows x k, column indices into the input row
};

/// For each row of `in` (rows x cols, float), its k smallest (Order::ascending) or largest
/// (descending) values, best first, with their column indices; equal values by the lower
/// index. NaN is never selected: a row with fewer than k other values is padded with
/// (NaN, -1). values and ids are rows x k, host or device. Throws when k < 1 or k > cols.
/// The k-NN search selects with this same code. GPU: one warp per row for k <= 128, a block
/// for k <= 2048 (one pass over the row, a threshold test per element, survivors merged into a
/// running sorted list); larger k is selected on the host. CPU: a thresholded buffer per row.
void select_k(const Context& ctx, MatrixView<const float> in, int64_t k, Order order, MatrixView<float> values,
              MatrixView<int64_t> ids);

/// Convenience form returning host matrices.
SelectResult select_k(const Context& ctx, MatrixView<const float> in, int64_t k, Order order = Order::ascending);

}  // namespace simkit

#include <simkit/detail/scan_custom.hpp>  // the template bodies of the custom-operator scans
