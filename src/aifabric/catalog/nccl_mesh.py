"""NCCL's ring search on a switchless NVLink mesh: which rings it builds, and what they load each link with.

On an NVSwitch node every GPU reaches any peer over its whole NVLink bandwidth, and NCCL's rings
(:func:`aifabric.catalog.nccl.search_channels`) can run at it. On a full mesh with no switch (a 4 x GH200
or GB200 NVL4 board, 4 x V100 all-to-all) each ordered pair of GPUs has its own links, ``p`` NVLink links
of NCCL's per-link rate ``b`` (``topo.cc`` ``ncclTopoConnectNodes`` adds a pair's links into one of
``p b`` GB/s), and a ring channel of speed ``s`` takes ``s`` off every directed pair it crosses
(``search.cc`` ``followPath``). Which set of rings the search ends with is decided by its depth-first order,
its speed ladder and its time budget, so it is computed here by running the search itself
(:func:`mesh_ring_search`, a port of ``ncclTopoCompute`` for one node of GPUs joined only by direct
NVLink: no NIC, no NVSwitch, no CPU on the path).

The rate a ring all_reduce then gets is set by its busiest directed pair: each of the ``C`` channels
carries ``1/C`` of the bytes, a pair crossed by ``k`` of them moves ``k/C`` of them over its ``p b``, so a
GPU's ring rate is::

    B_ring = p b C / k_max

(:meth:`MeshRings.ring_share` is ``C / k_max``). Where the rings spread evenly (``k`` equal on every
pair) that is ``(g - 1) p b``, the GPU's whole NVLink; where they do not, less. On 4 GPUs the complete
directed graph has no decomposition into 3 directed Hamiltonian cycles (Tillson 1980: none for n = 4, 6),
but its 6 directed Hamiltonian cycles, each once, load every pair twice: the search finds that set at
some speeds and not at others.

References
----------
NVIDIA/nccl ``src/graph/search.cc`` (``ncclTopoCompute``, ``ncclTopoSearchRec``, ``ncclTopoSearchRecGpu``,
``ncclTopoSearchNextGpuSort``, ``ncclTopoCompareGraphs``, ``ncclTopoDupChannels``), v2.19.1-v2.30.7.
The 2.18 releases differ, and are searched as the later ones: their pass 2 raises no ring's speed and
they duplicate after it, with a global budget of 2^18 (2.18.1) or 5 x 2^16 (2.18.3) steps; of the meshes
searched here only 8 Hopper GPUs at 123.6 GB/s a pair come out otherwise (16 x 30 GB/s, not 16 x 40).
``src/graph/topo.h`` (``SM70/SM90/SM100_NVLINK_BW``). T. W. Tillson, "A Hamiltonian decomposition of
K*_2m, 2m >= 8", J. Combin. Theory B 29 (1980) 68-74, doi:10.1016/0095-8956(80)90044-1.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field, replace
from functools import cache, lru_cache
from typing import TYPE_CHECKING, NamedTuple

from aifabric.catalog.nccl import NcclRelease, tuning_arch
from aifabric.errors import ConfigError
from aifabric.lazy_import import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # only pair_loads reads numpy: the search itself runs on floats

__all__ = ["MESH_SEARCH_MAX_GPUS", "MeshRings", "mesh_ring_search", "mesh_search_applies"]

#: The most GPUs a switchless full mesh joins, and so the most this ring search is run over: an 8-GPU
#: platform whose GPUs each have one link to each of their 7 peers (AMD Instinct MI300X and MI355X platforms,
#: 7 xGMI / Infinity Fabric links a GPU; catalogue scaleup.yaml), where NVIDIA's meshes stop at 4 (GH200,
#: GB200 NVL4, V100 boards). More GPUs need a switch; the depth-first search's cost grows with g!.
MESH_SEARCH_MAX_GPUS = 8

#: search.cc: the global budget of search steps and the budget of one search (different / same channels)
_GLOBAL_TIMEOUT = 1 << 19
_TIMEOUT = 1 << 14
_TIMEOUT_SAME_CHANNELS = 1 << 8
#: search.cc ncclTopoSearchRecGpu: the next GPU of a ring in PCI order (the first channel) or the
#: previous channel's order (every later one), else every order the sort gives
_FREE, _PCI, _REPLAY = 0, 1, 2
#: search.cc: walk down the speeds while the next is above this share of the best found
_SPEED_RATIO = 0.49
#: search.cc ncclTopoCompute, no graph found ("falling back to simple order"): one channel in GPU order at
#: this bwIntra, GB/s
_FALLBACK_GBPS = 0.1


@dataclass(frozen=True)
class MeshRings:
    """The ring graph NCCL's search builds on a full mesh of ``gpus`` GPUs (:func:`mesh_ring_search`).

    ``rings`` holds each channel's GPU order (after ``ncclTopoDupChannels``), ``channel_gbps`` the graph's
    ``bwIntra`` (GB/s a channel), ``pair_gbps`` NCCL's bandwidth of one ordered pair.
    """

    gpus: int
    pair_gbps: float
    channel_gbps: float
    rings: tuple[tuple[int, ...], ...]

    @property
    def channels(self) -> int:
        """The graph's channels, ``C``."""
        return len(self.rings)

    def pair_loads(self) -> np.ndarray:
        """``(g, g)`` channels crossing each directed pair ``i -> j``."""
        loads = np.zeros((self.gpus, self.gpus), np.int64)
        for ring in self.rings:
            loads[ring, np.roll(ring, -1)] += 1
        return loads

    def ring_share(self) -> float:
        """``C / k_max``: a GPU's ring rate in units of one pair's bandwidth (module docstring)."""
        loads: dict[tuple[int, int], int] = {}
        for ring in self.rings:
            for pair in zip(ring, ring[1:] + ring[:1], strict=True):
                loads[pair] = loads.get(pair, 0) + 1
        return self.channels / max(loads.values())


