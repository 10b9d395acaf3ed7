"""``aifabric fabric``: a traffic or collective scenario on a cluster's real links."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from aifabric.cli.common import (
    CommandClusterOpt,
    HtmlOpt,
    TraceOpt,
    check_outputs,
    console,
    emit_json,
    err_console,
    handle_errors,
    literal,
    options_as_typed,
    progress_bar,
)
from aifabric.cli.sizing import sized_cluster
from aifabric.cluster.placement import PLACEMENTS, RANDOM_PLACEMENTS
from aifabric.cluster.topology import Topology
from aifabric.collectives.algorithms import plan_algorithms
from aifabric.collectives.ops import Collective
from aifabric.collectives.traffic import PATTERNS
from aifabric.engines.routing import POLICIES, POLICY_OPTIONS, refuse_unused_options
from aifabric.engines.scenario import DEFAULT_ROUTING, Scenario, run_scenario
from aifabric.report.html import fabric_report, write_html
from aifabric.report.trace import scenario_trace, write_trace
from aifabric.transport.fluidnet import transport as known_transport
from aifabric.transport.wire import TransportRun
from aifabric.units import format_bytes, one_size

__all__ = ["fabric"]


@handle_errors
def fabric(
    ctx: typer.Context,
    traffic: Annotated[
        str,
        typer.Argument(
            help=f"A collective ({', '.join(c.value for c in Collective)}) or a pattern "
            f"({', '.join(PATTERNS)})"
        ),
    ] = "all_reduce",
    cluster: CommandClusterOpt = "dgx-h100-superpod",
    nodes: Annotated[int | None, typer.Option(help="Resize the cluster to this many nodes", min=1)] = None,
    size: Annotated[
        str,
        typer.Option(
            "--size", "-s", help="Collective size (nccl-tests convention) or bytes per flow for patterns"
        ),
    ] = "1 GiB",
    engine: Annotated[
        str,
        typer.Option(help="links (contention-free bound on real links) or flow (max-min fair, event-driven)"),
    ] = "flow",
    routing: Annotated[str, typer.Option(help=f"Load balancing: {', '.join(POLICIES)}")] = DEFAULT_ROUTING,
    transport: Annotated[
        str | None,
        typer.Option(
            help="flow engine only: run a transport's fluid queue model (ib, roce-pfc, roce-dcqcn, "
            "receiver-driven, uet-lossy, uet-rccc, ...) instead of max-min rates"
        ),
    ] = None,
    qps: Annotated[
        int | None,
        typer.Option(help="Queue pairs per connection for --routing qp (default 4)", min=1, max=256),
    ] = None,
    polarized: Annotated[
        bool, typer.Option(help="Same ECMP hash seed in every switch (hash polarisation)")
    ] = False,
    jobs: Annotated[int, typer.Option(help="Number of equal jobs sharing the fabric", min=1)] = 1,
    job_nodes: Annotated[
        int | None, typer.Option(help="Nodes per job (default: all nodes / jobs)", min=1)
    ] = None,
    placement: Annotated[str, typer.Option(help=f"Job placement: {', '.join(PLACEMENTS)}")] = "packed",
    algo: Annotated[
        str | None,
        typer.Option(
            "--algo",
            help=f"Collectives: {', '.join(a.value for a in plan_algorithms())} (default: what NCCL's tuner "
            "picks when it has a transfer plan, else ring, said so)",
        ),
    ] = None,
    fail: Annotated[
        list[str] | None,
        typer.Option(
            help="Failures, KIND:ARG, comma-separated or repeated, e.g. 'fabric:0.05', 'spine:3', 'link:120'"
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(
            help="Seed of hashes, random placement, permutation traffic and failures (default 0)",
            min=0,
            max=2**32 - 1,
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            help="Write a link-utilisation heatmap per tier (.png/.pdf/.svg; missing folders are created)"
        ),
    ] = None,
    top: Annotated[int, typer.Option(help="Most loaded links to explain", min=0)] = 5,
    trace: TraceOpt = None,
    html: HtmlOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Run traffic on the fabric link by link: completion time, bandwidth against the contention-free ideal,
    the most loaded links and the flows that load them, and a utilisation heatmap per tier (--plot).

    Times in seconds; bandwidths in GB/s (1e9 B/s) per direction; utilisation = bytes / (capacity x time).
    """
    _check_traffic(traffic)
    check_outputs(plot=plot, trace=trace, html=html)
    given = [o for o, on in (("--qps", qps is not None), ("--polarized", polarized)) if on]
    source = ctx.get_parameter_source("routing")  # Typer's own Click: compared by name
    refuse_unused_options(routing, given, defaulted=source is None or source.name == "DEFAULT")
    failures = ",".join(fail) if fail else None  # one text: parse_failures reads comma-separated items
    _refuse_unused(traffic, routing, placement, failures, algo=algo, seed=seed)
    seed = seed or 0
    if transport is not None:
        known_transport(transport)
    spec = sized_cluster(cluster, nodes=nodes)
    s = one_size(size, "--size")
    with progress_bar() as progress, options_as_typed(_FLAGS):
        sc = run_scenario(
            traffic,
            s,
            spec,
            engine=engine,
            routing=routing,
            qps=qps or 4,
            polarized=polarized,
            jobs=jobs,
            job_nodes=job_nodes,
            placement=placement,
            algorithm=algo,
            fail=failures,
            seed=seed,
            top=top,
            progress=progress,
            transport=transport,
        )
    if plot is not None:
        _plot(sc, plot)
    if trace is not None:
        write_trace(scenario_trace(sc), trace)
        err_console.print(f"trace written to {trace}", markup=False, highlight=False)
    if html is not None:
        inputs = dict(
            traffic=traffic, cluster=cluster, nodes=nodes, size=size, engine=engine, routing=routing
        )
        write_html(
            fabric_report(sc, **inputs, jobs=jobs, placement=placement, fail=failures, seed=seed), html
        )
        err_console.print(f"report written to {html}", markup=False, highlight=False)
    if json_out:
        emit_json(_scenario_json(sc, s))
        return
    _print_summary(sc, s, jobs=jobs, qps=qps or 4)
    _print_tables(sc)
    if plot is not None:
        console.print(f"heatmap written to {plot}")


