// The CPU Improved Fast Gauss Transform with a plan from plan_ifgt (core/ifgt_plan.cpp):
//
//   1. every source is assigned to its nearest planned centre c_k (ties: the lower k), which
//      gives each cluster its exact radius rx_k, and finalize_ifgt settles p and the bound;
//   2. per cluster, the coefficients over multi-indices |alpha| < p (ifgt_monomials.hpp)
//        C_alpha^k = 2^|alpha| / alpha! sum_{i in k} q_i exp(-|a_i|^2) a_i^alpha,  a_i = (x_i - c_k) / h;
//   3. per target, over the clusters with |y - c_k| <= r + rx_k only,
//        G(y) = sum_k exp(-|b|^2) sum_alpha C_alpha^k b^alpha,  b = (y - c_k) / h.
// The error bound this meets is derived in core/ifgt_bound.hpp.
//
// Everything is float64. Coefficients are accumulated per task (a run of at most kChunk
// sources of one cluster, so one huge cluster still spreads over all threads), and the task
// partials are added per cluster in task order, so results do not depend on the thread count.

#include <simkit/error.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "core/ifgt_bound.hpp"
#include "core/ifgt_cluster.hpp"
#include "core/ifgt_plan.hpp"
#include "core/parallel.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/gauss/ifgt_monomials.hpp"

