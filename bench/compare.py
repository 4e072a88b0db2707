#!/usr/bin/env python3
"""Joins simkit's benchmark CSVs with a peer's (bench/peers/torch_peers.py) into a markdown table.

    python3 bench/compare.py [--out table.md] [--device-name NAME] [--commit SHA] FILE.csv...

Every FILE holds the columns
    suite,case,metric,m,n,d,k,device,median_ms,min_ms,max_ms,gflops,pct_peak,error,check
Rows whose device is "torch" are the peer; the others are simkit's. A simkit row and a peer row
match when suite, metric, m, n, d and k agree. The table has one line per simkit row (and one
per peer row nothing matched): the two median times, their ratio simkit / peer (below 1:
simkit is faster), simkit's GFLOP/s and % of the FP32 peak, its error (pairwise: max error vs
float64) or recall@k (knn) with its check, and the peer's error/recall with its check.

The header names the device (--device-name, else the first line of a gpu.txt beside the
output file or beside the first CSV), the date, and the git commit (--commit, else
`git rev-parse --short HEAD` in this repository, else "unknown").
"""

import argparse
import csv
import datetime
import os
import subprocess
import sys

KEY = ("suite", "metric", "m", "n", "d", "k")
REQUIRED = ("suite", "case", "metric", "m", "n", "d", "k", "device", "median_ms", "gflops",
            "pct_peak", "error", "check")
PEER_DEVICES = {"torch", "cub", "cub-radix", "cusparse", "std-par"}


