"""Pareto fronts of a sweep: the designs no other design beats on both axes (e.g. watts and seconds)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from aifabric.report.paths import check_plot_path, save_figure

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["pareto_figure", "pareto_mask", "pareto_plot"]


def pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """True where no other point has ``x' <= x`` and ``y' <= y`` with one of them strictly smaller.

    Both axes are minimised (pass ``-busbw`` to maximise a bandwidth). O(n log n): sort by x, keep the
    points whose y is below every y before them.

    >>> pareto_mask(np.array([1.0, 2.0, 3.0, 2.0]), np.array([3.0, 1.0, 0.5, 2.0])).tolist()
    [True, True, True, False]
    """
    order = np.lexsort((y, x))
    keep = np.zeros(x.size, dtype=bool)
    best = np.inf
    for i in order:
        if y[i] < best:
            keep[i] = True
            best = y[i]
    return keep


def pareto_figure(
    frame: pd.DataFrame, *, x: str = "network_watts", y: str = "time_s", title: str = ""
) -> Any:
    """A matplotlib Figure: ``y`` against ``x`` per (op, size) group, each group's Pareto front drawn.

    Raises ValueError naming a column that does not exist, or when no point succeeded (nothing to plot).
    """
    for col in (x, y, "op", "message_bytes"):
        if col not in frame.columns:
            raise ValueError(f"--pareto: the results have no column {col!r}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = frame[frame["error"].fillna("") == ""] if "error" in frame.columns else frame
    if ok.empty:
        raise ValueError(f"--pareto: no successful points to plot ({len(frame)} point(s), all failed)")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (op, size), group in ok.groupby(["op", "message_bytes"]):
        gx, gy = group[x].to_numpy(float), group[y].to_numpy(float)
        front = pareto_mask(gx, gy)
        order = np.argsort(gx[front])
        line = ax.plot(gx[front][order], gy[front][order], marker="o", ms=3, label=_label(op, size))
        ax.scatter(gx, gy, s=6, alpha=0.3, color=line[0].get_color())
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_yscale("log")
    ax.set_title(title or f"Pareto fronts: {y} against {x} (lower is better)", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    return fig


def _label(op: str, size: float) -> str:
    """A group's legend: a collective and its message size, a training step (``train:<model>``, whose
    ``message_bytes`` is 0 by convention) by its model alone.

    >>> _label("all_reduce", 1048576.0), _label("train:llama3-8b", 0.0)
    ('all_reduce 1.05e+06 B', 'train:llama3-8b step')
    """
    return f"{op} step" if op.startswith("train:") else f"{op} {size:.3g} B"


def pareto_plot(
    frame: pd.DataFrame, path: str | Path, *, x: str = "network_watts", y: str = "time_s", title: str = ""
) -> Path:
    """Write :func:`pareto_figure` to ``path`` (.png/.pdf/.svg); returns the path.

    Raises ValueError for a path that cannot be written, a column that does not exist, or no successful
    point.
    """
    p = check_plot_path(path, "--pareto")
    fig = pareto_figure(frame, x=x, y=y, title=title)
    save_figure(fig, p, "--pareto", 110)
    return p