def _check_traffic(traffic: str) -> None:
    """ValueError naming the TRAFFIC argument's value and every traffic it takes: the collectives (and
    their spellings, :meth:`Collective.parse`) and the patterns."""
    if traffic in PATTERNS:
        return
    try:
        Collective.parse(traffic)
    except ValueError as err:
        raise ValueError(
            f"TRAFFIC: unknown traffic {traffic!r}; a collective ({', '.join(c.value for c in Collective)}) "
            f"or a pattern ({', '.join(PATTERNS)})"
        ) from err


#: The command-line option of each field named by the engines' errors.
_FLAGS = {
    "algorithm": "--algo",
    "engine": "--engine",
    "routing": "--routing",
    "transport": "--transport",
    "placement": "--placement",
    "seed": "--seed",
    "size": "--size",
    "ranks": "--nodes",  # the ranks of each job are its nodes' GPUs (--nodes, --jobs, --job-nodes)
}

#: The random traffic pattern: besides a hashing routing policy (``POLICY_OPTIONS["--seed"]``), a random
#: placement (``RANDOM_PLACEMENTS``) and failures (cables drawn at random), what draws on the seed.
_RANDOM_PATTERNS = ("permutation",)


def _refuse_unused(
    traffic: str, routing: str, placement: str, fail: str | None, *, algo: str | None, seed: int | None
) -> None:
    """ValueError naming ``--algo`` given with a traffic pattern (it decomposes collectives only), or
    ``--seed`` given where nothing is random: a routing that hashes nothing, a placement and traffic
    that are not random, and no ``--fail``."""
    if algo is not None and traffic in PATTERNS:
        raise ValueError(
            f"--algo {algo}: {traffic} is a traffic pattern, not a collective; --algo chooses how a "
            "collective is decomposed"
        )
    if seed is None or fail or placement in RANDOM_PLACEMENTS or traffic in _RANDOM_PATTERNS:
        return
    if routing not in POLICY_OPTIONS["--seed"]:
        raise ValueError(
            f"--seed: nothing in this run is random (--routing {routing}, --placement {placement}, "
            f"{traffic}, no --fail); it applies to --routing {' or '.join(POLICY_OPTIONS['--seed'])}, "
            f"--placement {' or '.join(RANDOM_PLACEMENTS)}, permutation traffic or --fail"
        )


def _plot(sc: Scenario, plot: Path) -> None:
    """Write the link-utilisation heatmap per tier to ``plot``."""
    from aifabric.report.heatmap import utilisation_heatmap

    utilisation_heatmap(
        sc.topology,
        sc.result.link_utilisation,
        plot,
        title=f"{sc.traffic} on {sc.spec.name}, {sc.engine}/{sc.routing}, {sc.placement}, seed {sc.seed}",
    )


def _job_rows(sc: Scenario) -> list[tuple[str, int, float, float]]:
    """(job, ranks, time (s), busbw (bytes/s)) of each job."""
    return [(j.job, j.n_ranks, j.time_s, j.busbw_bytes_per_s) for j in sc.jobs]


