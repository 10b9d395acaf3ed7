"""What NCCL's INFO lines change in a comparison: the prediction follows what ran, causes follow the log.

:mod:`aifabric.discovery.nccl_info` reads the facts; this module turns them into

* settings for the engine (:func:`apply_to_settings`): ``NVLS multicast support is not available`` rules out
  NVLS and NVLSTree, as NCCL itself does (``transport/nvls.cc`` sets ``nvlsSupport = 0``);
* a network transport other than the cluster's NIC (:func:`net_transport`): a run over ``NET/Socket``,
  ``NET/AWS Libfabric``, ``NET/GPUDirectTCPX``... is predicted with that transport's aggregate efficiency
  and latency from ``catalog/data/transports.yaml`` (:func:`with_transport`), a socket run over the
  interfaces NCCL listed (:func:`transport_devices`);
* evidence-backed causes (:func:`evidence_causes`) and the causes the log contradicts
  (:func:`contradicted_causes`);
* what an MTU below 4096 B costs (:func:`mtu_payload_factor`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from aifabric.catalog.transport import TransportSpec, transport, transport_names
from aifabric.cluster.spec import ClusterSpec
from aifabric.discovery.nccl_env import NcclSettings
from aifabric.discovery.nccl_info import Evidence, NcclInfo

__all__ = [
    "TransportCalibration",
    "apply_to_settings",
    "contradicted_causes",
    "evidence_causes",
    "mtu_payload_factor",
    "net_transport",
    "transport_devices",
    "with_transport",
]

#: The transport a cluster's NIC stands for when the log does not say otherwise (NCCL's built-in NET/IB), and
#: the one NET/IB is on when every NIC it lists has an Ethernet link layer (``mlx5_0:1/RoCE``).
_DEFAULT_NET = "ib-verbs"
_ROCE = "roce-v2"
#: NCCL's IB verbs transport under every name it is printed with: ``IB`` (NVIDIA/nccl ``net_ib``) and
#: ``IBext``, ``IBext_v5`` ... ``IBext_v11``, the same verbs code in Mellanox/nccl-rdma-sharp-plugins
#: (``src/ib_plugin.c``: ``ibPlugin_v8 = {"IBext_v8", ...}``, one struct per net API version).
_IB_VERBS = re.compile(r"IB(?:ext(?:_v\d{1,2})?)?")
_SOCKET = "tcp-socket"
#: The MTU the catalogue's NIC payload efficiencies are stated for (ConnectX-7: "4096 B MTU payload over MTU
#: + ~70 B headers", catalog/data/nics.yaml), bytes.
FULL_MTU = 4096


def mtu_payload_factor(
    mtu_bytes: float, nic_payload_efficiency: float, *, framing: TransportSpec | None = None
) -> float:
    """Share of the NIC's payload rate left at ``mtu_bytes`` against the full MTU ``M`` it is stated for.

    Every packet carries ``h`` bytes of headers whatever its payload ``m``, so the payload share of the wire
    is ``m / (m + h)`` and::

        factor = [m / (m + h)] / [M / (M + h)]

    ``h`` and ``M`` are the transport's framing where the catalogue gives it (``framing.header_bytes`` and
    ``framing.mtu_bytes``, ``catalog/data/transports.yaml``): RoCEv2 82 B per 4096 B packet (Ethernet
    preamble and SFD 8, header 14, FCS 4, inter-frame gap 12; IPv4 20; UDP 8; BTH 12; ICRC 4). Without one,
    ``h`` comes from the NIC's payload efficiency ``e`` at ``M = 4096`` B, ``h = M (1/e - 1)`` (70.8 B for
    ConnectX-7's 0.983), which also counts losses that are not per packet.

    ConnectX-7's efficiency: IB MTU 2048 0.983, 1024 0.951. RoCEv2 framing: 2048 0.981, 1024 0.944.

    >>> from aifabric.catalog.transport import transport
    >>> round(mtu_payload_factor(2048, 0.983), 3), round(mtu_payload_factor(1024, 0.983), 3)
    (0.983, 0.951)
    >>> roce = transport("roce-v2")
    >>> [round(mtu_payload_factor(m, 0.983, framing=roce), 3) for m in (2048, 1024)]
    [0.981, 0.944]
    """
    if not 0 < nic_payload_efficiency <= 1 or not mtu_bytes > 0:
        raise ValueError(f"need an MTU > 0 and an efficiency in (0, 1], got {mtu_bytes!r}, "
                         f"{nic_payload_efficiency!r}")  # fmt: skip
    full, headers = _framing(nic_payload_efficiency, framing)
    return min(1.0, (mtu_bytes / (mtu_bytes + headers)) / (full / (full + headers)))


def _framing(nic_payload_efficiency: float, framing: TransportSpec | None) -> tuple[float, float]:
    """``(M, h)`` of :func:`mtu_payload_factor`: the transport's full MTU and header bytes per packet, else
    4096 B and the headers the NIC's payload efficiency implies."""
    if framing is not None and framing.mtu_bytes is not None and framing.header_bytes is not None:
        return float(framing.mtu_bytes), float(framing.header_bytes)
    return float(FULL_MTU), FULL_MTU * (1.0 / nic_payload_efficiency - 1.0)