@dataclass
class _Graph:
    """search.cc's ``ncclTopoGraph``, the fields a one-node ring search reads and writes."""

    speed: float
    same_channels: bool = True
    min_channels: int = 1
    max_channels: int = 32
    rings: list[tuple[int, ...]] = field(default_factory=list)
    hops: int = 0

    def copy(self) -> _Graph:
        return replace(self, rings=list(self.rings))


def _f32(x: float) -> float:
    """``x`` rounded to single precision, as a C ``float`` holds it."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


@lru_cache(maxsize=1 << 12)
def _sub_round(a: float, b: float) -> float:
    """search.cc ``SUB_ROUND``: ``roundf((a - b) * 1000) / 1000`` in single precision (``roundf`` rounds
    halves away from zero). Cached: a search subtracts the same few speeds from the same few link states
    hundreds of thousands of times, and the packing to single precision is most of its cost."""
    scaled = _f32(_f32(_f32(a) - _f32(b)) * 1000.0)
    rounded = float(int(abs(scaled) + 0.5)) * (1.0 if scaled >= 0 else -1.0)
    return _f32(_f32(rounded) / 1000.0)


class _RingSearch:
    """One ``ncclTopoCompute`` ring search on ``g`` GPUs, every ordered pair ``pair_gbps`` (module docstring).

    State as in search.cc: ``left[i][j]`` the bandwidth still free on pair ``i -> j``, ``used[i]`` a bit per
    channel under construction, ``order`` the channel being built, ``time`` the steps left.
    """

    def __init__(self, gpus: int, pair_gbps: float, max_channels: int) -> None:
        self.g = gpus
        self.pair = _f32(pair_gbps)
        self.left = [[0.0 if i == j else self.pair for j in range(gpus)] for i in range(gpus)]
        self.used = [0] * gpus
        self.order: list[int] = [0] * gpus
        self.time = 0
        self.best = _Graph(speed=0.0, max_channels=max_channels)

    def follow(self, graph: _Graph, src: int | None, dst: int, mult: int) -> bool:
        """search.cc ``ncclTopoFollowPath`` on a direct link: take (``mult`` 1) or give back (-1) a channel's
        speed on ``src -> dst``; False where the link has too little left."""
        if src is None:
            return True
        if mult == 1 and self.left[src][dst] < graph.speed:
            return False
        self.left[src][dst] = _sub_round(self.left[src][dst], graph.speed * mult)
        graph.hops += mult
        return True

    def better(self, graph: _Graph) -> bool:
        """search.cc ``ncclTopoCompareGraphs`` for rings: more ``nChannels x bwIntra``, then fewer hops."""
        if len(graph.rings) < graph.min_channels:
            return False
        mine, ref = len(graph.rings) * graph.speed, len(self.best.rings) * self.best.speed
        return mine > ref or (mine == ref and graph.hops < self.best.hops)

    def next_gpus(self, graph: _Graph, gpu: int) -> list[int]:
        """search.cc ``ncclTopoSearchNextGpuSort`` on a uniform mesh: the unused GPUs from ``gpu + 1`` on."""
        flag = 1 << len(graph.rings)
        peers = ((gpu + i) % self.g for i in range(1, self.g))
        return [p for p in peers if not self.used[p] & flag]

    def try_gpu(self, graph: _Graph, step: int, forced: int, src: int | None, gpu: int) -> None:
        """search.cc ``ncclTopoSearchTryGpu``."""
        if not self.follow(graph, src, gpu, 1):
            return
        flag = 1 << len(graph.rings)
        self.used[gpu] ^= flag
        self.rec_gpu(graph, gpu, step, forced)
        self.used[gpu] ^= flag
        self.follow(graph, src, gpu, -1)

    def rec_gpu(self, graph: _Graph, gpu: int, step: int, forced: int) -> None:
        """search.cc ``ncclTopoSearchRecGpu`` for a one-node ring (``backToFirstRank = g - 1``)."""
        if self.time <= 0:
            return
        self.time -= 1
        if step == self.g:
            self.channel_done(graph)
            return
        self.order[step] = gpu
        if step < self.g - 1:
            for nxt in self.step_choices(graph, gpu, step, forced):
                self.try_gpu(graph, step + 1, forced, gpu, nxt)
            return
        first = self.order[0]
        if self.follow(graph, gpu, first, 1):
            self.rec_gpu(graph, first, step + 1, forced)
            self.follow(graph, gpu, first, -1)

    def step_choices(self, graph: _Graph, gpu: int, step: int, forced: int) -> list[int]:
        """The GPUs tried after ``gpu``: PCI order, the previous channel's order, or the sorted peers."""
        if forced == _PCI:
            return [step + 1]
        if forced == _REPLAY:
            return [graph.rings[-1][step + 1]]
        return self.next_gpus(graph, gpu)

    def channel_done(self, graph: _Graph) -> None:
        """A ring closed (search.cc ``step == ngpus``): keep the graph if better, then search one more."""
        graph.rings.append(tuple(self.order))
        if self.better(graph):
            self.best = graph.copy()
            if len(graph.rings) == graph.max_channels:
                self.time = -1
        if len(graph.rings) < graph.max_channels:
            saved = list(self.order)
            self.search(graph)
            self.order = saved
        graph.rings.pop()

    def search(self, graph: _Graph) -> None:
        """search.cc ``ncclTopoSearchRec`` on one node: PCI order first, else the previous channel's order;
        then every start GPU unless the channels must repeat."""
        if not graph.rings:
            self.try_gpu(graph, 0, _PCI, None, 0)
        else:
            self.try_gpu(graph, 0, _REPLAY, None, graph.rings[-1][0])
        if not graph.same_channels or not graph.rings:
            for gpu in range(self.g):
                self.try_gpu(graph, 0, _FREE, None, gpu)

    def run(self, graph: _Graph) -> int:
        """One search of ``graph`` (its rings emptied) under its budget; the steps left (-1: optimal)."""
        self.time = _TIMEOUT_SAME_CHANNELS if graph.same_channels else _TIMEOUT
        graph.rings = []
        self.search(graph)
        return self.time


