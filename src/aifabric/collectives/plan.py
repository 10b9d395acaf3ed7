"""CommPlan: a collective decomposed into what the network sees.

A collective's plan carries its algorithm's latency (``latency_s``: NCCL's per-step latencies for its
``protocol``, Simple unless the plan is built for another, the same latency the formula engine charges), so
that the topology engines time only the bandwidth on the real links and add that latency once; raw traffic
patterns (``latency_s=None``) pay the physical latency of their paths instead. With LL or LL128 the
protocol's bandwidth, as NCCL's kernels move it, is the plan's ``floor_s``.

A plan is an ordered list of stages; a stage is a set of point-to-point transfers (source GPU, destination
GPU, bytes) that start together, repeated ``repeat`` times back to back (the 2(n-1) identical steps of a
ring move S/n each, so one step is simulated and multiplied). Transfers carry a ``group`` id: the
transfers of one ring channel in one step move together, at the pace of the slowest hop, because the next
step needs every chunk of this one.

Decomposition rules, one function each (the registry, :mod:`aifabric.collectives.algorithms`, names
which algorithm uses which; :func:`aifabric.collectives.algorithms.build_plan` is the front door). Each
takes ``(op, message_bytes, spec, gpus)`` (rank i on ``gpus[i]``) and returns the stages:

- :func:`ring_plan` (NCCL-style, multi-channel; broadcast/reduce: one pipelined chain): one ring per local
  GPU ("channel"), each visiting every node; in node ``i`` channel ``c`` enters at local GPU
  ``(c - i) mod g`` and leaves from the GPU before it, so every node-crossing hop stays on one rail and a
  node's g channels use its g NICs. A step moves S/(n g) per hop per channel (all_reduce: 2(n-1) steps;
  all_gather/reduce_scatter: n-1). Where ranks share NICs (``gpus_per_nic``), one channel per NIC enters
  at the NIC's first rank and leaves from its last, as NCCL's search does (:func:`_shared_nic_ring_stage`).
  Over domains holding different numbers of ranks, the sparsest domain's ranks set the channels, one per
  rail (:func:`_uneven_ring_stage`).
- :func:`hierarchical_plan`: ring reduce-scatter inside each domain (g-1 steps of S/g), ring all-reduce of
  the shards across domains on every rail at once (2(N-1) steps of S/(g N)), ring all-gather inside.
- :func:`flat_ring_plan`: one ring in rank order, every hop a transfer of S/n (all_reduce: 2(n-1) steps).
- :func:`direct_plan`: all_to_all, every rank sends S/n to every other rank at once.
- :func:`p2p_plan`: send_recv, a pair or every rank to the next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from aifabric.budget import check_memory
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import TierModel, mesh_rings
from aifabric.lazy_import import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # loaded when a plan is built: the formula engine never needs numpy

__all__ = [
    "AllPairsStage",
    "FIXED_EXCHANGES",
    "CommPlan",
    "Stage",
    "all_pairs",
    "check_pairs",
    "direct_plan",
    "flat_ring_plan",
    "hierarchical_plan",
    "p2p_pairs",
    "p2p_plan",
    "ring_plan",
]


@dataclass(frozen=True)
class Stage:
    """Transfers that start together. Arrays of shape (n_transfers,).

    ``bytes_`` is per repeat; ``repeat`` identical copies run back to back; ``group`` ids are local to the
    stage (transfers with the same id move together).
    """

    src: np.ndarray
    dst: np.ndarray
    bytes_: np.ndarray
    group: np.ndarray
    repeat: int = 1
    label: str = ""

    @property
    def n_transfers(self) -> int:
        """Transfers per repeat."""
        return int(self.src.size)

    @property
    def bytes_total(self) -> float:
        """Bytes of one repeat, all transfers."""
        return float(self.bytes_.sum())


@dataclass(frozen=True, eq=False)
class AllPairsStage:
    """Every rank of ``ranks`` sends ``bytes_per_pair`` to every other rank at once, one group (a uniform
    all-to-all), held as its ranks: the ``n (n - 1)`` pair arrays of :class:`Stage` (``src``, ``dst``,
    ``bytes_``, ``group``, in the order of :func:`direct_plan`) are built only when read, after
    :func:`check_pairs`. The topology engines route it from its ranks per node and leaf without the pairs
    (:mod:`aifabric.engines.allpairs`), which is what lets a global all-to-all of 16,384 GPUs run.
    """

    ranks: np.ndarray
    bytes_per_pair: float
    repeat: int = 1
    label: str = "all-to-all"

    @property
    def n_transfers(self) -> int:
        """Transfers per repeat: ``n (n - 1)``."""
        n = int(self.ranks.size)
        return n * (n - 1)

    @property
    def bytes_total(self) -> float:
        """Bytes of one repeat: ``n (n - 1)`` x bytes per pair."""
        return self.n_transfers * float(self.bytes_per_pair)

    @cached_property
    def pairs(self) -> Stage:
        """The stage as pair arrays. Raises ConfigError above the memory limit (:func:`check_pairs`)."""
        gpus = np.asarray(self.ranks, np.int64)
        n = int(gpus.size)
        check_pairs(n, "the all_to_all")
        src = np.repeat(gpus, n)
        dst = np.tile(gpus, n)
        keep = src != dst
        m = int(keep.sum())
        grp = np.zeros(m, np.int64)
        return Stage(src[keep], dst[keep], np.full(m, self.bytes_per_pair), grp, self.repeat, self.label)

    @property
    def src(self) -> np.ndarray:
        """Source of every pair, shape (n (n - 1),)."""
        return self.pairs.src

    @property
    def dst(self) -> np.ndarray:
        """Destination of every pair, shape (n (n - 1),)."""
        return self.pairs.dst

    @property
    def bytes_(self) -> np.ndarray:
        """Bytes of every pair, shape (n (n - 1),)."""
        return self.pairs.bytes_

    @property
    def group(self) -> np.ndarray:
        """Group of every pair (all 0), shape (n (n - 1),)."""
        return self.pairs.group


@dataclass(frozen=True)
class CommPlan:
    """A collective (or traffic pattern) as ordered stages of transfers; ``job`` names its communicator."""

    op: str
    algorithm: str
    message_bytes: float
    n_ranks: int
    stages: tuple[Stage | AllPairsStage, ...]
    job: str = "job0"
    meta: dict[str, object] = field(default_factory=dict)
    pxn: bool = True  # cross-rail hops relay over NVLink (NCCL PXN); raw traffic patterns use their own NIC
    latency_s: float | None = None  # the algorithm's NCCL latency (its protocol's), charged once, not paths'
    floor_s: float = 0.0  # the least bandwidth time its endpoints allow (NCCL's p2p channels to a net peer)
    protocol: str = "Simple"  # NCCL's protocol: latency_s and, for LL/LL128, floor_s are its

    @property
    def total_bytes(self) -> float:
        """Bytes sent over all stages and repeats (every transfer counted once)."""
        return float(sum(s.bytes_total * s.repeat for s in self.stages))


def _by_domain(spec: ClusterSpec, gpus: np.ndarray) -> tuple[np.ndarray, int]:
    """Ranks arranged as a (domains, g) matrix of GPU ids (uniform communicators only)."""
    dom = gpus // spec.domain_gpus
    order = np.lexsort((gpus, dom))
    g_sorted = gpus[order]
    _, counts = np.unique(dom, return_counts=True)
    g = int(counts[0])
    if not (counts == g).all():
        raise ValueError(
            "algorithm: this decomposition needs the same number of ranks in every scale-up domain"
        )
    # keep the domains in the communicator's own order (first appearance), as NCCL orders nodes by rank
    first = np.unique(dom, return_index=True)[1]
    dom_order = np.argsort(np.argsort(first))
    mat = g_sorted.reshape(-1, g)
    mat = mat[np.argsort(dom_order)] if mat.shape[0] > 1 else mat
    return mat, g


def _uniform(spec: ClusterSpec, gpus: np.ndarray) -> bool:
    """Every scale-up domain the ranks use holds the same number of them."""
    _, counts = np.unique(gpus // spec.domain_gpus, return_counts=True)
    return bool((counts == counts[0]).all())


def _ring_stage(mat: np.ndarray, chunk_bytes: float, repeat: int, label: str, *, mesh: bool = False) -> Stage:
    """Multi-channel ring over a (N, g) matrix of GPUs whose ranks have a NIC each; see the module
    docstring. ``mesh``: the domains are full meshes (:func:`_zigzag`)."""
    n_dom, g = mat.shape
    srcs, dsts, groups = [], [], []
    i = np.arange(n_dom)
    # Node i enters at local GPU e_i = c - i k and leaves from e_i - k = e_{i+1}: every node-crossing hop
    # stays on one rail. The ring closes on its rail when N k = 0 (mod g): k = g / gcd(N, g); if N and g
    # are coprime one wrap-around hop per channel crosses rails (NCCL sends it through PXN). On a mesh
    # k = g // 2, the far end of the channel's zigzag: the ring closes on its rail when N is even (g even)
    # or a multiple of g (g odd: k = (g - 1) / 2 is coprime to g).
    gcd = int(np.gcd(n_dom, g))
    k = g // 2 if mesh else (g // gcd if (n_dom > 1 and gcd > 1) else 1)
    for c in range(g):
        entry = (c - i * k) % g
        local = _zigzag(entry, g) if mesh else _entry_to_exit(entry, (entry - k) % g, g)
        seq = mat[i[:, None], local].ravel()  # the ring visiting nodes in order
        srcs.append(seq)
        dsts.append(np.roll(seq, -1))
        groups.append(np.full(seq.size, c))
    src = np.concatenate(srcs)
    dst = np.concatenate(dsts)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    grp = np.concatenate(groups)[keep]
    return Stage(src, dst, np.full(src.size, chunk_bytes / g), grp, repeat, label)


def _entry_to_exit(entry: np.ndarray, exit_: np.ndarray, g: int) -> np.ndarray:
    """Local order (N, g) of each node's ring hops: ``entry``, the others in increasing order, ``exit_``."""
    if g == 1:
        return entry[:, None]
    others = (entry[:, None] + np.arange(1, g)[None, :]) % g
    others = np.where(others == exit_[:, None], -1, others)
    others = np.sort(np.where(others < 0, g + 1, (others - entry[:, None]) % g), axis=1)[:, : g - 2]
    middle = (entry[:, None] + others) % g
    return np.concatenate([entry[:, None], middle, exit_[:, None]], axis=1)


