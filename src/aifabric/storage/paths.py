"""The path of storage traffic from one node's GPUs to the file system, stage by stage, and its bottleneck.

Per-node storage rate (reference/storage-optics-scale-across.md sec. 1.3, modelling rule):

    rate = min( GPU<->host PCIe x GPUs,          (each GPU's x16 link, per direction)
                host bounce buffer,              (only without GPUDirect Storage)
                network ports x payload eff.,    (the node's storage-fabric ports where the cluster
                                                  has a storage fabric, else its front-end NICs; a TPU
                                                  host without either: its DCN; STORAGE_ROUTES)
                network ports / oversubscription x payload eff.,   (its leaf's share of uplinks)
                file-system per-client cap,
                NFS mount: nconnect x one connection's rate,     (only where storage.nconnect or
                                                                  nfs_transport describes the mount)
                file-system aggregate / nodes moving data at once,
                storage servers' NICs x payload eff. / nodes moving data at once )

The last is the servers' own network ports (``storage.unit_nic`` x ``unit_nics`` on each of ``units``
servers): whatever their drives deliver leaves through them, so they bound the aggregate where the system
publishes none (DeepSeek 3FS: 180 servers of 2 x 200 Gb/s InfiniBand, 8.64 TB/s at the HDR payload).

Node-local storage (a catalogue system of ``kind: local``: NVMe drives inside the GPU server) has no network
and no sharing: the path is the GPUs' PCIe links and the node's own drives, ``storage.units`` counting the
drives in each node, and no other node's transfer takes any of them::

    rate = min( GPU<->host PCIe x GPUs, host bounce buffer (no GDS), the node's drives x each drive's rate,
                the node's drives x each drive's own link )

A drive moves no more than its own link carries (catalogue ``unit_link``: a D7-PS1010's PCIe 5.0 x4, 15.75
GB/s), so a stated write rate (``storage.aggregate_write``, for drives whose maker publishes none) above
``units`` such links is bounded by them, and a node's writes grow with its drives as its reads do.

(gds-report.pages.dev, gdsio from four Solidigm D7-PS1010 in raid0 into four L40S: 53.0 GiB/s, "~91% of the
58 GB/s theoretical aggregate (4 x 14.5 GB/s)", against 49.15 GB/s when the bytes were priced over a 400 GbE
front-end port the drives never cross.)

and a transfer of ``S`` bytes per node takes ``S / rate``; the stage that sets the minimum is named.

An NFS mount moves its data over ``nconnect`` transport connections (Linux's default: one, over TCP), each
carrying a bounded rate whatever the port: one TCP connection about 2 GB/s ("the 2 GB/s limit of a single
mount", G. K. Lockwood on VAST NFS; blocksandfiles, "plain NFS over one TCP link ~2 GB/s per mount"), so a
node of one default mount reaches 8 % of a 200 Gb/s port. A Lablup/SKT B200 cluster's checkpoints over NFS
reached 1.4-10.4 % of theirs (arXiv:2605.09370).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from aifabric import catalog
from aifabric.cluster.spec import ClusterSpec, StorageSpec
from aifabric.errors import ConfigError

__all__ = [
    "BOUNCE_BUFFER_BYTES_PER_S",
    "LOCAL_KIND",
    "STORAGE_ROUTES",
    "NodePath",
    "Transfer",
    "aggregates_above_ports",
    "node_path",
    "storage_network",
    "transfer_time",
]

LOCAL_KIND = "local"
"""Catalogue ``kind`` of node-local storage: drives in the GPU server, reached without the front-end."""

BOUNCE_BUFFER_BYTES_PER_S = 50e9
"""Host-memory bounce path per node without GDS: 'CPU system memory -> GPU bandwidth is limited to 50 GB/s'
in a DGX-2 (NVIDIA GPUDirect Storage blog, developer.nvidia.com/blog/gpudirect-storage/)."""

Direction = Literal["read", "write"]


@dataclass(frozen=True)
class NodePath:
    """Rates of each stage of one node's storage path, bytes/s per direction (None: not a limit)."""

    stages: dict[str, float]

    @property
    def rate_bytes_per_s(self) -> float:
        """The slowest stage, bytes/s."""
        return min(self.stages.values())

    @property
    def bottleneck(self) -> str:
        """Name of the slowest stage."""
        return min(self.stages, key=lambda k: self.stages[k])


