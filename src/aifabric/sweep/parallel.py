"""Run a sweep into a :class:`~aifabric.sweep.db.ResultDB`: points in batches, on local processes.

Each point is evaluated by :func:`aifabric.sweep.runner.evaluate_point` (the formula engine); points go to
the workers in batches (one task = ``batch`` points, so that task overhead stays small against the ~50 us
of model time per point), results come back in completion order, and the driver alone writes them, one
transaction per batch, keyed by :func:`~aifabric.sweep.db.point_hash`. A resumed run skips the hashes
already stored; killed at any moment, it loses at most the batches not yet committed.

Executors (:data:`EXECUTORS`): ``local`` (the default: in the driver for one worker, else a stdlib process
pool whose workers end with the driver, even after SIGKILL) and ``ray`` (the optional extra
``aifabric[ray]``: one ``@ray.remote`` task per batch, taken in completion order with ``ray.wait``; a local
Ray of ``workers`` CPUs, or the cluster at ``address`` / ``RAY_ADDRESS``). A task Ray retries after a worker
dies returns rows already stored, which the store ignores. For several machines without Ray, run shards of
the grid (``shard`` of ``n_shards``) into separate stores.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from aifabric import budget
from aifabric.errors import ConfigError
from aifabric.sweep.db import ResultDB, point_hash
from aifabric.sweep.grid import SweepPoint, SweepSpec
from aifabric.sweep.runner import evaluate_point
from aifabric.version import __version__

__all__ = [
    "EXECUTORS",
    "MAX_POINTS",
    "POINT_BYTES",
    "RESULT_COLUMNS",
    "TRAIN_COLUMNS",
    "check_grid_size",
    "columns_for",
    "point_hashes",
    "run_into_db",
]

#: Default cap on a sweep's points (``--max-points``): at ~50 us of model time per point
#: (:mod:`aifabric.sweep.runner`) a million points is about a minute of one worker, and the driver's
#: state for them (:data:`POINT_BYTES` each) about 300 MB; a larger grid must be asked for explicitly.
MAX_POINTS = 1_000_000

#: Driver memory per point, bytes: the point in the grid, to-do and batch lists (~80 B) and its stored
#: hash in the resume set (~145 B), measured with tracemalloc on a 100,000-point grid (220 B with half
#: the hashes stored), rounded up.
POINT_BYTES = 300


#: Typed result columns of a collective point (SI units), besides the varied fields. ``switches``,
#: ``transceivers`` and ``network_watts`` cover the same four networks (``aifabric cluster show``'s parts).
RESULT_COLUMNS: dict[str, type] = {
    "cluster": str,
    "op": str,
    "message_bytes": float,
    "gpus": int,
    "time_s": float,
    "algbw_bytes_per_s": float,
    "busbw_bytes_per_s": float,
    "algorithm": str,
    "protocol": str,
    "bottleneck": str,
    "switches": int,
    "transceivers": int,
    "network_watts": float,
    "bisection_bytes_per_s": float,
    "error": str,
}


#: Typed columns of a training point (a sweep with ``train:``): the model, the layout (its degrees, and as
#: ``aifabric train`` prints it in ``layout``), the step's figures (``time_s`` holds the step time) and
#: ``bottleneck_part``, the step's largest non-compute part (tp, cp, ep, pp, bubble, dp, optimizer; "compute"
#: when none is exposed). A training row leaves the collective columns ``algorithm`` (NCCL's algorithm) and
#: ``bottleneck`` (a network) empty: one meaning per column.
TRAIN_COLUMNS: dict[str, type] = {
    "model": str,
    "tp": int,
    "pp": int,
    "dp": int,
    "cp": int,
    "ep": int,
    "microbatch": int,
    "global_batch": int,
    "step_s": float,
    "tokens_per_s": float,
    "mfu": float,
    "memory_bytes_per_gpu": float,
    "layout": str,
    "bottleneck_part": str,
}


def _vary_column(name: str) -> str:
    return "vary_" + "".join(c if c.isalnum() else "_" for c in name)


#: The range of an SQLite INTEGER (a signed 64-bit integer, https://www.sqlite.org/datatype3.html).
_INT64 = (-(2**63), 2**63 - 1)


def _one_number(value: Any) -> bool:
    """A vary value that is a list of one number (a one-tier ratio ``[2]``): stored as that number."""
    return (
        isinstance(value, tuple)
        and len(value) == 1
        and isinstance(value[0], (int, float))
        and not isinstance(value[0], bool)
    )


def columns_for(spec: SweepSpec) -> dict[str, type]:
    """Result columns (and :data:`TRAIN_COLUMNS` for a sweep with training points) plus one typed column per
    varied field (``vary_<field>``; a one-number list such as a one-tier ``oversubscription: [2]`` as its
    number, other lists, and integers beyond SQLite's 64-bit INTEGER, stored as text)."""
    cols = dict(RESULT_COLUMNS) | (TRAIN_COLUMNS if spec.train else {})
    for name, values in spec.vary:
        if all(_one_number(v) for v in values):
            kind: type = float
        elif all(
            isinstance(v, int) and not isinstance(v, bool) and _INT64[0] <= v <= _INT64[1] for v in values
        ):
            kind = int
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            kind = float
        else:
            kind = str
        cols[_vary_column(name)] = kind
    return cols


def _hash(p: SweepPoint) -> str:
    return point_hash(p.params, model_version=__version__)


def point_hashes(spec: SweepSpec) -> set[str]:
    """The stored keys of every point of the grid (all shards): what an export of this sweep holds, not
    the rows of another sweep or of an earlier version of its cluster file sharing the store."""
    return {_hash(p) for p in spec.iter_points()}


def _evaluate_batch(points: list[SweepPoint]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for p in points:
        row = evaluate_point(p)
        row.update({_vary_column(k): v for k, v in p.changes})
        out.append((_hash(p), row))
    return out


Rows = list[tuple[str, dict[str, Any]]]


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


def _local(batches: list[list[SweepPoint]], workers: int, address: str | None) -> Iterator[Rows]:
    if workers == 1:
        yield from map(_evaluate_batch, batches)
        return
    with ProcessPoolExecutor(
        max_workers=workers,
        initializer=_init_worker,
        initargs=(os.getpid(), budget.memory_limit_bytes()),
    ) as pool:
        for fut in as_completed([pool.submit(_evaluate_batch, b) for b in batches]):
            yield fut.result()


#: Seconds to wait for a Ray cluster's port to accept a TCP connection before ``--address`` is refused
#: (ray.init itself retries for minutes against an address where nothing listens). A live head on a LAN
#: answers a connect in milliseconds; 5 s leaves room for a slow WAN link.
RAY_CONNECT_TIMEOUT_S = 5.0


def _check_ray_address(address: str | None) -> None:
    """Raise ConfigError unless a TCP connection to ``address`` (``host:port`` or ``ray://host:port``)
    opens within :data:`RAY_CONNECT_TIMEOUT_S`. ``auto``, ``local`` and None are left to Ray."""
    if address is None:
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep:
        return
    if not port.isdigit():
        raise ConfigError(f"--address: {address!r} has no port number (host:port or ray://host:port)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_TIMEOUT_S).close()
    except OSError:
        raise ConfigError(f"--address: no Ray cluster at {address}") from None


def _ray(batches: list[list[SweepPoint]], workers: int, address: str | None) -> Iterator[Rows]:
    try:
        import ray
    except ImportError as err:
        raise ConfigError("--executor ray: ray is not installed (pip install 'aifabric[ray]')") from err
    started = not ray.is_initialized()
    if started:
        _check_ray_address(address if address is not None else os.environ.get("RAY_ADDRESS"))
        local = address is None and "RAY_ADDRESS" not in os.environ
        ray.init(
            address=address,
            logging_level=logging.ERROR,
            num_cpus=workers if local else None,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path)}} if local else None,
        )
    task = ray.remote(_evaluate_batch)
    try:
        pending = [task.remote(b) for b in batches]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
    finally:
        if started:
            ray.shutdown()


