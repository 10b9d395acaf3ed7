"""``aifabric transport``: transports and congestion on a small fabric.

Scenarios: incast, a victim flow, a (sprayed) permutation, MoE all-to-all (uniform, skewed, serial), elephants
next to mice, the checkpoint burst on the front-end, a chained ring, and the Meta story (PFC only vs tuned
DCQCN vs receiver-driven admission on one job); and ``stability``, DCQCN's phase margin against the number of
flows and the feedback delay (:mod:`aifabric.cli.transport_stability`, no fluid run).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import numpy as np
import typer
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from aifabric.budget import check_memory
from aifabric.cli.common import console, emit_json, handle_errors, literal
from aifabric.cli.transport_stability import stability_scenario
from aifabric.report.paths import check_plot_path
from aifabric.transport.fluidnet import TRANSPORTS, FluidConfig, FluidResult, fluid_bytes, transport
from aifabric.transport.params import dcqcn_preset
from aifabric.transport.scenarios import (
    SCENARIOS,
    Scenario,
    all_to_all,
    chained_ring,
    checkpoint_burst,
    elephants_and_mice,
    incast,
    run_scenario,
    sprayed_permutation,
    victim,
)
from aifabric.transport.spraying import SPRAYING
from aifabric.transport.story import META_TRANSPORTS, meta_job, story_rows, winner
from aifabric.units import one_size, parse_nic_bandwidth

__all__ = ["transport_command"]

#: Options only some scenarios use (anything else is refused, not dropped).
_USERS: dict[str, tuple[str, ...]] = {
    "--spraying": ("permutation",),
    "--skew": ("all-to-all", "meta"),
    "--serial": ("all-to-all",),
    "--steps": ("ring",),
    "--targets": ("checkpoint",),
    "--mouse-size": ("mice",),
    "--flows": ("stability",),
    "--delay": ("stability",),
    "--dcqcn": ("stability",),
}
#: Every scenario the command runs: the fluid ones, and the DCQCN stability analysis (no fluid run).
_SCENARIOS = (*SCENARIOS, "stability")
#: The fluid run's options (parameter name -> flag), which the stability scenario refuses when given.
_FLUID_OPTIONS = {
    "transports": "--transport",
    "senders": "--senders",
    "size": "--size",
    "rate": "--rate",
    "seed": "--seed",
    "link": "--link",
    "plot": "--plot",
}
_PROGRESS_AFTER_S = 2.0
_MAX_FLOW_STEPS = 1e8  # flow-hop updates a CLI run may take (~a minute of numpy at ~1e6-1e7 updates/s)
_SCENARIO_BYTES_PER_FLOW = 400.0  # path tuple, label, list slots: 160-190 B measured (tracemalloc), x2
_TOP_LINKS = 5
_VICTIMS_SHOWN = 5


def _refuse_unused(name: str, given: dict[str, bool]) -> None:
    for flag, users in _USERS.items():
        if given[flag] and name not in users:
            raise ValueError(f"{flag}: only the {' and '.join(users)} scenario(s) take it; {name} does not")


#: The permutation's non-blocking leaf-spine: leaves (the hosts spread evenly over them) and spines.
_PERMUTATION_LEAVES = 4
_PERMUTATION_SPINES = 4
#: The fewest --senders a scenario runs and why (others run from one); the permutation also takes only a
#: multiple of its leaves. Nothing is raised to these silently: a run is the hosts asked or refused.
_MIN_SENDERS: dict[str, tuple[int, str]] = {
    "victim": (2, "splits them over two leaves"),
    "all-to-all": (2, "exchanges between ranks"),
    "ring": (2, "passes chunks between ranks"),
    "meta": (2, "exchanges between ranks"),
    "mice": (2, "makes a quarter elephants and the rest mice"),
    "permutation": (_PERMUTATION_LEAVES, f"spreads hosts evenly over {_PERMUTATION_LEAVES} leaves"),
}


def _check_senders(name: str, senders: int) -> None:
    """ValueError naming --senders and its value when ``name`` cannot run that many hosts as asked."""
    low, why = _MIN_SENDERS.get(name, (1, ""))
    if senders < low:
        raise ValueError(f"--senders: the {name} scenario {why}: it needs at least {low}, got {senders}")
    if name == "permutation" and senders % _PERMUTATION_LEAVES:
        raise ValueError(
            f"--senders: the permutation scenario {why}: give a multiple of {_PERMUTATION_LEAVES}, "
            f"got {senders}"
        )


def _scenario(name: str, senders: int, size: float, rate: float, opts: dict[str, Any]) -> Scenario:
    if name == "incast":
        return incast(senders, size, rate)
    if name == "victim":
        return victim(senders // 2, senders - senders // 2, size, rate)
    if name == "permutation":
        per_leaf = senders // _PERMUTATION_LEAVES
        spraying = opts["spraying"] or "even"
        return sprayed_permutation(
            _PERMUTATION_LEAVES,
            per_leaf,
            _PERMUTATION_SPINES,
            size,
            rate,
            spraying=spraying,
            seed=opts["seed"],
        )
    if name == "all-to-all":
        return all_to_all(senders, size, rate, skew=opts["skew"] or 1.0, serial=opts["serial"])
    if name == "mice":
        elephants = max(1, senders // 4)
        return elephants_and_mice(elephants, size, senders - elephants, opts["mouse_size"], rate)
    if name == "checkpoint":
        return checkpoint_burst(senders, size, opts["targets"], rate, rate)
    if name == "ring":
        return chained_ring(senders, opts["steps"] or 2 * (senders - 1), size, rate)
    if name == "meta":
        return meta_job(senders, size, opts["skew"] or 4.0, rate)
    raise ValueError(f"scenario: unknown {name!r}; known: {', '.join(SCENARIOS)}")


class _Counts(NamedTuple):
    """What a scenario's fluid run holds and steps: flows, (flow, hop) entries, links, the flows stepped at
    once (a chain's flows one at a time) and the contention-free time, s."""

    flows: int
    entries: int
    links: int
    at_once: int
    ideal_s: float


def _all_to_all_counts(senders: int, size: float, rate: float, opts: dict[str, Any]) -> _Counts:
    """:func:`all_to_all` on one switch: n (n - 1) two-hop flows; the hot receiver takes (n - 1) skew size."""
    n = senders
    flows = n * (n - 1)
    skew = opts["skew"] or (4.0 if opts.get("meta") else 1.0)
    return _Counts(flows, 2 * flows, 2 * n, n if opts["serial"] else flows, (n - 1) * skew * size / rate)


def _ring_counts(senders: int, size: float, rate: float, opts: dict[str, Any]) -> _Counts:
    """:func:`chained_ring`: n hosts x k chained steps, n flows at once, k size / rate end to end."""
    n = senders
    k = opts["steps"] or 2 * (n - 1)
    return _Counts(n * k, 2 * n * k, 2 * n, n, k * size / rate)


#: Scenarios whose flow count grows faster than --senders, counted before anything is built.
_COUNTS: dict[str, Callable[[int, float, float, dict[str, Any]], _Counts]] = {
    "all-to-all": _all_to_all_counts,
    "meta": lambda n, size, rate, opts: _all_to_all_counts(n, size, rate, {**opts, "meta": True}),
    "ring": _ring_counts,
}


def _built_counts(sc: Scenario) -> _Counts:
    """The counts of a scenario already built (the linear ones)."""
    at_once = len(sc.paths) if sc.after is None else int(np.count_nonzero(sc.after < 0))
    entries = sum(len(p) for p in sc.paths)
    return _Counts(len(sc.paths), entries, sc.capacity_bytes_per_s.size, at_once, _ideal_s(sc))


def _culprit(scenario: str, senders: int, size: float, rate: float, opts: dict[str, Any]) -> str:
    """The option that makes a run long: the one grown most over its default (16 senders, 2 MB, 400 Gb/s,
    64 kB mice, 2 (n - 1) ring steps, a skew of 1 for all-to-all and 4 for meta)."""
    grown = {"--senders": senders / 16, "--size": size / 2e6, "--rate": 50e9 / rate}
    if opts["skew"] is not None:  # the hot receiver's bytes, so the run's length, grow with it
        grown["--skew"] = opts["skew"] / (4.0 if scenario == "meta" else 1.0)
    if scenario == "mice":
        grown["--mouse-size"] = opts["mouse_size"] / 64e3
    if opts["steps"] is not None:
        grown["--steps"] = opts["steps"] / (2 * (senders - 1))
    return max(grown, key=lambda k: grown[k])


def _refuse_large(c: _Counts, names: list[str], culprit: str) -> None:
    """Refuse a run above ``_MAX_FLOW_STEPS`` (steps x entries stepped at once) or the memory limit.

    Memory: the fluid model's arrays (:func:`fluid_bytes`, the largest over ``names``' DCQCN presets) plus
    ``_SCENARIO_BYTES_PER_FLOW`` for the scenario's own per-flow Python objects (path tuple, label).
    """
    steps = c.ideal_s / FluidConfig().dt_s
    work = steps * c.entries * c.at_once / max(c.flows, 1)
    if work > _MAX_FLOW_STEPS:
        raise ValueError(
            f"{culprit}: about {steps:.3g} steps of {FluidConfig().dt_s * 1e6:g} us x {c.at_once:,} flows at "
            f"once ({work:.3g} flow-hop updates, above {_MAX_FLOW_STEPS:.0e}) is too long a run; use a "
            + ("smaller --skew or --size" if culprit == "--skew" else "smaller --size")
            + ", a faster --rate, fewer --senders or --steps"
        )
    cfg = FluidConfig()
    fluid = max(
        fluid_bytes(c.flows, c.entries, c.links, cfg, dcqcn_preset(transport(n).dcqcn_preset)) for n in names
    )
    check_memory(
        f"{c.flows:,} flows over {c.entries:,} (flow, hop) entries",
        fluid + _SCENARIO_BYTES_PER_FLOW * c.flows,
        culprit if culprit in ("--senders", "--steps") else "--senders",
    )


def _link(sc: Scenario, label: str | None) -> int:
    if label is None:
        return sc.watch_link
    if label not in sc.link_labels:
        shown = ", ".join(sc.link_labels[:6])
        raise ValueError(f"--link: no link {label!r} in this scenario; its links are named like {shown}, ...")
    return sc.link_labels.index(label)


class _LazyProgress:
    """A rich progress bar (stderr) that appears once a run has lasted ``_PROGRESS_AFTER_S`` seconds."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.monotonic()
        self.bar: Progress | None = None
        self.tasks: dict[str, Any] = {}

    def update(self, label: str, fraction: float) -> None:
        if not self.enabled or time.monotonic() - self.t0 < _PROGRESS_AFTER_S:
            return
        if self.bar is None:
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                transient=True,
                console=console.__class__(stderr=True),
            )
            self.bar.start()
        if label not in self.tasks:
            self.tasks[label] = self.bar.add_task(label, total=1.0)
        self.bar.update(self.tasks[label], completed=fraction)

    def for_transport(self, name: str) -> Callable[[float], None]:
        return lambda f: self.update(name, f)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _ideal_s(sc: Scenario) -> float:
    """Contention-free lower bound: the busiest link's bytes at its capacity, or the slowest flow alone."""
    load = sc.incidence() @ sc.bytes_per_flow
    path_cap = np.array([sc.capacity_bytes_per_s[list(p)].min() for p in sc.paths])
    start = sc.start_s if sc.start_s is not None else np.zeros(len(sc.paths))
    return float(max((load / sc.capacity_bytes_per_s).max(), (start + sc.bytes_per_flow / path_cap).max()))


def _links(sc: Scenario, res: FluidResult) -> list[dict[str, Any]]:
    """The links with the most pause time, then the largest queues."""
    score = res.link_pause_s / max(res.makespan_s, 1e-30) + res.link_peak_queue_bytes / 1e12
    shown = (res.link_pause_s > 0) | (res.link_peak_queue_bytes >= 1.0)  # a byte or more queued
    order = [int(i) for i in np.argsort(-score, kind="stable")[:_TOP_LINKS] if shown[i]]
    congested = set(res.congested_links.tolist())
    return [
        {
            "link": sc.link_labels[i],
            "pause_s": float(res.link_pause_s[i]),
            "peak_queue_bytes": float(res.link_peak_queue_bytes[i]),
            "mean_queue_bytes": float(res.link_mean_queue_bytes[i]),
            "congested": i in congested,
        }
        for i in order
    ]


def _victims(sc: Scenario, res: FluidResult) -> list[str]:
    """Why each victim is one: the paused link it crosses, its slowdown, the congested root."""
    roots = ", ".join(sc.link_labels[i] for i in res.congested_links) or "none"
    out = []
    for v in res.victims[:_VICTIMS_SHOWN].tolist():
        paused = [link for link in sc.paths[v] if res.link_pause_s[link] > 0]
        worst = max(paused, key=lambda link: res.link_pause_s[link])
        out.append(
            f"{sc.flow_labels[v]}: {res.slowdown[v]:.1f}x its contention-free time; it crosses "
            f"{sc.link_labels[worst]} (paused {res.link_pause_s[worst] * 1e6:.0f} us) but none of the "
            f"congested links ({roots}): head-of-line blocking"
        )
    if res.victims.size > _VICTIMS_SHOWN:
        out.append(f"... and {res.victims.size - _VICTIMS_SHOWN} more")
    return out


def _row(name: str, sc: Scenario, res: FluidResult, ideal: float, watch: int) -> dict[str, Any]:
    return {
        "transport": name,
        "makespan_s": res.makespan_s,
        "ideal_s": ideal,
        "victims": [sc.flow_labels[v] for v in res.victims],
        "victims_why": _victims(sc, res),
        "victim_slowdown": float(res.slowdown[-1]) if sc.name == "victim" else None,
        "pause_s": float(res.link_pause_s.sum()),
        "watch_link": sc.link_labels[watch],
        "watch_peak_queue_bytes": float(res.link_peak_queue_bytes[watch]),
        "watch_mean_queue_bytes": float(res.link_mean_queue_bytes[watch]),
        "watch_pause_s": float(res.link_pause_s[watch]),
        "retransmitted_bytes": float(res.trimmed_bytes.sum()),
        "retransmitted_fraction": res.retransmission_fraction,
        "congested_links": [sc.link_labels[link] for link in res.congested_links],
        "links": _links(sc, res),
        # per message (a sprayed transfer's sub-flows together), against its own bottleneck: the NIC
        "flow_slowdown_median": float(np.nanmedian(sc.message_slowdown(res))),
        "flow_slowdown_max": float(np.nanmax(sc.message_slowdown(res))),
        **_mice(sc, res),
    }


def _mice(sc: Scenario, res: FluidResult) -> dict[str, float]:
    """The mice's median completion: the fluid model's (proportional FIFO, an upper bound) and the FIFO
    one (sojourn behind the queue they meet + size / rate), s; empty for other scenarios."""
    if sc.name != "elephants-and-mice":
        return {}
    mice = np.array([label.startswith("mouse") for label in sc.flow_labels])
    fluid = (res.flow_end_s - res.flow_start_s)[mice]
    return {
        "mice_fct_fluid_median_s": float(np.nanmedian(fluid)),
        "mice_fct_fifo_median_s": float(np.median(res.fifo_fct_s[mice])),
    }


def _print(sc: Scenario, rows: list[dict[str, Any]], bytes_per_flow: float, link_rate: float) -> None:
    console.print(
        f"[bold]{literal(sc.name)}[/]: {len(sc.paths)} flows of {bytes_per_flow / 1e6:g} MB "
        f"at {link_rate * 8 / 1e9:g} Gb/s (fluid queue model, time step 0.5 us)",
        markup=True,
    )
    t = Table(show_edge=False)
    watch = rows[0]["watch_link"]
    for col in (
        "transport",
        "completion (us)",
        "ideal (us)",
        "victims",
        "pause (us, all links)",
        f"queue at {watch} peak/mean (KB)",
        "FCT/ideal median/max",
        "retransmitted",
    ):
        t.add_column(literal(col), justify="right")
    for r in rows:
        t.add_row(
            r["transport"],
            f"{r['makespan_s'] * 1e6:.1f}",
            f"{r['ideal_s'] * 1e6:.1f}",
            str(len(r["victims"])) if len(r["victims"]) > 3 else ", ".join(r["victims"]) or "-",
            f"{r['pause_s'] * 1e6:.1f}",
            f"{r['watch_peak_queue_bytes'] / 1e3:.0f} / {r['watch_mean_queue_bytes'] / 1e3:.0f}",
            f"{r['flow_slowdown_median']:.2f} / {r['flow_slowdown_max']:.2f}",
            f"{r['retransmitted_fraction']:.0%}",
        )
    console.print(t)
    for r in rows:
        if "mice_fct_fifo_median_s" in r:
            console.print(
                f"{r['transport']}: mice FCT median {r['mice_fct_fifo_median_s'] * 1e6:.1f} us in FIFO "
                f"(sojourn + size / rate), {r['mice_fct_fluid_median_s'] * 1e6:.1f} us fluid (upper bound)",
                markup=False,
            )
    for r in rows:
        if r["links"]:
            lt = Table(title=literal(f"{r['transport']}: busiest links"), show_edge=False)
            for col in ("link", "pause (us)", "queue peak/mean (KB)", "congested (root)"):
                lt.add_column(col, justify="right")
            for link in r["links"]:
                lt.add_row(
                    literal(link["link"]),
                    f"{link['pause_s'] * 1e6:.1f}",
                    f"{link['peak_queue_bytes'] / 1e3:.0f} / {link['mean_queue_bytes'] / 1e3:.0f}",
                    "yes" if link["congested"] else "-",
                )
            console.print(lt)
        for line in r["victims_why"]:
            console.print(f"  victim under {r['transport']}: {literal(line)}")


@handle_errors
def transport_command(
    ctx: typer.Context,
    scenario: Annotated[str, typer.Argument(help=f"Traffic: {', '.join(_SCENARIOS)}")] = "victim",
    transports: Annotated[
        list[str] | None,
        typer.Option(
            "--transport", "-t", help=f"Transport(s) to compare: {', '.join(TRANSPORTS)} (repeatable)"
        ),
    ] = None,
    senders: Annotated[
        int,
        typer.Option(
            help="Hosts: incast senders into one port; victim: split over two leaves (>= 2); all-to-all, "
            "ring, meta: ranks (>= 2); mice: a quarter elephants, the rest mice (>= 2); permutation: spread "
            "over 4 leaves (a multiple of 4); checkpoint: writer nodes",
            min=1,
            max=4096,
        ),
    ] = 16,
    size: Annotated[
        str,
        typer.Option(
            "--size", "-s", help="Bytes per flow (all-to-all: per peer; ring: per step; mice: per elephant)"
        ),
    ] = "2 MB",
    rate: Annotated[str, typer.Option(help="Link rate, one direction, e.g. '400 Gb/s'")] = "400 Gb/s",
    seed: Annotated[int, typer.Option(help="Seed of the permutation and of the entropy values", min=0)] = 0,
    spraying: Annotated[
        str | None, typer.Option(help=f"Permutation only: {', '.join(SPRAYING)} (default even)")
    ] = None,
    skew: Annotated[
        float | None,
        typer.Option(
            help="all-to-all, meta: the hot expert (host 0) gets SKEW x the bytes (default 1; meta 4)"
        ),
    ] = None,
    serial: Annotated[
        bool, typer.Option("--serial", help="all-to-all: peer by peer, each step after the previous ACK")
    ] = False,
    steps: Annotated[
        int | None, typer.Option(help="ring: chained steps per host (default 2 (n - 1))", min=1, max=100_000)
    ] = None,
    targets: Annotated[
        int | None, typer.Option(help="checkpoint: storage target ports (default 4)", min=1, max=4096)
    ] = None,
    mouse_size: Annotated[str | None, typer.Option(help="mice: bytes per mouse (default 64 KB)")] = None,
    link: Annotated[
        str | None,
        typer.Option(
            help="The link to report and plot, by label, e.g. 'switch->receiver' (default: the watched)"
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(help="Write the link's queue, throughput and flow rates over time (first transport)"),
    ] = None,
    flows: Annotated[
        int | None,
        typer.Option(
            help="stability: the most flows on the bottleneck, N = 1..FLOWS, at most 1,000 (default 100)",
        ),
    ] = None,
    delay: Annotated[
        list[str] | None,
        typer.Option(
            help="stability: control-loop feedback delay, e.g. '85 us' (repeatable; default 50 and 100 us)"
        ),
    ] = None,
    dcqcn: Annotated[
        str | None,
        typer.Option(
            help="stability: DCQCN preset of the catalogue (default conext16-code, the model as the authors "
            "ran it; conext16-figure: the published figure's parameters)"
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Run a scenario under one or more transports: completion against the contention-free time, victims of
    PFC head-of-line blocking and why, pause time and queues per link, trimmed and retransmitted bytes. The
    ``stability`` scenario instead gives DCQCN's phase margin against flows and feedback delay.

    Times in microseconds (JSON: seconds); sizes in bytes; rates per direction. Exit code 2 on bad input.
    """
    given = {
        "--spraying": spraying is not None,
        "--skew": skew is not None,
        "--serial": serial,
        "--steps": steps is not None,
        "--targets": targets is not None,
        "--mouse-size": mouse_size is not None,
        "--flows": flows is not None,
        "--delay": delay is not None,
        "--dcqcn": dcqcn is not None,
    }
    _check_options(scenario, given, skew, plot)
    _check_senders(scenario, senders)
    if scenario == "stability":
        _refuse_fluid_options(ctx)
        stability_scenario(flows, delay, dcqcn, json_out=json_out)
        return
    names = _transport_names(scenario, transports)
    bytes_per_flow, link_rate, mouse_bytes = _rates_and_sizes(size, rate, mouse_size)
    opts = {
        "spraying": spraying,
        "seed": seed,
        "skew": skew,
        "serial": serial,
        "steps": steps,
        "targets": targets or 4,
        "mouse_size": mouse_bytes,
    }
    culprit = _culprit(scenario, senders, bytes_per_flow, link_rate, opts)
    if scenario in _COUNTS:  # flows grow faster than --senders: refuse from counts, before building
        _refuse_large(_COUNTS[scenario](senders, bytes_per_flow, link_rate, opts), names, culprit)
    sc = _scenario(scenario, senders, bytes_per_flow, link_rate, opts)
    watch = _link(sc, link)
    _refuse_large(_built_counts(sc), names, culprit)
    rows, results = _run_all(sc, names, watch, plot, show_progress=not json_out)
    story = _story(sc, results) if scenario == "meta" else {}
    if json_out:
        emit_json(
            {
                "scenario": sc.name,
                "flows": len(sc.paths),
                "bytes_per_flow": bytes_per_flow,
                "results": rows,
                **story,
            }
        )
        return
    _print(sc, rows, bytes_per_flow, link_rate)
    if story:
        _print_story(story)
    if plot is not None:
        console.print(f"time series of {sc.link_labels[watch]} under {names[0]} written to {plot}")


def _check_options(scenario: str, given: dict[str, bool], skew: float | None, plot: Path | None) -> None:
    """ValueError for an unknown scenario, an option it does not take, an unwritable --plot or a --skew
    under 1."""
    if scenario not in _SCENARIOS:
        raise ValueError(f"scenario: unknown {scenario!r}; known: {', '.join(_SCENARIOS)}")
    _refuse_unused(scenario, given)
    if plot is not None:
        check_plot_path(plot, "--plot")
    if skew is not None and not (skew >= 1 and np.isfinite(skew)):
        raise ValueError(f"--skew: must be a finite number >= 1, got {skew!r}")


def _refuse_fluid_options(ctx: typer.Context) -> None:
    """ValueError naming the first fluid-run option given on the command line (the stability scenario
    runs no fluid model: an option it would drop is refused)."""
    for name, flag in _FLUID_OPTIONS.items():
        source = ctx.get_parameter_source(name)  # Typer's own Click: compared by name
        if source is not None and source.name != "DEFAULT":
            raise ValueError(f"{flag}: the stability scenario runs no fluid model and does not take it")


def _transport_names(scenario: str, transports: list[str] | None) -> list[str]:
    """The transports to run, each known, in order without repeats (default: the Meta story's for meta, the
    lossless, lossy and receiver-driven ones otherwise)."""
    default = list(META_TRANSPORTS) if scenario == "meta" else ["roce-pfc", "roce-dcqcn", "receiver-driven"]
    names = list(
        dict.fromkeys(transports or default + ([] if scenario == "meta" else ["uet-rccc", "uet-lossy", "ib"]))
    )
    for name in names:
        transport(name)
    return names


def _rates_and_sizes(size: str, rate: str, mouse_size: str | None) -> tuple[float, float, float]:
    """(bytes per flow, link rate in bytes/s, bytes per mouse); ValueError for a size under one time step of
    the fluid model (rate x dt bytes), which it cannot resolve."""
    bytes_per_flow = one_size(size, "--size")
    # a fluid-model link may run slower than any adapter: its run length is refused from counts instead
    link_rate = parse_nic_bandwidth(rate, field="--rate", lowest_bits_per_s=0.0)
    mouse_bytes = one_size(mouse_size, "--mouse-size") if mouse_size is not None else 64e3
    step_bytes = link_rate * FluidConfig().dt_s  # the fluid model cannot resolve a flow under one step
    for field, given_bytes in (("--size", bytes_per_flow), ("--mouse-size", mouse_bytes)):
        if (field == "--size" or mouse_size is not None) and given_bytes < step_bytes:
            raise ValueError(
                f"{field}: {given_bytes:g} B is under one time step of the fluid model at --rate "
                f"({FluidConfig().dt_s * 1e6:g} us x {link_rate:g} B/s = {step_bytes:g} B); use at least that"
            )
    return bytes_per_flow, link_rate, mouse_bytes


def _run_all(
    sc: Scenario, names: list[str], watch: int, plot: Path | None, *, show_progress: bool
) -> tuple[list[dict[str, Any]], dict[str, FluidResult]]:
    """Run the scenario under each transport: the table rows and the results by name; the first run traces
    the watched link and plots it when --plot is given."""
    ideal = _ideal_s(sc)
    bar = _LazyProgress(enabled=show_progress)
    rows: list[dict[str, Any]] = []
    results: dict[str, FluidResult] = {}
    try:
        for i, name in enumerate(names):
            cfg = FluidConfig(trace_link=watch if (plot is not None and i == 0) else None)
            res = run_scenario(sc, name, cfg, progress=bar.for_transport(name))
            results[name] = res
            rows.append(_row(name, sc, res, ideal, watch))
            if res.trace is not None and plot is not None:
                from aifabric.report.link_trace import link_trace_plot

                link_trace_plot(res.trace, plot, title=f"{sc.name}, {name}: {sc.link_labels[watch]}")
    finally:
        bar.stop()
    return rows, results


def _print_story(story: dict[str, Any]) -> None:
    """The Meta story's winner, its reason, and why for each transport."""
    console.print(f"[bold]winner: {literal(story['winner'])}[/] -- {literal(story['reason'])}", markup=True)
    for line in story["why"]:
        console.print(f"  {literal(line)}")


def _story(sc: Scenario, results: dict[str, FluidResult]) -> dict[str, Any]:
    """Who wins the Meta story and why (:mod:`aifabric.transport.story`), from the runs already made."""
    rows = story_rows(sc, results)
    win, reason = winner(rows)
    return {
        "winner": win.transport,
        "reason": reason,
        "why": [f"{r.transport}: {r.why}" for r in rows],
        "cold_experts_done_s": {r.transport: r.cold_s for r in rows},
    }
