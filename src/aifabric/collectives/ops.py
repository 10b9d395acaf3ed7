"""Collective operations and the nccl-tests bandwidth conventions.

nccl-tests (doc/PERFORMANCE.md) reports for a time ``t`` and a size ``S`` (bytes):

    algbw = S / t
    busbw = algbw x factor,   factor = 2(n-1)/n  all_reduce
                                      (n-1)/n  all_gather, reduce_scatter, all_to_all
                                         1     broadcast, reduce, send_recv

``S`` is the size column of nccl-tests: the buffer of each rank for all_reduce, broadcast, reduce and
send_recv; the whole gathered output for all_gather; the whole input for reduce_scatter; a rank's whole
send buffer for all_to_all. busbw is comparable to the bottleneck link bandwidth whatever ``n``.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Collective", "algbw", "busbw", "busbw_factor"]


class Collective(str, Enum):
    """The collectives aifabric times (names as in NCCL without the ``nccl`` prefix, snake case)."""

    ALL_REDUCE = "all_reduce"
    REDUCE_SCATTER = "reduce_scatter"
    ALL_GATHER = "all_gather"
    ALL_TO_ALL = "all_to_all"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    SEND_RECV = "send_recv"

    @classmethod
    def parse(cls, value: str | Collective) -> Collective:
        """Accept ``all_reduce``, ``allreduce``, ``all-reduce``, ``alltoall``, ``sendrecv``...

        Raises ValueError naming the value and the known names.
        """
        if isinstance(value, Collective):
            return value
        if isinstance(value, str) and value in _BY_VALUE:  # hot path: the canonical name
            return _BY_VALUE[value]
        key = str(value).strip().lower().replace("-", "").replace("_", "")
        for member in cls:
            if member.value.replace("_", "") == key:
                return member
        known = ", ".join(m.value for m in cls)
        raise ValueError(f"collective: unknown collective {value!r}; known: {known}")


_BY_VALUE: dict[str, Collective] = {m.value: m for m in Collective}


def busbw_factor(op: Collective | str, n_ranks: int) -> float:
    """nccl-tests bus-bandwidth factor of ``op`` on ``n_ranks`` ranks (see the module docstring).

    >>> busbw_factor("all_reduce", 8)
    1.75
    """
    op = Collective.parse(op)
    if n_ranks < 1:
        raise ValueError(f"n_ranks must be >= 1, got {n_ranks}")
    if op is Collective.ALL_REDUCE:
        return 2.0 * (n_ranks - 1) / n_ranks
    if op in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER, Collective.ALL_TO_ALL):
        return (n_ranks - 1) / n_ranks
    return 1.0


def algbw(message_bytes: float, time_s: float) -> float:
    """Algorithm bandwidth S / t in bytes/s (nccl-tests)."""
    return message_bytes / time_s if time_s > 0 else float("inf")


def busbw(op: Collective | str, message_bytes: float, time_s: float, n_ranks: int) -> float:
    """Bus bandwidth algbw x factor in bytes/s (nccl-tests).

    >>> busbw("all_reduce", 4294967296, 15870e-6, 8) / 1e9  # case 01: 473.60 GB/s printed
    473.6...
    """
    return algbw(message_bytes, time_s) * busbw_factor(op, n_ranks)
