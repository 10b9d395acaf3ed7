"""NCCL's own ``NCCL_DEBUG=INFO`` output as evidence: what a run really used.

A log run with ``NCCL_DEBUG=INFO`` (with or without ``NCCL_DEBUG_SUBSYS``) says which NCCL it loaded, which
network it used and how every connection was made. :func:`parse_nccl_info` reads those lines -- and only
lines carrying ``NCCL INFO``, or starting with one of its formats (below) -- into an :class:`NcclInfo`;
each fact keeps the lines it came from
(:attr:`NcclInfo.evidence`), so a report can quote them.

The formats are NCCL's (``NVIDIA/nccl`` master, files named; older releases print the same text):

====================================================================  =======================================
``NCCL version 2.19.3+cuda12.2``                                        ``init.cc`` (version banner)
``Using network IB`` / ``Socket`` / ``AWS Libfabric`` ...               ``init.cc`` ``"Using network %s"``
``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB eth0:...``       ``net_ib/init.cc``
``NET/IB : Using [0]={[0] mlx5_7:1/RoCE, [1] mlx5_6:1/RoCE} ; OOB ...``   ``transport/net_ib.cc`` (2.20: ports
                                                                        merged into one device, each listed)
``NET/Socket : Using [0]eth0:10.0.0.1<0>``                              ``net_socket.cc``
``CUDA Dev 0[0], IB NIC distance :  PIX`` (2.4: the network in use)     ``transport/net.cc`` (v2.4.8-1)
``Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0/GDRDMA``              ``transport/net.cc``; ``NET/IB/0(1)``:
                                                                        sent through proxy rank 1 (PXN)
``Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read`` (``P2P/CUMEM``)        ``transport/p2p.cc``
``Channel 00 : 0[0] -> 1[1] via SHM/direct/direct``                     ``transport/shm.cc``
``Ring 00 : 1[23000] -> 8[1e000] [send] via NET/IB/1/GDRDMA`` (2.5-2.6;  the same files of v2.5.6-1: the bus
``Channel 00``: 2.7-2.11), ``... via direct shared memory`` (2.5-2.11)  id in hex up to 2.17 (``_LINK_HEAD``)
``NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'``                ``graph/topo.cc``
``GPU Direct RDMA Disabled for GPU 18000 / HCA 0 (distance 8 > 5)``     ``graph/paths.cc``
``NVLS multicast support is not available on dev 0``                    ``transport/nvls.cc``
``MNNVL busId 0x901000 fabric UUID a.b cliqueId 0x7ffe state 3 ...``    ``init.cc`` (the GPU's NVLink fabric,
                                                                        NVML ``nvmlGpuFabricInfoV``)
``MNNVL 1 cliqueId 7ffe cliqueSize 8 cliqueRank 0``                     ``mnnvl.cc`` (the communicator runs
                                                                        multi-node NVLink)
``comm 0x.. rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 ...``    ``init.cc``
``32 coll channels, 32 collnet channels, 16 nvls channels, ...``        ``init.cc``
``Channel 00/32 :    0   1   2 ...`` (a ring), ``Trees [0] ...``        ``init.cc``; ``graph/rings.cc``
                                                                        ``dumpLine``: the ring's nRanks ranks,
                                                                        at most :data:`RING_WIDTH` up to 2.18
``Connected all rings, use ring PXN 0 GDR 1``                           ``transport/generic.cc``
``PXN Disabled as plugin is v4``                                        ``graph/paths.cc``
``NCCL_X set by environment to v``                                      ``param.cc``
``HINT: In many cases this error occurs when ACS is enabled ...``       ``net_ib/common.h``
``NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 219 mtu 5 LID 7 ...``           ``net_ib/connect.cc`` (``mtu`` is the
                                                                        port's active ``ibv_mtu``: 1 = 256 B
                                                                        ... 5 = 4096 B)
====================================================================  =======================================

Where NCCL lists both NET/Socket's and NET/IB's devices and no ``Using network`` line says which it used, the
network is IB: NCCL always starts sockets (2.4: "we use it for bootstrap") and takes IB whenever it starts
(``initNet`` in ``init.cc`` of v2.4.7-1; in 2.19.3 ``ncclNets`` in ``net.cc`` is plugin, IB, Socket and
the first that starts is taken unless ``NCCL_NET`` names another, which its ``Using network`` line then
says), so a NET/IB device list without a ``Using network`` line means NCCL used IB.

Besides INFO lines, three more count: NCCL's version banner printed on its own (``printf`` of
``VERSION_STRING`` in ``showVersion``, ``init.cc``: rank 0's stdout, no ``NCCL INFO`` before it),
``ibv_devinfo`` output pasted into the log: its ``active_mtu: 2048 (4)`` line gives the MTU the same way
(rdma-core ``ibv_devinfo``), and INFO messages pasted without their ``host:pid:tid [dev] NCCL INFO`` prefix
(a logger that keeps the message only, or a user trimming it): a line that *starts* with one of the formats
above (``NET/IB : Using [0]ibp0:1/IB/SHARP ...``, ``Using network IBext_v8``) is read as that message. Only
the start counts, so prose or a table row that merely mentions a format is not taken.

Reading is one pass over the lines with anchored patterns on the text after ``NCCL INFO`` (linear time); an
overlong line is cut at :data:`MAX_LINE_CHARS` before matching.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from aifabric.errors import ParseError

__all__ = [
    "IBV_MTU_BYTES",
    "MAX_CHANNELS",
    "MAX_COMM_RANKS",
    "MAX_LINE_CHARS",
    "RING_WIDTH",
    "Evidence",
    "NcclInfo",
    "env_setting",
    "impossible_counts",
    "parse_nccl_info",
]

#: Characters of a line looked at (NCCL's longest INFO lines -- a ring of 1,024 ranks -- fit well within).
MAX_LINE_CHARS = 8192

_MARK = "NCCL INFO"
_VERSION = re.compile(r"NCCL version (\d{1,4}(?:\.\d{1,6}){1,3})")
_NETWORK = re.compile(r"Using network (\S[^\r\n]{0,63}?)\s*$")
#: NCCL 2.4's ``"CUDA Dev %d[%d], %s NIC distance : "`` of ``ncclNetName()`` (``src/transport/net.cc``).
_NIC_DISTANCE = re.compile(r"CUDA Dev \d{1,4}\[\d{1,4}\], (\S{1,64}) NIC distance :")
#: The banner as ``showVersion`` prints it to stdout, alone on its line.
_BARE_VERSION = re.compile(r"^\s*NCCL version (\d{1,4}(?:\.\d{1,6}){1,3})\+")
_NET_DEVICES = re.compile(r"NET/(IB|Socket) ?: Using ?((?:\[RO\])?[^;]{0,4000})")
#: One ``[k]name`` of that line: ``mlx5_0:1/IB`` or ``eth0:10.0.0.1<0>``; a bare name ending the line without
#: its port or address is cut where the copy stops (``[3]br-811b``), so it is no device name.
_NET_DEVICE = re.compile(
    r"\[\d{1,4}\] ?([\w.-]{1,64}?(?::\d{1,3}(?=[/\s]|$))?)"
    r"(?:/(IB|RoCE)|[:<\s]|(?<=:\d)$|(?<=:\d\d)$|(?<=:\d\d\d)$)"
)
#: What a connection line names a peer by: its rank, then its bus ID in hex (``%d[%lx]`` of ``busId``, 2.5 to
#: 2.17, ``0[4a000]``: ``transport/p2p.cc`` of v2.17.1-1) or its device in decimal (from 2.18), none in 2.4
#: (``15 -> 0 [send]``); hex digits read both.
_PEER = r"(\d{1,9})(?:\[[0-9a-fA-F]{1,16}\])?"
#: ``Channel`` from 2.7 on, ``Ring %02d`` in 2.4 to 2.6 (``transport/net.cc`` of v2.5.6-1).
_CHANNEL_OF = r"(?:Channel|Ring) \d{1,4}(?:/\d{1,4})? : "
_CONNECTION = re.compile(
    _CHANNEL_OF + _PEER + r" -> " + _PEER + r" \[(send|receive)\] "
    r"via NET/([^/]{1,64})/(\d{1,4})(?:\((\d{1,9})\))?(/GDRDMA)?"
)
#: ``via P2P/IPC``, ``via SHM/direct/direct``; 2.5 to 2.7 print SHM as ``via direct shared memory``
#: (``transport/shm.cc`` of v2.5.6-1 and v2.7.8-1), read as ``SHM/direct``.
_INTRA = re.compile(
    _CHANNEL_OF + _PEER + r" -> " + _PEER + r" via (?:(P2P|SHM)/(\w+)|direct (shared) memory)"
)
_GDR_HCA = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for (?:GPU \w{1,16} / )?HCA (\d{1,4})")
_NVLS = re.compile(r"NVLS multicast support is (not )?available")
#: ``NVLS Head  0:  0  8``: printed by ``connectNvls`` (NVIDIA/nccl ``src/graph/connect.cc``, 2.18-2.2x) only
#: when the NVLS graph found channels (``nHeads == 0`` returns before it): NVLS multicast is available.
_MNNVL_FABRIC = re.compile(
    r"MNNVL busId 0x[0-9a-fA-F]{1,16} fabric UUID [0-9a-fA-F]{1,16}\.[0-9a-fA-F]{1,16} "
    r"cliqueId 0x([0-9a-fA-F]{1,8}) state (\d{1,2})\b"
)
_MNNVL_CLIQUE = re.compile(r"MNNVL (\d) cliqueId ([0-9a-fA-F]{1,8}) cliqueSize (\d{1,7}) cliqueRank \d{1,7}")
_COMM_MNNVL = re.compile(r"\blocalRank -?\d{1,9} MNNVL (\d)\b")
#: NVML's ``NVML_GPU_FABRIC_STATE_COMPLETED``: the GPU's registration with its NVLink fabric finished
#: (``nvml.h``: 0 not supported, 1 not started, 2 in progress, 3 completed).
FABRIC_STATE_COMPLETED = 3
_NVLS_HEAD = re.compile(r"NVLS Head {0,2}\d{1,3}:")
_COMM = re.compile(r"(?:\brank (-?\d+) )?nRanks (-?\d+) nNodes (-?\d+) localRanks (-?\d+)")
_CHANNELS = re.compile(
    r"(?<![\w-])(-?\d+) coll channels, (?:(-?\d+) collnet channels, )?(?:(-?\d+) nvls channels, )?"
)
#: Most channels NCCL prints for one kind: ``MAXCHANNELS`` (NVIDIA/nccl ``src/include/device.h``), 32 up to
#: 2.24 and 64 from 2.25 (catalogue ``nccl_releases.yaml``, ``max_channels``).
MAX_CHANNELS = 64
#: A ring: ``Channel c/n :`` and the ranks in order, ``c`` the channel and ``n`` the channel count
#: (NVIDIA/nccl ``init.cc``, ``"Channel %02d/%02d :"`` of ``comm->nChannels``).
_RING = re.compile(r"Channel (\d{1,19})/(\d{1,19}) :((?: +\d{1,9})+)\s*$")
#: Ranks a ring line lists at most up to 2.18 (``MAXWIDTH`` of ``dumpLine``, ``src/graph/rings.cc`` of
#: v2.18.3-1; 2.4's ``init.cc`` the same); later releases list every rank in 128 characters, ending ``...``
#: when cut. A whole ring line listing fewer ranks lists them all: the communicator's nRanks.
RING_WIDTH = 20
_TREES = re.compile(r"Trees \[\d")
_CONNECTED = re.compile(r"Connected all rings(?:, use ring PXN (\d) GDR (\d))?")
_PXN_OFF = re.compile(r"PXN Disabled")
_ACS_HINT = re.compile(r"HINT: In many cases this error occurs when ACS is enabled")
_ENV = re.compile(r"(?<![A-Z0-9_])(NCCL_[A-Z0-9_]{1,64}) set by environment to (\S{1,256})")
_COMM_OLD = re.compile(r"rank \d{1,9} nranks (-?\d+) ")
#: RCCL's suffix on its connection, ring, tree and "Connected all rings" lines: ``comm %p nRanks %02d``
#: (ROCm/rccl ``src/transport/net.cc``, ``p2p.cc``, ``init.cc``): the communicator's ranks, zero-padded.
_RCCL_COMM_SUFFIX = re.compile(r"\bcomm 0x[0-9a-fA-F]{1,16} nRanks (\d{1,7})\b")
#: Most ranks a communicator line may report: the bound of the rank lines above a table (131,072, above the
#: largest single jobs reported, about 100,000 GPUs; :mod:`aifabric.discovery.perf_metadata`).
MAX_COMM_RANKS = 1 << 17
#: What may open an INFO message ahead of its format: the plugin loader's label (``"NET/Plugin: Loaded collnet
#: plugin %s"``, ``src/plugin/net.cc``), the communicator-init function and the communicator (``"%s comm %p
#: rank %d nranks %d ..."`` of ``ncclCommInitRankFunc``, ``init.cc``; ``"comm %p rank %d nRanks %d nNodes
#: ..."``), so a prefix-less ``ncclCommInitRankConfig comm 0x5 rank 0 nranks 8 ...`` gives its ranks.
_BARE_HEAD = re.compile(r"(?:NET/Plugin ?: )?(?:ncclCommInit\w{0,24} )?(?:comm 0x[0-9a-fA-F]{1,16} )?")
_QP_MTU = re.compile(r"qpn \d{1,12} mtu (-?\d+)\b")
_ACTIVE_MTU = re.compile(r"^\s*active_mtu:\s*(\d{3,4})\s*\((\d)\)")
#: ``enum ibv_mtu`` (rdma-core ``verbs.h``): IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5 -> bytes.
IBV_MTU_BYTES = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
# "NET/Plugin: Loaded collnet plugin SHARP (v8)" (NVIDIA/nccl src/plugin/net.cc); 2.12 to 2.2x print
# "Loaded coll plugin SHARP (v5)" (src/net.cc of v2.18.3-1 and v2.20.5-1)
_COLLNET_PLUGIN = re.compile(r"Loaded coll(?:net)? plugin ([^\r\n(]{1,64}?)\s*(?:\(|$)")
_PLUGIN = re.compile(r"(?:Loaded net plugin|NET/Plugin: Loaded net plugin) ([^\r\n(]{1,64}?)\s*(?:\(|$)")


def env_setting(text: str) -> tuple[str, str] | None:
    """The variable and value of an ``NCCL_X set by environment to v.`` line, or None.

    NCCL prints the line as ``"%s set by environment to %s."`` (NVIDIA/nccl ``src/misc/param.cc``,
    ``ncclLoadParam`` and ``initEnv``): the one period NCCL appends is not part of the value.

    >>> env_setting("h:1:1 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to LOC.")
    ('NCCL_NET_GDR_LEVEL', 'LOC')
    >>> env_setting("NCCL INFO NCCL_P2P_DISABLE set by environment to 1") is None
    False
    """
    m = _ENV.search(text)
    return None if m is None else (m.group(1), m.group(2).removesuffix("."))


@dataclass(frozen=True)
class Evidence:
    """One line of the log a fact was read from: its 1-based number and its text after ``NCCL INFO``."""

    line: int
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}"


@dataclass(frozen=True)
class NcclInfo:
    """What NCCL's INFO lines say a run used; None wherever the log does not say.

    Attributes
    ----------
    version : str or None
        NCCL version (``"2.19.3"``).
    network : str or None
        The network NCCL used between nodes, as NCCL names it (``"IB"``, ``"Socket"``, ``"AWS Libfabric"``,
        ``"GPUDirectTCPX"``...): from ``Using network`` or, failing that, from the connections.
    plugin : str or None
        The external net plugin loaded, if one says so.
    collnet_plugin : str or None
        The CollNet plugin loaded (``SHARP``), if one says so.
    net_devices : tuple of str
        NICs listed by ``NET/IB : Using`` or ``NET/Socket : Using`` (``mlx5_0:1``, ``eth0``).
    link_layers : tuple of str
        ``IB`` / ``RoCE`` of those NICs, where printed.
    net_connections : int
        ``[send]``/``[receive]`` connections through the network seen.
    net_devices_used : tuple of int
        The NIC indices the network connections used.
    gdr_connections : int
        Network connections marked ``/GDRDMA``.
    pxn_connections : int
        Network connections sent through another rank's NIC (``NET/IB/0(1)``: PXN).
    gdr_disabled_hcas : tuple of int
        HCAs NCCL printed GPU Direct RDMA as disabled for.
    intra_transports : tuple of str
        Transports inside a node seen (``P2P/IPC``, ``P2P/CUMEM``, ``SHM/direct``...), in order of appearance.
    nvls_available : bool or None
        NVLS multicast availability.
    mnnvl : bool or None
        Whether the communicator ran multi-node NVLink (NVLink between trays of one NVLink domain, GB200
        NVL72): ``MNNVL 1 cliqueId ...`` (``mnnvl.cc``) or the communicator line's ``MNNVL 1``; False for its
        ``MNNVL 0``; None where the log does not say.
    mnnvl_clique : str or None
        The NVLink fabric clique of the GPUs (``0x7ffe``): the ``MNNVL busId ... cliqueId`` lines' (NVML
        fabric info, ``init.cc``), else the ``MNNVL 1 cliqueId`` line's.
    mnnvl_clique_size : int or None
        Ranks of the communicator in that clique (``cliqueSize``).
    mnnvl_fabric_state : int or None
        The fabric state the ``MNNVL busId`` lines print (NVML ``nvmlGpuFabricState_t``; 3: registered,
        :data:`FABRIC_STATE_COMPLETED`): the lowest printed.
    n_ranks, n_nodes, local_ranks : int or None
        From the communicator line.
    coll_channels, nvls_channels, collnet_channels : int or None
        Channel counts NCCL settled on.
    n_rings : int
        Ring lines printed (one per channel per rank printing).
    trees : bool
        Whether NCCL printed trees.
    pxn_ring, gdr_ring : bool or None
        ``Connected all rings, use ring PXN %d GDR %d`` (NCCL >= 2.20).
    pxn_disabled : bool
        ``PXN Disabled`` printed, or ``NCCL_PXN_DISABLE=1`` set.
    env : dict
        ``NCCL_X set by environment to v``: name -> value.
    mtu_bytes : int or None
        The smallest active IB/RoCE MTU the QP lines (or ``ibv_devinfo``'s ``active_mtu``) show, bytes.
    evidence : dict
        Fact name -> the lines it came from (:class:`Evidence`), in log order.
    count_errors : tuple of Evidence
        Lines with counts NCCL cannot print, each with why: communicator counts (:func:`impossible_counts`,
        or over 18 digits), channel counts outside 0 to :data:`MAX_CHANNELS`, a QP ``mtu`` outside
        ``enum ibv_mtu``. They give no value; :meth:`check_counts` raises on the first.
    """

    version: str | None = None
    network: str | None = None
    plugin: str | None = None
    collnet_plugin: str | None = None
    net_devices: tuple[str, ...] = ()
    link_layers: tuple[str, ...] = ()
    net_connections: int = 0
    net_devices_used: tuple[int, ...] = ()
    gdr_connections: int = 0
    pxn_connections: int = 0
    gdr_disabled_hcas: tuple[int, ...] = ()
    intra_transports: tuple[str, ...] = ()
    nvls_available: bool | None = None
    mnnvl: bool | None = None
    mnnvl_clique: str | None = None
    mnnvl_clique_size: int | None = None
    mnnvl_fabric_state: int | None = None
    n_ranks: int | None = None
    n_nodes: int | None = None
    local_ranks: int | None = None
    coll_channels: int | None = None
    nvls_channels: int | None = None
    collnet_channels: int | None = None
    n_rings: int = 0
    trees: bool = False
    pxn_ring: bool | None = None
    gdr_ring: bool | None = None
    pxn_disabled: bool = False
    env: dict[str, str] = field(default_factory=dict)
    mtu_bytes: int | None = None
    evidence: dict[str, tuple[Evidence, ...]] = field(default_factory=dict)
    count_errors: tuple[Evidence, ...] = ()

    @property
    def empty(self) -> bool:
        """True when no INFO line was read."""
        return not self.evidence

    @property
    def gdr(self) -> bool | None:
        """GPUDirect RDMA on the network: True when every network connection printed ``/GDRDMA``, False when
        one did not (or NCCL said it is disabled), None when the log shows no network connection."""
        if self.net_connections:
            return self.gdr_connections == self.net_connections
        if self.gdr_ring is not None:
            return self.gdr_ring
        return False if self.gdr_disabled_hcas else None

    @property
    def collnet_shown(self) -> bool:
        """Whether the lines show CollNet set up: a collnet plugin loaded, or a collnet channel count that
        differs from the coll channels (NCCL >= 2.19 prints ``comm->nChannels`` in the collnet place, so an
        equal count says nothing; older releases print ``collNetChannels``, NVIDIA/nccl ``init.cc``)."""
        channels = self.collnet_channels is not None and self.collnet_channels > 0
        return self.collnet_plugin is not None or (channels and self.collnet_channels != self.coll_channels)

    @property
    def pxn(self) -> bool | None:
        """PXN in use: True when a connection went through another rank's NIC, False when NCCL said it is
        off, None when the log does not tell."""
        if self.pxn_connections:
            return True
        if self.pxn_disabled or self.pxn_ring is False:
            return False
        return None

    @property
    def nvlink_domain_note(self) -> str | None:
        """What the lines say of an NVLink domain across trays (multi-node NVLink), in words; None where
        they say nothing of it.

        >>> info = parse_nccl_info(["h:1:2 [0] NCCL INFO MNNVL 1 cliqueId 7ffe cliqueSize 8 cliqueRank 0"])
        >>> info.nvlink_domain_note.partition(": ")[2]
        'multi-node NVLink on, clique 0x7ffe of 8 ranks (line 1)'
        """
        where = ", ".join(f"line {e.line}" for e in self.lines("mnnvl")[:2])
        clique = f"clique {self.mnnvl_clique}" if self.mnnvl_clique else "its clique"
        if self.mnnvl:
            size = f" of {self.mnnvl_clique_size} ranks" if self.mnnvl_clique_size else ""
            on = f"multi-node NVLink on, {clique}{size} ({where})"
            return f"the run spanned an NVLink domain across trays: {on}"
        if self.mnnvl is False:
            return f"multi-node NVLink off: the communicator stayed within NVLink of each tray ({where})"
        if self.mnnvl_fabric_state is None:
            return None
        state = "registered" if self.mnnvl_fabric_state == FABRIC_STATE_COMPLETED else "not registered"
        return (
            f"the GPUs are in NVLink fabric {clique} ({state}: fabric state {self.mnnvl_fabric_state}; "
            f"{where}): an NVLink domain across trays is there to run on; the log does not say the "
            "communicator used it"
        )

    def check_counts(self, source: str | None = None) -> None:
        """Refuse a log whose communicator line has an impossible count.

        Raises
        ------
        ParseError
            Naming the line and the value (:attr:`count_errors`, the first one).
        """
        if self.count_errors:
            bad = self.count_errors[0]
            raise ParseError(f"NCCL INFO {bad.text}", line=bad.line, source=source)

    def lines(self, *facts: str) -> tuple[Evidence, ...]:
        """The evidence lines of ``facts`` (all facts when none is named), in log order, one per line."""
        keys = facts or tuple(self.evidence)
        seen: dict[int, Evidence] = {}
        for key in keys:
            for ev in self.evidence.get(key, ()):
                seen.setdefault(ev.line, ev)
        return tuple(seen[k] for k in sorted(seen))


class _Reader:
    """Accumulates facts line by line (one pass); :meth:`result` freezes them."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}
        self.evidence: dict[str, list[Evidence]] = {}
        self.devices: dict[str, list[str]] = {}
        self.layers: list[str] = []
        self.used: set[int] = set()
        self.intra: dict[str, None] = {}
        self.gdr_off: dict[int, None] = {}
        self.env: dict[str, str] = {}
        self.counts = {"net": 0, "gdr": 0, "pxn": 0, "rings": 0}
        self.ring_ranks: list[tuple[Evidence, int]] = []  # each ring line and the ranks it lists
        self.mtu: int | None = None
        self.count_errors: list[Evidence] = []

    def saw_comm(
        self, ev: Evidence, rank: str | None, ranks: str, nodes: str | None = None, local: str | None = None
    ) -> None:
        """Keep the first possible communicator counts; an impossible one (a ``rank`` not below nRanks
        included) is kept as a count error."""
        named = (("rank", rank), ("nRanks", ranks), ("nNodes", nodes), ("localRanks", local))
        problem = _overlong(named)
        if problem is None:
            counts = (int(ranks), _int(nodes), _int(local))
            problem = impossible_counts(*counts)
            if problem is None and rank is not None and not 0 <= int(rank) < counts[0]:
                problem = f"rank {rank} is not one of nRanks {ranks} (0 to {counts[0] - 1})"
            if problem is None:
                self.first("comm", counts, ev)
                return
        self.value_error(ev, problem)

    def saw_channels(self, ev: Evidence, coll: str, collnet: str | None, nvls: str | None) -> None:
        """Keep the first channel counts NCCL can print (1 to :data:`MAX_CHANNELS` coll channels, 0 to it of
        the others); another is kept as a count error."""
        named = (("coll channels", coll), ("collnet channels", collnet), ("nvls channels", nvls))
        problem = _overlong(named)
        for name, value in named if problem is None else ():
            low = 1 if name == "coll channels" else 0
            if value is not None and not low <= int(value) <= MAX_CHANNELS:
                problem = (
                    f"{value} {name} is not a channel count ({low} to NCCL's MAXCHANNELS {MAX_CHANNELS})"
                )
                break
        if problem is None:
            self.first("channels", (coll, collnet, nvls), ev)
        else:
            self.value_error(ev, problem)

    def saw_ring(self, ev: Evidence, channel: str, count: str) -> None:
        """Count a ring line whose channel is one of at most :data:`MAX_CHANNELS`; else a count error."""
        if (
            len(channel) > _MAX_DIGITS
            or len(count) > _MAX_DIGITS
            or not 0 <= int(channel) < int(count) <= MAX_CHANNELS
        ):
            self.value_error(
                ev, f"Channel {channel}/{count} is not a channel of at most NCCL's MAXCHANNELS {MAX_CHANNELS}"
            )
            return
        self.counts["rings"] += 1
        self.note("rings", ev, keep=1)

    def saw_qp_mtu(self, ev: Evidence, code: str) -> None:
        """Keep the MTU of a QP line; a code outside ``enum ibv_mtu`` (1 to 5) is kept as a count error."""
        mtu = IBV_MTU_BYTES.get(int(code)) if len(code) <= _MAX_DIGITS else None
        if mtu is None:
            self.value_error(ev, f"mtu {_shown(code)} is not an ibv_mtu code (1 to 5: 256 to 4096 bytes)")
        else:
            self.saw_mtu(mtu, ev)

    def value_error(self, ev: Evidence, problem: str) -> None:
        """Keep why a line's value is one NCCL cannot print (the first three)."""
        if len(self.count_errors) < 3:
            self.count_errors.append(Evidence(ev.line, problem))

    def saw_mtu(self, mtu: int | None, ev: Evidence) -> None:
        """Keep the smallest MTU seen, with the first line that showed it."""
        if mtu is None:
            return
        if self.mtu is None or mtu < self.mtu:
            self.mtu = mtu
            self.evidence["mtu"] = [ev]

    def note(self, key: str, ev: Evidence, keep: int = 3) -> None:
        found = self.evidence.setdefault(key, [])
        if len(found) < keep:
            found.append(ev)

    def first(self, key: str, value: object, ev: Evidence) -> None:
        if key not in self.values:
            self.values[key] = value
        self.note(key, ev)

    def read(self, text: str, ev: Evidence) -> None:
        """Take what one INFO line says: the taker of the first pattern of :data:`_TAKERS` it matches."""
        for pattern, take in _TAKERS:
            if m := pattern.search(text):
                take(self, m, ev)
                break
        if m := _RCCL_COMM_SUFFIX.search(text):
            self.saw_comm(ev, None, m.group(1))

    def read_bare(self, raw: str, ev: Evidence) -> None:
        """A line without ``NCCL INFO``: ``ibv_devinfo``'s ``active_mtu``, NCCL's stdout version banner, or an
        INFO message pasted without its prefix (module docstring): one that *starts* with an INFO format."""
        if m := _ACTIVE_MTU.match(raw):
            mtu = IBV_MTU_BYTES.get(int(m.group(2)))
            self.saw_mtu(mtu if mtu == int(m.group(1)) else None, ev)
        elif m := _BARE_VERSION.match(raw):
            self.take_version(m, ev)
        else:
            text = raw.strip()
            at = _BARE_HEAD.match(text)
            start = at.end() if at else 0
            for pattern, take in _BARE_TAKERS:
                if m := pattern.match(text, start):
                    take(self, m, Evidence(ev.line, text[:200]))
                    break

    # -- one taker per INFO format (see _TAKERS) ------------------------------------------------------------
    def take_version(self, m: re.Match[str], ev: Evidence) -> None:
        self.first("version", m.group(1), ev)

    def take_connection(self, m: re.Match[str], ev: Evidence) -> None:
        """A network connection: its device, network, GDR and PXN (counted)."""
        self.counts["net"] += 1
        self.used.add(int(m.group(5)))
        self.first("network", m.group(4).strip(), ev)
        if m.group(7):
            self.counts["gdr"] += 1
            self.note("gdr_on", ev, keep=1)
        else:
            self.note("gdr_off", ev)
        if m.group(6) is not None:
            self.counts["pxn"] += 1
            self.note("pxn", ev)

    def take_intra(self, m: re.Match[str], ev: Evidence) -> None:
        kind = "SHM/direct" if m.group(5) else f"{m.group(3)}/{m.group(4)}"
        self.intra.setdefault(kind, None)
        self.note("intra", ev, keep=2)

    def take_network(self, m: re.Match[str], ev: Evidence) -> None:
        # the first: a later line, cut where the copy stops, may say "Using network S"
        self.first("network", m.group(1), ev)

    def take_net_devices(self, m: re.Match[str], ev: Evidence) -> None:
        """A NET/IB or NET/Socket device list: each device, and its link layer where given."""
        listed = self.devices.setdefault(m.group(1), [])
        for dev in _NET_DEVICE.finditer(m.group(2)):
            listed.append(dev.group(1))
            if dev.group(2):
                self.layers.append(dev.group(2))
        self.note("net_devices", ev)

    def listed_network(self) -> str | None:
        """The network the device lists say NCCL used: IB where NET/IB listed devices (module docstring)."""
        return "IB" if "IB" in self.devices else next(iter(self.devices), None)

    def net_devices(self, network: str | None) -> tuple[str, ...]:
        """The devices of the list of ``network`` (or of the listed network: a plugin's own name)."""
        found = self.devices.get(network or "") or self.devices.get(self.listed_network() or "") or []
        return tuple(dict.fromkeys(found))

    def take_gdr_hca(self, m: re.Match[str], ev: Evidence) -> None:
        if m.group(1) == "Disabled":
            self.gdr_off.setdefault(int(m.group(2)), None)
            self.note("gdr_off", ev)

    def take_nvls(self, m: re.Match[str], ev: Evidence) -> None:
        self.first("nvls", m.group(1) is None, ev)

    def take_mnnvl_fabric(self, m: re.Match[str], ev: Evidence) -> None:
        """A GPU's NVLink fabric: its clique (the first) and the lowest state any GPU printed."""
        self.first("mnnvl_clique", f"0x{m.group(1).lower()}", ev)
        state = int(m.group(2))
        old = self.values.get("mnnvl_state")
        self.values["mnnvl_state"] = state if not isinstance(old, int) else min(old, state)
        self.note("mnnvl", ev, keep=2)

    def take_mnnvl_clique(self, m: re.Match[str], ev: Evidence) -> None:
        """The communicator's multi-node NVLink: on or off, its clique and the clique's ranks."""
        self.first("mnnvl_on", m.group(1) == "1", ev)
        self.first("mnnvl_clique", f"0x{m.group(2).lower()}", ev)
        self.first("mnnvl_size", int(m.group(3)), ev)
        self.note("mnnvl", ev, keep=2)

    def take_nvls_head(self, m: re.Match[str], ev: Evidence) -> None:
        self.first("nvls", True, ev)

    def take_comm(self, m: re.Match[str], ev: Evidence) -> None:
        self.saw_comm(ev, *m.groups())
        if flag := _COMM_MNNVL.search(ev.text):
            self.first("mnnvl_on", flag.group(1) == "1", ev)
            self.note("mnnvl", ev, keep=2)

    def take_channels(self, m: re.Match[str], ev: Evidence) -> None:
        self.saw_channels(ev, *m.groups())

    def take_ring(self, m: re.Match[str], ev: Evidence) -> None:
        self.saw_ring(ev, m.group(1), m.group(2))
        if len(ranks := m.group(3).split()) < RING_WIDTH:
            self.ring_ranks.append((ev, len(ranks)))

    def take_trees(self, m: re.Match[str], ev: Evidence) -> None:
        self.first("trees", True, ev)

    def take_connected(self, m: re.Match[str], ev: Evidence) -> None:
        if m.group(1) is not None:
            self.first("ring_flags", (m.group(1) == "1", m.group(2) == "1"), ev)

    def take_pxn_off(self, m: re.Match[str], ev: Evidence) -> None:
        self.first("pxn_disabled", True, ev)

    def take_acs_hint(self, m: re.Match[str], ev: Evidence) -> None:
        self.first("acs_hint", True, ev)

    def take_env(self, m: re.Match[str], ev: Evidence) -> None:
        """An NCCL environment variable set by the user; the two that turn PXN off say so."""
        name, value = m.group(1), m.group(2).removesuffix(".")  # as env_setting
        self.env[name] = value
        self.note("env", ev, keep=32)
        if (name, value) in (("NCCL_PXN_DISABLE", "1"), ("NCCL_P2P_PXN_LEVEL", "0")):
            self.first("pxn_disabled", True, ev)

    def take_qp_mtu(self, m: re.Match[str], ev: Evidence) -> None:
        self.saw_qp_mtu(ev, m.group(1))

    def take_collnet_plugin(self, m: re.Match[str], ev: Evidence) -> None:
        self.first("collnet_plugin", m.group(1), ev)

    def take_plugin(self, m: re.Match[str], ev: Evidence) -> None:
        self.first("plugin", m.group(1), ev)

    def take_comm_old(self, m: re.Match[str], ev: Evidence) -> None:
        self.saw_comm(ev, None, m.group(1))

    def ranks_in_rings(self, last_line: int) -> int | None:
        """The ranks the first whole ring line lists (nRanks, below :data:`RING_WIDTH`; the first
        communicator's, as for the communicator line), or None: a ring on the text's ``last_line`` may be
        cut where the copy stops, so it does not count."""
        ev, ranks = next(((ev, n) for ev, n in self.ring_ranks if ev.line != last_line), (None, None))
        if ev is not None:
            self.note("comm", ev, keep=1)
        return ranks

    def result(self, last_line: int = 0) -> NcclInfo:
        v = self.values
        comm = v.get("comm")
        channels = v.get("channels")
        flags = v.get("ring_flags")
        ranks, nodes, local = comm if isinstance(comm, tuple) else (None, None, None)
        if comm is None:
            ranks = self.ranks_in_rings(last_line)
        coll, collnet, nvls = channels if isinstance(channels, tuple) else (None, None, None)
        pxn_ring, gdr_ring = flags if isinstance(flags, tuple) else (None, None)
        multicast = v.get("nvls")
        network = _str(v.get("network")) or self.listed_network()
        return NcclInfo(
            version=_str(v.get("version")),
            network=network,
            plugin=_str(v.get("plugin")),
            collnet_plugin=_str(v.get("collnet_plugin")),
            net_devices=self.net_devices(network),
            link_layers=tuple(dict.fromkeys(self.layers)),
            net_connections=self.counts["net"],
            net_devices_used=tuple(sorted(self.used)),
            gdr_connections=self.counts["gdr"],
            pxn_connections=self.counts["pxn"],
            gdr_disabled_hcas=tuple(self.gdr_off),
            intra_transports=tuple(self.intra),
            nvls_available=multicast if isinstance(multicast, bool) else None,
            mnnvl=_bool(v.get("mnnvl_on")),
            mnnvl_clique=_str(v.get("mnnvl_clique")),
            mnnvl_clique_size=_whole(v.get("mnnvl_size")),
            mnnvl_fabric_state=_whole(v.get("mnnvl_state")),
            n_ranks=ranks,
            n_nodes=nodes,
            local_ranks=local,
            coll_channels=_int(coll),
            nvls_channels=_int(nvls),
            collnet_channels=_int(collnet),
            n_rings=self.counts["rings"],
            trees=bool(v.get("trees")),
            pxn_ring=pxn_ring,
            gdr_ring=gdr_ring,
            pxn_disabled=bool(v.get("pxn_disabled")),
            env=dict(self.env),
            mtu_bytes=self.mtu,
            evidence={k: tuple(e) for k, e in self.evidence.items()},
            count_errors=tuple(self.count_errors),
        )


#: What each INFO format says, in the order tried: the first pattern a line matches takes it (the order
#: matters where two formats could match one line).
_TAKERS: tuple[tuple[re.Pattern[str], Callable[[_Reader, re.Match[str], Evidence], None]], ...] = (
    (_VERSION, _Reader.take_version),
    (_CONNECTION, _Reader.take_connection),
    (_INTRA, _Reader.take_intra),
    (_NETWORK, _Reader.take_network),
    (_NIC_DISTANCE, _Reader.take_network),
    (_NET_DEVICES, _Reader.take_net_devices),
    (_GDR_HCA, _Reader.take_gdr_hca),
    (_NVLS, _Reader.take_nvls),
    (_NVLS_HEAD, _Reader.take_nvls_head),
    (_MNNVL_FABRIC, _Reader.take_mnnvl_fabric),
    (_MNNVL_CLIQUE, _Reader.take_mnnvl_clique),
    (_COMM, _Reader.take_comm),
    (_CHANNELS, _Reader.take_channels),
    (_RING, _Reader.take_ring),
    (_TREES, _Reader.take_trees),
    (_CONNECTED, _Reader.take_connected),
    (_PXN_OFF, _Reader.take_pxn_off),
    (_ACS_HINT, _Reader.take_acs_hint),
    (_ENV, _Reader.take_env),
    (_QP_MTU, _Reader.take_qp_mtu),
    (_COLLNET_PLUGIN, _Reader.take_collnet_plugin),
    (_PLUGIN, _Reader.take_plugin),
    (_COMM_OLD, _Reader.take_comm_old),
)
#: The formats read from a line without the prefix: all but the version, whose bare form is the stdout banner
#: only (``_BARE_VERSION``: nccl-tests prints its own ``NCCL version`` lines without ``+cuda``).
_BARE_TAKERS = tuple((p, take) for p, take in _TAKERS if p is not _VERSION)


def impossible_counts(ranks: int, nodes: int | None, local: int | None) -> str | None:
    """Why NCCL cannot have printed ``nRanks ranks nNodes nodes localRanks local``, or None when it can.

    A communicator has 1 to :data:`MAX_COMM_RANKS` ranks, 1 to nRanks nodes and 1 to nRanks local ranks
    (NVIDIA/nccl ``init.cc``: nNodes counts the distinct hosts of the ranks, localRanks the ranks on one).

    >>> impossible_counts(16, 2, 8) is None
    True
    >>> impossible_counts(8, 16, 8)
    'nNodes 16 is more than nRanks 8'
    """
    if not 1 <= ranks <= MAX_COMM_RANKS:
        return f"nRanks {ranks} is not a rank count (1 to {MAX_COMM_RANKS:,})"
    for name, value in (("nNodes", nodes), ("localRanks", local)):
        if value is not None and value < 1:
            return f"{name} {value} is below 1"
        if value is not None and value > ranks:
            return f"{name} {value} is more than nRanks {ranks}"
    return None


#: Digits a printed count may have before it is refused unread (NCCL prints C ``int``s: at most 10 digits).
_MAX_DIGITS = 18


def _shown(digits: str) -> str:
    """``digits`` as a message shows them: cut to 12 and their number given when longer than 20."""
    return digits if len(digits) <= 20 else f"{digits[:12]}... ({len(digits.lstrip('-'))} digits)"


def _overlong(named: tuple[tuple[str, str | None], ...]) -> str | None:
    """Why one of ``(name, digits)`` is no count NCCL prints (over :data:`_MAX_DIGITS` digits), or None."""
    for name, digits in named:
        if digits is not None and len(digits.lstrip("-")) > _MAX_DIGITS:
            return f"{name} {_shown(digits)} is not a count NCCL prints"
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, str) else None


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _bool(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def parse_nccl_info(lines: Iterable[str], *, first_line: int = 1) -> NcclInfo:
    """Read the ``NCCL INFO`` lines among ``lines`` into an :class:`NcclInfo`.

    Parameters
    ----------
    lines : iterable of str
        The log's lines (any other text is skipped: tables, prose, launcher output), ``ibv_devinfo``'s
        ``active_mtu`` line excepted.
    first_line : int
        The 1-based number of the first line (for :class:`Evidence`).

    Returns
    -------
    NcclInfo
        Empty (:attr:`NcclInfo.empty`) when no INFO line is there. Never raises on text: a line NCCL did not
        print is skipped, and a communicator line with impossible counts is kept in
        :attr:`NcclInfo.count_errors` (:meth:`NcclInfo.check_counts` raises on it).

    Examples
    --------
    >>> info = parse_nccl_info([
    ...     "node1:11:11 [0] NCCL INFO NCCL version 2.19.3+cuda12.2",
    ...     "node1:11:30 [0] NCCL INFO NVLS multicast support is not available on dev 0",
    ...     "node1:11:30 [7] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/Socket/0",
    ... ])
    >>> info.version, info.network, info.nvls_available, info.gdr
    ('2.19.3', 'Socket', False, False)
    >>> str(info.lines("nvls")[0])
    'line 2: NVLS multicast support is not available on dev 0'
    """
    reader = _Reader()
    number = first_line - 1
    for number, raw in enumerate(lines, start=first_line):
        at = raw.find(_MARK, 0, MAX_LINE_CHARS)
        if at < 0:
            reader.read_bare(raw[:200], Evidence(number, raw.strip()[:200]))
            continue
        text = raw[at + len(_MARK) : MAX_LINE_CHARS].strip()
        reader.read(text, Evidence(number, text[:200]))
    return reader.result(last_line=number)
