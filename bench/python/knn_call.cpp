// knn_call: the time of one simkit::knn call made from C++, the baseline that
// call_overhead.py measures the Python binding against (same shapes, same device, same
// residency: host arrays on the CPU, device arrays on the GPU).
//
//   knn_call ROWS DIM QUERIES K REPEATS cpu|gpu [THREADS]    prints: median_us=... min_us=...
//
// call_overhead.py starts it with the OPENBLAS_CORETYPE its own process got, so that both sides
// run the same BLAS kernels.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <simkit/simkit.hpp>

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    std::fprintf(stderr, "usage: knn_call ROWS DIM QUERIES K REPEATS cpu|gpu [THREADS]\n");
    return 2;
  }
  const int64_t n = std::atoll(argv[1]), d = std::atoll(argv[2]), m = std::atoll(argv[3]), k = std::atoll(argv[4]);
  const int repeats = std::atoi(argv[5]);
  simkit::Context ctx;
  ctx.device = simkit::parse_device(argv[6]);
  ctx.threads = argc == 8 ? std::atoi(argv[7]) : 0;
  std::mt19937 gen(1);
  std::normal_distribution<float> normal;
  simkit::Matrix<float> X(n, d), Q(m, d);
  for (int64_t i = 0; i < X.size(); ++i) X.data()[i] = normal(gen);
  for (int64_t i = 0; i < Q.size(); ++i) Q.data()[i] = normal(gen);
  simkit::Matrix<float> D(m, k);
  simkit::Matrix<int64_t> I(m, k);

  auto time_calls = [&](auto Qv, auto Xv, auto Dv, auto Iv) {
    std::vector<double> us;
    for (int r = 0; r < repeats + 3; ++r) {  // 3 warm-up calls
      const auto t0 = std::chrono::steady_clock::now();
      simkit::knn(ctx, Qv, Xv, k, simkit::Metric::sqeuclidean, Dv, Iv);
      const auto t1 = std::chrono::steady_clock::now();
      if (r >= 3) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(us.begin(), us.end());
    std::printf("median_us=%.2f min_us=%.2f blas=%s\n", us[us.size() / 2], us.front(), simkit::blas_kernels().c_str());
  };
  if (ctx.device == simkit::Device::gpu) {
    simkit::DeviceMatrix<float> Xd(ctx, X.view()), Qd(ctx, Q.view()), Dd(ctx, m, k);
    simkit::DeviceMatrix<int64_t> Id(ctx, m, k);
    time_calls(simkit::MatrixView<const float>(Qd.view()), simkit::MatrixView<const float>(Xd.view()), Dd.view(),
               Id.view());
  } else {
    time_calls(simkit::MatrixView<const float>(Q.view()), simkit::MatrixView<const float>(X.view()), D.view(),
               I.view());
  }
  return 0;
}
