"""Plots of a sweep: throughput against buffer size (log-log), trial spread, crossovers marked."""

from __future__ import annotations

from typing import Any

from cryptoffload.tools.bench.report import engine_measured


def _curves(result: dict[str, Any], alg: str, op: str) -> dict[str, list[tuple[int, float, list]]]:
    """Per engine: (size, median, trials) of each measured row of one algorithm, by size."""
    curves: dict[str, list[tuple[int, float, list]]] = {}
    for row in result["rows"]:
        if (row["algorithm"], row["operation"]) == (alg, op) and row["median"] and row["block"]:
            trials = row.get("trials") or [row["median"]]
            curves.setdefault(row["engine"], []).append((row["block"], row["median"], trials))
    for pts in curves.values():
        pts.sort()
    return curves


def _size_text(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def plot_formats() -> set[str]:
    """The file formats (extensions) matplotlib can write here."""
    from matplotlib.backend_bases import FigureCanvasBase

    return set(FigureCanvasBase.get_supported_filetypes())


def plot_sweep(result: dict[str, Any], path: str, fmt: str = "png") -> None:
    """Write :func:`sweep_figure` of ``result`` to exactly ``path``, as ``fmt`` (PNG)."""
    import matplotlib.pyplot as plt

    fig = sweep_figure(result)
    try:
        fig.savefig(path, format=fmt, dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)


def sweep_figure(result: dict[str, Any]) -> Any:
    """A figure with one panel per algorithm: a line per engine over the band its trials span,
    and each crossover as a dashed line named in the legend, below the panel (off the curves).
    """
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
    fig, axes = plt.subplots(rows_n, cols, figsize=(6.4 * cols, 4.8 * rows_n), squeeze=False)
    for ax, (alg, op) in zip(axes.flat, labels, strict=False):
        curves = _curves(result, alg, op)
        for engine, pts in curves.items():
            sizes = [p[0] for p in pts]
            (line,) = ax.plot(sizes, [p[1] for p in pts], marker="o", label=engine)
            ax.fill_between(
                sizes,
                [min(p[2]) for p in pts],
                [max(p[2]) for p in pts],
                color=line.get_color(),
                alpha=0.2,
                linewidth=0,
            )
        for c in result.get("crossovers", []):
            if (c["algorithm"], c["operation"]) == (alg, op) and c["kind"] in ("crosses", "falls"):
                verb = "pays from" if c["kind"] == "crosses" else "stops paying at"
                ax.axvline(
                    c["size"],
                    linestyle="--",
                    color="grey",
                    label=f"{c['engine']} {verb} ~{c['size']} B",
                )
        ax.set_xscale("log", base=2)
        sizes = sorted({p[0] for pts in curves.values() for p in pts})
        ax.set_xticks(sizes, [_size_text(s) for s in sizes])
        ax.set_yscale("log")
        ax.set_title(f"{alg} {op}")
        ax.set_xlabel("buffer size (bytes)")
        ax.set_ylabel("MiB/s (median; band: min..max of trials)")
        ax.grid(True, which="both", alpha=0.3)
        if curves:
            # Below the panel, so that no label ever sits on a curve.
            ax.legend(
                fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False
            )
    for ax in list(axes.flat)[len(labels) :]:
        ax.set_visible(False)
    title = (
        "throughput against buffer size; dashed: where engine and software curves cross"
        if engine_measured(result)
        else "throughput against buffer size (software only: no engine measured)"
    )
    fig.suptitle(f"cryptoffload sweep: {title}")
    fig.tight_layout()
    return fig
