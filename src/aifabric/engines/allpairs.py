"""Uniform all-to-all stages routed from their ranks, without their ``n (n - 1)`` pairs (issue 12, item 6).

A uniform all-to-all (:class:`~aifabric.collectives.plan.AllPairsStage`: every rank sends the same bytes
to every other, one group) moves as one flow in the engines, whose column is the sum of its pairs' columns
(:func:`~aifabric.engines.fabric.fold_transfers`). Sprayed on the groups of a healthy regular Clos
(:class:`~aifabric.engines.routing.SprayGroups`), a pair's column is its access links (NVLink hops, the
NIC up-link of the GPU that sends it on the network, the destination's NIC down-link, each plane
``1/P``, and on PCIe-only nodes those two GPUs' x16 links, all planes) plus a fabric part that depends
only on the two leaves (and pods). So the pairs sum, exactly, to

- the NVLink transfers of the fold: the pairs inside a scale-up domain, and with PXN the hop ``s -> r``
  from each rank to its node's GPU ``r`` on rail ``q``, counted once per destination on rail ``q`` in
  another domain;
- one column per pair of leaves ``(A, B)``: the traffic ``x -> d`` from the network senders ``x`` on ``A``
  to the ranks ``d`` on ``B`` in another domain. A network sender carries ``w_x`` pairs to each
  destination it serves: with PXN (rail-optimised nodes, NCCL's relay on the destination's rail) every
  GPU of a node holding ``c`` ranks sends ``c`` pairs to each rank on its rail outside its domain; without
  PXN every rank sends one to each rank outside its domain. The column puts
  ``w_x n_x(B)`` on ``x``'s NIC up-link, ``sum_x w_x`` (over the senders of ``A`` that serve ``d``) on
  ``d``'s NIC down-link, and the block total ``T_AB`` on ``A``'s uplink group, ``B``'s downlink group and,
  across pods, both pods' core groups, each divided over the ``P`` planes, where ``n_x(B)`` counts the
  ranks on ``B`` that ``x`` serves (same rail with PXN) outside ``x``'s domain.

Columns are in units of one pair's bytes; the engines give each the pair's bytes and a group of its own
stage, so rates, times and link bytes are those of the per-pair routes (tests/engines/test_fold_transfers.py).
Work and memory grow with ranks x leaves they reach, not with pairs: 16,384 GPUs on DGX H100 nodes are
~33k columns and ~2M entries instead of 268M pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

from aifabric.cluster.topology import Topology
from aifabric.engines.routing import SprayGroups, pcie_nic_hops, pxn_relays_possible, route
from aifabric.errors import ConfigError

__all__ = [
    "PER_PAIR_POLICIES",
    "AllPairsColumns",
    "all_pairs_columns",
    "all_pairs_entries",
    "per_pair_columns",
    "per_pair_entries",
    "pxn_relays",
]

#: Policies that route each pair on its own, whatever the others do (a hash of its own 5-tuple or of its
#: entropy values, a static port, or every live path): :func:`per_pair_columns` routes their pairs in
#: chunks. Adaptive routing places a flowlet by the load of those placed before it, and REPS recycles
#: entropy values by the load of all paths, so their pairs are not independent.
PER_PAIR_POLICIES = ("ecmp", "qp", "pinning", "spray", "spray-blind")

#: Summed columns of routed chunks held before they are merged into the total (a design bound: the
#: merge is linear in the entries, so merging when the held entries exceed the total's keeps the sum
#: linear in all entries; 4M entries ~ 100 MB as COO).
_MERGE_ENTRIES = 4_000_000
#: Largest (link, block) table a chunk's columns are summed in by counting (8M float64 cells, 64 MB; a
#: design bound), above which they are summed by sorting.
_DENSE_SUM_CELLS = 8_000_000


@dataclass(frozen=True)
class AllPairsColumns:
    """A uniform all-to-all's folded transfers with their columns.

    ``incidence`` (shape (n_rows, m), the rows of :class:`SprayGroups`) holds each transfer's load per
    byte of one pair; transfer ``i`` stands for the pairs ``src[i] -> dst[i]`` (NVLink) or for the traffic
    from ``src[i]``'s leaf to ``dst[i]``'s leaf (``src``/``dst``: its lowest sender and destination).
    """

    incidence: sparse.csc_matrix
    src: np.ndarray
    dst: np.ndarray


def _rail(topo: Topology, gpus: np.ndarray) -> np.ndarray:
    """Rail of each GPU id, int64 array."""
    return np.asarray(topo.rail_of(gpus), np.int64)


def pxn_relays(topo: Topology, pxn: bool) -> bool:
    """Whether cross-rail pairs relay over NVLink to the destination's rail (route's PXN rule,
    :func:`~aifabric.engines.routing.pxn_relays_possible`)."""
    return pxn and pxn_relays_possible(topo)


def all_pairs_columns(
    topo: Topology, groups: SprayGroups, ranks: np.ndarray, *, pxn: bool
) -> AllPairsColumns:
    """The folded transfers of a uniform all-to-all among ``ranks`` (distinct GPU ids), sprayed on
    ``groups``; ``pxn`` as the plan's flag (relays apply where :func:`pxn_relays` says). See the module
    docstring for the formula. Raises NoRoute (from :func:`~aifabric.engines.routing.route`) when two
    ranks of a domain have no scale-up path."""
    ranks = np.unique(np.asarray(ranks, np.int64))
    relay = pxn_relays(topo, pxn)
    s, t, count = _nvlink_transfers(topo, ranks, relay)
    nv = route(topo, s, t, policy="spray", pxn=False, aggregate=True).incidence
    nv = nv @ sparse.diags(count.astype(np.float64))
    net, src, dst = _leaf_pair_columns(topo, groups, ranks, relay)
    inc = sparse.hstack([nv, net], format="csc")
    return AllPairsColumns(inc, np.concatenate([s, src]), np.concatenate([t, dst]))


def _nvlink_transfers(topo: Topology, ranks: np.ndarray, relay: bool) -> tuple[np.ndarray, ...]:
    """(source, destination, pairs) of the NVLink transfers: every ordered pair of ranks inside a domain
    (one each) and, with ``relay``, rank ``s``'s hop to its node's GPU on rail ``q != rail(s)``, once per
    rank on rail ``q`` outside ``s``'s domain; equal transfers merged."""
    spec = topo.spec
    dom = ranks // spec.domain_gpus
    _, start, size = np.unique(dom, return_index=True, return_counts=True)
    # ranks are sorted, so grouped by domain: each rank pairs with its domain's range of ranks
    owner, pos = _expand(np.repeat(start, size), np.repeat(size, size))
    s, t = ranks[owner], ranks[pos]
    keep = s != t
    s, t, count = s[keep], t[keep], np.ones(int(keep.sum()))
    if relay:
        rails = spec.gpus_per_node
        rail = _rail(topo, ranks)
        on_rail = np.bincount(rail, minlength=rails).astype(np.float64)
        dom_rail = np.bincount(dom * rails + rail, minlength=int(dom.max() + 1) * rails)
        q = np.arange(rails)[None, :]
        hops = on_rail[None, :] - dom_rail.reshape(-1, rails)[dom][:, :]  # (n, rails)
        hops = np.where(q == rail[:, None], 0.0, hops)
        i, qq = np.nonzero(hops > 0)
        s = np.concatenate([s, ranks[i]])
        t = np.concatenate([t, ranks[i] - rail[i] + qq])
        count = np.concatenate([count, hops[i, qq]])
    key = s * spec.n_gpus + t
    uniq, inv = np.unique(key, return_inverse=True)
    return uniq // spec.n_gpus, uniq % spec.n_gpus, np.bincount(inv, weights=count)


