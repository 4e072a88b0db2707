#include "embedded_python.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <simkit/error.hpp>

extern char** environ;

namespace simkit::cli {

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

void run_python_script(const char* script, const std::vector<std::string>& args, const std::string& what) {
  char name[] = "/tmp/simkit-script-XXXXXX.py";
  const int fd = mkstemps(name, 3);
  if (fd < 0) throw Error(ErrorCode::io, what + ": cannot create a temporary file in /tmp");
  ::close(fd);
  {
    std::ofstream f(name, std::ios::binary | std::ios::trunc);
    f << script;
  }
  std::vector<std::string> argv = {python(), name};
  argv.insert(argv.end(), args.begin(), args.end());
  const int status = run_process(argv, false);
  std::error_code ignored;
  std::filesystem::remove(name, ignored);
  if (status != 0)
    throw Error(ErrorCode::io, what + " failed (" + python() + " exited " + std::to_string(status) + ")");
}

}  // namespace simkit::cli
