"""A collective on one rank: NCCL copies the send buffer into the receive buffer, nothing crosses a link.

NCCL does not return at once on a one-rank communicator. ``ncclEnqueueCheck`` hands every collective of
``comm->nRanks == 1`` to ``ncclLaunchOneRank`` (NVIDIA/nccl v2.26.2-1 ``src/enqueue.cc``), which, for any
reduction but a pre-multiplied sum, ``cudaMemcpyAsync``-s the ``count x element size`` bytes of the send
buffer into the receive buffer when the two differ and does nothing when they are the same
(``src/device/onerank.cu``: ``if (dst != src) ncclCudaMemcpyAsync(...)``); a send to oneself with its
matching receive is copied the same way, and skipped in place (``src/enqueue.cc``: "Skip send to self
in-place"). nccl-tests reports the out-of-place column first: the copy. A device-to-device copy reads and
writes each byte of HBM once, so it moves at most half the accelerator's memory bandwidth::

    T = S / (B_HBM / 2) = 2 S / B_HBM          (out of place; in place T = 0: nothing to do)

``B_HBM`` the catalogue's ``hbm_bandwidth`` (the vendor's peak: H100 SXM 3,350 GB/s, datasheet), so ``T``
is the copy's least time; a copy kernel reaches a share of the peak the catalogue does not record. The
host's launch of the copy is the host's cost (:mod:`aifabric.engines.host_launch`: no default is taken,
``--launch-us`` states it and the call takes at least that). algbw = S / T; busbw = 0, every nccl-tests
factor being 0 at one rank but broadcast's, reduce's and send/recv's 1.
"""

from __future__ import annotations

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.ops import Collective, busbw_factor
from aifabric.engines.result import CollectiveResult

__all__ = ["one_rank_copy_s", "one_rank_result"]


def one_rank_copy_s(message_bytes: float, hbm_bytes_per_s: float) -> float:
    """Least time of a one-rank collective out of place, seconds: its ``message_bytes`` read and written
    once in HBM of ``hbm_bytes_per_s`` (bytes/s, reads and writes together), ``2 S / B_HBM``.

    >>> round(one_rank_copy_s(2**30, 3350e9) * 1e3, 3)  # 1 GiB on an H100 SXM: ms
    0.641
    """
    return 2 * message_bytes / hbm_bytes_per_s


def one_rank_result(
    op: Collective, message_bytes: float, spec: ClusterSpec, *, convention: str, engine: str
) -> CollectiveResult:
    """The result of ``op`` on one rank of ``spec`` (module docstring): the out-of-place copy, at ``spec``'s
    accelerator's HBM bandwidth; ``convention`` as the result reports it (``per_direction/nccl``)."""
    hbm = spec.accelerator_spec.hbm_bandwidth_bytes_per_s
    t = one_rank_copy_s(message_bytes, hbm)
    algbw = message_bytes / t
    return CollectiveResult(
        op=op.value,
        message_bytes=float(message_bytes),
        n_ranks=1,
        algorithm="none",
        protocol="none",
        time_s=t,
        latency_s=0.0,
        algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=algbw * busbw_factor(op, 1),
        network_time_s={"memory": t},
        bottleneck="memory",
        explanation=(
            f"1 rank: nothing crosses a link; NCCL copies the send buffer into the receive buffer "
            f"(ncclLaunchOneRank, cudaMemcpyAsync): {message_bytes / 1e9:.4g} GB read and written in HBM at "
            f"{hbm / 1e9:,.0f} GB/s ({spec.accelerator}), at least {t * 1e6:.2f} us; in place it is a no-op"
        ),
        convention=convention,
        engine=engine,
    )