#: Executor name -> batch runner (one registry; the CLI's choices read it).
EXECUTORS: dict[str, Callable[[list[list[SweepPoint]], int, str | None], Iterator[Rows]]] = {
    "local": _local,
    "ray": _ray,
}


def check_grid_size(
    spec: SweepSpec, max_points: int | None = MAX_POINTS, *, shard: int = 0, n_shards: int = 1
) -> int:
    """Points of this shard of the grid (counted, not expanded: the grid's ``i % n_shards == shard``).

    Raises ConfigError above ``max_points`` (None: no cap), or when the driver's state for them (points x
    :data:`POINT_BYTES`) exceeds the memory limit (:func:`aifabric.budget.check_memory`).
    """
    n = len(range(shard, spec.n_points, n_shards))
    if max_points is not None and n > max_points:
        sizes = " x ".join(str(len(v)) for _, v in spec.vary) or "1"
        per = spec.n_points // max(1, math.prod(len(v) for _, v in spec.vary))
        of = f", shard {shard} of {n_shards}" if n_shards > 1 else ""
        raise ConfigError(
            f"vary: the grid has {n:,} points to run ({sizes} variants x {per:,} per variant{of}), "
            f"above --max-points {max_points:,}; "
            "shrink the grid, split it with --shards, or raise --max-points"
        )
    budget.check_memory(f"the sweep's {n:,} points", n * POINT_BYTES, "vary")
    return n


