"""A rank's buffers under nccl-tests' size convention, and the check that they fit the accelerator's HBM.

nccl-tests (NVIDIA/nccl-tests 2.19.6, ``src/*.cu`` ``*GetCollByteCount``) allocates per rank, for a
size ``S`` (bytes) on ``n`` ranks:

    all_reduce, broadcast, reduce, send_recv:  send S,     receive S
    all_gather:                                send S / n, receive S
    reduce_scatter:                            send S,     receive S / n
    all_to_all:                                send S,     receive S

In place (``src/common.cu`` ``startColl``: the send buffer is the receive buffer, at the rank's
``sendInplaceOffset``) a rank holds only the larger of the two, ``S`` for every collective; out of place
it holds both. A size whose in-place buffer exceeds one accelerator's HBM (catalogue ``hbm_capacity``)
cannot run at all and is refused; one that fits only in place runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aifabric.collectives.ops import Collective
from aifabric.errors import ConfigError
from aifabric.units import format_bytes

if TYPE_CHECKING:
    from aifabric.cluster.spec import ClusterSpec

__all__ = ["check_fits_hbm", "out_of_place_bytes", "sizes_split_by_ranks", "sizes_within_hbm"]

#: Collectives whose send and receive buffers differ in size: the smaller is S / n (module docstring).
_SHARDED = frozenset({Collective.ALL_GATHER, Collective.REDUCE_SCATTER})
#: The buffer of size S a rank holds in place where send and receive differ (the other is inside it).
_IN_PLACE_BUFFER = {Collective.ALL_GATHER: "receive buffer", Collective.REDUCE_SCATTER: "send buffer"}


def out_of_place_bytes(op: Collective | str, message_bytes: float, n_ranks: int) -> float:
    """Bytes one rank allocates out of place: send plus receive buffer (module docstring); in place it is
    ``message_bytes`` for every collective.

    >>> out_of_place_bytes("all_reduce", 1e9, 8), out_of_place_bytes("all_gather", 8e9, 8)
    (2000000000.0, 9000000000.0)
    """
    op = Collective.parse(op)
    return message_bytes * (1 + 1 / max(n_ranks, 1) if op in _SHARDED else 2)


def _too_big(op: Collective, message_bytes: float, n_ranks: int, spec: ClusterSpec, field: str) -> str:
    """The one-line refusal of ``message_bytes`` on ``spec``'s accelerator, naming ``field`` and the buffer
    a rank holds even in place."""
    hbm = spec.accelerator_spec.hbm_capacity_bytes
    what = "chip" if spec.scale_up.kind == "torus" else "GPU"
    buffer = _IN_PLACE_BUFFER.get(op, "buffer")
    return (
        f"{field}: {format_bytes(message_bytes)} is more than the {format_bytes(hbm)} HBM of one "
        f"{spec.accelerator} {what}, where a rank's message must fit: {op.value} holds its whole {buffer} "
        f"even in place ({format_bytes(out_of_place_bytes(op, message_bytes, n_ranks))} out of place, send "
        "and receive buffers as nccl-tests allocates them)"
    )


def check_fits_hbm(
    op: Collective | str, message_bytes: float, n_ranks: int, spec: ClusterSpec, field: str = "size"
) -> None:
    """Raise ConfigError naming ``field`` when a rank's in-place buffer (``message_bytes``, bytes) is more
    than one accelerator's HBM."""
    if message_bytes > spec.accelerator_spec.hbm_capacity_bytes:
        raise ConfigError(_too_big(Collective.parse(op), message_bytes, n_ranks, spec, field))


def sizes_within_hbm(
    op: Collective | str, sizes: list[float], n_ranks: int, spec: ClusterSpec, field: str | None
) -> list[float]:
    """The message sizes (bytes, nccl-tests sizes) whose in-place buffer fits one accelerator's HBM.

    ``field`` names the option that gave the largest size (``--size``, ``--max``): a size over the HBM is
    refused; None (a sweep's default top, 16 GiB): the sweep stops at the HBM (``--min`` above it
    refused).

    Raises ConfigError naming ``field`` (or ``--min``), the size and the HBM.
    """
    hbm = spec.accelerator_spec.hbm_capacity_bytes
    kept = [s for s in sizes if s <= hbm]
    if field is None and kept:
        return kept
    if len(kept) < len(sizes):
        big = max(sizes) if field else min(sizes)
        raise ConfigError(_too_big(Collective.parse(op), big, n_ranks, spec, field or "--min"))
    return sizes


#: Collectives that hand each rank (all_to_all: each peer) S / n bytes, and what NCCL counts per rank.
_SPLIT_COUNT = {
    Collective.ALL_GATHER: "a whole count per rank (ncclAllGather's sendcount)",
    Collective.REDUCE_SCATTER: "a whole count per rank (ncclReduceScatter's recvcount)",
    Collective.ALL_TO_ALL: "a whole count per peer (ncclSend/ncclRecv's count)",
}


def sizes_split_by_ranks(
    op: Collective | str, sizes: list[float], n_ranks: int, field: str | None
) -> list[float]:
    """The sizes (bytes) rounded down to a whole byte per rank where ``op`` splits its message over the
    ranks (all_gather, reduce_scatter; all_to_all per peer), as nccl-tests rounds them.

    NCCL takes these calls as a whole element count per rank, and nccl-tests
    (``src/all_gather.cu``, ``reduce_scatter.cu``, ``alltoall.cu`` ``*GetCollByteCount``, 2.19.6) times a
    size ``S`` on ``n`` ranks as ``count / n`` per rank rounded down (and further to 16 bytes, its buffer
    alignment, not a rule of NCCL's). Here one byte per rank is the unit: ``S`` becomes
    ``floor(S / n) n``. A sweep drops the sizes under ``n`` bytes; a size no rank split can carry (under
    ``n`` bytes) given alone, or a sweep left empty, is refused naming ``field`` (``--size``, ``--max``).
    nccl-tests itself would time such a call as 0 bytes.

    >>> sizes_split_by_ranks("all_gather", [100.0, 2.0**30], 16, "--max")
    [96.0, 1073741824.0]
    """
    op = Collective.parse(op)
    if op not in _SPLIT_COUNT or n_ranks < 2:
        return sizes
    kept = [float(s // n_ranks * n_ranks) for s in sizes if s >= n_ranks]
    if kept:
        return kept
    raise ConfigError(
        f"{field or '--max'}: {format_bytes(max(sizes))} cannot be split over {n_ranks} ranks: {op.value} "
        f"takes {_SPLIT_COUNT[op]}; give at least {n_ranks} B"
    )