def apply_to_settings(settings: NcclSettings, info: NcclInfo) -> NcclSettings:
    """``settings`` with what the INFO lines rule out: NVLS and NVLSTree when NVLS multicast is unavailable,
    and CollNet when ``NCCL_COLLNET_ENABLE`` is set but nothing shows it ran (:func:`_collnet_unproven`).

    >>> from aifabric.discovery.nccl_info import parse_nccl_info
    >>> info = parse_nccl_info(["h:1:1 [0] NCCL INFO NVLS multicast support is not available on dev 0"])
    >>> apply_to_settings(NcclSettings(), info).exclude
    ('nvls', 'nvls_tree')
    """
    settings = _collnet_unproven(settings, info)
    if info.nvls_available is not False:
        return settings
    exclude = (*settings.exclude, *(a for a in ("nvls", "nvls_tree") if a not in settings.exclude))
    algorithm = None if settings.algorithm in ("nvls", "nvls_tree") else settings.algorithm
    where = info.lines("nvls")[0]
    note = f"NVLS multicast not available ({where}): NVLS and NVLSTree excluded"
    return replace(settings, algorithm=algorithm, exclude=exclude, notes=(*settings.notes, note))


def _collnet_unproven(settings: NcclSettings, info: NcclInfo) -> NcclSettings:
    """``settings`` without ``NCCL_COLLNET_ENABLE`` when the lines do not show CollNet set up
    (:attr:`NcclInfo.collnet_shown`): enabled is not ran -- NCCL silently falls back when the collnet plugin
    is missing or cannot create its SHARP job -- so the prediction is what NCCL runs without it.

    >>> s = apply_to_settings(NcclSettings({"NCCL_COLLNET_ENABLE": "1"}), NcclInfo())
    >>> s.env, s.notes[-1][:48]
    ({}, 'NCCL_COLLNET_ENABLE=1: not applied to the predic')
    """
    value = settings.env.get("NCCL_COLLNET_ENABLE")
    if value is None or value.strip() == "0" or info.collnet_shown:
        return settings
    env = {k: v for k, v in settings.env.items() if k != "NCCL_COLLNET_ENABLE"}
    note = (
        f"NCCL_COLLNET_ENABLE={value}: not applied to the prediction (enabled is not ran: no 'Loaded collnet "
        "plugin' line and no collnet channel count in the log shows CollNet set up)"
    )
    return replace(settings, env=env, notes=(*settings.notes, note))


def net_transport(info: NcclInfo) -> TransportSpec | None:
    """The catalogued transport of the network the log says NCCL used, when it is not NCCL's own NET/IB.

    ``NET/IB`` on InfiniBand is what the cluster's NIC already models, so it gives None; so does a network the
    catalogue does not list or a log that names none. ``NET/IB`` whose NICs are all ``/RoCE`` is RoCEv2, and
    so is the same verbs transport under the name the RDMA plugin gives it (``IBext_v8``, :data:`_IB_VERBS`).

    >>> from aifabric.discovery.nccl_info import parse_nccl_info
    >>> net_transport(parse_nccl_info(["h:1:1 [0] NCCL INFO Using network Socket"])).key
    'tcp-socket'
    """
    if info.network is None:
        return None
    if _IB_VERBS.fullmatch(info.network):
        return transport(_ROCE) if info.link_layers == ("RoCE",) else None
    name = f"NET/{info.network}".lower()
    for key in transport_names():
        spec = transport(key)
        if spec.scope == "net" and spec.nccl_name.lower() == name:
            return None if spec.nccl_name == transport(_DEFAULT_NET).nccl_name else spec
    return None