def run_into_db(
    spec: SweepSpec,
    db_path: str | Path,
    *,
    workers: int = 1,
    executor: str = "local",
    batch: int = 64,
    address: str | None = None,
    shard: int = 0,
    n_shards: int = 1,
    on_batch: Callable[[int], None] | None = None,
    max_points: int | None = MAX_POINTS,
) -> tuple[int, int]:
    """Evaluate the points of ``spec`` not yet in the database; returns (evaluated now, skipped as done).

    Parameters
    ----------
    spec : SweepSpec
    db_path : str or Path
        SQLite file (created).
    workers : int
        Worker processes (>= 1): of the ``local`` executor (1: in the driver), or a local Ray's CPUs.
    executor : {"local", "ray"}
    batch : int
        Points per task and per committed transaction (>= 1).
    address : str, optional
        ``ray`` only: the Ray cluster (``auto``, ``ray://host:10001``); default a local Ray of ``workers``
        CPUs, or ``RAY_ADDRESS``.
    shard, n_shards : int
        Evaluate only the points ``i`` of the grid with ``i % n_shards == shard`` (one machine's share).
    on_batch : callable, optional
        Called with the number of points of each batch stored.
    max_points : int, optional
        Refuse a grid of more points (:func:`check_grid_size`); None: no cap but the memory limit.

    Raises
    ------
    ConfigError
        An unknown executor, ``address`` without ``ray``, ``ray`` not installed or no Ray cluster at
        ``address``, or a grid above ``max_points`` or the memory limit.
    ValueError
        ``workers`` or ``batch`` < 1, a bad shard, or a file that is not a sweep database.
    """
    runner = EXECUTORS.get(executor)
    if runner is None:
        raise ConfigError(f"--executor: unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    if address is not None and executor != "ray":
        raise ConfigError(f"--address: only --executor ray connects to a cluster (not {executor})")
    if workers < 1:
        raise ValueError(f"--workers: must be >= 1, got {workers}")
    if batch < 1:
        raise ValueError(f"--batch: must be >= 1, got {batch}")
    if not (n_shards >= 1 and 0 <= shard < n_shards):
        raise ValueError(f"--shard: {shard} of {n_shards} is not a valid shard")
    check_grid_size(spec, max_points, shard=shard, n_shards=n_shards)
    points = [p for i, p in enumerate(spec.iter_points()) if i % n_shards == shard]
    db = ResultDB(db_path, columns_for(spec))
    try:
        done = db.done()
        todo = [p for p in points if _hash(p) not in done]
        n = len(todo)
        per = max(1, min(batch, math.ceil(n / max(1, 4 * workers)))) if n else batch
        batches = [todo[i : i + per] for i in range(0, n, per)]
        for rows in runner(batches, workers, address):
            db.add(rows)
            if on_batch is not None:
                on_batch(len(rows))
    finally:
        db.close()
    return n, len(points) - n
