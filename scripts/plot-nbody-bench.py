#!/usr/bin/env python3
"""One picture of `simkit bench nbody` results. Each CSV is recognised by its header: simkit bench
rows (and bench/peers/nbody_torch.py rows, same columns) or CPU peer rows from
bench/peers/nbody_peers.py. Panels, as far as the inputs hold the data:
  (a) time per force evaluation vs N: the direct sums, and Barnes-Hut at theta 0.5, per device;
  (b) accuracy vs cost: median relative force error vs time at each series' largest N, for every
      Barnes-Hut theta and every peer setting, beside the 1e-3 target;
  (c) Barnes-Hut (monopoles) at theta 0.5: the shares of tree build and walk, per N and device,
      the total time above each bar.

    python3 scripts/plot-nbody-bench.py h200-nbody.csv h200-torch.csv \\
        bench/results/2026-11-26-cpu2-nbody.csv bench/results/2026-11-26-cpu2-nbody-peers.csv \\
        --out bench/results/nbody.png [--title "H200 + 2 CPU cores"]
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from dataclasses import dataclass
from typing import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.text import Annotation  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

BENCH_COLUMNS = {"suite", "case", "metric", "n", "device", "median_ms", "pct_peak", "error", "check"}
PEER_COLUMNS = {"system", "n", "setting", "time_s", "median_err"}
METHODS = {  # bench case -> legend name, colour, marker; the same in every panel
    "direct": ("simkit direct", "tab:blue", "o"),
    "direct_torch": ("torch direct", "tab:orange", "s"),
    "direct_torch_compile": ("torch.compile direct", "tab:red", "D"),
    "barnes_hut": ("simkit Barnes-Hut", "tab:green", "^"),
    "barnes_hut_quadrupole": ("simkit Barnes-Hut quadrupole", "tab:purple", "v"),
}
PEER_STYLE = [("sienna", "P"), ("mediumvioletred", "X"), ("olive", "*"), ("darkcyan", "h"), ("dimgray", "p")]
LINESTYLE = {"gpu": "-", "cpu": "--"}  # the device is told by the line, the method by colour
THETA = 0.5  # the Barnes-Hut opening angle shown in (a) and (c); (b) shows them all
TARGET_ERROR = 1e-3
COSTS = re.compile(r"build ([0-9.eE+-]+) ms; walk ([0-9.eE+-]+) ms")


@dataclass
class Run:  # one simkit bench (or nbody_torch.py) row; theta is None for the direct sums
    case: str; device: str; n: int; theta: float | None; ms: float  # noqa: E702
    pct_peak: float | None; error: float | None; build_walk: tuple[float, float] | None  # noqa: E702


@dataclass
class Peer:  # one nbody_peers.py row
    system: str; n: int; setting: str; ms: float; error: float  # noqa: E702


def positive(text: str | None, what: str) -> float:
    """A positive number, since a log scale has no room for others."""
    try:
        value = float(text or "nan")
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} {text!r} is not a positive number")
    return value


def optional(text: str | None, what: str) -> float | None:
    return positive(text, what) if (text or "").strip() else None


def bench_row(r: dict[str, str]) -> Run:
    if r["suite"] != "nbody" or r["case"] not in METHODS or r["device"] not in LINESTYLE:
        raise ValueError(f"unknown suite/case/device {r['suite']}/{r['case']}/{r['device']}")
    theta = float(r["metric"].removeprefix("theta=")) if r["case"].startswith("barnes_hut") else None
    costs = COSTS.search(r["check"] or "")
    return Run(r["case"], r["device"], int(r["n"]), theta, positive(r["median_ms"], "median_ms"),
               optional(r["pct_peak"], "pct_peak"), optional(r["error"], "error"),
               (float(costs[1]), float(costs[2])) if costs else None)


def peer_row(r: dict[str, str]) -> Peer:
    return Peer(r["system"], int(r["n"]), r["setting"], 1e3 * positive(r["time_s"], "time_s"),
                positive(r["median_err"], "median_err"))


def read(paths: list[str]) -> tuple[list[Run], list[Peer]]:
    rows: list[Run | Peer] = []
    for path in paths:
        try:
            with open(path, newline="") as f:
                reader = csv.DictReader(f)
                columns = set(reader.fieldnames or [])
                parse: Callable[[dict[str, str]], Run | Peer] | None = (
                    bench_row if columns >= BENCH_COLUMNS else peer_row if columns >= PEER_COLUMNS else None)
                if parse is None:
                    print(f"warning: {path}: header not recognised, file skipped", file=sys.stderr)
                    continue
                for r in reader:
                    try:
                        rows.append(parse(r))
                    except (KeyError, TypeError, ValueError) as e:  # a short row has None cells
                        print(f"warning: {path}:{reader.line_num}: row skipped ({e})", file=sys.stderr)
        except OSError as e:
            print(f"warning: {path}: {e.strerror}, file skipped", file=sys.stderr)
    if not rows:
        raise SystemExit("no usable n-body rows in " + ", ".join(paths))
    return [r for r in rows if isinstance(r, Run)], [r for r in rows if isinstance(r, Peer)]


def pow2(n: float) -> str:
    k = math.log2(n)
    return f"$2^{{{k:.0f}}}$" if k == round(k) else f"{n:,.0f}"


def by_series(runs: list[Run]) -> dict[tuple[str, str], list[Run]]:
    """(device, case) -> its rows, GPU first, the methods in METHODS order."""
    order = list(METHODS)
    keys = sorted({(r.device, r.case) for r in runs}, key=lambda k: (k[0] != "gpu", order.index(k[1])))
    return {k: [r for r in runs if (r.device, r.case) == k] for k in keys}


def series(runs: list[Run]) -> dict[tuple[str, str], list[Run]]:
    """(device, case) -> its rows for (a) and (c) by N: Barnes-Hut at the theta nearest 0.5 (so a
    sweep without 0.5 still shows), the fastest row where a run was repeated."""
    out: dict[tuple[str, str], list[Run]] = {}
    for (device, case), mine in by_series(runs).items():
        theta = min({r.theta for r in mine}, key=lambda t: (abs((t or 0) - THETA), t or 0))
        by_n: dict[int, Run] = {}
        for r in mine:
            if r.theta == theta and (r.n not in by_n or r.ms < by_n[r.n].ms):
                by_n[r.n] = r
        out[(device, case)] = [by_n[n] for n in sorted(by_n)]
    return out


def panel_time(ax: Axes, lines: dict[tuple[str, str], list[Run]]) -> list[Annotation]:
    for (device, case), rows in lines.items():
        name, colour, marker = METHODS[case]
        theta = f", θ={rows[0].theta:g}" if rows[0].theta is not None else ""
        ax.plot([r.n for r in rows], [r.ms for r in rows], LINESTYLE[device], color=colour, marker=marker,
                label=f"{name}{theta} ({device})")
        peak = [r for r in rows if r.theta is None and r.pct_peak is not None]
        if peak:  # how close the direct sum at its largest N comes to the device's FP32 peak
            last = peak[-1]
            ax.annotate(f"{last.pct_peak:.3g}% of FP32 peak", (last.n, last.ms), xytext=(-6, 4), ha="right",
                        textcoords="offset points", va="bottom", fontsize=7, color=colour,
                        bbox=dict(fc="white", ec="none", alpha=0.8, pad=1))  # legible over other lines
    ns = sorted({r.n for rows in lines.values() for r in rows})
    lo, hi = math.floor(math.log2(ns[0])), math.ceil(math.log2(ns[-1]))
    ticks = [2.0 ** k for k in range(lo, hi + 1, 1 if hi - lo <= 10 else 2)]
    ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, [pow2(t) for t in ticks])
    ax.set_xlim(ticks[0] / 1.4, ticks[-1] * 1.4)
    ax.set(yscale="log", xlabel="bodies N", ylabel="ms per force evaluation (median)", title="(a) time vs N")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    return []


def tradeoff(ax: Axes, points: list[tuple[float, float, str]], label: str, colour: str, marker: str,
             style: str) -> list[Annotation]:
    """One system's settings as a curve of (ms, error), each point labelled with its setting."""
    points.sort()
    ax.plot([p[0] for p in points], [p[1] for p in points], style, color=colour, marker=marker, lw=1,
            label=label)
    return [ax.annotate(text, (ms, error), xytext=(4, 3), textcoords="offset points", fontsize=6,
                        color=colour, bbox=dict(fc="white", ec="none", alpha=0.6, pad=0.3))
            for ms, error, text in points]