def transport_devices(info: NcclInfo, net: TransportSpec | None) -> int | None:
    """Interfaces a socket transport ran over: the devices of NCCL's ``NET/Socket : Using [0]eth0 ...`` line
    (``net_socket.cc`` lists every interface it uses there) or, when more, those the connections name
    (``via NET/Socket/3``); None when not sockets or the log names none.

    >>> from aifabric.discovery.nccl_info import parse_nccl_info
    >>> info = parse_nccl_info(["h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
    ...                         "h:1:1 [0] NCCL INFO Using network Socket"])
    >>> transport_devices(info, net_transport(info))
    1
    """
    if net is None or net.key != _SOCKET or (info.network or "").lower() != "socket":
        return None
    # connections on more devices than listed: the listing is not the whole set (as for NICs, _nic_subset)
    return max(len(info.net_devices), len(info.net_devices_used)) or None


@dataclass(frozen=True)
class TransportCalibration:
    """A calibration profile with a network transport folded in (what the engine's ``calibration`` reads).

    ``inter_scale`` is the profile's times ``transport.aggregate_efficiency / nic.payload_efficiency`` times
    ``min(1, devices / NICs per node)``: the NIC's payload rate becomes the transport's (line rate x aggregate
    efficiency), on the interfaces the transport ran over (a socket run over one ``eth0`` of a node with
    eight NICs has one interface, each assumed at the node NIC's line rate -- an upper bound: the log does
    not give the interface's speed); ``extra_inter_latency_s`` adds ``transport.latency - NET/IB latency``
    to every network step (NCCL's hwLat[NET] plus the plugin's own cost; both latencies from
    ``transports.yaml``).
    """

    name: str
    intra_scale: float
    inter_scale: float
    latency_scale: float
    extra_inter_latency_s: float
    gpu: str = ""
    nic: str = ""


def with_transport(
    calibration: Any | None, net: TransportSpec | None, spec: ClusterSpec, devices: int | None = None
) -> Any | None:
    """``calibration`` with transport ``net`` applied (:class:`TransportCalibration`) over ``devices``
    interfaces of each node (None: all its NICs); unchanged when ``net`` is None or the cluster has no NIC.

    >>> from aifabric.cluster.spec import ClusterSpec
    >>> spec = ClusterSpec.from_dict({"name": "x", "nodes": 2, "accelerator": "h100-sxm"})
    >>> cal = with_transport(None, transport("tcp-socket"), spec)
    >>> round(cal.extra_inter_latency_s * 1e6, 1)
    34.2
    >>> one = with_transport(None, transport("tcp-socket"), spec, devices=1)
    >>> round(cal.inter_scale / one.inter_scale, 3) == spec.nics_per_node
    True
    """
    if net is None or spec.nic_spec is None:
        return calibration
    ib = transport(_DEFAULT_NET)
    share = min(1.0, devices / spec.nics_per_node) if devices and spec.nics_per_node else 1.0

    def get(key: str, default: float) -> float:
        return float(getattr(calibration, key, default)) if calibration is not None else default

    scale = get("inter_scale", 1.0) * net.aggregate_efficiency / spec.nic_spec.payload_efficiency * share
    return TransportCalibration(
        name=f"{getattr(calibration, 'name', 'model')} + {net.key}",
        intra_scale=get("intra_scale", 1.0),
        inter_scale=scale,
        latency_scale=get("latency_scale", 1.0),
        extra_inter_latency_s=get("extra_inter_latency_s", 0.0) + max(0.0, net.latency_s - ib.latency_s),
        gpu=str(getattr(calibration, "gpu", "") or ""),
        nic=str(getattr(calibration, "nic", "") or ""),
    )


