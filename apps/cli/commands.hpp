#pragma once
// Each `simkit` subcommand registers itself on the root app. A command's callback throws
// simkit::Error (or CLI11's errors) on bad input; main() turns those into one line on stderr
// and exit status 2 (invalid argument, i/o) or 1 (anything else).

#include <CLI/CLI.hpp>

namespace simkit::cli {

void add_info_command(CLI::App& app);      // info.cpp
void add_gen_command(CLI::App& app);       // gen.cpp
void add_pairwise_command(CLI::App& app);  // pairwise_command.cpp
void add_knn_command(CLI::App& app);       // knn_command.cpp
void add_radius_command(CLI::App& app);    // radius_command.cpp
void add_bench_command(CLI::App& app);     // bench.cpp: `bench pairwise`, `bench knn`
void add_gauss_command(CLI::App& app);     // gauss_command.cpp
void add_kde_command(CLI::App& app);       // kde_command.cpp
void add_kmeans_command(CLI::App& app);    // kmeans_command.cpp
void add_kcenter_command(CLI::App& app);   // kcenter_command.cpp
void add_nbody_command(CLI::App& app);     // nbody_command.cpp: accel
void add_index_command(CLI::App& app);     // index_command.cpp: build, add, remove, search, info
void add_serve_command(CLI::App& app);     // serve_command.cpp: the HTTP server (apps/server/)
void add_import_command(CLI::App& app);    // import_command.cpp: a collection written offline
void add_loadgen_command(CLI::App& app);   // loadgen_command.cpp: open-loop HTTP load on a search server

}  // namespace simkit::cli
