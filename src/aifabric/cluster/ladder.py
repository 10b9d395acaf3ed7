"""The bandwidth ladder: per level, bandwidth per chip and the time to move 1 GB.

The second seed ("AI Cluster Networking Explained") shows the ladder for TPU v5p: HBM 2,765 GB/s, ICI
1,200 GB/s (bidirectional), DCN 50 Gb/s = 6.25 GB/s, i.e. 0.4 ms, 0.8 ms and 160 ms per GB. Each rung of a
GPU cluster is likewise about ten times slower than the one above (first seed).
"""

from __future__ import annotations

from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.spec import AccessFabricSpec, ClusterSpec
from aifabric.units import format_bandwidth

__all__ = ["LadderRung", "bandwidth_ladder"]


@dataclass(frozen=True)
class LadderRung:
    """One level of the ladder.

    ``documented_bytes_per_s`` is the figure as the vendor states it, with ``convention``;
    ``per_direction_bytes_per_s`` is what one direction carries; ``time_per_gb_s`` moves 1e9 bytes at the
    documented figure (as the seed computes it); ``time_per_gb_per_direction_s`` at the per-direction one.
    """

    level: str
    network: str
    documented_bytes_per_s: float
    convention: str
    per_direction_bytes_per_s: float
    time_per_gb_s: float
    time_per_gb_per_direction_s: float
    note: str = ""


def _rung(level: str, network: str, documented: float, convention: str, note: str = "") -> LadderRung:
    per_dir = documented / 2 if convention == "bidirectional" else documented
    return LadderRung(level, network, documented, convention, per_dir, 1e9 / documented, 1e9 / per_dir, note)


def bandwidth_ladder(spec: ClusterSpec) -> list[LadderRung]:
    """Rungs from memory down to management for one chip of ``spec``.

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> [round(r.time_per_gb_s * 1e3, 1) for r in bandwidth_ladder(preset("tpu-v5p-pod"))]
    [0.4, 0.8, 160.0]
    """
    acc = spec.accelerator_spec
    rungs = [_rung("HBM", "memory", acc.hbm_bandwidth_bytes_per_s, "per_direction", "memory read bandwidth")]
    for network_rung in (
        _scale_up_rung,
        _scale_out_rung,
        _front_end_rung,
        _storage_rung,
        _inband_rung,
        _management_rung,
    ):
        rung = network_rung(spec)
        if rung is not None:
            rungs.append(rung)
    return rungs


def _scale_up_rung(spec: ClusterSpec) -> LadderRung | None:
    """A TPU's ICI, else the scale-up link of a domain of more than one GPU."""
    acc = spec.accelerator_spec
    if acc.ici_bandwidth_bidirectional_bytes_per_s:
        return _rung(
            "ICI",
            "scale-up",
            acc.ici_bandwidth_bidirectional_bytes_per_s,
            "bidirectional",
            f"{acc.ici_topology or 'torus'}; time at the bidirectional figure is a lower bound",
        )
    if spec.domain_gpus > 1:
        link = spec.scaleup_link
        return _rung(
            link.name.split(" (")[0],
            "scale-up",
            spec.scaleup_line_rate_bytes_per_s * 2,
            "bidirectional",
            f"domain of {spec.domain_gpus}; NCCL reaches "
            f"{format_bandwidth(spec.scaleup_effective_bytes_per_s)} per direction",
        )
    return None


def _scale_out_rung(spec: ClusterSpec) -> LadderRung | None:
    """A TPU's DCN, else the NIC line rate per GPU (a share of one NIC where GPUs share it)."""
    acc = spec.accelerator_spec
    if acc.dcn_bandwidth_bytes_per_s:
        return _rung(
            "DCN", "scale-out", acc.dcn_bandwidth_bytes_per_s, "per_direction", "data-centre network"
        )
    if spec.scale_out is None:
        return None
    return _rung(
        f"NIC ({spec.nic_spec.name if spec.nic_spec else ''})",
        "scale-out",
        spec.nic_line_rate_bytes_per_s,
        "per_direction",
        f"payload {format_bandwidth(spec.nic_effective_bytes_per_s)}"
        + ("; the GPU's PCIe x16 link bounds it" if spec.nic_host_link_note else "")
        + (
            f"; a 1/{spec.scale_out.gpus_per_nic} share of one "
            f"{spec.nic_speed_bytes_per_s * 8 / 1e9:g} Gb/s NIC"
            if spec.scale_out.gpus_per_nic > 1
            else ""
        ),
    )


def _front_end_rung(spec: ClusterSpec) -> LadderRung | None:
    """The front-end NICs of a node, shared by its GPUs."""
    fe = spec.front_end
    if fe is None:
        return None
    speed = fe.nic_speed_bytes_per_s or catalog.nic(fe.nic).line_rate_bytes_per_s
    return _node_ports_rung("front-end", fe.ports_per_node, speed, spec.gpus_per_node)


def _node_ports_rung(network: str, ports_per_node: int, speed: float, gpus_per_node: int) -> LadderRung:
    """A node's ``ports_per_node`` ports of ``speed`` bytes/s per direction on ``network``, shared by its
    ``gpus_per_node`` GPUs: ``ports x speed / GPUs`` per GPU."""
    return _rung(
        network,
        network,
        speed * ports_per_node / gpus_per_node,
        "per_direction",
        f"{ports_per_node} x {speed * 8 / 1e9:g} Gb/s per node shared by {gpus_per_node} GPUs",
    )


def _access_rung(network: str, fabric: AccessFabricSpec | None, gpus_per_node: int) -> LadderRung | None:
    """The node's ports on a storage or in-band network, shared by its GPUs."""
    if fabric is None:
        return None
    return _node_ports_rung(network, fabric.ports_per_node, fabric.speed_bytes_per_s, gpus_per_node)


def _storage_rung(spec: ClusterSpec) -> LadderRung | None:
    """The storage fabric's ports of a node (checkpoints and data loading cross it, not the front-end)."""
    return _access_rung("storage", spec.storage_fabric, spec.gpus_per_node)


def _inband_rung(spec: ClusterSpec) -> LadderRung | None:
    """The in-band management ports of a node."""
    return _access_rung("in-band", spec.inband_management, spec.gpus_per_node)


def _management_rung(spec: ClusterSpec) -> LadderRung | None:
    """The BMC ports of a node, shared by its GPUs."""
    mg = spec.management
    if mg is None or not mg.ports_per_node:
        return None
    speed = catalog.nic(mg.nic).line_rate_bytes_per_s
    return _rung(
        "management",
        "management",
        speed * mg.ports_per_node / spec.gpus_per_node,
        "per_direction",
        "BMC port per node, shared by its GPUs",
    )