namespace simkit::detail::cpu {

namespace {

constexpr int64_t kChunk = 2048;      // sources per coefficient task
constexpr int64_t kTargetTile = 256;  // targets per evaluation task

struct Span {
  int32_t cluster;
  int64_t begin, end;  // into the cluster-sorted source order
};

/// Nearest centre of every source (ties: the lower index) and its squared distance.
void assign(const Context& ctx, const std::vector<double>& x, int64_t n, int64_t d, const std::vector<double>& centre,
            int64_t K, std::vector<int32_t>& label, std::vector<double>& dist2) {
  label.resize(static_cast<size_t>(n));
  dist2.resize(static_cast<size_t>(n));
  constexpr int64_t kRun = 4096;
  run_tasks(
      ctx, cpu_threads(ctx), (n + kRun - 1) / kRun,
      [&](int64_t t, int) {
        for (int64_t i = t * kRun; i < std::min(n, (t + 1) * kRun); ++i) {
          const double* xi = x.data() + i * d;
          double best = std::numeric_limits<double>::infinity();
          int32_t who = 0;
          for (int64_t c = 0; c < K; ++c) {
            const double* cc = centre.data() + c * d;
            double s = 0;
            for (int64_t e = 0; e < d; ++e) {
              const double u = xi[e] - cc[e];
              s += u * u;
            }
            if (s < best) {
              best = s;
              who = static_cast<int32_t>(c);
            }
          }
          label[static_cast<size_t>(i)] = who;
          dist2[static_cast<size_t>(i)] = best;
        }
      },
      0.0, 0.1);
}

}  // namespace

IfgtFinal CpuBackend::gauss_ifgt(const Context& ctx, const GaussArgs& a, const IfgtChoice& choice) const {
  const MatrixView<const float> X = a.X, Y = a.Y;
  const double* q = a.q;
  const double h = a.h;
  double* out = a.out.data;
  const int64_t n = X.rows, m = Y.rows, d = X.cols;
  const int64_t K = choice.clusters;
  const double inv_h = 1.0 / h;
  const int threads = cpu_threads(ctx);
  IfgtFinal fin;

  translate_bad_alloc("IFGT", [&] {
    const std::vector<double> x = widen_rows(X);
    const std::vector<double>& centre = choice.centres;
    std::vector<int32_t> label;
    std::vector<double> dist2;
    assign(ctx, x, n, d, centre, K, label, dist2);

    // Sources sorted by cluster (counting sort, stable), and each cluster's radius.
    std::vector<int64_t> first(static_cast<size_t>(K + 1), 0);
    std::vector<double> radius(static_cast<size_t>(K), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const auto c = static_cast<size_t>(label[static_cast<size_t>(i)]);
      ++first[c + 1];
      radius[c] = std::max(radius[c], dist2[static_cast<size_t>(i)]);
    }
    for (int64_t c = 0; c < K; ++c) {
      first[static_cast<size_t>(c + 1)] += first[static_cast<size_t>(c)];
      radius[static_cast<size_t>(c)] = std::sqrt(radius[static_cast<size_t>(c)]);
    }
    fin = finalize_ifgt(choice, radius, d, h);
    const int p = fin.order;
    const int64_t P = monomial_count(d, p);
    std::vector<int64_t> order(static_cast<size_t>(n));
    {
      std::vector<int64_t> fill(first.begin(), first.end() - 1);
      for (int64_t i = 0; i < n; ++i)
        order[static_cast<size_t>(fill[static_cast<size_t>(label[static_cast<size_t>(i)])]++)] = i;
    }

    // Coefficients: one task per run of <= kChunk sources of one cluster.
    std::vector<Span> spans;
    for (int64_t c = 0; c < K; ++c)
      for (int64_t b = first[static_cast<size_t>(c)]; b < first[static_cast<size_t>(c + 1)]; b += kChunk)
        spans.push_back({static_cast<int32_t>(c), b, std::min(b + kChunk, first[static_cast<size_t>(c + 1)])});
    const auto tasks = static_cast<int64_t>(spans.size());
    std::vector<double> partial(static_cast<size_t>(tasks * P), 0.0);
    run_tasks(
        ctx, threads, tasks,
        [&](int64_t t, int) {
          // kLanes sources at a time (graded_monomials_lanes); a short last group is padded with
          // zero weights, which add exact zeros.
          std::vector<double> mono(static_cast<size_t>(P * kLanes)), acc(static_cast<size_t>(P * kLanes), 0.0);
          std::vector<double> a(static_cast<size_t>(d * kLanes)), w(kLanes);
          std::vector<int64_t> head(static_cast<size_t>(d));
          const Span& s = spans[static_cast<size_t>(t)];
          const double* c = centre.data() + s.cluster * d;
          for (int64_t o0 = s.begin; o0 < s.end; o0 += kLanes) {
            for (int64_t l = 0; l < kLanes; ++l) {
              const int64_t o = o0 + l;
              if (o >= s.end) {
                for (int64_t e = 0; e < d; ++e) a[static_cast<size_t>(e * kLanes + l)] = 0.0;
                w[static_cast<size_t>(l)] = 0.0;
                continue;
              }
              const int64_t i = order[static_cast<size_t>(o)];
              const double* xi = x.data() + i * d;
              double a2 = 0;
              for (int64_t e = 0; e < d; ++e) {
                const double ae = (xi[e] - c[e]) * inv_h;
                a[static_cast<size_t>(e * kLanes + l)] = ae;
                a2 += ae * ae;
              }
              w[static_cast<size_t>(l)] = q[i] * std::exp(-a2);
            }
            graded_monomials_lanes(a.data(), d, p, head.data(), mono.data());
            for (int64_t j = 0; j < P; ++j) {
              double* dst = acc.data() + j * kLanes;
              const double* src = mono.data() + j * kLanes;
#pragma omp simd
              for (int64_t l = 0; l < kLanes; ++l) dst[l] += w[static_cast<size_t>(l)] * src[l];
            }
          }
          double* part = partial.data() + t * P;
          for (int64_t j = 0; j < P; ++j) {
            double sum = 0;
            for (int64_t l = 0; l < kLanes; ++l) sum += acc[static_cast<size_t>(j * kLanes + l)];
            part[j] = sum;
          }
        },
        0.1, 0.3);
    const std::vector<double> factor = taylor_factors(d, p, P);
    std::vector<double> coeff(static_cast<size_t>(K * P), 0.0);
    for (int64_t t = 0; t < tasks; ++t) {
      double* dst = coeff.data() + spans[static_cast<size_t>(t)].cluster * P;
      const double* src = partial.data() + t * P;
      for (int64_t j = 0; j < P; ++j) dst[j] += src[j];
    }
    for (int64_t c = 0; c < K; ++c)
      for (int64_t j = 0; j < P; ++j) coeff[static_cast<size_t>(c * P + j)] *= factor[static_cast<size_t>(j)];
    std::vector<double>().swap(partial);

    // Evaluation: each target sums the expansions of the clusters within its cut-off.
    std::vector<double> reach2(static_cast<size_t>(K));
    for (int64_t c = 0; c < K; ++c)
      reach2[static_cast<size_t>(c)] = fin.reach[static_cast<size_t>(c)] * fin.reach[static_cast<size_t>(c)];
    const int64_t tiles = (m + kTargetTile - 1) / kTargetTile;
    run_tasks(
        ctx, threads, tiles,
        [&](int64_t tile, int) {
          // Cluster by cluster over the tile: the targets within the cluster's reach are gathered,
          // then expanded kLanes at a time. Each target still adds its clusters' contributions in
          // cluster order, so the grouping does not change its rounding.
          const int64_t j0 = tile * kTargetTile, tn = std::min(m, j0 + kTargetTile) - j0;
          std::vector<double> y(static_cast<size_t>(tn * d)), g(static_cast<size_t>(tn), 0.0),
              t2(static_cast<size_t>(tn));
          std::vector<int64_t> near(static_cast<size_t>(tn)), head(static_cast<size_t>(d));
          std::vector<double> mono(static_cast<size_t>(P * kLanes)), b(static_cast<size_t>(d * kLanes)), sum(kLanes);
          for (int64_t j = 0; j < tn; ++j)
            for (int64_t e = 0; e < d; ++e) y[static_cast<size_t>(j * d + e)] = Y(j0 + j, e);
          for (int64_t c = 0; c < K; ++c) {
            const double* cc = centre.data() + c * d;
            int64_t count = 0;
            for (int64_t j = 0; j < tn; ++j) {
              double s2 = 0;
              for (int64_t e = 0; e < d; ++e) {
                const double t = y[static_cast<size_t>(j * d + e)] - cc[e];
                s2 += t * t;
              }
              t2[static_cast<size_t>(j)] = s2;
              if (s2 <= reach2[static_cast<size_t>(c)]) near[static_cast<size_t>(count++)] = j;
            }
            const double* C = coeff.data() + c * P;
            for (int64_t k0 = 0; k0 < count; k0 += kLanes) {
              const int64_t lanes = std::min(kLanes, count - k0);
              for (int64_t l = 0; l < kLanes; ++l) {
                const int64_t j = near[static_cast<size_t>(k0 + std::min(l, lanes - 1))];  // pad with a real target
                for (int64_t e = 0; e < d; ++e)
                  b[static_cast<size_t>(e * kLanes + l)] = (y[static_cast<size_t>(j * d + e)] - cc[e]) * inv_h;
              }
              monomial_dot_lanes(b.data(), d, p, head.data(), C, mono.data(), sum.data());
              for (int64_t l = 0; l < lanes; ++l) {
                const int64_t j = near[static_cast<size_t>(k0 + l)];
                g[static_cast<size_t>(j)] +=
                    sum[static_cast<size_t>(l)] * std::exp(-t2[static_cast<size_t>(j)] * inv_h * inv_h);
              }
            }
          }
          for (int64_t j = 0; j < tn; ++j) out[j0 + j] = g[static_cast<size_t>(j)];
        },
        0.3, 1.0);
  });
  return fin;
}

}  // namespace simkit::detail::cpu
