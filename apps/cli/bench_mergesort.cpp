// `simkit bench mergesort`: the merge sort study of the MergePath seed (bench/mergesort/), with
// its three sweeps on each device asked for, beside the production sorts:
//
//   size_i  n = 2^--sweep-n, block --block: time against the insertion run length size_i, per
//           input (sorted, reversed, random) -- the seed's first table for each version
//   block   the same n at each version's best size_i: time against threads per block (GPU and
//           OpenCL versions)
//   n       each n of --sizes at the best size_i and block: kernel time, time with the copies,
//           GB/s (keys read and written by the insertion pass and every merge level, over kernel
//           time) and its share of the measured copy bandwidth, speed-up over the sequential
//           version on this machine's CPU (kernel-only and with copies); beside them simkit::sort
//           (both GPU routes: CUB's radix sort and simkit's own merge path) and std::sort,
//           std::sort(std::execution::par) on the CPU
//
// Devices: cpu (the sequential hybrid sort), gpu (the naive tree merge and Merge Path in CUDA),
// opencl (Merge Path in OpenCL C on the first OpenCL GPU, else the first device). Every output is
// checked: sorted, and the same multiset as the input (equal to std::sort's output).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <simkit/primitives.hpp>

#include "bench_harness.hpp"
#include "embedded_python.hpp"
#include "mergesort_plot_script.hpp"
#include "mergesort_study.hpp"
#include "mergesort_timing.hpp"
#if SIMKIT_CLI_OPENCL
#include "opencl_sort.hpp"
#endif

