"""Topology: the physical graph built from a ClusterSpec, held in arrays.

Devices are numbered: GPUs ``0 .. n_gpus-1`` first, then one scale-up switch per domain, then the scale-out
switches of each plane tier by tier (leaves, spines, cores). Every cable is two directed links; link ``i``
has a per-direction capacity (bytes/s), a latency (s), a network and a tier:

    tier 0  GPU <-> scale-up switch (NVSwitch; on a    network "scale-up"
            PCIe-only node the GPU's x16 link, one GPU
            per node included); on a full mesh
            GPU <-> GPU, one cable per pair
    tier 1  GPU's NIC <-> leaf                        network "scale-out"
    tier 2  leaf <-> spine                            network "scale-out"
    tier 3  spine <-> core                            network "scale-out"

Rail-optimised wiring (NVIDIA DGX SuperPOD reference architecture): local GPU ``k`` of every node of a
scalable unit (SU) goes to leaf ``k`` of that SU, so same-rail traffic is one leaf hop. A two-tier Clos with
radix ``k`` and leaf down:up ratio ``r`` gives each leaf ``d = floor(k r/(r+1))`` GPU ports and
``u = ceil(d/r)`` uplinks, spread round-robin over the spines. Three tiers group leaves into pods whose
spines each send ``u2`` uplinks to one group of cores (a folded Clos, Al-Fares et al., SIGCOMM 2008)::

                core[g=0] ...             core[g=1] ...
               /        \\                /
        spine0(pod0)   spine0(pod1)   spine1(pod0) ...
          |   \\   ...
        leaf0 leaf1 ... (one per rail per SU)
          |     |
        GPU0  GPU1   of node 0, node 1, ...  (rail k = local GPU k)

A full-mesh scale-up (catalogue ``topology: full_mesh``: AMD Infinity Fabric, 7 xGMI links per MI300X, one to
each peer of its 8-GPU platform; a 4 x GH200 node's NVLink wired all-to-all) has no switch: every pair of
a domain's GPUs is one cable of one link's rate, ``B_line / L`` per direction (``L`` links per GPU: an
MI300X's 7 xGMI links of 16 lanes at 32 Gb/s, 128 GB/s both ways each (Wheeler, "AMD Looks to Infinity for
AI Interconnects", wheelersnetwork.com, January 2024; the catalogue's 896 GB/s per GPU), 64 GB/s per
direction per pair), so a transfer between two GPUs crosses its pair's link and nothing else, and a domain
holds at most ``L + 1`` GPUs::

        gpu0 ---- gpu1          gpu0 -> gpu2: the one link gpu0->gpu2
         | \\    / |
         |   \\/   |             (4 GPUs, 3 links each: 6 cables)
         |   /\\   |
         | /    \\ |
        gpu3 ---- gpu2

A NIC that ``gpus_per_nic`` GPUs share (AWS p4d: 2 A100 per 100 Gb/s EFA) is one cable to its leaf; its
GPUs reach it over PCIe (not modelled: a PCIe Gen4 x16 path carries more than the NIC) and their
``nic_up`` / ``nic_down`` entries name the same link, so their flows share it. The cable hangs off the
NIC's first GPU's device id; rail ``k`` is the node's ``k``-th NIC.

A route from GPU 0 of node 0 to GPU 0 of node 40 on 64-port switches (32 nodes per SU) climbs
NIC -> leaf(SU0, rail 0) -> one of 32 spines -> leaf(SU1, rail 0) -> GPU: four links, two of them chosen
among 32 equal-cost uplinks. Front-end and management networks are counted (parts, power, bandwidth per
GPU) but not wired link by link.

The arrays stay cheap at 100k GPUs: a 32,768-GPU three-tier fabric has about 230k directed links.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from aifabric import catalog
from aifabric.budget import check_memory
from aifabric.cluster.clos import ClosShape, built_clos, clos_shape
from aifabric.cluster.dragonfly import DragonflyShape, dragonfly_shape
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError

__all__ = [
    "NETWORKS",
    "ClosShape",
    "Topology",
    "build_topology",
    "cached_topology",
    "clos_shape",
    "index_dtype",
    "scale_up_hub",
    "topology_bytes",
]

NETWORKS = ("scale-up", "scale-out", "front-end", "storage", "in-band", "management")
TIER_NAMES = ("gpu-nvswitch", "nic-leaf", "leaf-spine", "spine-core")
# The device a scale-up domain's GPUs meet at, by ``scale_up.kind``: NVSwitch, or on a PCIe node the
# host's PCIe switches and root complex (NCCL's P2P/SHM path); a kind not named here is NVSwitch.
_SCALE_UP_HUB = {"pcie": "pcie"}


def scale_up_hub(kind: str) -> str:
    """Name of the device a scale-up domain of ``kind`` meets at: ``nvswitch``, or ``pcie`` on PCIe.

    >>> scale_up_hub("pcie"), scale_up_hub("nvswitch")
    ('pcie', 'nvswitch')
    """
    return _SCALE_UP_HUB.get(kind, "nvswitch")


@dataclass(frozen=True, eq=False)
class Topology:
    """The physical graph of a cluster, as arrays (see the module docstring for numbering).

    Attributes
    ----------
    spec : ClusterSpec
        What it was built from.
    shape : ClosShape or None
        Port arithmetic of one scale-out plane.
    n_devices : int
        GPUs + scale-up switches + scale-out switches.
    link_src, link_dst : ndarray[int32 or int64], shape (n_links,)
        Device ids of each directed link (int64 beyond 2**31 - 1 devices).
    link_capacity_bytes_per_s : ndarray[float64], shape (n_links,)
        Per-direction capacity.
    link_latency_s : ndarray[float64], shape (n_links,)
    link_tier : ndarray[int8], shape (n_links,)
        0 GPU-NVSwitch, 1 NIC-leaf, 2 leaf-spine, 3 spine-core.
    link_plane : ndarray[int8 or wider], shape (n_links,)
        Plane of each link, in the smallest integer type that holds the plane count.
    gpu_up, gpu_down : ndarray[int64], shape (n_gpus,)
        Scale-up link ids GPU -> its NVSwitch and back (-1 without a scale-up switch, a full mesh included).
    mesh_pair_link : ndarray[int64], shape (g, g)
        On a full-mesh scale-up of ``g`` GPUs per domain, the link id from local GPU ``i`` to local GPU
        ``j`` of the first domain (-1 for ``i == j``); domain ``k``'s is ``k`` :attr:`mesh_domain_links`
        further. Shape (0, 0) without a mesh.
    nic_up, nic_down : ndarray[int64], shape (planes, n_gpus)
        NIC -> leaf and leaf -> NIC link ids of each GPU's NIC (the same link for GPUs sharing a NIC). A
        GPU's ``k = nic_links_per_plane`` NICs of one plane run between the same two devices, the GPU and
        its leaf: the graph holds them as one link of ``k`` links' capacity (parallel links between one
        pair of devices carry evenly spread bytes as one), and :attr:`cable_counts` counts ``k`` cables.
    leaf_of_gpu : ndarray[int64], shape (n_gpus,)
        Leaf index (0-based within a plane).
    leaf_uplinks, leaf_downlinks : ndarray[int64], shape (planes, n_leaves, leaf_up)
        Leaf -> spine links and their reverse (spine -> leaf).
    leaf_uplink_spine : ndarray[int64], shape (n_leaves, leaf_up)
        Spine index (within a plane) reached by each leaf uplink.
    spine_uplinks, spine_downlinks : ndarray[int64], shape (planes, n_spines, spine_up)
    spine_uplink_core : ndarray[int64], shape (n_spines, spine_up)
    pod_of_leaf : ndarray[int64], shape (n_leaves,)
    link_reverse : ndarray[int64], shape (n_links,)
        The other direction of each link's cable.
    dragonfly : DragonflyShape or None
        A dragonfly scale-out's counts (``scale_out.topology: dragonfly``): counted for parts, power and
        bisection, not wired link by link (``shape`` is None; the links and flow engines refuse it).
    """

    spec: ClusterSpec
    shape: ClosShape | None
    n_devices: int
    link_src: np.ndarray
    link_dst: np.ndarray
    link_capacity_bytes_per_s: np.ndarray
    link_latency_s: np.ndarray
    link_tier: np.ndarray
    link_plane: np.ndarray
    gpu_up: np.ndarray
    gpu_down: np.ndarray
    nic_up: np.ndarray
    nic_down: np.ndarray
    leaf_of_gpu: np.ndarray
    leaf_uplinks: np.ndarray
    leaf_downlinks: np.ndarray
    leaf_uplink_spine: np.ndarray
    spine_uplinks: np.ndarray
    spine_downlinks: np.ndarray
    spine_uplink_core: np.ndarray
    pod_of_leaf: np.ndarray
    link_reverse: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    device_offsets: dict[str, int] = field(default_factory=dict)
    mesh_pair_link: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    dragonfly: DragonflyShape | None = None

    @property
    def is_mesh(self) -> bool:
        """Whether the scale-up domains are full meshes (one link per pair of GPUs, no switch)."""
        return self.mesh_pair_link.size > 0

    @property
    def mesh_domain_links(self) -> int:
        """Cables of one full-mesh domain, ``g (g - 1) / 2`` (0 without a mesh): its link ids' stride."""
        g = self.mesh_pair_link.shape[0]
        return g * (g - 1) // 2

    @property
    def has_scale_up_links(self) -> bool:
        """Whether GPUs have tier-0 links: to a scale-up switch (NVSwitch, PCIe) or to their mesh peers."""
        return self.is_mesh or bool(self.gpu_up.size and self.gpu_up[0] >= 0)

    def scale_up_hops(self, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, ...]:
        """Link ids that transfers ``src[i] -> dst[i]`` inside one scale-up domain cross, one array per
        hop: ``(GPU -> switch, switch -> GPU)``, or on a full mesh ``(the pair's direct link,)``.

        Raises
        ------
        ValueError
            On a mesh, if a GPU sends to itself (it crosses no link: callers leave such transfers out).
        """
        if not self.is_mesh:
            return self.gpu_up[src], self.gpu_down[dst]
        if np.any(src == dst):
            gpu = int(src[src == dst][0])
            raise ValueError(f"scale_up_hops: GPU {gpu} sends to itself over no mesh link")
        g = self.spec.domain_gpus
        return (self.mesh_pair_link[src % g, dst % g] + (src // g) * self.mesh_domain_links,)

    @property
    def n_gpus(self) -> int:
        """GPUs."""
        return self.spec.n_gpus

    @property
    def n_links(self) -> int:
        """Directed links."""
        return int(self.link_src.size)

    @property
    def planes(self) -> int:
        """Scale-out planes."""
        return int(self.nic_up.shape[0])

    @property
    def gpus_per_nic(self) -> int:
        """GPUs sharing one scale-out NIC (its ``nic_up`` link): 1 unless the spec's NIC is shared."""
        return self.spec.scale_out.gpus_per_nic if self.spec.scale_out else 1

    def gpu_nic_bytes_per_s(self, gpu: int = 0) -> float:
        """A GPU's share of its scale-out NIC, all planes together, bytes/s per direction: the capacity of
        its ``nic_up`` links over the GPUs sharing them (AWS p4d: 100 Gb/s EFA / 2 = 6.25 GB/s)."""
        return float(self.link_capacity_bytes_per_s[self.nic_up[:, gpu]].sum()) / self.gpus_per_nic

    def node_of(self, gpu: int | np.ndarray) -> int | np.ndarray:
        """Node (server) index of GPU ids."""
        return gpu // self.spec.gpus_per_node

    def domain_of(self, gpu: int | np.ndarray) -> int | np.ndarray:
        """Scale-up domain index of GPU ids."""
        return gpu // self.spec.domain_gpus

    def rail_of(self, gpu: int | np.ndarray) -> int | np.ndarray:
        """Rail of GPU ids: the local index of the GPU's NIC modulo the number of rails (the GPU's own
        local index when no NIC is shared)."""
        rails = self.shape.rails if self.shape else 1
        return ((gpu % self.spec.gpus_per_node) // self.gpus_per_nic) % rails

    def link_label(self, link: int) -> str:
        """Human name of a directed link: ``leaf[3]->spine[7] (plane 0)``."""
        return (
            f"{self._device_name(int(self.link_src[link]))}->{self._device_name(int(self.link_dst[link]))}"
            + (f" (plane {int(self.link_plane[link])})" if self.planes > 1 else "")
        )

    def _device_name(self, dev: int) -> str:
        offs = sorted(self.device_offsets.items(), key=lambda kv: kv[1])
        name, base = "gpu", 0
        for n, off in offs:
            if dev >= off:
                name, base = n, off
        return f"{name}[{dev - base}]"

    def tier_name(self, tier: int) -> str:
        """Name of link tier ``tier``: :data:`TIER_NAMES`, tier 0 named for this cluster's scale-up device
        (``gpu-pcie`` on a PCIe node)."""
        if tier == 0:
            return "gpu-gpu" if self.is_mesh else f"gpu-{scale_up_hub(self.spec.scale_up.kind)}"
        return TIER_NAMES[tier]

    @cached_property
    def switch_counts(self) -> dict[str, int]:
        """Switches per tier over all planes: ``{"nvswitch": .., "leaf": .., "spine": .., "core": ..}``."""
        s = self.shape
        p = self.planes
        return {
            # a one-GPU PCIe node's x16 link (a tier-0 link) is no scale-up domain
            "scale-up domain": self.spec.n_domains
            if self.has_scale_up_links and self.spec.domain_gpus > 1
            else 0,
            "leaf": (s.n_leaves * p) if s else 0,
            "spine": (s.n_spines * p) if s else 0,
            "core": (s.n_cores * p) if s else 0,
        }

    @cached_property
    def cable_counts(self) -> dict[str, int]:
        """Scale-out cables per tier (each a full-duplex link): ``nic-leaf`` (one per NIC link: a GPU's
        NIC links of a plane are one graph link, :attr:`nic_up`), ``leaf-spine``, ``spine-core``."""
        so = self.spec.scale_out
        nic_cables = so.nic_links_per_plane if so else 1  # cables behind one nic-leaf graph link
        out = {}
        for tier in (1, 2, 3):
            links = int(np.count_nonzero(self.link_tier == tier)) // 2
            out[self.tier_name(tier)] = links * (nic_cables if tier == 1 else 1)
        return out


def index_dtype(largest: int, smallest: type[np.signedinteger] = np.int32) -> type[np.signedinteger]:
    """The narrowest integer type, ``smallest`` or wider (up to int64), that holds ``0 .. largest``.

    Raises
    ------
    ConfigError
        If ``largest`` exceeds int64 (a spec the bounds of :mod:`aifabric.cluster.spec` let through).
    """
    for dtype in (np.int8, np.int16, np.int32, np.int64):
        if np.iinfo(dtype).max >= max(largest, np.iinfo(smallest).max):
            return dtype
    raise ConfigError(f"topology: {largest:,} ids do not fit a 64-bit integer")


def _alloc(n: int, n_devices: int, planes: int) -> dict[str, np.ndarray]:
    """Link arrays for ``n`` directed links; device and plane ids in dtypes sized from the counts
    (int32 device ids up to 2**31 - 1 devices, int64 beyond; int16 planes up to 32,767)."""
    dev = index_dtype(n_devices - 1)
    return {
        "src": np.empty(n, dev),
        "dst": np.empty(n, dev),
        "cap": np.empty(n, np.float64),
        "lat": np.empty(n, np.float64),
        "tier": np.empty(n, np.int8),
        "plane": np.zeros(n, index_dtype(planes - 1, np.int16)),
        "rev": np.empty(n, np.int64),
    }


class _LinkWriter:
    """Appends cables (two directed links each) into preallocated arrays; returns (up_ids, down_ids)."""

    def __init__(self, n_cables: int, n_devices: int, planes: int) -> None:
        self.a = _alloc(2 * n_cables, n_devices, planes)
        self.n = 0

    def cables(
        self, lo: np.ndarray, hi: np.ndarray, cap: float, lat: float, tier: int, plane: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        k = lo.size
        up = np.arange(self.n, self.n + k, dtype=np.int64)
        down = up + k
        a = self.a
        a["src"][up], a["dst"][up] = lo, hi
        a["src"][down], a["dst"][down] = hi, lo
        sl = slice(self.n, self.n + 2 * k)
        a["cap"][sl], a["lat"][sl], a["tier"][sl], a["plane"][sl] = cap, lat, tier, plane
        a["rev"][up], a["rev"][down] = down, up
        self.n += 2 * k
        return up, down


@dataclass(frozen=True)
class _Counts:
    has_su: bool
    mesh: bool  # the scale-up domains are full meshes: a cable per pair of GPUs, no switch
    shape: ClosShape | None
    planes: int
    n_cables: int
    n_devices: int
    uplinks: int  # leaf and spine uplink slots of one plane


def _counts(spec: ClusterSpec) -> _Counts:
    """Cables, devices and uplink slots of ``spec``'s topology, from port arithmetic only."""
    n = spec.n_gpus
    has_su = _has_gpu_links(spec)
    mesh = has_su and spec.mesh_links_per_gpu > 0
    shape = built_clos(spec)  # None for one domain whose Clos cannot be built: NICs, no leaf
    planes = spec.scale_out.planes if spec.scale_out else 1
    g = spec.domain_gpus
    n_cables = (spec.n_domains * g * (g - 1) // 2 if mesh else n) if has_su else 0
    n_devices = n + (spec.n_domains if has_su and not mesh else 0)
    uplinks = 0
    if shape:
        uplinks = shape.n_leaves * shape.leaf_up + shape.n_spines * shape.spine_up
        n_cables += planes * (spec.n_endpoints + uplinks)
        n_devices += planes * (shape.n_leaves + shape.n_spines + shape.n_cores)
    return _Counts(has_su, mesh, shape, planes, n_cables, n_devices, uplinks)


def _has_gpu_links(spec: ClusterSpec) -> bool:
    """Whether each GPU has a tier-0 link: on a scale-up domain of several GPUs (not a torus, which is not
    wired link by link), and on a PCIe-only node of one GPU with NICs, whose GPU reaches its NIC over its
    own x16 link (GPUDirect RDMA through the PCIe switch or root port), the link that bounds its NIC hop
    as it does on a node of several PCIe GPUs (:func:`aifabric.collectives.tiers.domain_nic_bytes_per_s`,
    ``B_pcie``)."""
    if spec.scale_up.kind == "torus":
        return False
    return spec.domain_gpus > 1 or (spec.scale_up.kind == "pcie" and spec.scale_out is not None)


def topology_bytes(spec: ClusterSpec) -> float:
    """Estimate of the bytes :func:`build_topology` allocates for ``spec``, from counts (no allocation).

    Each directed link holds two device ids (4 bytes, 8 beyond 2**31 devices), capacity, latency and
    reverse id (8 bytes each), tier (1) and plane (2): ``35`` bytes, ``70`` per cable, plus ``16`` per cable
    of transient link ids. Per GPU ``8 (2 planes + 8)`` bytes of int64 tables (NIC links per plane, leaf,
    node, rail, SU, temporaries); per uplink slot ``8 (2 planes + 6)`` (link tables, spine/core indices)::

        bytes = 86 C + 8 n (2 p + 8) + 8 U (2 p + 6)

    with ``C`` cables, ``n`` GPUs, ``p`` planes and ``U`` leaf + spine uplink slots of one plane. Checked
    against ``tracemalloc``'s peak in ``tests/cluster/test_budget.py`` (within 1x-2x of the measured peak).

    Raises
    ------
    ConfigError
        If the fabric cannot be built (see :func:`clos_shape`).
    """
    c = _counts(spec)
    idx = np.dtype(index_dtype(c.n_devices - 1)).itemsize
    per_cable = 2 * (2 * idx + 8 + 8 + 8 + 1 + 2) + 16
    n, p = spec.n_gpus, c.planes
    return float(per_cable * c.n_cables + 8 * n * (2 * p + 8) + 8 * c.uplinks * (2 * p + 6))


def build_topology(spec: ClusterSpec) -> Topology:
    """Build the physical graph of ``spec`` (see the module docstring).

    Cost is linear in GPUs: about 1 s and a few hundred MB for 100k GPUs (see ``benchmarks/``).

    Raises
    ------
    ConfigError
        If the scale-out fabric cannot be built (see :func:`clos_shape`), or its arrays would need more
        memory than the limit of :mod:`aifabric.budget` (estimate: :func:`topology_bytes`).
    """
    n = spec.n_gpus
    c = _counts(spec)
    check_memory(f"the topology of {spec.n_gpus:,} GPUs", topology_bytes(spec), "gpus")
    w = _LinkWriter(c.n_cables, c.n_devices, c.planes)
    gpus = np.arange(n, dtype=np.int64)
    offsets = {"gpu": 0}
    next_dev = n
    gpu_up = gpu_down = np.full(n, -1, np.int64)
    mesh_pair_link = np.zeros((0, 0), np.int64)
    if c.mesh:
        mesh_pair_link = _cable_mesh(spec, w)
    elif c.has_su:
        offsets[scale_up_hub(spec.scale_up.kind)] = next_dev
        nvs = next_dev + gpus // spec.domain_gpus
        next_dev += spec.n_domains
        gpu_up, gpu_down = w.cables(
            gpus, nvs, spec.scaleup_line_rate_bytes_per_s, spec.scaleup_link.hop_latency_s, 0
        )
    if c.shape is None:
        scale_out = _no_scale_out(n, c.planes)
    else:
        scale_out, next_dev = _cable_scale_out(spec, c.shape, w, c.planes, next_dev, offsets)
    a = w.a
    m = w.n
    assert next_dev == c.n_devices and m == 2 * c.n_cables
    return Topology(
        spec=spec,
        shape=c.shape,
        n_devices=next_dev,
        link_src=a["src"][:m],
        link_dst=a["dst"][:m],
        link_capacity_bytes_per_s=a["cap"][:m],
        link_latency_s=a["lat"][:m],
        link_tier=a["tier"][:m],
        link_plane=a["plane"][:m],
        gpu_up=gpu_up,
        gpu_down=gpu_down,
        link_reverse=a["rev"][:m],
        device_offsets=offsets,
        mesh_pair_link=mesh_pair_link,
        dragonfly=_dragonfly(spec),
        **scale_out,
    )


def _dragonfly(spec: ClusterSpec) -> DragonflyShape | None:
    """The dragonfly of a ``scale_out.topology: dragonfly`` spec of several domains, else None."""
    so = spec.scale_out
    if so is None or so.topology != "dragonfly":
        return None
    return dragonfly_shape(spec)


def _cable_mesh(spec: ClusterSpec, w: _LinkWriter) -> np.ndarray:
    """Cable every pair of GPUs of each full-mesh domain at one link's rate, ``B_line / L`` per direction
    (module docstring); returns :attr:`Topology.mesh_pair_link`. Domain ``k``'s cables follow domain
    ``k - 1``'s, in the same pair order, so its link ids are the first domain's plus ``k`` cables."""
    g, domains = spec.domain_gpus, spec.n_domains
    i, j = np.triu_indices(g, 1)
    base = (np.arange(domains, dtype=np.int64) * g)[:, None]
    cap = spec.scaleup_line_rate_bytes_per_s / spec.mesh_links_per_gpu
    up, down = w.cables((base + i).ravel(), (base + j).ravel(), cap, spec.scaleup_link.hop_latency_s, 0)
    table = np.full((g, g), -1, np.int64)
    table[i, j], table[j, i] = up[: i.size], down[: i.size]
    return table


def _no_scale_out(n: int, planes: int) -> dict[str, np.ndarray]:
    """The scale-out arrays of a :class:`Topology` (by field name) without a scale-out fabric: -1 ids,
    empty tables."""
    nic = np.full((planes, n), -1, np.int64)
    empty2 = np.full((planes, 0, 0), -1, np.int64)
    none2 = np.zeros((0, 0), np.int64)
    return {
        "nic_up": nic,
        "nic_down": nic,
        "leaf_of_gpu": np.full(n, -1, np.int64),
        "leaf_uplinks": empty2,
        "leaf_downlinks": empty2,
        "leaf_uplink_spine": none2,
        "spine_uplinks": empty2,
        "spine_downlinks": empty2,
        "spine_uplink_core": none2,
        "pod_of_leaf": np.zeros(0, np.int64),
    }


def _leaf_of_endpoint(spec: ClusterSpec, shape: ClosShape) -> np.ndarray:
    """Each endpoint's leaf: rail-optimised, NIC k of every node of a scalable unit on that unit's rail-k
    leaf; otherwise consecutive endpoints fill each leaf's downlinks."""
    assert spec.scale_out is not None
    eps = np.arange(spec.n_endpoints, dtype=np.int64)
    if spec.scale_out.rail_optimized:
        rail = (eps % spec.endpoints_per_node) % shape.rails
        su = eps // spec.endpoints_per_node // shape.nodes_per_su
        return su * shape.rails + rail
    return eps * spec.scale_out.nic_links_per_plane // shape.leaf_down  # an endpoint's first port


def _leaf_spine_wiring(shape: ClosShape) -> tuple[np.ndarray, np.ndarray]:
    """The leaf of each leaf uplink (flat) and the spine each uplink reaches, (n_leaves, leaf_up)."""
    leaf_idx = np.repeat(np.arange(shape.n_leaves), shape.leaf_up)
    j = np.tile(np.arange(shape.leaf_up), shape.n_leaves)
    if shape.tiers == 2:
        # uplink j of every leaf goes to spine j mod n_spines: each spine takes the same bundle from every
        # leaf (clos.bundled_spread), the same bundle to each spine when n_spines divides leaf_up
        return leaf_idx, (j % shape.n_spines).reshape(shape.n_leaves, shape.leaf_up)
    pod = leaf_idx // shape.leaves_per_pod
    return leaf_idx, (pod * shape.spines_per_pod + j % shape.spines_per_pod).reshape(
        shape.n_leaves, shape.leaf_up
    )


def _spine_core_wiring(shape: ClosShape) -> tuple[np.ndarray, np.ndarray]:
    """The spine of each spine uplink (flat) and the core each uplink reaches, (n_spines, spine_up)."""
    sp = np.repeat(np.arange(shape.n_spines), shape.spine_up)
    j2 = np.tile(np.arange(shape.spine_up), shape.n_spines)
    group = sp % shape.spines_per_pod
    pod = sp // shape.spines_per_pod
    cores_per_group = shape.n_cores // shape.spines_per_pod
    suc = (group * cores_per_group + (pod * shape.spine_up + j2) % cores_per_group).reshape(
        shape.n_spines, shape.spine_up
    )
    return sp, suc


def _cable_scale_out(
    spec: ClusterSpec, shape: ClosShape, w: _LinkWriter, planes: int, next_dev: int, offsets: dict[str, int]
) -> tuple[dict[str, np.ndarray], int]:
    """Cable every plane of the scale-out fabric (NIC-leaf, leaf-spine, spine-core) into ``w``, adding the
    first leaf, spine and core ids to ``offsets``; the arrays and the next free device id."""
    so = spec.scale_out
    assert so is not None
    n = spec.n_gpus
    # a link's latency: the switch it climbs into (each tier its own part), or scale_out.hop_latency
    hop, hop2, hop3 = (
        so.hop_latency_s if so.hop_latency_s is not None else catalog.switch(key).latency_s
        for key in so.tier_switches.values()
    )
    link_cap = spec.link_bytes_per_s
    nic_cap = link_cap * so.nic_links_per_plane  # a GPU's NIC links of one plane, one graph link
    # each GPU's endpoint (its NICs, or the NIC it shares)
    ep_of_gpu = np.arange(n, dtype=np.int64) // so.gpus_per_nic
    eps = np.arange(spec.n_endpoints, dtype=np.int64)
    leaf_of_ep = _leaf_of_endpoint(spec, shape)
    out = _no_scale_out(n, planes)
    out["nic_up"] = nic_up = np.empty((planes, n), np.int64)
    out["nic_down"] = nic_down = np.empty((planes, n), np.int64)
    out["leaf_of_gpu"] = leaf_of_ep[ep_of_gpu]
    out["pod_of_leaf"] = np.arange(shape.n_leaves, dtype=np.int64) // shape.leaves_per_pod
    if shape.tiers >= 2:
        out["leaf_uplinks"] = lu = np.empty((planes, shape.n_leaves, shape.leaf_up), np.int64)
        out["leaf_downlinks"] = ld = np.empty_like(lu)
        leaf_idx, out["leaf_uplink_spine"] = _leaf_spine_wiring(shape)
        lus = out["leaf_uplink_spine"]
    if shape.tiers == 3:
        out["spine_uplinks"] = sus = np.empty((planes, shape.n_spines, shape.spine_up), np.int64)
        out["spine_downlinks"] = sud = np.empty_like(sus)
        sp, out["spine_uplink_core"] = _spine_core_wiring(shape)
        suc = out["spine_uplink_core"]
    for p in range(planes):
        base_leaf = next_dev
        offsets.setdefault("leaf", base_leaf)
        next_dev += shape.n_leaves
        base_spine = next_dev
        offsets.setdefault("spine", base_spine)
        next_dev += shape.n_spines
        base_core = next_dev
        offsets.setdefault("core", base_core)
        next_dev += shape.n_cores
        up, down = w.cables(eps * so.gpus_per_nic, base_leaf + leaf_of_ep, nic_cap, hop, 1, p)
        nic_up[p], nic_down[p] = up[ep_of_gpu], down[ep_of_gpu]
        if shape.tiers >= 2:
            up, down = w.cables(base_leaf + leaf_idx, base_spine + lus.ravel(), link_cap, hop2, 2, p)
            lu[p], ld[p] = up.reshape(lu.shape[1:]), down.reshape(lu.shape[1:])
        if shape.tiers == 3:
            up, down = w.cables(base_spine + sp, base_core + suc.ravel(), link_cap, hop3, 3, p)
            sus[p], sud[p] = up.reshape(sus.shape[1:]), down.reshape(sus.shape[1:])
    return out, next_dev


@lru_cache(maxsize=8)
def cached_topology(spec: ClusterSpec) -> Topology:
    """:func:`build_topology`, memoised per spec (a sweep of sizes on one cluster builds it once).

    The Topology's arrays are shared between callers: treat them as read-only.
    """
    return build_topology(spec)
