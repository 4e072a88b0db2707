#pragma once
// Scripts compiled into the binary (plots drawn with matplotlib) run under $SIMKIT_PYTHON, else
// python3 from PATH: `simkit loadgen --plot`, `simkit bench strategies --plot`.

#include <string>
#include <vector>

namespace simkit::cli {

/// Error(invalid_argument) saying how to get matplotlib when the interpreter cannot import it:
/// called before a long run whose plot would otherwise fail at the end.
void check_plotting();

/// Writes `script` to a temporary file, runs it with `args` and removes it; Error(io) naming
/// `what` when the script fails.
void run_python_script(const char* script, const std::vector<std::string>& args, const std::string& what);

}  // namespace simkit::cli