def evidence_causes(
    info: NcclInfo, n_nodes: int, local_ranks: int | None = None, node_nics: int | None = None
) -> tuple[tuple[str, tuple[Evidence, ...]], ...]:
    """Causes of a network shortfall the INFO lines show, each with its lines (keys of ``compare.CAUSES``).

    * ``net_socket``: the network ran over ``NET/Socket`` (TCP through host memory);
    * ``no_gdr``: a network connection without ``/GDRDMA`` or NCCL printing GPU Direct RDMA disabled (not
      offered with sockets, which never use it);
    * ``pxn_off``: PXN disabled (``NCCL_PXN_DISABLE=1``, ``PXN Disabled``, ``use ring PXN 0`` with a rail
      layout that needs it is not told apart: the line is named);
    * ``one_nic``: the connections used fewer NICs than NCCL listed, or NCCL was given fewer NICs (``NET/IB :
      Using [0]mlx5_0 ... [3]mlx5_3`` or an ``NCCL_IB_HCA`` list) than both the ranks per node (``localRanks``
      or, without it, ``local_ranks`` from the rank lines) and the NICs the modelled node has
      (``node_nics``): a node built with fewer NICs than GPUs, modelled so, is not flagged for that alone
      (:func:`_nic_subset`).

    * ``no_p2p`` (any node count): GPUs of a node connected through host shared memory (``via SHM``) and
      never ``via P2P``: NCCL found P2P unusable between them (``transport/p2p.cc`` canConnect) -- a VM
      without peer access, ACS redirecting peer traffic, or ``NCCL_P2P_DISABLE``;
    * ``acs_iommu``: NCCL's own hint after a failed RDMA completion that ACS breaks GPUDirect RDMA;
    * ``small_mtu``: the QPs (or ``ibv_devinfo``) run an active MTU below 4096 B (its cost is bounded:
      :func:`mtu_payload_factor`).

    Only ``no_p2p`` applies to one node (no network in the run).
    """
    if info.empty:
        return ()
    found: list[tuple[str, tuple[Evidence, ...]]] = []
    if info.intra_transports and not any(t.startswith("P2P/") for t in info.intra_transports):
        found.append(("no_p2p", info.lines("intra")))
    if n_nodes <= 1:
        return tuple(found)
    if "acs_hint" in info.evidence:
        found.append(("acs_iommu", info.lines("acs_hint")))
    if info.mtu_bytes is not None and info.mtu_bytes < FULL_MTU:
        found.append(("small_mtu", info.lines("mtu")))
    socket = info.network is not None and info.network.lower() == "socket"
    if socket:
        found.append(("net_socket", info.lines("network", "net_devices")))
    if not socket and info.gdr is False:
        found.append(("no_gdr", info.lines("gdr_off")))
    if info.pxn is False:
        found.append(("pxn_off", info.lines("pxn_disabled", "ring_flags")))
    subset = _nic_subset(info, info.local_ranks or local_ranks, node_nics)
    if not socket and subset:
        found.append(("one_nic", subset))
    return tuple(found)


def _hca_count(value: str | None) -> int:
    """NICs an ``NCCL_IB_HCA`` value names (``mlx5_0,mlx5_1`` or ``=mlx5_0:1``); 0 for an exclusion list
    (``^mlx5_4``: what is left is not known) or none."""
    if not value or value.lstrip().startswith("^"):
        return 0
    return len([name for name in value.lstrip("=").split(",") if name.strip()])


def _nic_subset(info: NcclInfo, local_ranks: int | None, node_nics: int | None) -> tuple[Evidence, ...]:
    """The lines showing NCCL used fewer NICs than the node offers, or () (see :func:`evidence_causes`)."""
    hca = [e for e in info.lines("env") if "NCCL_IB_HCA" in e.text]
    listed = len(info.net_devices) or _hca_count(info.env.get("NCCL_IB_HCA"))
    used = len(info.net_devices_used)
    if used and used < len(info.net_devices):
        return (*info.lines("net_devices"), *hca)
    # connections on more NICs than listed: the listing is not the whole set; connections alone (a pasted
    # excerpt of a few channel lines) do not show how many NICs NCCL had
    seen = max(listed, used) if listed else 0
    limits = [n for n in (local_ranks, node_nics) if n]
    if seen and limits and seen < min(limits):
        return (*hca, *info.lines("net_devices")) or info.lines("network")
    return ()


def contradicted_causes(info: NcclInfo) -> frozenset[str]:
    """Causes the INFO lines rule out: no GPUDirect RDMA when every connection used it; GDR and ACS causes on
    a socket run (no RDMA path to blame); NVLS off where NCCL said NVLS is unavailable (not a fault there:
    the prediction already leaves it out)."""
    out = set()
    if info.gdr is True:
        out.add("no_gdr")
    if info.network is not None and info.network.lower() == "socket":
        out.update(("no_gdr", "acs_iommu"))  # sockets copy through host memory: no GPU-NIC RDMA path at all
    if info.nvls_available is False:
        out.add("nvls_off")  # not a fault: NVLS cannot run there, and the prediction already excludes it
    return frozenset(out)
