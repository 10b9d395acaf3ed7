"""Evaluate one sweep point: build the cluster variant and time the collective with the formula engine.

Each point costs about 50 us of model time, plus building the cluster variant's Topology for its part
counts, cached per variant in each worker process. Executors and the store: :mod:`aifabric.sweep.parallel`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from aifabric.cluster.presets import list_presets, preset
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.summary import summarize
from aifabric.engines.formula import formula_collective
from aifabric.errors import AifabricError
from aifabric.sweep.grid import SweepPoint

__all__ = ["evaluate_point"]


@lru_cache(maxsize=64)
def _variant(cluster: str, changes_json: str) -> tuple[Any, dict[str, Any]]:

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
        "switches": inv.count("scale-out", "switch"),
        "transceivers": inv.count("scale-out", "transceiver"),
        "network_watts": inv.total_watts,
        "bisection_bytes_per_s": summary.bisection_bytes_per_s,
    }
    return spec, parts


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
        spec, parts = _variant(point.cluster, changes_json)
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
