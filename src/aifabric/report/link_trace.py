"""Time series of one link under a transport: its egress queue and its throughput (PNG/PDF/SVG)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aifabric.inputs import printable_figure
from aifabric.report.paths import check_plot_path, make_parent
from aifabric.transport.fluidnet import LinkTrace

__all__ = ["link_trace_plot"]


def link_trace_plot(trace: LinkTrace, path: str | Path, *, title: str = "") -> Path:
    """Plot the queue (KB), the throughput and the top flows' rates (Gb/s) of ``trace``'s link against time
    (us); paused steps shaded.

    Raises
    ------
    ValueError
        If ``path`` cannot be written (see :func:`aifabric.report.paths.check_plot_path`).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = check_plot_path(path, "--plot")
    make_parent(p, "--plot")
    t_us = trace.time_s * 1e6
    fig, (ax_q, ax_r) = plt.subplots(2, 1, sharex=True, figsize=(8, 5))
    ax_q.plot(t_us, trace.queue_bytes / 1e3, color="tab:red")
    ax_q.set_ylabel("egress queue (KB)")
    ax_r.plot(t_us, trace.throughput_bytes_per_s * 8 / 1e9, color="tab:blue", label="link")
    rates = trace.flow_rate_bytes_per_s
    if rates.size:  # the eight flows that carried the most bytes on the link
        for j in np.argsort(rates.sum(axis=0))[::-1][:8]:
            ax_r.plot(t_us, rates[:, j] * 8 / 1e9, lw=0.8, alpha=0.7, label=f"flow {int(trace.flows[j])}")
    ax_r.set_ylabel("throughput (Gb/s, one direction)")
    ax_r.set_xlabel("time (us)")
    if trace.paused.any():
        ax_r.fill_between(
            t_us,
            0,
            1,
            where=trace.paused,
            color="grey",
            alpha=0.3,
            transform=ax_r.get_xaxis_transform(),
            label="paused / out of credit",
        )
    ax_r.legend(loc="upper right", fontsize="x-small")
    fig.suptitle(title or f"link {trace.link}")
    fig.tight_layout()
    printable_figure(fig).savefig(p)
    plt.close(fig)
    return p
