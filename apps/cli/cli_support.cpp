#include "cli_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <simkit/io.hpp>

namespace simkit::cli {

namespace fs = std::filesystem;

int exit_status(ErrorCode code) noexcept {
  return code == ErrorCode::invalid_argument || code == ErrorCode::io ? 2 : 1;
}

// ------------------------------------------------------------------ device and threads

void add_run_options(CLI::App* sub, RunOptions& o) {
  sub->add_option("--device", o.device,
                  "cpu, gpu or auto (the GPU when this build has CUDA and one is visible); gpu:N for GPU N; "
                  "gpu:0,1 or gpu:all to split knn and index searches over several GPUs")
      ->capture_default_str();
  sub->add_option("--threads", o.threads, "CPU threads for the CPU backend (0: all hardware threads)")
      ->check(CLI::Range(0, 1 << 16))
      ->capture_default_str();
}

Context make_context(const RunOptions& o, std::function<void(double)> progress) {
  Context ctx;
  set_device(ctx, o.device);
  ctx.threads = o.threads;
  ctx.progress = std::move(progress);
  return ctx;
}

std::string describe_device(Context& ctx) {
  ctx.device = resolve_device(ctx);
  if (ctx.device == Device::gpu && ctx.gpu_ids.size() > 1) {
    std::string ids;
    for (int id : ctx.gpu_ids) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    const std::vector<GpuInfo> all = gpus();
    return "gpus " + ids + " (" + std::to_string(ctx.gpu_ids.size()) + " x " + (all.empty() ? "?" : all[0].name) + ")";
  }
  if (ctx.device == Device::gpu) {
    for (const GpuInfo& g : gpus())
      if (g.id == ctx.gpu_id) return "gpu " + std::to_string(g.id) + ", " + g.name;
    return "gpu " + std::to_string(ctx.gpu_id);
  }
  int threads = ctx.threads;
  if (threads <= 0) {
    const long hw = sysconf(_SC_NPROCESSORS_ONLN);
    threads = hw > 0 ? static_cast<int>(hw) : 1;
  }
  return "cpu, " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

// ------------------------------------------------------------------ progress

ProgressBar::ProgressBar(std::string label) : label_(std::move(label)), enabled_(isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(double fraction, const std::string& note) {
  if (!enabled_) return;
  {
    std::lock_guard lock(mutex_);
    if (note == note_) return;
    note_ = note;
    last_percent_ = -1;  // draw now
    last_draw_ = {};
  }
  update(fraction);
}

void ProgressBar::update(double fraction) {
  if (!enabled_) return;
  // A worker that finds another one drawing skips its update rather than waiting.
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int percent = static_cast<int>(fraction * 100.0);
  const auto now = std::chrono::steady_clock::now();
  if (percent == last_percent_ || (drawn_ && percent < 100 && now - last_draw_ < std::chrono::milliseconds(100)))
    return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kWidth] = '\0';
  std::fprintf(stderr, "\r%s [%s] %3d%%%s%s\033[K", label_.c_str(), bar, percent, note_.empty() ? "" : "  ",
               note_.c_str());
  std::fflush(stderr);
  drawn_ = true;
  last_percent_ = percent;
  last_draw_ = now;
}

void ProgressBar::finish() {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  if (drawn_) {
    std::fputs("\r\033[K", stderr);  // back to column 0 and erase the line
    std::fflush(stderr);
  }
  drawn_ = false;
  last_percent_ = -1;
}

std::function<void(double)> ProgressBar::callback() {
  if (!enabled_) return {};
  return [this](double f) { update(f); };
}

// ------------------------------------------------------------------ inputs and outputs

Matrix<float> read_points(const std::string& path, std::string_view option) {
  Matrix<float> m;
  try {
    m = read_matrix(path);
  } catch (const Error& e) {
    throw Error(e.code(), std::string(option) + ": " + e.what());
  }
  if (m.rows() == 0 || m.cols() == 0)
    throw Error(ErrorCode::invalid_argument, std::string(option) + ": " + quoted_path(path) + " holds no vectors (" +
                                                 std::to_string(m.rows()) + " x " + std::to_string(m.cols()) + ")");
  return m;
}

void check_same_dimension(const Matrix<float>& a, std::string_view a_option, const std::string& a_path,
                          const Matrix<float>& b, std::string_view b_option, const std::string& b_path) {
  if (a.cols() != b.cols())
    bad("dimension mismatch: " + std::string(a_option) + " " + quoted_path(a_path) +
        " has d = " + std::to_string(a.cols()) + ", " + std::string(b_option) + " " + quoted_path(b_path) +
        " has d = " + std::to_string(b.cols()));
}

std::string extension_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

void check_output_path(const std::string& path, std::string_view option,
                       std::initializer_list<std::string_view> allowed) {
  const std::string ext = extension_of(path);
  if (allowed.size() > 0 && std::find(allowed.begin(), allowed.end(), ext) == allowed.end()) {
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    throw Error(ErrorCode::invalid_argument,
                std::string(option) + ": cannot write " + quoted_path(path) + ": the extension must be one of " + list);
  }
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec))
    throw Error(ErrorCode::io, std::string(option) + ": " + quoted_path(path) + " is a directory");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorCode::io, std::string(option) + ": cannot write " + quoted_path(path) + ": directory " +
                                   quoted_path(dir.string()) + " does not exist");
  if (access(dir.c_str(), W_OK) != 0)
    throw Error(ErrorCode::io, std::string(option) + ": cannot write " + quoted_path(path) + ": directory " +
                                   quoted_path(dir.string()) + " is not writable");
}