namespace simkit::cli::bench {

namespace {

using mergesort::StudyTiming;

/// One timed sort of `data` (in place): its kernel and total milliseconds.
using SortFn = std::function<StudyTiming(std::vector<int32_t>& data, int64_t size_i, int block)>;

struct Version {
  std::string device, name;
  SortFn sort;
  bool has_block = true;  // threads per block matter (the GPU versions)
};

std::vector<int32_t> make_input(const std::string& kind, int64_t n, uint64_t seed) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  if (kind == "sorted") {
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = int32_t(i);
  } else if (kind == "reversed") {
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = int32_t(n - 1 - i);
  } else if (kind == "random") {
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> u(INT32_MIN, INT32_MAX);
    for (int32_t& x : v) x = u(rng);
  } else {
    throw Error(ErrorCode::invalid_argument, "--inputs: sorted, reversed or random, got '" + kind + "'");
  }
  return v;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    if (comma > at) out.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

struct Result {
  std::string sweep, device, version, input;
  int64_t n = 0, size_i = 0;
  int block = 0;
  double kernel_ms = 0, total_ms = 0, gbps = 0, pct_copy = 0, speedup_kernel = 0, speedup_total = 0;
  bool ok = true;
};

constexpr double kLongRunMs = 2000;

/// Median over `repeat` runs (after `warmup` untimed ones; one run when it takes over 2 s) of `version` on a fresh copy
/// of `input` each time; the output of the last run checked against `want` (std::sort's).
Result time_version(const Version& v, const std::vector<int32_t>& input, const std::vector<int32_t>& want,
                    int64_t size_i, int block, int repeat, int warmup) {
  std::vector<double> kernel, total;
  std::vector<int32_t> data;
  for (int r = 0; r < warmup + std::max(repeat, 1); ++r) {
    data = input;
    const StudyTiming t = v.sort(data, size_i, block);
    // A run of seconds (the naive merge at large n: a single thread merges the last level) is
    // timed once and is its own warm-up: its fixed costs are noise next to it, and ten of them
    // would take minutes a point.
    if (r >= warmup || t.total_ms > kLongRunMs) kernel.push_back(t.kernel_ms), total.push_back(t.total_ms);
    if (t.total_ms > kLongRunMs) break;
  }
  Result out;
  out.device = v.device, out.version = v.name, out.n = int64_t(input.size()), out.size_i = size_i, out.block = block;
  out.kernel_ms = summarize(kernel).median_ms, out.total_ms = summarize(total).median_ms;
  out.ok = data == want;
  return out;
}

/// Keys read and written by the insertion pass and every merge level.
double bytes_moved(int64_t n, int64_t size_i) {
  int64_t levels = 0;
  for (int64_t runs = (n + size_i - 1) / size_i; runs > 1; runs = (runs + 1) / 2) ++levels;
  return 2.0 * 4.0 * double(n) * double(1 + levels);
}

StudyTiming host_timed(const std::function<void()>& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return {ms, ms, 0, 0};
}

std::vector<Version> study_versions(const std::string& device, const std::string& study) {
  std::vector<Version> v;
  if (device == "cpu") {
    v.push_back({"cpu", "sequential",
                 [](std::vector<int32_t>& d, int64_t size_i, int) {
                   return host_timed([&] { mergesort::hybrid_sort_sequential(d.data(), int64_t(d.size()), size_i); });
                 },
                 false});
  } else if (device == "gpu") {
    for (const std::string& name : split_list(study)) {
      if (name == "naive") {
        v.push_back({"gpu", "naive (CUDA)", [](std::vector<int32_t>& d, int64_t size_i, int block) {
                       return mergesort::naive_merge_sort_cuda(d.data(), int64_t(d.size()), size_i, block);
                     }});
      } else if (name == "merge-path") {
        v.push_back({"gpu", "merge path (CUDA)", [](std::vector<int32_t>& d, int64_t size_i, int block) {
                       return mergesort::merge_path_sort_cuda(d.data(), int64_t(d.size()), size_i, block);
                     }});
      }
    }
  } else if (device == "opencl") {
#if SIMKIT_CLI_OPENCL
    v.push_back({"opencl", "merge path (OpenCL)", [](std::vector<int32_t>& d, int64_t size_i, int block) {
                   return mergesort::merge_path_sort_opencl(d.data(), int64_t(d.size()), size_i, block);
                 }});
#else
    throw Error(ErrorCode::unsupported, "--device opencl: this simkit was built without OpenCL (scripts/setup.sh)");
#endif
  } else {
    throw Error(ErrorCode::invalid_argument, "--device: cpu, gpu or opencl (comma-separated), got '" + device + "'");
  }
  return v;
}

/// The production sorts at one n, timed beside the study's versions (the n sweep).
std::vector<Version> production_versions(const std::string& device, const Setup& s) {
  std::vector<Version> v;
  if (device == "cpu") {
    v.push_back(
        {"cpu", "std::sort",
         [](std::vector<int32_t>& d, int64_t, int) { return host_timed([&] { std::sort(d.begin(), d.end()); }); },
         false});
    v.push_back({"cpu", mergesort::parallel_std_sort_name(),
                 [](std::vector<int32_t>& d, int64_t, int) {
                   return host_timed([&] { mergesort::parallel_std_sort(d.data(), int64_t(d.size())); });
                 },
                 false});
    Context cpu = s.ctx;
    cpu.device = Device::cpu;
    v.push_back(
        {"cpu", "simkit::sort",
         [cpu](std::vector<int32_t>& d, int64_t, int) { return host_timed([&] { sort(cpu, ArrayView<int32_t>(d)); }); },
         false});
  } else if (device == "gpu") {
    for (const bool own : {false, true})
      v.push_back({"gpu", own ? "simkit::sort (own merge path)" : "simkit::sort (CUB radix)",
                   [ctx = s.ctx, own](std::vector<int32_t>& d, int64_t, int) {
                     return mergesort::simkit_sort_gpu(ctx, d.data(), int64_t(d.size()), own);
                   },
                   false});
  }
  return v;
}

/// The OpenCL device the OpenCL version runs on, or Error(unsupported) with one line.
std::string opencl_target() {
#if SIMKIT_CLI_OPENCL
  if (mergesort::opencl_devices().empty())
    throw Error(
        ErrorCode::unsupported,
        "--device opencl: no OpenCL platform is installed (Debian: pocl-opencl-icd for the CPU, or a GPU driver's)");
  const mergesort::OpenClDevice d = mergesort::opencl_device();
  return d.platform + " / " + d.name + " (" + d.version + ", " + std::to_string(d.compute_units) + " compute units)";
#else
  throw Error(ErrorCode::unsupported, "--device opencl: this simkit was built without OpenCL (scripts/setup.sh)");
#endif
}

void print_result(const Result& r) {
  std::printf("  %-6s %-7s %-30s %-8s %11lld %6lld %5d %11.3f %11.3f %8.1f %6.1f %7.2f %7.2f  %s\n", r.sweep.c_str(),
              r.device.c_str(), r.version.c_str(), r.input.c_str(), (long long)r.n, (long long)r.size_i, r.block,
              r.kernel_ms, r.total_ms, r.gbps, r.pct_copy, r.speedup_kernel, r.speedup_total, r.ok ? "PASS" : "FAIL");
  std::fflush(stdout);
}

void write_csv_rows(const std::string& path, const std::vector<Result>& rows) {
  if (path.empty()) return;
  std::string text =
      "sweep,device,version,input,n,size_i,block,kernel_ms,total_ms,gbps,pct_copy_bandwidth,speedup_kernel,"
      "speedup_total,check\n";
  char line[512];
  for (const Result& r : rows) {
    std::snprintf(line, sizeof line, "%s,%s,%s,%s,%lld,%lld,%d,%.4f,%.4f,%.2f,%.2f,%.3f,%.3f,%s\n", r.sweep.c_str(),
                  r.device.c_str(), r.version.c_str(), r.input.c_str(), (long long)r.n, (long long)r.size_i, r.block,
                  r.kernel_ms, r.total_ms, r.gbps, r.pct_copy, r.speedup_kernel, r.speedup_total,
                  r.ok ? "PASS" : "FAIL");
    text += line;
  }
  std::FILE* f = std::fopen(path.c_str(), "w");
  const bool written = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f) std::fclose(f);
  if (!written) throw Error(ErrorCode::io, "bench mergesort: could not write " + path);
}

/// `block`, or the widest power of two below it that the version's device takes: NVIDIA's
/// OpenCL driver allows these kernels 256 work-items a group where CUDA takes 1,024 (the
/// OpenCL version refuses a larger one rather than run something else under its label).
int widest_block(const Version& v, const std::vector<int32_t>& input, int block) {
  if (!v.has_block) return block;
  const std::vector<int32_t> small(input.begin(), input.begin() + std::min<size_t>(input.size(), 4096));
  for (int b = block; b >= 1; b /= 2) {
    try {
      std::vector<int32_t> data = small;
      v.sort(data, 8, b);
      return b;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::invalid_argument || std::string(e.what()).find("work-group") == std::string::npos)
        throw;
    }
  }
  throw Error(ErrorCode::unsupported, v.name + ": no work-group size the device takes");
}

