#pragma once
// `simkit loadgen --plot`: the latency histogram of a run, drawn by python3 + matplotlib running
// bench/server/plot_latency.py (compiled into the binary) on the run's per-request CSV. The
// interpreter is $SIMKIT_PYTHON when set (a virtualenv's), else python3 from PATH
// (embedded_python.hpp; check_plotting() before the run).

#include <string>

namespace simkit::cli::loadgen {

/// Draws the run in `csv` (loadgen's per-request CSV) into `image`, skipping `warmup_s`;
/// Error(io) with the script's exit status when it fails.
void plot_latency(const std::string& csv, const std::string& image, double warmup_s, const std::string& title);

}  // namespace simkit::cli::loadgen
