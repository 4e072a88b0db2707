#include "loadgen_plot.hpp"

#include <string>

#include "cli_support.hpp"
#include "embedded_python.hpp"
#include "loadgen_plot_script.hpp"

namespace simkit::cli::loadgen {

void plot_latency(const std::string& csv, const std::string& image, double warmup_s, const std::string& title) {
  run_python_script(
      plot_latency_py,
      {"--out", image, "--warmup", std::to_string(warmup_s), "--title", title, "latencies of the 200 responses=" + csv},
      "--plot: drawing " + quoted_path(image));
}

}  // namespace simkit::cli::loadgen