def _zigzag(entry: np.ndarray, g: int) -> np.ndarray:
    """Local order (N, g) of a ring channel through a full-mesh domain of ``g`` GPUs: from ``entry`` zigzag
    ``e, e + 1, e - 1, e + 2, e - 2, ...``, which leaves from ``e - g // 2`` (``e + g/2`` for an even ``g``).

    The zigzag's steps ``+1, -2, +3, ..., +(g - 1)`` are every nonzero residue mod ``g`` once (``g``
    even), so the ``g`` channels, entering at the ``g`` GPUs, cross every directed link of the mesh
    exactly once: Walecki's decomposition of the complete graph into ``g / 2`` Hamiltonian paths, each run
    both ways (Alspach, "The wonderful Walecki construction", Bull. ICA 52, 2008, 7-20). Each GPU then
    forwards ``(g - 1) / g`` of the ring's bytes over its ``g - 1`` links, one channel per link, the
    formula engine's ``B_i g / (g - 1)`` scale-up credit (:func:`aifabric.collectives.cost.scaleup_bound`).
    A channel always entering at the same GPU and going round in increasing order would put ``g - 1``
    channels on each link ``e -> e + 1`` and leave the others idle.

    For an odd ``g`` the steps ``+1, -2, ..., -(g - 1)`` are the odd residues mod ``g``, each twice: every
    link ``e -> e + odd`` carries 2 channels and the others none, so a step takes twice the formula
    engine's full-mesh time (``g >= 5``; on 3 GPUs both steps are ``+1``, as in increasing order). No
    order shifted round the domain does better: its ``g - 1`` steps would have to be distinct with
    distinct partial sums, a sequencing of Z_g, which exists only for even ``g`` (Gordon, "Sequences in
    groups with distinct partial products", Pacific J. Math. 11, 1961, 1309-1313).
    """
    t = np.arange(1, g)
    step = np.where(t % 2 == 1, (t + 1) // 2, -(t // 2))
    return (entry[:, None] + np.concatenate([[0], step])[None, :]) % g


def _mesh_shift_stage(mat: np.ndarray, chunk_bytes: float, repeat: int, label: str) -> Stage:
    """A ring step inside each full-mesh domain of a (N, g) matrix: every GPU sends ``chunk / (g - 1)`` to
    each of its ``g - 1`` peers, group ``(domain, shift)``.

    These are the link loads of ``g - 1`` link-disjoint directed Hamiltonian rings (one link per hop per
    ring, ``chunk / (g - 1)`` each), which the complete symmetric digraph of ``g`` GPUs has for every
    ``g`` but 4 and 6 (Tillson, "A Hamiltonian decomposition of K*_2m, 2m >= 8", J. Combin. Theory B 29,
    1980, 68-74; for 4 and 6 a mix of rings with equal weights loads every link equally instead), so each
    step moves at ``g - 1`` links per GPU, as the formula engine's full mesh
    (:func:`aifabric.collectives.tiers.scaleup_bytes_per_s`). The plan holds the loads as the ``g - 1``
    shifts ``i -> i + m``, not as the rings' orders, which neither engine reads.
    """
    n_dom, g = mat.shape
    shifts = np.arange(1, g)
    src = np.repeat(mat[:, None, :], g - 1, axis=1)
    dst = mat[:, (np.arange(g)[None, :] + shifts[:, None]) % g]
    grp = np.repeat(np.arange(n_dom * (g - 1)), g)
    return Stage(src.ravel(), dst.ravel(), np.full(src.size, chunk_bytes / (g - 1)), grp, repeat, label)


def _nccl_mesh_ring_stage(
    tm: TierModel, ranks: np.ndarray, chunk_bytes: float, repeat: int, label: str
) -> Stage | None:
    """A ring step over the rings NCCL builds on one full-mesh domain, the very rings the formula engine
    prices with ``tm`` (:func:`~aifabric.collectives.tiers.mesh_rings`: its release, architecture and pair
    bandwidth): each of its ``C`` channels, one group, sends ``chunk / C`` from every GPU to the next of
    its order, so a pair crossed by ``k`` channels carries ``k chunk / C``, as the formula engine's
    :func:`~aifabric.collectives.tiers.mesh_ring_bytes_per_s`. None where NCCL's search does not apply
    (RCCL's xGMI rings, more than :data:`~aifabric.catalog.nccl_mesh.MESH_SEARCH_MAX_GPUS` GPUs):
    :func:`_mesh_shift_stage`. GB200 NVL4: 16 channels, the 8 pairs of 0-1-2-3 and its reverse 6 each, the
    diagonals 4."""
    found = mesh_rings(tm, int(ranks.size))
    if found is None:
        return None
    rings = np.asarray(found.rings, np.int64)
    g, c = rings.shape[1], rings.shape[0]
    src, dst = ranks[rings].ravel(), ranks[np.roll(rings, -1, axis=1)].ravel()
    return Stage(src, dst, np.full(src.size, chunk_bytes / c), np.repeat(np.arange(c), g), repeat, label)


#: Peak bytes per ordered pair while an all-to-all stage is built: ``np.repeat`` and ``np.tile`` of the
#: ranks (8 + 8), the self-pair mask (1), the kept sources and destinations (8 + 8), sizes and groups (8 + 8).
BYTES_PER_PAIR = 49


def check_pairs(n: int, what: str) -> None:
    """Refuse (ConfigError naming ``ranks``) an all-to-all of ``n`` ranks whose ``n^2`` pair arrays, at
    ``BYTES_PER_PAIR`` each, exceed the memory limit of :mod:`aifabric.budget`."""
    check_memory(f"{what} of {n:,} ranks ({n * (n - 1):,} transfers)", float(n) * n * BYTES_PER_PAIR, "ranks")


def direct_plan(
    op: Collective, message_bytes: float, spec: ClusterSpec, gpus: np.ndarray, tm: TierModel
) -> tuple[AllPairsStage, ...]:
    """all_to_all: every rank sends S/n to every other rank at once (one stage, held as its ranks:
    :class:`AllPairsStage`, whose pairs are built, after :func:`check_pairs`, only when read)."""
    n = int(gpus.size)
    return (AllPairsStage(np.asarray(gpus, np.int64).copy(), message_bytes / n, 1, "all-to-all"),)


def p2p_plan(
    op: Collective, message_bytes: float, spec: ClusterSpec, gpus: np.ndarray, tm: TierModel
) -> tuple[Stage, ...]:
    """send_recv: on two ranks rank 0 sends S to rank 1; on more, nccl-tests' sendrecv, every rank sends
    S to the next rank in rank order (the last to the first), all at once."""
    if gpus.size < 2:
        raise ValueError(f"send_recv: needs at least 2 ranks, got {gpus.size}")
    src, dst = p2p_pairs(gpus)
    label = "send" if gpus.size == 2 else "send ring"
    return (Stage(src, dst, np.full(src.size, float(message_bytes)), np.zeros(src.size, np.int64), 1, label),)


def p2p_pairs(gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (source, destination) GPUs of nccl-tests' sendrecv on ``gpus``: rank 0 to rank 1 on two
    ranks, else every rank to the next in rank order (the last to the first)."""
    if gpus.size == 2:
        return gpus[:1], gpus[1:]
    return gpus, np.roll(gpus, -1)


def all_pairs(gpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of distinct ``gpus`` (an all_to_all's transfers), sources and destinations."""
    s, d = (a.ravel() for a in np.meshgrid(gpus, gpus, indexing="ij"))
    keep = s != d
    return s[keep], d[keep]


#: The transfers a collective makes whatever algorithm or size runs it: its peers are fixed by the operation
#: itself, not by rings or trees NCCL lays along the rails. Every engine refuses such a collective where one
#: of these transfers has no route (:func:`aifabric.engines.fabric.check_one_tier_route`).
FIXED_EXCHANGES: dict[Collective, Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]] = {
    Collective.ALL_TO_ALL: all_pairs,
    Collective.SEND_RECV: p2p_pairs,
}


def flat_ring_plan(
    op: Collective, message_bytes: float, spec: ClusterSpec, gpus: np.ndarray, tm: TierModel
) -> tuple[Stage, ...]:
    """One ring in rank order, every hop a transfer of S/n; 2(n-1) steps (all_reduce) or n-1."""
    n = int(gpus.size)
    steps = 2 * (n - 1) if op is Collective.ALL_REDUCE else n - 1
    chunk = message_bytes / n
    return (Stage(gpus, np.roll(gpus, -1), np.full(n, chunk), np.zeros(n, np.int64), steps, "flat ring"),)


def ring_plan(
    op: Collective, message_bytes: float, spec: ClusterSpec, gpus: np.ndarray, tm: TierModel
) -> tuple[Stage, ...]:
    """NCCL's multi-channel ring (all_reduce, all_gather, reduce_scatter) or pipelined chain (broadcast,
    reduce); on domains holding different numbers of ranks, :func:`_uneven_ring_stage`; on one full-mesh
    domain the rings the formula engine's tiers ``tm`` give (:func:`_nccl_mesh_ring_stage`)."""
    n = int(gpus.size)
    s = float(message_bytes)
    chain = op in (Collective.BROADCAST, Collective.REDUCE)
    steps = 1 if chain else (2 * (n - 1) if op is Collective.ALL_REDUCE else n - 1)
    chunk, repeat, label = (s, 1, "chain") if chain else (s / n, steps, "ring step")  # chain: S once per link
    if not _uniform(spec, gpus):
        rows = _domain_rows(spec, gpus)
        return (
            _uneven_ring_stage(rows, spec.domain_gpus, chunk, repeat, label, spec.mesh_links_per_gpu > 0),
        )
    mat, g = _by_domain(spec, gpus)
    k = spec.scale_out.gpus_per_nic if spec.scale_out is not None else 1
    if mat.shape[0] > 1 and _shares_nics(mat[0], k):
        return (_shared_nic_ring_stage(mat, chunk, repeat, label, k),)
    if spec.mesh_links_per_gpu and g > 1 and mat.shape[0] == 1:
        nccl = _nccl_mesh_ring_stage(tm, mat[0], chunk, repeat, label)
        return (nccl if nccl is not None else _mesh_shift_stage(mat, chunk, repeat, label),)
    return (_ring_stage(mat, chunk, repeat, label, mesh=spec.mesh_links_per_gpu > 0),)


def _domain_rows(spec: ClusterSpec, gpus: np.ndarray) -> list[np.ndarray]:
    """The ranks' GPU ids per scale-up domain, each sorted, domains in the communicator's order (first
    appearance, as NCCL orders nodes by rank); the rows may differ in length."""
    dom = gpus // spec.domain_gpus
    _, first = np.unique(dom, return_index=True)
    return [np.sort(gpus[dom == dom[i]]) for i in np.sort(first)]


def _uneven_ring_stage(
    rows: list[np.ndarray], domain_gpus: int, chunk_bytes: float, repeat: int, label: str, mesh: bool
) -> Stage:
    """NCCL's rings over domains holding different numbers of ranks (``rows``: each domain's GPU ids).

    Every node searches its own rings and ``init.cc`` keeps the fewest channels any node found, the same
    count over all ranks (``nChannels = min`` over the nodes' graphs); ``connect.cc`` then links node
    ``i``'s exit of channel ``c`` to node ``i + 1``'s entry, each entering and leaving its node on a NIC.
    The sparsest domain's ``g_min`` ranks set the count here: ``g_min`` channels, one per rail of that
    domain's ranks (its GPUs' local ids, each with its NIC). Channel ``c`` enters node ``i`` on rail
    ``e_i = c - i k (mod g_min)`` and leaves on ``e_{i+1}`` (``k`` as in :func:`_ring_stage`: ``g / gcd(N,
    g)`` behind a switch, ``g_min / 2`` on a full mesh, the end of the channel's zigzag through the
    sparsest domain), on the rank a node has on that rail (:func:`_rail_columns`), so each node-crossing
    hop stays on one rail and each of the sparsest domain's NICs carries one channel each way: the formula
    engine's ``domain_nic_bytes_per_s``. A node's other ranks sit between entry and exit
    (:func:`_through_domain`). On 2 x 4 GH200 with 4 + 2 ranks: 2 channels at a NIC each, where one
    channel (before) ran at one NIC, half the formula's bound.
    With ``g_min = 1`` one channel runs and a fuller node's exit hop changes rail (PXN).
    """
    g_min = min(r.size for r in rows)
    n_dom = len(rows)
    gcd = int(np.gcd(n_dom, g_min))
    k = g_min // 2 if mesh else (g_min // gcd if (n_dom > 1 and gcd > 1) else 1)
    rails = rows[int(np.argmin([r.size for r in rows]))] % domain_gpus
    cols = [_rail_columns(row % domain_gpus, rails) for row in rows]
    loads = [np.zeros((r.size, r.size), np.int64) if mesh else None for r in rows]
    srcs, dsts, groups = [], [], []
    for c in range(g_min):
        seq = []
        for i, row in enumerate(rows):
            entry, exit_ = (int(cols[i][(c - j * k) % g_min]) for j in (i, i + 1))
            seq.append(row[_through_domain(entry, exit_, row.size, loads[i])])
        srcs.append(np.concatenate(seq))
        dsts.append(np.roll(srcs[-1], -1))
        groups.append(np.full(srcs[-1].size, c))
    src, dst, grp = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(groups)
    keep = src != dst
    sizes = np.full(int(keep.sum()), chunk_bytes / g_min)
    return Stage(src[keep], dst[keep], sizes, grp[keep], repeat, label)


def _rail_columns(local: np.ndarray, rails: np.ndarray) -> np.ndarray:
    """Positions in a domain (``local``: its ranks' local GPU ids) of the channels' rails, each a
    different rank: the rank on that local GPU where the domain has one (the channel stays on its NIC's
    rail), else the first rank no rail takes (one NIC per channel still, its hop changing rail)."""
    at = np.array([np.flatnonzero(local == r)[0] if (local == r).any() else -1 for r in rails])
    spare = iter(np.setdiff1d(np.arange(local.size), at[at >= 0]))
    return np.array([a if a >= 0 else int(next(spare)) for a in at])


def _through_domain(entry: int, exit_: int, g: int, load: np.ndarray | None) -> np.ndarray:
    """Local order of one channel through a domain of ``g`` ranks from ``entry`` to ``exit_`` (the one
    rank when ``g = 1``; ``exit_`` moves to the rank before ``entry`` when it equals ``entry``).

    Behind a switch (``load`` None) the others go in increasing order (:func:`_entry_to_exit`). On a full
    mesh, where each ordered pair has its own link, the path crosses the links the domain's earlier
    channels left free (``load``: channels per link, updated), as NCCL's search takes a channel's
    bandwidth off every link it crosses before looking for the next (``search.cc``,
    ``ncclTopoFollowPath``): :func:`_least_loaded_path`.
    """
    if g == 1:
        return np.zeros(1, np.int64)
    if exit_ == entry:
        exit_ = (entry - 1) % g
    if load is None:
        return _entry_to_exit(np.array([entry]), np.array([exit_]), g)[0]
    path = _zigzag(np.array([entry]), g)[0]
    if path[-1] != exit_ or load[path[:-1], path[1:]].any():
        path = _least_loaded_path(entry, exit_, load)
    load[path[:-1], path[1:]] += 1
    return path


def _least_loaded_path(entry: int, exit_: int, load: np.ndarray) -> np.ndarray:
    """A Hamiltonian path ``entry -> ... -> exit_`` through the full mesh whose links carry the fewest
    channels so far: depth-first over the links below a cap, the cap raised from the least-loaded link's
    load until a path exists (increasing order, every link allowed, is the last resort)."""
    g = load.shape[0]
    for cap in range(int(load.min()) + 1, int(load.max()) + 2):
        path = _capped_path([entry], exit_, load < cap, [10_000 * g])
        if path is not None:
            return np.array(path)
    return _entry_to_exit(np.array([entry]), np.array([exit_]), load.shape[0])[0]


def _capped_path(path: list[int], exit_: int, free: np.ndarray, budget: list[int]) -> list[int] | None:
    """Extend ``path`` over ``free`` links (a g x g mask) through every GPU to end at ``exit_``, depth
    first, nearest GPU after the last first; None when none exists or the search has spent ``budget[0]``
    steps (shared by the whole search, decremented)."""
    g = free.shape[0]
    last = path[-1]
    if len(path) == g - 1:
        return [*path, exit_] if free[last, exit_] else None
    for step in range(1, g):
        nxt = (last + step) % g
        if nxt == exit_ or nxt in path or not free[last, nxt] or budget[0] <= 0:
            continue
        budget[0] -= 1
        found = _capped_path([*path, nxt], exit_, free, budget)
        if found is not None:
            return found
    return None


def _shares_nics(row: np.ndarray, gpus_per_nic: int) -> bool:
    """Two ranks of a domain (``row``: its GPU ids) share a NIC (``gpus_per_nic`` consecutive GPUs each)."""
    return gpus_per_nic > 1 and np.unique(row // gpus_per_nic).size < row.size


def _shared_nic_ring_stage(mat: np.ndarray, chunk_bytes: float, repeat: int, label: str, k: int) -> Stage:
    """NCCL's rings across domains whose ranks share NICs (``k`` GPUs per NIC), over a (N, g) matrix.

    One channel per NIC the domain's ranks reach (``search.cc`` rotates channels over the NICs): it enters
    every domain at the NIC's first rank and leaves from its last (the last GPU is sorted by its path to the
    channel's NIC), the others in between in increasing order, the same in every domain, so the hop between
    domains stays on the NIC's rail. A NIC with one rank leaves from the rank after it. The ranks that never
    leave forward every channel over scale-up (:func:`~aifabric.collectives.cost.scaleup_bound`).
    """
    n_dom, g = mat.shape
    nic = mat[0] // k
    firsts = np.flatnonzero(np.r_[True, nic[1:] != nic[:-1]])
    lasts = np.r_[firsts[1:] - 1, g - 1]
    srcs, dsts, groups = [], [], []
    for c, (entry, last) in enumerate(zip(firsts, lasts, strict=True)):
        exit_ = last if last != entry else (entry + 1) % g
        middle = [j for j in (np.arange(1, g) + entry) % g if j != exit_]
        seq = mat[:, [entry, *middle, exit_]].ravel()  # the ring visiting domains in order
        srcs.append(seq)
        dsts.append(np.roll(seq, -1))
        groups.append(np.full(seq.size, c))
    src, dst, grp = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(groups)
    return Stage(src, dst, np.full(src.size, chunk_bytes / firsts.size), grp, repeat, label)


def hierarchical_plan(
    op: Collective, message_bytes: float, spec: ClusterSpec, gpus: np.ndarray, tm: TierModel
) -> tuple[Stage, ...]:
    """Reduce-scatter in each domain (g-1 steps of S/g), all-reduce of the shards across domains on every
    rail at once (2(N-1) steps of S/(g N)), all-gather in the domain (g-1 steps of S/g)."""
    s = float(message_bytes)
    mat, g = _by_domain(spec, gpus)
    n_dom = mat.shape[0]
    stages: list[Stage] = []
    if g > 1:
        stages.append(_in_domain_stage(spec, mat, s / g, "reduce-scatter in domain"))
    if n_dom > 1:
        src = mat.ravel()
        dst = np.roll(mat, -1, axis=0).ravel()
        grp = np.tile(np.arange(g), n_dom)
        label = "all-reduce across domains, all rails"
        stages.append(Stage(src, dst, np.full(src.size, s / g / n_dom), grp, 2 * (n_dom - 1), label))
    if g > 1:
        stages.append(_in_domain_stage(spec, mat, s / g, "all-gather in domain"))
    return tuple(stages)


def _in_domain_stage(spec: ClusterSpec, mat: np.ndarray, chunk_bytes: float, label: str) -> Stage:
    """``g - 1`` ring steps of ``chunk_bytes`` inside every domain of a (N, g) matrix at once: one ring per
    domain in rank order behind a switch, the link-disjoint rings of a full mesh
    (:func:`_mesh_shift_stage`)."""
    n_dom, g = mat.shape
    if spec.mesh_links_per_gpu:
        return _mesh_shift_stage(mat, chunk_bytes, g - 1, label)
    src, dst, grp = mat.ravel(), np.roll(mat, -1, axis=1).ravel(), np.repeat(np.arange(n_dom), g)
    return Stage(src, dst, np.full(src.size, chunk_bytes), grp, g - 1, label)