@dataclass(frozen=True)
class Transfer:
    """``bytes_per_node`` moved by every node at once in ``seconds``, limited by ``bottleneck``."""

    bytes_per_node: float
    seconds: float
    bottleneck: str
    rate_bytes_per_s: float
    stages: dict[str, float]


def _aggregate(spec: ClusterSpec, direction: Direction) -> float | None:
    st = spec.storage
    if st is None:
        return None
    given = st.aggregate_read_bytes_per_s if direction == "read" else st.aggregate_write_bytes_per_s
    if given is not None:
        return given
    system = catalog.storage(st.system)
    unit = system.unit_read_bytes_per_s if direction == "read" else system.unit_write_bytes_per_s
    if st.units is not None:
        if unit is None and st.unit_nic is not None:
            return None  # no drive-side figure: the servers' NICs (their own stage) bound the aggregate
        if unit is None:
            raise ConfigError(
                f"storage.units: {st.system!r} publishes no per-unit {direction} bandwidth; "
                f"give storage.aggregate_{direction}"
            )
        return st.units * unit
    agg = system.aggregate_read_bytes_per_s if direction == "read" else system.aggregate_write_bytes_per_s
    if agg is None:
        fix = (
            f"storage.units or storage.aggregate_{direction}"
            if unit is not None
            else (f"storage.aggregate_{direction} (it publishes no per-unit figure)")
        )
        raise ConfigError(f"storage: {st.system!r} needs {fix}; the catalogue has no deployment-wide figure")
    return agg


def node_path(
    spec: ClusterSpec,
    *,
    direction: Direction,
    active_nodes: int,
    gpus: int | None = None,
    gds: bool | None = None,
) -> NodePath:
    """Stage rates of one node's storage path when ``active_nodes`` nodes move data at once.

    Parameters
    ----------
    spec : ClusterSpec
        Needs ``storage``, and a ``storage_fabric``, ``front_end`` with NICs or an accelerator with a
        data-centre network (TPU); the first of these carries the traffic (:data:`STORAGE_ROUTES`).
    direction : {"read", "write"}
        Read (restore, data loading) or write (checkpoint).
    active_nodes : int
        Nodes moving data at the same time (they share the file system's aggregate).
    gpus : int, optional
        GPUs of the node whose data crosses PCIe (default: all of the node's). 0 leaves PCIe out (data
        already in host memory, as in an asynchronous drain).
    gds : bool, optional
        GPUDirect Storage: GPU memory <-> NIC directly. Without it the data bounces through host memory.
        Default: the storage system's own (its catalogue ``gds``; 3FS's USRBIO client reads and writes
        host memory, so its data always takes the bounce).

    Raises
    ------
    ConfigError
        No front-end NICs (nor DCN) or no storage in the spec; a storage system without the figures needed.
    """
    if active_nodes < 1:
        raise ValueError(f"active_nodes must be >= 1, got {active_nodes!r}")
    if spec.storage is None:
        raise ConfigError(
            "storage: this cluster names no storage system (add storage: {system: ..., units: ...})"
        )
    system = catalog.storage(spec.storage.system)
    local = system.kind == LOCAL_KIND
    # first: a cluster with no way to its storage is refused as such; node-local drives need no network
    network = {} if local else _network_stages(spec)
    stages: dict[str, float] = {}
    n_gpus = spec.gpus_per_node if gpus is None else gpus
    if gds is None:
        gds = system.gds
    if n_gpus:
        host_link = spec.host_link_bytes_per_s
        if host_link is not None:
            stages["GPU<->host PCIe"] = n_gpus * host_link
        if not gds:
            stages["host bounce buffer (no GDS)"] = BOUNCE_BUFFER_BYTES_PER_S
    stages.update(network)
    cap = system.per_client_read_bytes_per_s if direction == "read" else system.per_client_write_bytes_per_s
    if cap is not None:
        stages["file system per client"] = cap
    stages.update(_mount_stage(spec))
    aggregate = _aggregate(spec, direction)
    if aggregate is not None and local:
        stages["node-local drives"] = aggregate  # each node's own: never shared with the other nodes
    elif aggregate is not None:
        stages["file system aggregate"] = aggregate / active_nodes
    stages.update(_drive_links(spec))
    servers = _server_nics(spec)
    if servers is not None:
        stages["storage servers' NICs"] = servers / active_nodes
    return NodePath(stages)


