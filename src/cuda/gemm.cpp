#include "cuda/gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <simkit/error.hpp>

#include "cuda/check.hpp"

namespace simkit::detail::cuda {

namespace {

enum class Precision { fp32, fp16 };

// Largest power of two (up to 16) dividing a pointer: what the heuristic may assume.
uint32_t alignment_of(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 16;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

struct Key {
  int device;
  int64_t M, N, K, lda, ldb, ldc;
  uint32_t align_a, align_b, align_c;
  size_t workspace;
  Precision precision;
  bool operator<(const Key& o) const {
    return std::tie(device, M, N, K, lda, ldb, ldc, align_a, align_b, align_c, workspace, precision) <
           std::tie(o.device, o.M, o.N, o.K, o.lda, o.ldb, o.ldc, o.align_a, o.align_b, o.align_c, o.workspace,
                    o.precision);
  }
};

bool autotune_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SIMKIT_GEMM_AUTOTUNE");
    return v != nullptr && std::strcmp(v, "0") != 0;
  }();
  return on;
}

// Descriptors of one product shape. Built once per cached shape and then only read, which
// cublasLtMatmul allows from several threads at once.
struct Descriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  explicit Descriptors(const Key& k) {
    try {
      // fp16: half operands and result, float accumulation and alpha (CUBLAS_COMPUTE_32F).
      const cudaDataType_t type = k.precision == Precision::fp16 ? CUDA_R_16F : CUDA_R_32F;
      check_cublas(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
      const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
      check_cublas(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
                   "cublasLtMatmulDescSetAttribute");
      check_cublas(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
                   "cublasLtMatmulDescSetAttribute");
      // A = X stored column-major K x M (X's rows are its columns), used transposed.
      check_cublas(cublasLtMatrixLayoutCreate(&a, type, uint64_t(k.K), uint64_t(k.M), k.lda),
                   "cublasLtMatrixLayoutCreate");
      check_cublas(cublasLtMatrixLayoutCreate(&b, type, uint64_t(k.K), uint64_t(k.N), k.ldb),
                   "cublasLtMatrixLayoutCreate");
      check_cublas(cublasLtMatrixLayoutCreate(&c, type, uint64_t(k.M), uint64_t(k.N), k.ldc),
                   "cublasLtMatrixLayoutCreate");
    } catch (...) {
      destroy();  // a constructor that throws gets no destructor call
      throw;
    }
  }
  ~Descriptors() { destroy(); }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

 private:
  void destroy() noexcept {
    if (c) (void)cublasLtMatrixLayoutDestroy(c);
    if (b) (void)cublasLtMatrixLayoutDestroy(b);
    if (a) (void)cublasLtMatrixLayoutDestroy(a);
    if (op) (void)cublasLtMatmulDescDestroy(op);
    a = b = c = nullptr;
    op = nullptr;
  }
};

struct Choice {
  cublasLtMatmulAlgo_t algo;
  std::shared_ptr<const Descriptors> desc;
};

struct Cache {
  std::mutex mutex;
  std::map<Key, Choice> chosen;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: see resources.hpp
  return *c;
}

// Times each candidate twice after a warm-up run, on the caller's buffers (the output is
// overwritten by the real product right after). Returns the index of the fastest.
int fastest(Resources& r, cudaStream_t s, const Descriptors& desc, const cublasLtMatmulHeuristicResult_t* cand,
            int count, const void* A, const void* B, void* C, void* ws, size_t ws_bytes) {
  struct TimingEvent {
    cudaEvent_t e = nullptr;
    TimingEvent() { check_cuda(cudaEventCreate(&e), "cudaEventCreate"); }
    ~TimingEvent() { (void)cudaEventDestroy(e); }
    TimingEvent(const TimingEvent&) = delete;
    TimingEvent& operator=(const TimingEvent&) = delete;
  };
  const TimingEvent start_event, stop_event;
  cudaEvent_t start = start_event.e, stop = stop_event.e;
  const float alpha = 1.f, beta = 0.f;
  int best = 0;
  float best_ms = 1e30f;
  for (int i = 0; i < count; ++i) {
    if (cand[i].workspaceSize > ws_bytes) continue;
    bool ok = true;
    float total = 0.f;
    for (int rep = 0; rep < 3 && ok; ++rep) {
      if (rep > 0) check_cuda(cudaEventRecord(start, s), "cudaEventRecord");
      ok = cublasLtMatmul(r.lt, desc.op, &alpha, A, desc.a, B, desc.b, &beta, C, desc.c, C, desc.c, &cand[i].algo, ws,
                          ws_bytes, s) == CUBLAS_STATUS_SUCCESS;
      if (ok && rep > 0) {
        check_cuda(cudaEventRecord(stop, s), "cudaEventRecord");
        check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0.f;
        check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        total += ms;
      }
    }
    if (ok && total < best_ms) best_ms = total, best = i;
  }
  (void)cudaGetLastError();
  return best;
}

}  // namespace