void check_distinct_outputs(const std::vector<std::pair<std::string_view, std::string>>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j) {
      if (outputs[i].second.empty() || outputs[j].second.empty()) continue;
      std::error_code ec;
      const bool same = outputs[i].second == outputs[j].second ||
                        (fs::exists(outputs[i].second, ec) && fs::equivalent(outputs[i].second, outputs[j].second, ec));
      if (same)
        throw Error(ErrorCode::invalid_argument, std::string(outputs[i].first) + " and " +
                                                     std::string(outputs[j].first) + " name the same file " +
                                                     quoted_path(outputs[i].second));
    }
}

OutputSet::~OutputSet() {
  for (const auto& [staging, target] : staged_) {
    std::error_code ec;
    fs::remove(staging, ec);  // best effort: we may be unwinding from the error that matters
  }
}

std::string OutputSet::stage(const std::string& final_path) {
  static std::atomic<int> counter{0};
  const fs::path p(final_path);
  const std::string name = "." + p.filename().string() + ".part-" + std::to_string(getpid()) + "-" +
                           std::to_string(counter++) + p.extension().string();
  const std::string staging = (p.has_parent_path() ? p.parent_path() / name : fs::path(name)).string();
  staged_.emplace_back(staging, final_path);
  return staging;
}

void OutputSet::commit() {
  for (size_t i = 0; i < staged_.size(); ++i) {
    const auto& [staging, target] = staged_[i];
    if (std::rename(staging.c_str(), target.c_str()) != 0) {
      const int err = errno;
      // What was renamed stays; the rest is removed by the destructor.
      staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(i));
      throw Error(ErrorCode::io,
                  "cannot rename " + quoted_path(staging) + " to " + quoted_path(target) + ": " + std::strerror(err));
    }
  }
  staged_.clear();
}

void ClusterOutputs::check() const {
  check_output_path(rows, rows_option, {".npy", ".fvecs"});
  if (!labels.empty()) check_output_path(labels, "--labels", {".npy", ".ivecs"});
  check_distinct_outputs({{rows_option, rows}, {"--labels", labels}});
}

void ClusterOutputs::write(MatrixView<const float> rows_data, MatrixView<const int64_t> labels_data) const {
  OutputSet outputs;
  write_matrix(outputs.stage(rows), rows_data);
  if (!labels.empty()) write_ids(outputs.stage(labels), labels_data);
  outputs.commit();
}

// ------------------------------------------------------------------ reporting

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string format_duration(double s) {
  char buf[32];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  else if (s < 1.0)
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::string format_gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / double(1ull << 30));
  return buf;
}

std::string with_commas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace simkit::cli
