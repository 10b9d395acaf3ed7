"""Plot step-time breakdowns: one stacked bar per layout (matplotlib, Agg backend, no display needed).

Kept out of :mod:`aifabric.training.step` so that the cost model imports no plotting library.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from aifabric.report.paths import PLOT_FORMATS, check_plot_path, save_figure
from aifabric.training.step import PARTS, StepTime

__all__ = ["PLOT_FORMATS", "check_plot_path", "plot_step_breakdown"]

_COLOURS = {
    "compute": "#4C72B0",
    "memory-bound": "#8C8CD9",
    "tp": "#DD8452",
    "cp": "#E5AE38",
    "ep": "#C44E52",
    "pp": "#937860",
    "bubble": "#BBBBBB",
    "dp": "#55A868",
    "optimizer": "#8172B3",
}


def plot_step_breakdown(
    steps: Sequence[StepTime],
    path: str | Path,
    *,
    labels: Sequence[str] | None = None,
    title: str | None = None,
    option: str = "path",
) -> Path:
    """Write a chart with one stacked bar per layout: the critical-path seconds of each part of a step.

    Parameters
    ----------
    steps : sequence of StepTime
        The layouts to draw, left to right.
    path : str or Path
        Output file: ``.png``, ``.pdf`` or ``.svg`` (see :func:`check_plot_path`; parent folders are created).
    labels : sequence of str, optional
        Bar labels; default each layout's degrees.
    title : str, optional
        Wrapped to the figure's width.
    option : str, default "path"
        How messages name ``path`` (the CLI passes ``"--plot"``).

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    ValueError
        If ``steps`` is empty, ``labels`` has another length, or ``path`` cannot be written (a directory, an
        unsupported extension, a folder that cannot be created or a file that cannot be written).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not steps:
        raise ValueError("steps: give at least one StepTime to plot")
    if labels is not None and len(labels) != len(steps):
        raise ValueError(f"labels: {len(labels)} labels for {len(steps)} bars")
    out = check_plot_path(path, option)
    names = list(labels) if labels is not None else [_label(st) for st in steps]
    width_in = max(5.0, 1.6 * len(steps) + 2.5)
    fig, ax = plt.subplots(figsize=(width_in, 4.8))
    bottoms = [0.0] * len(steps)
    for part in PARTS:
        heights = [st.breakdown_s.get(part, 0.0) for st in steps]
        if not any(hgt > 0 for hgt in heights):
            continue
        ax.bar(names, heights, bottom=bottoms, label=part, color=_COLOURS[part], edgecolor="white", width=0.6)
        bottoms = [b + hgt for b, hgt in zip(bottoms, heights, strict=True)]
    for x, st in enumerate(steps):
        ax.annotate(
            f"{st.step_s:.2f} s\nMFU {st.mfu:.0%}", (x, st.step_s), ha="center", va="bottom", fontsize=8
        )
    ax.set_ylabel("seconds per step (critical path)")
    ax.set_ylim(0, max(st.step_s for st in steps) * 1.18)
    first = steps[0]
    text = title or f"{first.model} on {first.n_gpus} GPUs of {first.cluster}"
    ax.set_title(_wrap(text, width_in), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    save_figure(fig, out, option, 120)
    return out


def _wrap(title: str, width_in: float) -> str:
    """Wrap a title to the axes (the legend takes ~1.6 in on the right; ~11 characters per inch at 10 pt)."""
    chars = max(20, int((width_in - 1.9) * 11))
    return "\n".join(textwrap.wrap(title, chars, break_on_hyphens=False)) or title


def _label(st: StepTime) -> str:
    lay = st.layout
    parts = [f"tp{lay.tp}", f"pp{lay.pp}", f"dp{lay.dp}"]
    if lay.cp > 1:
        parts.append(f"cp{lay.cp}")
    if lay.ep > 1:
        parts.append(f"ep{lay.ep}")
    if lay.virtual_pipeline_stages > 1:
        parts.append(f"v{lay.virtual_pipeline_stages}")
    return " ".join(parts) + f"\nb{lay.microbatch_size} {lay.recompute.value}"
