"""Run a sweep on local processes, writing each result as it finishes and resuming from the file.

Each point is evaluated with the ``formula`` engine (about 50 us of model time, plus building the cluster
variant's Topology for its part counts, cached per variant in each worker). Points run in a process pool
(``workers``); Ray is not required: for sweeps beyond one machine, run shards of the grid (``shard``,
``n_shards``) on several machines against separate output files.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

from aifabric import budget
from aifabric.cluster.presets import list_presets, preset
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.summary import summarize
from aifabric.engines.formula import formula_collective
from aifabric.errors import AifabricError
from aifabric.sweep.grid import SweepPoint, SweepSpec
from aifabric.sweep.store import ResultStore, done_keys

__all__ = ["COLUMNS", "evaluate_point", "run_sweep"]

COLUMNS = [
    "key",
    "cluster",
    "changes",
    "gpus",
    "op",
    "message_bytes",
    "time_s",
    "algbw_bytes_per_s",
    "busbw_bytes_per_s",
    "algorithm",
    "protocol",
    "bottleneck",
    "switches",
    "transceivers",
    "network_watts",
    "bisection_bytes_per_s",
    "error",
]


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
        "key": point.key,
        "cluster": point.cluster,
        "changes": json.dumps(dict(point.changes)),
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


def run_sweep(
    spec: SweepSpec,
    out: Path,
    *,
    workers: int = 1,
    shard: int = 0,
    n_shards: int = 1,
    on_result: Callable[[dict[str, Any]], None] | None = None,
) -> tuple[int, int]:
    """Evaluate the points of ``spec`` not yet in ``out``; returns (evaluated now, skipped as done).

    Raises ValueError for a bad shard or worker count.
    """
    if workers < 1:
        raise ValueError(f"--workers: must be >= 1, got {workers}")
    if not (n_shards >= 1 and 0 <= shard < n_shards):
        raise ValueError(f"--shard: {shard} of {n_shards} is not a valid shard")
    points = [p for i, p in enumerate(spec.points()) if i % n_shards == shard]
    done = done_keys(out)
    todo = [p for p in points if p.key not in done]
    store = ResultStore(out, COLUMNS)
    try:
        for row in _results(todo, workers):
            store.append(row)
            if on_result is not None:
                on_result(row)
    finally:
        store.close()
    return len(todo), len(points) - len(todo)


#: Seconds between a worker's checks that its parent is alive.
PARENT_POLL_S = 0.5


def _init_worker(parent: int, memory_limit_bytes: float) -> None:
    """Worker initializer: the parent's memory limit (:mod:`aifabric.budget`), and a daemon thread that
    ends this process when ``parent`` is gone (e.g. killed with SIGKILL, which runs no clean-up) instead of
    leaving orphans that wait forever for work.

    A process whose parent dies is re-parented, so ``os.getppid()`` changes (POSIX).
    """
    budget.set_memory_limit(memory_limit_bytes)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="aifabric-parent-watch", daemon=True).start()


def _results(points: list[SweepPoint], workers: int) -> Iterator[dict[str, Any]]:
    if workers == 1 or not points:
        yield from map(evaluate_point, points)
        return
    with ProcessPoolExecutor(
        max_workers=workers,
        initializer=_init_worker,
        initargs=(os.getpid(), budget.memory_limit_bytes()),
    ) as pool:
        chunk = max(1, len(points) // (8 * workers))
        yield from pool.map(evaluate_point, points, chunksize=chunk)
