"""Communicator: a set of ranks placed on GPUs, summarised the way cost models need it.

The formula engine needs counts, not lists: ranks, ranks per scale-up domain, domains spanned, and how
many of a rank's peers sit behind the same leaf (scalable unit) and the same pod. A communicator made with
:meth:`Communicator.contiguous` is O(1) to build; one from explicit GPU ids costs one ``numpy.unique``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache, cached_property
from typing import TYPE_CHECKING

from aifabric.cluster.clos import clos_shape
from aifabric.cluster.dragonfly import dragonfly_shape
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError
from aifabric.lazy_import import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded by from_gpus only: a contiguous communicator needs no numpy

__all__ = ["Communicator", "resolve_communicator"]


@dataclass(frozen=True)
class Communicator:
    """Placement summary of one communicator.

    Attributes
    ----------
    n_ranks : int
        Ranks.
    ranks_per_domain : int
        Largest number of ranks in one scale-up domain (NVLink domain).
    n_domains : int
        Scale-up domains spanned.
    ranks_per_node : int
        Largest number of ranks in one node (server).
    ranks_per_su : int
        Largest number of ranks under one scalable unit (the nodes sharing a set of rail leaves).
    ranks_per_pod : int
        Largest number of ranks in one three-tier pod (= n_ranks on two tiers).
    min_ranks_per_domain : int
        Smallest number of ranks in a domain the communicator uses (its NICs bound rings and trees).
    min_nic_gpus_per_domain : int
        The NICs the ranks of the sparsest domain reach, in GPUs' shares: NICs used x ``gpus_per_nic``
        (``= min_ranks_per_domain`` when no NIC is shared). Ranks on 2 of the 8 GPUs of a p4d node (4 NICs,
        2 GPUs each) reach 1 NIC (2 shares) when they share one, 2 NICs (4 shares) when they do not.
    gpus : tuple[int, ...] or None
        The GPU ids, when given explicitly.
    ranks_per_process : int
        Most ranks one process drives (default 1: mpirun / torchrun, a process per GPU; nccl-tests
        ``-g 8`` or ``-t 8``: 8). RCCL turns MSCCL off when two ranks of a host share a process
        (ROCm/rccl ``src/misc/msccl/msccl_lifecycle.cc`` ``mscclCommCompatible``: same hostHash and pidHash).
    """

    n_ranks: int
    ranks_per_domain: int
    n_domains: int
    ranks_per_node: int
    ranks_per_su: int
    ranks_per_pod: int
    gpus: tuple[int, ...] | None = None
    min_ranks_per_domain: int = 0
    min_nic_gpus_per_domain: int = 0
    ranks_per_process: int = 1

    def __post_init__(self) -> None:
        if self.ranks_per_process < 1:
            raise ConfigError(f"ranks_per_process: must be >= 1, got {self.ranks_per_process}")
        if self.min_ranks_per_domain <= 0:
            object.__setattr__(self, "min_ranks_per_domain", self.ranks_per_domain)
        if self.min_nic_gpus_per_domain <= 0:
            object.__setattr__(self, "min_nic_gpus_per_domain", self.min_ranks_per_domain)

    @cached_property
    def shape(self) -> tuple[int, int, int, int, int, int, int, int, int]:
        """Every count of the summary (all fields but ``gpus``): what cost models read, so a key for what
        they derive from a communicator (:meth:`aifabric.collectives.tiers.TierModel.memo`)."""
        return (
            self.n_ranks,
            self.ranks_per_domain,
            self.n_domains,
            self.ranks_per_node,
            self.ranks_per_su,
            self.ranks_per_pod,
            self.min_ranks_per_domain,
            self.min_nic_gpus_per_domain,
            self.ranks_per_process,
        )

    def in_processes_of(self, gpus_per_process: int) -> Communicator:
        """This communicator with ``gpus_per_process`` of a node's ranks in each process: nccl-tests ``-g N``
        (one host thread driving N GPUs) or ``-t N`` puts the N ranks it drives in one process, at most the
        ranks of one node (a process runs on one host). Unchanged when that is no more than
        ``ranks_per_process`` already or ``gpus_per_process`` is not an integer (the caller refuses it).

        RCCL reads it: two ranks of one host and pid turn MSCCL off (ROCm/rccl
        ``src/misc/msccl/msccl_lifecycle.cc`` ``mscclCommCompatible``;
        :func:`aifabric.collectives.msccl.msccl_allpairs_applies`).

        >>> from aifabric.cluster.presets import preset
        >>> comm = Communicator.contiguous(preset("h100-ib-2node"))
        >>> comm.in_processes_of(8).ranks_per_process, comm.in_processes_of(1).ranks_per_process
        (8, 1)
        """
        if isinstance(gpus_per_process, bool) or not isinstance(gpus_per_process, int):
            return self
        most = min(gpus_per_process, self.ranks_per_node)
        return self if most <= self.ranks_per_process else replace(self, ranks_per_process=most)

    @property
    def uniform(self) -> bool:
        """Every domain holds the same number of ranks."""
        return self.ranks_per_domain * self.n_domains == self.n_ranks

    @classmethod
    def contiguous(cls, spec: ClusterSpec, n_ranks: int | None = None, *, stride: int = 1) -> Communicator:
        """Ranks on GPUs ``0, stride, 2 stride, ...`` (default: every GPU of the cluster, in order).

        Raises ConfigError if the ranks do not fit the cluster.
        """
        n = spec.n_gpus if n_ranks is None else int(n_ranks)
        if n < 1:
            raise ConfigError(f"ranks: need at least 1 rank, got {n}")
        if stride < 1:
            raise ConfigError(f"stride: must be >= 1, got {stride}")
        if (n - 1) * stride + 1 > spec.n_gpus:
            raise ConfigError(
                f"ranks: {n} ranks at stride {stride} need {(n - 1) * stride + 1} GPUs; the cluster has "
                f"{spec.n_gpus}"
            )
        per_dom = max(1, spec.domain_gpus // stride) if stride <= spec.domain_gpus else 1
        per_dom = min(per_dom, n)
        per_node = min(n, max(1, spec.gpus_per_node // stride) if stride <= spec.gpus_per_node else 1)
        su_gpus, pod_gpus = _su_pod_gpus(spec)
        per_su = min(n, max(1, su_gpus // stride))
        per_pod = min(n, max(1, pod_gpus // stride))
        n_dom = -(-n // per_dom)
        last = min(per_dom, n - per_dom * (n_dom - 1))
        nic_gpus = _strided_nic_gpus(spec, last, per_node, stride)
        return cls(n, per_dom, n_dom, per_node, per_su, per_pod, None, last, nic_gpus)

    @classmethod
    def from_gpus(cls, spec: ClusterSpec, gpus: Sequence[int] | np.ndarray) -> Communicator:
        """Ranks on the given GPU ids (rank i on ``gpus[i]``).

        Raises ConfigError for an empty list, a repeated GPU or an id outside the cluster.
        """
        arr = np.asarray(gpus, dtype=np.int64)
        if arr.ndim != 1 or arr.size == 0:
            raise ConfigError("ranks: give at least one GPU id")
        if arr.min() < 0 or arr.max() >= spec.n_gpus:
            bad = int(arr[(arr < 0) | (arr >= spec.n_gpus)][0])
            raise ConfigError(f"ranks: GPU id {bad} is outside the cluster (0..{spec.n_gpus - 1})")
        if np.unique(arr).size != arr.size:
            raise ConfigError("ranks: a GPU appears twice in the communicator")
        su_gpus, pod_gpus = _su_pod_gpus(spec)

        def most(key: np.ndarray) -> tuple[int, int]:
            _, counts = np.unique(key, return_counts=True)
            return int(counts.max()), int(counts.size)

        _, dom_counts = np.unique(arr // spec.domain_gpus, return_counts=True)
        per_dom, n_dom = int(dom_counts.max()), int(dom_counts.size)
        per_node, _ = most(arr // spec.gpus_per_node)
        per_su, _ = most(arr // su_gpus)
        per_pod, _ = most(arr // pod_gpus)
        return cls(
            int(arr.size),
            per_dom,
            n_dom,
            per_node,
            per_su,
            per_pod,
            tuple(int(g) for g in arr),
            int(dom_counts.min()),
            _placed_nic_gpus(spec, arr),
        )


def _gpus_per_nic(spec: ClusterSpec) -> int:
    return spec.scale_out.gpus_per_nic if spec.scale_out else 1


def _strided_nic_gpus(spec: ClusterSpec, ranks: int, per_node: int, stride: int) -> int:
    """NIC shares (NICs used x ``gpus_per_nic``) of ``ranks`` ranks at ``stride`` filling nodes of
    ``per_node`` ranks: a node's ``r`` ranks on local GPUs ``0, s, .., (r-1) s`` use ``r`` NICs when
    ``s >= k`` and ``floor((r-1) s / k) + 1`` when ``s < k`` (``k = gpus_per_nic``)."""
    k = _gpus_per_nic(spec)
    if k == 1:
        return ranks

    def nics(r: int) -> int:
        return 0 if r == 0 else (r if stride >= k else (r - 1) * stride // k + 1)

    full, rest = divmod(ranks, per_node)
    return k * (full * nics(per_node) + nics(rest))


def _placed_nic_gpus(spec: ClusterSpec, arr: np.ndarray) -> int:
    """NIC shares (NICs used x ``gpus_per_nic``) of the domain whose ranks reach the fewest NICs."""
    k = _gpus_per_nic(spec)
    if k == 1:
        return int(np.unique(arr // spec.domain_gpus, return_counts=True)[1].min())
    nic = np.unique(arr // k)  # GPU ids of a node are consecutive and k divides gpus_per_node
    _, per_domain = np.unique(nic * k // spec.domain_gpus, return_counts=True)
    return int(per_domain.min()) * k


@cache
def _su_pod_gpus(spec: ClusterSpec) -> tuple[int, int]:
    """GPUs under one scalable unit (rail leaf group; a dragonfly's group) and one pod; the whole cluster if
    not applicable.

    Cached per spec (ClusterSpec is frozen and hashable): every contiguous communicator of a planner
    search asks for it. A cluster of one scale-up domain (one node of an HGX cluster) sends nothing over
    its scale-out fabric, so its Clos is not built for this: a leaf ratio only more nodes realise (2:1 on
    the one port per rail leaf of one node) does not refuse a run that never reaches the leaf.
    """
    if spec.scale_out is None or spec.n_domains == 1:
        return spec.n_gpus, spec.n_gpus
    if spec.scale_out.topology == "dragonfly":  # a group is the unit behind the global taper
        group = dragonfly_shape(spec).group_endpoints * spec.n_gpus // spec.endpoint_ports
        return min(spec.n_gpus, max(1, group)), spec.n_gpus
    shape = clos_shape(spec)
    su = shape.nodes_per_su * spec.gpus_per_node if shape.tiers >= 2 else spec.n_gpus
    if shape.tiers == 3:
        sus_per_pod = max(1, shape.leaves_per_pod // shape.rails)
        return su, su * sus_per_pod
    return su, spec.n_gpus


def resolve_communicator(spec: ClusterSpec, ranks: int | Sequence[int] | Communicator | None) -> Communicator:
    """A Communicator from a rank count (first GPUs in order), GPU ids, or None (all GPUs)."""
    if isinstance(ranks, Communicator):
        return ranks
    if ranks is None or isinstance(ranks, int):
        return Communicator.contiguous(spec, ranks)
    return Communicator.from_gpus(spec, list(ranks))
