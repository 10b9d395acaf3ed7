"""The Python front door: ``import aifabric as af``, then ``af.cluster``, ``af.collective_time``,
``af.fabric``, ``af.train``, ``af.plan``, ``af.inspect``, ``af.sweep``.

Each function is a thin wrapper over one library call (named in its docstring) and returns an
:class:`~aifabric.report.answer.Answer`: ``.to_dict()`` (JSON-ready, SI units), ``.to_pandas()`` (its
table), ``_repr_html_`` (for notebooks); the library's own result object is ``.result``, and its attributes
read straight through (``af.train(...).step_s``). Sizes take bytes or a string with a unit (``"1 GiB"``).
Bad input raises :class:`~aifabric.errors.ConfigError` or ``ValueError`` naming the field and the value.

Examples
--------
>>> import aifabric as af
>>> r = af.collective_time("all_reduce", "1 GiB", "dgx-h100-superpod", ranks=8)
>>> r.algorithm, round(r.busbw_bytes_per_s / 1e9)
('nvls', 465)
>>> r.to_pandas().columns.tolist()
['algorithm', 'protocol', 'time_s']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.summary import ClusterSummary, summarize
from aifabric.collectives.communicator import Communicator
from aifabric.discovery.compare import read_log
from aifabric.discovery.node import inspect_node_text
from aifabric.engines.api import collective_time as _collective_time
from aifabric.engines.scenario import run_scenario
from aifabric.errors import ConfigError
from aifabric.report.answer import Answer
from aifabric.sweep.db import ResultDB
from aifabric.sweep.grid import SweepSpec, load_sweep
from aifabric.sweep.parallel import columns_for, run_into_db
from aifabric.training.layout import DEFAULT_ORDER, ParallelLayout, Recompute, data_parallel_degree
from aifabric.training.models import get_model
from aifabric.training.planner import plan as _plan
from aifabric.training.step import PARTS, StepModel, StepOptions
from aifabric.units import format_bytes, one_size

__all__ = ["cluster", "collective_time", "fabric", "inspect", "plan", "sweep", "train"]

DEFAULT_CLUSTER = "dgx-h100-superpod"
ClusterLike = ClusterSpec | str | Path | Answer | ClusterSummary


def _spec(cluster: ClusterLike, *, nodes: int | None = None, gpus: int | None = None) -> ClusterSpec:
    """The ClusterSpec of a preset name, a cluster YAML path, a ClusterSpec, an :func:`cluster` answer or
    its ``result`` (a ClusterSummary), resized to ``nodes`` / ``gpus`` when given.

    Raises ConfigError naming ``cluster`` for anything else, or an unknown preset or file.
    """
    if isinstance(cluster, Answer):
        cluster = cluster.result
    if isinstance(cluster, ClusterSummary):
        cluster = cluster.spec
    if not isinstance(cluster, ClusterSpec | str | Path):
        raise ConfigError(
            f"cluster: expected a preset name, a cluster YAML path, a ClusterSpec or af.cluster(...), "
            f"got {type(cluster).__name__}"
        )
    return resolve_cluster(cluster, nodes=nodes, gpus=gpus)


def _bytes(size: float | str, name: str) -> float:
    return float(one_size(size, name)) if isinstance(size, str) else float(size)


def _gbs(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:,.1f} GB/s"


def cluster(
    cluster: ClusterLike = DEFAULT_CLUSTER, *, nodes: int | None = None, gpus: int | None = None
) -> Answer:
    """Headline figures of a cluster: GPUs, domains, tiers, bandwidth ladder, bisection, parts and power.

    Wraps :func:`aifabric.cluster.summary.summarize`; ``result`` is a
    :class:`~aifabric.cluster.summary.ClusterSummary`. Rows: the bandwidth ladder, one rung per row
    (bytes/s per direction per GPU).

    Examples
    --------
    >>> import aifabric as af
    >>> c = af.cluster("dgx-h100-superpod", nodes=32)
    >>> c.n_gpus, c.domain_gpus, c.tiers
    (256, 8, 2)
    """
    spec = _spec(cluster, nodes=nodes, gpus=gpus)

    s = summarize(spec)
    rows = tuple(
        {
            "level": r.level,
            "network": r.network,
            "per_direction_bytes_per_s": r.per_direction_bytes_per_s,
            "documented_bytes_per_s": r.documented_bytes_per_s,
            "convention": r.convention,
        }
        for r in s.rungs
    )
    data = {
        "name": spec.name,
        "n_gpus": s.n_gpus,
        "n_nodes": s.n_nodes,
        "domain_gpus": s.domain_gpus,
        "tiers": s.tiers,
        "planes": s.planes,
        "oversubscription": list(s.oversubscription),
        "bisection_bytes_per_s": s.bisection_bytes_per_s,
        "network_watts": s.inventory.total_watts,
        "ladder": list(rows),
        "spec": spec.model_dump(mode="json"),
    }
    headline = (
        ("GPUs", f"{s.n_gpus} in {s.n_nodes} nodes"),
        ("scale-up domain", f"{s.domain_gpus} GPUs"),
        ("scale-out", s.scale_out_words),
        ("bisection (per direction)", _gbs(s.bisection_bytes_per_s)),
        ("network power", f"{s.inventory.total_watts / 1e3:,.1f} kW"),
    )
    return Answer("cluster", f"cluster {spec.name}", s, headline, data, rows)


def collective_time(
    op: str,
    size: float | str,
    cluster: ClusterLike = DEFAULT_CLUSTER,
    *,
    ranks: int | Sequence[int] | Communicator | None = None,
    engine: str = "formula",
    nodes: int | None = None,
    **options: Any,
) -> Answer:
    """Time one collective of ``size`` (bytes or ``"1 GiB"``, nccl-tests convention) on ``cluster``.

    ``cluster``: a preset name, a cluster YAML path, a ClusterSpec, or :func:`cluster`'s answer (or its
    ``result``), resized to ``nodes`` when given. Wraps :func:`aifabric.engines.api.collective_time` (same
    ``ranks``, ``engine`` and ``options``);
    ``result`` is a :class:`~aifabric.engines.result.CollectiveResult`. Rows: every (algorithm, protocol)
    the engine considered, fastest first.

    Examples
    --------
    >>> import aifabric as af
    >>> r = af.collective_time("all_gather", 2**30, "dgx-h100-superpod", ranks=16)
    >>> r.bottleneck, r.n_ranks
    ('scale-out', 16)
    >>> c = af.cluster("dgx-h100-superpod", nodes=4)
    >>> af.collective_time("all_reduce", "1 GiB", c).n_ranks
    32
    >>> af.collective_time("all_reduce", 1e9, nodes=2).n_ranks
    16
    """
    spec = _spec(cluster, nodes=nodes)
    r = _collective_time(op, _bytes(size, "size"), spec, ranks=ranks, engine=engine, **options)
    rows = tuple({"algorithm": c.algorithm, "protocol": c.protocol, "time_s": c.time_s} for c in r.candidates)
    headline = (
        ("time", f"{r.time_s * 1e6:,.1f} us"),
        ("algbw", _gbs(r.algbw_bytes_per_s)),
        ("busbw (nccl-tests)", _gbs(r.busbw_bytes_per_s)),
        ("algorithm / protocol", f"{r.algorithm} / {r.protocol}"),
        ("bottleneck", r.bottleneck),
    )
    title = f"{r.op} of {format_bytes(r.message_bytes)} on {r.n_ranks} ranks ({r.engine} engine)"
    return Answer("collective", title, r, headline, r.to_dict(), rows)


def fabric(
    traffic: str = "all_reduce",
    cluster: ClusterLike = DEFAULT_CLUSTER,
    *,
    size: float | str = "1 GiB",
    nodes: int | None = None,
    **options: Any,
) -> Answer:
    """Run a collective or a traffic pattern on the cluster's real links (``aifabric fabric``).

    Wraps :func:`aifabric.engines.scenario.run_scenario` (``options``: ``engine``, ``routing``, ``qps``,
    ``polarized``, ``jobs``, ``job_nodes``, ``placement``, ``algorithm``, ``fail``, ``seed``, ``top``);
    ``result`` is a :class:`~aifabric.engines.scenario.Scenario`. Rows: the most loaded links, with the
    flows that load them. Utilisation = bytes / (capacity x completion time).

    Examples
    --------
    >>> import aifabric as af
    >>> f = af.fabric("all_reduce", "dgx-h100-superpod", size="256 MiB", nodes=4, engine="links",
    ...               routing="spray")
    >>> f.to_pandas().columns.tolist()[:3]
    ['link', 'tier', 'utilisation']
    """

    spec = _spec(cluster, nodes=nodes)
    sc = run_scenario(traffic, _bytes(size, "size"), spec, **options)
    res = sc.result
    rows = tuple(
        {
            "link": lr.label,
            "tier": lr.tier,
            "utilisation": lr.utilisation,
            "bytes": lr.bytes_,
            "n_flows": lr.n_flows,
            "flows": ", ".join(lr.flows),
        }
        for lr in res.top_links
    )
    hot = res.top_links[0].label if res.top_links else "none"
    data = {
        "traffic": sc.traffic,
        "message_bytes": sc.message_bytes,
        "cluster": spec.name,
        **sc.run_fields(),
        "bottleneck_link": hot,
        "jobs": [j.__dict__ for j in sc.jobs],
        "tiers": {k: {"mean_utilisation": a, "max_utilisation": b} for k, (a, b) in sc.tiers.items()},
        "top_links": list(rows),
        "failed_links": res.failed_links,
    }
    headline = (
        ("completion", f"{res.time_s * 1e3:,.3f} ms"),
        ("contention-free ideal", f"{res.ideal_time_s * 1e3:,.3f} ms"),
        ("efficiency", f"{res.efficiency:.1%}"),
        ("bottleneck link", hot),
    )
    title = f"{traffic} of {format_bytes(sc.message_bytes)} on {spec.name} ({sc.engine}/{sc.routing})"
    return Answer("fabric", title, sc, headline, data, rows)


def _step_rows(st: Any) -> tuple[dict[str, Any], ...]:

    return tuple(
        {"part": p, "seconds": st.breakdown_s[p], "share": st.breakdown_s[p] / st.step_s} for p in PARTS
    )


def train(
    model: str = "gpt3-175b",
    cluster: ClusterLike = DEFAULT_CLUSTER,
    *,
    nodes: int | None = None,
    tp: int = 1,
    pp: int = 1,
    dp: int | None = None,
    cp: int = 1,
    ep: int = 1,
    vp: int = 1,
    microbatch: int = 1,
    global_batch: int = 1536,
    recompute: str = "selective",
    zero: int = 1,
    sequence_parallel: bool = True,
    order: str | None = None,
    options: Any = None,
) -> Answer:
    """Time one training step of a layout (``aifabric train``); ``dp`` defaults to GPUs / (tp pp cp).

    Wraps :meth:`aifabric.training.step.StepModel.evaluate` (``options``: a
    :class:`~aifabric.training.step.StepOptions`); ``result`` is a
    :class:`~aifabric.training.step.StepTime`. Rows: the critical-path parts of the step (seconds; they
    add up to ``step_s``).

    Examples
    --------
    >>> import aifabric as af
    >>> st = af.train("megatron-gpt-39.1b", "dgx-h100-superpod", nodes=64, tp=8, pp=2, microbatch=4)
    >>> round(float(st.to_pandas()["seconds"].sum() / st.step_s), 9)
    1.0
    """

    spec = _spec(cluster, nodes=nodes)
    spec_model = get_model(model)
    if dp is None:
        dp = data_parallel_degree(spec_model, spec.n_gpus, tp=tp, pp=pp, cp=cp, of="the cluster")
    layout = ParallelLayout(
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=ep,
        virtual_pipeline_stages=vp,
        microbatch_size=microbatch,
        global_batch_size=global_batch,
        recompute=Recompute.parse(recompute),
        zero_stage=zero,
        sequence_parallel=sequence_parallel and tp > 1,
        order=order or DEFAULT_ORDER,
    )
    st = StepModel(spec_model, spec, options=options or StepOptions()).evaluate(layout)
    return Answer(
        "train",
        f"{st.model} on {st.n_gpus} GPUs of {st.cluster}: {layout.describe()}",
        st,
        _step_headline(st),
        st.to_dict(),
        _step_rows(st),
    )


def _step_headline(st: Any) -> tuple[tuple[str, str], ...]:
    return (
        ("step time", f"{st.step_s:.4f} s"),
        ("throughput", f"{st.tokens_per_s:,.0f} tokens/s"),
        ("MFU", f"{st.mfu:.1%}"),
        ("bubble (share of the step)", f"{st.bubble_share:.1%}"),
        ("memory per GPU", f"{st.memory.total_bytes / 1e9:.1f} GB"),
    )


def plan(
    model: str = "gpt3-175b",
    cluster: ClusterLike = DEFAULT_CLUSTER,
    *,
    nodes: int | None = None,
    global_batch: int = 1536,
    top: int = 5,
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    cp: int | None = None,
    ep: int | None = None,
    options: Any = None,
) -> Answer:
    """Search the layouts of a training job and rank them by throughput (``aifabric plan``).

    Wraps :func:`aifabric.training.planner.plan` (a given ``tp``, ``pp``, ``dp``, ``cp`` or ``ep`` is forced);
    ``result`` is a :class:`~aifabric.training.planner.PlanResult`. Rows: the ``top`` layouts, fastest
    first, with their step time (s) and critical-path parts (s).

    Examples
    --------
    >>> import aifabric as af
    >>> p = af.plan("megatron-gpt-39.1b", "dgx-h100-superpod", nodes=64, top=3)
    >>> len(p.to_pandas()), p.to_dict()["winner"]["step_s"] == p.best.step_s
    (3, True)
    """

    spec = _spec(cluster, nodes=nodes)
    spec_model = get_model(model)
    sm = StepModel(spec_model, spec, options=options or StepOptions())
    res = _plan(spec_model, spec, global_batch, top=top, step_model=sm, tp=tp, pp=pp, dp=dp, cp=cp, ep=ep)
    rows = tuple(
        {
            "rank": i,
            "layout": st.layout.describe(),
            "step_s": st.step_s,
            "tokens_per_s": st.tokens_per_s,
            "mfu": st.mfu,
            **{f"{p}_s": st.breakdown_s[p] for p in PARTS},
            "memory_bytes_per_gpu": st.memory.total_bytes,
        }
        for i, st in enumerate(res.ranked, 1)
    )
    data = {
        "model": res.model,
        "cluster": res.cluster,
        "n_gpus": res.n_gpus,
        "global_batch_size": res.global_batch_size,
        "n_evaluated": res.n_evaluated,
        "n_feasible": res.n_feasible,
        "winner": res.best.to_dict(),
        "ranked": list(rows),
        "why": res.why(sm),
    }
    headline = (("winner", res.best.layout.describe()), *_step_headline(res.best))
    title = f"plan: {res.model} on {res.n_gpus} GPUs of {res.cluster}, {res.n_feasible} feasible layouts"
    return Answer("plan", title, res, headline, data, rows)


def inspect(source: str | Path, *, gpu: str | None = None, nic_speed: str | None = None) -> Answer:
    """What a machine is, from ``nvidia-smi topo -m`` output or an NCCL topology XML (``aifabric inspect``).

    ``source`` is a file path, or the text itself (a string with a newline). Wraps
    :func:`aifabric.discovery.node.inspect_node_text`; ``result`` is the list of
    :class:`~aifabric.discovery.node.NodeInspection` (one per node described). Rows: one per GPU-NIC path
    (its GPUDirect RDMA verdict).

    Examples
    --------
    >>> import aifabric as af
    >>> text = "\\tGPU0\\tGPU1\\nGPU0\\t X \\tNV12\\nGPU1\\tNV12\\t X \\n"
    >>> af.inspect(text).to_dict()["nodes"][0]["gpus"]
    ['GPU0', 'GPU1']
    """

    if isinstance(source, str) and "\n" in source:
        text, name = source, "<text>"
    else:
        text, name = read_log(source)
    nodes = inspect_node_text(text, source=name, gpu=gpu, nic_speed=nic_speed)
    dicts = [n.to_dict() for n in nodes]
    rows = tuple({"node": k, **g} for k, d in enumerate(dicts) for g in d["gdr"])
    first = dicts[0]
    headline = (
        ("nodes described", str(len(dicts))),
        ("GPUs (first node)", str(len(first["gpus"]))),
        ("NICs (first node)", str(len(first["nics"]))),
        ("accelerator", str(first["accelerator"])),
    )
    return Answer("inspect", f"inspect {name}", nodes, headline, {"nodes": dicts}, rows)


def sweep(
    spec: Any,
    db: str | Path,
    *,
    workers: int = 1,
    executor: str = "local",
    batch: int = 256,
    address: str | None = None,
) -> Answer:
    """Run (or resume) a design-space sweep into the SQLite store ``db`` and return every row stored there.

    ``spec`` is a :class:`~aifabric.sweep.grid.SweepSpec`, its mapping, or a sweep YAML path. Wraps
    :func:`aifabric.sweep.parallel.run_into_db` (``executor``: ``local``, ``ray``);
    ``result`` is ``(evaluated now, skipped as done)``. Rows: the store's typed rows (SI units).

    Examples
    --------
    >>> import tempfile, aifabric as af
    >>> grid = {"cluster": "dgx-h100-superpod", "vary": {"nodes": [16, 32]},
    ...         "collectives": [{"op": "all_reduce", "sizes": ["1 GiB"]}]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     s = af.sweep(grid, f"{d}/sweep.db")
    >>> s.result, len(s.to_pandas())
    ((2, 0), 2)
    """

    if isinstance(spec, dict):
        spec = SweepSpec.from_dict(spec)
    elif not isinstance(spec, SweepSpec):
        spec = load_sweep(spec)
    path = Path(db)
    done = run_into_db(spec, path, workers=workers, executor=executor, batch=batch, address=address)
    store = ResultDB(path, columns_for(spec))
    try:
        frame = store.to_pandas()
    finally:
        store.close()
    rows = tuple(frame.to_dict("records"))
    headline = (
        ("points", str(len(rows))),
        ("evaluated now", str(done[0])),
        ("resumed as done", str(done[1])),
    )
    data = {"store": str(path), "rows": [{k: _plain(v) for k, v in r.items()} for r in rows]}
    return Answer("sweep", f"sweep into {path}", done, headline, data, rows)


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: pandas' missing values become None, numpy scalars Python numbers."""
    import pandas as pd

    if value is pd.NA or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value
