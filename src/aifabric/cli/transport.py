"""``aifabric transport``: transports and congestion on a small fabric (incast, victim flow, permutation)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from aifabric.cli.common import console, emit_json, handle_errors, literal
from aifabric.report.paths import check_plot_path
from aifabric.transport.fluidnet import TRANSPORTS, FluidConfig, transport
from aifabric.transport.scenarios import (
    SCENARIOS,
    Scenario,
    incast,
    run_scenario,
    sprayed_permutation,
    victim,
)
from aifabric.transport.spraying import SPRAYING
from aifabric.units import one_size, parse_nic_bandwidth

__all__ = ["transport_command"]


def _scenario(name: str, senders: int, size: float, rate: float, seed: int, spraying: str | None) -> Scenario:
    if spraying is not None and name != "permutation":
        raise ValueError(f"--spraying: only the permutation scenario sprays; {name} does not take it")
    if name == "incast":
        return incast(senders, size, rate)
    if name == "victim":
        return victim(senders // 2, senders - senders // 2, size, rate)
    if name == "permutation":
        return sprayed_permutation(
            4, max(1, senders // 4), 4, size, rate, spraying=spraying or "even", seed=seed
        )
    raise ValueError(f"scenario: unknown {name!r}; known: {', '.join(SCENARIOS)}")


@handle_errors
def transport_command(
    scenario: Annotated[str, typer.Argument(help=f"Traffic: {', '.join(SCENARIOS)}")] = "victim",
    transports: Annotated[
        list[str] | None,
        typer.Option(
            "--transport", "-t", help=f"Transport(s) to compare: {', '.join(TRANSPORTS)} (repeatable)"
        ),
    ] = None,
    senders: Annotated[
        int,
        typer.Option(help="Senders (incast: into one port; victim: split over two leaves)", min=1, max=4096),
    ] = 16,
    size: Annotated[str, typer.Option("--size", "-s", help="Bytes per flow, e.g. '2 MB'")] = "2 MB",
    rate: Annotated[str, typer.Option(help="Link rate, one direction, e.g. '400 Gb/s'")] = "400 Gb/s",
    seed: Annotated[int, typer.Option(help="Seed of the permutation and of the entropy values", min=0)] = 0,
    spraying: Annotated[
        str | None, typer.Option(help=f"Permutation only: {', '.join(SPRAYING)} (default even)")
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(help="Write the watched link's queue and throughput over time (first transport)"),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Run a scenario under one or more transports: completion against the contention-free time, victims of
    PFC head-of-line blocking, pause time, queues, trimmed and retransmitted bytes.

    Times in microseconds (JSON: seconds); sizes in bytes; rates per direction.
    """
    if plot is not None:
        check_plot_path(plot, "--plot")
    names = transports or ["roce-pfc", "roce-dcqcn", "receiver-driven", "uet-lossy", "ib"]
    for name in names:
        transport(name)
    bytes_per_flow = one_size(size, "--size")
    link_rate = parse_nic_bandwidth(rate, field="--rate")
    sc = _scenario(scenario, senders, bytes_per_flow, link_rate, seed, spraying)
    est_steps = float(sc.bytes_per_flow.sum() / link_rate / FluidConfig().dt_s)
    if est_steps * len(sc.paths) > 1e8:
        raise ValueError(
            f"--size: about {est_steps:.3g} steps x {len(sc.paths)} flows is too long a run; "
            "use a smaller size or fewer senders"
        )
    rows: list[dict[str, Any]] = []
    for i, name in enumerate(names):
        cfg = FluidConfig(trace_link=sc.watch_link if (plot is not None and i == 0) else None)
        res = run_scenario(sc, name, cfg)
        rows.append(
            {
                "transport": name,
                "makespan_s": res.makespan_s,
                "ideal_s": float(sc.bytes_per_flow.sum() / sc.capacity_bytes_per_s[sc.watch_link])
                if scenario == "incast"
                else float(np.max(res.flow_ideal_s)),
                "victims": [sc.flow_labels[v] for v in res.victims],
                "victim_slowdown": float(res.slowdown[-1]) if scenario == "victim" else None,
                "pause_s": float(res.link_pause_s.sum()),
                "watch_link": sc.link_labels[sc.watch_link],
                "watch_peak_queue_bytes": float(res.link_peak_queue_bytes[sc.watch_link]),
                "watch_mean_queue_bytes": float(res.link_mean_queue_bytes[sc.watch_link]),
                "retransmitted_fraction": res.retransmission_fraction,
                "congested_links": [sc.link_labels[link] for link in res.congested_links],
            }
        )
        if res.trace is not None and plot is not None:
            from aifabric.report.link_trace import link_trace_plot

            link_trace_plot(res.trace, plot, title=f"{scenario}, {name}: {sc.link_labels[sc.watch_link]}")
    if json_out:
        emit_json(
            {"scenario": scenario, "flows": len(sc.paths), "bytes_per_flow": bytes_per_flow, "results": rows}
        )
        return
    console.print(
        f"[bold]{literal(scenario)}[/]: {len(sc.paths)} flows of {bytes_per_flow / 1e6:g} MB "
        f"at {link_rate * 8 / 1e9:g} Gb/s "
        "(fluid queue model, time step 0.5 us)",
        markup=True,
    )
    t = Table(show_edge=False)
    for col in (
        "transport",
        "completion (us)",
        "ideal (us)",
        "victims",
        "pause (us, all links)",
        f"queue at {sc.link_labels[sc.watch_link]} peak/mean (KB)",
        "retransmitted",
    ):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(
            r["transport"],
            f"{r['makespan_s'] * 1e6:.1f}",
            f"{r['ideal_s'] * 1e6:.1f}",
            ", ".join(r["victims"]) or "-",
            f"{r['pause_s'] * 1e6:.1f}",
            f"{r['watch_peak_queue_bytes'] / 1e3:.0f} / {r['watch_mean_queue_bytes'] / 1e3:.0f}",
            f"{r['retransmitted_fraction']:.0%}",
        )
    console.print(t)
    if plot is not None:
        console.print(f"time series of {sc.link_labels[sc.watch_link]} under {names[0]} written to {plot}")