size_t gemm_workspace_bytes(size_t budget) {
  // cuBLAS recommends 32 MiB on Hopper; small budgets get a share that leaves room for tiles.
  const size_t want = size_t(32) << 20;
  return std::min(want, budget / 16) / 256 * 256;
}

namespace {

void product(Resources& r, cudaStream_t stream, int64_t m, int64_t n, int64_t d, float alpha, const void* Q,
             int64_t ldq, const void* X, int64_t ldx, void* out, int64_t ldo, void* workspace, size_t workspace_bytes,
             Precision precision) {
  if (workspace == nullptr) workspace_bytes = 0;
  const Key key{r.device,        n,        m, d, ldx, ldq, ldo, alignment_of(X), alignment_of(Q), alignment_of(out),
                workspace_bytes, precision};
  Choice choice{};
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(cache().mutex);
    auto it = cache().chosen.find(key);
    if (it != cache().chosen.end()) choice = it->second, found = true;
  }
  if (!found) {
    auto desc = std::make_shared<const Descriptors>(key);
    cublasLtMatmulPreference_t pref = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    constexpr int max_candidates = 8;
    cublasLtMatmulHeuristicResult_t cand[max_candidates] = {};
    int count = 0;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    const uint64_t ws = workspace_bytes;
    auto set = [&](cublasLtMatmulPreferenceAttributes_t attr, const void* v, size_t bytes) {
      if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceSetAttribute(pref, attr, v, bytes);
    };
    set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &key.align_a, sizeof key.align_a);
    set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &key.align_b, sizeof key.align_b);
    set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &key.align_c, sizeof key.align_c);
    set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &key.align_c, sizeof key.align_c);
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulAlgoGetHeuristic(r.lt, desc->op, desc->a, desc->b, desc->c, desc->c, pref,
                                          autotune_enabled() ? max_candidates : 1, cand, &count);
    (void)cublasLtMatmulPreferenceDestroy(pref);
    check_cublas(st, "cublasLtMatmulAlgoGetHeuristic");
    if (count == 0) throw Error(ErrorCode::device, "cublasLtMatmulAlgoGetHeuristic: no algorithm for this shape");
    const int pick = count > 1 ? fastest(r, stream, *desc, cand, count, X, Q, out, workspace, workspace_bytes) : 0;
    choice = Choice{cand[pick].algo, std::move(desc)};
    std::lock_guard<std::mutex> lock(cache().mutex);
    cache().chosen.emplace(key, choice);
  }
  const Descriptors& desc = *choice.desc;
  const float beta = 0.f;
  check_cublas(cublasLtMatmul(r.lt, desc.op, &alpha, X, desc.a, Q, desc.b, &beta, out, desc.c, out, desc.c,
                              &choice.algo, workspace, workspace_bytes, stream),
               "cublasLtMatmul");
}

}  // namespace

void dot_tile(Resources& r, cudaStream_t stream, int64_t m, int64_t n, int64_t d, float alpha, const float* Q,
              int64_t ldq, const float* X, int64_t ldx, float* out, int64_t ldo, void* workspace,
              size_t workspace_bytes) {
  product(r, stream, m, n, d, alpha, Q, ldq, X, ldx, out, ldo, workspace, workspace_bytes, Precision::fp32);
}

void dot_tile(Resources& r, cudaStream_t stream, int64_t m, int64_t n, int64_t d, float alpha, const __half* Q,
              int64_t ldq, const __half* X, int64_t ldx, __half* out, int64_t ldo, void* workspace,
              size_t workspace_bytes) {
  product(r, stream, m, n, d, alpha, Q, ldq, X, ldx, out, ldo, workspace, workspace_bytes, Precision::fp16);
}

}  // namespace simkit::detail::cuda