def _scenario_json(sc: Scenario, s: float) -> dict[str, Any]:
    """The ``--json`` document of a scenario run at ``s`` bytes (times in s, bandwidths in bytes/s,
    utilisation as fractions)."""
    res, traffic = sc.result, sc.traffic
    return {
        "traffic": traffic,
        "message_bytes": s,
        "bytes_per": "flow" if traffic in PATTERNS else "rank (nccl-tests size)",
        "cluster": sc.spec.name,
        **sc.run_fields(),
        "jobs": [{"job": j, "ranks": n, "time_s": t, "busbw_bytes_per_s": b} for j, n, t, b in _job_rows(sc)],
        "tiers": {k: {"mean_utilisation": a, "max_utilisation": b} for k, (a, b) in sc.tiers.items()},
        "top_links": [lr.__dict__ for lr in res.top_links],
        "failed_links": res.failed_links,
        "algorithm": sc.plans[0].algorithm if traffic not in PATTERNS else None,
        "note": sc.notes[0] if sc.notes else None,
        "transport": _transport_json(res.meta.get("transport"), sc.topology),
    }


def _print_summary(sc: Scenario, s: float, *, jobs: int, qps: int) -> None:
    """What ran where, the algorithm and transport, and completion against the contention-free ideal."""
    res, traffic, spec, routing = sc.result, sc.traffic, sc.spec, sc.routing
    size_text = f"{format_bytes(s)} {'per flow' if traffic in PATTERNS else '(nccl-tests size)'}"
    console.print(
        f"[bold]{literal(traffic)}[/] of {size_text} on {literal(spec.name)} ({spec.n_gpus} GPUs): {jobs} "
        f"job(s) of {sc.nodes_per_job} nodes, placement {sc.placement}; engine {sc.engine}, routing "
        f"{routing}{f' ({qps} QPs)' if routing == 'qp' else ''}, seed "
        f"{sc.seed}" + (f"; {res.failed_links} directed links failed" if res.failed_links else ""),
        markup=True,
    )
    if traffic not in PATTERNS:
        console.print(f"algorithm {sc.plans[0].algorithm}" + (f": {sc.notes[0]}" if sc.notes else ""))
    if "transport" in res.meta:
        console.print(literal(res.meta["transport"].summary()))
    per_job = sc.mean_job_efficiency
    console.print(
        f"completion {res.time_s * 1e3:.3f} ms; contention-free ideal {res.ideal_time_s * 1e3:.3f} ms "
        f"(links engine, spraying, no failures); efficiency {res.efficiency:.1%} of ideal for the slowest job"
        + (f", {per_job:.1%} mean over the {len(res.job_time_s)} jobs" if len(res.job_time_s) > 1 else "")
    )
    if len(sc.plans) > 1 and sc.engine == "flow":
        console.print(
            "several jobs: each job's repeated steps run as one fluid transfer (see simulate_plans "
            "merge_repeats)"
        )


def _print_tables(sc: Scenario) -> None:
    """The per-job table, utilisation per tier, and the most loaded links with the flows that load them."""
    t = Table(show_edge=False)
    for col in (
        "job",
        "ranks",
        "time (ms)",
        "busbw per rank (GB/s)" if not sc.is_pattern else "GB/s per GPU",
    ):
        t.add_column(col, justify="right")
    for job, n, tt, b in _job_rows(sc):
        t.add_row(job, str(n), f"{tt * 1e3:.3f}", f"{b / 1e9:.2f}")
    console.print(t)
    console.print(
        "utilisation per tier, over links that carried traffic (the heatmap's means count every link): "
        + ", ".join(f"{k} mean {a:.0%} max {b:.0%}" for k, (a, b) in sc.tiers.items())
    )
    if sc.result.top_links:
        lt = Table(title="Most loaded links and why", show_edge=False)
        for col in ("link", "tier", "utilisation", "GB carried", "flows", "which flows"):
            lt.add_column(col)
        for lr in sc.result.top_links:
            lt.add_row(
                lr.label,
                lr.tier,
                f"{lr.utilisation:.0%}",
                f"{lr.bytes_ / 1e9:.2f}",
                str(lr.n_flows),
                ", ".join(lr.flows) + (" ..." if lr.n_flows > len(lr.flows) else ""),
            )
        console.print(lt)


def _transport_json(run: TransportRun | None, topo: Topology) -> dict[str, Any] | None:
    """The transport run's figures (:class:`aifabric.transport.wire.TransportRun`), the paused links named."""
    if run is None:
        return None
    paused = np.flatnonzero(run.link_pause_s > 0)
    paused_links = {topo.link_label(int(i)): float(run.link_pause_s[i]) for i in paused[:50]}
    return run.to_dict() | {"paused_links": paused_links}