def spread(ax: Axes, labels: list[Annotation]) -> None:
    """Moves each point label that would cover a marker or an earlier label to the first free place
    around its point: the settings of nearby curves bunch up (fmm3dpy's eps=1e-2 and 1e-3 nearly meet)."""
    points = (ax.transData.transform(label.xy) for label in labels)
    placed = [Bbox.from_bounds(x - 4, y - 4, 8, 8) for x, y in points]
    for label in labels:
        for dx, dy in [(4, 3), (4, -10), (-4, 3), (-4, -10), (4, 11), (4, -18), (-4, 11), (-4, -18), (4, 3)]:
            label.xyann = (dx, dy)
            label.set_horizontalalignment("left" if dx > 0 else "right")
            box = label.get_window_extent()
            if not any(box.overlaps(other) for other in placed):
                break  # else it keeps the first place, repeated last in the list
        placed.append(box)


def setting_text(setting: str) -> str:
    """A short point label: the bare theta ("0.5"), the FMM tolerance as "ε1e-3"."""
    knob, _, value = setting.removesuffix(" quad").partition("=")
    if not re.fullmatch(r"[0-9.]+([eE][+-]?[0-9]+)?", value):
        return setting
    return f"{float(value):g}" if knob == "theta" else f"ε{float(value):.0e}".replace("e-0", "e-") \
        if knob == "eps" else setting


