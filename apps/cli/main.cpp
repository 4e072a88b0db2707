// `simkit`: the command line over the library. Each subcommand lives in its own file and
// registers itself here; this file owns only the error contract every command shares:
//   - bad input (a simkit::Error of kind invalid_argument or io, or a command-line error):
//     one line "simkit: error: ..." on stderr, exit status 2;
//   - any other failure (device, out of memory, unsupported): the same line, exit status 1.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include <CLI/CLI.hpp>
#include <simkit/context.hpp>
#include <simkit/error.hpp>

#include "cli_support.hpp"
#include "commands.hpp"

namespace {

// Settings that the OpenMP and BLAS runtimes read once, when they load, before main: the
// command sets what it needs and runs itself again, once. A user's own values are left alone.
//  - Debian 12's OpenBLAS (0.3.21) chooses its kernels by CPU model; a model it does not know
//    (current Xeons under KVM report "Intel(R) Xeon(R) Processor") gets the generic SSE3
//    "Prescott" kernels. On the 2-core CI machine that made sgemm ~2.5x slower: k-means on
//    100k x 128, k = 256 ran 199 ms per iteration instead of 80 with the SkylakeX kernels.
//    OPENBLAS_CORETYPE is set from the CPU's features.
//  - `simkit serve`: OpenMP's worker threads spin after each parallel region by default, which
//    takes the cores from the HTTP threads between batches. OMP_WAIT_POLICY=passive: on 2 cores,
//    p99 latency of 1,000 searches/s over 2,000 x 384 points went from 67.6 ms to 8.3 ms.
void prepare_runtime_environment(int argc, char** argv) {
  bool changed = false;
#if defined(__x86_64__)
  if (!std::getenv("OPENBLAS_CORETYPE") && simkit::blas_kernels() == "Prescott") {
    const char* core = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                       : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                         : nullptr;
    changed = core && setenv("OPENBLAS_CORETYPE", core, 1) == 0;
  }
#endif
  if (argc > 1 && std::string(argv[1]) == "serve" && !std::getenv("OMP_WAIT_POLICY"))
    changed = setenv("OMP_WAIT_POLICY", "passive", 1) == 0 || changed;
  if (changed) execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
}

// The text of an error as one safe line: simkit's messages already show what came from a file
// or the command line through simkit::quoted, but CLI11's (e.g. "Could not convert: -k = ...")
// and other libraries' repeat it raw. A message holding a control character, a C1 control or
// bytes that are not UTF-8 is therefore shown quoted, escaped and cut as a whole.
std::string one_line(const std::string& what) {
  // quoted() changes nothing but quotes and backslashes in text a terminal shows as it is.
  std::string plain;
  for (const char c : what)
    if (c != '\'' && c != '\\') plain += c;
  return simkit::quoted(plain, plain.size()) == "'" + plain + "'" ? what : simkit::quoted(what, 300);
}

// CLI11's own errors become the same single line as simkit's, with a pointer to the --help of
// the subcommand that was being parsed.
std::string parse_failure(const CLI::App* app, const CLI::Error& e) {
  std::string where = app->get_name();
  const CLI::App* sub = app;
  while (!sub->get_subcommands().empty()) {
    sub = sub->get_subcommands().back();
    where += " " + sub->get_name();
  }
  std::string what = one_line(e.what());
  // CLI11 checks for a missing subcommand before it reports unexpected words, so a mistyped
  // command would read "A subcommand is required"; name the word instead.
  const std::vector<std::string> extra = sub->remaining();
  if (dynamic_cast<const CLI::RequiredError*>(&e) && !extra.empty() && sub->get_require_subcommand_min() > 0) {
    std::string names;
    for (const CLI::App* c : sub->get_subcommands({})) names += (names.empty() ? "" : ", ") + c->get_name();
    what = "unknown command " + simkit::quoted(extra.front()) + " (expected one of: " + names + ")";
  }
  return "simkit: error: " + what + " (see '" + where + " --help')\n";
}

void add_bench_examples(CLI::App& app) {
  // bench.cpp builds the `bench` tree; the examples are part of the shared --help contract.
  CLI::App* bench = app.get_subcommand("bench");
  bench->footer(
      "Examples:\n  simkit bench pairwise --device gpu --csv pairwise.csv\n  simkit bench knn --device cpu --quick");
  bench->get_subcommand("pairwise")
      ->footer("Example:\n  simkit bench pairwise --device gpu --repeat 20 --csv pairwise.csv");
  bench->get_subcommand("knn")->footer("Example:\n  simkit bench knn --device gpu --cases 128 --csv knn.csv");
}

// Under mpirun every rank runs this process. The commands of kSplitOverRanks split their work
// over the ranks (apps/cli/mpi_launch.hpp); any other would run whole on each rank, each writing
// the same outputs, so it is refused before it starts. The launcher's environment says how many ranks
// there are (Open MPI, or a PMI launcher such as srun); no MPI call is needed to know.
int mpi_ranks_launched() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
  return 1;
}

