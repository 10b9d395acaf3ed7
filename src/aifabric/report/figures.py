"""Figures of the HTML report, as inline SVG markup (matplotlib, Agg backend; no file, no network).

- :func:`cluster_drawing`: the cluster at a glance: scale-up domains, rails and leaves, spines, cores of one
  plane, with their counts (a schematic: at most ``_SHOWN`` boxes per row, the rest summarised);
- :func:`step_bars`: stacked bars of critical-path seconds per part, one bar per layout;
- :func:`tier_heatmaps`: link utilisation per tier, from :func:`aifabric.report.heatmap.tier_matrices`.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from aifabric.inputs import printable_figure
from aifabric.report.heatmap import tier_matrices

if TYPE_CHECKING:
    from aifabric.cluster.spec import ClusterSpec
    from aifabric.cluster.topology import Topology

__all__ = ["cluster_drawing", "figure_svg", "step_bars", "tier_heatmaps"]

_SHOWN = 8  # boxes drawn per row of the schematic


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure_svg(fig: Any) -> str:
    """A matplotlib Figure as inline SVG markup (the figure is closed)."""
    return _svg(fig)


def _svg(fig: Any) -> str:
    plt = _pyplot()
    buf = io.StringIO()
    try:
        printable_figure(fig).savefig(buf, format="svg")
    finally:
        plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prologue and DOCTYPE: the SVG sits inside HTML


def cluster_drawing(spec: ClusterSpec, topo: Topology | None) -> str:
    """SVG schematic of ``spec``: rows of scale-up domains, leaves (rails), spines, cores, with counts.

    Parameters
    ----------
    spec : ClusterSpec
    topo : Topology or None
        Its Clos shape gives the switch counts (None for a torus: the domains only).
    """
    plt = _pyplot()
    shape = topo.shape if topo is not None else None
    rows: list[tuple[str, int, str]] = [
        (
            "scale-up domain",
            spec.n_gpus // spec.domain_gpus,
            f"{spec.domain_gpus} GPUs ({spec.scale_up.kind})",
        )
    ]
    if shape is not None:
        rows.append(
            ("leaf", shape.n_leaves, f"{shape.rails} rail(s), {shape.leaf_down} down / {shape.leaf_up} up")
        )
        if shape.tiers >= 2:
            rows.append(("spine", shape.n_spines, f"{shape.spine_radix} ports"))
        if shape.tiers == 3:
            rows.append(("core", shape.n_cores, f"{shape.core_radix} ports"))
    fig, ax = plt.subplots(figsize=(9, 1.3 * len(rows) + 0.6))
    colours = ("#4c72b0", "#55a868", "#c44e52", "#8172b2")
    centres: list[list[float]] = []
    for level, (name, count, detail) in enumerate(rows):
        shown = min(count, _SHOWN)
        xs = list(np.linspace(0.5, 8.5, shown)) if shown > 1 else [4.5]
        centres.append(xs)
        for x in xs:
            ax.add_patch(
                plt.Rectangle(
                    (x - 0.4, level - 0.2), 0.8, 0.4, color=colours[level % len(colours)], alpha=0.85
                )
            )
        more = f" (first {shown} drawn)" if count > shown else ""
        ax.text(9.2, level, f"{count} x {name}: {detail}{more}", va="center", fontsize=9)
        if level:
            for x0 in centres[level - 1]:
                for x1 in xs:
                    ax.plot([x0, x1], [level - 0.8, level - 0.2], color="#999999", lw=0.3)
    planes = spec.scale_out.planes if spec.scale_out else 0
    ax.set_title(
        f"{spec.name}: {spec.n_gpus} GPUs in {spec.n_nodes} nodes"
        + (f"; scale-out {shape.tiers} tier(s) x {planes} plane(s), one plane drawn" if shape else ""),
        fontsize=10,
    )
    ax.set_xlim(0, 16)
    ax.set_ylim(-0.5, len(rows) - 0.4)
    ax.axis("off")
    return _svg(fig)


def step_bars(labels: Sequence[str], parts: Sequence[str], seconds: Sequence[Sequence[float]]) -> str:
    """SVG stacked horizontal bars: ``seconds[i][j]`` is part ``j`` of layout ``i`` (seconds per step)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.55 * len(labels) + 1.4))
    data = np.asarray(seconds, dtype=float).reshape(len(labels), len(parts))
    left = np.zeros(len(labels))
    cmap = plt.get_cmap("tab10")
    for j, part in enumerate(parts):
        if data[:, j].any():
            ax.barh(range(len(labels)), data[:, j], left=left, label=part, color=cmap(j % 10))
            left += data[:, j]
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds per step (critical path)")
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.25))
    fig.tight_layout()
    return _svg(fig)


def tier_heatmaps(topo: Topology, utilisation: np.ndarray) -> str:
    """SVG heatmaps of link utilisation (0..1) per tier, one panel each."""
    plt = _pyplot()
    mats = tier_matrices(topo, utilisation)
    fig, axes = plt.subplots(1, max(1, len(mats)), figsize=(3.6 * max(1, len(mats)), 3.6), squeeze=False)
    im = None
    for ax, (name, m) in zip(axes[0], mats.items(), strict=False):
        im = ax.imshow(m, aspect="auto", vmin=0.0, vmax=1.0, cmap="viridis", interpolation="nearest")
        ax.set_title(f"{name}\nmean {m.mean():.0%}, max {m.max():.0%}", fontsize=8)
        ax.set_xlabel("port", fontsize=8)
        ax.set_ylabel("switch / node", fontsize=8)
    if im is not None:
        fig.colorbar(im, ax=axes[0].tolist(), label="utilisation (bytes / (capacity x time))")
    return _svg(fig)
