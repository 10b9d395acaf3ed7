"""Routing and load balancing on a Topology: which links each transfer's bytes cross.

Policies (chosen per run; randomness is a seeded, deterministic hash, so a result names its seed):

- ``ecmp``: per-flow hashing of the flow's 5-tuple (source, destination, source port = queue pair) with a
  per-switch hash seed; every switch picks ``hash mod (live equal-cost next hops)``. With
  ``polarized=True`` every switch uses the same seed, so tiers make correlated choices (hash polarisation).
- ``pinning``: a static path per destination: the leaf uplink of the destination's port index on its leaf
  ("slice"), the scheme Meta first used on its RoCE fabric (Meta engineering blog, 2024-08-05); above the
  leaves, D-mod-K (the per-destination tables of OpenSM's ``ftree`` engine, Zahavi et al. 2010): the core
  by the destination's leaf, and the destination's own cable down from each spine and core, so a shift
  between two leaves or pods crosses every link once.
- ``qp``: QP scaling; each connection opens ``qps`` queue pairs, bytes split evenly, each hashed on its own
  (NCCL_IB_QPS_PER_CONNECTION; Meta's E-ECMP + QP scaling).
- ``spray``: packet spraying; bytes spread evenly over every live equal-cost path (Ultra Ethernet, UET
  1.0 technical preview, 2024). The exact even split: the ideal the two policies below approach.
- ``spray-blind``: spraying as it is built: the sender spreads its packets evenly over :data:`ENTROPIES`
  entropy values (EVs) and every switch hashes each EV like a flow, so a path carries the share of the EVs
  that hash onto it (balls into bins: uneven for a finite EV set; :mod:`aifabric.transport.spraying`).
- ``reps``: REPS (Bonato et al., "REPS: Recycled Entropy Packet Spraying", arXiv 2407.21625): the EVs of
  ``spray-blind``, recycled for up to :data:`REPS_ROUNDS` rounds: an EV whose path's most loaded link is
  loaded ``rho > 1`` times the endpoint bound (the busiest NIC link's bytes / capacity) is marked with
  probability ``1 - 1/rho`` (the packets above capacity) and replaced by a fresh random EV; unmarked EVs
  are kept.
- ``adaptive``: per-flowlet adaptive routing: each flow cut into ``flowlets`` pieces, each sent on the
  leaf -> spine -> leaf path whose most utilised link is the least utilised when it is placed (greedy,
  seeded order, every flowlet placed before it counted), the spine then taking its least utilised live
  cable down. A source switch is not blind to the cables beyond it: CONGA (Alizadeh et al., SIGCOMM 2014,
  doi:10.1145/2619239.2626316) picks the uplink minimising the max of the local uplink's and the
  remote path's congestion, fed back leaf to leaf; InfiniBand and Spectrum-X adaptive routing act on port
  queues that fill through credit or PFC backpressure from a congested cable downstream; LetFlow
  (Vanini et al., NSDI 2017) shows flowlets on congested paths shrink and move until the load balances.
  Across pods only the leaf uplink is chosen so; the core and spine hops below it hash as ECMP's.

Paths: inside a scale-up domain GPU -> NVSwitch -> GPU. Across domains: (PXN: NVLink to the local GPU on the
destination's rail when rails differ) -> NIC -> leaf -> [spine -> [core -> spine] -> leaf] -> NIC -> GPU.
The result is a sparse incidence matrix (links x sub-flows) with the fraction of a sub-flow's rate that
crosses each link, ready for :func:`aifabric.engines.maxmin.max_min_rates`. With ``aggregate=True``,
sprayed traffic on a regular healthy Clos is put on one row per group of equally loaded links
(:class:`SprayGroups`: a leaf's uplinks, its downlinks, a pod's spine-core links each way) instead of on
every path: exact, and 2-4 entries per transfer instead of up to ``2 leaf_up spine_up``.

References: C. Hopps, "Analysis of an Equal-Cost Multi-Path Algorithm", RFC 2992 (2000); Gangidi et al.,
"RDMA over Ethernet for Distributed AI Training at Meta Scale", SIGCOMM 2024, doi:10.1145/3651890.3672233.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import sparse

from aifabric.cluster.topology import Topology
from aifabric.errors import ConfigError, NoRoute

__all__ = [
    "ENTROPIES",
    "MAX_SEED",
    "POLICIES",
    "REPS_ROUNDS",
    "Routes",
    "SprayGroups",
    "equal_subflows",
    "hash64",
    "pcie_nic_hops",
    "pxn_relays_possible",
    "route",
    "spray_groups",
    "subflows",
]

#: Largest seed: seeds are mixed into 64-bit hashes with multipliers below 2**20 (per-switch seeds), so
#: seeds below 2**40 (with the engines' per-stage offsets added) never overflow.
MAX_SEED = 2**40 - 1

POLICIES = ("ecmp", "pinning", "qp", "spray", "adaptive", "spray-blind", "reps")
#: The routing policy the links and flow engines use when none is given.
DEFAULT_POLICY = "spray"

#: Routing options and the policies that use them (anything else is refused, not dropped): QPs per
#: connection only for ``qp``; one hash seed in every switch, and a seed of the random choices, only where
#: a switch hashes or a sender picks at random (``spray`` splits evenly, ``pinning`` follows the
#: destination's slot: neither makes a random choice).
POLICY_OPTIONS: dict[str, tuple[str, ...]] = {
    "--qps": ("qp",),
    "--polarized": ("ecmp", "qp", "adaptive", "spray-blind", "reps"),
    "--seed": ("ecmp", "qp", "adaptive", "spray-blind", "reps"),
}


def refuse_unused_options(policy: str, given: Iterable[str], *, defaulted: bool = False) -> None:
    """Refuse the routing options in ``given`` that ``policy`` does not use.

    Parameters
    ----------
    policy : str
        A routing policy name (:data:`POLICIES`).
    given : iterable of str
        The CLI options the user gave, keys of :data:`POLICY_OPTIONS` (e.g. ``"--qps"``, ``"--polarized"``).
    defaulted : bool, default False
        True when the user named no routing and ``policy`` is the calling command's default (``fabric``:
        ECMP; the links and flow engines: :data:`DEFAULT_POLICY`): the refusal then calls it the default,
        and never when the user named it.

    Raises
    ------
    ConfigError
        Naming the first option of ``given`` that ``policy`` does not use and the policies that do.
    KeyError
        For an option that is not in :data:`POLICY_OPTIONS` (a programming error, not user input).
    """
    for option in given:
        users = POLICY_OPTIONS[option]
        if policy not in users:
            note = " (the default)" if defaulted else ""
            raise ConfigError(
                f"{option}: used only by --routing {', '.join(users)}; routing {policy}{note} does not use it"
            )


#: Entropy values a sender sprays over with ``spray-blind`` and ``reps``: htsim's default path entropy
#: size, 64 (ultraethernet/uet-htsim@40ccb05 ``htsim/sim/datacenter/main_uec.cpp`` l.75).
ENTROPIES = 64

#: Recycling rounds of ``reps`` at most (it stops earlier once no EV is marked), as
#: :func:`aifabric.transport.spraying.reps_weights`.
REPS_ROUNDS = 32
_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def hash64(*keys: np.ndarray | int | np.integer, state: np.ndarray | None = None) -> np.ndarray:
    """Deterministic 64-bit mix of integer arrays (splitmix64 finaliser over a running combination).

    Uniform enough for ECMP studies (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
    OOPSLA 2014). ``state`` continues an earlier combination: ``hash64(c, state=hash64(a, b))`` equals
    ``hash64(a, b, c)``, so keys shared by many rows (a pair's ends under its 64 entropy values) are
    mixed once. Returns uint64 array.
    """
    with np.errstate(over="ignore"):
        h: np.uint64 | np.ndarray = np.uint64(0x9E3779B97F4A7C15) if state is None else state
        for k in keys:
            h = h ^ np.asarray(k).astype(np.uint64)  # a new array: ``state`` is not written
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
            h *= np.uint64(0x94D049BB133111EB)
            h ^= h >> np.uint64(29)
        return np.asarray(h, dtype=np.uint64)


@dataclass(frozen=True)
class Routes:
    """Routed sub-flows.

    Attributes
    ----------
    incidence : scipy.sparse.csc_matrix, shape (n_links, n_subflows)
        Fraction of each sub-flow's rate crossing each link.
    parent : ndarray[int64], shape (n_subflows,)
        Index of the transfer each sub-flow belongs to.
    share : ndarray[float64], shape (n_subflows,)
        Fraction of the transfer's bytes the sub-flow carries (sums to 1 per transfer).
    policy : str
    seed : int
    groups : SprayGroups or None
        With ``aggregate=True`` on a fabric where it is exact: the incidence has one more row per group of
        equally loaded links after the topology's links (see :class:`SprayGroups`); None otherwise.
    """

    incidence: sparse.csc_matrix
    parent: np.ndarray
    share: np.ndarray
    policy: str
    seed: int
    groups: SprayGroups | None = None


@dataclass(frozen=True)
class SprayGroups:
    """Sets of fabric links that spraying on a healthy, regularly wired Clos always loads equally.

    Spraying splits a transfer evenly over every equal-cost path. When every leaf is cabled to every spine
    of its pod with the same number of cables, and every spine to every core of its group with the same
    number (checked by :func:`spray_groups`), each sprayed transfer puts the same share of its bytes on
    each of

    - the uplinks of its source leaf and the downlinks into its destination leaf (leaf groups), and
    - across pods, the spine-to-core links leaving its source pod and the core-to-spine links entering its
      destination pod (pod groups),

    per plane. A group ``g`` of ``n_g`` links then stands for them as one row of the incidence matrix with
    weight ``pw`` (the plane's share) where the per-path matrix has ``pw / n_g`` on each member, so
    ``A_paths = fold @ A_groups`` exactly, and ``load / n_g <= min(c)`` over the members is the group's
    only constraint: its capacity is ``n_g min(c)``. Max-min rates, link bytes and utilisation are those of
    the per-path model (tests/engines/test_spray_groups.py), with 2-4 incidence entries per transfer
    instead of up to ``2 leaf_up spine_up`` (the aggregation of issue 12, item 6).

    Attributes
    ----------
    n_links : int
        Links of the topology; group ``g`` is row ``n_links + g``.
    leaf_up, leaf_down : ndarray of int64, shape (planes, n_leaves)
        Row of each leaf's uplink group and downlink group.
    pod_up, pod_down : ndarray of int64, shape (planes, n_pods)
        Row of each pod's spine-to-core and core-to-spine group (empty with two tiers).
    member_row : ndarray of int64, shape (n_members,)
        Row (``>= n_links``) of each member link, aligned with ``member_link``.
    member_link : ndarray of int64, shape (n_members,)
    size : ndarray of int64, shape (n_groups,)
    """

    n_links: int
    leaf_up: np.ndarray
    leaf_down: np.ndarray
    pod_up: np.ndarray
    pod_down: np.ndarray
    member_row: np.ndarray
    member_link: np.ndarray
    size: np.ndarray

    @property
    def n_groups(self) -> int:
        """Number of groups."""
        return int(self.size.size)

    @property
    def n_rows(self) -> int:
        """Rows of an aggregated incidence matrix: links, then groups."""
        return self.n_links + self.n_groups

    def group_of_link(self) -> np.ndarray:
        """Row of the group of each link, -1 for links in no group; shape (n_links,)."""
        out = np.full(self.n_links, -1, np.int64)
        out[self.member_link] = self.member_row
        return out

    def capacity(self, link_capacity: np.ndarray) -> np.ndarray:
        """Capacity of every row, shape (n_rows,): the links', then ``n_g min(c)`` per group."""
        low = np.full(self.n_groups, np.inf)
        np.minimum.at(low, self.member_row - self.n_links, link_capacity[self.member_link])
        return np.concatenate([link_capacity, self.size * low])

    def latency(self, link_latency: np.ndarray) -> np.ndarray:
        """Latency of every row, shape (n_rows,): the links', then the members' mean per group (the
        per-path weighted sum of latencies is ``pw`` times that mean, as with the group's one entry)."""
        total = np.bincount(
            self.member_row - self.n_links, weights=link_latency[self.member_link], minlength=self.n_groups
        )
        return np.concatenate([link_latency, total / self.size])

    def fold(self, row_values: np.ndarray) -> np.ndarray:
        """Per-link sums (bytes, loads) from per-row ones: a group's value is spread evenly over its
        members. Shape (n_rows, ...) -> (n_links, ...)."""
        out = np.array(row_values[: self.n_links], dtype=np.float64, copy=True)
        share = row_values[self.member_row] / self.size[self.member_row - self.n_links]
        np.add.at(out, self.member_link, share)
        return out

    def fold_matrix(self) -> sparse.csr_matrix:
        """``fold`` as a sparse matrix, shape (n_links, n_rows): ``A_paths = fold_matrix @ A_groups``."""
        eye = np.arange(self.n_links)
        rows = np.concatenate([eye, self.member_link])
        cols = np.concatenate([eye, self.member_row])
        vals = np.concatenate(
            [np.ones(self.n_links), 1.0 / self.size[self.member_row - self.n_links].astype(np.float64)]
        )
        return sparse.csr_matrix((vals, (rows, cols)), shape=(self.n_links, self.n_rows))


def _even_cabling(far_end: np.ndarray, first: np.ndarray, width: int) -> bool:
    """Each row ``i`` of ``far_end`` (switch -> the switch each of its uplinks reaches) reaches every switch
    ``first[i] .. first[i] + width - 1`` the same number of times, and no other."""
    n, k = far_end.shape
    if n == 0 or k % width:
        return False
    offset = far_end - first[:, None]
    if (offset < 0).any() or (offset >= width).any():
        return False
    counts = np.bincount((np.arange(n)[:, None] * width + offset).ravel(), minlength=n * width)
    return bool((counts == k // width).all())


def spray_groups(topo: Topology, link_alive: np.ndarray | None = None) -> SprayGroups | None:
    """The groups of :class:`SprayGroups` if aggregating sprayed traffic is exact on ``topo``, else None.

    Exact when the fabric has leaf-to-spine links, no fabric link has failed, every leaf is cabled evenly
    to every spine of its pod (and nothing else) and every spine evenly to every core of its group.
    """
    shape = topo.shape
    if shape is None or shape.tiers < 2 or topo.leaf_uplinks.size == 0:
        return None
    if link_alive is not None and not np.asarray(link_alive, bool)[topo.link_tier >= 2].all():
        return None
    spp = shape.spines_per_pod
    if not _even_cabling(topo.leaf_uplink_spine, topo.pod_of_leaf * spp, spp):
        return None
    planes, n_leaves = topo.leaf_uplinks.shape[:2]
    three = shape.tiers == 3
    n_pods = shape.n_pods if three else 0
    if three:
        cpg = shape.n_cores // spp
        group = np.arange(shape.n_spines) % spp
        if shape.n_cores % spp or not _even_cabling(topo.spine_uplink_core, group * cpg, cpg):
            return None
    per_plane = 2 * n_leaves + 2 * n_pods
    base = topo.n_links + per_plane * np.arange(planes)[:, None]
    leaf_up = base + np.arange(n_leaves)[None, :]
    leaf_down = leaf_up + n_leaves
    pod_up = base + 2 * n_leaves + np.arange(n_pods)[None, :]
    pod_down = pod_up + n_pods
    rows = [np.repeat(leaf_up, shape.leaf_up, axis=1), np.repeat(leaf_down, shape.leaf_up, axis=1)]
    links = [topo.leaf_uplinks.reshape(planes, -1), topo.leaf_downlinks.reshape(planes, -1)]
    if three:
        per_pod = spp * shape.spine_up  # spines of a pod are numbered pod * spp .. pod * spp + spp - 1
        rows += [np.repeat(pod_up, per_pod, axis=1), np.repeat(pod_down, per_pod, axis=1)]
        links += [topo.spine_uplinks.reshape(planes, -1), topo.spine_downlinks.reshape(planes, -1)]
    member_row = np.concatenate([r.ravel() for r in rows])
    member_link = np.concatenate([ln.ravel() for ln in links])
    size = np.bincount(member_row - topo.n_links, minlength=planes * per_plane)
    return SprayGroups(topo.n_links, leaf_up, leaf_down, pod_up, pod_down, member_row, member_link, size)


class _Builder:
    """Collects (link, column, weight) triplets."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []

    def add(self, links: np.ndarray, cols: np.ndarray, w: np.ndarray | float) -> None:
        links = np.asarray(links)
        if links.size == 0:
            return
        self.rows.append(links.ravel())
        self.cols.append(np.broadcast_to(cols, links.shape).ravel())
        self.vals.append(np.broadcast_to(np.asarray(w, dtype=np.float64), links.shape).ravel())

    def matrix(self, n_links: int, n_cols: int) -> sparse.csc_matrix:
        if not self.rows:
            return sparse.csc_matrix((n_links, n_cols))
        r = np.concatenate(self.rows)
        c = np.concatenate(self.cols)
        v = np.concatenate(self.vals)
        return sparse.csc_matrix((v, (r, c)), shape=(n_links, n_cols))


def _spine_cables(wiring: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(table, base): ``table[node, S - base[node], c]`` is the c-th uplink slot of ``node`` that reaches
    upper switch ``S`` (-1 past the last one); ``wiring``: node -> the switch each uplink reaches,
    (n_nodes, width). Parallel cables of a switch pair, looked up per pair without a per-slot scan."""
    n, width = wiring.shape
    base = wiring.min(axis=1)
    g = wiring - base[:, None]
    order = np.argsort(g, axis=1, kind="stable")
    gs = np.take_along_axis(g, order, axis=1)
    idx = np.broadcast_to(np.arange(width), (n, width))
    new = np.ones((n, width), bool)
    new[:, 1:] = gs[:, 1:] != gs[:, :-1]
    rank = idx - np.maximum.accumulate(np.where(new, idx, 0), axis=1)
    table = np.full((n, int(gs.max()) + 1, int(rank.max()) + 1), -1, np.int64)
    table[np.arange(n)[:, None], gs, rank] = order
    return table, base


def _switch_queues(src_key: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(by, starts): rows grouped by ``src_key`` (a switch's queue of flowlets), in a seeded random order
    within each group; group ``i`` is ``by[starts[i]:starts[i + 1]]``."""
    order = rng.permutation(src_key.size)
    by = order[np.argsort(src_key[order], kind="stable")]
    sk = src_key[by]
    starts = np.flatnonzero(np.concatenate([[True], sk[1:] != sk[:-1]]))
    return by, np.concatenate([starts, [sk.size]])


def _first_of_both(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Boolean mask of the entries that are the first occurrence of their value in ``a`` and in ``b``."""
    keep = np.zeros(a.size, bool)
    keep[np.unique(a, return_index=True)[1]] = True
    both = np.zeros(a.size, bool)
    both[np.unique(b, return_index=True)[1]] = True
    return keep & both


@dataclass(frozen=True)
class _AdaptiveFabric:
    """What adaptive routing's path choice reads: every candidate uplink of each sub-flow (``up``, link ids,
    -1 where not viable; ``spine``), its destination leaf's cables down from each spine (``down_table``,
    ``down_base``: :func:`_spine_cables`; ``leaf_d``, ``plane``; ``same_pod``: only those come down to
    the leaf from the spine chosen here), link capacities and liveness."""

    inv: np.ndarray
    up: np.ndarray
    spine: np.ndarray
    down_table: np.ndarray
    down_base: np.ndarray
    leaf_uplinks: np.ndarray
    leaf_downlinks: np.ndarray
    plane: np.ndarray
    leaf_s: np.ndarray
    leaf_d: np.ndarray
    same_pod: np.ndarray
    capacity: np.ndarray
    alive: np.ndarray
    bundle: tuple[int, int]

    def port_keys(self, rows: np.ndarray, j: np.ndarray, jd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distinct keys of each row's port up (plane, source leaf, slot's port) and cable down (plane,
        destination leaf, port; a key of its own for a row with none chosen here, ``jd < 0``)."""
        period, k = self.bundle
        n_leaves, u1 = self.leaf_uplinks.shape[1:]

        def port(slot: np.ndarray) -> np.ndarray:
            return slot % period + (slot // period) // k * k * period

        up = (self.plane[rows] * n_leaves + self.leaf_s[rows]) * u1 + port(j)
        down = (self.plane[rows] * n_leaves + self.leaf_d[rows]) * u1 + port(np.maximum(jd, 0))
        return up, np.where(jd >= 0, down, -1 - rows)

    def add_load(
        self, load: np.ndarray, rows: np.ndarray, j: np.ndarray, jd: np.ndarray, w: np.ndarray
    ) -> None:
        """Add bytes ``w`` of ``rows`` to ``load`` on uplink slot ``j`` and (``jd >= 0``) cable down ``jd``,
        spread over a bundled port's live lanes as the incidence is (:func:`_cable_lanes`)."""
        where = (self.plane[rows], self.leaf_s[rows], j)
        ids, r, frac = _cable_lanes(self.leaf_uplinks, where, self.bundle, self.alive)
        np.add.at(load, ids, w[r] * frac)
        down = np.flatnonzero(jd >= 0)
        where = (self.plane[rows[down]], self.leaf_d[rows[down]], jd[down])
        ids, r, frac = _cable_lanes(self.leaf_downlinks, where, self.bundle, self.alive)
        np.add.at(load, ids, w[down][r] * frac)

    def paths(
        self, rows: np.ndarray, load: np.ndarray, rng: np.random.Generator, tie: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """(j, jd) of ``rows``: the uplink slot whose path's most utilised link is the least utilised (CONGA's
        metric: the max of the uplink's and the path's remote load), and the least utilised live cable
        from its spine down to the destination leaf (-1 across pods: hashed further on). Ties broken at
        random (a switch has no preferred port among equally loaded ones): ``tie`` x U(0, 1) added."""
        up, spine = self.up[self.inv[rows]], self.spine[self.inv[rows]]  # (r, u1)
        u_up = np.where(up >= 0, load[up] / self.capacity[up], np.inf)
        ld, pl, r = self.leaf_d[rows], self.plane[rows], np.arange(rows.size)
        slot = self.down_table[ld]  # (r, spines, parallel cables)
        dn = self.leaf_downlinks[pl[:, None, None], ld[:, None, None], np.maximum(slot, 0)]
        u_dn = load[dn] / self.capacity[dn] + rng.random(slot.shape) * tie
        u_dn = np.where((slot >= 0) & self.alive[dn], u_dn, np.inf)
        best = u_dn.argmin(axis=2)  # each spine's least utilised cable down, (r, spines)
        u_best = np.take_along_axis(u_dn, best[:, :, None], axis=2)[:, :, 0]
        g = np.clip(spine - self.down_base[ld][:, None], 0, slot.shape[1] - 1)  # (r, u1)
        u_path = np.maximum(u_up, np.where(self.same_pod[rows][:, None], np.take_along_axis(u_best, g, 1), 0))
        j = (u_path + rng.random(up.shape) * tie).argmin(axis=1)
        gj = g[r, j]
        return j, np.where(self.same_pod[rows], slot[r, gj, best[r, gj]], -1)


def _adaptive_place(
    fab: _AdaptiveFabric, src_key: np.ndarray, weight: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(j, jd) of every sub-flow, each flowlet on the path its switch sees least congested given every
    flowlet placed before it (:meth:`_AdaptiveFabric.paths`): a sequential greedy placement, vectorised.

    Each source switch (``src_key``) sends its flowlets in a seeded random order. A round takes the next
    ``u1`` waiting flowlets of every switch (its uplink count) and picks each one's path on the current
    loads; of those, the flowlets whose picked port up and cable down no earlier flowlet of the round
    picked are placed, the others wait. Placed flowlets share no link, and a flowlet's load only makes
    the paths it did not pick worse for the others, so every pick is the one it would be, placed one at a
    time. Cost per round: O(switches x u1^2 x parallel cables); rounds ~ flowlets per switch over the
    distinct ports one round fills.
    """
    by, starts = _switch_queues(src_key, rng)
    head, ends = starts[:-1].copy(), starts[1:]
    width = fab.up.shape[1]
    placed = np.zeros(src_key.size + width, bool)  # by position in ``by``, padded past the last queue
    j_out, jd_out = np.full(src_key.size, -1, np.int64), np.full(src_key.size, -1, np.int64)
    load = np.zeros(fab.capacity.size)
    tie = 1e-9 * (1.0 + float(weight.max(initial=0.0))) / float(fab.capacity.max(initial=1.0))
    while (live := np.flatnonzero(head < ends)).size:
        pos = (head[live][None, :] + np.arange(width)[:, None]).ravel()  # window rank first, then switch
        pos = pos[(pos < np.repeat(ends[live][None, :], width, axis=0).ravel()) & ~placed[pos]]
        rows = by[pos]
        j, jd = fab.paths(rows, load, rng, tie)
        up_key, down_key = fab.port_keys(rows, j, jd)
        ok = _first_of_both(up_key, down_key)
        rows, j, jd = rows[ok], j[ok], jd[ok]
        j_out[rows], jd_out[rows] = j, jd
        fab.add_load(load, rows, j, jd, weight[rows])
        placed[pos[ok]] = True
        while (adv := np.flatnonzero((head < ends) & placed[np.minimum(head, src_key.size)])).size:
            head[adv] += 1
    return j_out, jd_out


def subflows(policy: str, qps: int = 4, flowlets: int = 8) -> int:
    """Sub-flows per transfer under ``policy``: ``qps`` queue pairs (``qp``), ``flowlets`` (``adaptive``),
    :data:`ENTROPIES` entropy values (``spray-blind``, ``reps``), else 1."""
    return {"qp": qps, "adaptive": flowlets, "spray-blind": ENTROPIES, "reps": ENTROPIES}.get(policy, 1)


def route(
    topo: Topology,
    src: np.ndarray,
    dst: np.ndarray,
    *,
    policy: str = DEFAULT_POLICY,
    seed: int = 0,
    qps: int = 4,
    flowlets: int = 8,
    polarized: bool = False,
    pxn: bool | np.ndarray = True,
    link_alive: np.ndarray | None = None,
    bytes_: np.ndarray | None = None,
    aggregate: bool = False,
) -> Routes:
    """Route transfers ``src[i] -> dst[i]`` (GPU ids) under ``policy``.

    Parameters
    ----------
    topo : Topology
    src, dst : ndarray of int, shape (n,)
    policy : {"ecmp", "pinning", "qp", "spray", "adaptive", "spray-blind", "reps"}
    seed : int
        Hash seed (ECMP per-switch seeds derive from it; adaptive's placement order too).
    qps : int
        Queue pairs per connection for ``qp``.
    flowlets : int
        Flowlets per flow for ``adaptive``.
    polarized : bool
        Same hash seed in every switch (ECMP, QP): tiers make correlated choices.
    pxn : bool or ndarray of bool, shape (n,)
        Cross-rail transfers first move over NVLink to the local GPU on the destination's rail (NCCL PXN);
        per transfer when an array (raw traffic patterns do not use PXN).
    link_alive : ndarray of bool, shape (n_links,), optional
        False for failed links; routes avoid them.
    bytes_ : ndarray, optional
        Transfer sizes (adaptive routing balances bytes; default equal).
    aggregate : bool
        With ``spray``: put the fabric part of every transfer on the rows of :class:`SprayGroups` (one
        per group of equally loaded links) instead of on every path, where :func:`spray_groups` says
        that is exact; ``Routes.groups`` then describes the extra rows. Ignored by the other policies.

    Raises
    ------
    ConfigError
        Unknown policy, qps < 1, a seed outside ``0 .. MAX_SEED`` (hash arithmetic stays in 64 bits).
    NoRoute
        A pair has no live path; the message names the first such pair.
    """
    if policy not in POLICIES:
        raise ConfigError(f"routing: unknown routing policy {policy!r}; known: {', '.join(POLICIES)}")
    if qps < 1 or flowlets < 1:
        raise ConfigError(f"routing: qps and flowlets must be >= 1, got qps={qps}, flowlets={flowlets}")
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"seed: must be an integer from 0 to {MAX_SEED} (2**40 - 1), got {seed}")
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    n = src.size
    alive = np.ones(topo.n_links, bool) if link_alive is None else np.asarray(link_alive, bool)
    k = subflows(policy, qps, flowlets)
    groups = spray_groups(topo, alive) if aggregate and policy == "spray" else None
    # sub-flows: transfer i -> columns i*k .. i*k+k-1; each one's hash key (its QP, flowlet or EV)
    parent = np.repeat(np.arange(n), k)
    key = np.tile(np.arange(k), n)
    weights = np.ones(n) if bytes_ is None else np.asarray(bytes_, float)
    flags = (polarized, pxn, seed)
    if policy == "reps":
        return _reps(topo, src, dst, parent, key, weights, alive, flags)
    share = np.full(parent.size, 1.0 / k)
    return _route_subflows(topo, src, dst, parent, key, share, policy, weights, alive, flags, groups)


def _reps(
    topo: Topology,
    src: np.ndarray,
    dst: np.ndarray,
    parent: np.ndarray,
    key: np.ndarray,
    weights: np.ndarray,
    alive: np.ndarray,
    flags: tuple[bool, bool | np.ndarray, int],
) -> Routes:
    """REPS recycling (module docstring) over ``spray-blind`` routes: at most :data:`REPS_ROUNDS` rounds,
    each re-routing only the EVs it replaced."""
    seed = flags[2]
    rng = np.random.default_rng((seed, 0x5E95))
    cap = topo.link_capacity_bytes_per_s
    nic = np.zeros(topo.n_links, bool)
    nic[np.concatenate([topo.nic_up.ravel(), topo.nic_down.ravel()])] = True
    share = 1.0 / np.bincount(parent, minlength=weights.size)[parent]
    col_bytes = weights[parent] * share
    blind = partial(_blind_incidence, topo, src, dst, weights=weights, alive=alive, flags=flags)
    inc = blind(parent, key, share)
    fresh = int(key.max(initial=0)) + 1
    for _ in range(REPS_ROUNDS):
        link_time = (inc @ col_bytes) / cap
        bound = float(link_time[nic].max(initial=0.0))
        worst = _column_max(inc, link_time) / max(bound, 1e-300)
        marked = np.flatnonzero(rng.random(key.size) < np.maximum(1.0 - 1.0 / np.maximum(worst, 1e-30), 0.0))
        if not marked.size:
            break
        key = key.copy()
        key[marked] = fresh + np.arange(marked.size)
        fresh += marked.size
        inc = _replace_columns(inc, marked, blind(parent[marked], key[marked], share[marked]))
    return Routes(inc, parent, share, "reps", seed)


#: Sub-flows routed at once by :func:`_blind_incidence`: routing works on arrays of a few entries per
#: sub-flow, which stay in the CPU caches in chunks of this size (a million at once ran 2x slower).
BLIND_CHUNK = 2**16


def _blind_incidence(
    topo: Topology,
    src: np.ndarray,
    dst: np.ndarray,
    parent: np.ndarray,
    key: np.ndarray,
    share: np.ndarray,
    *,
    weights: np.ndarray,
    alive: np.ndarray,
    flags: tuple[bool, bool | np.ndarray, int],
) -> sparse.csc_matrix:
    """The ``spray-blind`` incidence of sub-flows ``parent`` with EVs ``key``, routed :data:`BLIND_CHUNK`
    at a time (each EV is hashed on its own, so chunks route as the whole would)."""
    parts = [
        _route_subflows(
            topo, src, dst, parent[a : a + BLIND_CHUNK], key[a : a + BLIND_CHUNK],
            share[a : a + BLIND_CHUNK], "spray-blind", weights, alive, flags,
        ).incidence
        for a in range(0, parent.size, BLIND_CHUNK)
    ]  # fmt: skip
    if len(parts) == 1:
        return parts[0]
    return sparse.hstack(parts, format="csc") if parts else sparse.csc_matrix((topo.n_links, 0))


def _replace_columns(inc: sparse.csc_matrix, cols: np.ndarray, new: sparse.csc_matrix) -> sparse.csc_matrix:
    """``inc`` with its columns ``cols`` (sorted, distinct) replaced by the columns of ``new`` in order,
    each entry moved to its place (no sparse products: one pass over the entries)."""
    count = np.diff(inc.indptr)
    count[cols] = np.diff(new.indptr)
    ptr = np.zeros(count.size + 1, dtype=np.int64)
    np.cumsum(count, out=ptr[1:])
    rows = np.empty(int(ptr[-1]), dtype=inc.indices.dtype)
    vals = np.empty(int(ptr[-1]))
    old_col = np.repeat(np.arange(count.size), np.diff(inc.indptr))
    kept = np.ones(count.size, bool)
    kept[cols] = False
    e = np.flatnonzero(kept[old_col])
    at = ptr[old_col[e]] + e - inc.indptr[old_col[e]]
    rows[at], vals[at] = inc.indices[e], inc.data[e]
    new_col = np.repeat(np.arange(cols.size), np.diff(new.indptr))
    at = ptr[cols[new_col]] + np.arange(new_col.size) - new.indptr[new_col]
    rows[at], vals[at] = new.indices, new.data
    return sparse.csc_matrix((vals, rows, ptr), shape=inc.shape)


def equal_subflows(incidence: sparse.csc_matrix, parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sub-flows of one transfer that cross the same links with the same weights, found to fold them.

    Sub-flows on one path (EVs of ``spray-blind`` or ``reps`` that hash onto it, QPs, flowlets) are
    interchangeable: a column standing for ``m`` of them with ``m`` times their incidence and one's bytes
    puts the same load on every link, and leaves a flow group's column (its members' columns weighted by
    bytes) and its largest member unchanged, so max-min rates and completion times are those of the
    unfolded sub-flows. Each column's links (and weights, where one is not 1) are laid out as a padded
    row; rows are grouped by a 64-bit linear hash of them and their parent (multipliers from
    :func:`hash64`), then compared whole with their group's first: a collision is never folded.

    Parameters
    ----------
    incidence : scipy.sparse.csc_matrix, shape (n_rows, n_subflows)
    parent : ndarray of int, shape (n_subflows,)
        The transfer of each sub-flow; only sub-flows of one transfer are folded.

    Returns
    -------
    keep : ndarray of int64, shape (n_kept,)
        The columns that stand for the others (the first of each set, in column order).
    multiplicity : ndarray of float64, shape (n_kept,)
        How many sub-flows each kept column stands for (sums to ``n_subflows``).
    """
    inc = incidence.tocsc()
    inc.sort_indices()
    ncol, ptr = inc.shape[1], inc.indptr
    nnz = np.diff(ptr)
    width = int(nnz.max(initial=0))
    col = np.repeat(np.arange(ncol), nnz)
    at = np.arange(col.size) + (col * width - ptr[col])  # entry -> its place in a padded row
    links = np.full(ncol * width, -1, np.int32)  # each column's links, padded: rows compare directly
    links[at] = inc.indices
    rows = [links.reshape(ncol, width)]
    if not (inc.data == 1.0).all():  # weights other than 1 (a plane's share): compared too
        weights = np.zeros(ncol * width)
        weights[at] = inc.data
        rows.append(weights.view(np.uint64).reshape(ncol, width))
    mix = hash64(np.arange(1, 2 * width + 2))  # per-position multipliers: a linear hash of each row
    with np.errstate(over="ignore"):
        key = np.asarray(parent, np.uint64) * mix[-1]
        for i, r in enumerate(rows):
            for j in range(width):
                key += r[:, j].astype(np.uint64) * mix[i * width + j]
    order = np.argsort(key, kind="stable")
    same = np.zeros(ncol, bool)
    same[1:] = key[order][1:] == key[order][:-1]
    rep = np.empty(ncol, np.int64)
    rep[order] = order[np.maximum.accumulate(np.where(same, 0, np.arange(ncol)))]
    # checked against the representative: a hash collision keeps its column
    equal = parent == parent[rep]
    for r in rows:
        equal &= (r == r[rep]).all(axis=1)
    rep[~equal] = np.flatnonzero(~equal)
    keep = np.flatnonzero(rep == np.arange(ncol))
    multiplicity = np.bincount(rep, minlength=ncol)[keep].astype(np.float64)
    return keep, multiplicity


def _column_max(inc: sparse.csc_matrix, values: np.ndarray) -> np.ndarray:
    """Largest of ``values`` over each column's rows of ``inc`` (0 for an empty column; ``values`` >= 0)."""
    out = np.zeros(inc.shape[1])
    filled = np.flatnonzero(np.diff(inc.indptr))
    if filled.size:
        out[filled] = np.maximum.reduceat(values[inc.indices], inc.indptr[filled])
    return out


def _route_subflows(
    topo: Topology,
    src: np.ndarray,
    dst: np.ndarray,
    parent: np.ndarray,
    qp: np.ndarray,
    share: np.ndarray,
    policy: str,
    weights: np.ndarray,
    alive: np.ndarray,
    flags: tuple[bool, bool | np.ndarray, int],
    groups: SprayGroups | None = None,
) -> Routes:
    """The incidence of sub-flows ``parent`` (their transfers), carrying ``share`` of its bytes each, with
    hash keys ``qp`` under ``policy``."""
    polarized, pxn, seed = flags
    spec = topo.spec
    n = src.size
    s, d = src[parent], dst[parent]
    ncol = parent.size
    b = _Builder()
    cols = np.arange(ncol)
    w_bytes = weights[parent] * share
    same_dom = (s // spec.domain_gpus) == (d // spec.domain_gpus)
    if same_dom.any():
        if not topo.has_scale_up_links:
            raise NoRoute(f"no scale-up path between GPU {int(s[same_dom][0])} and GPU {int(d[same_dom][0])}")
        _add_scale_up_hops(topo, b, cols[same_dom], s[same_dom], d[same_dom], alive)
    x = np.nonzero(~same_dom)[0]
    if x.size:
        if topo.dragonfly is not None:
            raise ConfigError(
                "scale_out.topology: dragonfly is sized and bounded by the formula engine (its global "
                "taper), not wired link by link; use --engine formula"
            )
        if topo.shape is None:
            raise NoRoute(
                f"GPU {int(s[x[0]])} and GPU {int(d[x[0]])} are in different domains and there is no "
                "scale-out network"
            )
        pxn_sub = np.broadcast_to(np.asarray(pxn, dtype=bool), (n,))[parent]
        # the 5-tuple's hash hash64(s, d, qp, seed): the ends mixed once per transfer, not per sub-flow
        base_h = hash64(qp[x], np.int64(seed), state=hash64(src, dst)[parent[x]])
        _route_scale_out(
            topo,
            b,
            x,
            s[x],
            d[x],
            policy,
            _SwitchHash(hash64(base_h), seed, polarized),
            pxn_sub[x],
            alive,
            w_bytes[x],
            groups,
        )
    n_rows = groups.n_rows if groups is not None else topo.n_links
    return Routes(b.matrix(n_rows, ncol), parent, share, policy, seed, groups)


def _add_scale_up_hops(
    topo: Topology, b: _Builder, cols: np.ndarray, s: np.ndarray, d: np.ndarray, alive: np.ndarray
) -> None:
    """Sub-flows ``cols`` from ``s`` to ``d`` in one domain over their scale-up hops
    (:meth:`~aifabric.cluster.topology.Topology.scale_up_hops`: through the switch, or the pair's one link
    of a full mesh); a GPU sending to itself crosses no link of a mesh."""
    if topo.is_mesh:
        moved = s != d
        cols, s, d = cols[moved], s[moved], d[moved]
    for links in topo.scale_up_hops(s, d):
        _check_alive(alive, links, s, d)
        b.add(links, cols, 1.0)


def _check_alive(alive: np.ndarray, links: np.ndarray, s: np.ndarray, d: np.ndarray) -> None:
    dead = ~alive[links]
    if dead.any():
        i = int(np.nonzero(dead)[0][0])
        raise NoRoute(
            f"GPU {int(s[i])} cannot reach GPU {int(d[i])}: link {int(links[i])} has failed and has no "
            "alternative"
        )


def _route_scale_out(
    topo: Topology,
    b: _Builder,
    cols: np.ndarray,
    s: np.ndarray,
    d: np.ndarray,
    policy: str,
    hop: _SwitchHash,
    pxn: np.ndarray,
    alive: np.ndarray,
    w_bytes: np.ndarray,
    groups: SprayGroups | None = None,
) -> None:
    """Sub-flows ``s -> d`` across domains (``hop``: their hashes at each switch): PXN relay, plane, NIC
    links and the leaf-to-leaf part."""
    shape, m = topo.shape, s.size
    assert shape is not None
    # PXN relay: same node GPU on the destination's rail
    nic_src = s.copy()
    if pxn.any() and pxn_relays_possible(topo):
        r_s, r_d = topo.rail_of(s), topo.rail_of(d)
        cross = (r_s != r_d) & pxn
        if cross.any():
            relay = s - r_s + r_d
            ci = np.nonzero(cross)[0]
            _add_scale_up_hops(topo, b, cols[ci], s[ci], relay[ci], alive)
            nic_src = np.where(cross, relay, s)
    if pcie_nic_hops(topo):
        _pcie_nic_hop(topo, b, cols, nic_src, s, d, alive)
    # plane choice
    planes = topo.planes
    if planes == 1 or policy != "spray":
        if planes == 1:
            plane = np.zeros(m, np.int64)
        elif policy == "pinning":
            plane = d % planes
        else:
            plane = (hop.at(1) % np.uint64(planes)).astype(np.int64)
        plane_w = [(plane, np.ones(m))]
    else:
        plane_w = [(np.full(m, p), np.full(m, 1.0 / planes)) for p in range(planes)]
    leaf_s = topo.leaf_of_gpu[nic_src]
    leaf_d = topo.leaf_of_gpu[d]
    for plane, pw in plane_w:
        up = topo.nic_up[plane, nic_src]
        down = topo.nic_down[plane, d]
        _check_alive(alive, up, s, d)
        _check_alive(alive, down, s, d)
        b.add(up, cols, pw)
        b.add(down, cols, pw)
        cross_leaf = leaf_s != leaf_d
        if not cross_leaf.any():
            continue
        ci = np.nonzero(cross_leaf)[0]
        if groups is not None:
            _route_groups(topo, b, groups, cols[ci], leaf_s[ci], leaf_d[ci], plane[ci], pw[ci])
            continue
        _route_between_leaves(
            topo,
            b,
            cols[ci],
            s[ci],
            d[ci],
            leaf_s[ci],
            leaf_d[ci],
            plane[ci],
            pw[ci],
            hop.rows(ci),
            policy,
            alive,
            w_bytes[ci] * pw[ci],
        )


def pcie_nic_hops(topo: Topology) -> bool:
    """Whether a GPU reaches its NIC over its own PCIe x16 link, a tier-0 link of the topology (PCIe-only
    nodes, one GPU per node included; GPUDirect RDMA), so that its NIC hop loads that link too."""
    return topo.spec.scale_up.kind == "pcie" and bool(topo.gpu_up.size and topo.gpu_up[0] >= 0)


def pxn_relays_possible(topo: Topology) -> bool:
    """Whether a cross-rail transfer can relay to its destination's rail inside its node (NCCL PXN): the
    node's GPUs have scale-up links over NVLink and one rail each. NCCL relays only through a GPU
    "connected to us through NVLink" (``src/graph/paths.cc``, v2.26.2-1 line 678: ``paths[GPU][g].type
    <= PATH_NVL``), so never on PCIe-only nodes, whose GPUs reach their own NIC."""
    spec, shape = topo.spec, topo.shape
    nvlink = spec.scale_up.kind != "pcie"
    return topo.has_scale_up_links and nvlink and shape is not None and shape.rails == spec.gpus_per_node


def _pcie_nic_hop(
    topo: Topology,
    b: _Builder,
    cols: np.ndarray,
    nic_src: np.ndarray,
    s: np.ndarray,
    d: np.ndarray,
    alive: np.ndarray,
) -> None:
    """A PCIe-only node's GPUs reach their NICs over their own x16 link (GPUDirect RDMA), the scale-up link,
    which therefore carries the NIC hop too: ``nic_src``'s link up, ``d``'s link down
    (:func:`aifabric.collectives.cost.scaleup_bound`)."""
    _check_alive(alive, topo.gpu_up[nic_src], s, d)
    _check_alive(alive, topo.gpu_down[d], s, d)
    b.add(topo.gpu_up[nic_src], cols, 1.0)
    b.add(topo.gpu_down[d], cols, 1.0)


@dataclass(frozen=True)
class _SwitchHash:
    """Each sub-flow's hash at every switch: ``hash64(base_h, seed of the switch tier)``, from
    ``state = hash64(base_h)`` computed once (:func:`hash64`'s running combination: the same values).

    A tier's seed is ``seed * 1,000,003 + 7,919 tag`` (tags 1 plane, 2 leaf up, 3 spine down, 4 spine
    up, 5 core down, 6 spine down across pods), or ``seed`` in every tier when ``polarized``.
    """

    state: np.ndarray
    seed: int
    polarized: bool

    def at(self, tag: int) -> np.ndarray:
        """uint64 hash of every sub-flow at the switch tier ``tag``."""
        tier_seed = self.seed if self.polarized else self.seed * 1_000_003 + tag * 7919
        return hash64(tier_seed, state=self.state)

    def rows(self, idx: np.ndarray) -> _SwitchHash:
        """The hashes of the sub-flows ``idx`` only."""
        return _SwitchHash(self.state[idx], self.seed, self.polarized)


def _route_groups(
    topo: Topology,
    b: _Builder,
    groups: SprayGroups,
    cols: np.ndarray,
    leaf_s: np.ndarray,
    leaf_d: np.ndarray,
    plane: np.ndarray,
    pw: np.ndarray,
) -> None:
    """Sprayed leaf-to-leaf transfers on the rows of ``groups``: the source leaf's uplinks, the
    destination leaf's downlinks and, across pods, both pods' spine-core links (:class:`SprayGroups`)."""
    b.add(groups.leaf_up[plane, leaf_s], cols, pw)
    b.add(groups.leaf_down[plane, leaf_d], cols, pw)
    pod_s, pod_d = topo.pod_of_leaf[leaf_s], topo.pod_of_leaf[leaf_d]
    xp = pod_s != pod_d
    if xp.any():
        b.add(groups.pod_up[plane[xp], pod_s[xp]], cols[xp], pw[xp])
        b.add(groups.pod_down[plane[xp], pod_d[xp]], cols[xp], pw[xp])


def one_tier_no_route(topo: Topology, s: int, d: int) -> NoRoute:
    """The refusal of a flow ``s -> d`` whose ends sit on different leaves of a one-tier fabric."""
    return NoRoute(
        f"GPU {s} and GPU {d} sit on different leaves of a one-tier fabric (rail "
        f"{int(topo.rail_of(s))} and {int(topo.rail_of(d))}) and no scale-up relay "
        "reaches the destination's rail; use scale_out.tiers: 2 or rail_optimized: false"
    )


def check_one_tier_pairs(topo: Topology, s: np.ndarray, d: np.ndarray) -> None:
    """Refuse (:func:`one_tier_no_route`) the first transfer ``s -> d`` between domains whose ends sit on
    leaves no spine joins, after the PXN relay :func:`_route_across_domains` takes (to the source node's
    GPU on the destination's rail, :func:`pxn_relays_possible`). Nothing to refuse on a fabric with
    spines."""
    shape = topo.shape
    if shape is None or shape.leaf_up != 0:
        return
    keep = topo.domain_of(s) != topo.domain_of(d)
    s, d = s[keep], d[keep]
    src = s
    if pxn_relays_possible(topo):
        src = s - topo.rail_of(s) + topo.rail_of(d)
    apart = np.nonzero(topo.leaf_of_gpu[src] != topo.leaf_of_gpu[d])[0]
    if apart.size:
        raise one_tier_no_route(topo, int(s[apart[0]]), int(d[apart[0]]))


def _cable_width(topo: Topology, n_slots: int, period: int) -> int:
    """Per-plane links one switch-to-switch cable bundles into one port: ``scale_out.uplink_speed`` over the
    per-plane link (MegaScale, NSDI 2024, Sec. 3.4: 400 G uplinks over 200 G downlinks, so "the bandwidth
    of each uplink is double of that of a downlink"), where ``n_slots`` slots cycling over ``period`` upper
    switches give every switch pair a whole number of such cables; else 1 (each link its own port)."""
    so = topo.spec.scale_out
    if so is None or so.uplink_speed_bytes_per_s is None or period < 1 or n_slots % period:
        return 1
    k = round(so.uplink_speed_bytes_per_s / topo.spec.link_bytes_per_s)
    return k if k > 1 and (n_slots // period) % k == 0 else 1


def _cable_lanes(
    table: np.ndarray,
    where: tuple[np.ndarray, np.ndarray, np.ndarray],
    bundle: tuple[int, int],
    alive: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(links, row, fraction): the per-plane links that carry the pick of port ``table[plane, switch,
    slot]`` (``where``) of each row, and the fraction of the row's bytes on each. A port bundling ``k``
    per-plane links (``bundle = (period, k)``: slots ``j`` and ``j + period`` reach the same upper switch)
    spreads them evenly over its live lanes: one port of k x the link's speed, which two flows at the NIC's
    rate share without slowing when k >= 2. ``k = 1``: the slot's link alone."""
    plane, sw, slot = where
    period, k = bundle
    if k == 1:
        return table[plane, sw, slot], np.arange(slot.size), np.ones(slot.size)
    first = slot % period + (slot // period) // k * k * period
    ids = table[plane[:, None], sw[:, None], first[:, None] + period * np.arange(k)[None, :]]
    live = alive[ids]
    share = live / np.maximum(live.sum(axis=1, keepdims=True), 1)
    r, c = np.nonzero(live)
    return ids[r, c], r, share[r, c]


def _add_on_cable(
    b: _Builder,
    table: np.ndarray,
    where: tuple[np.ndarray, np.ndarray, np.ndarray],
    cols: np.ndarray,
    pw: np.ndarray,
    bundle: tuple[int, int],
    alive: np.ndarray,
) -> None:
    """Sub-flows on ``table[plane, switch, slot]`` (``where``), a hash's pick of one port, carrying ``pw``
    each over the port's lanes (:func:`_cable_lanes`)."""
    ids, r, frac = _cable_lanes(table, where, bundle, alive)
    b.add(ids, cols[r], pw[r] * frac)


def _leaf_bundle(topo: Topology) -> tuple[int, int]:
    """(period, k) of the leaf-spine tier: leaf slots ``j`` and ``j + period`` reach the same spine."""
    shape = topo.shape
    assert shape is not None
    period = shape.n_spines if shape.tiers == 2 else shape.spines_per_pod
    return period, _cable_width(topo, shape.leaf_up, period)


def _spine_bundle(topo: Topology) -> tuple[int, int]:
    """(period, k) of the spine-core tier: spine slots ``j`` and ``j + period`` reach the same core."""
    sp, u2, cpg = _spine_core_tables(topo)
    return cpg, _cable_width(topo, u2, cpg)


def _route_between_leaves(
    topo: Topology,
    b: _Builder,
    cols: np.ndarray,
    s: np.ndarray,
    d: np.ndarray,
    leaf_s: np.ndarray,
    leaf_d: np.ndarray,
    plane: np.ndarray,
    pw: np.ndarray,
    hop: _SwitchHash,
    policy: str,
    alive: np.ndarray,
    w: np.ndarray,
) -> None:
    """Sub-flows from leaf ``leaf_s`` to leaf ``leaf_d`` on ``plane``: sprayed over every viable uplink,
    or one uplink each (hash, pinned slot or least loaded), then down (or across pods) likewise. The
    uplink tables depend on (plane, leaves) only: built once per distinct triple, not per sub-flow."""
    shape = topo.shape
    assert shape is not None
    u1 = shape.leaf_up
    if u1 == 0:  # a one-tier fabric: its leaves have no uplinks
        raise one_tier_no_route(topo, int(s[0]), int(d[0]))
    first, inv = _group_rows(plane, leaf_s, leaf_d)
    viable_u = _viable_uplinks(topo, plane[first], leaf_s[first], leaf_d[first], alive, s, d, inv)
    up_u = topo.leaf_uplinks[plane[first][:, None], leaf_s[first][:, None], np.arange(u1)[None, :]]
    pod_d = topo.pod_of_leaf[leaf_d]
    same_pod = (topo.pod_of_leaf[leaf_s] == pod_d) if shape.tiers == 3 else np.ones(s.size, bool)
    if policy == "spray":
        viable = viable_u[inv]
        wj = viable / viable.sum(axis=1, keepdims=True) * pw[:, None]  # (m, u1)
        rows, jj = np.nonzero(viable)
        b.add(up_u[inv[rows], jj], cols[rows], wj[rows, jj])
        _spray_down(topo, b, cols, rows, jj, wj[rows, jj], alive, same_pod, plane, leaf_s, leaf_d, pod_d)
        return
    slot_d = _pinned_slot(topo, s, d)
    if policy == "adaptive":
        j, jd_all = _adaptive_picks(
            topo, (plane, leaf_s, leaf_d), same_pod, viable_u, inv, w, alive, hop.seed
        )
    else:
        j, jd_all = _pick_uplink(policy, viable_u, inv, slot_d, hop), None
    _add_on_cable(b, topo.leaf_uplinks, (plane, leaf_s, j), cols, pw, _leaf_bundle(topo), alive)
    spine = topo.leaf_uplink_spine[leaf_s, j]
    # same pod / two tiers: spine -> leaf_d over one of the parallel cables
    sp = np.nonzero(same_pod)[0]
    if sp.size:
        jd = (
            jd_all[sp]
            if jd_all is not None
            else _down_pick(topo, policy, alive, (plane, leaf_d, spine), sp, slot_d, hop)
        )
        where = (plane[sp], leaf_d[sp], jd)
        _add_on_cable(b, topo.leaf_downlinks, where, cols[sp], pw[sp], _leaf_bundle(topo), alive)
    xp = np.nonzero(~same_pod)[0]
    if xp.size:
        _route_cross_pod(
            topo,
            b,
            cols[xp],
            s[xp],
            d[xp],
            plane[xp],
            spine[xp],
            leaf_d[xp],
            pod_d[xp],
            pw[xp],
            hop.rows(xp),
            policy,
            alive,
            slot_d[xp],
        )


def _adaptive_picks(
    topo: Topology,
    ends: tuple[np.ndarray, np.ndarray, np.ndarray],
    same_pod: np.ndarray,
    viable_u: np.ndarray,
    inv: np.ndarray,
    w: np.ndarray,
    alive: np.ndarray,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(j, jd) of adaptive routing: each flowlet (``ends``: plane, source and destination leaf; bytes ``w``)
    on the uplink slot ``j`` and cable down ``jd`` (-1 across pods) of the least congested path
    (:func:`_adaptive_place`, order seeded by ``seed + 17``)."""
    plane, leaf_s, leaf_d = ends
    table, base = _spine_cables(topo.leaf_uplink_spine)
    first = np.zeros(viable_u.shape[0], np.int64)
    first[inv] = np.arange(inv.size)
    u1 = viable_u.shape[1]
    up = topo.leaf_uplinks[plane[first][:, None], leaf_s[first][:, None], np.arange(u1)[None, :]]
    fab = _AdaptiveFabric(
        inv,
        np.where(viable_u, up, -1),
        topo.leaf_uplink_spine[leaf_s[first]],
        table,
        base,
        topo.leaf_uplinks,
        topo.leaf_downlinks,
        plane,
        leaf_s,
        leaf_d,
        same_pod,
        topo.link_capacity_bytes_per_s,
        alive,
        _leaf_bundle(topo),
    )
    key = plane * topo.leaf_uplinks.shape[1] + leaf_s
    return _adaptive_place(fab, key, w, np.random.default_rng(seed + 17))


def _down_pick(
    topo: Topology,
    policy: str,
    alive: np.ndarray,
    ends: tuple[np.ndarray, np.ndarray, np.ndarray],
    sp: np.ndarray,
    slot_d: np.ndarray,
    hop: _SwitchHash,
) -> np.ndarray:
    """Cable slot down from each of ``sp``'s spine (``ends``: plane, destination leaf, spine) to its leaf:
    the destination's own (``pinning``), else the spine's hash."""
    plane, leaf_d, spine = (e[sp] for e in ends)
    hh = _pinned_down_key(topo, leaf_d, slot_d[sp]) if policy == "pinning" else hop.rows(sp).at(3)
    return _pick_by_key(lambda p, ld, sw: _down_cables(topo, alive, p, ld, sw), (plane, leaf_d, spine), hh)


def _viable_uplinks(
    topo: Topology,
    plane: np.ndarray,
    leaf_s: np.ndarray,
    leaf_d: np.ndarray,
    alive: np.ndarray,
    s: np.ndarray,
    d: np.ndarray,
    inv: np.ndarray,
) -> np.ndarray:
    """(k, u1) :func:`_leaf_pair_viable` of the distinct (plane, leaf pair) rows, refusing a pair with no
    viable uplink: :class:`NoRoute` names the first sub-flow ``s[i] -> d[i]`` whose row (``inv[i]``) has
    none."""
    viable_u = _leaf_pair_viable(topo, plane, leaf_s, leaf_d, alive)
    none = (viable_u.sum(axis=1) == 0)[inv]
    if none.any():
        i = int(np.nonzero(none)[0][0])
        raise NoRoute(
            f"GPU {int(s[i])} cannot reach GPU {int(d[i])}: every equal-cost path through the spines has a "
            "failed link"
        )
    return viable_u


def _pinned_slot(topo: Topology, s: np.ndarray, d: np.ndarray) -> np.ndarray:
    """uint64 key that pins a sub-flow to its destination: the destination node's slot in its scalable
    unit on a rail-optimised fabric (``rails > 1``), else the destination's place on its leaf. A GPU with
    ``k`` NIC links in the plane is ``k`` destinations (a port, an address, each); which of them a sub-flow
    reaches is the source's index modulo ``k``, so the senders to one GPU come down all of its cables."""
    shape, so = topo.shape, topo.spec.scale_out
    assert shape is not None and so is not None
    k = so.nic_links_per_plane
    place = (
        (d // topo.spec.gpus_per_node) % max(1, shape.nodes_per_su)
        if shape.rails > 1
        else d % max(1, shape.leaf_down // k)
    )
    return (place * k + s % k).astype(np.uint64)


def _pinned_down_key(topo: Topology, leaf_d: np.ndarray, slot_d: np.ndarray) -> np.ndarray:
    """uint64 key that pins a sub-flow's last hop, spine -> ``leaf_d``, to the destination's own downlink,
    cable ``slot_d mod leaf_up`` of ``leaf_d`` (:func:`_same_switch_rank`). Every destination slot then
    comes down its own cable, as a static per-destination forwarding table does (D-mod-K, the routing of
    OpenSM's ``ftree`` engine, "congestion-free shift", linux-rdma/opensm doc/current-routing.txt: Zahavi
    et al., "Optimized InfiniBand fat-tree routing for shift all-to-all communication patterns",
    Concurrency Computat.: Pract. Exper. 22(2), 2010, doi:10.1002/cpe.1527); keying the spine's
    choice on the slot itself sent the destinations that reach one spine (slots equal modulo the spine
    count) down one of its parallel cables."""
    u1 = topo.leaf_uplink_spine.shape[1]
    return _same_switch_rank(topo.leaf_uplink_spine, leaf_d, slot_d % np.uint64(u1))


def _same_switch_rank(wiring: np.ndarray, node: np.ndarray, cable: np.ndarray) -> np.ndarray:
    """uint64 rank of uplink ``cable`` of each ``node`` among that node's parallel uplinks to the same
    switch (``wiring``: node -> the switch each uplink reaches, (n_nodes, width)). :func:`_pick_in` with
    it as key over the live cables from that switch down to ``node`` picks ``cable`` itself when it is
    live."""
    width = wiring.shape[1]
    m = np.asarray(cable).astype(np.int64)
    first, inv = _group_rows(node, m)
    rows = wiring[node[first]]  # (k, width)
    mine = rows[np.arange(first.size), m[first]]
    below = (rows == mine[:, None]) & (np.arange(width)[None, :] < m[first][:, None])
    return below.sum(axis=1).astype(np.uint64)[inv]


def _pick_uplink(
    policy: str, viable_u: np.ndarray, inv: np.ndarray, slot_d: np.ndarray, hop: _SwitchHash
) -> np.ndarray:
    """Each sub-flow's one uplink slot among the viable ones of its row ``inv`` of ``viable_u``: the
    pinned slot (``pinning``), else the hash at the leaf-up tier (``ecmp``, ``qp``)."""
    if policy == "pinning":
        return _pick_in(viable_u, inv, slot_d)
    return _pick_in(viable_u, inv, hop.at(2))


def _leaf_pair_viable(
    topo: Topology, plane: np.ndarray, leaf_s: np.ndarray, leaf_d: np.ndarray, alive: np.ndarray
) -> np.ndarray:
    """(k, u1): uplink slot j of ``leaf_s`` on ``plane`` is live and leads to ``leaf_d`` over live links
    (a live cable down from its spine in the same pod; across pods, a live path through its spine group)."""
    shape = topo.shape
    assert shape is not None
    u1 = shape.leaf_up
    lus = topo.leaf_uplink_spine
    slots = np.arange(u1)[None, :]
    viable = alive[topo.leaf_uplinks[plane[:, None], leaf_s[:, None], slots]]
    pod_s, pod_d = topo.pod_of_leaf[leaf_s], topo.pod_of_leaf[leaf_d]
    same_pod = (pod_s == pod_d) if shape.tiers == 3 else np.ones(plane.size, bool)
    sp = np.nonzero(same_pod)[0]
    if sp.size:
        down = topo.leaf_downlinks[plane[sp, None], leaf_d[sp, None], slots]
        viable[sp] &= _has_live_down(lus[leaf_d[sp]], lus[leaf_s[sp]], alive[down])
    xp = np.nonzero(~same_pod)[0]
    if xp.size:
        ok = _cross_pod_group_ok(topo, plane[xp], leaf_d[xp], pod_s[xp], pod_d[xp], alive)
        viable[xp] &= ok[:, np.arange(u1) % shape.spines_per_pod]
    return viable


def _down_cables(
    topo: Topology, alive: np.ndarray, plane: np.ndarray, leaf: np.ndarray, spine: np.ndarray
) -> np.ndarray:
    """(k, u1): downlink slot j of ``leaf`` on ``plane`` comes from ``spine`` and is live."""
    u1 = topo.leaf_uplink_spine.shape[1]
    down = topo.leaf_downlinks[plane[:, None], leaf[:, None], np.arange(u1)[None, :]]
    return (topo.leaf_uplink_spine[leaf] == spine[:, None]) & alive[down]


def _group_rows(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, inv): a representative row of every distinct row of ``keys`` (non-negative int arrays of one
    length) and each row's distinct row, so ``f(*(k[first] for k in keys))[inv]`` is ``f(*keys)`` for a
    row-wise ``f`` of the keys only. A direct table when the keys span at most ~4 codes per row (no sort),
    else :func:`numpy.unique`."""
    if keys[0].size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    dims = tuple(int(k.max()) + 1 for k in keys)
    code = np.ravel_multi_index(keys, dims)
    space = int(np.prod(dims, dtype=np.float64))
    if space <= 4 * code.size + 65_536:
        rep = np.full(space, -1, np.int64)
        rep[code] = np.arange(code.size)  # any row of a code will do: its keys are the code's
        present = rep >= 0
        return rep[present], (np.cumsum(present) - 1)[code]
    _, first, inv = np.unique(code, return_index=True, return_inverse=True)
    return first, inv.reshape(-1)


def _pick_in(table: np.ndarray, row: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Index of the (h mod count)-th True entry of each sub-flow's row ``row`` of ``table`` (k, width), -1
    where that row has none (the table is not copied per sub-flow)."""
    counts = table.sum(axis=1)
    order = np.argsort(~table, axis=1, kind="stable")  # a row's True entries first, in order
    c = counts[row]
    target = (h % np.maximum(c, 1).astype(np.uint64)).astype(np.int64)
    return np.where(c > 0, order[row, target], -1)


def _pick_by_key(table: Callable[..., np.ndarray], keys: tuple[np.ndarray, ...], h: np.ndarray) -> np.ndarray:
    """:func:`_pick_in` on ``table(*keys)`` for a ``table`` whose rows depend on their keys only: built
    once per distinct row of keys (:func:`_group_rows`), not per sub-flow. Exact."""
    first, inv = _group_rows(*keys)
    return _pick_in(table(*(k[first] for k in keys)), inv, h)


def _has_live_down(dst_slots_spine: np.ndarray, spine_of: np.ndarray, down_alive: np.ndarray) -> np.ndarray:
    """(m, u1): uplink slot j's spine has at least one live cable down to the destination leaf."""
    m, u1 = spine_of.shape
    out = np.zeros((m, u1), bool)
    # spines reachable-down from leaf_d: set of dst_slots_spine where alive
    for jd in range(u1):
        ok = down_alive[:, jd]
        out |= (spine_of == dst_slots_spine[:, jd : jd + 1]) & ok[:, None]
    return out


def _spine_core_tables(topo: Topology):
    shape = topo.shape
    assert shape is not None
    cpg = shape.n_cores // shape.spines_per_pod
    return shape.spines_per_pod, shape.spine_up, cpg


def _cross_pod_group_ok(
    topo: Topology,
    plane: np.ndarray,
    leaf_d: np.ndarray,
    pod_s: np.ndarray,
    pod_d: np.ndarray,
    alive: np.ndarray,
) -> np.ndarray:
    """(m, spines_per_pod): group g has a live path spine(pod_s,g) -> core -> spine(pod_d,g) -> leaf_d."""
    sp, u2, cpg = _spine_core_tables(topo)
    m = plane.size
    ok = np.zeros((m, sp), bool)
    lus = topo.leaf_uplink_spine
    for g in range(sp):
        sps = pod_s * sp + g
        spd = pod_d * sp + g
        upl = topo.spine_uplinks[plane[:, None], sps[:, None], np.arange(u2)[None, :]]  # (m, u2)
        core = topo.spine_uplink_core[sps]  # (m, u2)
        dnl = topo.spine_downlinks[plane[:, None], spd[:, None], np.arange(u2)[None, :]]  # core->spd, (m,u2)
        core_d = topo.spine_uplink_core[spd]
        reach = np.zeros((m, u2), bool)
        for j2 in range(u2):
            reach |= (core == core_d[:, j2 : j2 + 1]) & alive[dnl[:, j2]][:, None]
        path_up = (alive[upl] & reach).any(axis=1)
        # spine_d -> leaf_d live?
        slots = lus[leaf_d] == spd[:, None]
        leaf_dn = topo.leaf_downlinks[plane[:, None], leaf_d[:, None], np.arange(lus.shape[1])[None, :]]
        path_dn = (slots & alive[leaf_dn]).any(axis=1)
        ok[:, g] = path_up & path_dn
    return ok


def _route_cross_pod(
    topo: Topology,
    b: _Builder,
    cols: np.ndarray,
    s: np.ndarray,
    d: np.ndarray,
    plane: np.ndarray,
    spine: np.ndarray,
    leaf_d: np.ndarray,
    pod_d: np.ndarray,
    pw: np.ndarray,
    hop: _SwitchHash,
    policy: str,
    alive: np.ndarray,
    slot_d: np.ndarray,
) -> None:
    """Hashed (or pinned) sub-flows from ``spine`` up to a core, down to the spine of the same group in
    ``pod_d``, down to ``leaf_d``; each choice among the live equal-cost links of its switch."""
    sp, u2, _ = _spine_core_tables(topo)
    spd = pod_d * sp + spine % sp
    k2 = np.arange(u2)[None, :]

    def live_core(p: np.ndarray, sp_s: np.ndarray, sp_d: np.ndarray) -> np.ndarray:
        """(k, u2): uplink j of spine ``sp_s`` reaches a core with a live cable down to ``sp_d``."""
        up = topo.spine_uplinks[p[:, None], sp_s[:, None], k2]
        c_s, c_d = topo.spine_uplink_core[sp_s], topo.spine_uplink_core[sp_d]
        dn = topo.spine_downlinks[p[:, None], sp_d[:, None], k2]
        reach = np.zeros((sp_s.size, u2), bool)
        for k in range(u2):
            reach |= (c_s == c_d[:, k : k + 1]) & alive[dn[:, k]][:, None]
        return alive[up] & reach

    def core_down(p: np.ndarray, sp_d: np.ndarray, core: np.ndarray) -> np.ndarray:
        """(k, u2): downlink j to ``sp_d`` comes from ``core`` and is live."""
        dn = topo.spine_downlinks[p[:, None], sp_d[:, None], k2]
        return (topo.spine_uplink_core[sp_d] == core[:, None]) & alive[dn]

    pinned = policy == "pinning"
    # pinning, D-mod-K's second tier: the core by the destination's leaf, then down that leaf's own cable
    key2 = leaf_d.astype(np.uint64)
    j2 = _pick_by_key(live_core, (plane, spine, spd), key2 if pinned else hop.at(4))
    if (j2 < 0).any():
        i = int(np.nonzero(j2 < 0)[0][0])
        raise NoRoute(f"GPU {int(s[i])} cannot reach GPU {int(d[i])}: no live core path")
    _add_on_cable(b, topo.spine_uplinks, (plane, spine, j2), cols, pw, _spine_bundle(topo), alive)
    c = topo.spine_uplink_core[spine, j2]
    key_down = _same_switch_rank(topo.spine_uplink_core, spd, key2 % np.uint64(u2)) if pinned else hop.at(5)
    jd = _pick_by_key(core_down, (plane, spd, c), key_down)
    _add_on_cable(b, topo.spine_downlinks, (plane, spd, jd), cols, pw, _spine_bundle(topo), alive)
    jl = _pick_by_key(
        lambda p, ld, sw: _down_cables(topo, alive, p, ld, sw),
        (plane, leaf_d, spd),
        _pinned_down_key(topo, leaf_d, slot_d) if pinned else hop.at(6),
    )
    _add_on_cable(b, topo.leaf_downlinks, (plane, leaf_d, jl), cols, pw, _leaf_bundle(topo), alive)


def _spray_down(
    topo: Topology,
    b: _Builder,
    cols: np.ndarray,
    rows: np.ndarray,
    jj: np.ndarray,
    w: np.ndarray,
    alive: np.ndarray,
    same_pod: np.ndarray,
    plane: np.ndarray,
    leaf_s: np.ndarray,
    leaf_d: np.ndarray,
    pod_d: np.ndarray,
) -> None:
    """Spread each (flow, uplink) share evenly over the live next hops down to the destination leaf."""
    spine = topo.leaf_uplink_spine[leaf_s[rows], jj]
    sp_mask = same_pod[rows]
    r1, s1, w1 = rows[sp_mask], spine[sp_mask], w[sp_mask]
    if r1.size:
        cand = _down_cables(topo, alive, plane[r1], leaf_d[r1], s1)
        frac = cand / cand.sum(axis=1, keepdims=True)
        rr, kk = np.nonzero(cand)
        b.add(
            topo.leaf_downlinks[plane[r1[rr]], leaf_d[r1[rr]], kk], cols[r1[rr]], (w1[:, None] * frac)[rr, kk]
        )
    r2, s2, w2 = rows[~sp_mask], spine[~sp_mask], w[~sp_mask]
    if r2.size:
        sp, u2, cpg = _spine_core_tables(topo)
        g = s2 % sp
        spd = pod_d[r2] * sp + g
        pl = plane[r2]
        upl = topo.spine_uplinks[pl[:, None], s2[:, None], np.arange(u2)[None, :]]
        core = topo.spine_uplink_core[s2]
        core_d = topo.spine_uplink_core[spd]
        dnl = topo.spine_downlinks[pl[:, None], spd[:, None], np.arange(u2)[None, :]]
        reach = np.zeros((r2.size, u2), bool)
        for j2 in range(u2):
            reach |= (core == core_d[:, j2 : j2 + 1]) & alive[dnl[:, j2]][:, None]
        viable = alive[upl] & reach
        f2 = viable / np.maximum(viable.sum(axis=1, keepdims=True), 1)
        rr, kk = np.nonzero(viable)
        wk = (w2[:, None] * f2)[rr, kk]
        b.add(upl[rr, kk], cols[r2[rr]], wk)
        # core -> spine_d: for each chosen core, split over its live parallel cables to spine_d
        c = core[rr, kk]
        cand = (core_d[rr] == c[:, None]) & alive[dnl[rr]]
        fr = cand / np.maximum(cand.sum(axis=1, keepdims=True), 1)
        r3, k3 = np.nonzero(cand)
        b.add(dnl[rr[r3], k3], cols[r2[rr[r3]]], (wk[:, None] * fr)[r3, k3])
        # spine_d -> leaf_d
        cand2 = _down_cables(topo, alive, pl, leaf_d[r2], spd)
        fr2 = cand2 / np.maximum(cand2.sum(axis=1, keepdims=True), 1)
        r4, k4 = np.nonzero(cand2)
        b.add(topo.leaf_downlinks[pl[r4], leaf_d[r2[r4]], k4], cols[r2[r4]], (w2[:, None] * fr2)[r4, k4])
