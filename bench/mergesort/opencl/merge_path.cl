// The seed's Merge Path sort (section 3.7) in OpenCL C 1.2: the same two kernels, one work-item
// per thread of the CUDA version (merge_path.cu, gpu_sort.cu), and the same per-item steps as
// run_ops.hpp, which OpenCL C cannot include (no namespaces, no int64_t): insertion sort of a
// run, then for every level a binary search on the cross diagonal and a forward merge of
// `slice` keys. Keep the three in step, so OpenCL against CUDA compares one algorithm.
// Compiled at run time from the copy embedded in the binary (opencl_kernels.hpp).

// Insertion sort of v[0, len), as run_ops.hpp's insertion_sort.
void insertion_sort(__global int* v, long len) {
  for (long i = 1; i < len; ++i) {
    const int key = v[i];
    long j = i;
    for (; j > 0 && v[j - 1] > key; --j) v[j] = v[j - 1];
    v[j] = key;
  }
}

// How many keys of a lie among the first `diag` keys of the merge of a[0, na) and b[0, nb):
// run_ops.hpp's path_crossing (a's key first on ties, so the merge is stable).
long path_crossing(__global const int* a, long na, __global const int* b, long nb, long diag) {
  long lo = diag > nb ? diag - nb : 0, hi = diag < na ? diag : na;
  while (lo < hi) {
    const long m = lo + (hi - lo) / 2;
    if (a[m] <= b[diag - 1 - m])
      lo = m + 1;
    else
      hi = m;
  }
  return lo;
}

// `count` keys of the merge of a and b from path point (i, j): run_ops.hpp's merge_steps.
void merge_steps(__global const int* a, long na, __global const int* b, long nb, long i, long j, __global int* out,
                 long count) {
  for (long k = 0; k < count; ++k) out[k] = j >= nb || (i < na && a[i] <= b[j]) ? a[i++] : b[j++];
}

// Work-item r sorts run r, [r size_i, (r + 1) size_i) clipped to n.
__kernel void insertion_kernel(__global int* keys, long n, long size_i) {
  const long begin = (long)get_global_id(0) * size_i;
  if (begin >= n) return;
  insertion_sort(keys + begin, size_i < n - begin ? size_i : n - begin);
}

// Work-item t writes dst[t slice, (t + 1) slice) of the level that merges runs of `width` keys
// pairwise; the slice divides 2 width, so it lies within one pair (run_ops.hpp's pair_around).
__kernel void merge_path_level(__global const int* src, __global int* dst, long n, long width, long slice) {
  const long first = (long)get_global_id(0) * slice;
  if (first >= n) return;
  const long base = first / (2 * width) * (2 * width);
  const long mid = base + width < n ? base + width : n;
  const long end = base + 2 * width < n ? base + 2 * width : n;
  __global const int* a = src + base;
  __global const int* b = src + mid;
  const long na = mid - base, nb = end - mid, diag = first - base;
  const long i = path_crossing(a, na, b, nb, diag);
  const long count = slice < end - first ? slice : end - first;
  merge_steps(a, na, b, nb, i, diag - i, dst + first, count);
}
