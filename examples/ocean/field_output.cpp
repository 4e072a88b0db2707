// The .npy writer and the call out to plot_field.py (whose path CMake compiles in).

#include "field_output.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <simkit/io.hpp>
#include <stdexcept>

extern char** environ;

namespace ocean {
namespace {

std::string python() {
  const char* p = std::getenv("SIMKIT_PYTHON");
  return p && *p ? p : "python3";
}

// Runs argv[0] from PATH and returns its exit status (127 when it cannot start); `quiet`
// sends its output to /dev/null.
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
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return 127;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return 127;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

void write_npy(const std::string& path, const std::vector<double>& values, int rows, int cols) {
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, then '\n'.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  simkit::write_atomically(path, [&](const std::string& temporary) {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    const char preamble[10] = {'\x93',
                               'N',
                               'U',
                               'M',
                               'P',
                               'Y',
                               1,
                               0,
                               static_cast<char>(header.size() & 0xff),
                               static_cast<char>(header.size() >> 8)};
    out.write(preamble, sizeof preamble);
    out << header;
    out.write(reinterpret_cast<const char*>(values.data()),
              static_cast<std::streamsize>(values.size() * sizeof(double)));
    if (!out.flush()) throw std::runtime_error("cannot write " + path);
  });
}

std::string plotting_problem() {
  if (run_process({python(), "-c", "import matplotlib, numpy"}, true) == 0) return "";
  return "--plot needs " + python() +
         " with matplotlib and numpy (pip install matplotlib; SIMKIT_PYTHON names another interpreter), "
         "or write the field with --field F.npy";
}

void plot_field(const std::string& png_path, const std::vector<double>& field, int n, const std::string& title) {
  char npy_path[] = "/tmp/ocean-field-XXXXXX.npy";
  const int fd = mkstemps(npy_path, 4);
  if (fd < 0) throw std::runtime_error("--plot: cannot create a temporary file in /tmp");
  ::close(fd);
  write_npy(npy_path, field, n + 2, n + 2);
  const int status = run_process({python(), OCEAN_PLOT_SCRIPT, npy_path, png_path, title}, false);
  std::error_code ignored;
  std::filesystem::remove(npy_path, ignored);
  if (status != 0) throw std::runtime_error("--plot: " + python() + " plot_field.py exited " + std::to_string(status));
}

}  // namespace ocean
