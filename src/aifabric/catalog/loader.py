"""Load the hardware catalogue: accelerators, scale-up links, NICs, switches, optics.

The figures live in YAML files next to this module (``data/*.yaml``), each entry with a ``source``. This
module turns them into frozen, validated objects in SI units (bytes, bytes/s per direction, seconds, watts,
FLOP/s). Vendors' conventions are kept next to the SI figure: NVLink's "900 GB/s" is both directions added
(:attr:`ScaleUpSpec.per_gpu_bidirectional_bytes_per_s`), a NIC's "400 Gb/s" is one direction in bits
(:attr:`NicSpec.line_rate_bytes_per_s` is that figure / 8).

Users add parts without editing the package. User catalogue files are merged over the shipped one, later
sources winning for a key they both define: ``~/.config/aifabric/catalog/*.yaml`` (``$XDG_CONFIG_HOME``
honoured), then the files or folders of ``AIFABRIC_CATALOG`` (a path list, ``os.pathsep``-separated), then
the files given to :func:`use_catalog_files` (the CLI's ``--catalog``). A user file maps a family
(``accelerators``, ``scaleup``, ``nics``, ``switches``, ``optics``, ``compute``) to entries written like
the shipped ones (``compute``: those of ``training/presets/compute.yaml``, :class:`ComputeEntry`). A
cluster YAML may define new parts inline in a ``parts:`` section of the same shape (:func:`add_parts`). A
part missing a field is refused with one line naming the file, the part and the field.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from functools import cache, partial
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aifabric.errors import ConfigError, ParseError, UnitError
from aifabric.inputs import Int, got_suffix, load_yaml
from aifabric.package_data import load_package_yaml
from aifabric.units import (
    parse_bandwidth,
    parse_bytes,
    parse_latency,
    parse_line_rate,
    parse_memory_bandwidth,
    parse_nic_bandwidth,
    parse_power,
    parse_time,
)

__all__ = [
    "LINUX_NFS_MAX_CONNECTIONS",
    "DEVICE_NOUNS",
    "AcceleratorSpec",
    "CpuSpec",
    "DciSpec",
    "NicSpec",
    "OpticSpec",
    "ScaleUpSpec",
    "SliceRules",
    "StorageSystemSpec",
    "SwitchSpec",
    "SystemPowerSpec",
    "accelerator",
    "add_parts",
    "catalog_generation",
    "catalog_names",
    "catalog_sources",
    "dci",
    "default_leaf_switch",
    "nic",
    "optic",
    "module_at",
    "optic_for_speed",
    "reload_catalog",
    "cpu",
    "cpu_for_cpuid",
    "cpuid_display_family",
    "scaleup",
    "storage",
    "switch",
    "use_catalog_files",
    "system_power",
]

#: The most ports one NIC card has: an Ethernet controller of the E810 family drives at most 8 ports
#: (Intel E810 datasheet: 2 x 100, 4 x 25 or 8 x 10 GbE), dual- and quad-port cards being the common parts
#: (ConnectX-7 MCX755106AS 2 x 200 Gb/s, Intel E810-XXVDA4 4 x 25 GbE); more is a slip, not a card.
MAX_NIC_PORTS = 8


def _rate(v: Any, parse: Callable[[Any], float] = parse_bandwidth) -> float:
    """A catalogue rate in bytes/s from a string with its unit; a bare number is refused, since nothing
    says whether it counts bits or bytes per second (:func:`aifabric.units.parse_bandwidth`)."""
    if isinstance(v, int | float) and not isinstance(v, bool):
        raise UnitError(f"rate: '{v:g}' has no unit (e.g. '{v:g} Gb/s')")
    return parse(v)


def _line_rate(v: Any) -> float:
    """A port's line rate (NIC, switch port, transceiver): bits per second as every datasheet quotes it,
    a byte unit refused (:func:`aifabric.units.parse_line_rate`)."""
    return _rate(v, parse_line_rate)


def _nic_rate(v: Any) -> float:
    """A NIC's line rate: :func:`_line_rate`, and at most the fastest NIC made
    (:func:`aifabric.units.parse_nic_bandwidth`: ConnectX-9, 1.6 Tb/s)."""
    _line_rate(v)
    return parse_nic_bandwidth(v, field="speed")


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    name: str
    source: str = Field(min_length=5)

    def check_fields(self) -> None:
        """Rules that tie fields of the part together, checked once its fields are valid; a family with
        none keeps this. Raises ConfigError ``field: ...`` (one line, :func:`_validate` prefixes the part).
        """


#: What one part of an ``arch`` is called where it is not a GPU (Cloud TPU docs: "chips" per slice).
DEVICE_NOUNS: dict[str, str] = {"tpu": "chip"}


class AcceleratorSpec(_Entry):
    """A GPU or TPU chip.

    Attributes: ``peak_bf16_flops`` (dense FLOP/s), ``peak_fp8_flops`` (dense FP8 FLOP/s, None without FP8
    tensor cores), ``sparse_peak_ratio`` (the vendor's with-sparsity peaks over the dense ones: 2 for 2:4
    structured sparsity; None where the vendor quotes no such figure), ``hbm_capacity_bytes``,
    ``hbm_bandwidth_bytes_per_s``, ``nvlink`` (key of a
    :class:`ScaleUpSpec` or None), ``nvlink_links``, ``pcie`` (generation key), ``scale_up_link`` (the
    scale-up link of a part without NVLink: AMD Infinity Fabric, TPU ICI; a :class:`ScaleUpSpec` key),
    ``collective_library`` (``nccl``, ``rccl`` or ``xla``), ``peer_to_peer`` (False where the driver
    exposes no GPU peer-to-peer, GeForce cards: NCCL then moves bytes between GPUs of a node through host
    memory, SHM), ``nic_pcie_links`` (the x16 links of the ``pcie`` generation one GPU package reaches its
    scale-out NICs over: 1, or 2 on a two-die package with a NIC chip per die), ``nvlink_bridge`` (a PCIe
    card that an NVLink bridge may join to one other card: the :class:`ScaleUpSpec` key of that bridge, a
    ``full_mesh`` of two; None where the card takes none; ``nvlink`` stays None, as no switched domain
    exists), ``host_link_bidirectional_bytes_per_s`` (the GPU's own link to its CPU's memory where it is
    not the x16 ``pcie`` link: NVLink-C2C on Grace parts, both directions added; None: the ``pcie`` link),
    ``host_system_memory_bytes`` (catalogue ``host_memory``: the CPU memory of the host the GPU sits in, as
    its source states it for the whole host, a Grace's LPDDR5X or a reference server's system memory; None:
    not in the catalogue, nothing checked) and ``host_memory_gpus`` (the GPUs that share it there: 2 on a
    GB200 superchip, 8 in a DGX H100); :attr:`host_memory_bytes` is the share behind one GPU, where CPU
    offload puts what leaves its HBM.
    """

    arch: str
    #: CUDA compute capability (100 = 10.0) where it differs from its ``arch``'s (gpu_architectures.yaml
    #: ``sm``): B300 and GB300 report 10.3 under the Blackwell architecture; None: the architecture's
    compute_capability: Int | None = Field(default=None, ge=10)
    peak_bf16_flops: float = Field(gt=0)
    peak_fp8_flops: float | None = Field(default=None, gt=0)
    sparse_peak_ratio: float | None = Field(default=None, gt=1)
    hbm_capacity_bytes: float = Field(gt=0, validation_alias="hbm_capacity")
    hbm_bandwidth_bytes_per_s: float = Field(gt=0, validation_alias="hbm_bandwidth")
    host_system_memory_bytes: float | None = Field(default=None, gt=0, validation_alias="host_memory")
    host_memory_gpus: Int = Field(default=1, ge=1)
    nvlink: str | None = None
    nvlink_links: Int = 0
    pcie: str | None = None
    nic_pcie_links: Int = Field(default=1, ge=1)
    nvls: bool = False
    ici_bandwidth_bidirectional_bytes_per_s: float | None = Field(
        default=None, validation_alias="ici_bandwidth_bidirectional"
    )
    dcn_bandwidth_bytes_per_s: float | None = Field(default=None, validation_alias="dcn_bandwidth")
    ici_topology: str | None = None
    chips_per_pod: Int | None = None
    scale_up_link: str | None = None
    collective_library: Literal["nccl", "rccl", "xla"] = "nccl"
    peer_to_peer: bool = True
    nvlink_bridge: str | None = None
    host_link_bidirectional_bytes_per_s: float | None = Field(
        default=None, gt=0, validation_alias="host_link_bidirectional"
    )

    @field_validator("hbm_capacity_bytes", mode="before")
    @classmethod
    def _size(cls, v: Any) -> float:
        return parse_bytes(v, field="hbm_capacity")

    @field_validator("host_system_memory_bytes", mode="before")
    @classmethod
    def _host_size(cls, v: Any) -> float | None:
        return None if v is None else parse_bytes(v, field="host_memory")

    @property
    def host_memory_bytes(self) -> float | None:
        """The host memory behind one GPU, bytes: the host's ``host_memory`` over the ``host_memory_gpus``
        sharing it (a DGX H100's 2 TB over its 8 GPUs: 250 GB); None where the catalogue has none.

        >>> from aifabric.catalog import accelerator
        >>> accelerator("gb200").host_memory_bytes / 1e9  # one Grace's 480 GB over its two GPUs
        240.0
        """
        if self.host_system_memory_bytes is None:
            return None
        return self.host_system_memory_bytes / self.host_memory_gpus

    @property
    def device_noun(self) -> str:
        """What one part is called, by its ``arch`` (:data:`DEVICE_NOUNS`): ``chip`` for a TPU (Google's
        Cloud TPU docs count a slice in chips), ``GPU`` otherwise.

        >>> from aifabric.catalog import accelerator
        >>> accelerator("tpu-v5p").device_noun, accelerator("h100-sxm").device_noun
        ('chip', 'GPU')
        """
        return DEVICE_NOUNS.get(self.arch, "GPU")

    def check_fields(self) -> None:
        """``host_memory_gpus`` shares a ``host_memory``: refused without one."""
        if self.host_memory_gpus > 1 and self.host_system_memory_bytes is None:
            raise ConfigError(
                f"host_memory_gpus: {self.host_memory_gpus} GPUs share the host memory, and host_memory is "
                "not given"
            )

    @field_validator("hbm_bandwidth_bytes_per_s", mode="before")
    @classmethod
    def _hbm(cls, v: Any) -> float:
        return _rate(v, partial(parse_memory_bandwidth, field="hbm_bandwidth"))

    @field_validator(
        "ici_bandwidth_bidirectional_bytes_per_s",
        "dcn_bandwidth_bytes_per_s",
        "host_link_bidirectional_bytes_per_s",
        mode="before",
    )
    @classmethod
    def _bw(cls, v: Any) -> float | None:
        return None if v is None else _rate(v)


class SliceRules(BaseModel):
    """The slices a TPU generation's pod is cut into (:mod:`aifabric.cluster.tpu_slice` reads them).

    ``shapes`` are shapes Google lists (chips per axis, ``AxB`` or ``AxBxC``, any orientation), each a
    mesh with no wraparound unless an axis has ``wrap_at`` chips; ``cube`` (v4, v5p, Ironwood: 4) also
    allows every shape of whole ``cube x cube x cube`` blocks, a torus on every axis (the optical circuit
    switches close the rings); ``max_chips`` bounds a single slice; ``twisted`` (v4, v5p): its
    ``k x k x 2k`` and ``k x 2k x 2k`` slices may be wired as twisted tori (:mod:`aifabric.cluster.twisted`).
    Sources in ``source``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    shapes: tuple[tuple[int, ...], ...]
    twisted: bool = False
    cube: Int | None = Field(default=None, ge=2)
    wrap_at: Int | None = Field(default=None, ge=2)
    max_chips: Int = Field(ge=1)
    source: str = Field(min_length=5)


class ScaleUpSpec(_Entry):
    """A scale-up link family (NVLink generation, PCIe generation, TPU ICI).

    ``per_gpu_bidirectional_bytes_per_s`` is the vendor's figure (both directions added);
    ``per_gpu_per_direction_bytes_per_s`` is half of it. ``nccl_effective_per_link_bytes_per_s`` is the
    per-link, per-direction bandwidth NCCL's tuner assumes (protocol overhead included); on a TPU ICI link,
    which no NCCL drives, the per-link one-way rate collectives get (the JAX scaling book's "ICI BW/link
    (one-way)", bytes/s per direction per link), the vendor's per-chip figure staying the line rate.
    ``topology`` is
    ``switch`` (every GPU reaches any peer at its whole bandwidth: NVSwitch, PCIe switch, ICI) or
    ``full_mesh`` (one direct link to each peer: AMD Infinity Fabric, 7 xGMI links per GPU in an 8-GPU
    node), with its source in the entry's ``source``. ``dma_payload_efficiency`` (a PCIe generation) is
    the share of the line rate a bulk DMA stream carries as data, after the line code and each maximum-size
    TLP's framing and header (1.0 where the entry derives none). ``slices`` (a TPU ICI) gives the slice
    shapes of its pods (:class:`SliceRules`). ``nvls_efficiency`` (a part with ``in_switch_reduction``,
    required there) is NCCL's ``nvlsEfficiency`` (``src/graph/tuning.cc``), in (0, 1]; None on a part
    without one. ``p2p_through_cpu_overhead`` (>= 1) is what GPU-to-GPU traffic through the CPU costs per
    byte of the link (NCCL ``topo.h`` ``INTEL_P2P_OVERHEAD``: 6/5). :meth:`check_fields` ties the fields.
    """

    per_gpu_bidirectional_bytes_per_s: float = Field(gt=0, validation_alias="per_gpu_bidirectional")
    links_per_gpu: Int = Field(ge=1)
    nccl_effective_per_link_bytes_per_s: float = Field(gt=0, validation_alias="nccl_effective_per_link")
    in_switch_reduction: bool = False
    nvls_efficiency: float | None = Field(default=None, gt=0, le=1)
    hop_latency_s: float = Field(ge=0, validation_alias="hop_latency")
    p2p_through_cpu_overhead: float = Field(default=1.0, ge=1)
    topology: Literal["switch", "full_mesh"] = "switch"
    slices: SliceRules | None = None
    dma_payload_efficiency: float = Field(default=1.0, gt=0, le=1)

    @field_validator(
        "per_gpu_bidirectional_bytes_per_s", "nccl_effective_per_link_bytes_per_s", mode="before"
    )
    @classmethod
    def _bw(cls, v: Any) -> float:
        return _rate(v)

    @field_validator("hop_latency_s", mode="before")
    @classmethod
    def _lat(cls, v: Any) -> float:
        return parse_latency(v, field="hop_latency")

    def check_fields(self) -> None:
        """An in-switch reduction needs its efficiency, and NCCL's rate fits the line rate.

        ``nvls_efficiency`` is NCCL's ``nvlsEfficiency`` (``src/graph/tuning.cc``: the share of the NVLink
        rate NVLS reductions get, 0.85 on Hopper, 0.74 on Blackwell), which NVLS's algbw is built on: a part
        with ``in_switch_reduction`` must give it (no default: none is published for a part the catalogue
        does not know). NCCL's per-link rate is a share of the wire's, so ``links_per_gpu x
        nccl_effective_per_link`` is at most the line rate per direction, half ``per_gpu_bidirectional``
        (nvlink4: 18 x 20.6 = 370.8 <= 450 GB/s); a relative float tolerance of 1e-9 lets a part whose
        product is the line rate exactly (tpu-v4-ici: 6 x 45 = 270 GB/s) through.

        A ``full_mesh`` part has no switch, so no in-switch reduction.

        Raises ConfigError ``in_switch_reduction: ...``, ``nvls_efficiency: ...`` or
        ``nccl_effective_per_link: ...``.
        """
        if self.in_switch_reduction and self.topology == "full_mesh":
            raise ConfigError(
                "in_switch_reduction: true on a topology: full_mesh part, whose GPUs meet over direct links "
                "with no switch to reduce in (NVLS needs an NVSwitch)"
            )
        if self.in_switch_reduction and self.nvls_efficiency is None:
            raise ConfigError(
                "missing field 'nvls_efficiency' (required where in_switch_reduction is true: the share of "
                "the NVLink rate NVLS reductions get, NCCL's nvlsEfficiency in tuning.cc, in (0, 1])"
            )
        nccl = self.nccl_effective_bytes_per_s()
        line = self.per_gpu_per_direction_bytes_per_s
        if nccl > line * (1 + 1e-9):
            raise ConfigError(
                f"nccl_effective_per_link: {self.nccl_effective_per_link_bytes_per_s / 1e9:g} GB/s x "
                f"links_per_gpu {self.links_per_gpu} = {nccl / 1e9:g} GB/s per direction is more than the "
                f"line rate, per_gpu_bidirectional {2 * line / 1e9:g} GB/s / 2 = {line / 1e9:g} GB/s "
                "(NCCL's rate is per link and per direction)"
            )

    @property
    def per_gpu_per_direction_bytes_per_s(self) -> float:
        """Vendor line rate per GPU, one direction (bytes/s): half the bidirectional figure."""
        return self.per_gpu_bidirectional_bytes_per_s / 2

    def nccl_effective_bytes_per_s(self, links: int | None = None) -> float:
        """Per-direction bandwidth NCCL achieves per GPU over ``links`` links (default: all), bytes/s."""
        return self.nccl_effective_per_link_bytes_per_s * (links or self.links_per_gpu)


class NicSpec(_Entry):
    """A NIC, DPU or BMC port: a card of ``ports`` ports (at most :data:`MAX_NIC_PORTS`), each of
    ``line_rate_bytes_per_s`` per direction (vendor's bits/s / 8) and each its own NCCL device and link
    (``ClusterSpec`` counts them); ``power_w`` is the card's."""

    line_rate_bytes_per_s: float = Field(gt=0, validation_alias="speed")
    ports: Int = Field(default=1, ge=1, le=MAX_NIC_PORTS)
    power_w: float = Field(ge=0, validation_alias="power")
    payload_efficiency: float = Field(gt=0, le=1)
    latency_s: float = Field(ge=0, validation_alias="latency")

    @field_validator("line_rate_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float:
        return _nic_rate(v)

    @field_validator("power_w", mode="before")
    @classmethod
    def _pw(cls, v: Any) -> float:
        return parse_power(v)

    @field_validator("latency_s", mode="before")
    @classmethod
    def _lat(cls, v: Any) -> float:
        return parse_latency(v, field="latency")

    @property
    def effective_bytes_per_s(self) -> float:
        """Payload bandwidth per direction, bytes/s: line rate x payload efficiency."""
        return self.line_rate_bytes_per_s * self.payload_efficiency


class SwitchSpec(_Entry):
    """A packet switch: ``ports`` of ``port_speed_bytes_per_s`` each (per direction), in ``cages``
    pluggable cages where the datasheet gives them (QM9700: 64 NDR ports in 32 twin-port OSFP cages);
    ``None``: one cage per port, or not stated. ``max_ports`` caps the logical ports breakout gives where
    the datasheet does (SN5600: 256 ports at 200GbE and below); ``None``: capacity alone sets them."""

    fabric: str
    ports: Int = Field(ge=2)
    port_speed_bytes_per_s: float = Field(gt=0, validation_alias="port_speed")
    cages: Int | None = Field(default=None, ge=1)
    max_ports: Int | None = Field(default=None, ge=2)
    power_w: float = Field(ge=0, validation_alias="power")
    latency_s: float = Field(ge=0, validation_alias="latency")
    in_network_reduction: bool = False
    default_leaf: bool = False  # a leaf a spec without a switch may get (:func:`default_leaf_switch`)

    def ports_at(self, link_bytes_per_s: float) -> int:
        """Ports at ``link_bytes_per_s`` (one link's rate, bytes/s per direction): the capacity split into
        links of that speed (breakout counted, ``ports x port speed // link``), at most ``max_ports`` (the
        datasheet's logical-port cap, catalogue ``max_ports``). A link at least the port speed takes one
        whole port (a port never gangs with another), so the switch then has its ``ports``.

        >>> from aifabric.catalog import switch
        >>> switch("spectrum-4-sn5600-400g").ports_at(50e9), switch("spectrum-4-sn5600-400g").ports_at(12.5e9)
        (128, 256)
        """
        if link_bytes_per_s >= self.port_speed_bytes_per_s:
            return self.ports
        n = int(self.ports * self.port_speed_bytes_per_s // link_bytes_per_s)
        return n if self.max_ports is None else min(n, self.max_ports)

    def check_fields(self) -> None:
        """``max_ports`` caps breakout, so it is at least the ``ports`` the switch has at its own speed."""
        if self.max_ports is not None and self.max_ports < self.ports:
            raise ConfigError(
                f"max_ports: {self.max_ports} is fewer than the switch's {self.ports} ports at "
                f"{self.port_speed_bytes_per_s * 8e-9:g} Gb/s; max_ports counts the ports breakout gives"
            )

    @field_validator("port_speed_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float:
        return _line_rate(v)

    @field_validator("power_w", mode="before")
    @classmethod
    def _pw(cls, v: Any) -> float:
        return parse_power(v)

    @field_validator("latency_s", mode="before")
    @classmethod
    def _lat(cls, v: Any) -> float:
        return parse_latency(v, field="latency")


class OpticSpec(_Entry):
    """An optical transceiver or cable end: ``speed_bytes_per_s`` per direction, ``power_w`` per end.

    ``kind`` is ``pluggable`` (DSP-retimed module), ``lpo`` (linear pluggable), ``cpo`` (co-packaged, per
    switch port) or ``copper``; ``links`` is how many links one module serves (2 for a twin-port OSFP
    2x400G); ``lasers`` counts the lasers (failure points) of one module or port.
    """

    speed_bytes_per_s: float = Field(gt=0, validation_alias="speed")
    power_w: float = Field(ge=0, validation_alias="power")
    kind: str = "pluggable"
    links: Int = Field(default=1, ge=1)
    lasers: Int = Field(default=0, ge=0)

    @field_validator("speed_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float:
        return _line_rate(v)

    @field_validator("power_w", mode="before")
    @classmethod
    def _pw(cls, v: Any) -> float:
        return parse_power(v)


#: Most transport connections the Linux NFS client opens for one mount (``nconnect``): ``#define
#: NFS_MAX_CONNECTIONS 16`` (Linux fs/nfs/fs_context.c:31 in 5.x; the ``Opt_nconnect`` case of
#: ``nfs_fs_context_parse_param`` fails the mount with "Value for 'nconnect' out of range" above it).
LINUX_NFS_MAX_CONNECTIONS = 16


class StorageSystemSpec(_Entry):
    """A storage system (parallel file system, object store): read/write bandwidths per direction, bytes/s.

    ``per_client_*`` caps what one client node moves; ``unit_*`` is one storage node or appliance (the
    aggregate is units x unit); ``unit_link`` what one unit's own link carries (a node-local drive's PCIe
    link), which bounds ``units`` of them in both directions whatever rate is stated; ``aggregate_*`` is a
    named deployment's whole-system figure; ``per_connection_tcp`` / ``per_connection_rdma`` is what one
    transport connection of an NFS mount carries (a mount of ``nconnect`` connections moves at most that many
    times it). A figure its sources do not publish is None and never limits. ``max_nconnect`` is the most
    connections the system's NFS client mounts with: the Linux client's :data:`LINUX_NFS_MAX_CONNECTIONS`
    unless the entry documents its own client's higher limit.
    """

    kind: str
    per_client_read_bytes_per_s: float | None = Field(default=None, validation_alias="per_client_read")
    per_client_write_bytes_per_s: float | None = Field(default=None, validation_alias="per_client_write")
    unit_read_bytes_per_s: float | None = Field(default=None, validation_alias="unit_read")
    unit_write_bytes_per_s: float | None = Field(default=None, validation_alias="unit_write")
    unit_link_bytes_per_s: float | None = Field(default=None, validation_alias="unit_link")
    aggregate_read_bytes_per_s: float | None = Field(default=None, validation_alias="aggregate_read")
    aggregate_write_bytes_per_s: float | None = Field(default=None, validation_alias="aggregate_write")
    per_connection_tcp_bytes_per_s: float | None = Field(default=None, validation_alias="per_connection_tcp")
    per_connection_rdma_bytes_per_s: float | None = Field(
        default=None, validation_alias="per_connection_rdma"
    )
    gds: bool = False
    max_nconnect: Int = Field(default=LINUX_NFS_MAX_CONNECTIONS, ge=1)

    @field_validator(
        "per_connection_tcp_bytes_per_s",
        "per_connection_rdma_bytes_per_s",
        "per_client_read_bytes_per_s",
        "per_client_write_bytes_per_s",
        "unit_read_bytes_per_s",
        "unit_write_bytes_per_s",
        "unit_link_bytes_per_s",
        "aggregate_read_bytes_per_s",
        "aggregate_write_bytes_per_s",
        mode="before",
    )
    @classmethod
    def _bw(cls, v: Any) -> float | None:
        return None if v is None else _rate(v)


class SystemPowerSpec(_Entry):
    """Compute-side power of a system, per accelerator key (watts); see ``data/power.yaml``.

    ``gpu_w`` and ``cpu_per_node_w`` are None where the vendor publishes no power (TPU v5p); ``source`` says
    so, and :attr:`published` is False.
    """

    gpu_w: float | None = Field(ge=0, validation_alias="gpu")
    cpu_per_node_w: float | None = Field(ge=0, validation_alias="cpu_per_node")
    node_max_w: float | None = Field(default=None, ge=0, validation_alias="node_max")
    nvlink_port_w: float = Field(default=0.0, ge=0, validation_alias="nvlink_port")
    nvlink_ports_per_gpu: Int = Field(default=0, ge=0)

    @field_validator("gpu_w", "cpu_per_node_w", "node_max_w", "nvlink_port_w", mode="before")
    @classmethod
    def _pw(cls, v: Any) -> float | None:
        return None if v is None else parse_power(v)

    @property
    def published(self) -> bool:
        """Whether the entry has the accelerator's and the host's power (else only its source's word)."""
        return self.gpu_w is not None and self.cpu_per_node_w is not None


class DciSpec(_Entry):
    """A data-centre interconnect transport: ``efficiency`` of the line rate, fibre delay per km (s)."""

    efficiency: float = Field(gt=0, le=1)
    fibre_delay_s_per_km: float = Field(gt=0, validation_alias="fibre_delay")

    @field_validator("fibre_delay_s_per_km", mode="before")
    @classmethod
    def _lat(cls, v: Any) -> float:
        return parse_time(v)


class CpuSpec(_Entry):
    """A host CPU family as NCCL's topology sees it: ``vendor`` and the bandwidth NCCL gives the link
    between two of its sockets (NUMA nodes), per direction (``topo.h`` ``AMD_BW``, ``SKL_QPI_BW`` ...:
    ``topo.cc`` ``ncclTopoGetInterCpuBw`` gives every pair of CPU nodes a ``LINK_SYS`` of it), and, where a
    microbenchmark measured it, ``socket_p2p``: what one GPU writes into a GPU of the other socket over
    PCIe peer-to-peer, per direction (None: not measured for the family). ``nccl_since``: the first NCCL
    release that gives the family ``inter_socket_nccl``; releases before it gave ``nccl_before`` (None:
    every recorded release gives the one figure). ``cpuid_family`` and ``cpuid_models`` (``[first, end)``,
    None: every model) are the CPUID family and model NCCL's topology dump records (``familyid``,
    ``modelid``) for the family, as ``topo.cc`` ncclTopoAddCpu classes them (:func:`cpu_for_cpuid`)."""

    vendor: Literal["intel", "amd", "arm", "power", "zhaoxin"]
    inter_socket_nccl_bytes_per_s: float = Field(gt=0, validation_alias="inter_socket_nccl")
    socket_p2p_bytes_per_s: float | None = Field(default=None, gt=0, validation_alias="socket_p2p")
    nccl_since: str | None = Field(default=None, pattern=r"^\d+\.\d+\.\d+$")
    nccl_before_bytes_per_s: float | None = Field(default=None, gt=0, validation_alias="nccl_before")
    cpuid_family: int | None = Field(default=None, ge=0)
    cpuid_models: tuple[int, int] | None = None

    @field_validator("inter_socket_nccl_bytes_per_s", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float:
        return _rate(v)

    @field_validator("socket_p2p_bytes_per_s", "nccl_before_bytes_per_s", mode="before")
    @classmethod
    def _optional_bw(cls, v: Any) -> float | None:
        return None if v is None else _rate(v)

    def check_fields(self) -> None:
        """``nccl_since`` and ``nccl_before`` come together; ``cpuid_models`` is a non-empty ``[first, end)``
        of models (0 and up) of a ``cpuid_family``."""
        if (self.nccl_since is None) != (self.nccl_before_bytes_per_s is None):
            raise ConfigError("nccl_since, nccl_before: give both (a release, the figure before it) or none")
        span = self.cpuid_models
        if span is not None and (self.cpuid_family is None or not 0 <= span[0] < span[1]):
            raise ConfigError(
                f"cpuid_models: {list(span)} must be [first, end) with 0 <= first < end, of a cpuid_family"
            )

    @property
    def cross_socket_p2p_bytes_per_s(self) -> float:
        """What GPU peer-to-peer carries between two sockets of the family, per direction: the measured
        ``socket_p2p``, else NCCL's own figure for the link (``inter_socket_nccl``). That figure is
        not the link's wire rate: NCCL's maintainers point to SM-driven GPU traffic, which crosses CPU
        interconnects far below it and falls further under load (NVIDIA/nccl #1163)."""
        measured = self.socket_p2p_bytes_per_s
        return self.inter_socket_nccl_bytes_per_s if measured is None else measured


class ComputeEntry(_Entry):
    """A user catalogue's measured compute efficiencies of one accelerator (family ``compute``), written as
    the entries of the shipped ``training/presets/compute.yaml``: the fields' types here, their ranges where
    :class:`aifabric.training.efficiency.ComputeProfile` checks the shipped ones. GEMM tables by shape stay
    the package's (a CSV beside the shipped file)."""

    name: str = ""
    gemm_efficiency: float
    hbm_efficiency: float = 1.0
    sm_count: Int = 0
    comm_sms: Int = 0
    fp8_gemm_efficiency: float | None = None
    sustained_gemm_efficiency: float | None = None
    attention_efficiency: float | None = None


_FILES: dict[str, tuple[str, type[_Entry]]] = {
    "accelerator": ("accelerators.yaml", AcceleratorSpec),
    "scaleup": ("scaleup.yaml", ScaleUpSpec),
    "nic": ("nics.yaml", NicSpec),
    "switch": ("switches.yaml", SwitchSpec),
    "optic": ("optics.yaml", OpticSpec),
    "storage": ("storage.yaml", StorageSystemSpec),
    "power": ("power.yaml", SystemPowerSpec),
    "dci": ("dci.yaml", DciSpec),
    "cpu": ("cpus.yaml", CpuSpec),
}

#: Families only user files and inline parts fill: their shipped entries live with the layer that reads
#: them (the compute profiles: ``training/presets/compute.yaml``, aifabric.training.efficiency).
_USER_ONLY: dict[str, tuple[str, type[_Entry]]] = {"compute": ("compute.yaml", ComputeEntry)}


# Section names a user catalogue file may use for each family (the shipped file stems first).
_SECTIONS: dict[str, str] = {
    "accelerators": "accelerator",
    "accelerator": "accelerator",
    "scaleup": "scaleup",
    "scale_up": "scaleup",
    "nics": "nic",
    "nic": "nic",
    "switches": "switch",
    "switch": "switch",
    "optics": "optic",
    "optic": "optic",
    "cpus": "cpu",
    "cpu": "cpu",
    "compute": "compute",
}
_explicit: list[Path] = []
_origin: dict[tuple[str, str], str] = {}  # (family, key) -> "file: " of the merged tables now in use
_inline: list[tuple[str, dict[str, Any]]] = []


def _config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "aifabric" / "catalog"


def _yaml_files(path: Path, origin: str) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
    if not path.exists():
        raise ConfigError(f"{origin}: catalogue file {str(path)!r} does not exist")
    if not path.is_file():
        raise ConfigError(f"{origin}: catalogue file {str(path)!r} is not a regular file")
    return [path]


def catalog_sources() -> list[Path]:
    """The user catalogue files in merge order (config folder, ``AIFABRIC_CATALOG``, ``--catalog``)."""
    out: list[Path] = []
    cfg = _config_dir()
    if cfg.is_dir():
        out += _yaml_files(cfg, "config folder")
    for part in filter(None, os.environ.get("AIFABRIC_CATALOG", "").split(os.pathsep)):
        out += _yaml_files(Path(part), "AIFABRIC_CATALOG")
    return out + list(_explicit)


def _read_user_file(path: Path) -> dict[str, Any]:
    """A user catalogue file, read with the limits of :mod:`aifabric.inputs` (size, aliases, depth, keys)."""
    try:
        data = load_yaml(path)
    except ParseError as err:  # names the file and the line
        raise ConfigError(f"catalogue {err}") from err
    if not isinstance(data, dict):
        raise ConfigError(f"catalogue {str(path)!r}: expected a mapping of families to parts")
    return data


def _family(kind: str) -> tuple[str, type[_Entry]]:
    """The file name and model of family ``kind`` (shipped or user-only)."""
    return _FILES.get(kind) or _USER_ONLY[kind]


def _validate(kind: str, key: str, entry: Any, where: str) -> _Entry:
    """One part: validated, or ConfigError ``where: family.key: missing field 'x'`` (one line)."""
    filename, model = _family(kind)
    label = f"{where}{filename.removesuffix('.yaml')}.{key}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{label}: expected a mapping of fields, got {type(entry).__name__}")
    try:
        part = model.model_validate({"key": key, **entry})
        part.check_fields()
        return part
    except ValidationError as err:
        e = err.errors()[0]
        field = ".".join(str(x) for x in e["loc"]) or "entry"
        if e["type"] == "missing":
            raise ConfigError(f"{label}: missing field {field!r}") from None
        if e["type"] == "extra_forbidden":
            raise ConfigError(f"{label}: unknown field {field!r}") from None
        cause = e.get("ctx", {}).get("error")
        if isinstance(cause, ConfigError):  # a unit parser's line names its value: only the field is ours
            raise ConfigError(f"{label}: {field}: {str(cause).partition(': ')[2]}") from None
        msg = e["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{label}: {field}: {msg}{got_suffix(msg, e.get('input'))}") from None
    except ConfigError as err:  # a unit parser's own message
        raise ConfigError(f"{label}: {err}") from None


def _sections(data: Mapping[str, Any], where: str) -> Iterable[tuple[str, str, Any]]:
    for section, entries in data.items():
        kind = _SECTIONS.get(str(section).strip().lower())
        if kind is None:
            known = ", ".join(k for k, v in _SECTIONS.items() if k != v)  # the families a user may add
            raise ConfigError(f"{where}unknown family {section!r}; known: {known}")
        if not isinstance(entries, dict):
            raise ConfigError(f"{where}{section}: expected a mapping of part keys to fields")
        for key, entry in entries.items():
            yield kind, str(key).strip().lower(), entry


@cache
def _tables() -> dict[str, dict[str, _Entry]]:
    """Every family: shipped entries, then user files, then inline cluster parts."""
    tables: dict[str, dict[str, _Entry]] = {}
    origin: dict[tuple[str, str], str] = {}  # (family, key) -> "file: " the part was last read from
    for kind, (filename, _model) in _FILES.items():
        raw = load_package_yaml("aifabric.catalog", f"data/{filename}")
        tables[kind] = {key: _validate(kind, key, entry, f"{filename}: ") for key, entry in raw.items()}
        origin.update({(kind, key): f"{filename}: " for key in raw})
    tables.update({kind: {} for kind in _USER_ONLY})
    user = [(f"{path}: ", _read_user_file(path)) for path in catalog_sources()]
    for where, parts in user + list(_inline):
        for kind, key, entry in _sections(parts, where):
            tables[kind][key] = _validate(kind, key, entry, where)
            origin[kind, key] = where
    _check_references(tables, origin)
    _origin.clear()
    _origin.update(origin)
    return tables


def _check_references(tables: dict[str, dict[str, _Entry]], origin: Mapping[tuple[str, str], str]) -> None:
    """An accelerator's ``nvlink`` / ``scale_up_link`` / ``nvlink_bridge`` must name a scale-up link of the
    catalogue, and its ``nvlink_links`` fit that link (:func:`_check_nvlink_links`); the error names the file
    the accelerator came from (``origin``: ``"file: "`` by family and key)."""
    links = tables["scaleup"]
    for acc in tables["accelerator"].values():
        assert isinstance(acc, AcceleratorSpec)
        label = f"{origin.get(('accelerator', acc.key), '')}accelerators.{acc.key}"
        for field in ("nvlink", "scale_up_link", "nvlink_bridge"):
            ref = getattr(acc, field)
            if ref is not None and ref not in links:
                raise ConfigError(
                    f"{label}: {field} {ref!r} is not a scale-up link; known: {', '.join(sorted(links))}"
                )
        _check_pcie(acc, links, label)
        nvlink = None if acc.nvlink is None else links[acc.nvlink]
        assert nvlink is None or isinstance(nvlink, ScaleUpSpec)
        _check_nvlink_links(acc, nvlink, label)


def _check_pcie(acc: AcceleratorSpec, links: Mapping[str, _Entry], label: str) -> None:
    """An accelerator's ``pcie`` generation must have its scale-up link, ``pcie-<gen>``, in the catalogue
    (scaleup.yaml); ConfigError ``file: accelerators.key: pcie 'gen9' ...`` naming the known ones."""
    if acc.pcie is None or f"pcie-{acc.pcie}" in links:
        return
    known = ", ".join(sorted(k.removeprefix("pcie-") for k in links if k.startswith("pcie-")))
    raise ConfigError(f"{label}: pcie {acc.pcie!r} is not a PCIe generation of the catalogue; known: {known}")


def _check_nvlink_links(acc: AcceleratorSpec, nvlink: ScaleUpSpec | None, label: str) -> None:
    """``nvlink_links`` (NVLinks per GPU): 1 to the ``links_per_gpu`` of the part's NVLink generation
    (NVIDIA datasheets and NVLink page: NVLink 2 (V100) 6 links, NVLink 3 (A100) 12, NVLink 4 (H100) and
    NVLink 5 (B200/GB200) 18; a part may have fewer, as the H800's 8), and 0 on a part without NVLink.

    Raises ConfigError ``file: accelerators.key: nvlink_links: VALUE ...``.
    """
    n = acc.nvlink_links
    if nvlink is None and n != 0:
        raise ConfigError(f"{label}: nvlink_links: {n} on a part without nvlink (give nvlink, or 0)")
    if nvlink is not None and not 1 <= n <= nvlink.links_per_gpu:
        raise ConfigError(
            f"{label}: nvlink_links: {n} is outside 1..{nvlink.links_per_gpu}, the links per GPU of "
            f"{nvlink.key} (scaleup.{nvlink.key}.links_per_gpu)"
        )


_generation = 0


def _invalidate() -> None:
    """Forget the merged tables and count a new catalogue generation."""
    global _generation
    _tables.cache_clear()
    _generation += 1


def catalog_generation() -> int:
    """A number that changes whenever the catalogue may have (a ``--catalog`` file, inline parts, a
    reload): caches of figures derived from catalogue parts key on it so that they never go stale."""
    return _generation


def _load(kind: str) -> dict[str, Any]:
    return _tables()[kind]


def use_catalog_files(paths: Iterable[str | Path]) -> None:
    """Merge the catalogue files (or folders of them) ``paths`` over the catalogue, last wins.

    Raises ConfigError for a file that does not exist or a part that is invalid (validated now).
    """
    added = [f for p in paths for f in _yaml_files(Path(p), "--catalog")]
    before = list(_explicit)
    _explicit.extend(f for f in added if f not in _explicit)
    _invalidate()
    try:
        _tables()
    except ConfigError:
        _explicit[:] = before  # a bad file does not stay in the catalogue
        _invalidate()
        raise


def add_parts(parts: Mapping[str, Any], source: str = "cluster") -> None:
    """Add the parts a cluster YAML defines inline (``parts:`` section, user-file shape).

    Inline parts may add new keys or repeat an existing part exactly; redefining a catalogue part
    differently is refused (it would change every other cluster of the process: use a catalogue file).

    Raises
    ------
    ConfigError
        ``source: parts.family.key: ...`` for a missing or bad field, or a conflicting redefinition.
    """
    if not isinstance(parts, Mapping):
        raise ConfigError(f"{source}: parts: expected a mapping of families to parts")
    where = f"{source}: parts."
    tables = _tables()
    new = False
    for kind, key, entry in _sections(parts, where):
        part = _validate(kind, key, entry, where)
        old = tables[kind].get(key)
        if old is None:
            new = True
        elif old != part:
            raise ConfigError(
                f"{where}{_family(kind)[0].removesuffix('.yaml')}.{key}: already in the catalogue with other "
                "figures; give the part a new key or put it in a --catalog file"
            )
    if new:
        _inline.append((where, dict(parts)))
        _invalidate()
        try:
            _tables()  # cross-references (an accelerator's scale-up link) checked now
        except ConfigError:
            _inline.pop()
            _invalidate()
            raise


def reload_catalog() -> None:
    """Forget ``--catalog`` files and inline parts and re-read the user sources (config folder, env)."""
    _explicit.clear()
    _inline.clear()
    _invalidate()


def _get(kind: str, key: str) -> Any:
    table = _tables()[kind]
    found = table.get(key)  # hot path: keys as written in the catalogue
    if found is not None:
        return found
    norm = key.strip().lower()
    if norm not in table:
        raise ConfigError(f"{kind}: unknown {kind} {key!r}; known: {', '.join(sorted(table))}")
    return table[norm]


def catalog_names(kind: str) -> list[str]:
    """Keys of one catalogue family: ``accelerator``, ``scaleup``, ``nic``, ``switch`` or ``optic``."""
    if kind not in _FILES:
        raise ConfigError(f"catalog kind: unknown {kind!r}; known: {', '.join(_FILES)}")
    return sorted(_load(kind))


def accelerator(key: str) -> AcceleratorSpec:
    """The accelerator ``key`` (e.g. ``"h100-sxm"``). Raises ConfigError naming the known keys."""
    return _get("accelerator", key)


def scaleup(key: str) -> ScaleUpSpec:
    """The scale-up link family ``key`` (e.g. ``"nvlink4"``, ``"pcie-gen3"``)."""
    return _get("scaleup", key)


def cpu(key: str) -> CpuSpec:
    """The host CPU family ``key`` (e.g. ``"amd-epyc"``, ``"intel-sapphire-rapids"``)."""
    return _get("cpu", key)


def cpu_for_cpuid(vendor: str, family: int, model: int | None) -> str | None:
    """The catalogue CPU family of a CPUID ``family``/``model`` of ``vendor`` (``intel``, ``amd``, ...), as
    NCCL's topology dump records them (:func:`cpuid_display_family`) or as CPUID's display family (a
    hand-written topology file, ``lscpu``); None where no entry names that family and model (the vendor's
    default then applies: :attr:`~aifabric.cluster.spec.ClusterSpec.socket_cpu`).

    >>> cpu_for_cpuid("intel", 6, 143), cpu_for_cpuid("amd", 26, 17), cpu_for_cpuid("amd", 25, 1)
    ('intel-sapphire-rapids', 'amd-epyc-turin', None)
    >>> cpu_for_cpuid("amd", 191, 2)  # NCCL's own dump of a Zen 5 host: 0xF + (0xB << 4)
    'amd-epyc-turin'
    """
    family = cpuid_display_family(family)
    for key in catalog_names("cpu"):
        spec = cpu(key)
        if spec.vendor != vendor or spec.cpuid_family != family:
            continue
        span = spec.cpuid_models
        if span is None or (model is not None and span[0] <= model < span[1]):
            return key
    return None


def cpuid_display_family(familyid: int) -> int:
    """CPUID's display family of a topology dump's ``familyid``.

    NCCL writes ``familyId + (extFamilyId << 4)`` (``xml.cc`` ncclTopoGetXmlFromCpu, v2.26.2-1 to
    v2.30.7-1), not CPUID's display family ``familyId + extFamilyId`` (which counts the extended family only
    when the base is 0Fh): an AMD Zen 5 host (base 0Fh, extended 0Bh, family 1Ah = 26) dumps 191, a Hygon
    (extended 09h, family 18h) 159, as RCCL's dump of a DCU host (tests/discovery/fixtures). A value above
    0Fh whose low nibble is 0Fh is read as NCCL's sum; any other is taken as written (Intel's 6, a
    hand-written file's 25). Family 1Fh, were it to come, would read as 10h.

    >>> [cpuid_display_family(f) for f in (191, 159, 25, 6)]
    [26, 24, 25, 6]
    """
    if familyid > 0xF and familyid & 0xF == 0xF:
        return 0xF + (familyid >> 4)
    return familyid


def nic(key: str) -> NicSpec:
    """The NIC ``key`` (e.g. ``"connectx-7"``)."""
    return _get("nic", key)


def switch(key: str) -> SwitchSpec:
    """The switch ``key`` (e.g. ``"quantum-2-qm9700"``)."""
    return _get("switch", key)


def default_leaf_switch(fabric: str, nic_bytes_per_s: float) -> str:
    """The leaf switch a scale-out of ``fabric`` whose NICs run at ``nic_bytes_per_s`` (one NIC, per
    direction) gets when its spec names none (catalogue key).

    The slowest ``default_leaf`` switch of the fabric whose ports carry the NIC's full rate, else the fastest
    of them: a link trains to the rate both ends support (IBTA link training, IEEE 802.3 clause 73), so a
    leaf slower than the NIC would cut it to the leaf's rate. ConnectX-7 NDR gets the Quantum-2 QM9700 (64 x
    400 Gb/s), ConnectX-8 XDR the Quantum-X800 Q3400 (144 x 800 Gb/s), the pairs of NVIDIA's DGX SuperPOD
    reference designs; a faster NIC (ConnectX-9, 1.6 Tb/s) the fastest leaf, on which it runs at the
    port's rate unless the spec splits it over ``planes``.

    Raises ConfigError if the catalogue marks no leaf of that fabric.

    >>> default_leaf_switch("infiniband", 400e9 / 8), default_leaf_switch("infiniband", 800e9 / 8)
    ('quantum-2-qm9700', 'quantum-x800-q3400')
    >>> default_leaf_switch("ethernet", 800e9 / 8), default_leaf_switch("infiniband", 1600e9 / 8)
    ('spectrum-4-sn5600-800g', 'quantum-x800-q3400')
    """
    leaves = sorted(
        (s.port_speed_bytes_per_s, key)
        for key, s in _load("switch").items()
        if s.default_leaf and s.fabric == fabric
    )
    if not leaves:
        raise ConfigError(f"scale_out.fabric {fabric!r}: no default_leaf switch in the catalogue; name one")
    fast_enough = [key for speed, key in leaves if speed >= nic_bytes_per_s * (1 - 1e-4)]
    return fast_enough[0] if fast_enough else leaves[-1][1]


def optic(key: str) -> OpticSpec:
    """The optic ``key`` (e.g. ``"osfp-800g-2xsr4"``)."""
    return _get("optic", key)


def dci(key: str) -> DciSpec:
    """The data-centre interconnect transport ``key`` (e.g. ``"spectrum-xgs"``)."""
    return _get("dci", key)


@cache
def shipped_nic(key: str) -> NicSpec | None:
    """The NIC ``key`` as the package ships it (``data/nics.yaml``, no user file or inline part over it),
    or None for a part only a user defines: the figure a system's own power budget was read against."""
    raw = load_package_yaml("aifabric.catalog", "data/nics.yaml").get(key.strip().lower())
    if raw is None:
        return None
    part = _validate("nic", key.strip().lower(), raw, "nics.yaml: ")
    assert isinstance(part, NicSpec)
    return part


def user_compute() -> dict[str, tuple[str, ComputeEntry]]:
    """The ``compute`` entries of the user catalogue (files, ``AIFABRIC_CATALOG``, ``--catalog``, inline
    parts) by accelerator key, each with the ``"file: compute.key"`` label of where it was read."""
    table = _tables()["compute"]
    out = {}
    for key, entry in table.items():
        assert isinstance(entry, ComputeEntry)
        out[key] = (f"{_origin.get(('compute', key), '')}compute.{key}", entry)
    return out


def system_power(key: str) -> SystemPowerSpec | None:
    """Compute-side power of accelerator ``key``'s system, or None when the catalogue has none."""
    return _load("power").get(key.strip().lower())


def storage(key: str) -> StorageSystemSpec:
    """The storage system ``key`` (e.g. ``"ddn-ai400x2-turbo"``)."""
    return _get("storage", key)


def module_at(speed_bytes_per_s: float, link_bytes_per_s: float) -> OpticSpec | None:
    """The pluggable module of ``speed_bytes_per_s`` whose ports are no slower than the link, the most ports
    first (a 2 x 400G module for 400G links, a single-port 800G one for 800G links), or None."""
    found = [
        o
        for o in _load("optic").values()
        if o.kind == "pluggable"
        and abs(o.speed_bytes_per_s - speed_bytes_per_s) < 1
        and o.speed_bytes_per_s / o.links >= link_bytes_per_s * (1 - 1e-9)
    ]
    return max(found, key=lambda o: o.links, default=None)


def optic_for_speed(port_bytes_per_s: float) -> OpticSpec:
    """The pluggable transceiver of the smallest catalogued speed >= ``port_bytes_per_s`` (per direction).

    Raises ConfigError if none is fast enough.
    """
    cands = [
        o
        for o in _load("optic").values()
        if o.kind == "pluggable" and o.power_w > 0 and o.speed_bytes_per_s >= port_bytes_per_s
    ]
    if not cands:
        raise ConfigError(
            f"port speed: no transceiver in the catalogue reaches {port_bytes_per_s * 8 / 1e9:g} Gb/s"
        )
    return min(cands, key=lambda o: (o.speed_bytes_per_s, o.links))  # a single-link module before a twin
