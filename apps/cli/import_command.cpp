// `simkit import`: writes a collection into a `simkit serve` data directory from files, offline
// (apps/server/import_collection.hpp does the work; this file turns options into ImportOptions).

#include <cstdio>
#include <string>

#include "../server/import_collection.hpp"
#include "commands.hpp"

namespace simkit::cli {

void add_import_command(CLI::App& app) {
  auto o = std::make_shared<server::ImportOptions>();
  auto data_dir = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "import",
      "Write a collection into a `simkit serve` data directory from files, offline: vectors from an array file, ids "
      "and payloads optional. The points are checked by the rules of an upsert over the REST API and stored as the "
      "server stores them, so `simkit serve` then serves the collection as if it had been upserted; it is written "
      "at the speed of the disk (one transaction per 16,384 points, one fsync at the end) and appears whole or not "
      "at all. Refused while a server (or another import) uses the data directory, and when the collection exists.");
  sub->add_option("--data-dir", *data_dir, "The data directory of `simkit serve` (created if missing)")->required();
  sub->add_option("--collection", o->collection,
                  "Name of the new collection: 1-64 letters, digits, '_' or '-', starting with a letter or digit")
      ->required();
  sub->add_option("--vectors", o->vectors,
                  "n x d vectors: .npy (float16, float32, float64 or integers), .fvecs, .bvecs or .ivecs. Every value "
                  "must be finite, and no row's squared norm above 2^125 (as an upsert requires)")
      ->required();
  sub->add_option("--payloads", o->payloads,
                  "JSON Lines, one line per vector in the same order: a JSON object (its payload) or null (none). "
                  "Checked by the server's default payload limits (depth 32, 65,536 values, 1 MiB as compact JSON)");
  sub->add_option("--ids", o->ids,
                  "One id per vector, in the same order: an .npy of integers (0 .. 2^62 - 1), or a .txt with one id "
                  "per line, an integer or a UUID. Default: 0 .. n-1. No id may appear twice");
  sub->add_option("--distance", o->distance, "Cosine, Dot, Euclid or Manhattan")->capture_default_str();
  sub->add_option("--index", o->index,
                  "The collection's index description (as in PUT /collections/{name}): `simkit serve` opens the "
                  "collection with a flat index and builds this one in the background")
      ->capture_default_str();
  sub->footer(
      "Example:\n"
      "  simkit import --data-dir ./simkit-data --collection docs --vectors docs.npy --payloads docs.jsonl\n"
      "  simkit serve --data-dir ./simkit-data         # serves 'docs' as if it had been upserted\n"
      "where docs.npy holds n rows (numpy.save of an n x d array) and docs.jsonl has n lines such as\n"
      "  {\"title\": \"Kestrel\", \"lang\": \"en\", \"year\": 1998}\n"
      "  null\n"
      "With --ids ids.txt, line i of ids.txt (an integer or a UUID) names row i.\n"
      "A progress line goes to stderr every few seconds; the last line says where the time went (read: the files, "
      "check: values, ids and payloads, write: SQLite, sync: fsync and rename). Bad input: exit status 2, one line "
      "on stderr, and the data directory as it was.");
  sub->callback([o, data_dir] {
    o->data_dir = *data_dir;
    o->progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    const server::ImportReport r = server::import_collection(*o);
    std::fprintf(stderr,
                 "simkit import: %lld points of %lld dimensions into collection '%s' in %.2f s (read %.2f s, check "
                 "%.2f s, write %.2f s, sync %.2f s)\n",
                 static_cast<long long>(r.points), static_cast<long long>(r.dim), o->collection.c_str(),
                 r.read + r.check + r.write + r.sync, r.read, r.check, r.write, r.sync);
  });
}

}  // namespace simkit::cli
