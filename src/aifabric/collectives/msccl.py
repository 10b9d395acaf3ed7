"""RCCL's MSCCL all-pairs all_reduce: the XML kernels RCCL runs on an 8-GPU xGMI mesh before its tuner looks.

RCCL (ROCm/rccl, AMD's fork of NCCL) loads the MSCCL algorithms of ``tools/msccl-algorithms`` at init and,
for each call, runs the first whose size range, chunk count, rank count and placement match
(``src/misc/msccl/msccl_lifecycle.cc:297-303``), before NCCL's tuner is consulted (``src/collectives.cc``:
``mscclEnqueueCheck`` ahead of ``ncclEnqueueCheck``). On 8 x gfx942 (MI300X, MI325X) RCCL 2.18-2.21
serves all_reduce from 0 B to 11-16 MiB with the all-pairs kernels recorded in the catalogue
(:func:`aifabric.catalog.rccl.msccl_kernels`): every GPU exchanges directly with each of its 7 peers over
that peer's own xGMI link, in one step (``-1pass``: the whole buffer to every peer, then a local reduction)
or two (reduce-scatter of eighths, local reduction, all-gather of the reduced eighth).

The model prices them on the buffer an nccl-tests run reports first, out of place, with 4-byte elements
(``float``, nccl-tests' default): the count ``S / 4`` must divide the kernel's ``nchunksperloop``.
"""

from __future__ import annotations

from aifabric.catalog.rccl import MscclKernel, msccl_archs, msccl_kernels, msccl_single_process
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import SCALE_UP, Algorithm, Cost, make_cost
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import (
    Protocol,
    TierModel,
    base_latency_s,
    hw_latency_s,
    protocol_bandwidth,
    scaleup_bytes_per_s,
)

__all__ = ["msccl_allpairs_applies", "msccl_allpairs_cost", "msccl_kernel"]

#: nccl-tests' default element (``-d float``): 4 bytes; MSCCL's count is of elements.
_ELEMENT_BYTES = 4


def msccl_allpairs_applies(comm: Communicator, tm: TierModel) -> bool:
    """Whether RCCL runs MSCCL all-pairs kernels on this communicator at some size: RCCL's own tables
    (``tm.release.library == "rccl"``: a run that states an RCCL release), one scale-up domain that is a
    full mesh with a link to every peer (xGMI), an architecture whose topology models turn MSCCL on
    (``mscclEnabled=1``: gfx942), a kernel for this rank count, and each rank in its own process
    (``comm.ranks_per_process == 1``): before RCCL 2.21.5 one process driving several GPUs (rccl-tests
    ``-g 8``, or ``-t`` threads) turns MSCCL off, as two ranks of one host with the same pid hash fail
    ``mscclCommCompatible`` (ROCm/rccl rocm-6.2.0 ``src/misc/msccl/msccl_lifecycle.cc:63-77``;
    ``mscclSchedulerInit`` then loads no algorithm, line 164-166); from 2.21.5 its
    ``RCCL_MSCCL_ENABLE_SINGLE_PROCESS`` default 1 accepts them (:func:`msccl_single_process`)."""
    if tm.release.library != "rccl" or comm.n_domains != 1 or tm.mesh_links < comm.n_ranks - 1:
        return False
    version = tm.release.version
    if comm.ranks_per_process > 1 and not msccl_single_process(version):
        return False
    arch_ok = tm.arch.lower() in msccl_archs(version)
    return arch_ok and any(k.ranks == comm.n_ranks for k in msccl_kernels(version))


def msccl_kernel(version: str, n_ranks: int, message_bytes: float) -> MscclKernel | None:
    """The out-of-place kernel RCCL ``version`` runs for an all_reduce of ``message_bytes`` on ``n_ranks``
    (``minBytes <= S <= maxBytes`` and ``count % nchunksperloop == 0``, count = S / 4), or None."""
    count, rest = divmod(int(message_bytes), _ELEMENT_BYTES)
    for k in msccl_kernels(version):
        fits = k.min_bytes <= message_bytes <= k.max_bytes and count > 0 and count % k.chunks_per_loop == 0
        if k.out_of_place and k.ranks == n_ranks and fits and rest == 0:
            return k
    return None


