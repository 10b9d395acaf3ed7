"""The records of an nccl-tests result table: the run's parameters, its ranks, and each row's results.

Built by :func:`aifabric.discovery.nccl_tests.parse_nccl_tests`; a whole table is
:class:`aifabric.discovery.nccl_tests.PerfTable`. Units are SI: seconds and bytes/s (nccl-tests prints
microseconds and GB/s, 1 GB = 1e9 B; NVIDIA, nccl-tests ``doc/PERFORMANCE.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "COLLECTIVES",
    "DTYPE_BYTES",
    "PerfResult",
    "PerfRow",
    "RankInfo",
    "RunParameters",
]

#: Collectives of nccl-tests, named as their binaries without ``_perf``.
COLLECTIVES: frozenset[str] = frozenset(
    {
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "alltoall",
        "broadcast",
        "reduce",
        "sendrecv",
        "hypercube",
        "gather",
        "scatter",
    }
)
DTYPE_BYTES = {
    "int8": 1,
    "uint8": 1,
    "char": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "f8e4m3": 1,
    "f8e5m2": 1,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "int": 4,
    "float": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
    "float64": 8,
}


@dataclass(frozen=True)
class RunParameters:
    """The ``# nThread ... nGpus ... minBytes ...`` line: how nccl-tests was invoked.

    Every field is None when the line does not give it.

    Attributes
    ----------
    n_threads, n_gpus : int or None
        Threads per process (``-t``) and GPUs per thread (``-g``); ranks = processes x threads x GPUs.
    min_bytes, max_bytes : int or None
        Size range swept, bytes.
    step_factor, step_bytes : int or None
        Multiplicative (``-f``) or additive (``-i``) step between sizes.
    warmup_iters, iters, agg_iters : int or None
        Iterations before timing, timed iterations, operations aggregated per iteration.
    validation : bool or None
        Whether results were checked (``-c``).
    graph_launches : int or None
        CUDA graph launches per iteration (``-G``), 0 when graphs are not used.
    """

    n_threads: int | None = None
    n_gpus: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    step_factor: int | None = None
    step_bytes: int | None = None
    warmup_iters: int | None = None
    iters: int | None = None
    agg_iters: int | None = None
    validation: bool | None = None
    graph_launches: int | None = None


@dataclass(frozen=True)
class RankInfo:
    """Where one rank ran, from a ``#  Rank  3 Group  0 Pid 1234 on host device  3 [0x19] NVIDIA H100`` line.

    The condensed form ``#  Ranks 0-7 on host devices 0-7 [bus ids]`` gives no GPU name or pid.
    """

    rank: int
    host: str
    device: int | None
    bus_id: str | None
    gpu_name: str | None
    pid: int | None = None
    group: int | None = None


@dataclass(frozen=True)
class PerfResult:
    """One half (out-of-place or in-place) of a result row.

    Attributes
    ----------
    time_s : float
        Average time of one operation, seconds (printed in us).
    algbw_bytes_per_s : float
        Algorithm bandwidth, size / time, bytes/s (printed in GB/s = 1e9 B/s).
    busbw_bytes_per_s : float
        Bus bandwidth, algbw x the collective's factor, bytes/s (printed in GB/s).
    wrong : int or None
        ``#wrong`` column: elements that failed validation (None for ``N/A`` or the old layout).
    error : float or None
        ``error`` column of the old layout: largest relative error (None in the new layout).
    time_reconstructed : bool
        True when the time was printed in parentheses, e.g. ``(413.7)``: not measured but reconstructed
        by whoever published the log.
    """

    time_s: float
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    wrong: int | None = None
    error: float | None = None
    time_reconstructed: bool = False


@dataclass(frozen=True)
class PerfRow:
    """One message size of a table.

    Attributes
    ----------
    size_bytes : int
        The ``size`` column: bytes of the larger of the send and receive buffers (the whole gathered
        output for all_gather, a rank's whole send buffer for alltoall).
    count : int
        Elements passed to the NCCL call.
    dtype : str
        Element type as printed (``float``, ``bfloat16``, ...).
    redop : str or None
        Reduction as printed (``sum``, ``none``...); None without the column or when blank (hypercube).
    root : int or None
        Root rank, -1 for collectives without one; None in the old layout.
    out_of_place, in_place : PerfResult or None
        The two measurements (None where the table lacks that half).
    line : int
        1-based line of the row in the input.
    """

    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: PerfResult | None
    in_place: PerfResult | None
    line: int
