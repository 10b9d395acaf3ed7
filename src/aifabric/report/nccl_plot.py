"""Measured against predicted nccl-tests busbw (PNG), kept out of the comparison code.

One panel per compared table: bus bandwidth (GB/s) against message size (log scale, bytes), the measured
points joined by a line, the model's prediction dashed, rows flagged far below the model circled in red.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aifabric.report.paths import save_figure

if TYPE_CHECKING:  # the comparison objects are only read here
    from aifabric.discovery.compare import TableComparison

__all__ = ["comparison_figure", "plot_comparisons"]


def _title(comp: TableComparison, width: int = 70) -> str:
    title = comp.table.title or f"table {comp.index}"
    if len(title) > width:
        title = title[: width - 3] + "..."
    return (
        f"{comp.index}: {title}\n{comp.op}, {comp.n_ranks} ranks on {comp.n_nodes} node(s), "
        f"model on {comp.spec.name}"
    )


def plot_comparisons(comparisons: Sequence[TableComparison], path: str | Path, *, dpi: int = 110) -> Path:
    """Write a PNG of busbw against size, measured and predicted, one panel per table. Returns the path.

    Parameters
    ----------
    comparisons : sequence of TableComparison
        From :func:`aifabric.discovery.compare.compare_nccl_tests`.
    path : str or Path
        Output file (``.png``).
    dpi : int
        Resolution.

    Raises
    ------
    ValueError
        If ``comparisons`` is empty, or naming ``--plot`` when the file cannot be written (its missing
        folders are created, :func:`aifabric.report.paths.save_figure`).
    """
    out = Path(path)
    save_figure(comparison_figure(comparisons), out, "--plot", dpi)
    return out


def comparison_figure(comparisons: Sequence[TableComparison]) -> Any:
    """The matplotlib Figure of :func:`plot_comparisons` (one panel per table), not yet saved.

    Raises
    ------
    ValueError
        If ``comparisons`` is empty.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not comparisons:
        raise ValueError("plot: nothing to plot (no compared table)")
    n = len(comparisons)
    fig, axes = plt.subplots(n, 1, figsize=(9, 3.6 * n), squeeze=False)
    for ax, comp in zip(axes[:, 0], comparisons, strict=True):
        sizes = [r.size_bytes for r in comp.rows]
        measured = [r.measured_busbw_bytes_per_s / 1e9 for r in comp.rows]
        predicted = [r.predicted_busbw_bytes_per_s / 1e9 for r in comp.rows]
        ax.plot(
            sizes,
            measured,
            "o-",
            color="tab:blue",
            markersize=3.5,
            label=f"measured ({comp.place.replace('_', '-')})",
        )
        ax.plot(sizes, predicted, "--", color="tab:orange", label="predicted (formula engine)")
        flagged = [(r.size_bytes, r.measured_busbw_bytes_per_s / 1e9) for r in comp.rows if r.flagged]
        if flagged:
            fx, fy = zip(*flagged, strict=True)
            ax.scatter(fx, fy, s=70, facecolors="none", edgecolors="tab:red", linewidths=1.2,
                       label=f"> {comp.threshold:.0%} below the model")  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes, nccl-tests 'size')")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(_title(comp), fontsize=9)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    # fixed margins in inches (title above, axis label below each panel): tight_layout would draw the whole
    # figure once more only to measure it
    height = 3.6 * n
    fig.subplots_adjust(left=0.08, right=0.98, top=1 - 0.55 / height, bottom=0.45 / height, hspace=0.55)
    return fig
