"""Chrome / Perfetto trace-event JSON of a training step, a collective and a fabric scenario.

The files open in https://ui.perfetto.dev and chrome://tracing. Format (Trace Event Format, Google,
https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU; Perfetto's notes on JSON,
google/perfetto docs/getting-started/other-formats.md): an object ``{"traceEvents": [...],
"displayTimeUnit": "ns"}``; ``ph: "X"`` complete events with ``ts`` and ``dur`` in **microseconds**;
``ph: "M"`` metadata events naming processes and threads (``process_name``, ``thread_name``,
``thread_sort_index``); ``ph: "C"`` counters. X events on one ``(pid, tid)`` must nest, so every stream that
overlaps another gets its own thread.

A training step (:func:`step_trace`) is drawn from :class:`~aifabric.training.step.StepTime`:

- one thread per stream: compute (GEMMs and memory-bound work), TP, CP, EP, PP, the pipeline bubble, DP,
  the optimizer; each thread name gives its rank group (ranks / scale-up domains);
- the critical path: the parts of ``breakdown_s`` laid end to end in the order of
  :data:`~aifabric.training.step.PARTS`, one slice (``cat: "exposed"``) each, so their durations add up to
  ``step_s``; a communication part holds one nested slice per collective (``cat: "exposed.call"``);
- what the model overlaps: each collective's ``hidden_s`` is a slice (``cat: "hidden"``) on the
  ``<dim> overlapped`` thread of its group, inside the compute span; the model says how much is hidden, not
  when, so these slices start with the compute span, back to back.

A collective (:func:`collective_trace`) is its total time, then its per-network exposed times back to back
(``network_time_s`` sums to ``time_s``); with the links/flow engines, one thread per link tier with its
utilisation and one per most-loaded link with the flows that load it. A fabric scenario
(:func:`scenario_trace`) is one thread per job (its completion time; its CommPlan stages listed in the
slice's args, since the engines report no per-stage times), per tier and per most-loaded link.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aifabric.engines.result import CollectiveResult
from aifabric.report.paths import check_output_path
from aifabric.training.step import PARTS

if TYPE_CHECKING:
    from aifabric.engines.fabric import FabricResult
    from aifabric.engines.scenario import Scenario
    from aifabric.training.step import StepTime

__all__ = ["collective_trace", "scenario_trace", "step_trace", "write_trace"]

_US = 1e6  # trace timestamps are microseconds
#: Stream (thread) of each critical-path part, and the CommItem dims it holds.
_STREAMS: dict[str, tuple[str, tuple[str, ...]]] = {
    "compute": ("compute (GEMM + memory-bound)", ()),
    "memory-bound": ("compute (GEMM + memory-bound)", ()),
    "tp": ("TP", ("tp",)),
    "cp": ("CP", ("cp",)),
    "ep": ("EP", ("ep",)),
    "pp": ("PP", ("pp",)),
    "bubble": ("pipeline bubble", ()),
    "dp": ("DP", ("dp", "expert_dp")),
    "optimizer": ("optimizer", ()),
}


class _Builder:
    """Collects events; threads are numbered in the order they are first used."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.threads: dict[tuple[int, str], int] = {}

    def process(self, pid: int, name: str) -> None:
        self.events.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": name}})

    def tid(self, pid: int, name: str) -> int:
        key = (pid, name)
        if key not in self.threads:
            tid = len(self.threads) + 1
            self.threads[key] = tid
            self.events.append(
                {"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": name}}
            )
            self.events.append(
                {"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}}
            )
        return self.threads[key]

    def slice(
        self, pid: int, thread: str, name: str, cat: str, start_s: float, dur_s: float, **args: Any
    ) -> None:
        self.events.append(
            {
                "ph": "X",
                "pid": pid,
                "tid": self.tid(pid, thread),
                "name": name,
                "cat": cat,
                "ts": start_s * _US,
                "dur": dur_s * _US,
                "args": args,
            }
        )

    def counter(self, pid: int, name: str, at_s: float, **series: float) -> None:
        self.events.append({"ph": "C", "pid": pid, "tid": 0, "name": name, "ts": at_s * _US, "args": series})

    def trace(self, **meta: Any) -> dict[str, Any]:
        return {"displayTimeUnit": "ns", "traceEvents": self.events, "otherData": meta}


def step_trace(st: StepTime) -> dict[str, Any]:
    """The trace of one training step (see the module docstring for the layout).

    Parameters
    ----------
    st : StepTime
        From :meth:`~aifabric.training.step.StepModel.evaluate` (or ``af.train(...).result``).

    Returns
    -------
    dict
        ``{"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}``, JSON-ready.

    Examples
    --------
    >>> import aifabric as af
    >>> st = af.train("megatron-gpt-39.1b", "dgx-h100-superpod", nodes=64, tp=8, pp=2, microbatch=4).result
    >>> tr = step_trace(st)
    >>> exposed = sum(e["dur"] for e in tr["traceEvents"] if e.get("cat") == "exposed")
    >>> abs(exposed / 1e6 - st.step_s) < 1e-9 * st.step_s
    True
    """

    b = _Builder()
    pid = 1
    b.process(pid, f"{st.model} step on {st.n_gpus} GPUs: {st.layout.describe()} (rank 0, busiest stage)")
    groups = {c.dim: f"{c.n_ranks} ranks / {c.n_domains} domain(s)" for c in st.comms}

    def thread(part: str) -> str:
        label, dims = _STREAMS[part]
        where = [groups[d] for d in dims if d in groups]
        return f"{label} group ({where[0]})" if where else label

    t = 0.0
    for part in PARTS:
        sec = st.breakdown_s[part]
        if sec <= 0:
            continue
        name = thread(part)
        b.slice(pid, name, part, "exposed", t, sec, seconds=sec, share=sec / st.step_s)
        inner = t
        for c in st.comms:
            if c.dim in _STREAMS[part][1] and c.exposed_s > 0:
                dur = min(c.exposed_s, t + sec - inner)  # nests inside the part's slice
                b.slice(pid, name, f"{c.op} {c.dim}", "exposed.call", inner, dur, **_comm_args(c))
                inner += dur
        t += sec
    hidden_at: dict[str, float] = {}
    for c in st.comms:  # what the model overlaps with compute, on the group's own thread
        if c.hidden_s <= 0:
            continue
        part = "dp" if c.dim == "expert_dp" else c.dim
        name = f"{thread(part)} overlapped"
        start = hidden_at.get(name, 0.0)
        b.slice(pid, name, f"{c.op} {c.dim}", "hidden", start, c.hidden_s, **_comm_args(c))
        hidden_at[name] = start + c.hidden_s
    return b.trace(
        kind="train",
        model=st.model,
        cluster=st.cluster,
        layout=st.layout.describe(),
        step_s=st.step_s,
        units="ts and dur in microseconds",
    )


def _comm_args(c: Any) -> dict[str, Any]:
    return {
        "op": c.op,
        "message_bytes": c.message_bytes,
        "calls": c.count,
        "seconds_per_call": c.time_s,
        "algorithm": c.algorithm,
        "ranks": c.n_ranks,
        "domains": c.n_domains,
        "exposed_s": c.exposed_s,
        "hidden_s": c.hidden_s,
    }


def collective_trace(results: CollectiveResult | Sequence[CollectiveResult]) -> dict[str, Any]:
    """The trace of one collective, or of several sizes run one after another (as nccl-tests does): each
    call's total, its per-network exposed times, and its link tiers and loaded links (links/flow engines).

    Examples
    --------
    >>> import aifabric as af
    >>> tr = collective_trace(af.collective_time("all_reduce", "1 GiB", ranks=16).result)
    >>> sorted({e["ph"] for e in tr["traceEvents"]})
    ['M', 'X']
    """

    runs = [results] if isinstance(results, CollectiveResult) else list(results)
    if not runs:
        raise ValueError("collective_trace: no results to trace")
    b = _Builder()
    pid = 1
    r0 = runs[0]
    b.process(pid, f"{r0.op} on {r0.n_ranks} ranks ({r0.engine} engine)")
    t0 = 0.0
    for r in runs:
        b.slice(
            pid,
            "collective",
            f"{r.op} {r.message_bytes:.0f} B ({r.algorithm}/{r.protocol})",
            "total",
            t0,
            r.time_s,
            message_bytes=r.message_bytes,
            algbw_bytes_per_s=r.algbw_bytes_per_s,
            busbw_bytes_per_s=r.busbw_bytes_per_s,
            bottleneck=r.bottleneck,
            explanation=r.explanation,
        )
        t = t0
        for net, sec in r.network_time_s.items():
            if sec > 0:
                b.slice(pid, f"network {net}", net, "exposed", t, sec, seconds=sec)
                t += sec
        fabric = r.extra.get("fabric")
        if fabric is not None:
            _fabric_threads(b, pid, fabric, start_s=t0)
        t0 += r.time_s
    return b.trace(kind="collective", op=r0.op, time_s=t0, units="ts and dur in microseconds")


def scenario_trace(sc: Scenario) -> dict[str, Any]:
    """The trace of a fabric scenario: one thread per job, per link tier and per most-loaded link."""
    b = _Builder()
    pid = 1
    b.process(pid, f"{sc.traffic} on {sc.spec.name} ({sc.engine}/{sc.routing}, seed {sc.seed})")
    stages = {
        p.job: [f"{st.label or k}: {st.n_transfers} transfers x {st.repeat}" for k, st in enumerate(p.stages)]
        for p in sc.plans
    }
    for job in sc.jobs:
        b.slice(
            pid,
            f"job {job.job}",
            sc.traffic,
            "job",
            0.0,
            job.time_s,
            ranks=job.n_ranks,
            busbw_bytes_per_s=job.busbw_bytes_per_s,
            stages=stages.get(job.job, []),
        )
    _fabric_threads(b, pid, sc.result, tiers=sc.tiers)
    return b.trace(kind="fabric", traffic=sc.traffic, time_s=sc.result.time_s, units="ts and dur in us")


def _fabric_threads(
    b: _Builder,
    pid: int,
    res: FabricResult,
    tiers: dict[str, tuple[float, float]] | None = None,
    start_s: float = 0.0,
) -> None:
    for tier, (mean, peak) in (tiers or {}).items():
        b.slice(
            pid,
            f"tier {tier}",
            f"{tier}: mean {mean:.0%}, max {peak:.0%}",
            "tier",
            start_s,
            res.time_s,
            mean_utilisation=mean,
            max_utilisation=peak,
        )
    for lr in res.top_links:
        b.slice(
            pid,
            f"link {lr.label} ({lr.tier})",
            f"{lr.utilisation:.0%} of capacity",
            "link",
            start_s,
            res.time_s,
            utilisation=lr.utilisation,
            bytes=lr.bytes_,
            n_flows=lr.n_flows,
            flows=list(lr.flows),
        )
        b.counter(pid, f"utilisation {lr.label}", start_s, utilisation=lr.utilisation)


def write_trace(trace: dict[str, Any], path: str | Path, option: str = "--trace") -> Path:
    """Write ``trace`` as JSON to ``path`` (``.json``), creating missing folders.

    Raises
    ------
    ValueError
        If ``path`` does not end in ``.json``, is a directory, or cannot be written; names ``option``.
    """
    p = check_trace_path(path, option)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(trace))
    except OSError as err:
        raise ValueError(f"{option}: cannot write {str(p)!r}: {err.strerror}") from err
    return p


def check_trace_path(path: str | Path, option: str = "--trace") -> Path:
    """Check, before any work, that a trace can be written to ``path``; raises ValueError naming ``option``.

    >>> check_trace_path("out/step.txt")
    Traceback (most recent call last):
    ...
    ValueError: --trace: 'out/step.txt' must end in .json (Chrome/Perfetto trace JSON)
    """
    p = Path(path)
    if p.is_dir():
        raise ValueError(
            f"{option}: {str(path)!r} is a directory; give a file such as {str(p / 'step.json')!r}"
        )
    if p.suffix.lower() != ".json":
        raise ValueError(f"{option}: {str(path)!r} must end in .json (Chrome/Perfetto trace JSON)")
    return check_output_path(p, option)  # folders above, devices, names too long, writable
