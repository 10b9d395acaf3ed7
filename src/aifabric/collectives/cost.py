"""The vocabulary of the algorithm registry: :class:`Algorithm` names and a :class:`Cost` breakdown.

Every cost function of the registry (:mod:`aifabric.collectives.algorithms`) has the signature
``cost(op, protocol, message_bytes, comm, tiers) -> Cost | None`` (``None``: this protocol does not run
this algorithm) and returns the latency and the exposed bandwidth seconds per network.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import Enum
from typing import NamedTuple

from aifabric.collectives.tiers import Protocol, TierModel, mesh_ring_bytes_per_s, scaleup_bytes_per_s

__all__ = ["SCALE_OUT", "SCALE_UP", "Algorithm", "Cost", "make_cost", "scaleup_bound"]

SCALE_UP = "scale-up"
SCALE_OUT = "scale-out"


class Algorithm(str, Enum):
    """Every collective algorithm aifabric knows; the value is the CLI's and ``NCCL_ALGO``-like name.

    NCCL's own algorithms (the rows of its tuning tables, :class:`aifabric.catalog.nccl.Algorithm`) keep
    their values here (``ring``, ``tree``, ``nvls``, ``nvls_tree``, ``pat``, ``collnet_direct``,
    ``collnet_chain``); the others are algorithms
    NCCL has no name for (``chain``, ``direct``, ``p2p``: what NCCL runs for broadcast/reduce, all_to_all
    and send/recv; ``hierarchical``, ``flat_ring``: textbook; ``torus``: TPU ICI; ``msccl``: RCCL's MSCCL
    all-pairs all_reduce kernels).
    """

    RING = "ring"
    TREE = "tree"
    NVLS = "nvls"
    NVLS_TREE = "nvls_tree"
    HIERARCHICAL = "hierarchical"
    FLAT_RING = "flat_ring"
    DIRECT = "direct"
    CHAIN = "chain"
    P2P = "p2p"
    TORUS = "torus"
    PAT = "pat"
    COLLNET_DIRECT = "collnet_direct"
    COLLNET_CHAIN = "collnet_chain"
    MSCCL = "msccl"

    @classmethod
    def parse(cls, value: str | Algorithm) -> Algorithm:
        """The member named ``value`` (case-insensitive). Raises ValueError naming it and the known names."""
        if isinstance(value, Algorithm):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            known = ", ".join(a.value for a in cls)
            raise ValueError(f"algorithm: unknown {value!r}; known: {known}") from None


class Cost(NamedTuple):
    """One (algorithm, protocol) timed: ``time_s = latency_s + sum(bandwidth_s.values())``.

    ``bandwidth_s`` maps a network (``scale-up``, ``scale-out``) to its exposed bandwidth seconds;
    ``bottleneck`` names the network that sets the bandwidth term; ``why`` says how, in one sentence
    (formatted on demand: planners time millions of candidates and read none of them). A NamedTuple (frozen
    and typed) rather than a frozen dataclass: the formula engine builds one per candidate per call, and a
    tuple is built in a third of the time.
    """

    algorithm: Algorithm
    protocol: Protocol
    latency_s: float
    bandwidth_s: dict[str, float]
    bottleneck: str
    explain: Callable[[], str]  # the sentence, formatted only for the result a user sees
    time_s: float  # latency_s + sum(bandwidth_s.values()), set by make_cost
    tuner_time_s: float  # what NCCL's tuner costs it (time_s less what its tables do not see): the pick

    @property
    def why(self) -> str:
        """How this algorithm sets the time, in one sentence."""
        return self.explain()


_tuple_new = tuple.__new__


def make_cost(
    tm: TierModel,
    algorithm: Algorithm,
    protocol: Protocol,
    latency_s: float,
    bandwidth_s: dict[str, float],
    bottleneck: str,
    why: Callable[[], str],
    unseen_by_tuner_s: float = 0.0,
) -> Cost:
    """A :class:`Cost`; the latency is dropped under ``efficiency="line_rate"`` (textbook arithmetic).

    ``unseen_by_tuner_s``: the part of the bandwidth seconds that NCCL's tuner (``tuning.cc``) does not
    model (an NVLS pipeline's fill); NCCL picks on ``tuner_time_s = time_s - unseen_by_tuner_s`` and
    runs for ``time_s``.
    """
    latency = latency_s if tm.efficiency == "nccl" else 0.0
    time = latency + sum(bandwidth_s.values())
    # Optimisation: tuple.__new__ skips the NamedTuple's Python-level __new__ (a candidate per call each).
    values = (algorithm, protocol, latency, bandwidth_s, bottleneck, why, time, time - unseen_by_tuner_s)
    return _tuple_new(Cost, values)


def scaleup_bound(
    tm: TierModel, ranks_per_domain: int, n_domains: int, *, exit_gpus: int | None = None
) -> float:
    """Bus bandwidth the scale-up network allows a ring that also crosses domains, bytes/s per direction.

    In each ring channel one GPU of a domain, the exit, sends to its NIC instead of over scale-up; every
    other GPU forwards its hop over scale-up. A GPU that exits in ``e`` of the ``C`` channels sends
    ``1 - e/C`` of the ring's bytes over scale-up, so the busiest GPU (the one exiting least) bounds
    busbw at::

        B_up = B_i / (1 - min_i e_i / C)

    NCCL's graph search (``search.cc``, ``ncclTopoSearchRecNet``/``ncclTopoSearchRecGpu``) starts a ring
    channel at a GPU nearest its NIC and sorts the candidates for the last GPU by their path to that NIC,
    so the channel leaves from the other GPU next to the same NIC; channels rotate over the NICs (and are
    duplicated with the same order). With a NIC per GPU (``exit_gpus >= g``, the default) each of the
    ``g`` GPUs exits in ``C/g`` channels: ``B_up = B_i g / (g - 1)``. With shared NICs (AWS p4d: 4 NICs
    for 8 GPUs, ``exit_gpus`` = 4 < 8) only one GPU per NIC ever exits; the others (the entries at least)
    have ``e = 0`` and carry every channel's bytes over scale-up: ``B_up = B_i``. PXN does not change this:
    a GPU that reaches a NIC through a peer (``PATH_PXN``) sends its NIC-bound bytes to that peer over
    NVLink, so exiting there saves it no scale-up bytes. With one rank per domain (g = 1) no byte crosses
    scale-up and the bound is infinite. On one domain: ``B_i``. ``g`` is ``ranks_per_domain``, the most
    ranks of the communicator in one domain; ``B_i`` is what the scale-up gives ``g`` ranks
    (:func:`~aifabric.collectives.tiers.scaleup_bytes_per_s`: all of it on a switch, ``g - 1`` links on a
    full mesh; on one full-mesh domain, what the rings NCCL builds there get,
    :func:`~aifabric.collectives.tiers.mesh_ring_bytes_per_s`); ``exit_gpus`` the distinct GPUs of a
    domain its ring channels leave from (:func:`~aifabric.collectives.tiers.ring_exit_gpus`).

    No credit (``B_i`` across domains too) where scale-up is the GPU's PCIe link (``intra_kind == "pci"``:
    a PCIe-only node, or SHM through the host under ``NCCL_P2P_DISABLE``/``NCCL_P2P_LEVEL``): the GPU
    reaches its NIC over that same x16 link (GPUDirect RDMA, or staged through host memory), so the link
    carries the NIC hop as well as the g - 1 intra hops, one hop per ring step either way. On NVLink the
    NIC hop leaves through PCIe, not NVLink, and the credit stands.

    8 x H100, 8 NICs, 2 nodes: 370.8 x 8/7 = 423.8 GB/s; 8 x A100 over 4 shared NICs (p4d): B_i.
    """
    g = ranks_per_domain
    if n_domains <= 1:
        return mesh_ring_bytes_per_s(tm, g)
    intra = scaleup_bytes_per_s(tm, g)
    if g <= 1:
        return math.inf
    if tm.intra_kind == "pci" or (exit_gpus is not None and exit_gpus < g):
        return intra
    return intra * g / (g - 1)