/// Best (size_i, block) per version and input, by kernel time.
using Best = std::map<std::pair<std::string, std::string>, std::pair<int64_t, int>>;

/// The seed's first sweep (size_i), then its second (block) at each version's best size_i.
Best sweep_size_i_and_block(const Options& o, const Setup& s, const std::vector<Version>& versions,
                            const std::vector<std::string>& inputs, std::vector<Result>& rows) {
  const int64_t n = int64_t(1) << o.sweep_log_n;
  const std::vector<int64_t> size_is = parse_int_list(o.size_i, "--size-i", "2,4,8");
  const std::vector<int64_t> blocks = parse_int_list(o.blocks, "--blocks", "32,256");
  Best best;
  for (const std::string& input : inputs) {
    const std::vector<int32_t> in = make_input(input, n, o.seed);
    std::vector<int32_t> want = in;
    std::sort(want.begin(), want.end());
    for (const Version& v : versions) {
      Result top, fastest;
      const int block = widest_block(v, in, o.block);
      for (int64_t size_i : size_is) {
        Result r = time_version(v, in, want, size_i, block, s.repeat, s.warmup);
        r.sweep = "size_i", r.input = input;
        print_result(r);
        if (top.kernel_ms == 0 || r.kernel_ms < top.kernel_ms) top = r;
        rows.push_back(r);
      }
      fastest = top;
      for (int64_t b : v.has_block ? blocks : std::vector<int64_t>{}) {
        if (b > block) {  // beyond what the device takes for these kernels (widest_block)
          std::printf("  block  %-7s %-30s %-8s: block %lld skipped, the device's limit is %d\n", v.device.c_str(),
                      v.name.c_str(), input.c_str(), (long long)b, block);
          continue;
        }
        Result r = time_version(v, in, want, top.size_i, int(b), s.repeat, s.warmup);
        r.sweep = "block", r.input = input;
        print_result(r);
        if (r.kernel_ms < fastest.kernel_ms) fastest = r;
        rows.push_back(r);
      }
      best[{v.name, input}] = {top.size_i, v.has_block ? fastest.block : 0};
    }
  }
  return best;
}