def msccl_allpairs_cost(
    op: Collective, proto: Protocol, message_bytes: float, comm: Communicator, tm: TierModel
) -> Cost | None:
    """One MSCCL all-pairs all_reduce kernel, seconds; None when no kernel serves this size with ``proto``.

    Each of the kernel's ``s`` steps sends ``S p / c`` bytes to every peer at once, each over its own link
    (``p`` peer chunks of ``c`` chunks per loop: the whole buffer in the one-step kernels, an eighth in the
    two-step ones), and pays one xGMI hop::

        T = base[p] + s a_x[p] + s (S p / c) / (B_p / (n - 1))

    ``base`` and ``a_x`` are RCCL's ``baseLat`` and its xGMI ``hwLat`` ring row (tuning_model_5: 12 us and
    0.8 us LL, 17 us and 3.6 us Simple; RCCL's ``baseLat`` is the same for every algorithm, and its tables
    have no MSCCL row); ``B_p`` is the mesh's bus bandwidth for ``n`` ranks (7 x 48 GB/s = 336 GB/s) after
    the protocol's overhead as RCCL's tuner sets it on those links (:func:`~aifabric.collectives.tiers.
    protocol_bandwidth`: LL a quarter), a link's share being ``B_p / (n - 1)``. The local reductions (7
    copies of ``S p / c`` from HBM) are not counted: 8 MiB reads 9.4 MB, 1.8 us at 5.3 TB/s.

    The two-step kernels move ``2 (n-1)/n S`` per GPU over ``n - 1`` links, the ring's bytes at the ring's
    bus bandwidth, in 2 hops instead of ``2 (n - 1)``; the one-step kernel moves ``(n-1) S``, fine only
    while latency rules (RCCL uses it below 25 KiB).

    Examples
    --------
    8 x MI300X, RCCL 2.20.5, 1 KiB: ``allreduce-allpairs-8n-ll-1pass-op``, 12 + 0.8 + 1024 x 7 / 84e9 s
    (hisohara/ai-scripts measured 13.67 us):

    >>> from aifabric.cluster.spec import ClusterSpec
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = ClusterSpec.model_validate({"name": "m", "accelerator": "mi300x", "gpus_per_node": 8,
    ...     "nodes": 1, "scale_up": {"kind": "nvswitch", "link": "infinity-fabric-mi300"}})
    >>> tm = tier_model(spec, nccl_version="2.20.5")
    >>> c = msccl_allpairs_cost(Collective.ALL_REDUCE, Protocol.LL, 1024, Communicator.contiguous(spec), tm)
    >>> round(c.time_s * 1e6, 2)
    12.89
    """
    n = comm.n_ranks
    kernel = msccl_kernel(tm.release.version, n, message_bytes)
    if op is not Collective.ALL_REDUCE or kernel is None or kernel.protocol != proto.value:
        return None
    steps = kernel.steps
    lat = base_latency_s(tm, "ring", proto) + steps * hw_latency_s(tm, tm.intra_kind, "ring", proto)
    bus = scaleup_bytes_per_s(tm, n)
    link = (protocol_bandwidth(tm, proto, bus, 1, tree=False) if tm.nccl else bus) / (n - 1)
    per_link = message_bytes * kernel.peer_chunks / kernel.chunks_per_loop
    t_bw = steps * per_link / link

    def why() -> str:
        return (
            f"RCCL MSCCL {kernel.file}: {steps} direct step(s) to all {n - 1} peers, "
            f"{per_link / 1e3:.1f} kB per {tm.scale_up_words} link each"
        )

    return make_cost(tm, Algorithm.MSCCL, proto, lat, {SCALE_UP: t_bw}, SCALE_UP, why)
