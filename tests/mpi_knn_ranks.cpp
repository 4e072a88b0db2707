// simkit::mpi::knn under `mpirun -n P` (tests/CMakeLists.txt runs it with P = 3): for every
// metric, the result on rank 0 is bit-identical to simkit::knn on the whole base, whose rows
// hold exact duplicates (ties broken by the lower global id); slices of n = 0 and 1 rows; a
// layout that is not contiguous is refused on every rank alike. Plain main: exit 0 or 1.

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include <simkit/error.hpp>
#include <simkit/knn.hpp>
#include <simkit/mpi.hpp>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int failures = 0;
  const int64_t d = 9, m = 11;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal;
  for (const int64_t n : {int64_t{2}, int64_t{5}, int64_t{200}}) {
    simkit::Matrix<float> X(n, d), Q(m, d);
    for (int64_t i = 0; i < X.size(); ++i) X.data()[i] = normal(gen);
    for (int64_t i = n / 2; i < n; i += 3) std::memcpy(X.view().row(i), X.view().row(i % 3), sizeof(float) * size_t(d));
    for (int64_t i = 0; i < Q.size(); ++i) Q.data()[i] = normal(gen);
    std::memcpy(Q.view().row(0), X.view().row(0), sizeof(float) * size_t(d));
    const simkit::mpi::RowSlice s = simkit::mpi::row_slice(n, ranks, rank);
    const simkit::MatrixView<const float> slice(X.data() + s.first * d, s.rows, d);
    for (const simkit::Metric metric : {simkit::Metric::l2, simkit::Metric::sqeuclidean, simkit::Metric::l1,
                                        simkit::Metric::dot, simkit::Metric::cosine, simkit::Metric::pearson})
      for (const int64_t k : {int64_t{1}, std::min<int64_t>(n, 4), n}) {
        simkit::Context ctx;
        ctx.device = simkit::Device::cpu;
        const simkit::KnnResult got = simkit::mpi::knn(ctx, MPI_COMM_WORLD, Q.view(), slice, s.first, k, metric);
        if (rank != 0) continue;
        const simkit::KnnResult want = simkit::knn(ctx, Q.view(), X.view(), k, metric);
        if (std::memcmp(got.ids.data(), want.ids.data(), sizeof(int64_t) * size_t(m * k)) != 0 ||
            std::memcmp(got.values.data(), want.values.data(), sizeof(float) * size_t(m * k)) != 0) {
          std::printf("FAIL: n = %lld, k = %lld, %s: differs from one process\n", (long long)n, (long long)k,
                      simkit::to_string(metric));
          ++failures;
        }
      }
  }
  // Every rank claims row 0: refused everywhere with the same error.
  {
    simkit::Matrix<float> X(2, d, 1.0f), Q(1, d, 0.0f);
    try {
      simkit::mpi::knn(simkit::Context{}, MPI_COMM_WORLD, Q.view(), X.view(), 0, 1, simkit::Metric::l2);
      if (ranks > 1) {
        std::printf("FAIL: rank %d: overlapping slices were accepted\n", rank);
        ++failures;
      }
    } catch (const simkit::Error& e) {
      if (std::string(e.what()).find("contiguous") == std::string::npos) {
        std::printf("FAIL: rank %d: unexpected error: %s\n", rank, e.what());
        ++failures;
      }
    }
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("mpi_knn_ranks: %d ranks, %d failures\n", ranks, total);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
