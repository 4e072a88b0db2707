#!/usr/bin/env python3
"""Check that quoted #includes respect simkit's layers (docs/ARCHITECTURE.md: data flows down).

Every `#include "..."` in src/, apps/ and python/src/ is resolved to a file and both ends get a
layer from LAYERS below (first matching row wins, so the more specific rows come first). An edge
is a violation when the header's layer is not among those the including file's layer may use.

  - `<...>` includes are not checked (system and public headers).
  - `"simkit/..."` is the public API (include/simkit/): every layer may include it.
  - A quoted header resolves against, in order: the including file's own folder, src/,
    apps/server, apps/cli, python/src, tests (where a header `X` is found, `X.in` counts too:
    it is configured into the build tree). An include found nowhere is a violation only when it
    looks like a project header (starts with core/, cpu/, cuda/ or index/); anything else is
    taken to be a third-party header on some other include path.
  - tests/, fuzz/, bench/, examples/ may include anything and are not scanned.

To change the architecture, edit LAYERS (and CUDA_MAY_USE_CPU for the CUDA -> CPU seam).

Exit status: 0 with "layers: N files, M includes, 0 violations"; 1 with one line per violation,
  path:line: <layer of file> may not include "<header>" (<layer of header>): <reason>
then the same summary; 2 on a usage error.
"""
import argparse
import os
import re
import sys

# The only CPU-backend headers the CUDA backend (and index/**/cuda/) may include: the host
# top-k that the GPU k-NN uses for k > 1024 and for bases streamed from host memory.
CUDA_MAY_USE_CPU = ["cpu/select/top_k.hpp"]

# The only index headers the MPI entry points may include: what a sharded index needs beyond the
# public Index (training on the whole base's sample, stored rows, ivf_pq's two rounds), and how an
# index reads its search parameters.
MPI_MAY_USE_INDEX = ["index/shard_hooks.hpp", "index/search_params.hpp"]

# (layer, path test on the repo-relative path, layers it may include or None for anything,
#  headers (relative to src/) allowed besides those layers, reason printed with a violation)
LAYERS = [
    ("core", r"src/core/", {"core"}, [],
     "core is the bottom layer: entry points, validation, the metric plan and the backend seam; "
     "data flows down"),
    ("cpu", r"src/cpu/", {"core", "cpu"}, [],
     "the CPU backend builds on core alone"),
    ("cuda", r"src/cuda/", {"core", "cuda"}, CUDA_MAY_USE_CPU,
     "the CUDA backend reaches the CPU backend only through the documented seam"),
    ("index-cpu", r"src/index/(.+/)?cpu/", {"core", "index", "index-cpu", "cpu"}, [],
     "an index family's CPU searcher builds on core, the index's shared code and the CPU backend"),
    ("index-cuda", r"src/index/(.+/)?cuda/", {"core", "index", "index-cuda", "cuda"},
     CUDA_MAY_USE_CPU,
     "an index family's GPU searcher builds on core, the index's shared code and the CUDA "
     "backend (the CPU backend only through the documented seam)"),
    ("nbody-cpu", r"src/nbody/cpu/", {"core", "nbody", "nbody-cpu", "cpu"}, [],
     "the n-body family's CPU sum builds on core, the family's shared code and the CPU backend"),
    ("nbody-cuda", r"src/nbody/cuda/", {"core", "nbody", "nbody-cuda", "cuda"}, CUDA_MAY_USE_CPU,
     "the n-body family's GPU sum builds on core, the family's shared code and the CUDA backend"),
    ("nbody", r"src/nbody/", {"core", "nbody"}, [],
     "the n-body family's shared code stays backend-free; its sums live in its cpu/ and cuda/ "
     "folders"),
    ("spatial-cpu", r"src/spatial/cpu/", {"core", "spatial", "spatial-cpu", "cpu"}, [],
     "the point tree's CPU searches build on core, the tree's shared code and the CPU backend"),
    ("spatial-cuda", r"src/spatial/cuda/", {"core", "spatial", "spatial-cuda", "cuda"}, CUDA_MAY_USE_CPU,
     "the point tree's GPU build and walks build on core, the tree's shared code and the CUDA "
     "backend"),
    ("spatial", r"src/spatial/", {"core", "spatial"}, [],
     "the point tree's shared code (build, checks, routing) stays backend-free"),
    ("index-tree", r"src/index/tree/", {"core", "index", "index-tree", "spatial"}, [],
     "the tree index family builds on core, the index's shared code and the point tree "
     "(spatial/: its build, and its searches through spatial/tree_search.hpp)"),
    ("index", r"src/index/", {"core", "index", "index-tree"}, [],
     "an index family's shared code stays backend-free; its searchers live in its cpu/ and cuda/ "
     "folders"),
    ("mpi", r"src/mpi/", {"core", "mpi"}, MPI_MAY_USE_INDEX,
     "the MPI entry points (libsimkit_mpi) build on core (the metric plan and the float64 keys) and "
     "reach the indexes only through the sharded index's hooks"),
    ("apps", r"apps/", {"apps"}, [],
     "applications use the public API"),
    ("python", r"python/src/", {"python"}, [],
     "the Python extension uses the public API"),
    # Below: anything goes, and the files are not scanned. Listed so their headers get a name.
    ("tests", r"(tests|fuzz|bench|examples)/", None, [], ""),
    ("public", r"include/", None, [], ""),
]
LAYERS = [(name, re.compile(test), allowed, extra, reason)
          for name, test, allowed, extra, reason in LAYERS]

