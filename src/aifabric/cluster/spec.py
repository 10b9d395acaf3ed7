"""ClusterSpec: a cluster described the way a vendor or operator does, validated with clear errors.

A ClusterSpec says what is bought, not how it is wired link by link: the accelerator and its scale-up
domain, the NIC per GPU and the scale-out Clos (tiers, switch, rail wiring, oversubscription, planes), the
front-end and the out-of-band management networks. :func:`aifabric.cluster.topology.build_topology` turns it
into the physical graph. Specs come from YAML files or presets (:mod:`aifabric.cluster.presets`); every
human quantity ("400 Gb/s", "900 GB/s") is parsed here, once, into SI units.

Errors name the field and the value: a NIC at "400 GB/s" (3.2 Tb/s, almost surely bits and bytes mixed up),
a GPU count that does not fill whole scale-up domains, an unknown catalogue key.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from aifabric import catalog
from aifabric.catalog.aws_ofi_nccl import efa_instance, instance_carries, ofi_nccl_release
from aifabric.catalog.loader import LINUX_NFS_MAX_CONNECTIONS, CpuSpec
from aifabric.catalog.nccl import version_tuple
from aifabric.catalog.transport import transport
from aifabric.cluster.tpu_slice import TpuSlice, domain_torus_dims, parse_slice, slice_of, twist_slice
from aifabric.errors import ConfigError
from aifabric.inputs import Int, got_suffix, load_yaml_mapping
from aifabric.units import parse_bandwidth, parse_latency, parse_nic_bandwidth

__all__ = [
    "MAX_GPUS",
    "MAX_GPUS_PER_NODE",
    "MAX_PORTS",
    "MAX_RADIX",
    "AccessFabricSpec",
    "ClusterSpec",
    "DragonflySpec",
    "FrontEndSpec",
    "InbandManagementSpec",
    "ManagementSpec",
    "ScaleOutSpec",
    "ScaleUpDomainSpec",
    "SitesSpec",
    "StorageFabricSpec",
    "StorageSpec",
    "check_field_path",
    "format_validation_error",
    "load_yaml_mapping",
]


#: Bounds on counts, far above any system built or announced (the largest clusters of 2025 hold 10^5 to
#: 10^6 GPUs; switch ASICs have at most 512 ports, 1,024 with breakout; multi-plane fabrics use 2 to 8
#: planes and servers at most 8 NICs per GPU), low enough that port arithmetic and index arrays stay exact.
#: Whether this machine can hold a topology is checked separately (:mod:`aifabric.budget`).
MAX_GPUS = 2**24
MAX_GPUS_PER_NODE = 4096
MAX_RADIX = 8192
#: CPU sockets of one node: NCCL joins at most NCCL_TOPO_MAX_NODES CPU nodes, eight-socket x86 servers
#: being the largest glueless SMP boards shipped (Intel Xeon Scalable 8-socket platforms)
MAX_CPU_SOCKETS = 8
#: The catalogue CPU family of a vendor whose every CPU NCCL gives one inter-socket figure (topo.cc
#: ncclTopoGetInterCpuBw; Zhaoxin: the non-Yongfeng figure); Intel's depends on the model
_VENDOR_CPU = {"amd": "amd-epyc", "arm": "arm", "power": "power9", "zhaoxin": "zhaoxin"}
MAX_PORTS = 64
#: The farthest two sites on Earth can be apart, km: half the equator of the WGS-84 ellipsoid, pi x a with
#: a = 6,378.137 km (NIMA TR8350.2, WGS-84), 20,037.5 km, above every geodesic between two points on Earth
#: (antipodes on the equator are 20,003.9 km apart over the poles).
MAX_SITE_DISTANCE_KM = 20_037.5


def _known(kind: str) -> AfterValidator:
    """A validator that accepts a catalogue key of ``kind`` (the error lists the known keys)."""

    def check(value: str) -> str:
        getattr(catalog, kind)(value)
        return value

    return AfterValidator(check)


NicKey = Annotated[str, _known("nic")]
#: A positive integer of a file (a torus axis, a slice axis): booleans and floats refused.
PosInt = Annotated[Int, Field(gt=0)]
SwitchKey = Annotated[str, _known("switch")]


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)  # NaN, inf: no field


class ScaleUpDomainSpec(_Strict):
    """The scale-up domain: GPUs joined by NVLink/NVSwitch (or PCIe, or a TPU torus).

    ``gpus`` is the domain size (8 for an HGX node, 72 for an NVL72 rack). ``link`` is a catalogue key of
    :func:`aifabric.catalog.scaleup` (default: the accelerator's NVLink generation). ``bandwidth``
    overrides the vendor's per-GPU figure; ``bandwidth_convention`` says whether that figure adds both
    directions (vendors' NVLink convention, the default) or is per direction; on a torus it is the chip's
    aggregate over the axes ``torus_dims`` declares (its axes of more than one chip: ``8x1x1`` at 400 GB/s
    is 2 links of 100 GB/s each way), where a catalogue TPU's own figure keeps its per-link rate on any
    shape (:func:`aifabric.cluster.tpu_slice.chip_axes`). ``p2p_through_cpu`` marks
    PCIe machines whose GPU-to-GPU traffic crosses the CPU root complex (NCCL path PHB/SYS).
    ``torus_dims`` is a torus domain's shape (a TPU pod, ``[16, 20, 28]``); ``slice`` the TPU slice a job
    runs on (``4x4x8`` or ``[4, 4, 8]``), one of the generation's shapes (:mod:`aifabric.cluster.tpu_slice`);
    ``twisted`` wires that slice as a twisted torus (TPU v4, v5p; :mod:`aifabric.cluster.twisted`).
    ``peer_to_peer`` says whether the driver lets GPUs of a PCIe node reach each other's memory (default:
    the accelerator's catalogue entry, False on GeForce cards); without it NCCL moves bytes through host
    memory (SHM). ``true`` on a GeForce card states a driver that enables P2P (tinygrad's open kernel
    modules). ``gpus_per_switch`` says how many GPUs of a PCIe node sit behind each PCIe switch and share
    its one uplink to the CPU (``nvidia-smi topo`` PIX between them; default 1, a root port each): SHM
    traffic, which NCCL diverts through host memory, crosses that uplink.
    """

    kind: Literal["nvswitch", "pcie", "torus"] = "nvswitch"
    gpus: Int | None = Field(default=None, ge=1, le=MAX_GPUS)
    link: str | None = None
    bandwidth_bytes_per_s: float | None = Field(default=None, validation_alias="bandwidth")
    bandwidth_convention: Literal["bidirectional", "per_direction"] = "bidirectional"
    p2p_through_cpu: bool = False
    torus_dims: tuple[PosInt, PosInt, PosInt] | None = None
    slice: tuple[PosInt, ...] | None = None
    twisted: bool = False
    peer_to_peer: bool | None = None
    gpus_per_switch: Int | None = Field(default=None, ge=1)

    @field_validator("slice", mode="before")
    @classmethod
    def _slice(cls, v: Any) -> tuple[int, ...] | None:
        return None if v is None else parse_slice(v, "scale_up.slice")

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, v: Any) -> Any:
        """A kind that is none of the three is refused with how a link is declared: a catalogue link
        (``nvlink5-gb200-nvl4``) goes in ``link``, and a switchless mesh is ``kind: nvswitch`` with its
        full-mesh link (catalogue ``topology: full_mesh``), the GPUs then reaching each peer over their own
        links (:attr:`ClusterSpec.mesh_links_per_gpu`)."""
        kinds = get_args(cls.model_fields["kind"].annotation)
        if not isinstance(v, str) or v in kinds:
            return v
        names = catalog.catalog_names("scaleup")
        meshes = ", ".join(k for k in names if catalog.scaleup(k).topology == "full_mesh")
        mesh = f"a switchless mesh is 'kind: nvswitch' with a full-mesh link in scale_up.link ({meshes})"
        if v.strip().lower() in names:
            raise ValueError(
                f"{v!r} is a scale-up link, not a kind ({', '.join(kinds)}): write 'kind: nvswitch, "
                f"link: {v}'; {mesh}"
            )
        raise ValueError(f"{v!r} is no scale-up kind ({', '.join(kinds)}); {mesh}")

    @field_validator("bandwidth_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float | None:
        if v is None:
            return None
        out = parse_bandwidth(_with_unit(v, "scale_up.bandwidth", "900 GB/s"), field="scale_up.bandwidth")
        _check_bytes_figure_in_bits(v, out, "scale_up.bandwidth")
        return out

    @field_validator("link")
    @classmethod
    def _link(cls, v: str | None) -> str | None:
        if v is not None:
            catalog.scaleup(v)
        return v


#: ScaleOutSpec fields only a Clos reads (a dragonfly refuses them when given)
_CLOS_ONLY = (
    "tiers",
    "rail_optimized",
    "rails",
    "oversubscription",
    "pod_gpus",
    "full_su",
    "uplink_speed_bytes_per_s",
    "planes",
    "spine_switch",
    "core_switch",
)


class DragonflySpec(_Strict):
    """A dragonfly scale-out's parameters (Kim et al., ISCA 2008; :mod:`aifabric.cluster.dragonfly`).

    ``endpoints_per_switch`` (p), ``switches_per_group`` (a), ``global_links_per_switch`` (h) and ``groups``
    (g) default to the balanced dragonfly of the switch's radix (``a = 2p = 2h``, ``p = floor((k + 1)/4)``)
    and the fewest groups that hold the NIC ports; HPE Slingshot is ``p: 16, a: 32, h: 17`` (De Sensi et
    al., SC20). ``links_per_arc`` is the global links between two groups (default: a group's ``a h`` global
    ports spread evenly over the other groups; Aurora cables 2 between compute groups and gives the rest to
    its storage and service groups). ``routing`` is ``minimal`` (one global link between groups) or
    ``valiant`` (two: half the global bandwidth, Kim 2008 Sec. 4).
    """

    endpoints_per_switch: Int | None = Field(default=None, ge=1, le=MAX_RADIX)
    switches_per_group: Int | None = Field(default=None, ge=1, le=MAX_RADIX)
    global_links_per_switch: Int | None = Field(default=None, ge=1, le=MAX_RADIX)
    groups: Int | None = Field(default=None, ge=1, le=MAX_GPUS)
    links_per_arc: Int | None = Field(default=None, ge=1, le=MAX_RADIX)
    routing: Literal["minimal", "valiant"] = "minimal"


def _default_planes(data: Any) -> Any:
    """A rail-optimised Clos section that names no ``planes`` puts each of a GPU's NIC ports on its own
    plane (``planes`` = ``nics_per_gpu`` x the card's ``ports``), as NVIDIA's RAs wire a GPU's ports ("each
    GPU has 2x 400GbE connectivity through two different planes", DGX SuperPOD B300 RA) and Alibaba HPN each
    port of a 2 x 200G NIC to its own ToR. A section with an unknown NIC, shared NICs or ``planes`` given is
    returned as it is (field validation names an unknown NIC)."""
    if not isinstance(data, dict) or "planes" in data or not data.get("rail_optimized"):
        return data
    nics, nic = data.get("nics_per_gpu", 1), data.get("nic", "connectx-7")
    if data.get("gpus_per_nic", 1) != 1 or not isinstance(nics, int) or not isinstance(nic, str):
        return data
    try:
        ports = nics * catalog.nic(nic).ports
    except ConfigError:
        return data
    return {**data, "planes": ports} if ports > 1 else data


class ScaleOutSpec(_Strict):
    """The back-end scale-out fabric: the nodes' NICs wired into a one-, two- or three-tier Clos, or with
    ``topology: dragonfly`` into a dragonfly sized by ``dragonfly`` (:class:`DragonflySpec`).

    A GPU has ``nics_per_gpu`` NICs of its own (1 on HGX/DGX; 2 or 4 on some nodes), or ``gpus_per_nic``
    GPUs share one NIC (AWS p4d.24xlarge: 8 x A100 over 4 x 100 Gb/s EFA, ``gpus_per_nic: 2``; a node with
    one NIC: ``gpus_per_nic: 8``); not both. A shared NIC is one leaf port that its GPUs reach over PCIe,
    each GPU's share of it ``line rate / gpus_per_nic`` when all of them send.

    ``oversubscription`` gives down:up port ratios per tier boundary, leaf first (``[1]`` non-blocking
    two-tier, ``[1, 2]`` three-tier with 2:1 between spine and core; ``'1:2'`` undersubscribes a tier, twice
    the ports up as down: Meta's rack switches). ``planes`` splits each NIC into that
    many independent fabrics (multi-plane designs), or, with ``nics_per_gpu`` of them, gives each plane
    ``nics_per_gpu / planes`` of a GPU's NICs (a Gaudi 2's three 100G ports, one per plane). Every NIC port
    (a card has the catalogue's ``ports``, :attr:`nic_ports_per_gpu`) is its own link: its own port, cable
    and leaf port at the NIC's speed (ConnectX-7: one 400G OSFP port), never one bundled link of
    ``nics_per_gpu x`` its rate, so three 400G NICs per GPU take three 400G leaf
    ports (:attr:`nic_links_per_plane`); a GPU's NICs of one plane share its leaf, which only a Clos that is
    not rail-optimised builds (a rail-optimised one puts each port on its own plane's leaf: ``planes``
    not given is the port count, :func:`_default_planes`; fewer are refused,
    :meth:`_one_port_per_rail_leaf`). No option bonds them into one link. ``switch`` is the leaf switch
    (default: the catalogue's leaf for the fabric that carries the NIC's own rate,
    :attr:`leaf_switch`); ``spine_switch`` and ``core_switch`` name other parts for the
    upper tiers (leaf QM9700, spine Q3400; default: the leaf's), each with its own radix, watts and parts
    line. ``radix`` overrides every tier's port count at one link's speed (default per tier: switch ports x
    port speed / link speed, i.e. breakout counted; :attr:`ClusterSpec.link_bytes_per_s`).
    ``nic_twin_port`` marks nodes whose NIC cages take twin-port modules (DGX H100: four OSFP cages, "a
    two-port transceiver to access all eight GPUs", DGX SuperPOD H100 RA, network fabrics).
    ``nic_cage_links`` says how many NIC links share one cage of the node, one module broken out over them
    (a Gaudi 2 server: "24 x 100 GbE scale-out ... interfaces exposed via six QSFP-DD ports", Cisco Nexus
    9000 Gaudi 2 buying guide: 4); not with ``nic_twin_port``, which is 2 of them.
    ``transport`` names how NCCL crosses the network (a net transport of ``catalog/data/transports.yaml``:
    ``ib-verbs``, ``roce-v2``, ``efa-srd``, ``gcp-tcpx``, ``gcp-tcpxo``, ``gcp-gib``, ``tcp-socket``,
    ``slingshot-cxi``); default
    the fabric's native one (:attr:`native_transport`).
    ``nic_path`` is the PCIe distance from a GPU to its NIC as NCCL names it (``nvidia-smi topo -m``):
    ``PIX`` (one PCIe switch, the default: HGX/DGX boards), ``PXB`` (several switches), ``PHB`` (through the
    CPU's host bridge), ``SYS`` (across CPU sockets), ``P2C`` (a Grace superchip's GPU reaching the CPU over
    NVLink-C2C and the NIC on the CPU's PCIe: GH200, GB200; NCCL names it PHB to v2.26 and P2C from v2.27.3,
    :attr:`aifabric.catalog.nccl.NcclRelease.c2c_nic_path`). NCCL uses GPUDirect RDMA up to
    ``NCCL_NET_GDR_LEVEL`` (default PXB; P2C from v2.27.3, ``NCCL_NET_GDR_C2C``); beyond it network bytes
    are staged in host memory (:func:`aifabric.catalog.transport.gdr_enabled`).
    ``instance_type`` (``p5.48xlarge``) and ``ofi_nccl_version`` (``1.21.1``) say which EC2 instance and
    aws-ofi-nccl release an ``efa-srd`` cluster runs, whose NCCL settings the plugin applies
    (:mod:`aifabric.catalog.aws_ofi_nccl`); default: the instance recognised by accelerator and EFA NIC, the
    newest recorded release.
    ``libfabric_version`` (``1.22.0``) says which libfabric a transport with a rendezvous protocol runs
    (``slingshot-cxi``: the release sets the eager limit, ``transports.yaml``); default the newest recorded.
    ``pod_gpus`` caps the GPUs of one three-tier pod (Meta's AI Zone: a two-stage Clos per zone, the
    ``oversubscription[1]`` aggregation layer between zones); default: as many as the spines' radix allows.
    Each ratio is built exactly at its tier (:mod:`aifabric.cluster.clos`) or the spec is refused.
    ``full_su`` cables every leaf for a full scalable unit whatever the nodes present: NVIDIA's DGX
    SuperPOD RAs, "if a different node count is required ... the fabric should be designed to support the
    full SU, including leaf switches and leaf-spine cables, and leave the portion of the fabric unused where
    these nodes would be located" (32 DGX B300 on a 72-node XDR SU: 8 leaves of 72 uplinks, 4 spines).
    ``uplink_speed`` is the speed of one switch-to-switch cable when it bundles several of the per-plane
    links (default: the per-plane link, one cable each): DGX SuperPOD (B300) twin-plane Spectrum-X runs 400G
    per plane to the leaves and 800G leaf-spine cables (RA Table 3: 512 leaf-spine cables per 512 GPUs);
    Alibaba HPN 200G per plane down and 64 x 400G up per ToR. It must be a whole multiple of the per-plane
    link and at most every tier's switch port; it changes cables and optics, not the Clos, and the flow
    engine's hashed routing picks the cable, whose lanes share its bytes (a port of that speed: two NIC-rate
    flows on a 2-lane cable do not slow, MegaScale NSDI 2024 Sec. 3.4).
    ``rail_optimized`` wires NIC k of every node of a scalable unit to that unit's rail-k leaf (NVIDIA's
    DGX SuperPOD RAs; default true on a Clos); a dragonfly hangs its endpoints off the switches of their
    group (Kim et al., ISCA 2008: p endpoints a switch) and refuses it, as its other Clos fields.
    """

    nic: NicKey = "connectx-7"
    nic_speed_bytes_per_s: float | None = Field(default=None, validation_alias="nic_speed")
    nics_per_gpu: Int = Field(default=1, ge=1, le=MAX_PORTS)
    gpus_per_nic: Int = Field(default=1, ge=1, le=MAX_GPUS_PER_NODE)
    fabric: Literal["infiniband", "ethernet"] = "infiniband"
    switch: SwitchKey | None = None
    spine_switch: SwitchKey | None = None
    core_switch: SwitchKey | None = None
    radix: Int | None = Field(default=None, ge=4, le=MAX_RADIX)
    tiers: Int = Field(default=2, ge=1, le=3)
    rail_optimized: bool | None = None
    rails: Int | None = Field(default=None, ge=1, le=MAX_GPUS_PER_NODE)
    oversubscription: tuple[float, ...] = (1.0,)
    planes: Int = Field(default=1, ge=1, le=MAX_PORTS)
    nic_to_leaf_copper: bool = False
    nic_twin_port: bool = False
    nic_cage_links: Int | None = Field(default=None, ge=2, le=MAX_PORTS)
    pod_gpus: Int | None = Field(default=None, ge=1)
    full_su: bool = False
    uplink_speed_bytes_per_s: float | None = Field(default=None, validation_alias="uplink_speed")
    hop_latency_s: float | None = Field(default=None, validation_alias="hop_latency")
    transport: str | None = None
    nic_path: Literal["PIX", "PXB", "P2C", "PHB", "SYS"] = "PIX"
    instance_type: str | None = None
    ofi_nccl_version: str | None = None
    libfabric_version: str | None = None
    topology: Literal["clos", "dragonfly"] = "clos"
    dragonfly: DragonflySpec = DragonflySpec()

    @field_validator("transport", mode="before")
    @classmethod
    def _transport(cls, v: Any) -> str | None:
        if v is None:
            return None
        entry = transport(str(v))
        if entry.scope != "net":
            raise ValueError(f"transport {v!r} is an intra-node transport; scale-out takes a network one")
        return entry.key

    @field_validator("instance_type", "ofi_nccl_version", mode="before")
    @classmethod
    def _aws(cls, v: Any, info: ValidationInfo) -> str | None:
        """An instance type or aws-ofi-nccl release the catalogue records (the error names the known ones)."""
        if v is None:
            return None
        if info.field_name == "instance_type":
            efa_instance("", "", str(v))
        else:
            ofi_nccl_release(str(v))
        return str(v)

    @field_validator("libfabric_version", mode="before")
    @classmethod
    def _libfabric(cls, v: Any) -> str | None:
        """A libfabric release (``1.22.0``); the error names the field and the form. A bare number is
        refused: YAML reads ``2.10`` as 2.1, another release with another eager limit."""
        if v is None:
            return None
        if isinstance(v, float):
            raise ValueError(
                f"scale_out.libfabric_version: {v!r} is a number, which drops trailing zeros (2.10 reads "
                "as 2.1); write the release quoted, e.g. '1.22.0'"
            )
        version_tuple(str(v), "scale_out.libfabric_version", "1.22.0")
        return str(v)

    @property
    def native_transport(self) -> str:
        """The transport a fabric kind runs without a plugin: ``ib-verbs`` on InfiniBand, ``roce-v2`` on
        Ethernet (NCCL's NET/IB on both; ``catalog/data/transports.yaml``)."""
        return "roce-v2" if self.fabric == "ethernet" else "ib-verbs"

    @property
    def nic_ports_per_gpu(self) -> int:
        """The NIC ports of one GPU, each its own NCCL network device and link to the leaf: ``nics_per_gpu
        x ports`` (``catalog/data/nics.yaml``: ``speed`` is per port; NCCL lists every port of a card as a
        device of its own, ``mlx5_0`` and ``mlx5_1`` of a dual-port ConnectX, net_ib.cc ``ncclIbInit``)."""
        return self.nics_per_gpu * catalog.nic(self.nic).ports

    @property
    def leaf_switch(self) -> str:
        """The leaf switch (catalogue key): ``switch``, else the fabric's default leaf for the NIC's own rate
        (``nic_speed``, else the catalogue's; :func:`aifabric.catalog.default_leaf_switch`): a ConnectX-7
        gets a Quantum-2 QM9700 (400 Gb/s ports), a ConnectX-8 a Quantum-X800 Q3400 (800 Gb/s), so a
        faster NIC is not silently cabled to ports that train it down to the older one's rate."""
        if self.switch is not None:
            return self.switch
        rate = self.nic_speed_bytes_per_s or catalog.nic(self.nic).line_rate_bytes_per_s
        return catalog.default_leaf_switch(self.fabric, rate)

    @property
    def tier_switches(self) -> dict[str, str]:
        """The switch of each tier, ``{"leaf": .., "spine": .., "core": ..}`` (catalogue keys)."""
        leaf = self.leaf_switch
        spine = self.spine_switch or leaf
        return {"leaf": leaf, "spine": spine, "core": self.core_switch or spine}

    @property
    def transport_key(self) -> str:
        """The transport the cluster uses across nodes: ``transport``; else ``efa-srd`` where
        ``instance_type`` names an EC2 instance that carries this NIC (its EFA, aws-ofi-nccl's SRD path:
        :func:`~aifabric.catalog.aws_ofi_nccl.instance_carries`); else the fabric's native one."""
        if self.transport:
            return self.transport
        if self.instance_type is not None and instance_carries(self.instance_type, self.nic):
            return "efa-srd"
        return self.native_transport

    @field_validator("nic_speed_bytes_per_s", "uplink_speed_bytes_per_s", mode="before")
    @classmethod
    def _link_bw(cls, v: Any, info: ValidationInfo) -> float | None:
        name = str(info.field_name).removesuffix("_bytes_per_s")
        return None if v is None else parse_nic_bandwidth(_with_unit(v, name, "400 Gb/s"), field=name)

    @property
    def nic_links_per_plane(self) -> int:
        """NIC links of one GPU (or one shared NIC) in each plane: its NIC ports over the planes,
        :attr:`nic_ports_per_gpu` ``/ planes``, when a GPU has more NIC ports than planes (each port one link
        at its own speed), else 1 (a port whole, or one of its ``planes / ports`` lanes). 3 x ConnectX-7 per
        GPU, one plane: 3 links of 400G; one dual-port 2 x 200G card: 2 links of 200G."""
        return max(1, self.nic_ports_per_gpu // self.planes)

    @property
    def ports_per_nic(self) -> int:
        """Leaf-facing ports of one NIC port: ``planes /`` :attr:`nic_ports_per_gpu` when the planes split
        each NIC port (a ConnectX-8 800G as 2 x 400G over two planes, DGX SuperPOD B300 RA), else 1."""
        return max(1, self.planes // self.nic_ports_per_gpu)

    @model_validator(mode="after")
    def _consistent(self) -> ScaleOutSpec:
        ports = self.nic_ports_per_gpu
        many, few = max(ports, self.planes), min(ports, self.planes)
        if many % few:
            given = f"nics_per_gpu={self.nics_per_gpu}" + (
                f" of {ports // self.nics_per_gpu} ports" if ports != self.nics_per_gpu else ""
            )
            raise ValueError(
                f"{given} with planes={self.planes}: one divides the other (each plane takes the same share "
                "of a GPU's NIC ports, or each NIC port the same number of planes)"
            )
        if self.gpus_per_nic > 1 and self.nics_per_gpu > 1:
            raise ValueError(
                f"gpus_per_nic={self.gpus_per_nic} with nics_per_gpu={self.nics_per_gpu}: a NIC is "
                "shared by several GPUs or a GPU has several NICs, not both"
            )
        if self.nic_twin_port and self.nic_cage_links is not None:
            raise ValueError(
                f"nic_twin_port with nic_cage_links={self.nic_cage_links}: a twin-port cage is 2 links; "
                "name one of them"
            )
        nic = catalog.nic(self.nic)
        if (
            self.nic_speed_bytes_per_s is not None
            and self.nic_speed_bytes_per_s > nic.line_rate_bytes_per_s * 1.0001
        ):
            raise ValueError(
                f"nic_speed {self.nic_speed_bytes_per_s * 8 / 1e9:g} Gb/s is above what {self.nic} does "
                f"({nic.line_rate_bytes_per_s * 8 / 1e9:g} Gb/s); pick a faster NIC"
            )
        for tier, key in self.tier_switches.items():
            sw = catalog.switch(key)
            if sw.fabric != self.fabric:
                field = "switch" if tier == "leaf" else f"{tier}_switch"
                raise ValueError(f"fabric is {self.fabric!r} but {field} {key!r} is an {sw.fabric} switch")
        return self

    @model_validator(mode="before")
    @classmethod
    def _rail_default(cls, data: Any) -> Any:
        """A Clos not told otherwise is rail-optimised; a dragonfly has no rails (None)."""
        if (
            isinstance(data, dict)
            and data.get("topology", "clos") == "clos"
            and data.get("rail_optimized") is None
        ):
            data = {**data, "rail_optimized": True}
        return _default_planes(data)

    @model_validator(mode="after")
    def _one_port_per_rail_leaf(self) -> ScaleOutSpec:
        """A rail-optimised Clos gives every NIC port of a GPU a leaf of its own: NVIDIA's RAs put each of a
        GPU's ports on its own plane ("each GPU has 2x 400GbE connectivity through two different planes",
        DGX SuperPOD B300 RA), Alibaba HPN each port of a 2 x 200G NIC on its own ToR. Several ports of one
        GPU in one plane would share its rail leaf, which the builder cannot split: ``planes`` not given
        is the port count (:func:`_default_planes`), and fewer given are refused, pointing to ``planes``
        (port k on plane k) or ``rail_optimized: false``."""
        if not self.rail_optimized or self.nic_links_per_plane == 1:
            return self
        ports = self.nic_ports_per_gpu
        raise ValueError(
            f"scale_out.planes: {self.planes} plane(s) for {ports} NIC ports per GPU (nics_per_gpu="
            f"{self.nics_per_gpu}) on a rail-optimised Clos would cable {self.nic_links_per_plane} of a "
            f"GPU's ports to its one rail leaf; give scale_out.planes: {ports} (each port on its own "
            "plane's leaf) or scale_out.rail_optimized: false"
        )

    @model_validator(mode="after")
    def _topology_fields(self) -> ScaleOutSpec:
        """A dragonfly has no Clos tiers, ratios, pods or planes to set, and a Clos no dragonfly: a field
        the built topology would not read, off its default, is refused, naming it (the default itself
        passes: a spec resized with :meth:`ClusterSpec.with_changes` carries every field)."""
        if self.topology == "clos":
            if self.dragonfly != DragonflySpec():
                raise ValueError(
                    "scale_out.dragonfly: given, but scale_out.topology is clos (make it dragonfly)"
                )
            return self
        for name in _CLOS_ONLY:
            if getattr(self, name) != type(self).model_fields[name].default:
                label = name.removesuffix("_bytes_per_s")
                raise ValueError(
                    f"scale_out.{label}: a Clos field; scale_out.topology dragonfly is sized by "
                    "scale_out.dragonfly (endpoints_per_switch, switches_per_group, global_links_per_switch, "
                    "groups)"
                )
        return self

    @field_validator("hop_latency_s", mode="before")
    @classmethod
    def _lat(cls, v: Any) -> float | None:
        return None if v is None else parse_latency(v, field="scale_out.hop_latency")

    @field_validator("oversubscription", mode="before")
    @classmethod
    def _os(cls, v: Any) -> tuple[float, ...]:
        if not isinstance(v, int | float | str | list | tuple) or isinstance(v, bool):
            raise ValueError(f"expected a down:up ratio or a list of them (e.g. [1, 2] or '2:1'), got {v!r}")
        vals = (v,) if isinstance(v, int | float | str) else tuple(v)
        out = []
        for x in vals:
            down, up = x.split(":", 1) if isinstance(x, str) and ":" in x else (x, 1)
            try:
                fx, b = float(down), float(up)
            except (TypeError, ValueError):
                raise ValueError(f"{x!r} is not a down:up ratio such as '2:1' or 2") from None
            if not b > 0:
                raise ValueError(f"{x!r}: the up side must be > 0")
            fx /= b
            if not math.isfinite(fx) or fx > MAX_RADIX:
                raise ValueError(f"{x!r}: a down:up ratio must be a finite number <= {MAX_RADIX}")
            if not fx * MAX_RADIX >= 1.0:  # below 1:1 undersubscribes (Meta's 24K clusters: T0-T1 at 1:2)
                raise ValueError(f"{x!r}: a down:up ratio must be >= 1:{MAX_RADIX}")
            out.append(fx)
        return tuple(out)


def _port_rate(value: Any, field: str) -> float | None:
    """A node port's rate in bits ("400 Gb/s") as bytes/s per direction; None stays None."""
    return None if value is None else parse_nic_bandwidth(_with_unit(value, field, "400 Gb/s"), field=field)


class FrontEndSpec(_Strict):
    """Front-end Ethernet per node (storage, data loading, checkpoints, users), often through a DPU.

    ``nics_per_node`` is at least 1: a front-end no node joins carries no checkpoint or data loading, which
    is a cluster without one (``front_end: null``), refused rather than dropped without a word.
    """

    nic: NicKey = "bluefield-3"
    nics_per_node: Int = Field(default=1, le=MAX_PORTS)
    nic_speed_bytes_per_s: float | None = Field(default=None, validation_alias="nic_speed")
    switch: SwitchKey = "spectrum-4-sn5600-400g"
    oversubscription: float = Field(default=1.0, ge=1.0, le=MAX_RADIX, allow_inf_nan=False)

    @field_validator("nic_speed_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float | None:
        return _port_rate(v, "nic_speed")

    @field_validator("nics_per_node")
    @classmethod
    def _joined(cls, v: int) -> int:
        if v < 1:
            raise ValueError(
                f"must be 1 or more, got {v} (a cluster without a front-end network: front_end: null)"
            )
        return v

    @property
    def ports_per_node(self) -> int:
        """Front-end ports of one node, each a cable to a leaf: ``nics_per_node x ports`` (the NIC's ports,
        ``catalog/data/nics.yaml``; its ``speed`` is per port)."""
        return self.nics_per_node * catalog.nic(self.nic).ports


class AccessFabricSpec(_Strict):
    """An Ethernet or InfiniBand leaf-spine that the nodes join through ports of their own (storage, in-band).

    ``ports_per_node`` ports of the catalogue NIC ``nic`` at ``port_speed`` (default: the NIC's line rate)
    go to leaves of ``switch``, split down:up by ``oversubscription``, with spines for the uplinks when one
    leaf per group is not enough. ``dual_homed`` sends port ``k`` of every node to its own group of leaves
    ("two 200 GbE ports to two separate switches to provide redundancy", NVIDIA HGX AI Factory Enterprise RA,
    Network Logical Architecture; DGX SuperPOD H100 RA: "each pair of in-band management and storage ports
    provide parallel pathways into the DGX H100 system"), so a node of two ports needs at least two leaves.
    ``nic_ports`` is the ports of one NIC card, each port carrying that share of the card's watts: a DGX
    B200's "2x dual-port QSFP112 NVIDIA BlueField-3 DPU" give one port of each card to storage and one to
    in-band management (DGX BasePOD RA, Core Components: "each pair of dual-port BlueField-3 HCAs ... provide
    parallel pathways to the storage and management fabrics"), ``nic_ports: 2`` on both.
    """

    nic: NicKey = "bluefield-3"
    ports_per_node: Int = Field(default=2, ge=1, le=MAX_PORTS)
    nic_ports: Int = Field(default=1, ge=1, le=MAX_PORTS)
    port_speed_bytes_per_s: float | None = Field(default=None, validation_alias="port_speed")
    switch: SwitchKey = "spectrum-4-sn5600-400g"
    oversubscription: float = Field(default=1.0, ge=1.0, le=MAX_RADIX, allow_inf_nan=False)
    dual_homed: bool = True

    @field_validator("port_speed_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float | None:
        return _port_rate(v, "port_speed")

    @model_validator(mode="after")
    def _port_fits_switch(self) -> AccessFabricSpec:
        """A ``port_speed`` given above the switch's ports cannot run (400 Gb/s on a 100GbE SN4600C)."""
        sw = catalog.switch(self.switch)
        given = self.port_speed_bytes_per_s
        if given is not None and given > sw.port_speed_bytes_per_s * (1 + 1e-9):
            raise ValueError(
                f"port_speed: {given * 8 / 1e9:g} Gb/s ports do not fit {self.switch!r}, whose ports run at "
                f"{sw.port_speed_bytes_per_s * 8 / 1e9:g} Gb/s; give a slower port_speed or a faster switch"
            )
        return self

    @property
    def speed_bytes_per_s(self) -> float:
        """One node port's line rate, bytes/s per direction: ``port_speed``, else the NIC's rate, never above
        the switch's port (a link runs at the slower end's rate, as :attr:`ClusterSpec.nic_negotiated_note`
        says of the scale-out: a 400G port on a 100GbE SN4600C carries 100 Gb/s)."""
        own = self.port_speed_bytes_per_s or catalog.nic(self.nic).line_rate_bytes_per_s
        return min(own, catalog.switch(self.switch).port_speed_bytes_per_s)

    @property
    def groups(self) -> int:
        """Leaf groups the nodes' ports split over: one per port when dual-homed, else one."""
        return self.ports_per_node if self.dual_homed else 1


class StorageFabricSpec(AccessFabricSpec):
    """A storage fabric of its own: the nodes' storage ports and the storage appliances' ports on its leaves.

    NVIDIA DGX SuperPOD RAs build one beside the compute fabric ("DGX SuperPOD configurations utilize four
    network fabrics: Compute Fabric, Storage Fabric, In-Band Management Network, Out-of-Band Management
    Network", H100/B200/B300 RAs, Network Fabrics), InfiniBand on the B200 RA ("InfiniBand Storage Fabric"),
    Ethernet through the BlueField-3 ports on GB200 ("Storage and In-band Ethernet Fabric"): the catalogue
    entry of ``switch`` says which (QM9700 InfiniBand, SN5600 Ethernet). ``appliance_ports`` is how many
    ports the storage appliances plug into its leaves (default: the ``storage`` section's ``units x
    unit_nics`` when it names the servers' NIC, else none). With a storage fabric, checkpoints and data
    loading reach the file system over it, not the front-end
    (:mod:`aifabric.storage.paths`).
    """

    appliance_ports: Int | None = Field(default=None, ge=0)


class InbandManagementSpec(AccessFabricSpec):
    """The in-band management network: Ethernet the nodes' OS reaches the management servers over (SSH,
    job scheduling, home directories), apart from the compute, storage and out-of-band networks.

    DGX SuperPOD H100 RA, In-Band Management Network: two in-band ports per DGX H100 (the pair beside the
    storage pair) on SN4600C switches (its Figure 9), the default switch here.
    """

    switch: SwitchKey = "sn4600-frontend"


#: The managed-device counts of :class:`ManagementSpec` beyond the nodes' own BMCs.
_MANAGED_COUNTS = (
    "dpu_bmcs_per_node",
    "pdus_per_rack",
    "power_shelves_per_rack",
    "nvlink_trays_per_rack",
    "servers",
    "storage_ports_per_unit",
)


class ManagementSpec(_Strict):
    """Out-of-band management: one BMC port per node on a slow separate Ethernet.

    Each rack of ``nodes_per_rack`` nodes has its own ``switch`` (SN2201: 48 x 1GbE), each rack switch has
    one uplink to each of two ``aggregation`` switches, where the management servers sit (NVIDIA DGX
    SuperPOD H100 RA: the OOB fabric "connects the management ports of all devices"). ``nodes_per_rack``
    defaults to the scale-up domain when it spans several nodes (an NVL72 rack), else 4 (DGX SuperPOD H100:
    4 DGX H100 per compute rack).

    Beyond the nodes' BMCs the OOB network takes the management port of every managed device
    (:data:`aifabric.cluster.management.MANAGED_KINDS`): ``dpu_bmcs_per_node`` BlueField BMCs per node
    (Rubin NVL8 RA: "the BMC from both the compute host ... and the BMC of the NVIDIA BlueField-4 DPU is
    connected to the out-of-band network"), ``pdus_per_rack`` rack PDUs, ``power_shelves_per_rack`` and
    ``nvlink_trays_per_rack`` of an NVL72 rack, ``servers`` management and UFM servers, and
    ``storage_ports_per_unit`` per storage appliance; every switch of every fabric counts by itself.
    ``devices: bmc`` counts the nodes' BMC ports alone, for a source that counts only those.
    """

    nic: NicKey = "bmc-1g"
    ports_per_node: Int = Field(default=1, ge=0, le=MAX_PORTS)
    switch: SwitchKey = "sn2201-mgmt"
    aggregation: SwitchKey = "sn4600-frontend"
    nodes_per_rack: Int | None = Field(default=None, ge=1)
    devices: Literal["all", "bmc"] = "all"
    dpu_bmcs_per_node: Int = Field(default=0, ge=0, le=MAX_PORTS)
    pdus_per_rack: Int = Field(default=0, ge=0, le=MAX_PORTS)
    power_shelves_per_rack: Int = Field(default=0, ge=0, le=MAX_PORTS)
    nvlink_trays_per_rack: Int = Field(default=0, ge=0, le=MAX_PORTS)
    servers: Int = Field(default=0, ge=0, le=MAX_RADIX)
    storage_ports_per_unit: Int = Field(default=0, ge=0, le=MAX_PORTS)

    @model_validator(mode="after")
    def _bmc_alone_takes_no_device_count(self) -> ManagementSpec:
        if self.devices != "bmc":
            return self
        given = [f for f in _MANAGED_COUNTS if getattr(self, f)]
        if given:
            raise ValueError(
                f"{given[0]}: {getattr(self, given[0])} given with devices: bmc, which counts the nodes' BMC "
                f"ports alone (drop {given[0]}, or give devices: all)"
            )
        return self


class StorageSpec(_Strict):
    """The storage system on the front-end: a catalogue entry and how many units (appliances, servers).

    A catalogue system of ``kind: local`` is the nodes' own drives instead: ``units`` counts the drives in
    each node and the aggregate figures are one node's (no front-end, no sharing between nodes).

    The aggregate read/write bandwidth is ``units`` x the entry's per-unit figure, else the entry's named
    deployment figure; ``aggregate_read`` / ``aggregate_write`` override both (e.g. "2 TB/s").
    ``unit_nic`` (a catalogue NIC) and ``unit_nics`` (ports per unit, 1 when not given) are the storage
    servers' own network ports, which bound what ``units`` servers can serve whatever their drives do;
    ``unit_nics`` without ``unit_nic`` says nothing the model can use and is refused.

    ``nconnect`` and ``nfs_transport`` describe the nodes' NFS mount: its transport connections and whether
    they run over TCP or RDMA (either one given, the other takes Linux's default, ``man 5 nfs``: one
    connection, TCP). The mount moves at most ``nconnect`` x the system's per-connection rate; a system whose
    catalogue entry has no such rate refuses them. ``nconnect`` is at most the mounting client's limit:
    ``nfs_client: linux`` (the default, the stock kernel client) allows Linux's 16; ``nfs_client: vendor``
    (the storage vendor's own client, e.g. VAST's vastnfs) the entry's catalogued ``max_nconnect``.
    """

    system: str = "ddn-ai400x2-turbo"
    units: Int | None = Field(default=None, ge=1)
    aggregate_read_bytes_per_s: float | None = Field(default=None, validation_alias="aggregate_read")
    aggregate_write_bytes_per_s: float | None = Field(default=None, validation_alias="aggregate_write")
    unit_nic: str | None = None
    unit_nics: Int | None = Field(default=None, ge=1, le=MAX_PORTS)
    nconnect: Int | None = Field(default=None, ge=1)
    nfs_transport: Literal["tcp", "rdma"] | None = None
    nfs_client: Literal["linux", "vendor"] = "linux"

    @field_validator("system")
    @classmethod
    def _system(cls, v: str) -> str:
        catalog.storage(v)
        return v

    @field_validator("unit_nic")
    @classmethod
    def _unit_nic(cls, v: str | None) -> str | None:
        if v is not None:
            catalog.nic(v)
        return v

    @model_validator(mode="after")
    def _ports_need_units(self) -> StorageSpec:
        if self.unit_nic is not None and self.units is None:
            raise ValueError("unit_nic: the storage servers' NICs need storage.units (how many servers)")
        if self.unit_nics is not None and self.unit_nic is None:
            raise ValueError(
                f"unit_nics: {self.unit_nics} ports per storage server need storage.unit_nic (which "
                "catalogue NIC they are)"
            )
        return self

    @model_validator(mode="after")
    def _mount_needs_a_rate(self) -> StorageSpec:
        if self.mount_connection_bytes_per_s is None and (self.nconnect or self.nfs_transport):
            given = (  # the field the file gave, with its value
                f"nconnect: {self.nconnect} {self.mount_transport} connection(s)"
                if self.nconnect
                else f"nfs_transport: {self.nfs_transport}, one connection"
            )
            raise ValueError(
                f"{given} on {self.system!r}, "
                f"whose catalogue entry has no per_connection_{self.mount_transport} rate to price them; "
                "remove storage.nconnect and nfs_transport"
            )
        return self

    @model_validator(mode="after")
    def _nconnect_within_the_client(self) -> StorageSpec:
        entry = catalog.storage(self.system)
        if self.nfs_client == "vendor" and "max_nconnect" not in entry.model_fields_set:
            raise ValueError(
                f"nfs_client: vendor, but {self.system!r} has no client of its own in the catalogue "
                "(no max_nconnect); its mounts use the Linux client (nfs_client: linux)"
            )
        limit = entry.max_nconnect if self.nfs_client == "vendor" else LINUX_NFS_MAX_CONNECTIONS
        if self.nconnect is not None and self.nconnect > limit:
            raise ValueError(
                f"nconnect: {self.nconnect} is more than the {limit} connections {self.system!r}'s "
                f"{self.nfs_client} NFS client mounts with (Linux: NFS_MAX_CONNECTIONS 16, "
                "fs/nfs/fs_context.c:31; nfs_client: vendor takes the vendor client's catalogued limit)"
            )
        return self

    @property
    def mount_transport(self) -> str:
        """The NFS mount's transport: the one given, else Linux's default (TCP)."""
        return self.nfs_transport or "tcp"

    @property
    def mount_connection_bytes_per_s(self) -> float | None:
        """What one connection of the mount carries (catalogue), bytes/s; None where the system has none."""
        rate: float | None = getattr(
            catalog.storage(self.system), f"per_connection_{self.mount_transport}_bytes_per_s"
        )
        return rate

    @field_validator("aggregate_read_bytes_per_s", "aggregate_write_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float | None:
        return (
            None
            if v is None
            else parse_bandwidth(_with_unit(v, "storage.aggregate", "2 TB/s"), field="storage.aggregate")
        )


class SitesSpec(_Strict):
    """Scale-across: the cluster's GPUs split evenly over ``count`` sites ``distance_km`` apart (at most
    :data:`MAX_SITE_DISTANCE_KM`, half the Earth's circumference).

    ``dci_bandwidth`` is each site's data-centre interconnect, one direction (e.g. "100 Tb/s");
    ``transport`` a catalogue key of :func:`aifabric.catalog.dci` (Spectrum-XGS by default).
    """

    count: Int = Field(default=2, ge=2)
    distance_km: float = Field(gt=0)
    dci_bandwidth_bytes_per_s: float = Field(validation_alias="dci_bandwidth")
    transport: str = "spectrum-xgs"

    @field_validator("dci_bandwidth_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float:
        return parse_bandwidth(_with_unit(v, "sites.dci_bandwidth", "100 Tb/s"), field="sites.dci_bandwidth")

    @field_validator("distance_km")
    @classmethod
    def _on_earth(cls, v: float) -> float:
        if v > MAX_SITE_DISTANCE_KM:
            raise ValueError(
                f"{v!r} km is farther than two sites on Earth can be apart ({MAX_SITE_DISTANCE_KM:,} km, "
                "half the equator)"
            )
        return v

    @field_validator("transport")
    @classmethod
    def _transport(cls, v: str) -> str:
        catalog.dci(v)
        return v


class ClusterSpec(_Strict):
    """A whole cluster. Build from YAML with :meth:`from_yaml`, from a dict with :meth:`from_dict`.

    Give ``nodes`` (servers) or ``gpus``; ``gpus_per_node`` is the GPUs of one server (8 for HGX, 4 for a
    GB200 compute tray). The scale-up domain holds ``scale_up.gpus`` GPUs (default: one node). A node has
    ``cpu_sockets`` CPU sockets (default 1) of the catalogue CPU family ``cpu`` (``catalog/data/cpus.yaml``,
    default by ``cpu_vendor``: :attr:`socket_cpu`), its GPUs split evenly between them, as ``nvidia-smi topo
    -m`` shows SYS between the halves (:attr:`gpus_per_socket`). NCCL makes a CPU node of every NUMA node, so
    a socket split into NUMA nodes (AMD NPS=4) counts as that many here, as the readers infer them. NCCL's
    P2P between GPUs of different CPU nodes runs at most the family's cross-socket P2P rate
    (:func:`aifabric.collectives.nccl_env.socket_p2p_tiers`).
    ``parts``
    defines new catalogue parts inline, in the shape of a user catalogue file
    (:func:`aifabric.catalog.add_parts`).
    """

    name: str = "cluster"
    accelerator: str
    gpus_per_node: Int = Field(default=8, ge=1, le=MAX_GPUS_PER_NODE)
    nodes: Int | None = Field(default=None, ge=1, le=MAX_GPUS)
    gpus: Int | None = Field(default=None, ge=1, le=MAX_GPUS)
    # Factories, not instances: the defaults' catalogue keys are checked when a spec is built, after user
    # catalogue files are read, never at import.
    scale_up: ScaleUpDomainSpec = Field(default_factory=ScaleUpDomainSpec)
    scale_out: ScaleOutSpec | None = Field(default_factory=ScaleOutSpec)
    front_end: FrontEndSpec | None = Field(default_factory=FrontEndSpec)
    management: ManagementSpec | None = Field(default_factory=ManagementSpec)
    storage: StorageSpec | None = None
    storage_fabric: StorageFabricSpec | None = None
    inband_management: InbandManagementSpec | None = None
    sites: SitesSpec | None = None
    cpu_vendor: Literal["intel", "amd", "arm", "power", "zhaoxin"] = "intel"
    cpu: str | None = None
    cpu_sockets: Int = Field(default=1, ge=1, le=MAX_CPU_SOCKETS)
    description: str = ""
    parts: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _register_parts(cls, data: Any) -> Any:
        """Parts defined inline (``parts:``, the shape of a user catalogue file) join the catalogue first.

        They are kept as canonical JSON text, so that the frozen spec stays hashable and round-trips.
        """
        if isinstance(data, dict) and data.get("parts") is not None:
            data = dict(data)
            data["parts"] = _register_parts(data["parts"], "cluster")
        return data

    @model_validator(mode="before")
    @classmethod
    def _one_switch_tier(cls, data: Any) -> Any:
        """A one-tier Clos that does not say ``rail_optimized`` and whose NIC ports of a plane all fit one
        leaf switch (:attr:`one_leaf_holds_ports`) is that one switch, not a leaf per rail: NVIDIA's rail
        leaves are sized for a scalable unit of 32 nodes (DGX SuperPOD RAs), and two nodes would leave 62 of
        a QM9700's 64 ports empty on each of eight. ``rail_optimized: true`` keeps the rail leaves."""
        so = data.get("scale_out") if isinstance(data, dict) else None
        if not isinstance(so, dict) or so.get("tiers") != 1 or "rail_optimized" in so:
            return data
        if so.get("topology", "clos") != "clos":
            return data
        try:
            railed = cls.model_validate({**data, "scale_out": {**so, "rail_optimized": True}})
        except (ValueError, ConfigError):
            return data  # the spec's own validation names what is wrong
        if not railed.one_leaf_holds_ports:
            return data
        return {**data, "scale_out": {**so, "rail_optimized": False}}

    @model_validator(mode="before")
    @classmethod
    def _vendor_of_cpu(cls, data: Any) -> Any:
        """A ``cpu`` family given without ``cpu_vendor`` sets it (the catalogue's vendor of the family)."""
        if isinstance(data, dict) and isinstance(data.get("cpu"), str) and "cpu_vendor" not in data:
            data = {**data, "cpu_vendor": catalog.cpu(data["cpu"]).vendor}
        return data

    @model_validator(mode="before")
    @classmethod
    def _torus_scale_out_given(cls, data: Any) -> Any:
        """A TPU torus must say what joins its pods: the default scale-out (an InfiniBand Clos of NCCL
        NICs) is no TPU network (TPU pods meet over the data-centre network, DCN)."""
        su = data.get("scale_up") if isinstance(data, dict) else None
        if isinstance(su, dict) and su.get("kind") == "torus" and "scale_out" not in data:
            raise ValueError(
                "scale_out: missing on a TPU torus (scale_up.kind torus); write 'scale_out: null' for one "
                "pod on its ICI alone, or a scale_out section (nic, switch) for the DCN that joins pods"
            )
        return data

    @field_validator("name")
    @classmethod
    def _named(cls, v: str) -> str:
        """A name with a visible character: every report, sweep row and export names the cluster by it."""
        if not v.strip():
            raise ValueError(f"{v!r} is blank; a cluster needs a name its reports, rows and exports can show")
        return v

    @field_validator("accelerator")
    @classmethod
    def _known_accelerator(cls, v: str) -> str:
        """An accelerator the catalogue (with any inline ``parts``, registered before) names; raises the
        catalogue's ConfigError (a ValueError) for an unknown one, located at the field itself."""
        catalog.accelerator(v)
        return v

    @model_validator(mode="after")
    def _check(self) -> ClusterSpec:
        """Refuse a spec whose sizes, domains, scale-up or scale-out do not agree (ValueError, named)."""
        n_gpus = self._checked_n_gpus()
        dom = self.domain_gpus
        self._check_domains(n_gpus)
        self._check_scale_up()
        self._check_cpu()
        if self.sites is not None and self.n_domains % self.sites.count:
            raise ValueError(
                f"sites.count: {self.sites.count} does not split the {self.n_domains} scale-up domains evenly"
            )
        if self.scale_out is not None:
            self._check_scale_out(self.scale_out)
        elif n_gpus > dom:
            raise ValueError(
                f"scale_out is null but the {n_gpus} GPUs span {n_gpus // dom} scale-up domains: they "
                "could not talk"
            )
        return self

    def _check_cpu(self) -> None:
        """``cpu`` names a catalogue CPU family of ``cpu_vendor``'s make (a ``P2C`` NIC path needs a Grace
        superchip: :meth:`_check_nic_path`)."""
        if self.cpu is None:
            return
        family = catalog.cpu(self.cpu)
        if family.vendor != self.cpu_vendor:
            raise ValueError(
                f"cpu: {self.cpu!r} is made by {family.vendor} but cpu_vendor is {self.cpu_vendor!r}; give "
                f"cpu_vendor: {family.vendor} (or leave it out)"
            )

    def _checked_n_gpus(self) -> int:
        """The GPU count, from ``gpus`` or ``nodes``, after checking the two agree and fill whole nodes."""
        if self.nodes is None and self.gpus is None:
            raise ValueError("give 'nodes' or 'gpus'")
        n_gpus = self.gpus if self.gpus is not None else self.nodes * self.gpus_per_node  # type: ignore[operator]
        if self.gpus is not None and self.gpus % self.gpus_per_node:
            raise ValueError(
                f"gpus={self.gpus} does not fill whole nodes of gpus_per_node={self.gpus_per_node}"
            )
        if self.nodes is not None and self.gpus is not None and self.nodes * self.gpus_per_node != self.gpus:
            raise ValueError(
                f"nodes={self.nodes} x gpus_per_node={self.gpus_per_node} = "
                f"{self.nodes * self.gpus_per_node}, not gpus={self.gpus}"
            )
        return n_gpus

    def _check_domains(self, n_gpus: int) -> None:
        """A scale-up domain is whole nodes, and the GPUs fill whole domains."""
        dom = self.domain_gpus
        if dom % self.gpus_per_node:
            raise ValueError(f"scale_up.gpus={dom} is not a multiple of gpus_per_node={self.gpus_per_node}")
        if n_gpus % dom:
            per = dom // self.gpus_per_node
            raise ValueError(
                f"gpus={n_gpus}"
                + (f" ({self.nodes} nodes x {self.gpus_per_node} GPUs)" if self.nodes is not None else "")
                + f" does not fill whole scale-up domains of scale_up.gpus={dom}"
                + (
                    f"; a node is one tray of gpus_per_node={self.gpus_per_node} GPUs and {per} nodes make "
                    f"one domain: give nodes as a multiple of {per}"
                    if per > 1
                    else ""
                )
            )

    def _check_scale_up(self) -> None:
        """An NVSwitch domain needs NVLink (or a given link); a torus's dimensions hold the domain."""
        dom = self.domain_gpus
        acc = self.accelerator_spec
        su = self.scale_up
        self._check_torus_kind()
        if su.kind == "nvswitch" and dom > 1 and not (acc.nvlink or acc.scale_up_link) and su.link is None:
            bridge = acc.nvlink_bridge
            also = f", or link: {bridge} for GPUs its NVLink bridge joins in pairs" if bridge else ""
            raise ValueError(f"scale_up.kind: {self.accelerator!r} has no NVLink; use kind: pcie{also}")
        if su.kind == "torus" and su.torus_dims is not None:
            prod = su.torus_dims[0] * su.torus_dims[1] * su.torus_dims[2]
            if prod != dom:
                raise ValueError(
                    f"scale_up.torus_dims {list(su.torus_dims)} hold {prod} chips, not the domain's {dom}"
                )
        rules = self.scaleup_link.slices if su.kind == "torus" else None
        flat = rules is not None and len(rules.shapes[0]) == 2  # a 2-D generation (v5e, v6e)
        if flat and rules and su.torus_dims is not None and sum(d > 1 for d in su.torus_dims) > 2:
            raise ValueError(
                f"scale_up.torus_dims: {self.accelerator} is a 2-D torus of at most {rules.max_chips} chips "
                f"(AxBx1), got {list(su.torus_dims)}"
            )
        if su.slice is not None:
            self._check_slice(su.slice)
        if su.twisted:
            self._check_twisted(su.slice)
        if su.peer_to_peer is not None and su.kind != "pcie":
            raise ValueError(
                f"scale_up.peer_to_peer: only GPUs on PCIe (kind: pcie) lack peer-to-peer, kind is {su.kind}"
            )
        if su.p2p_through_cpu and su.kind != "pcie":
            raise ValueError(
                "scale_up.p2p_through_cpu: only GPUs on PCIe (kind: pcie) meet through the CPU, kind is "
                f"{su.kind}"
            )
        self._check_switch_gpus()
        self._check_mesh_gpus()

    def _check_mesh_gpus(self) -> None:
        """A full-mesh scale-up (catalogue ``topology: full_mesh``: one link to each peer, no switch) joins
        at most ``L + 1`` GPUs per domain, ``L`` its links per GPU (8 on MI300X's 7 xGMI links)."""
        links = self.mesh_links_per_gpu
        if links and self.domain_gpus > links + 1:
            raise ValueError(
                f"scale_up.gpus: {self.domain_gpus} GPUs per domain on {self.scaleup_link.key}, a full mesh "
                f"of {links} links per GPU that joins at most {links + 1}"
            )

    def _check_switch_gpus(self) -> None:
        """``scale_up.gpus_per_switch``: PCIe switches of a PCIe node, at most the node's GPUs behind one."""
        k = self.scale_up.gpus_per_switch
        if k is None:
            return
        if self.scale_up.kind != "pcie":
            raise ValueError(
                f"scale_up.gpus_per_switch: only GPUs on PCIe (kind: pcie) sit behind a PCIe switch, kind is "
                f"{self.scale_up.kind}"
            )
        if k > self.gpus_per_node:
            raise ValueError(
                f"scale_up.gpus_per_switch: {k} is more than the node's gpus_per_node={self.gpus_per_node}"
            )

    def _check_torus_kind(self) -> None:
        """A TPU's chips meet over their ICI torus, and only a TPU has one: a TPU in an NVSwitch or PCIe
        domain would run NCCL over its ICI and CX-7 NICs, a GPU in a torus XLA's torus collectives."""
        kind = self.scale_up.kind
        if self.accelerator_spec.arch == "tpu" and kind != "torus":
            got = (
                "scale_up missing"
                if "scale_up" not in self.model_fields_set
                else "scale_up.kind missing"
                if "kind" not in self.scale_up.model_fields_set
                else f"got {kind}"
            )
            raise ValueError(
                f"scale_up.kind: {self.accelerator} is a TPU, whose chips meet over their ICI torus; write "
                f"scale_up: {{kind: torus}} ({got})"
            )
        if self.accelerator_spec.arch != "tpu" and kind == "torus":
            raise ValueError(
                f"scale_up.kind: torus is a TPU's ICI; {self.accelerator} is a GPU: use nvswitch or pcie"
            )

    def _check_slice(self, dims: tuple[int, ...]) -> None:
        """A slice is cut from a TPU torus whose link lists slice shapes, and is one of them."""
        if self.scale_up.kind != "torus":
            raise ValueError(
                f"scale_up.slice: only a TPU torus is cut into slices (kind is {self.scale_up.kind})"
            )
        rules = self.scaleup_link.slices
        if rules is None:
            raise ValueError(f"scale_up.slice: the {self.scaleup_link.key} link lists no slice shapes")
        axes = len(rules.shapes[0])
        pod = domain_torus_dims(self.scale_up.torus_dims, self.domain_gpus, axes)
        slice_of(rules, dims, pod, what=self.accelerator, field="scale_up.slice")

    def _check_twisted(self, dims: tuple[int, ...] | None) -> None:
        """A twisted torus needs a TPU generation that twists (catalogue ``slices.twisted``) and, when the
        slice is given, a shape that twists (:func:`~aifabric.cluster.tpu_slice.twist_slice`)."""
        if self.scale_up.kind != "torus":
            raise ValueError(f"scale_up.twisted: only a TPU torus is twisted (kind is {self.scale_up.kind})")
        rules = self.scaleup_link.slices
        if rules is None or not rules.twisted or dims is not None:
            try:
                twist_slice(
                    rules, TpuSlice(tuple(dims or ()), (True,) * len(dims or ())), what=self.accelerator
                )
            except ConfigError as e:
                raise ValueError(str(e)) from None

    def _check_scale_out(self, so: ScaleOutSpec) -> None:
        """The oversubscription ratios match the tiers; NICs, rails and pods divide the nodes."""
        if len(so.oversubscription) not in (1, so.tiers - 1 if so.tiers > 1 else 1, so.tiers):
            raise ValueError(
                f"scale_out.oversubscription has {len(so.oversubscription)} ratios for {so.tiers} tiers"
            )
        if self.gpus_per_node % so.gpus_per_nic:
            raise ValueError(
                f"scale_out.gpus_per_nic={so.gpus_per_nic} does not divide gpus_per_node="
                f"{self.gpus_per_node}: every NIC of a node serves the same number of GPUs"
            )
        if so.gpus_per_nic > 1 and so.rails is not None and so.rails > self.endpoints_per_node:
            raise ValueError(
                f"scale_out.rails={so.rails} is more than the {self.endpoints_per_node} NIC ports of a "
                f"node (gpus_per_node={self.gpus_per_node} / gpus_per_nic={so.gpus_per_nic})"
            )
        if so.rail_optimized and so.rails is not None and self.endpoints_per_node % so.rails:
            raise ValueError(
                f"scale_out.rails: {so.rails} does not divide the {self.endpoints_per_node} NIC ports of a "
                f"node (gpus_per_node={self.gpus_per_node}): each rail takes the same number of a "
                "node's ports"
            )
        if so.pod_gpus is not None and so.pod_gpus % self.gpus_per_node:
            raise ValueError(
                f"scale_out.pod_gpus={so.pod_gpus} does not hold whole nodes of "
                f"gpus_per_node={self.gpus_per_node}"
            )
        self._check_uplink_speed(so)
        self._check_radix(so)
        self._check_aws_plugin(so)
        self._check_libfabric(so)
        self._check_nic_path(so)
        self._check_nic_cage(so)

    def _check_nic_path(self, so: ScaleOutSpec) -> None:
        """``nic_path: P2C`` is a NIC behind a Grace CPU the GPU reaches over NVLink-C2C (NCCL paths.cc
        ``PATH_P2C``: GPU to CPU over a C2C link, then the CPU's PCIe to the NIC); it exists only where the
        accelerator's own host link is C2C (the catalogue's ``host_link_bidirectional``: GH200, GB200,
        GB300). On a GPU that reaches its CPU over PCIe the path cannot exist, so it is refused."""
        if so.nic_path == "P2C" and self.accelerator_spec.host_link_bidirectional_bytes_per_s is None:
            raise ValueError(
                f"scale_out.nic_path: 'P2C' is a NIC behind a Grace CPU reached over NVLink-C2C; "
                f"{self.accelerator!r} reaches its {self.cpu_vendor} host CPU over PCIe (no C2C link in the "
                "catalogue): give PIX, PXB, PHB or SYS"
            )

    def _check_nic_cage(self, so: ScaleOutSpec) -> None:
        """``nic_cage_links`` links of the node share one cage only where a pluggable module of that many
        links' speed exists (``catalog/data/optics.yaml``: 1.6 Tb/s the fastest, the OSFP and QSFP-DD
        MSAs' 8 lanes at 200G); a cage no module fills would be built as one module per link, silently
        not what was asked, so it is refused naming the cages the catalogue does fill."""
        if so.nic_cage_links is None:
            return
        link = self.link_bytes_per_s  # one NIC link of a plane, as the node end is priced
        if catalog.module_at(so.nic_cage_links * link, link) is not None:
            return
        fits = [k for k in range(2, MAX_PORTS + 1) if catalog.module_at(k * link, link) is not None]
        filled = f"cages of {' or '.join(map(str, fits))} such links" if fits else "no cage of several"
        raise ValueError(
            f"scale_out.nic_cage_links: {so.nic_cage_links} links of {link * 8 / 1e9:g} Gb/s make a "
            f"{so.nic_cage_links * link * 8 / 1e9:g} Gb/s cage and no pluggable module in the catalogue has "
            f"that speed; its modules fill {filled}"
        )

    def _check_radix(self, so: ScaleOutSpec) -> None:
        """``radix`` is at most the ports every tier's switch has at the per-plane link speed (breakout
        counted: ``ports x port speed / link speed``; a link faster than the port takes one port). A radix
        the switch lacks builds leaves from ports that do not exist: 1,000 on the 128 x 400GbE SN5600
        (NVIDIA SN5600 datasheet) gave 8 leaves of 128 NICs down and 128 uplinks."""
        if so.radix is None:
            return
        link = self.link_bytes_per_s
        for tier, key in so.tier_switches.items():
            sw = catalog.switch(key)
            ports = sw.ports_at(link)
            if so.radix > ports:
                raise ValueError(
                    f"scale_out.radix: {so.radix} is more than the {ports} ports of the {tier} switch "
                    f"{key!r} at {link * 8 / 1e9:g} Gb/s per link"
                )

    @staticmethod
    def _check_aws_plugin(so: ScaleOutSpec) -> None:
        """``instance_type`` and ``ofi_nccl_version`` name the aws-ofi-nccl plugin an ``efa-srd`` scale-out
        runs; on any other transport nothing reads them, so they are refused rather than ignored."""
        for name in ("instance_type", "ofi_nccl_version"):
            if getattr(so, name) is not None and so.transport_key != "efa-srd":
                raise ValueError(
                    f"scale_out.{name}: {getattr(so, name)!r} names the aws-ofi-nccl plugin of an efa-srd "
                    f"scale-out; this one runs {so.transport_key!r}"
                )

    @staticmethod
    def _check_libfabric(so: ScaleOutSpec) -> None:
        """``libfabric_version`` sets the eager limit of a transport with a rendezvous protocol; on any other
        transport nothing reads it, so it is refused rather than ignored."""
        if so.libfabric_version is not None and transport(so.transport_key).rendezvous is None:
            raise ValueError(
                f"scale_out.libfabric_version: {so.libfabric_version!r} sets the rendezvous of a libfabric "
                f"provider; {so.transport_key!r} has none (slingshot-cxi has)"
            )

    def _check_uplink_speed(self, so: ScaleOutSpec) -> None:
        """A switch-to-switch cable bundles a whole number of per-plane links and fits every tier's port."""
        up = so.uplink_speed_bytes_per_s
        if up is None:
            return
        link = self.link_bytes_per_s
        k = up / link
        if abs(k - round(k)) > 1e-6 or round(k) < 1:
            raise ValueError(
                f"scale_out.uplink_speed {up * 8 / 1e9:g} Gb/s is no whole multiple of the "
                f"{link * 8 / 1e9:g} Gb/s per-plane link"
            )
        for tier, key in so.tier_switches.items():
            sw = catalog.switch(key)
            if up > sw.port_speed_bytes_per_s * 1.0001:
                raise ValueError(
                    f"scale_out.uplink_speed {up * 8 / 1e9:g} Gb/s is faster than the {tier} switch "
                    f"{key!r} port ({sw.port_speed_bytes_per_s * 8 / 1e9:g} Gb/s)"
                )

    # --- derived figures -------------------------------------------------------------------------
    @property
    def n_gpus(self) -> int:
        """Total GPUs."""
        return self.gpus if self.gpus is not None else self.nodes * self.gpus_per_node  # type: ignore[operator]

    @property
    def n_nodes(self) -> int:
        """Total servers (nodes)."""
        return self.n_gpus // self.gpus_per_node

    @property
    def domain_gpus(self) -> int:
        """GPUs per scale-up domain (8 for HGX, 72 for NVL72)."""
        return self.scale_up.gpus or self.gpus_per_node

    @property
    def n_domains(self) -> int:
        """Number of scale-up domains."""
        return self.n_gpus // self.domain_gpus

    @property
    def accelerator_spec(self) -> catalog.AcceleratorSpec:
        """The accelerator's catalogue entry."""
        return catalog.accelerator(self.accelerator)

    @property
    def scaleup_link(self) -> catalog.ScaleUpSpec:
        """The scale-up link family: explicit (``scale_up.link``), else on ``kind: pcie`` the accelerator's
        PCIe generation, else its NVLink (or vendor link), else its PCIe generation.

        ``kind: pcie`` says the GPUs of a node meet over PCIe, whatever links the part has: an SXM part whose
        NVLink a node does not wire or expose (a VM hiding it: discovery models such nodes so) sends its
        peer traffic over its PCIe x16 link (PCIe 5.0: 32 GT/s x 16 x 128/130 = 63 GB/s per direction,
        PCI-SIG), never at NVLink's rate."""
        acc = self.accelerator_spec
        pcie = f"pcie-{acc.pcie}" if acc.pcie else None
        own = pcie if self.scale_up.kind == "pcie" else None
        key = self.scale_up.link or own or acc.nvlink or acc.scale_up_link or pcie
        if key is None and acc.arch == "tpu":
            key = "tpu-v5p-ici"
        if key is None:
            raise ConfigError(f"scale_up.link: accelerator {self.accelerator!r} names no scale-up link")
        return catalog.scaleup(key)

    @property
    def mesh_links_per_gpu(self) -> int:
        """Links per GPU of a full-mesh scale-up (catalogue ``topology: full_mesh``: one link to each peer,
        no switch, so the peer a GPU sends to decides the link); 0 on a switch, a torus or a one-GPU
        domain."""
        if self.scale_up.kind == "torus" or self.domain_gpus == 1:
            return 0
        link = self.scaleup_link
        return link.links_per_gpu if link.topology == "full_mesh" else 0

    @property
    def host_link_bytes_per_s(self) -> float | None:
        """One GPU's link to its host, bytes/s per direction, as a bulk DMA (a checkpoint copy, GPUDirect
        Storage) moves data: the line rate of the accelerator's PCIe generation (``pcie-<gen>``) times its
        DMA payload efficiency, e.g. PCIe 4.0 x16: 32 GB/s x 128/130 x 256 / (256 + 24) = 28.8 GB/s, where
        a GPUDirect Storage read into one L40S measured 26.41 GiB/s = 28.36 GB/s (gds-bench.farmgpu.net,
        NFS over RDMA); None for a part the catalogue gives no PCIe host link (a TPU chip)."""
        gen = self.accelerator_spec.pcie
        if not gen:
            return None
        link = catalog.scaleup(f"pcie-{gen}")
        return link.per_gpu_per_direction_bytes_per_s * link.dma_payload_efficiency

    @property
    def nic_spec(self) -> catalog.NicSpec | None:
        """The scale-out NIC's catalogue entry, or None without a scale-out network."""
        return None if self.scale_out is None else catalog.nic(self.scale_out.nic)

    @property
    def nic_nominal_speed_bytes_per_s(self) -> float:
        """One NIC's own rate, per direction, bytes/s (``nic_speed``, else the catalogue's), before its links
        meet the leaf's ports; 0 without a scale-out network."""
        if self.scale_out is None or self.nic_spec is None:
            return 0.0
        return self.scale_out.nic_speed_bytes_per_s or self.nic_spec.line_rate_bytes_per_s

    @property
    def leaf_port_speed_bytes_per_s(self) -> float:
        """Line rate of one port of the leaf switch, per direction, bytes/s (``switches.yaml``); 0 without a
        scale-out network."""
        so = self.scale_out
        return 0.0 if so is None else catalog.switch(so.leaf_switch).port_speed_bytes_per_s

    @property
    def nic_speed_bytes_per_s(self) -> float:
        """One NIC's line rate, per direction, bytes/s: its own rate (:attr:`nic_nominal_speed_bytes_per_s`),
        at most ``planes`` leaf ports' worth; 0 without a scale-out network.

        A link runs at the rate both ends support: InfiniBand and Ethernet auto-negotiate each link to the
        fastest speed common to the two ports (IBTA link training; IEEE 802.3 clause 73), so a ConnectX-8
        at 800 Gb/s cabled to a Quantum-2 QM9700's 400 Gb/s NDR port (QM9700 datasheet: 64 x 400 Gb/s)
        runs at 400 Gb/s, and the leaf's ports are counted at their own speed (:func:`~aifabric.cluster.
        clos.clos_shape`). A NIC split into ``planes`` ports (:attr:`ScaleOutSpec.ports_per_nic`) takes one
        leaf port per plane; several NICs of a GPU take one each.
        """
        nominal = self.nic_nominal_speed_bytes_per_s
        so = self.scale_out
        if so is None:
            return nominal
        return min(nominal, self.leaf_port_speed_bytes_per_s * so.ports_per_nic)

    @property
    def nic_negotiated_note(self) -> str | None:
        """One sentence when the NIC is faster than the leaf's ports and runs at their speed
        (:attr:`nic_speed_bytes_per_s`), else None."""
        so, nominal = self.scale_out, self.nic_nominal_speed_bytes_per_s
        if so is None or nominal <= self.nic_speed_bytes_per_s:
            return None
        return (
            f"{so.nic} at {nominal * 8 / 1e9:g} Gb/s runs at {self.nic_speed_bytes_per_s * 8 / 1e9:g} Gb/s: "
            f"{so.leaf_switch}'s ports are {self.leaf_port_speed_bytes_per_s * 8 / 1e9:g} Gb/s and a link "
            "runs at the slower end's rate (a switch with faster ports, or more planes, uses the NIC's)"
        )

    @property
    def storage_appliance_ports(self) -> int:
        """Ports the storage appliances plug into the storage fabric's leaves:
        ``storage_fabric.appliance_ports``, else ``storage.units x unit_nics`` where the storage section names
        the servers' NIC, else 0."""
        sf, st = self.storage_fabric, self.storage
        if sf is not None and sf.appliance_ports is not None:
            return sf.appliance_ports
        if st is None or st.unit_nic is None or st.units is None:
            return 0
        return st.units * (st.unit_nics or 1)

    @property
    def nics_per_node(self) -> int:
        """Scale-out NIC ports of one node, NCCL's network devices: ``gpus_per_node x nics_per_gpu x ports /
        gpus_per_nic`` (0 without a scale-out network; ``ports`` the NIC's, :attr:`ScaleOutSpec.
        nic_ports_per_gpu`). AWS p4d.24xlarge: 8 x 1 x 1 / 2 = 4."""
        so = self.scale_out
        return 0 if so is None else self.gpus_per_node * so.nic_ports_per_gpu // so.gpus_per_nic

    @property
    def nic_cards_per_node(self) -> int:
        """Scale-out NIC cards of one node, each of the NIC's ``ports``: ``gpus_per_node x nics_per_gpu /
        gpus_per_nic`` (a card shared by several GPUs counted once)."""
        so = self.scale_out
        return 0 if so is None else self.gpus_per_node * so.nics_per_gpu // so.gpus_per_nic

    @property
    def endpoints_per_node(self) -> int:
        """Leaf-attached endpoints of one node: one per GPU (its ``nics_per_gpu`` NICs, on one leaf per
        plane, :attr:`ScaleOutSpec.nic_links_per_plane` leaf ports there) or one per shared NIC,
        ``gpus_per_node / gpus_per_nic``."""
        return self.gpus_per_node // (self.scale_out.gpus_per_nic if self.scale_out else 1)

    @property
    def n_endpoints(self) -> int:
        """Leaf-attached endpoints of the cluster (:attr:`endpoints_per_node` x nodes)."""
        return self.n_nodes * self.endpoints_per_node

    @property
    def endpoint_ports(self) -> int:
        """NIC-facing leaf ports of one plane: :attr:`n_endpoints` x ``nic_links_per_plane`` (16 nodes of 8
        GPUs with 3 NICs each, one plane: 384)."""
        so = self.scale_out
        return self.n_endpoints * (so.nic_links_per_plane if so else 1)

    @property
    def one_leaf_holds_ports(self) -> bool:
        """Whether one leaf switch holds every NIC port of a plane (:attr:`endpoint_ports`): its radix,
        ``scale_out.radix`` or the leaf's ports at the link rate (:meth:`aifabric.catalog.SwitchSpec.
        ports_at`), is at least their count. False without a scale-out network."""
        so = self.scale_out
        if so is None:
            return False
        radix = so.radix or catalog.switch(so.leaf_switch).ports_at(self.link_bytes_per_s)
        return self.endpoint_ports <= radix

    @property
    def link_bytes_per_s(self) -> float:
        """One scale-out link's line rate, per direction, bytes/s: a NIC-leaf link, and each switch-to-switch
        link of a plane, ``endpoint line rate / (planes x nic_links_per_plane)`` (3 x 400G NICs per GPU,
        one plane: 400G, the rate switch ports are counted at); 0 without a scale-out network."""
        so = self.scale_out
        return (
            0.0 if so is None else self.endpoint_line_rate_bytes_per_s / (so.planes * so.nic_links_per_plane)
        )

    @property
    def endpoint_line_rate_bytes_per_s(self) -> float:
        """One endpoint's line rate, per direction, bytes/s: ``nic_speed x nics_per_gpu x ports`` (a shared
        NIC: its own ports' line rate). The capacity of its cable(s) to the leaf, all planes together."""
        so = self.scale_out
        return 0.0 if so is None else self.nic_speed_bytes_per_s * so.nic_ports_per_gpu

    @property
    def nic_line_rate_bytes_per_s(self) -> float:
        """Scale-out line rate per GPU, per direction, bytes/s: ``nic_speed x nics_per_gpu x ports /
        gpus_per_nic`` (all NIC ports of one GPU added; a GPU's share of a NIC that ``gpus_per_nic`` GPUs
        share)."""
        so = self.scale_out
        return 0.0 if so is None else self.endpoint_line_rate_bytes_per_s / so.gpus_per_nic

    @property
    def nic_effective_bytes_per_s(self) -> float:
        """Scale-out payload bandwidth per GPU, per direction, bytes/s: what its NIC(s) carry on the transport
        (:attr:`nic_payload_bytes_per_s`), at most what the GPU's own PCIe link to them carries
        (:attr:`nic_host_link_bytes_per_s`)::

            B_o = min( B_payload,  B_host )

        GPUDirect RDMA moves a GPU's bytes between its memory and its NIC over PCIe, through the GPU's own
        x16 link (staged through host memory they cross it too), so no NIC, nor several, gives one GPU more
        than that link: a ConnectX-8 at 800 Gb/s (98.3 GB/s of payload) behind an H100's PCIe Gen5 x16
        (57.6 GB/s) runs at 57.6 GB/s; NVIDIA pairs ConnectX-8 with Gen6 GPUs (DGX B300), whose x16
        carries 111.1 GB/s. Every engine, the training step and the reports read this one figure.
        """
        return min(self.nic_payload_bytes_per_s, self.nic_host_link_bytes_per_s)

    @property
    def nic_host_link_bytes_per_s(self) -> float:
        """What one GPU's PCIe links carry to its NIC(s), per direction, bytes/s: the bulk-DMA rate of its
        x16 link (:attr:`host_link_bytes_per_s`: PCIe Gen5 x16 64 GB/s x 0.900 = 57.6 GB/s) times the x16
        links it reaches its NICs over (catalogue ``nic_pcie_links``: 1, 2 on a Rubin package's two
        ConnectX-9 chips); inf on a part the catalogue gives no PCIe link (a TPU chip, whose DCN NICs sit
        on its host)."""
        host = self.host_link_bytes_per_s
        return math.inf if host is None else host * self.accelerator_spec.nic_pcie_links

    @property
    def nic_injection_bytes_per_s(self) -> float:
        """What one GPU can put on the scale-out wire, per direction, bytes/s: its NIC line rate
        (:attr:`nic_line_rate_bytes_per_s`) at most its PCIe path to the NIC(s)
        (:attr:`nic_host_link_bytes_per_s`), the cap :attr:`nic_effective_bytes_per_s` puts on the
        payload: ``min(B_nic, B_host)``. An A100's PCIe Gen4 x16 (28.8 GB/s of bulk DMA) behind a 400 Gb/s
        ConnectX-7 (50 GB/s) injects 28.8 GB/s."""
        return min(self.nic_line_rate_bytes_per_s, self.nic_host_link_bytes_per_s)

    @property
    def nic_host_link_note(self) -> str | None:
        """One sentence when the GPU's PCIe link, not its NIC(s), bounds its scale-out bandwidth
        (:attr:`nic_effective_bytes_per_s`), else None."""
        payload, host = self.nic_payload_bytes_per_s, self.nic_host_link_bytes_per_s
        if self.scale_out is None or payload <= host:
            return None
        gen = str(self.accelerator_spec.pcie).capitalize()
        return (
            f"bottleneck: the GPU's PCIe {gen} x16 link(s) to its NIC, {host / 1e9:.1f} GB/s per direction "
            f"(bulk DMA, GPUDirect RDMA), below the NIC payload of {payload / 1e9:.1f} GB/s per GPU"
        )

    @property
    def nic_payload_bytes_per_s(self) -> float:
        """Scale-out payload bandwidth of one GPU's NIC(s), per direction, bytes/s, before its PCIe link
        bounds it (:attr:`nic_effective_bytes_per_s`).

        One efficiency chain, the payload share of line rate on the transport in use::

            B_eff = line rate x min(e_NIC, f_T)         on NCCL's IB verbs code: NET/IB (the fabric's native
                                                        transport) or a plugin built on it (gIB on RoCEv2)
            B_eff = line rate x min(e_NIC, e_T)         on any other (a plugin, TCP sockets)

        ``e_NIC`` the NIC's payload efficiency (``nics.yaml``), what NCCL's own NET/IB reaches on InfiniBand
        (case 03's nodes). ``f_T`` the verbs transport's framing ceiling (``transports.yaml`` mtu_bytes /
        header_bytes: :attr:`~aifabric.catalog.transport.TransportSpec.framing_efficiency`): InfiniBand's
        26 B per 4096 B packet (0.9937) leaves ``e_NIC``; RoCEv2's 82 B (Ethernet, IPv4, UDP, BTH, ICRC,
        preamble and gap: 0.9804) is below ConnectX-7's 0.983, which RoCE cannot reach. ``e_T`` another
        transport's aggregate efficiency (``transports.yaml``),
        measured end to end as nccl-tests busbw over the NICs' line rate: it already holds the NIC's framing,
        so nothing may beat it (the former ``e_NIC x e_T / e_native`` did: 0.983 x 0.55 / 0.968 = 0.559 on
        tcp-socket). The streams a communicator opens may reach less
        (:func:`aifabric.collectives.tiers.nic_stream_factor`). ConnectX-7 at 400 Gb/s: 50 x 0.983 = 49.15
        GB/s on ib-verbs, 50 x 0.9804 = 49.02 on roce-v2 and on gcp-gib (NET/IB's code on the same RoCEv2
        wire), 50 x 0.55 = 27.5 on tcp-socket; at 200 Gb/s on gcp-tcpxo 25 x 0.94 = 23.5
        (:attr:`~aifabric.catalog.transport.TransportSpec.payload_share` chooses ``f_T`` or ``e_T``).
        """
        if self.nic_spec is None or self.scale_out is None:
            return 0.0
        share = transport(self.scale_out.transport_key).payload_share
        return self.nic_line_rate_bytes_per_s * min(self.nic_spec.payload_efficiency, share)

    @property
    def transport_extra_latency_s(self) -> float:
        """Per network hop, what the scale-out path costs above the fabric's native transport, seconds.

        NCCL's ``hwLat[NET]`` is that of its native NET/IB transport. A network step cannot take less than
        the transport's own latency nor the NIC's own latency (``nics.yaml``), so the hop latency is
        ``L_net = max(transport.latency, nic.latency)`` and the extra over NCCL's figure is
        ``max(0, L_net - native.latency)`` (``catalog/data/transports.yaml``). The shipped NICs' latencies are
        at or below their transports', so only a plugin, a socket path or a slower user NIC adds time.
        """
        so = self.scale_out
        if so is None:
            return 0.0
        net = transport(so.transport_key).latency_s
        if self.nic_spec is not None:
            net = max(net, self.nic_spec.latency_s)
        return max(0.0, net - transport(so.native_transport).latency_s)

    @property
    def scaleup_links(self) -> int:
        """Links per GPU on the scale-up link: the accelerator's ``nvlink_links`` on its own NVLink
        generation (H800 SXM: 8 of NVLink 4's 18), else the link's ``links_per_gpu``."""
        link = self.scaleup_link
        acc = self.accelerator_spec
        return acc.nvlink_links if (acc.nvlink_links and link.key == acc.nvlink) else link.links_per_gpu

    @property
    def scaleup_line_rate_bytes_per_s(self) -> float:
        """Scale-up line rate per GPU, per direction, bytes/s: ``scale_up.bandwidth``, else the link's
        per-link rate x :attr:`scaleup_links` (H800 SXM: 8 x 25 GB/s = 200 GB/s, its 400 GB/s both ways)."""
        su = self.scale_up
        if su.bandwidth_bytes_per_s is not None:
            if su.bandwidth_convention == "bidirectional":
                return su.bandwidth_bytes_per_s / 2
            return su.bandwidth_bytes_per_s
        return self.scaleup_catalogue_line_bytes_per_s

    @property
    def scaleup_catalogue_line_bytes_per_s(self) -> float:
        """Scale-up line rate per GPU, per direction, bytes/s, from the catalogue link alone (whatever the
        file's ``scale_up.bandwidth``): the link's per-GPU rate x :attr:`scaleup_links` / its links per GPU
        (H800 SXM: 8 x 25 GB/s = 200 GB/s)."""
        link = self.scaleup_link
        return link.per_gpu_per_direction_bytes_per_s * self.scaleup_links / link.links_per_gpu

    @property
    def socket_cpu(self) -> CpuSpec | None:
        """The catalogue CPU family of the node's sockets: ``cpu``, else the one family NCCL knows of the
        vendor (AMD, Arm, POWER, Zhaoxin: ``topo.cc`` ncclTopoGetInterCpuBw); None for an Intel host whose
        family is not given (NCCL's figure depends on the model: 6-40 GB/s)."""
        key = self.cpu if self.cpu is not None else _VENDOR_CPU.get(self.cpu_vendor)
        return None if key is None else catalog.cpu(key)

    @property
    def gpus_per_socket(self) -> int:
        """GPUs of a node on one CPU socket: the node's GPUs split evenly (the last socket may hold fewer)."""
        return -(-self.gpus_per_node // self.cpu_sockets)

    @property
    def gpus_span_sockets(self) -> bool:
        """Whether a node's GPUs sit on more than one CPU socket (GPU pairs at NCCL's path SYS)."""
        return self.gpus_per_node > self.gpus_per_socket

    @property
    def peer_to_peer(self) -> bool:
        """Whether GPUs of a node reach each other's memory: ``scale_up.peer_to_peer``, else the
        accelerator's on PCIe (False on GeForce cards, whose driver exposes no peer-to-peer over PCIe).
        GPUs joined by NVLink (an NVSwitch board or a bridge) always do: an NVLink path is within every P2P
        level, and NCCL calls P2P disabled between NVLink-connected GPUs a hardware fault (paths.cc
        ``ncclTopoCheckP2p``, v2.26.2-1), so a GeForce pair on a bridge runs P2P over NVLink."""
        su = self.scale_up.peer_to_peer
        if self.scale_up.kind != "pcie":
            return True
        return self.accelerator_spec.peer_to_peer if su is None else su

    @property
    def scaleup_effective_bytes_per_s(self) -> float:
        """Scale-up bandwidth per GPU per direction that NCCL achieves (its per-link constants), bytes/s.

        With an explicit ``scale_up.bandwidth`` the ratio effective/line of the catalogue link is applied.
        A PCIe node without GPU peer-to-peer (:attr:`peer_to_peer`) runs NCCL's SHM transport: the PCIe
        line rate x SHM's efficiency (``transports.yaml`` shm), as ``NCCL_P2P_DISABLE=1`` does.
        PCIe machines whose P2P traffic crosses an Intel CPU's root complex pay NCCL's INTEL_P2P_OVERHEAD
        (x 6/5); NCCL charges it on Intel x86 CPUs only (``search.cc`` ``followPath``: path PHB, CPU arch
        x86, vendor Intel), so P2P through an AMD root complex runs at the PCIe figure.
        """
        if self.scale_up.kind == "pcie" and not self.peer_to_peer:
            return self.scaleup_line_rate_bytes_per_s * transport("shm").aggregate_efficiency
        return self.p2p_effective_bytes_per_s

    @property
    def p2p_effective_bytes_per_s(self) -> float:
        """:attr:`scaleup_effective_bytes_per_s` of GPUs that reach each other's memory (NCCL's P2P transport
        over the scale-up link), whatever :attr:`peer_to_peer` says; on PCIe also what a GPU's x16 link
        carries to its NIC (GPUDirect RDMA needs no GPU peer), bytes/s."""
        link = self.scaleup_link
        eff = link.nccl_effective_bytes_per_s(self.scaleup_links)
        if self.scale_up.bandwidth_bytes_per_s is not None:  # the link's effective / line ratio, per link
            ratio = link.nccl_effective_bytes_per_s() / link.per_gpu_per_direction_bytes_per_s
            eff = self.scaleup_line_rate_bytes_per_s * ratio
        if self.scale_up.p2p_through_cpu and self.cpu_vendor == "intel":
            eff /= link.p2p_through_cpu_overhead
        return eff

    # --- constructors ------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str | None = None) -> ClusterSpec:
        """Validate a mapping into a ClusterSpec; raises ConfigError naming the field and value."""
        if not isinstance(data, dict):
            raise ConfigError(
                f"{source or 'cluster'}: expected a mapping at the top level, got {type(data).__name__}"
            )
        catalog.catalog_names("accelerator")  # a broken user catalogue file: its own one-line error first
        if data.get("parts") is not None:  # registered here first, so errors carry the file name
            data = {**data, "parts": _register_parts(data["parts"], source or "cluster")}
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise ConfigError(format_validation_error(err, source)) from err

    @classmethod
    def from_yaml(cls, path: str | Path) -> ClusterSpec:
        """Read a ClusterSpec from a YAML file. Raises ParseError (bad YAML) or ConfigError (bad values)."""
        p = Path(path)
        return cls.from_dict(load_yaml_mapping(p), source=str(p))

    def with_changes(self, **changes: Any) -> ClusterSpec:
        """A copy with top-level fields or dotted sub-fields changed (``{"scale_out.nic_speed": ...}``).

        Raises
        ------
        ConfigError
            A key that names no field (empty, unknown, or below a field that has no sub-fields), or a
            changed value that does not validate; the message names the key.
        """
        data = _to_aliases(self.model_dump(by_alias=False, exclude_none=False))
        for key, value in changes.items():
            check_field_path(key)
            target = data
            parts = str(key).split(".")
            for depth, part in enumerate(parts[:-1]):
                if not isinstance(target.get(part), dict):
                    raise ConfigError(f"{key}: {'.'.join(parts[: depth + 1])} is not set in this cluster")
                target = target[part]
            target[parts[-1]] = value
        if isinstance(data.get("scale_out"), dict) and "scale_out.planes" not in changes:
            data["scale_out"] = _rederived_planes(self, data["scale_out"], changes)
        return ClusterSpec.from_dict(data)


#: Scale-out fields default ``planes`` derive from (:func:`_default_planes`): a change to one re-derives them.
_PLANE_FIELDS = ("nic", "nics_per_gpu", "gpus_per_nic", "rail_optimized")
_PLANE_SOURCES = frozenset(f"scale_out.{k}" for k in _PLANE_FIELDS)


def _rederived_planes(
    old: ClusterSpec, section: dict[str, Any], changes: Mapping[str, Any]
) -> dict[str, Any]:
    """``section`` (the changed scale-out, as :meth:`ClusterSpec.with_changes` writes it) without its carried
    ``planes`` when those were the default derived from the NIC ports (:func:`_default_planes`) and a change
    moves the ports, so they are derived again: two NICs per GPU asked of a one-NIC cluster get two planes.
    Planes the old spec set apart from that default are carried as they are."""
    so = old.scale_out
    if so is None or not _PLANE_SOURCES & set(changes):
        return section
    derived = _default_planes({k: getattr(so, k) for k in _PLANE_FIELDS}).get("planes", 1)
    if so.planes != derived:
        return section
    return {k: v for k, v in section.items() if k != "planes"}


def check_field_path(key: str) -> None:
    """Raise ConfigError unless ``key`` is a dotted ClusterSpec field as a file writes it (YAML names:
    ``nodes``, ``scale_out.nic_speed``, ``scale_up.torus_dims``)."""
    parts = str(key).split(".")
    for depth, part in enumerate(parts):
        if not part or part not in _field_names(parts[:depth]):
            raise ConfigError(f"{key or '(empty)'}: not a cluster field (at {part or '(empty)'!r})")
        if depth < len(parts) - 1 and not _field_names(parts[: depth + 1]):
            raise ConfigError(f"{key}: {'.'.join(parts[: depth + 1])} has no sub-field {parts[depth + 1]!r}")


def _field_names(path: list[str]) -> set[str]:
    """YAML names (aliases where set) of the fields of the section at dotted ``path`` of a ClusterSpec."""
    model: Any = ClusterSpec
    for part in path:
        info = model.model_fields.get(part) or next(
            (f for f in model.model_fields.values() if f.validation_alias == part), None
        )
        if info is None:
            return set()
        args = [a for a in getattr(info.annotation, "__args__", (info.annotation,)) if a is not type(None)]
        model = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if model is None:
            return set()
    return {str(f.validation_alias or name) for name, f in model.model_fields.items()}


def _register_parts(parts: Any, source: str) -> str:
    """Add inline parts to the catalogue; returns them as canonical JSON (a mapping, or that JSON again)."""
    if isinstance(parts, str):
        try:
            parts = json.loads(parts)
        except json.JSONDecodeError:
            raise ConfigError(f"{source}: parts: expected a mapping of families to parts") from None
    catalog.add_parts(parts, source=source)
    return json.dumps(parts, sort_keys=True, default=str)


#: A rate written in bits: "900 Gb/s", "900 Gbps", "900 Gbit/s", "900 Gbits/s" (not "B/s", "bytes/s").
_BITS_UNIT = re.compile(r"(?:b|bit)(?:/s|ps|s/s)\s*$")
#: How close a figure's number must come to a link's vendor figure to be that figure: the same number,
#: rounding aside ("1.8 Tb/s" for NVLink 5's 1,800 GB/s).
_SAME_FIGURE = 0.01


def _check_bytes_figure_in_bits(raw: Any, bytes_per_s: float, field: str) -> None:
    """Refuse a scale-up bandwidth written in bits whose number, read as bytes, is a catalogue scale-up
    link's per-GPU figure: that figure typed with a small b, eight times too slow. Vendors quote scale-up
    links per GPU in bytes (NVIDIA H100 datasheet "NVLink 900GB/s", PCI-SIG's x16 GB/s, Google Cloud TPU
    v5p docs "1,200 GBps" of ICI), so "900 Gb/s" on an H100 is NVLink 4's 900 GB/s, not 112.5 GB/s -- below
    the same GPU's PCIe Gen5 x16 (128 GB/s). The NIC's opposite slip ("400 GB/s") is refused by
    :func:`~aifabric.units.parse_nic_bandwidth`.

    Raises
    ------
    ValueError
        Naming ``field``, the value, the link whose figure it is and the bytes reading.
    """
    if not isinstance(raw, str) or not _BITS_UNIT.search(raw):
        return
    links = [catalog.scaleup(key) for key in catalog.catalog_names("scaleup")]
    gap = {link.key: abs(bytes_per_s * 8 / link.per_gpu_bidirectional_bytes_per_s - 1) for link in links}
    link = min(links, key=lambda x: gap[x.key])  # the nearest figure: 900 is NVLink 4's, not xGMI's 896
    if gap[link.key] <= _SAME_FIGURE:
        meant = _BITS_UNIT.sub("B/s", raw.strip())
        raise ValueError(
            f"{raw!r} is bits, {bytes_per_s / 1e9:.4g} GB/s per GPU, 1/8 of the "
            f"{link.per_gpu_bidirectional_bytes_per_s / 1e9:g} GB/s per GPU of {link.name}, which its "
            f"vendor quotes in bytes; did you mean {meant!r} (bytes)?"
        )


def _with_unit(value: Any, field: str, example: str) -> Any:
    """Reject a bare number where a unit is needed (is 400 bits or bytes per second?)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(f"{value!r} has no unit; write it with one, e.g. '{example}'")
    return value


def _to_aliases(data: dict[str, Any]) -> dict[str, Any]:
    """Map python field names back to the YAML names (``..._bytes_per_s`` fields use aliases)."""
    renames = {
        "bandwidth_bytes_per_s": "bandwidth",
        "nic_speed_bytes_per_s": "nic_speed",
        "uplink_speed_bytes_per_s": "uplink_speed",
        "hop_latency_s": "hop_latency",
        "aggregate_read_bytes_per_s": "aggregate_read",
        "aggregate_write_bytes_per_s": "aggregate_write",
        "dci_bandwidth_bytes_per_s": "dci_bandwidth",
        "port_speed_bytes_per_s": "port_speed",
    }
    units = {
        "bandwidth_bytes_per_s": "B/s",
        "nic_speed_bytes_per_s": "B/s",
        "uplink_speed_bytes_per_s": "B/s",
        "hop_latency_s": "s",
        "aggregate_read_bytes_per_s": "B/s",
        "aggregate_write_bytes_per_s": "B/s",
        "dci_bandwidth_bytes_per_s": "B/s",
        "port_speed_bytes_per_s": "B/s",
    }
    out: dict[str, Any] = {}
    for k, v in data.items():
        if isinstance(v, dict):
            v = _to_aliases(v)
        elif k in units and isinstance(v, int | float):
            v = f"{v!r} {units[k]}"  # SI values back into unit strings, as a file would hold them
        out[renames.get(k, k)] = v
    return out


def format_validation_error(err: ValidationError, source: str | None = None) -> str:
    """One line per problem: ``field.path: message (got value)``."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "cluster"
        msg = e["msg"].removeprefix("Value error, ")
        last = str(e["loc"][-1]) if e["loc"] else ""
        named = re.match(r"([\w.-]+): ", msg)  # a parser's own field name, when loc already says it
        if named and (loc.startswith(named[1]) or last.startswith(named[1])):
            msg = msg[named.end() :]
        got = e.get("input")
        show = "" if isinstance(got, dict | list) or got is None else got_suffix(msg, got)
        field_first = not e["loc"] and re.match(r"[a-z_]+\.[\w.]+[=: ]", msg)  # names its own field
        lines.append(f"{msg}{show}" if field_first else f"{loc}: {msg}{show}")
    prefix = f"{source}: " if source else ""
    return prefix + "; ".join(lines)