def _senders(topo: Topology, ranks: np.ndarray, relay: bool) -> tuple[np.ndarray, np.ndarray]:
    """(network senders ``x``, pairs ``w_x`` each sends to every destination it serves)."""
    g = topo.spec.gpus_per_node
    if not relay:
        return ranks, np.ones(ranks.size)
    nodes, per_node = np.unique(ranks // g, return_counts=True)
    x = (nodes[:, None] * g + np.arange(g)[None, :]).ravel()
    return x, np.repeat(per_node.astype(np.float64), g)


def _cross_domain_sums(
    key: np.ndarray,
    dom: np.ndarray,
    o_leaf: np.ndarray,
    o_key: np.ndarray,
    o_dom: np.ndarray,
    o_weight: np.ndarray,
    n_leaves: int,
    n_keys: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every item ``i`` (its ``key``, ``dom``) and leaf ``L``: the weight of the others on ``L`` with
    the same key in another domain. Returns the nonzero (item, leaf, weight) triples, sorted by item."""
    per_leaf = np.bincount(o_leaf * n_keys + o_key, o_weight, n_leaves * n_keys).reshape(n_leaves, n_keys)
    nz_key, nz_leaf = np.nonzero(per_leaf.T)  # per key, the leaves holding others of that key
    ptr = np.searchsorted(nz_key, np.arange(n_keys + 1))
    item, pos = _expand(ptr[key], ptr[key + 1] - ptr[key])
    leaf = nz_leaf[pos]
    weight = per_leaf[leaf, key[item]]
    # minus the others of the item's own domain (same key), per leaf: classes (key, domain, leaf)
    n_dom = int(max(dom.max(initial=0), o_dom.max(initial=0))) + 1
    cls_u, cls_w = np.unique((o_key * n_dom + o_dom) * n_leaves + o_leaf, return_inverse=True)
    cls_sum = np.bincount(cls_w, o_weight)
    base = (key * n_dom + dom) * n_leaves
    lo = np.searchsorted(cls_u, base)
    s_item, s_pos = _expand(lo, np.searchsorted(cls_u, base + n_leaves) - lo)
    item = np.concatenate([item, s_item])
    leaf = np.concatenate([leaf, cls_u[s_pos] % n_leaves])
    weight = np.concatenate([weight, -cls_sum[s_pos]])
    m = sparse.coo_matrix((weight, (item, leaf)), shape=(key.size, n_leaves)).tocsr()
    m.sum_duplicates()
    m.eliminate_zeros()
    coo = m.tocoo()
    return coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data


def _expand(start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, position) of every element of the ranges ``start[i] .. start[i] + length[i] - 1``."""
    owner = np.repeat(np.arange(start.size), length)
    pos = np.repeat(start - (np.cumsum(length) - length), length) + np.arange(int(length.sum()))
    return owner, pos


def _leaf_pair_columns(
    topo: Topology, groups: SprayGroups, ranks: np.ndarray, relay: bool
) -> tuple[sparse.csc_matrix, np.ndarray, np.ndarray]:
    """One column per (sender leaf, destination leaf) with traffic (module docstring), and its lowest
    sender and destination."""
    spec, shape = topo.spec, topo.shape
    assert shape is not None
    n_leaves, planes = int(groups.leaf_up.shape[1]), topo.planes
    x, w = _senders(topo, ranks, relay)
    n_keys = spec.gpus_per_node if relay else 1
    key_x = _rail(topo, x) if relay else np.zeros(x.size, np.int64)
    key_d = _rail(topo, ranks) if relay else np.zeros(ranks.size, np.int64)
    dom_x, dom_d = x // spec.domain_gpus, ranks // spec.domain_gpus
    leaf_x, leaf_d = topo.leaf_of_gpu[x], topo.leaf_of_gpu[ranks]
    ones = np.ones(ranks.size)
    ui, ub, uv = _cross_domain_sums(key_x, dom_x, leaf_d, key_d, dom_d, ones, n_leaves, n_keys)
    uv = uv * w[ui]  # x's pairs into leaf B
    di, da, dv = _cross_domain_sums(key_d, dom_d, leaf_x, key_x, dom_x, w, n_leaves, n_keys)
    blocks, up_col = np.unique(leaf_x[ui] * n_leaves + ub, return_inverse=True)
    down_col = np.searchsorted(blocks, da * n_leaves + leaf_d[di])
    total = np.bincount(up_col, uv, blocks.size)
    a, b = blocks // n_leaves, blocks % n_leaves
    rows, cols, vals = [], [], []
    for p in range(planes):
        rows += [topo.nic_up[p, x[ui]], topo.nic_down[p, ranks[di]]]
        cols += [up_col, down_col]
        vals += [uv / planes, dv / planes]
        xl = np.nonzero(a != b)[0]
        fabric = [groups.leaf_up[p, a[xl]], groups.leaf_down[p, b[xl]]]
        pa, pb = topo.pod_of_leaf[a[xl]], topo.pod_of_leaf[b[xl]]
        xp = np.nonzero(pa != pb)[0]
        pods = [groups.pod_up[p, pa[xp]], groups.pod_down[p, pb[xp]]] if xp.size else []
        rows += fabric + pods
        cols += [xl, xl] + ([xl[xp], xl[xp]] if xp.size else [])
        vals += [total[xl] / planes] * 2 + ([total[xl[xp]] / planes] * 2 if xp.size else [])
    if pcie_nic_hops(topo):  # every plane's NIC bytes first cross the GPU's own x16 link
        rows += [topo.gpu_up[x[ui]], topo.gpu_down[ranks[di]]]
        cols += [up_col, down_col]
        vals += [uv, dv]
    inc = sparse.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(groups.n_rows, blocks.size),
    )
    return inc, *_block_pair(blocks.size, x, ui, up_col, key_x, dom_x, ranks, di, down_col, key_d, dom_d)


def _block_pair(
    n_blocks: int,
    x: np.ndarray,
    ui: np.ndarray,
    up_col: np.ndarray,
    key_x: np.ndarray,
    dom_x: np.ndarray,
    ranks: np.ndarray,
    di: np.ndarray,
    down_col: np.ndarray,
    key_d: np.ndarray,
    dom_d: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """A pair that each leaf-pair column carries, to name it: its lowest sender and the lowest
    destination that sender serves (same key, another domain)."""
    big = np.iinfo(np.int64).max
    first = np.full(n_blocks, big)
    np.minimum.at(first, up_col, ui)  # index of the lowest sender (x is sorted)
    d = di[key_d[di] == key_x[first[down_col]]]
    col = down_col[key_d[di] == key_x[first[down_col]]]
    ok = dom_d[d] != dom_x[first[col]]
    dst = np.full(n_blocks, big)
    np.minimum.at(dst, col[ok], ranks[d[ok]])
    return x[first], dst


def all_pairs_entries(topo: Topology, ranks: np.ndarray, *, pxn: bool) -> float:
    """Upper bound on the incidence entries of :func:`all_pairs_columns`, from counts (no pair arrays):
    NVLink pairs inside domains and PXN hops (2 each), plus, per plane, every sender's and every
    destination's NIC entries, one per leaf holding ranks it exchanges with, and 4 per leaf pair."""
    nv, nic, blocks = _entry_counts(topo, ranks, pxn)
    return 2 * nv + (topo.planes + pcie_nic_hops(topo)) * nic + topo.planes * 4 * blocks


def per_pair_entries(topo: Topology, ranks: np.ndarray, *, pxn: bool, subflows: int) -> float:
    """Upper bound on the entries of :func:`per_pair_columns`: those of :func:`all_pairs_entries` with
    each leaf pair's fabric part on every uplink of both leaves and, with three tiers, every core link
    of both pods' spines of its group (per plane), and at most 8 per sub-flow of every pair."""
    nv, nic, blocks = _entry_counts(topo, ranks, pxn)
    shape = topo.shape
    fabric = 0.0
    if shape is not None:
        fabric = 2.0 * (shape.leaf_up + (shape.spine_up * shape.spines_per_pod if shape.tiers == 3 else 0))
    n = float(np.unique(np.asarray(ranks)).size)
    nics = (topo.planes + pcie_nic_hops(topo)) * nic
    return min(2 * nv + nics + topo.planes * fabric * blocks, 8.0 * subflows * n * (n - 1))


def _entry_counts(topo: Topology, ranks: np.ndarray, pxn: bool) -> tuple[float, float, float]:
    """(NVLink transfers, NIC entries of one plane, leaf pairs) of an all-to-all among ``ranks`` (upper
    bounds, from counts per domain, leaf and rail)."""
    ranks = np.unique(np.asarray(ranks, np.int64))
    spec = topo.spec
    relay = pxn_relays(topo, pxn)
    per_dom = np.bincount(ranks // spec.domain_gpus).astype(np.float64)
    nv = float((per_dom * per_dom).sum()) + (ranks.size * (spec.gpus_per_node - 1) if relay else 0.0)
    x, _ = _senders(topo, ranks, relay)
    n_keys = spec.gpus_per_node if relay else 1
    key_x = _rail(topo, x) if relay else np.zeros(x.size, np.int64)
    key_d = _rail(topo, ranks) if relay else np.zeros(ranks.size, np.int64)
    leaves = _n_leaves(topo)
    reach_d = np.bincount(_leaf(topo, ranks) * n_keys + key_d, minlength=leaves * n_keys) > 0
    reach_x = np.bincount(_leaf(topo, x) * n_keys + key_x, minlength=leaves * n_keys) > 0
    per_key_d = reach_d.reshape(leaves, n_keys).sum(axis=0)
    per_key_x = reach_x.reshape(leaves, n_keys).sum(axis=0)
    nic = float(per_key_d[key_x].sum() + per_key_x[key_d].sum())
    return nv, nic, float((per_key_x * per_key_d).sum())


def per_pair_columns(
    topo: Topology,
    ranks: np.ndarray,
    *,
    policy: str,
    seed: int,
    qps: int,
    polarized: bool,
    pxn: bool,
    link_alive: np.ndarray | None,
    chunk_pairs: int,
) -> tuple[AllPairsColumns, float]:
    """A uniform all-to-all under a policy of :data:`PER_PAIR_POLICIES`, its pairs routed as
    :func:`~aifabric.engines.routing.route` routes them (same hashes, so ECMP's unevenness, for the same
    seed) in chunks of about ``chunk_pairs``, and their sub-flows' columns summed per block: the pairs of
    one domain over NVLink, and the pairs from one leaf (that of the GPU whose NIC sends them, the PXN
    relay where there is one) to another. The all-to-all is one flow group whose column is the sum of its
    sub-flows' (all of ``1/k`` of a pair's bytes, ``k`` sub-flows per pair), so blocks of equal bytes
    summed are exact, and memory grows with the links each block uses, not with pairs.

    Returns the columns (sums of sub-flow columns, on the topology's links) and the share of a pair's
    bytes each carries (``1/k``). Raises ConfigError for another policy, NoRoute as route does.
    """
    if policy not in PER_PAIR_POLICIES:
        raise ConfigError(
            f"routing: {policy!r} does not route pairs independently; use one of {PER_PAIR_POLICIES}"
        )
    ranks = np.unique(np.asarray(ranks, np.int64))
    n, n_gpus = ranks.size, topo.spec.n_gpus
    n_blocks = _n_leaves(topo) ** 2 + int(topo.spec.n_gpus // topo.spec.domain_gpus + 1)
    acc = sparse.csc_matrix((topo.n_links, n_blocks))
    parts: list[sparse.coo_matrix] = []
    first = np.full(n_blocks, np.iinfo(np.int64).max)
    share = 1.0
    step = max(1, chunk_pairs // max(n, 1))
    for a in range(0, n, step):
        src = np.repeat(ranks[a : a + step], n)
        dst = np.tile(ranks, src.size // n)
        keep = src != dst
        src, dst = src[keep], dst[keep]
        r = route(
            topo,
            src,
            dst,
            policy=policy,
            seed=seed,
            qps=qps,
            polarized=polarized,
            pxn=pxn,
            link_alive=link_alive,
        )
        block = _pair_block(topo, src, dst, pxn)
        np.minimum.at(first, block, src * n_gpus + dst)
        parts.append(_block_sums(r.incidence.tocoo(), block[r.parent], (topo.n_links, n_blocks)))
        if sum(p.nnz for p in parts) > max(_MERGE_ENTRIES, acc.nnz):  # each entry merged O(1) times
            acc, parts = _summed([acc.tocoo(), *parts], acc.shape), []
        share = float(r.share[0]) if r.share.size else share
    acc = _summed([acc.tocoo(), *parts], acc.shape)
    used = np.nonzero(first < np.iinfo(np.int64).max)[0]
    return AllPairsColumns(acc[:, used], first[used] // n_gpus, first[used] % n_gpus), share


def _block_sums(inc: sparse.coo_matrix, col_block: np.ndarray, shape: tuple[int, int]) -> sparse.coo_matrix:
    """``inc`` (rows x sub-flows) with its columns summed per block (``col_block``: each column's), shape
    ``shape``: by a dense count over (row, block of the chunk) when that table is small (no sort), else
    by the conversion to CSC."""
    blocks, local = np.unique(col_block, return_inverse=True)
    space = shape[0] * blocks.size
    if space > _DENSE_SUM_CELLS:
        return sparse.csc_matrix((inc.data, (inc.row, col_block[inc.col])), shape).tocoo()
    sums = np.bincount(inc.row * blocks.size + local.reshape(-1)[inc.col], inc.data, space)
    nz = np.flatnonzero(sums)
    return sparse.coo_matrix((sums[nz], (nz // blocks.size, blocks[nz % blocks.size])), shape)


def _summed(parts: list[sparse.coo_matrix], shape: tuple[int, int]) -> sparse.csc_matrix:
    """The sum of sparse matrices of one ``shape`` (duplicates summed in the conversion to CSC)."""
    rows = np.concatenate([p.row for p in parts])
    cols = np.concatenate([p.col for p in parts])
    return sparse.csc_matrix((np.concatenate([p.data for p in parts]), (rows, cols)), shape)


def _n_leaves(topo: Topology) -> int:
    """Leaves (1 without a scale-out network)."""
    return max(1, int(topo.leaf_of_gpu.max(initial=0)) + 1)


def _leaf(topo: Topology, gpus: np.ndarray) -> np.ndarray:
    """Leaf of each GPU, 0 for a GPU without one (no scale-out network)."""
    return np.maximum(topo.leaf_of_gpu[gpus], 0)


def _pair_block(topo: Topology, src: np.ndarray, dst: np.ndarray, pxn: bool) -> np.ndarray:
    """Block of each pair (:func:`per_pair_columns`): ``leaves^2 + domain`` inside a domain, else
    ``leaf(sender) * leaves + leaf(dst)`` with the PXN relay as sender where route relays."""
    spec = topo.spec
    leaves = _n_leaves(topo)
    dom_s = src // spec.domain_gpus
    nic = src
    if pxn_relays(topo, pxn):
        r_s, r_d = _rail(topo, src), _rail(topo, dst)
        nic = np.where(r_s != r_d, src - r_s + r_d, src)
    out = _leaf(topo, nic) * leaves + _leaf(topo, dst)
    return np.where(dom_s == dst // spec.domain_gpus, leaves * leaves + dom_s, out)
