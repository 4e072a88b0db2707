#include "index/product_quantizer.hpp"

#include <algorithm>
#include <cmath>
#include <string>

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

void ProductQuantizer::encode(MatrixView<const float> X, uint8_t* codes) const {
  require_trained("encode");
  if (X.cols != dim_)
    throw Error(ErrorCode::invalid_argument, "product quantizer: rows to encode have " + std::to_string(X.cols) +
                                                 " columns, the quantizer " + std::to_string(dim_));
  const int64_t ds = dsub();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < X.rows; ++i) {
    const float* x = X.row(i);
    for (int64_t j = 0; j < m_; ++j) {
      const float* xs = x + j * ds;
      const float* c = codebooks_.data() + j * ksub_ * ds;
      int64_t best = 0;
      double best_d = INFINITY;
      for (int64_t c_i = 0; c_i < ksub_; ++c_i) {
        double d = 0;  // float64: a tie in float32 sums must not depend on the order of terms
        for (int64_t t = 0; t < ds; ++t) {
          const double e = double(xs[t]) - double(c[c_i * ds + t]);
          d += e * e;
        }
        if (d < best_d) best_d = d, best = c_i;
      }
      codes[i * m_ + j] = static_cast<uint8_t>(best);
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
