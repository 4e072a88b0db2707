#include "recall.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/io.hpp>

#include "cli_support.hpp"

namespace simkit::cli {

Matrix<int64_t> read_truth(const std::string& path, int64_t m, int64_t k) {
  Matrix<int64_t> t;
  try {
    t = read_ids(path);
  } catch (const Error& e) {
    throw Error(e.code(), "--truth: " + std::string(e.what()));
  }
  if (t.rows() != m)
    bad("--truth: " + quoted_path(path) + " has " + std::to_string(t.rows()) + " rows but there are " +
        std::to_string(m) + " queries");
  if (t.cols() < k)
    bad("--truth: " + quoted_path(path) + " has " + std::to_string(t.cols()) +
        " neighbours per query, fewer than k = " + std::to_string(k));
  return t;
}

// Ids are distinct within a found row, so counting truth ids that are members of it is exact.
int64_t count_hits(const Matrix<int64_t>& found, const Matrix<int64_t>& truth, int64_t k) {
  int64_t hits = 0;
  std::vector<int64_t> row(static_cast<size_t>(k));
  for (int64_t i = 0; i < found.rows(); ++i) {
    std::copy(&found(i, 0), &found(i, 0) + k, row.begin());
    std::sort(row.begin(), row.end());
    for (int64_t j = 0; j < k; ++j) hits += std::binary_search(row.begin(), row.end(), truth(i, j)) ? 1 : 0;
  }
  return hits;
}

void print_recall(const Matrix<int64_t>& found, const Matrix<int64_t>& truth, int64_t k) {
  const int64_t hits = count_hits(found, truth, k);
  const int64_t total = found.rows() * k;
  // Truncated, not rounded, so that 1.000 is printed only when every neighbour was found.
  const int64_t milli = hits * 1000 / total;
  std::printf("recall@%lld = %lld.%03lld (%s of %s truth neighbours found)\n", (long long)k, (long long)(milli / 1000),
              (long long)(milli % 1000), with_commas(hits).c_str(), with_commas(total).c_str());
}

}  // namespace simkit::cli