def panel_accuracy(ax: Axes, runs: list[Run], peers: list[Peer]) -> list[Annotation]:
    labels = []
    for (device, case), mine in by_series(runs).items():
        n = max(r.n for r in mine)  # the largest N is where a tree code is meant to be used
        name, colour, marker = METHODS[case]
        points = [(r.ms, r.error, f"{r.theta:g}") for r in mine if r.n == n and r.error is not None]
        labels += tradeoff(ax, points, f"{name} ({device}, N={pow2(n)})", colour, marker, LINESTYLE[device])
    # pytreegrav's quadrupole settings make a curve of their own, beside its monopole one
    variant = {id(p): p.system + (" quad" if p.setting.endswith(" quad") else "") for p in peers}
    for (colour, marker), system in zip(PEER_STYLE * 4, sorted(set(variant.values()))):
        theirs = [p for p in peers if variant[id(p)] == system]
        n = max(p.n for p in theirs)
        labels += tradeoff(ax, [(p.ms, p.error, setting_text(p.setting)) for p in theirs if p.n == n],
                           f"peer {system} (cpu, N={pow2(n)})", colour, marker, ":")
    ax.axhline(TARGET_ERROR, ls="--", color="black", lw=0.8)
    ax.text(0.01, TARGET_ERROR, "target median error", transform=ax.get_yaxis_transform(), fontsize=7,
            va="bottom")
    ax.set(xscale="log", yscale="log", xlabel="ms per force evaluation (median)",
           ylabel="median relative force error",
           title="(b) accuracy vs cost at the largest N of each\n(points labelled with θ, or the FMM's ε)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, frameon=False)
    return labels


Bars = dict[tuple[str, str], list[tuple[int, float, float, float]]]  # series -> (n, build, walk, theta)


def panel_costs(ax: Axes, bars: Bars) -> list[Annotation]:
    ns = sorted({row[0] for rows in bars.values() for row in rows})
    width = 0.8 / len(bars)
    handles = []
    for i, ((device, case), rows) in enumerate(bars.items()):
        name, colour, _ = METHODS[case]
        hatch = "//" if device == "cpu" else None
        for n, build, walk, _ in rows:
            x = ns.index(n) - 0.4 + (i + 0.5) * width
            # Shares of the evaluation, so that a GPU's milliseconds and a CPU's seconds sit on one
            # axis; the total is written above the bar.
            share = 100 * build / (build + walk)
            ax.bar(x, share, width, color=colour, hatch=hatch, edgecolor="white", linewidth=0.3)
            ax.bar(x, 100 - share, width, bottom=share, color=colour, alpha=0.4, hatch=hatch, edgecolor="white",
                   linewidth=0.3)
            ax.text(x, 100, f"{build + walk:.3g}\nms", ha="center", va="bottom", fontsize=6.5)
        handles.append(Patch(color=colour, hatch=hatch, label=f"{name}, θ={rows[0][3]:g} ({device})"))
    handles += [Patch(color="dimgray", label="tree build"),
                Patch(color="dimgray", alpha=0.4, label="tree walk")]
    ax.set_xticks(range(len(ns)), [f"N = {pow2(n)}" for n in ns])
    ax.set_ylim(0, 125)  # room for the totals above the bars
    ax.set(ylabel="% of the force evaluation (total above)", title="(c) Barnes-Hut: tree build vs walk")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(handles=handles, fontsize=7, loc="upper left")
    return []


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+", help="simkit bench nbody / nbody_torch.py / nbody_peers.py CSVs")
    p.add_argument("--out", default="nbody-bench.png", help="PNG to write (default nbody-bench.png)")
    p.add_argument("--title", default="", help="added to the figure title")
    a = p.parse_args()

    runs, peers = read(a.csv)
    lines = series(runs)
    tree = [r for r in runs if r.theta is not None and r.error is not None]
    # (c) needs the build/walk split that only some Barnes-Hut builds (the GPU's) write into `check`
    bars: Bars = {k: [(r.n, *r.build_walk, r.theta or 0) for r in rows if r.build_walk]
                  for k, rows in lines.items()}
    bars = {k: rows for k, rows in bars.items() if rows and k[1] == "barnes_hut"}  # monopoles only
    panels: list[tuple[float, Callable[[Axes], list[Annotation]]]] = []  # width, drawing
    if lines:
        panels.append((1.0, lambda ax: panel_time(ax, lines)))
    if tree or peers:  # (b) holds the most labelled points, so it gets the most width
        panels.append((1.6, lambda ax: panel_accuracy(ax, tree, peers)))
    if bars:
        panels.append((1.0, lambda ax: panel_costs(ax, bars)))

    widths = [w for w, _ in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * sum(widths), 6.4), layout="constrained",
                             squeeze=False, width_ratios=widths)
    labels = [(ax, draw(ax)) for ax, (_, draw) in zip(axes.flat, panels)]
    devices = sorted({r.device for r in runs} | ({"cpu"} if peers else set()))
    title = f"N-body gravity, simkit and peers ({', '.join(devices)})"
    fig.suptitle(f"{title}: {a.title}" if a.title else title)
    fig.draw_without_rendering()  # lays the panels out first, so that the labels' places are final
    for ax, texts in labels:
        spread(ax, texts)
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}: {len(panels)} panels from {len(runs)} bench rows and {len(peers)} peer rows")


if __name__ == "__main__":
    main()
