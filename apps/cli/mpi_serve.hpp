#pragma once
// `mpirun -n P simkit serve`: the server over P MPI ranks (docs/API.md, "Sharded over MPI
// ranks"). Rank 0 serves HTTP as a lone server does, with apps/server/shard_router.hpp routing
// each request to the ranks; ranks 1..P-1 serve nothing over HTTP and run what rank 0 asks
// (apps/server/shard_worker.hpp). Each rank keeps its shard in <data-dir>/rank-<r>-of-<P>/ and
// recovers it from there at start.
//
// MPI is called from one thread of each rank, the main one (MPI_THREAD_FUNNELED is enough): on
// rank 0 it carries the requests that the HTTP, pool and batcher threads queue, while the server
// runs on a thread of its own; on the other ranks it receives rank 0's messages and sends the
// answers that the rank's own threads queue. The two loop on non-blocking calls (MPI_Isend,
// MPI_Iprobe, MPI_Test), so neither ever waits in MPI for the other.
//
// Shutdown: SIGTERM or SIGINT to rank 0 drains the server (in-flight requests answered, queued
// searches run), then rank 0 tells every rank to close (indexes saved) and all exit 0. A rank
// signalled itself asks rank 0 to drain, and goes on serving until told to stop. mpirun sends
// SIGTERM to every rank and SIGKILLs them a second later (Open MPI's odls_base_sigkill_timeout):
// a drain cut short loses no acknowledged write, every one being durable on its rank. A rank
// that dies ends the MPI job (mpirun stops the others); a restart recovers every rank's writes.

#include "../server/server.hpp"

namespace simkit::cli {

/// Serves `options` as this rank of the MPI job (collective: every rank calls it); returns the
/// exit status as run_server does. Under `mpirun -n 1` it is run_server on --data-dir itself.
int run_serve_mpi(const server::ServeOptions& options);

}  // namespace simkit::cli
