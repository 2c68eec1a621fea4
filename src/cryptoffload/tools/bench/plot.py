"""Plots of a sweep: throughput against buffer size (log scale), crossovers marked."""

from __future__ import annotations

from typing import Any


def plot_sweep(result: dict[str, Any], path: str) -> None:
    """Write a PNG with one panel per algorithm: a line per engine, the crossover as a marker."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = []
    for row in result["rows"]:
        label = (row["algorithm"], row["operation"])
        if row["block"] and label not in labels:
            labels.append(label)
    if not labels:
        raise ValueError("nothing to plot: the sweep has no bulk rows")
    cols = min(2, len(labels))
    rows_n = (len(labels) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(6.4 * cols, 4.2 * rows_n), squeeze=False)
    for ax, (alg, op) in zip(axes.flat, labels, strict=False):
        engines: dict[str, list[tuple[int, float]]] = {}
        for row in result["rows"]:
            if (row["algorithm"], row["operation"]) == (alg, op) and row["median"]:
                engines.setdefault(row["engine"], []).append((row["block"], row["median"]))
        for engine, pts in engines.items():
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=engine)
        for c in result.get("crossovers", []):
            if (c["algorithm"], c["operation"]) == (alg, op) and c["kind"] in ("crosses", "falls"):
                ax.axvline(c["size"], linestyle="--", color="grey")
                ax.annotate(
                    f"{c['engine']} pays from ~{c['size']} B"
                    if c["kind"] == "crosses"
                    else f"{c['engine']} stops paying at ~{c['size']} B",
                    (c["size"], ax.get_ylim()[1] * 0.9),
                    fontsize=8,
                    rotation=90,
                    ha="right",
                    va="top",
                )
        ax.set_xscale("log", base=2)
        sizes = sorted({p[0] for pts in engines.values() for p in pts})
        ax.set_xticks(
            sizes, [f"{s // 1024} KiB" if s >= 1024 and s % 1024 == 0 else f"{s} B" for s in sizes]
        )
        ax.set_yscale("log")
        ax.set_title(f"{alg} {op}")
        ax.set_xlabel("buffer size (bytes)")
        ax.set_ylabel("MiB/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(labels) :]:
        ax.set_visible(False)
    fig.suptitle("cryptoffload sweep: throughput against buffer size")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
