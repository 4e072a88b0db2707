#pragma once
// Where and how simkit runs: device choice, CPU threads, GPU memory budget, progress.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace simkit {

enum class Device {
  cpu,
  gpu,
  /// The GPU when this build has CUDA and a device is visible; otherwise the CPU, after a
  /// one-line notice on stderr if the build has CUDA but no device answers.
  automatic,
};

/// "cpu" | "gpu" | "auto"; throws Error(invalid_argument) otherwise.
Device parse_device(const std::string& name);

struct Context;
/// Sets ctx.device, ctx.gpu_id and ctx.gpu_ids from a device name: "cpu", "gpu", "auto" (as
/// parse_device); "gpu:N", one GPU; "gpu:0,1,3", several; "gpu:all", every visible GPU. Throws
/// Error(invalid_argument) for a malformed name or a repeated id, Error(device) for "gpu:all"
/// when no GPU is visible (a missing id is reported when a call resolves the device).
void set_device(Context& ctx, const std::string& name);
const char* to_string(Device d) noexcept;

struct Context {
  Device device = Device::automatic;
  /// CPU threads for OpenMP and BLAS; 0 means all hardware threads.
  int threads = 0;
  /// CUDA device ordinal.
  int gpu_id = 0;
  /// Several CUDA devices (two or more ordinals; set_device("gpu:0,1") or "gpu:all"): knn and
  /// the flat, ivf_flat and ivf_pq searches split their base rows into one contiguous shard per GPU,
  /// search the shards concurrently (a host thread per GPU; an index keeps each shard resident
  /// on its GPU), and merge the per-shard top-k by knn's rule (float64 key, then the lower id)
  /// with merge path: the same ids and values, bit for bit, as one GPU (for pearson, whose
  /// candidates are not certified, wherever one GPU's answer is the exact one; see
  /// docs/ARCHITECTURE.md, "MPI ranks"). kmeans splits its points likewise and adds the shards'
  /// float64 cluster sums in GPU order: reproducible for a given list, equal to one GPU up to
  /// float64 rounding of those sums. They need host arrays; the stream is not used then.
  /// Every other call, and these with device arrays, run on gpu_id alone (set_device sets it to
  /// the first of the list). Empty or one ordinal: gpu_id alone.
  std::vector<int> gpu_ids;
  /// Bytes of GPU memory simkit may allocate for working buffers (inputs that already live on
  /// the device are not counted). 0 means 80% of the memory free when the call starts.
  size_t gpu_memory_budget = 0;
  /// Called now and then during long work with the fraction done in [0, 1]; may be empty.
  std::function<void(double)> progress;
  /// A CUDA stream (a cudaStream_t, passed as an opaque pointer so that this header needs no
  /// CUDA types); null: simkit's own streams, and every call returns with its work done.
  ///
  /// With a stream, a GPU call's work is ordered on it: after what the caller queued there
  /// before, before what it queues next (a torch or CuPy stream, a server's per-batch stream).
  /// The call returns as soon as its work is queued when every array it touches is on the
  /// device and it has no device-side check to report: knn (its inputs' NaN/Inf scan, made
  /// first, waits for the stream), select_k, sort, merge, scans without segment offsets.
  /// Synchronise the stream (or simkit::synchronize(ctx)) before reading such results on the
  /// host. Calls that touch host memory or must report a device-side check (pairwise's NaN/Inf
  /// flags, spmv_csr's structure, segment offsets, the Gauss transform) wait for the stream
  /// before they return, as without one. The CPU backend ignores the stream.
  void* stream = nullptr;
};

struct GpuInfo {
  int id = 0;
  std::string name;
  int sm_major = 0, sm_minor = 0;
  int multiprocessors = 0;
  size_t total_memory = 0, free_memory = 0;
  double fp32_tflops = 0;           // peak FMA rate: SMs x FP32 lanes x 2 x boost clock
  double memory_bandwidth_gbs = 0;  // from the memory clock and bus width
};

/// True when this build was compiled with the CUDA backend.
bool built_with_cuda() noexcept;
/// The CUDA devices this process can use (empty in a CPU-only build or without a GPU).
std::vector<GpuInfo> gpus();
/// Resolves Device::automatic to cpu or gpu; throws Error(device) when gpu was asked for
/// explicitly and none is usable, Error(unsupported) in a CPU-only build.
Device resolve_device(const Context& ctx);
/// Compiler, CUDA architectures, BLAS vendor, OpenMP threads: what `simkit info` prints.
std::string build_info();

/// The kernels OpenBLAS chose for this CPU when it loaded ("SkylakeX", "Haswell", ...).
/// "Prescott" is its generic SSE3 fallback for a CPU model it does not know (Debian 12's
/// OpenBLAS 0.3.21 on some current Xeons under virtualisation): sgemm then runs ~2.5x slower.
/// OPENBLAS_CORETYPE=SkylakeX (or Haswell) in the environment before the process starts
/// fixes it; the simkit command does this by itself (apps/cli/main.cpp).
std::string blas_kernels();

}  // namespace simkit
