"""A training step on the real fabric: its data-parallel traffic through the flow engine on placed ranks.

The formula engine times one DP group alone on an ideal fabric. On a real Clos, every DP group of the job
reduces its gradients at the same moment, the groups' flows share leaf uplinks and spine links, and where the
job's nodes sit (placement) and how flows pick paths (routing) decide how evenly they share. Here the step's
gradient reduction (every DP group of every job at once) runs on the ``links`` or ``flow`` engine
(:func:`aifabric.engines.fabric.simulate_plans`) on the nodes :func:`aifabric.cluster.placement.place_jobs`
gives each job; its time over the formula engine's time for one group alone is the **fabric slowdown**, and
the step is re-timed with every DP collective that much slower (:class:`~aifabric.training.step.StepModel`'s
``slowdown``), overlap rules unchanged. The same is done for the expert all-to-all of every EP group and the
activations every pipeline stage sends to the next (:func:`step_traffic`). TP stays inside the NVLink
domain (formula engine); CP traffic is not built.

Several jobs (``jobs``) of the same layout share the fabric: each is placed on its own nodes, all reduce at
once, and each job's slowdown comes from its own groups' finishing time.

Examples
--------
>>> from aifabric.cluster.presets import preset
>>> from aifabric.training.layout import ParallelLayout
>>> from aifabric.training.models import get_model
>>> lay = ParallelLayout(tp=8, dp=8, microbatch_size=1, global_batch_size=8, recompute="full", zero_stage=1)
>>> fs = fabric_step(get_model("llama3-8b"), lay, preset("dgx-h100-superpod", nodes=8), routing="spray")
>>> fs.dp_slowdowns[0] < 1.2   # one job on whole nodes, packet spraying: about the formula engine's time
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from aifabric.cluster.placement import place_jobs
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import Topology, cached_topology
from aifabric.collectives.algorithms import build_plan
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.plan import CommPlan
from aifabric.engines.fabric import FabricResult, simulate_plans
from aifabric.errors import ConfigError
from aifabric.training.layout import ParallelLayout
from aifabric.training.models import ModelSpec
from aifabric.training.step import StepModel, StepOptions, StepTime

__all__ = ["FabricStep", "fabric_step", "step_traffic"]


@dataclass(frozen=True)
class FabricStep:
    """One layout's step on the fabric, for each of ``jobs`` identical jobs.

    Attributes
    ----------
    steps : tuple of StepTime
        Per job: the step with its DP, EP and PP collectives slowed by that job's fabric slowdowns.
    formula : StepTime
        The same layout on the formula engine (no fabric effects).
    slowdowns : tuple of dict
        Per job, per dimension with traffic (``dp``, ``ep``, ``pp``): the job's collectives of that dimension
        on the fabric (all its groups, and the other jobs', at once) over the formula engine's time for one
        group alone; >= 1.
    formula_s : dict
        Per dimension: formula-engine seconds of one call of one group alone.
    fabric : dict of FabricResult
        Per dimension: the engine's result (per-link bytes, the hottest links, the contention-free ideal).
    placement, routing, engine : str
    """

    steps: tuple[StepTime, ...]
    formula: StepTime
    slowdowns: tuple[dict[str, float], ...]
    formula_s: dict[str, float]
    fabric: dict[str, FabricResult]
    placement: str
    routing: str
    engine: str

    @property
    def dp_slowdowns(self) -> tuple[float, ...]:
        """Per job, the slowdown of its data-parallel gradient reduction."""
        return tuple(s.get("dp", 1.0) for s in self.slowdowns)

    def summary(self) -> str:
        """One line per job: step seconds, the slowdown of each dimension's traffic, throughput."""
        lines = []
        for i, (st, slow) in enumerate(zip(self.steps, self.slowdowns, strict=True)):
            dims = ", ".join(f"{d.upper()} x{k:.2f}" for d, k in slow.items())
            lines.append(
                f"job {i}: {st.step_s:.3f} s/step ({st.step_s / self.formula.step_s - 1:+.1%} vs formula); "
                f"on the fabric ({self.placement}, {self.routing}): {dims}; {st.tokens_per_s:,.0f} tokens/s"
            )
        return "\n".join(lines)


#: One dimension's traffic of one job: its plans, the collective, bytes per rank, the formula engine's group.
_Traffic = tuple[list[CommPlan], str, float, Communicator]


def step_traffic(
    sm: StepModel, layout: ParallelLayout, spec: ClusterSpec, gpus: np.ndarray, *, job: str
) -> dict[str, _Traffic]:
    """The network traffic of one job's step by dimension, as transfer plans on the GPUs ``gpus``.

    Rank r of the job runs on ``gpus[r]``. ``dp``: every DP group (``layout.groups().dp``) reduces the
    busiest stage's dense gradients (all-reduce under ZeRO-0, reduce-scatter otherwise, ``grads`` bytes
    per parameter). ``ep`` (MoE, ep > 1): every EP group's dispatch all-to-all of one MoE layer, a rank's
    tokens x top_k x h x 2 bytes. ``pp`` (pp > 1): every pair of adjacent stages sends one microbatch's
    activations (b s h x 2 bytes, / t with scatter-gather or sequence parallelism). Plan k of dimension d is
    named ``{job}/{d}{k}``.
    """
    m = sm.model
    padded = sm.padded_model(layout)
    st = sm.stage(layout, padded)
    groups = layout.groups(layout.n_gpus)
    out: dict[str, _Traffic] = {}

    def plans(op: str, size: float, members: Sequence[Sequence[int]], dim: str) -> list[CommPlan]:
        # named here: build_plan takes a ``job`` argument but does not set it (collectives/plan.py)
        return [
            dataclasses.replace(build_plan(op, size, spec, gpus[list(g)]), job=f"{job}/{dim}{k}")
            for k, g in enumerate(members)
        ]

    dense, _ = sm.stage_params(layout, padded, st.n_dense, st.n_moe)
    op = "all_reduce" if layout.zero_stage == 0 else "reduce_scatter"
    size = dense * m.bytes_per_param.grads
    out["dp"] = (plans(op, size, list(groups.dp), "dp"), op, size, sm.group(layout, "dp"))
    if m.is_moe and layout.ep > 1:
        tok_rank = st.tokens / layout.tp if (st.sp or layout.tp == 1) else st.tokens
        size = tok_rank * m.top_k * m.hidden_size * 2
        out["ep"] = (
            plans("all_to_all", size, list(groups.ep), "ep"),
            "all_to_all",
            size,
            sm.group(layout, "ep"),
        )
    if layout.pp > 1:
        split = layout.tp if (st.sp or (sm.options.scatter_gather and layout.tp > 1)) else 1
        size = st.tokens * m.hidden_size * 2 / split
        pairs = [(g[i], g[i + 1]) for g in groups.pp for i in range(len(g) - 1)]
        out["pp"] = (plans("send_recv", size, pairs, "pp"), "send_recv", size, sm._pp_pair(layout))
    return out


def fabric_step(
    model: ModelSpec,
    layout: ParallelLayout,
    spec: ClusterSpec,
    *,
    jobs: int = 1,
    placement: str = "packed",
    routing: str = "ecmp",
    engine: str = "flow",
    seed: int = 0,
    options: StepOptions | None = None,
) -> FabricStep:
    """Time ``jobs`` copies of a training layout on the fabric of ``spec`` (see the module docstring).

    Each dimension's traffic (:func:`step_traffic`) runs on its own, every group of every job at once (DP
    at the end of the step, EP and PP during the microbatches); its time over the formula engine's time for
    one group alone is that dimension's slowdown, and the step is re-timed with those slowdowns.

    Parameters
    ----------
    model : ModelSpec
    layout : ParallelLayout
        One job's layout; ``layout.n_gpus`` must be whole nodes.
    spec : ClusterSpec
        The whole cluster; it must hold ``jobs`` x the layout's nodes.
    jobs : int, default 1
        Identical jobs sharing the fabric.
    placement : str, default "packed"
        :data:`aifabric.cluster.placement.PLACEMENTS` (``fragmented``: nodes scattered over the leaves).
    routing : str, default "ecmp"
        ``ecmp``, ``pinning``, ``qp``, ``spray`` or ``adaptive``
        (:func:`~aifabric.engines.fabric.simulate_plans`).
    engine : {"flow", "links"}
    seed : int
        Seed of placement and hashing; same seed, same result.
    options : StepOptions, optional

    Returns
    -------
    FabricStep

    Raises
    ------
    ConfigError
        ``jobs < 1``, dp = 1, a job that is not whole nodes, a cluster too small for the jobs, cp > 1 (the
        fabric traffic of the dp x cp group is not built), an unknown placement, routing or engine; and the
        layout's own errors (:meth:`StepModel.check`).
    Infeasible
        If the layout does not fit in memory.
    """
    job_nodes = _job_nodes(layout, spec, jobs=jobs, engine=engine)
    job_spec = spec.with_changes(nodes=job_nodes, gpus=None) if spec.n_nodes != job_nodes else spec
    formula_sm = StepModel(model, job_spec, options=options)
    formula = formula_sm.evaluate(layout)
    topo = cached_topology(spec)
    placed = place_jobs(topo, [job_nodes] * jobs, policy=placement, seed=seed)
    traffic = [
        step_traffic(formula_sm, layout, spec, np.asarray(g), job=f"job{j}") for j, g in enumerate(placed)
    ]
    slowdowns, formula_s, results = _dim_slowdowns(
        formula_sm, topo, traffic, engine=engine, routing=routing, seed=seed
    )
    steps = tuple(
        StepModel(model, job_spec, options=options, slowdown=slow).evaluate(layout)
        if any(k > 1.0 for k in slow.values())
        else formula
        for slow in slowdowns
    )
    return FabricStep(steps, formula, tuple(slowdowns), formula_s, results, placement, routing, engine)


def _job_nodes(layout: ParallelLayout, spec: ClusterSpec, *, jobs: int, engine: str) -> int:
    """Nodes of one job, after refusing what :func:`fabric_step` cannot time (its ConfigErrors but the
    placement's, the routing's and the layout's own)."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"jobs must be an integer >= 1, got {jobs!r}")
    if engine not in ("flow", "links"):
        raise ConfigError(f"engine: a fabric step runs on the flow or links engine, got {engine!r}")
    if layout.dp == 1:
        raise ConfigError(
            "dp=1: a layout without data parallelism has no gradient traffic to time on the fabric"
        )
    if layout.cp > 1:
        raise ConfigError(f"cp={layout.cp}: the fabric traffic of context-parallel groups is not modelled")
    per_node = spec.gpus_per_node
    if layout.n_gpus % per_node:
        raise ConfigError(f"a job of {layout.n_gpus} GPUs is not whole nodes of {per_node} GPUs")
    job_nodes = layout.n_gpus // per_node
    if jobs * job_nodes > spec.n_nodes:
        raise ConfigError(
            f"jobs: {jobs} jobs x {job_nodes} nodes do not fit the {spec.n_nodes} nodes of {spec.name}: "
            f"each job is tp x pp x dp x cp = {layout.n_gpus} GPUs and a job gets the cluster's GPUs / jobs "
            "(lower --dp or --jobs)"
        )
    return job_nodes


def _dim_slowdowns(
    formula_sm: StepModel,
    topo: Topology,
    traffic: list[dict[str, _Traffic]],
    *,
    engine: str,
    routing: str,
    seed: int,
) -> tuple[list[dict[str, float]], dict[str, float], dict[str, FabricResult]]:
    """Run each dimension's traffic of every job at once: per job and dimension the slowdown
    max(1, fabric time / formula time of one group alone); the formula times; the fabric results."""
    jobs = len(traffic)
    slowdowns: list[dict[str, float]] = [{} for _ in range(jobs)]
    formula_s: dict[str, float] = {}
    results: dict[str, FabricResult] = {}
    for dim, (_, op, size, comm) in traffic[0].items():
        formula_s[dim] = formula_sm.collective(op, size, comm).time_s
        plans = [p for t in traffic for p in t[dim][0]]
        results[dim] = res = simulate_plans(topo, plans, engine=engine, routing=routing, seed=seed)
        for j in range(jobs):
            t_job = max(t for name, t in res.job_time_s.items() if name.startswith(f"job{j}/"))
            # the formula engine's group alone is the reference: the fabric only ever adds time
            slowdowns[j][dim] = max(1.0, t_job / formula_s[dim])
    return slowdowns, formula_s, results
