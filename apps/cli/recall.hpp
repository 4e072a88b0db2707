#pragma once
// Ground truth for the search commands (`knn`, `index search`, `bench ann`): reading it up front
// and the recall@k they print.

#include <cstdint>
#include <string>

#include <simkit/matrix.hpp>

namespace simkit::cli {

/// Reads --truth (.ivecs or integer .npy) and checks it has m rows of at least k ids; throws
/// before any search runs, so a wrong file fails first.
Matrix<int64_t> read_truth(const std::string& path, int64_t m, int64_t k);

/// How many of each query's first k truth ids are among its first k found ids, summed.
int64_t count_hits(const Matrix<int64_t>& found, const Matrix<int64_t>& truth, int64_t k);

/// Prints "recall@k = 0.953 (n of N truth neighbours found)" on stdout.
void print_recall(const Matrix<int64_t>& found, const Matrix<int64_t>& truth, int64_t k);

}  // namespace simkit::cli