def read_rows(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise SystemExit(f"compare.py: {path} lacks the column(s) {', '.join(missing)}")
            for row in reader:
                row["_file"] = path
                rows.append(row)
    return rows


def key_of(row):
    return tuple(row[c].strip() for c in KEY)


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def fmt(value, spec, missing="—"):
    return missing if value is None else format(value, spec)


def case_label(row):
    shape = f"{row['m']}×{row['n']}×{row['d']}"
    if row["suite"] == "knn":
        shape += f", k={row['k']}"
    return f"{row['suite']} {row['metric']} {shape}"


def quality(row):
    """`error` is a max error for pairwise (scientific notation) and recall@k for knn."""
    if row is None:
        return "—"
    v = number(row.get("error"))
    if v is None:
        text = row.get("error") or "—"
    elif row["suite"] == "knn":
        text = f"recall {v:.4f}"
    else:
        text = f"{v:.1e}"
    check = (row.get("check") or "").strip()
    return f"{text} {check}".strip()


def device_name(args):
    if args.device_name:
        return args.device_name
    places = []
    if args.out:
        places.append(os.path.dirname(os.path.abspath(args.out)))
    if args.csv:
        places.append(os.path.dirname(os.path.abspath(args.csv[0])))
    for folder in places:
        path = os.path.join(folder, "gpu.txt")
        if os.path.isfile(path):
            with open(path) as f:
                first = f.readline().strip()
            if first:
                return first
    return "unknown device"


def git_commit(args):
    if args.commit:
        return args.commit
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def build_primitives_table(rows):
    """`simkit bench primitives`: every simkit row with each peer of the same key below it (CUB,
    cuSPARSE and std::execution::par come in simkit's own CSV; torch from torch_primitives.py).
    vs peer = peer time / simkit time (above 1: simkit is faster)."""
    prim = [r for r in rows if r["suite"] == "primitives"]
    peers = {}
    for r in prim:
        if r["device"].strip() in PEER_DEVICES:
            peers.setdefault(key_of(r), []).append(r)
    lines = ["| case | size | who | ms | rate | % bandwidth | vs peer | error | check |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in prim:
        if r["device"].strip() in PEER_DEVICES:
            continue
        unit = "Gkeys/s" if r["case"] in ("sort", "sortpairs") else "GB/s"
        size = f"{r['m']}×{r['n']}, k={r['k']}" if r["case"] == "select" else (
            f"{r['m']} rows, {r['n']} nnz" if r["case"] == "spmv" else r["n"])
        ms = number(r["median_ms"])
        for who in [r] + peers.get(key_of(r), []):
            peer_ms = number(who["median_ms"])
            ratio = peer_ms / ms if who is not r and ms and peer_ms is not None else None
            lines.append("| " + " | ".join([
                r["metric"] if who is r else "", size if who is r else "", who["device"], fmt(peer_ms, ".3f"),
                f"{fmt(number(who['gflops']), '.1f')} {unit}", fmt(number(who["pct_peak"]), ".1f", ""),
                fmt(ratio, ".2f") + ("×" if ratio is not None else ""), who["error"], who["check"],
            ]) + " |")
    return lines if len(lines) > 2 else []


def build_table(rows):
    suite_rank = {"pairwise": 0, "knn": 1}
    rows = [r for r in rows if r["suite"] != "primitives"]
    ours = [r for r in rows if r["device"].strip() not in PEER_DEVICES]
    ours.sort(key=lambda r: suite_rank.get(r["suite"], 2))  # stable: file order within a suite
    peers = {}
    for r in rows:
        if r["device"].strip() in PEER_DEVICES:
            peers.setdefault(key_of(r), r)  # the first peer row of a key wins
    used = set()
    lines = [
        "| case | simkit device | simkit ms | torch ms | ratio simkit/torch | simkit GFLOP/s | % FP32 peak "
        "| simkit error/recall | torch error/recall |",
        "|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    ratios = []
    for r in ours:
        peer = peers.get(key_of(r))
        if peer is not None:
            used.add(key_of(r))
        ms = number(r["median_ms"])
        peer_ms = number(peer["median_ms"]) if peer else None
        ratio = ms / peer_ms if ms is not None and peer_ms else None
        if ratio is not None and r["device"].strip() == "gpu":
            ratios.append(ratio)
        lines.append("| " + " | ".join([
            case_label(r), r["device"], fmt(ms, ".3f"), fmt(peer_ms, ".3f"), fmt(ratio, ".2f"),
            fmt(number(r["gflops"]), ".0f"), fmt(number(r["pct_peak"]), ".1f", "n/a"),
            quality(r), quality(peer),
        ]) + " |")
    for key, peer in peers.items():
        if key in used:
            continue
        lines.append("| " + " | ".join([
            case_label(peer), "—", "—", fmt(number(peer["median_ms"]), ".3f"), "—", "—", "—", "—",
            quality(peer),
        ]) + " |")
    return lines, ratios


def geometric_mean(values):
    if not values:
        return None
    product = 1.0
    for v in values:
        product *= v
    return product ** (1.0 / len(values))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Join simkit and peer benchmark CSVs into a markdown table.")
    ap.add_argument("csv", nargs="+", help="CSV files from `simkit bench ... --csv` and torch_peers.py --csv")
    ap.add_argument("--out", help="write the markdown here (atomically) as well as printing it")
    ap.add_argument("--device-name", help="the device named in the header (default: gpu.txt, if found)")
    ap.add_argument("--commit", help="the commit named in the header (default: git rev-parse --short HEAD)")
    args = ap.parse_args(argv)

    present = [p for p in args.csv if os.path.isfile(p)]
    for p in args.csv:
        if p not in present:
            print(f"compare.py: skipping {p}: no such file", file=sys.stderr)
    if not present:
        raise SystemExit("compare.py: none of the CSV files exists")
    args.csv = present
    rows = read_rows(present)
    lines, ratios = build_table(rows)
    prim_lines = build_primitives_table(rows)

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc = [f"# simkit vs its peers — {device_name(args)}", "", f"{date}, commit {git_commit(args)}.", ""]
    if ratios or len(lines) > 2:
        doc += ["Median times of at least 10 runs; fp32 with TF32 off for "
                "both; inputs and outputs resident on the device for both. ratio = simkit ms / torch ms "
                "(below 1: simkit is faster). GFLOP/s = 2·m·n·d / time; % FP32 peak against the device's "
                "FP32 FMA rate. Error: max error vs float64 (l2 relative); knn: recall@k on sampled queries.",
                ""] + lines
    gm = geometric_mean(ratios)
    if gm is not None:
        doc += ["", f"Geometric mean of the GPU ratios: {gm:.2f} over {len(ratios)} cases "
                f"(simkit {'faster' if gm < 1 else 'slower'}: {1 / gm if gm < 1 else gm:.2f}×)."]
    if prim_lines:
        doc += ["", "## Primitives", "",
                "Median times; rate = bytes read once + written once / time (sorts: keys / time), % of the "
                "memory bandwidth; vs peer = peer ms / simkit ms (above 1: simkit is faster); error = "
                "mismatches (spmv: max |y − Ax| / Σ|a·x| vs float64; float scan: relative to the running sum).",
                ""] + prim_lines
    text = "\n".join(doc) + "\n"

    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.out)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