class _Tables(NamedTuple):
    """What the search reads of a release's row: ``search_speeds_intra``, ``dup_min_bw``,
    ``dup_min_bw_many_channels`` and the ring graph's ``maxChannels`` (``MAXCHANNELS / 2``, init.cc).
    Releases whose rows agree share one cached search."""

    speeds: tuple[float, ...]
    dup_min_gbps: float
    dup_min_gbps_many: float
    max_channels: int


def _dup_channels(graph: _Graph, tables: _Tables) -> _Graph:
    """search.cc ``ncclTopoDupChannels``: every ring twice (at most ``maxChannels``), at half the speed,
    unless the speed is under ``dup_min_bw`` (``dup_min_bw_many_channels`` with more than 4 channels)."""
    n = len(graph.rings)
    limit = tables.dup_min_gbps_many if n > 4 else tables.dup_min_gbps
    if n == 0 or graph.speed < limit:
        return graph
    doubled = min(2 * n, graph.max_channels)
    rings = (graph.rings * 2)[:doubled]
    return replace(graph, rings=rings, speed=graph.speed / -(-doubled // n))


def _first_pass(search: _RingSearch, speeds: tuple[float, ...], start: int, total_gbps: float) -> None:
    """search.cc ``ncclTopoCompute`` pass 1: from speed ``start`` down, same channels then different ones,
    until a search is optimal, fills the GPU, runs out of budget or the speeds fall under 0.49 x the best."""
    graph = _Graph(speed=speeds[start], max_channels=search.best.max_channels)
    budget, index = _GLOBAL_TIMEOUT, start
    while True:
        budget -= _TIMEOUT_SAME_CHANNELS if graph.same_channels else _TIMEOUT
        left = search.run(graph)
        best = search.best
        if left == -1 or len(best.rings) * best.speed >= total_gbps:
            return
        if graph.same_channels:
            graph.same_channels = False
            continue
        graph.same_channels = True
        budget += left
        if budget < 0 and best.rings:
            return
        if index < len(speeds) - 1 and (not best.rings or speeds[index + 1] / best.speed > _SPEED_RATIO):
            index += 1
            graph.speed = speeds[index]
            continue
        return


def _second_pass(search: _RingSearch, speeds: tuple[float, ...]) -> None:
    """search.cc ``ncclTopoCompute`` pass 2: from the duplicated graph, try each faster speed with at least
    its channels while a search ends within its budget (an optimal one, ``time`` -1, goes on too)."""
    index = next((i for i, s in enumerate(speeds) if s <= search.best.speed), len(speeds) - 1)
    graph = replace(search.best.copy(), min_channels=len(search.best.rings))
    left = -1
    while left != 0 and index > 0:
        index -= 1
        graph.speed = speeds[index]
        left = search.run(graph)


def mesh_ring_search(release: NcclRelease, arch: str, gpus: int, pair_gbps: float) -> MeshRings:
    """The ring graph NCCL builds on ``gpus`` GPUs joined all-to-all by direct links of ``pair_gbps`` each
    way (NCCL's per-link constant x the pair's links), module docstring.

    ``ncclTopoCompute`` for one node without NICs or NVSwitch: the start speed is the fastest of the
    release's ``search_speeds_intra`` row at or under a pair's bandwidth; pass 1 searches down the speeds,
    ``ncclTopoDupChannels`` doubles the best graph, pass 2 tries faster speeds with as many channels.
    Budgets (``NCCL_SEARCH_TIMEOUT`` 2^14 steps, 2^8 with the same channels, 2^19 in all) as search.cc.

    4 x V100 (2 links a pair, 40 GB/s): 6 channels of 20 GB/s, every pair crossed twice, ``C / k_max`` =
    3: the whole 120 GB/s. 4 x GB200 (6 links, 240.6 GB/s; NCCL 2.30): 8 x 80 then 16 x 40, the 8 pairs of
    the two ring orders it repeats crossed 6 times, the 4 others 4: ``C / k_max`` = 16/6, 641.6 GB/s of the
    GPU's 721.8. A pair slower than the release's slowest speed holds no channel: NCCL falls back to one
    ring in GPU order at 0.1 GB/s.

    Raises
    ------
    ConfigError
        Fewer than 2 GPUs, more than 8 (the most a node meshes without a switch; the search's depth-first
        cost grows with the factorial of the GPUs), or a ``pair_gbps`` not positive and finite.
    """
    if not 2 <= gpus <= MESH_SEARCH_MAX_GPUS or not 0 < pair_gbps < math.inf:
        raise ConfigError(
            f"mesh: a ring search over 2-{MESH_SEARCH_MAX_GPUS} GPUs of positive, finite pair bandwidth, got "
            f"{gpus} x {pair_gbps:g}"
        )
    row = tuning_arch(release, arch)
    many = release.dup_min_bw_many_channels[row]
    tables = _Tables(
        tuple(release.search_speeds_intra[row]), release.dup_min_bw[row], many, release.max_channels // 2
    )
    return _mesh_ring_search(tables, gpus, float(pair_gbps))


def mesh_search_applies(library: str, mesh_links: int, gpus: int, pair_gbps: float) -> bool:
    """Whether NCCL's ring search over direct links (:func:`mesh_ring_search`) builds the rings of ``gpus``
    ranks of one domain: a full mesh (``mesh_links`` per GPU, 0 on a switch), under NCCL (RCCL's xGMI rings
    follow its own topology models), 2 to :data:`MESH_SEARCH_MAX_GPUS` ranks, a pair of positive, finite
    ``pair_gbps``."""
    return (
        mesh_links > 0
        and library == "nccl"
        and 2 <= gpus <= MESH_SEARCH_MAX_GPUS
        and 0 < pair_gbps < math.inf
    )


@cache
def _mesh_ring_search(tables: _Tables, gpus: int, pair_gbps: float) -> MeshRings:
    """:func:`mesh_ring_search` on one release row's ``tables`` (cached)."""
    speeds = tables.speeds
    search = _RingSearch(gpus, pair_gbps, tables.max_channels)
    start = next((i for i, s in enumerate(speeds) if s <= pair_gbps), len(speeds) - 1)
    _first_pass(search, speeds, start, pair_gbps * (gpus - 1))
    search.best = _dup_channels(search.best, tables)
    _second_pass(search, speeds)
    best = search.best
    if not best.rings:
        return MeshRings(gpus, pair_gbps, _FALLBACK_GBPS, (tuple(range(gpus)),))
    return MeshRings(gpus=gpus, pair_gbps=pair_gbps, channel_gbps=best.speed, rings=tuple(best.rings))
