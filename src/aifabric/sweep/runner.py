"""Evaluate one sweep point: build the cluster variant, then time the collective with the formula engine or
the training step with the step model (:class:`~aifabric.training.step.StepModel`, formula engine for every
communication).

A collective point costs about 50 us of model time, plus building the cluster variant's Topology for its
part counts, cached per variant in each worker process. Executors and the store:
:mod:`aifabric.sweep.parallel`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from aifabric.cluster.presets import list_presets, preset
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.summary import summarize
from aifabric.engines.formula import formula_collective
from aifabric.errors import AifabricError
from aifabric.sweep.grid import SweepPoint, SweepSpec
from aifabric.training.layout import ParallelLayout, Recompute, data_parallel_degree
from aifabric.training.models import get_model
from aifabric.training.step import PARTS, StepModel

__all__ = ["evaluate_point", "swept_design"]


@lru_cache(maxsize=64)
def _variant(cluster: str, changes_json: str, cluster_sha256: str = "") -> tuple[Any, dict[str, Any]]:
    """The cluster variant and its counted parts: switches, transceivers and watts over the same four
    networks (scale-up, scale-out, front-end, management: ``cluster show``'s parts and power);
    ``cluster_sha256`` (the file's content hash) keys the cache on what the file says, not its path."""
    changes: dict[str, Any] = {k: list(v) if isinstance(v, tuple) else v for k, v in json.loads(changes_json)}
    nodes = changes.pop("nodes", None)
    gpus = changes.pop("gpus", None)
    if cluster in list_presets():  # a resized preset picks its tiers after the changes
        spec = preset(cluster, nodes=nodes, gpus=gpus, **changes)
    else:
        spec = resolve_cluster(cluster, nodes=nodes, gpus=gpus)
        spec = spec.with_changes(**changes) if changes else spec
    summary = summarize(spec)
    inv = summary.inventory
    parts = {
        "gpus": spec.n_gpus,
        "switches": sum(line.count for line in inv.lines if line.item == "switch"),
        "transceivers": sum(line.count for line in inv.lines if line.item == "transceiver"),
        "network_watts": inv.total_watts,
        "bisection_bytes_per_s": summary.bisection_bytes_per_s,
    }
    return spec, parts


def swept_design(spec: SweepSpec) -> ClusterSpec | None:
    """The ClusterSpec of the grid's first variant that builds (a design the sweep ran, for a report to
    draw); None when no variant builds."""
    tried: set[tuple[tuple[str, Any], ...]] = set()
    for point in spec.iter_points():
        if point.changes in tried:
            continue
        tried.add(point.changes)
        try:
            return _variant(point.source, json.dumps(point.changes), point.cluster_sha256)[0]
        except (AifabricError, ValueError):
            continue
    return None


def evaluate_point(point: SweepPoint) -> dict[str, Any]:
    """Time one point; a bad variant becomes a row with ``error`` set (the sweep goes on).

    Bad input (AifabricError, ValueError) is recorded as its message; any other exception, a bug, as
    ``internal error: <type>: <message>`` so that one point can never abort the sweep.
    """

    changes_json = json.dumps(point.changes)
    row: dict[str, Any] = {
        "cluster": point.cluster,
        "op": point.op,
        "message_bytes": point.message_bytes,
        "error": "",
    }
    try:
        spec, parts = _variant(point.source, changes_json, point.cluster_sha256)
        if point.train:
            row.update(parts)
            row.update(_train_step(spec, dict(point.train)))
            return row
        r = formula_collective(point.op, point.message_bytes, spec)
    except (AifabricError, ValueError) as err:
        row["error"] = str(err).replace("\n", " ")
        return row
    except Exception as err:  # noqa: BLE001 - recorded on the point's row, the sweep goes on
        row["error"] = f"internal error: {type(err).__name__}: {err}".replace("\n", " ")
        return row
    row.update(parts)
    row.update(
        time_s=r.time_s,
        algbw_bytes_per_s=r.algbw_bytes_per_s,
        busbw_bytes_per_s=r.busbw_bytes_per_s,
        algorithm=r.algorithm,
        protocol=r.protocol,
        bottleneck=r.bottleneck,
    )
    return row


#: The parts of a step that are not communication (never a training point's ``bottleneck``).
_NOT_COMM = ("compute", "memory-bound")


def _train_step(spec: Any, job: dict[str, Any]) -> dict[str, Any]:
    """One training point: the step of ``job`` (model, global_batch and layout keys) on ``spec``.

    The rest of the layout is ``aifabric train``'s defaults (sequence parallel when tp > 1, ZeRO stage 1,
    selective recomputation), dp fills the cluster when not given. Raises ConfigError/ValueError for a
    layout that does not fit.
    """
    model = get_model(job["model"])
    tp, pp, cp = job.get("tp", 1), job.get("pp", 1), job.get("cp", 1)
    dp = job.get("dp") or data_parallel_degree(model, spec.n_gpus, tp=tp, pp=pp, cp=cp, of="the cluster")
    layout = ParallelLayout(
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=job.get("ep", 1),
        microbatch_size=job.get("microbatch", 1),
        global_batch_size=job["global_batch"],
        sequence_parallel=tp > 1,
        zero_stage=1,
        recompute=Recompute.SELECTIVE,
    )
    st = StepModel(model, spec).evaluate(layout)
    comm = {p: st.breakdown_s[p] for p in PARTS if p not in _NOT_COMM}
    return {
        "model": job["model"],
        "tp": tp,
        "pp": pp,
        "dp": dp,
        "cp": cp,
        "ep": layout.ep,
        "microbatch": layout.microbatch_size,
        "global_batch": job["global_batch"],
        "step_s": st.step_s,
        "time_s": st.step_s,
        "tokens_per_s": st.tokens_per_s,
        "mfu": st.mfu,
        "memory_bytes_per_gpu": st.memory.total_bytes,
        "layout": layout.describe(),
        "bottleneck_part": max(comm, key=comm.__getitem__) if any(comm.values()) else "compute",
    }
