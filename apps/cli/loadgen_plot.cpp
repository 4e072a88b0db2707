#include "loadgen_plot.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <simkit/error.hpp>

#include "cli_support.hpp"
#include "loadgen_plot_script.hpp"

extern char** environ;

namespace simkit::cli::loadgen {

namespace {

// Runs argv (argv[0] looked up in PATH) and returns its exit status; -1 when it cannot start.
// With `quiet`, its output goes to /dev/null.
int run_process(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// $SIMKIT_PYTHON, else python3 from PATH.
std::string python() {
  const char* p = std::getenv("SIMKIT_PYTHON");
  return p && *p ? p : "python3";
}

}  // namespace

void check_plotting() {
  if (run_process({python(), "-c", "import matplotlib"}, true) != 0)
    throw Error(ErrorCode::invalid_argument, "--plot needs " + python() +
                                                 " with matplotlib: pip install matplotlib (or apt install "
                                                 "python3-matplotlib; SIMKIT_PYTHON names another interpreter)");
}

void plot_latency(const std::string& csv, const std::string& image, double warmup_s, const std::string& title) {
  namespace fs = std::filesystem;
  char name[] = "/tmp/simkit-plot-XXXXXX.py";
  const int fd = mkstemps(name, 3);
  if (fd < 0) throw Error(ErrorCode::io, "--plot: cannot create a temporary file in /tmp");
  ::close(fd);
  {
    std::ofstream f(name, std::ios::binary | std::ios::trunc);
    f << plot_latency_py;
  }
  const int status = run_process({python(), name, "--out", image, "--warmup", std::to_string(warmup_s), "--title",
                                  title, "latencies of the 200 responses=" + csv},
                                 false);
  std::error_code ignored;
  fs::remove(name, ignored);
  if (status != 0)
    throw Error(ErrorCode::io,
                "--plot: drawing " + quoted_path(image) + " failed (python3 exited " + std::to_string(status) + ")");
}

}  // namespace simkit::cli::loadgen
