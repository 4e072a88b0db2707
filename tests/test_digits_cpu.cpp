// The acceptance check on real data: k = 100 nearest neighbours of the 100 digits queries among
// 1,697 base rows (64-d whole numbers 0..16, so distances tie exactly all the time) must equal
// the float64 ground truth, ties to the lower id, id for id.
//
// The files are read by a small local .fvecs/.ivecs parser so that this test depends on the
// search alone, not on simkit's I/O layer (which has its own tests).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <simkit/knn.hpp>

namespace simkit::test {
namespace {

const std::filesystem::path kDigits = std::filesystem::path(SIMKIT_TEST_DATA_DIR) / "digits";

/// Reads a .fvecs or .ivecs file (per row: int32 dimension, then that many 4-byte values) into
/// a row-major matrix of T, checking that every row has the same dimension and that the file
/// holds whole rows only.
template <class T>
Matrix<T> read_vecs(const std::filesystem::path& path) {
  static_assert(sizeof(T) == 4);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 4) throw std::runtime_error(path.string() + ": too short");
  int32_t d = 0;
  std::memcpy(&d, bytes.data(), 4);
  const size_t row_bytes = 4 * (1 + static_cast<size_t>(d));
  if (d <= 0 || bytes.size() % row_bytes != 0) throw std::runtime_error(path.string() + ": not whole rows");
  const auto rows = static_cast<int64_t>(bytes.size() / row_bytes);
  Matrix<T> m(rows, d);
  for (int64_t i = 0; i < rows; ++i) {
    const char* row = bytes.data() + static_cast<size_t>(i) * row_bytes;
    int32_t di = 0;
    std::memcpy(&di, row, 4);
    if (di != d) throw std::runtime_error(path.string() + ": row " + std::to_string(i) + " has another dimension");
    std::memcpy(&m(i, 0), row + 4, 4 * static_cast<size_t>(d));
  }
  return m;
}

class Digits : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(kDigits / "digits_base.fvecs"))
        << kDigits.string() << ": the digits files ship with the repository (tests/data/README.md)";
    base = read_vecs<float>(kDigits / "digits_base.fvecs");
    queries = read_vecs<float>(kDigits / "digits_query.fvecs");
    truth = read_vecs<int32_t>(kDigits / "digits_groundtruth_sqeuclidean.ivecs");
    ASSERT_EQ(base.rows(), 1697);
    ASSERT_EQ(base.cols(), 64);
    ASSERT_EQ(queries.rows(), 100);
    ASSERT_EQ(queries.cols(), 64);
    ASSERT_EQ(truth.rows(), 100);
    ASSERT_EQ(truth.cols(), 100);
  }

  /// Runs knn and compares every id with the ground truth; returns the number of mismatches.
  int64_t mismatches(Metric metric, int threads) {
    Context ctx;
    ctx.device = Device::cpu;
    ctx.threads = threads;
    const KnnResult r = knn(ctx, queries.view(), base.view(), 100, metric);
    int64_t wrong = 0;
    for (int64_t i = 0; i < 100; ++i)
      for (int64_t p = 0; p < 100; ++p)
        if (r.ids(i, p) != truth(i, p) && wrong++ < 5)
          ADD_FAILURE() << to_string(metric) << ", " << threads << " threads: query " << i << " position " << p
                        << ": id " << r.ids(i, p) << ", ground truth " << truth(i, p);
    // The values must be the exact squared distances (whole numbers) or their square roots.
    for (int64_t i = 0; i < 100; ++i)
      for (int64_t p = 0; p < 100; ++p) {
        double exact = 0;
        for (int64_t t = 0; t < 64; ++t) {
          const double e = double(queries(i, t)) - base(r.ids(i, p), t);
          exact += e * e;
        }
        const float want = metric == Metric::l2 ? static_cast<float>(std::sqrt(exact)) : static_cast<float>(exact);
        EXPECT_EQ(r.values(i, p), want) << to_string(metric) << " query " << i << " position " << p;
      }
    return wrong;
  }

  Matrix<float> base, queries;
  Matrix<int32_t> truth;
};

TEST_F(Digits, SqeuclideanEqualsGroundTruth) {
  for (int threads : {0, 1, 2}) {
    const int64_t wrong = mismatches(Metric::sqeuclidean, threads);
    std::printf("  sqeuclidean, threads %d: %lld of 10000 ids differ from the ground truth\n", threads,
                static_cast<long long>(wrong));
    EXPECT_EQ(wrong, 0);
  }
}

TEST_F(Digits, L2EqualsGroundTruth) {
  const int64_t wrong = mismatches(Metric::l2, 0);
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace simkit::test