// "knn", "index build": a command and, for `index`, its subcommand (index add, remove and info
// change or read one file, and stay one-process).
constexpr const char* kSplitOverRanks[][2] = {{"knn", nullptr},   {"gauss", nullptr},  {"kmeans", nullptr},
                                              {"index", "build"}, {"index", "search"}, {"serve", nullptr}};

bool splits_over_mpi_ranks(int argc, char** argv) {
#if defined(SIMKIT_CLI_MPI)
  for (const auto& c : kSplitOverRanks)
    if (argc > 1 && std::strcmp(argv[1], c[0]) == 0 &&
        (c[1] == nullptr || (argc > 2 && std::strcmp(argv[2], c[1]) == 0)))
      return true;
  return false;
#else
  (void)argc, (void)argv;
  return false;
#endif
}

/// "`simkit index add`" for the message: the command and, for `index`, its subcommand.
std::string command_named(int argc, char** argv) {
  std::string name = "simkit";
  for (int i = 1; i < argc && i < 3 && argv[i][0] != '-'; ++i) {
    name += std::string(" ") + argv[i];
    if (std::strcmp(argv[1], "index") != 0) break;
  }
  return "`" + name + "`";
}

}  // namespace

int main(int argc, char** argv) {
  prepare_runtime_environment(argc, argv);
  if (const int ranks = mpi_ranks_launched(); ranks > 1 && !splits_over_mpi_ranks(argc, argv)) {
#if defined(SIMKIT_CLI_MPI)
    std::fprintf(stderr,
                 "simkit: error: launched as %d MPI ranks, but %s does not split its work over ranks (only `simkit "
                 "knn`, `gauss`, `kmeans`, `index build`, `index search` and `serve` do); run it without mpirun\n",
                 ranks, one_line(command_named(argc, argv)).c_str());
#else
    std::fprintf(stderr,
                 "simkit: error: launched as %d MPI ranks, but this build has no MPI, so %s would run whole on every "
                 "rank; run it without mpirun\n",
                 ranks, one_line(command_named(argc, argv)).c_str());
#endif
    return 2;
  }
  CLI::App app(
      "simkit: similarity matrices and exact k-nearest-neighbour search between point sets, on the CPU "
      "(OpenBLAS + OpenMP) and on NVIDIA GPUs (CUDA).",
      "simkit");
  app.require_subcommand(1);
  app.failure_message(parse_failure);
  app.footer(
      "Point sets are float32 rows in .npy, .fvecs, .bvecs or .ivecs files (format by extension).\n"
      "Metrics: l2, sqeuclidean, l1 (distances: smallest first), dot, cosine, pearson (similarities: largest\n"
      "first). Bad input exits with status 2 and one line on stderr; outputs are never left half written.\n"
      "\n"
      "Start here:\n"
      "  simkit demo                      k-NN on a generated clustered set, checked against float64\n"
      "  simkit info                      build configuration and visible GPUs\n"
      "  simkit gen --rows 100000 --dim 128 --out base.fvecs --queries 100 --queries-out q.fvecs\n"
      "  simkit knn --base base.fvecs --queries q.fvecs -k 10 --metric cosine --ids ids.ivecs\n"
      "Each command's --help shows its options and an example.");

  simkit::cli::add_info_command(app);
  simkit::cli::add_gen_command(app);
  simkit::cli::add_pairwise_command(app);
  simkit::cli::add_knn_command(app);
  simkit::cli::add_radius_command(app);
  simkit::cli::add_gauss_command(app);
  simkit::cli::add_kde_command(app);
  simkit::cli::add_kmeans_command(app);
  simkit::cli::add_kcenter_command(app);
  simkit::cli::add_nbody_command(app);
  simkit::cli::add_index_command(app);
#if defined(SIMKIT_CLI_SERVER)  // the server's libraries were found (cmake/SimkitServer.cmake)
  simkit::cli::add_serve_command(app);
  simkit::cli::add_import_command(app);
  simkit::cli::add_loadgen_command(app);
#endif
  simkit::cli::add_demo_command(app);
  simkit::cli::add_bench_command(app);
  add_bench_examples(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == static_cast<int>(CLI::ExitCodes::Success) ? 0 : 2;
  } catch (const simkit::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "simkit: error: %s\n", one_line(e.what()).c_str());
    return simkit::cli::exit_status(e.code());
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "simkit: error: out of host memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "simkit: error: %s\n", one_line(e.what()).c_str());
    return 1;
  }
  return 0;
}
