#pragma once
// Product quantization, the code book of the coming ivf_pq index (issue 17).
//
// A d-dimensional vector is cut into m sub-vectors of dsub = d / m coordinates; each is stored
// as the index (one byte) of its nearest of ksub <= 256 centroids, trained per sub-space with
// simkit's k-means, so a vector costs m bytes instead of 4 d. A query is never quantized:
// distance_table() gives, per sub-space, its distance to each centroid (m x ksub floats), and a
// coded vector's distance is the sum of m table entries (asymmetric distance computation), the
// distance to its reconstruction decode().
//
// Host only; the GPU scan reads the same code books and tables.

#include <cstdint>

#include <simkit/context.hpp>
#include <simkit/matrix.hpp>

namespace simkit::detail {

class ProductQuantizer {
 public:
  /// Error(invalid_argument) unless m >= 1 and m divides dim.
  ProductQuantizer(int64_t dim, int64_t m);

  int64_t dim() const noexcept { return dim_; }
  int64_t m() const noexcept { return m_; }
  int64_t dsub() const noexcept { return dim_ / m_; }
  /// Centroids per sub-space: min(256, training rows); 0 until trained.
  int64_t ksub() const noexcept { return ksub_; }
  bool trained() const noexcept { return ksub_ > 0; }

  /// k-means (squared Euclidean, `iterations` Lloyd updates, seeded) in every sub-space of the
  /// n x dim host matrix X. Error(invalid_argument) for a wrong width, no rows or NaN / Inf.
  void train(const Context& ctx, MatrixView<const float> X, uint64_t seed, int iterations = 25);
  /// Takes code books trained before (a loaded index): (m * ksub) x dsub values, 1 <= ksub <= 256.
  void assign(const float* codebooks, int64_t ksub);

  /// The n x m codes of X (row-major, one byte per sub-space): each sub-vector's nearest
  /// centroid, ties to the lower index.
  void encode(MatrixView<const float> X, uint8_t* codes) const;
  /// n x dim reconstructions of n codes.
  void decode(const uint8_t* codes, int64_t n, float* out) const;

  /// m x ksub table for the query q (dim floats): squared distances from each sub-vector of q
  /// to each centroid, or (inner_product) their dot products.
  void distance_table(const float* q, bool inner_product, float* table) const;
  /// m x ksub table of l1 distances from each sub-vector of q to each centroid (ivf_pq's l1).
  void l1_table(const float* q, float* table) const;
  /// The sum of one code's m table entries: the squared distance (or dot product) between the
  /// query of `table` and the code's reconstruction.
  float adc(const float* table, const uint8_t* code) const noexcept {
    float s = 0;
    for (int64_t j = 0; j < m_; ++j) s += table[j * ksub_ + code[j]];
    return s;
  }

  /// (m * ksub) x dsub: sub-space j's centroids are rows j * ksub ... j * ksub + ksub - 1.
  const Matrix<float>& codebooks() const noexcept { return codebooks_; }

 private:
  void require_trained(const char* what) const;

  int64_t dim_, m_;
  int64_t ksub_ = 0;
  Matrix<float> codebooks_;
};

}  // namespace simkit::detail
