#include "index/ivf/product_quantizer.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <simkit/error.hpp>
#include <simkit/kmeans.hpp>

namespace simkit::detail {

ProductQuantizer::ProductQuantizer(int64_t dim, int64_t m) : dim_(dim), m_(m) {
  if (dim < 1 || m < 1 || dim % m != 0)
    throw Error(ErrorCode::invalid_argument, "product quantizer: m = " + std::to_string(m) +
                                                 " must be >= 1 and divide the dimension " + std::to_string(dim));
}

void ProductQuantizer::require_trained(const char* what) const {
  if (!trained())
    throw Error(ErrorCode::invalid_argument, std::string("product quantizer: ") + what + " before train()");
}

void ProductQuantizer::train(const Context& ctx, MatrixView<const float> X, uint64_t seed, int iterations) {
  if (X.cols != dim_)
    throw Error(ErrorCode::invalid_argument, "product quantizer: training rows have " + std::to_string(X.cols) +
                                                 " columns, the quantizer " + std::to_string(dim_));
  if (X.rows < 1) throw Error(ErrorCode::invalid_argument, "product quantizer: no training rows");
  const int64_t n = X.rows, ds = dsub(), k = std::min<int64_t>(256, n);
  Matrix<float> codebooks(m_ * k, ds);
  Matrix<float> sub(n, ds);
  for (int64_t j = 0; j < m_; ++j) {
    for (int64_t i = 0; i < n; ++i) std::copy_n(X.row(i) + j * ds, ds, sub.data() + i * ds);
    KmeansParams p;
    p.k = k;
    p.max_iterations = iterations;
    p.seed = seed + uint64_t(j);                        // each sub-space its own draw
    const KmeansResult r = kmeans(ctx, sub.view(), p);  // refuses NaN / Inf with its reason
    std::copy_n(r.centroids.data(), k * ds, codebooks.data() + j * k * ds);
  }
  codebooks_ = std::move(codebooks);
  ksub_ = k;
}

void ProductQuantizer::assign(const float* codebooks, int64_t ksub) {
  if (ksub < 1 || ksub > 256)
    throw Error(ErrorCode::invalid_argument,
                "product quantizer: ksub = " + std::to_string(ksub) + " is not in [1, 256]");
  Matrix<float> books(m_ * ksub, dsub());
  std::copy_n(codebooks, books.size(), books.data());
  codebooks_ = std::move(books);
  ksub_ = ksub;
}

// Encoding compares every sub-vector with every code book entry. The float64 difference form
// below is the reference (its rounding does not depend on the order of terms in any way that
// matters for a tie); it is also scalar and slow (n m ksub dsub of it). So each entry is first
// scored in float32 as |x|^2 + |e|^2 - 2 x.e, vectorised over the entries, and only the entries
// within that form's error bound of the float32 minimum are re-scored by the reference. The
// chosen code is then the reference's: nearest, ties to the lower index.
namespace {

/// float64 reference: sum over t of (x_t - e_t)^2, in order.
double reference_distance(const float* x, const float* e, int64_t ds) {
  double d = 0;
  for (int64_t t = 0; t < ds; ++t) {
    const double a = double(x[t]) - double(e[t]);
    d += a * a;
  }
  return d;
}

}  // namespace

void ProductQuantizer::encode(MatrixView<const float> X, uint8_t* codes) const {
  require_trained("encode");
  if (X.cols != dim_)
    throw Error(ErrorCode::invalid_argument, "product quantizer: rows to encode have " + std::to_string(X.cols) +
                                                 " columns, the quantizer " + std::to_string(dim_));
  const int64_t ds = dsub(), ks = ksub_, m = m_;
  // Per sub-space: the entries transposed (dsub rows of ksub), their squared norms, the largest.
  std::vector<float> books(static_cast<size_t>(m * ds * ks)), norms(static_cast<size_t>(m * ks));
  std::vector<float> max_norm(static_cast<size_t>(m), 0.0f);
  for (int64_t j = 0; j < m; ++j)
    for (int64_t s = 0; s < ks; ++s) {
      const float* e = codebooks_.data() + (j * ks + s) * ds;
      double n = 0;
      for (int64_t t = 0; t < ds; ++t) n += double(e[t]) * e[t];
      for (int64_t t = 0; t < ds; ++t) books[size_t((j * ds + t) * ks + s)] = e[t];
      norms[size_t(j * ks + s)] = float(n);
      max_norm[size_t(j)] = std::max(max_norm[size_t(j)], float(n));
    }
  // |float32 score - exact| <= (dsub + 4) u (|x|^2 + |e|^2 + 2 |x||e|) <= 2 (dsub + 4) u (|x|^2 +
  // |e|^2) with u = 2^-24; two scores within twice that of each other may be in either order.
  // A factor 4 over that leaves room for the rounding of the bound itself.
  const double slack = 16.0 * double(ds + 4) * std::ldexp(1.0, -24);
#pragma omp parallel
  {
    std::vector<float> score(static_cast<size_t>(ks));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < X.rows; ++i) {
      const float* x = X.row(i);
      for (int64_t j = 0; j < m; ++j) {
        const float* xs = x + j * ds;
        const float* E = books.data() + j * ds * ks;
        float xn = 0;
        for (int64_t t = 0; t < ds; ++t) xn += xs[t] * xs[t];
        const float* en = norms.data() + j * ks;
        for (int64_t s = 0; s < ks; ++s) score[size_t(s)] = xn + en[s];
        for (int64_t t = 0; t < ds; ++t) {
          const float a = -2.0f * xs[t];
          const float* e = E + t * ks;
          for (int64_t s = 0; s < ks; ++s) score[size_t(s)] += a * e[s];
        }
        float low = score[0];
        for (int64_t s = 1; s < ks; ++s) low = std::min(low, score[size_t(s)]);
        const double within = double(low) + slack * (double(xn) + double(max_norm[size_t(j)]));
        int64_t best = 0;
        double best_d = INFINITY;
        const float* c = codebooks_.data() + j * ks * ds;
        for (int64_t s = 0; s < ks; ++s) {
          if (double(score[size_t(s)]) > within) continue;
          const double d = reference_distance(xs, c + s * ds, ds);
          if (d < best_d) best_d = d, best = s;
        }
        codes[i * m + j] = static_cast<uint8_t>(best);
      }
    }
  }
}

