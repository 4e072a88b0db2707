#pragma once
// What the `simkit` subcommands share: the --device/--threads options and the Context they make,
// the progress bar, reading inputs and checking output paths up front, writing several outputs
// all-or-nothing, and the one-line descriptions printed to stderr.

#include <chrono>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <simkit/context.hpp>
#include <simkit/error.hpp>
#include <simkit/matrix.hpp>

namespace simkit::cli {

// `simkit demo` (demo.cpp); registered by main.cpp next to the commands of commands.hpp.
void add_demo_command(CLI::App& app);

/// The exit status for an error: 2 for bad input (invalid argument, i/o), 1 for the rest.
int exit_status(ErrorCode code) noexcept;

// ------------------------------------------------------------------ device and threads

struct RunOptions {
  std::string device = "auto";
  int threads = 0;
};

/// Adds --device and --threads. The device name is checked by simkit::parse_device when the
/// command runs, so a bad one gets the library's message and exit status 2.
void add_run_options(CLI::App* sub, RunOptions& options);

/// A Context for the options, with `progress` (may be empty) as its progress callback.
Context make_context(const RunOptions& options, std::function<void(double)> progress = {});

/// "cpu, 16 threads" or "gpu 0, NVIDIA H100 80GB HBM3"; resolves `auto` (which may print the
/// library's one-line notice when a CUDA build finds no GPU).
std::string describe_device(Context& ctx);

// ------------------------------------------------------------------ progress

/// A one-line bar on stderr, drawn only when stderr is a terminal so that logs and pipes stay
/// clean. Safe to call from any thread; redraws at most ten times a second.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  bool enabled() const noexcept { return enabled_; }
  void update(double fraction);
  /// As update(fraction), with `note` after the percentage (k-means: iteration and inertia);
  /// a new note is drawn at once.
  void update(double fraction, const std::string& note);
  /// Erases the bar (also done by the destructor).
  void finish();
  /// update() as a Context::progress callback; empty when the bar is disabled.
  std::function<void(double)> callback();

 private:
  std::string label_;
  bool enabled_ = false;
  bool drawn_ = false;
  int last_percent_ = -1;
  std::string note_;
  std::chrono::steady_clock::time_point last_draw_{};
  std::mutex mutex_;
};

// ------------------------------------------------------------------ inputs and outputs

/// read_matrix(path) with the option's name in any error, refusing a set with no rows or columns.
Matrix<float> read_points(const std::string& path, std::string_view option);
/// Exits 2 ("dimension mismatch: --queries 'q.npy' has d = 3, --base 'x.npy' has d = 8") when
/// the two sets read from those options have different dimensions.
void check_same_dimension(const Matrix<float>& a, std::string_view a_option, const std::string& a_path,
                          const Matrix<float>& b, std::string_view b_option, const std::string& b_path);

/// ".npy", ".fvecs", ... in lower case; empty when the name has no extension.
std::string extension_of(const std::string& path);

/// Refuses, before any work is done, an output path whose extension is not in `allowed` (any
/// extension when `allowed` is empty)
/// (Error invalid_argument) or whose directory does not exist or is a directory itself (Error io).
void check_output_path(const std::string& path, std::string_view option,
                       std::initializer_list<std::string_view> allowed);

/// Refuses two options naming the same output file.
void check_distinct_outputs(const std::vector<std::pair<std::string_view, std::string>>& outputs);

/// Writes several output files so that either all of them appear or none does: each is first
/// written (atomically, by simkit's writers) to a hidden staging file beside its target with
/// the same extension, and only when every one is complete are they renamed into place.
/// Staged files not committed are removed by the destructor.
class OutputSet {
 public:
  OutputSet() = default;
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  /// The staging path to write `final_path`'s content to.
  std::string stage(const std::string& final_path);
  /// Renames every staged file over its target; throws Error(io) if a rename fails.
  void commit();

 private:
  std::vector<std::pair<std::string, std::string>> staged_;  // (staging, final)
};

/// The outputs of the clustering commands (kmeans, kcenter): k rows, float32 (.npy or .fvecs)
/// under `rows_option`, and, when `labels` is set, one label per point (.npy int64 or .ivecs).
struct ClusterOutputs {
  std::string_view rows_option;
  std::string rows, labels;
  /// Refuses bad paths before any work is done (check_output_path, check_distinct_outputs).
  void check() const;
  /// Writes both, or neither (OutputSet).
  void write(MatrixView<const float> rows_data, MatrixView<const int64_t> labels_data) const;
};

// ------------------------------------------------------------------ reporting

double seconds_since(std::chrono::steady_clock::time_point t0);
/// "412 us", "3.21 ms", "1.85 s".
std::string format_duration(double seconds);
/// "372.5 GiB".
std::string format_gib(double bytes);
/// "1,000,000".
std::string with_commas(int64_t v);

/// A path in a message: simkit::quoted() (simkit/error.hpp) with room for a deep directory, so the file
/// name at its end survives in every ordinary path while a hostile one stays one escaped line.
inline std::string quoted_path(std::string_view path) { return simkit::quoted(path, 256); }

/// Bad input named in `msg`: Error(invalid_argument), which main() turns into exit status 2.
[[noreturn]] inline void bad(const std::string& msg) { throw Error(ErrorCode::invalid_argument, msg); }

/// A value in a message: 6 significant digits.
std::string number(double v);

}  // namespace simkit::cli
