// Uses the installed library through <simkit/simkit.hpp> only: a k-NN and a pairwise call whose
// answers are worked out by hand, and the error contract. Exit status 0 only when all agree.
#include <cstdio>
#include <simkit/simkit.hpp>

namespace {
int failures = 0;
void expect(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  }
}
}  // namespace

int main() {
  // Base points on a line at x = 0, 1, 3, 7 (y = 0); queries at x = 2.9 and x = 0.4.
  const float base[] = {0, 0, 1, 0, 3, 0, 7, 0};
  const float queries[] = {2.9f, 0, 0.4f, 0};
  const simkit::MatrixView<const float> X(base, 4, 2), Q(queries, 2, 2);
  simkit::Context ctx;
  ctx.device = simkit::Device::cpu;

  const simkit::KnnResult r = simkit::knn(ctx, Q, X, 2, simkit::Metric::sqeuclidean);
  expect(r.ids(0, 0) == 2 && r.ids(0, 1) == 1, "nearest to 2.9 are 3 then 1");
  expect(r.ids(1, 0) == 0 && r.ids(1, 1) == 1, "nearest to 0.4 are 0 then 1");
  expect(r.values(1, 0) > 0.159f && r.values(1, 0) < 0.161f, "0.4^2 = 0.16");

  const simkit::Matrix<float> S = simkit::pairwise(ctx, Q, X, simkit::Metric::dot);
  expect(S.rows() == 2 && S.cols() == 4, "pairwise is 2 x 4");
  expect(S(0, 3) > 20.29f && S(0, 3) < 20.31f, "2.9 * 7 = 20.3");

  bool threw = false;
  try {
    simkit::knn(ctx, Q, X, 0, simkit::Metric::l2);
  } catch (const simkit::Error& e) {
    threw = e.code() == simkit::ErrorCode::invalid_argument;
  }
  expect(threw, "k = 0 throws Error(invalid_argument)");

  std::printf("%s", simkit::build_info().c_str());
  std::printf(failures == 0 ? "consumer: ok\n" : "consumer: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