# Where a quoted include is looked for after the including file's own folder.
SEARCH_DIRS = ["src", "apps/server", "apps/cli", "python/src", "tests"]
SCANNED_DIRS = ["src", "apps", "python/src"]
PROJECT_PREFIXES = ("core/", "cpu/", "cuda/", "index/")
SOURCE_SUFFIXES = (".h", ".hpp", ".hh", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".inl", ".ipp")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(rel):
    """The first LAYERS row whose path test matches `rel` (repo-relative, '/'), or None."""
    for row in LAYERS:
        if row[1].match(rel):
            return row
    return None


def resolve(root, including_dir, header):
    """The repo-relative path the quoted `header` names, or None if it is in no search dir."""
    for base in [including_dir] + SEARCH_DIRS:
        rel = os.path.normpath(os.path.join(base, header)).replace(os.sep, "/")
        if rel.startswith("../"):
            continue  # climbs out of the repository: not ours
        for candidate in (rel, rel + ".in"):
            if os.path.isfile(os.path.join(root, candidate)):
                return rel
    return None


def source_files(root):
    for top in SCANNED_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                stem = name[:-3] if name.endswith(".in") else name
                if stem.endswith(SOURCE_SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")


def check(root):
    """Returns (files, edges): edges are (layer row, path, line, header, header layer, ok)."""
    files, edges = 0, []
    for rel in source_files(root):
        row = layer_of(rel)
        if row is None or row[2] is None:
            continue  # unlayered or free: not checked
        files += 1
        name, _, allowed, extra, _ = row
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for lineno, text in enumerate(f, 1):
                m = INCLUDE.match(text)
                if not m:
                    continue
                header = m.group(1)
                if header.startswith("simkit/"):
                    edges.append((row, rel, lineno, header, "public", True))
                    continue
                target = resolve(root, os.path.dirname(rel), header)
                if target is None:
                    # A project-looking header that exists nowhere is a stale include (moved
                    # or deleted); other unresolved names belong to third-party include paths.
                    looks_ours = header.startswith(PROJECT_PREFIXES)
                    edges.append((row, rel, lineno, header, "unresolved", not looks_ours))
                    continue
                target_row = layer_of(target)
                target_layer = target_row[0] if target_row else "unlayered"
                in_src = target[4:] if target.startswith("src/") else None
                ok = target_layer in allowed or in_src in extra
                edges.append((row, rel, lineno, header, target_layer, ok))
    return files, edges


def main():
    rules = "\n".join(
        f"  {name:<10} {test.pattern:<22} may include: "
        + (", ".join(sorted(allowed)) + ("; also " + ", ".join(extra) if extra else "")
           if allowed is not None else "anything (not checked)")
        for name, test, allowed, extra, _ in LAYERS)
    parser = argparse.ArgumentParser(
        description=__doc__, epilog="Layers (first matching path wins; every layer may "
        "include \"simkit/...\"):\n" + rules,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    default_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--root", default=default_root,
                        help="repository root to check (default: %(default)s)")
    parser.add_argument("--list", action="store_true",
                        help="print every include edge checked, grouped by the including "
                        "file's layer, before the violations")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.root, "src")):
        parser.error(f"{args.root} has no src/: not a simkit checkout")

    files, edges = check(args.root)
    if args.list:
        for name, test, allowed, _, _ in LAYERS:
            mine = [e for e in edges if e[0][0] == name]
            if allowed is None:
                continue
            print(f"[{name}] {test.pattern}: {len(mine)} includes")
            for _, rel, lineno, header, target_layer, ok in mine:
                print(f"  {rel}:{lineno}: \"{header}\" ({target_layer})"
                      + ("" if ok else "  VIOLATION"))
    bad = [e for e in edges if not e[5]]
    for (name, _, _, _, reason), rel, lineno, header, target_layer, _ in bad:
        if target_layer == "unresolved":
            reason = "no such project header (moved or deleted?)"
        print(f"{rel}:{lineno}: {name} may not include \"{header}\" ({target_layer}): {reason}")
    print(f"layers: {files} files, {len(edges)} includes, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