/// The seed's third sweep: each n at the best parameters, with bandwidth and speed-ups over the
/// sequential version (timed here at its own best size_i), and the production sorts beside.
void sweep_n(const Options& o, const Setup& s, const std::vector<Version>& versions,
             const std::vector<Version>& production, const std::vector<std::string>& inputs, const Best& best,
             double copy_gbps, std::vector<Result>& rows) {
  const Version sequential = study_versions("cpu", o.study).front();
  for (int64_t log_n : parse_int_list(o.sizes.empty() ? "20,25,27" : o.sizes, "--sizes", "20,25")) {
    if (log_n < 0 || log_n > 30) throw Error(ErrorCode::invalid_argument, "--sizes: log2 n in 0 .. 30");
    const int64_t n = int64_t(1) << log_n;
    for (const std::string& input : inputs) {
      const std::vector<int32_t> in = make_input(input, n, o.seed + uint64_t(log_n));
      std::vector<int32_t> want = in;
      std::sort(want.begin(), want.end());
      const auto seq_param = best.count({sequential.name, input}) ? best.at({sequential.name, input})
                                                                  : std::pair<int64_t, int>{o.seq_size_i, 0};
      // The sequential baseline takes seconds at the largest n: fewer runs there.
      const Result seq =
          time_version(sequential, in, want, seq_param.first, 0, log_n >= 26 ? 1 : std::min(s.repeat, 3), 0);
      auto finish = [&](Result r) {
        r.sweep = "n", r.input = input;
        r.gbps = r.size_i > 0 ? bytes_moved(n, r.size_i) / (r.kernel_ms * 1e6) : 8.0 * double(n) / (r.kernel_ms * 1e6);
        r.pct_copy = copy_gbps > 0 ? 100.0 * r.gbps / copy_gbps : 0;
        r.speedup_kernel = seq.kernel_ms / r.kernel_ms, r.speedup_total = seq.total_ms / r.total_ms;
        print_result(r);
        rows.push_back(r);
      };
      for (const Version& v : versions) {
        const auto [size_i, block] = best.at({v.name, input});
        finish(time_version(v, in, want, size_i, block, s.repeat, s.warmup));
      }
      for (const Version& v : production) finish(time_version(v, in, want, 0, 0, s.repeat, s.warmup));
    }
  }
}

}  // namespace

void run_mergesort_suite(const Options& o) {
  if (!o.plot.empty()) check_plotting();
  const std::vector<std::string> devices = split_list(o.device == "auto" ? "cpu,gpu" : o.device);
  const std::vector<std::string> inputs = split_list(o.inputs);
  for (const std::string& name : split_list(o.study))
    if (name != "naive" && name != "merge-path")
      throw Error(ErrorCode::invalid_argument, "--study: naive or merge-path (comma-separated), got '" + name + "'");
  const bool any_gpu = std::find(devices.begin(), devices.end(), "gpu") != devices.end();
  Options setup_options = o;
  setup_options.device = any_gpu ? "gpu" : "cpu";
  const Setup s = prepare(setup_options, "mergesort", /*gpu_repeat=*/10, /*cpu_repeat=*/3, /*gpu_warmup=*/1,
                          /*cpu_warmup=*/0);
  std::printf("  study:     the MergePath seed's hybrid merge sort of int32 keys; sweeps at n = 2^%lld, block %d\n",
              (long long)o.sweep_log_n, o.block);
  std::printf("  %-6s %-7s %-30s %-8s %11s %6s %5s %11s %11s %8s %6s %7s %7s\n", "sweep", "device", "version", "input",
              "n", "size_i", "block", "kernel ms", "total ms", "GB/s", "%copy", "x seq", "x seq+c");
  std::vector<Result> rows;
  // The sequential version's own sweep runs with --device cpu; elsewhere it is only the n sweep's
  // baseline, at --seq-size-i (its sweep takes seconds a point at the GPU's sizes).
  const std::vector<Version> seq = study_versions("cpu", o.study);
  const bool cpu_run = std::find(devices.begin(), devices.end(), "cpu") != devices.end();
  const Best seq_best = cpu_run ? sweep_size_i_and_block(o, s, seq, inputs, rows) : Best{};
  for (const std::string& device : devices) {
    const std::vector<Version> versions = device == "cpu" ? std::vector<Version>{} : study_versions(device, o.study);
    if (device == "opencl") std::printf("  opencl:    %s\n", opencl_target().c_str());
    Best best = seq_best;
    for (const auto& [key, value] : sweep_size_i_and_block(o, s, versions, inputs, rows)) best[key] = value;
    const double copy_gbps = device == "cpu" ? mergesort::host_copy_gbps() : mergesort::device_copy_gbps(device);
    std::printf("  copy bandwidth (%s, measured): %.1f GB/s\n", device.c_str(), copy_gbps);
    sweep_n(o, s, device == "cpu" ? seq : versions, production_versions(device, s), inputs, best, copy_gbps, rows);
  }
  const bool all_ok = std::all_of(rows.begin(), rows.end(), [](const Result& r) { return r.ok; });
  std::string csv = o.csv;
  if (csv.empty() && !o.plot.empty()) csv = o.plot + ".csv";
  write_csv_rows(csv, rows);
  if (!o.plot.empty()) {
    run_python_script(plot_mergesort_py, {csv, "--out", o.plot}, "--plot: drawing " + o.plot);
  }
  if (!all_ok) throw Error(ErrorCode::invalid_argument, "bench mergesort: an output was not sorted (see FAIL above)");
}

}  // namespace simkit::cli::bench