void ProductQuantizer::decode(const uint8_t* codes, int64_t n, float* out) const {
  require_trained("decode");
  const int64_t ds = dsub();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m_; ++j) {
      const uint8_t c = codes[i * m_ + j];
      if (c >= ksub_)
        throw Error(ErrorCode::invalid_argument, "product quantizer: code " + std::to_string(c) + " of row " +
                                                     std::to_string(i) + " exceeds the " + std::to_string(ksub_) +
                                                     " centroids");
      std::copy_n(codebooks_.data() + (j * ksub_ + c) * ds, ds, out + i * dim_ + j * ds);
    }
}

void ProductQuantizer::distance_table(const float* q, bool inner_product, float* table) const {
  require_trained("distance_table");
  const int64_t ds = dsub();
  for (int64_t j = 0; j < m_; ++j)
    for (int64_t c_i = 0; c_i < ksub_; ++c_i) {
      const float* c = codebooks_.data() + (j * ksub_ + c_i) * ds;
      double s = 0;
      for (int64_t t = 0; t < ds; ++t) {
        const double a = q[j * ds + t], b = c[t];
        s += inner_product ? a * b : (a - b) * (a - b);
      }
      table[j * ksub_ + c_i] = float(s);
    }
}

void ProductQuantizer::l1_table(const float* q, float* table) const {
  require_trained("l1_table");
  const int64_t ds = dsub();
  for (int64_t j = 0; j < m_; ++j)
    for (int64_t c_i = 0; c_i < ksub_; ++c_i) {
      const float* c = codebooks_.data() + (j * ksub_ + c_i) * ds;
      double s = 0;
      for (int64_t t = 0; t < ds; ++t) s += std::abs(double(q[j * ds + t]) - double(c[t]));
      table[j * ksub_ + c_i] = float(s);
    }
}

}  // namespace simkit::detail
