#pragma once
// The CUDA backend: cuBLASLt products, CUB where it measured faster, simkit's own kernels.
// Arrays may be host or device, each independently (cuda/staging.hpp moves what is on the
// host). Each operation is defined in the file of its capability (knn.cpp, pairwise.cpp, ...).

#include "core/backend.hpp"

namespace simkit::detail::cuda {

class CudaBackend final : public Backend {
 public:
  Device device() const noexcept override { return Device::gpu; }
  void pairwise(const Context& ctx, const PairwiseArgs& a) const override;
  void knn(const Context& ctx, const KnnArgs& a) const override;
  void gauss_direct(const Context& ctx, const GaussArgs& a) const override;
  /// d <= kIfgtMaxGpuDims.
  IfgtFinal gauss_ifgt(const Context& ctx, const GaussArgs& a, const IfgtChoice& choice) const override;
  IfgtSample ifgt_sample(const Context& ctx, MatrixView<const float> X, MatrixView<const float> Y) const override;
  void scan(const Context& ctx, const ScanArgs& a) const override;
  void spmv(const Context& ctx, const SpmvArgs& a) const override;
  void merge(const Context& ctx, const MergeArgs& a) const override;
  void sort(const Context& ctx, const SortArgs& a) const override;
  void select_k(const Context& ctx, const SelectKArgs& a) const override;
  std::unique_ptr<KmeansEngine> kmeans_engine(const Context& ctx, MatrixView<const float> X,
                                              bool spherical) const override;
  void copy_to_device(const Context& ctx, void* dst, const void* src, size_t bytes) const override;
  void copy_to_host(const Context& ctx, void* dst, const void* src, size_t bytes) const override;
  bool all_finite(const Context& ctx, MatrixView<const float> m) const override;
  std::vector<GpuInfo> gpus() const override;
  int device_count() const override;
  const char* architectures() const noexcept override;
};

}  // namespace simkit::detail::cuda