def _mount_stage(spec: ClusterSpec) -> dict[str, float]:
    """The node's NFS mount, where the spec describes one: ``nconnect`` connections (1 when only the
    transport is given) x what one connection of that transport carries (catalogue), bytes/s."""
    st = spec.storage
    rate = None if st is None else st.mount_connection_bytes_per_s
    if st is None or rate is None or not (st.nconnect or st.nfs_transport):
        return {}
    connections = st.nconnect or 1
    return {f"NFS mount ({connections} {st.mount_transport.upper()} connection(s))": connections * rate}


def _drive_links(spec: ClusterSpec) -> dict[str, float]:
    """The node-local drives' own links, ``units x unit_link`` bytes/s per direction, as a stage; empty for
    a system that is not the nodes' own drives, or whose catalogue entry or spec gives no link or count."""
    st = spec.storage
    system = None if st is None else catalog.storage(st.system)
    if st is None or system is None or system.kind != LOCAL_KIND:
        return {}
    if st.units is None or system.unit_link_bytes_per_s is None:
        return {}
    return {
        f"node-local drives' links ({st.units} x {system.unit_link_bytes_per_s / 1e9:.2f} GB/s)": (
            st.units * system.unit_link_bytes_per_s
        )
    }


def _server_nics(spec: ClusterSpec) -> float | None:
    """The storage servers' ports, bytes/s per direction: units x ports x line rate x payload efficiency
    (None where the spec names no server NIC). Node-local drives (``kind: local``) have no servers, so
    their ports are refused, not priced as a network every node shares."""
    st = spec.storage
    if st is None or st.unit_nic is None or st.units is None:
        return None
    if catalog.storage(st.system).kind == LOCAL_KIND:
        raise ConfigError(
            f"storage.unit_nic: {st.unit_nic!r} names storage servers' ports, but {st.system!r} is the "
            "nodes' own drives (kind local), which no server fronts; remove unit_nic and unit_nics"
        )
    nic = catalog.nic(st.unit_nic)
    return st.units * (st.unit_nics or 1) * nic.line_rate_bytes_per_s * nic.payload_efficiency


def aggregates_above_ports(spec: ClusterSpec) -> tuple[str, ...]:
    """One line for each aggregate the spec states above what its storage servers' ports carry (or, for
    node-local drives, their own links): those are the bound (their stage of :func:`node_path`), whatever
    the stated figure says."""
    st = spec.storage
    ports = _server_nics(spec)
    if st is None:
        return ()
    if ports is not None:
        servers = f"{st.units} x {st.unit_nics or 1} x {st.unit_nic}"
        carry = f"the storage servers' ports carry ({servers} at its payload: "
        return _stated_above(st, ports, 1e12, "TB/s", carry, "the ports")
    links = sum(_drive_links(spec).values())
    if not links:
        return ()
    carry = f"a node's {st.units} drive(s) carry over their own links ("
    return _stated_above(st, links, 1e9, "GB/s", carry, "those")


def _stated_above(
    st: StorageSpec, bound: float, scale: float, unit: str, carry: str, who: str
) -> tuple[str, ...]:
    """The lines of :func:`aggregates_above_ports` for one ``bound`` (bytes/s), printed in ``unit``."""
    lines = []
    for direction in ("read", "write"):
        given = getattr(st, f"aggregate_{direction}_bytes_per_s")
        if given is not None and given > bound:
            lines.append(
                f"storage.aggregate_{direction} {given / scale:.4g} {unit} is more than {carry}"
                f"{bound / scale:.4g} {unit}); {who} bound the {direction}s"
            )
    return tuple(lines)


