"""Draws the ocean example's solved field: python3 plot_field.py FIELD.npy OUT.png [TITLE].

FIELD.npy is (n+2) x (n+2) float64 with the boundary, rows along y (row 0 is y = 0), as
`ocean --field` writes it; `ocean --plot` calls this script with a temporary one.
"""

import sys

import matplotlib

matplotlib.use("Agg")  # no display needed
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    field = np.load(argv[1])
    title = argv[3] if len(argv) == 4 else "ocean: solved field"
    fig, ax = plt.subplots(figsize=(5.2, 4.4), dpi=80)
    limit = float(np.abs(field).max())
    image = ax.imshow(field, origin="lower", extent=(0, 1, 0, 1), cmap="RdBu_r", vmin=-limit, vmax=limit)
    grid = np.linspace(0, 1, field.shape[0])
    ax.contour(grid, grid, field, levels=16, colors="k", linewidths=0.4)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title, fontsize=9)
    fig.colorbar(image, ax=ax, label="u")
    fig.tight_layout()
    fig.savefig(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