def _over_storage_fabric(spec: ClusterSpec) -> dict[str, float]:
    """The node's storage-fabric ports at their payload efficiency, and the leaf's share of uplinks when the
    fabric is oversubscribed; nothing without a storage fabric."""
    sf = spec.storage_fabric
    if sf is None:
        return {}
    line = sf.ports_per_node * sf.speed_bytes_per_s * catalog.nic(sf.nic).payload_efficiency
    stages = {"node storage-fabric ports": line}
    if sf.oversubscription > 1:
        stages["storage fabric (leaf uplinks)"] = line / sf.oversubscription
    return stages


def _over_front_end(spec: ClusterSpec) -> dict[str, float]:
    """The node's front-end NICs at their payload efficiency (and the leaf's share of uplinks when
    oversubscribed); nothing without front-end NICs."""
    fe = spec.front_end
    if fe is None or not fe.nics_per_node:
        return {}
    nic = catalog.nic(fe.nic)
    line = fe.ports_per_node * (fe.nic_speed_bytes_per_s or nic.line_rate_bytes_per_s)
    stages = {"node front-end NICs": line * nic.payload_efficiency}
    if fe.oversubscription > 1:
        stages["front-end fabric (leaf uplinks)"] = line * nic.payload_efficiency / fe.oversubscription
    return stages


def _over_dcn(spec: ClusterSpec) -> dict[str, float]:
    """A TPU host's data-centre network: ``dcn_bandwidth`` per chip x chips per host, Google's line-rate
    figure, so a bound; nothing for an accelerator without one."""
    dcn = spec.accelerator_spec.dcn_bandwidth_bytes_per_s
    return {"node DCN (data-centre network)": spec.gpus_per_node * dcn} if dcn else {}


#: The networks storage traffic may take, in the order a node uses them: the first the spec has carries
#: every checkpoint, restore and data-loading byte. A storage fabric of its own (``storage_fabric``: DGX
#: SuperPOD RAs' "Storage Fabric", the storage appliances on its leaves) comes first, so with one the
#: front-end carries none of it; else the front-end; else, with neither, a TPU host's DCN.
STORAGE_ROUTES: tuple[tuple[str, Callable[[ClusterSpec], dict[str, float]]], ...] = (
    ("storage", _over_storage_fabric),
    ("front-end", _over_front_end),
    ("dcn", _over_dcn),
)


def storage_network(spec: ClusterSpec) -> str | None:
    """The network a node's storage traffic crosses (:data:`STORAGE_ROUTES`): ``"storage"``,
    ``"front-end"`` or ``"dcn"``; None when the cluster has none of them.

    >>> from aifabric.cluster.presets import preset
    >>> storage_network(preset("dgx-h100-superpod"))
    'front-end'
    """
    return next((name for name, route in STORAGE_ROUTES if route(spec)), None)


def _network_stages(spec: ClusterSpec) -> dict[str, float]:
    """The node's network to storage, bytes/s per direction: the stages of the first network of
    :data:`STORAGE_ROUTES` the spec has (storage fabric, front-end, DCN).

    Raises
    ------
    ConfigError
        If the node has no storage fabric, no front-end NICs and no data-centre network.
    """
    for _name, route in STORAGE_ROUTES:
        stages = route(spec)
        if stages:
            return stages
    raise ConfigError(
        "front_end: this cluster has no front-end NICs (nor a storage fabric or a data-centre network) to "
        "reach storage"
    )


def transfer_time(path: NodePath, bytes_per_node: float) -> Transfer:
    """Seconds for every node to move ``bytes_per_node`` through ``path``: S / min(stage rates).

    Examples
    --------
    >>> t = transfer_time(NodePath({"NIC": 96e9, "file system aggregate": 20e9}), 61.25e9)
    >>> round(t.seconds, 4), t.bottleneck
    (3.0625, 'file system aggregate')
    """
    if bytes_per_node < 0:
        raise ValueError(f"bytes_per_node must be >= 0, got {bytes_per_node!r}")
    rate = path.rate_bytes_per_s
    return Transfer(bytes_per_node, bytes_per_node / rate, path.bottleneck, rate, dict(path.stages))
