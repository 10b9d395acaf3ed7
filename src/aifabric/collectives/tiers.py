"""What the cost functions know about a cluster: per-GPU bandwidths per tier and NCCL's tuner constants.

:class:`TierModel` holds, per GPU and per direction (bytes/s), the scale-up bandwidth ``B_i`` and the
scale-out bandwidth ``B_o`` of a cluster, with the facts NCCL's tuner reads (architecture, CPU vendor,
NVLS). The NCCL constants (latencies per tier, algorithm and protocol; protocol efficiencies; LL bandwidth
caps) come from ``catalog/data/nccl.yaml`` (NVIDIA/nccl 2.30.7 ``src/graph/tuning.cc``, restated in
``reference/nccl-cost-model.md`` sec. 2). Bandwidths per GPU, per direction:

- scale-up ``B_i``: NCCL's per-link NVLink constant x links (18 x 20.6 = 370.8 GB/s on H100), or the PCIe
  figure (12 GB/s Gen3, / 1.2 when peer traffic crosses an Intel CPU);
- scale-out ``B_o``: NIC line rate x payload efficiency (400 Gb/s x 0.983 = 49.15 GB/s for ConnectX-7).

With ``efficiency="line_rate"`` latencies and protocol overheads are dropped and line rates used: the
idealised figures of textbooks and of the seed lesson. With ``convention="bidirectional"`` a vendor's
scale-up figure that adds both directions (NVLink "900 GB/s") is used as if it were per direction, as the
lesson does; the default ``per_direction`` halves it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from aifabric.catalog.nccl import Protocol
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError

__all__ = [
    "Protocol",
    "TierModel",
    "base_latency_s",
    "hw_latency_s",
    "nccl_constants",
    "net_overhead_s",
    "parse_protocol",
    "protocol_bandwidth",
    "tier_model",
]


def parse_protocol(value: str | Protocol) -> Protocol:
    """``ll``, ``LL128``, ``simple``... as NCCL's :class:`~aifabric.catalog.nccl.Protocol`.

    Raises ValueError naming the value and the known names.
    """
    if isinstance(value, Protocol):
        return value
    for member in Protocol:
        if member.value.lower() == str(value).strip().lower():
            return member
    raise ValueError(f"protocol: unknown {value!r}; known: {', '.join(p.value for p in Protocol)}")


_COLUMN = {Protocol.LL: 0, Protocol.LL128: 1, Protocol.SIMPLE: 2}


@cache
def nccl_constants() -> dict[str, Any]:
    """NCCL's tuner constants (``catalog/data/nccl.yaml``; microseconds and GB/s, as NCCL writes them)."""
    text = resources.files("aifabric.catalog").joinpath("data", "nccl.yaml").read_text()
    return yaml.safe_load(text)


@dataclass(frozen=True)
class TierModel:
    """Per-GPU, per-direction bandwidths (bytes/s) and the facts the tuner needs about a cluster.

    Build with :func:`tier_model`. ``calibration`` multipliers/latencies (see :mod:`aifabric.discovery`)
    are already applied.
    """

    intra_bytes_per_s: float
    nic_bytes_per_s: float
    intra_kind: str  # "nvlink", "pci" or "torus"
    arch: str
    cpu_vendor: str
    nvls: bool
    nvls_efficiency: float
    leaf_oversubscription: float
    spine_oversubscription: float
    efficiency: str  # "nccl" or "line_rate"
    convention: str  # "per_direction" or "bidirectional"
    latency_scale: float = 1.0
    extra_inter_latency_s: float = 0.0
    torus_dims: tuple[int, ...] = ()
    hop_latency_s: float = 0.0

    @property
    def nccl(self) -> bool:
        """True when NCCL's efficiencies and latencies apply (``efficiency="nccl"``)."""
        return self.efficiency == "nccl"


def tier_model(
    spec: ClusterSpec,
    *,
    convention: str = "per_direction",
    efficiency: str = "nccl",
    calibration: Any | None = None,
) -> TierModel:
    """The :class:`TierModel` of ``spec`` under a bandwidth convention and efficiency.

    Parameters
    ----------
    convention : {"per_direction", "bidirectional"}
        How to read the vendor's scale-up figure: halve it (physically right), or use it as is (the
        seed lesson's arithmetic).
    efficiency : {"nccl", "line_rate"}
        ``nccl``: NCCL's effective per-link constants, payload efficiency, latencies and protocols;
        ``line_rate``: raw line rates, no latency.
    calibration : object, optional
        Anything with ``intra_scale``, ``inter_scale``, ``latency_scale`` and ``extra_inter_latency_s``
        attributes (a fitted profile), applied on top.

    Raises
    ------
    ConfigError
        If ``convention`` or ``efficiency`` is not one of the names above.
    """
    if convention not in ("per_direction", "bidirectional"):
        raise ConfigError(f"convention: unknown {convention!r}; use per_direction or bidirectional")
    if efficiency not in ("nccl", "line_rate"):
        raise ConfigError(f"efficiency: unknown {efficiency!r}; use nccl or line_rate")
    link = spec.scaleup_link
    if efficiency == "nccl":
        intra = spec.scaleup_effective_bytes_per_s
        nic = spec.nic_effective_bytes_per_s
    else:
        intra = spec.scaleup_line_rate_bytes_per_s
        nic = spec.nic_line_rate_bytes_per_s
    if convention == "bidirectional":
        intra *= 2
    so = spec.scale_out
    os_ = list(so.oversubscription) + [1.0, 1.0] if so else [1.0, 1.0]
    acc = spec.accelerator_spec
    intra_scale = inter_scale = lat_scale = 1.0
    extra = 0.0
    if calibration is not None:
        intra_scale = float(getattr(calibration, "intra_scale", 1.0))
        inter_scale = float(getattr(calibration, "inter_scale", 1.0))
        lat_scale = float(getattr(calibration, "latency_scale", 1.0))
        extra = float(getattr(calibration, "extra_inter_latency_s", 0.0))
    return TierModel(
        intra_bytes_per_s=intra * intra_scale,
        nic_bytes_per_s=nic * inter_scale,
        intra_kind={"pcie": "pci", "torus": "torus"}.get(spec.scale_up.kind, "nvlink"),
        arch=acc.arch,
        cpu_vendor=spec.cpu_vendor,
        nvls=bool(acc.nvls and link.in_switch_reduction and spec.scale_up.kind == "nvswitch"),
        nvls_efficiency=link.nvls_efficiency,
        leaf_oversubscription=os_[0] if so and so.tiers >= 2 else 1.0,
        spine_oversubscription=os_[1] if so and so.tiers >= 3 else 1.0,
        efficiency=efficiency,
        convention=convention,
        latency_scale=lat_scale,
        extra_inter_latency_s=extra,
        torus_dims=_torus_dims(spec) if spec.scale_up.kind == "torus" else (),
        hop_latency_s=link.hop_latency_s,
    )


def _torus_dims(spec: ClusterSpec) -> tuple[int, ...]:
    """The torus shape: given, or the most cubic factorisation of the domain size."""
    if spec.scale_up.torus_dims:
        return tuple(spec.scale_up.torus_dims)
    n = spec.domain_gpus
    best = (n, 1, 1)
    for a in range(1, int(round(n ** (1 / 3))) + 2):
        if n % a:
            continue
        for b in range(a, int(math.isqrt(n // a)) + 1):
            if (n // a) % b == 0:
                c = n // a // b
                if max(a, b, c) < max(best):
                    best = (a, b, c)
    return tuple(sorted(best))


def hw_latency_s(tm: TierModel, kind: str, row: str, proto: Protocol) -> float:
    """NCCL ``hwLat[kind][row][proto]`` in seconds (kind: nvlink, pci, net); NaN: protocol not allowed.

    ``row`` is the NCCL latency row an algorithm uses (``ring``, ``tree``, ``nvls``, ``nvls_tree``, ``pat``).
    A torus (TPU ICI) is no NCCL tier: one step costs one ICI hop, ``tm.hop_latency_s``, whatever the row.
    """
    if kind == "torus":
        return tm.hop_latency_s * tm.latency_scale
    value = nccl_constants()["hw_latency_us"][kind][row][_COLUMN[proto]]
    return math.nan if value is None else value * 1e-6 * tm.latency_scale


def base_latency_s(tm: TierModel, row: str, proto: Protocol) -> float:
    """NCCL ``baseLat[row][proto]`` in seconds."""
    return nccl_constants()["base_latency_us"][row][_COLUMN[proto]] * 1e-6 * tm.latency_scale


def net_overhead_s(tm: TierModel, proto: Protocol) -> float:
    """NCCL's per-step network overhead of a ring across nodes (x3 with Simple), seconds (tuning.cc)."""
    c = nccl_constants()
    ovh = c["net_overhead_us"][tm.cpu_vendor] * 1e-6 * tm.latency_scale
    return ovh * c["simple_net_overhead_factor"] if proto is Protocol.SIMPLE else ovh


def _ll_max(tm: TierModel, n_domains: int) -> float:
    c = nccl_constants()
    if n_domains <= 1:
        return c["ll_max_bw_single_node"].get(tm.arch, 141.0) * 1e9
    row = c["ll_max_bw_multi_node"][tm.cpu_vendor]
    return row[1 if n_domains == 2 else 2] * 1e9


def protocol_bandwidth(
    tm: TierModel, proto: Protocol, busbw_bytes_per_s: float, n_domains: int, *, tree: bool
) -> float:
    """Bus bandwidth after the protocol's overhead (NCCL ``tuning.cc`` refinements), bytes/s.

    LL: half the bandwidth (tree: / 3.8), capped by NCCL's LL maximum; LL128: x 0.92 (tree: 7/9 on one
    node, 0.9375 across nodes); Simple: as is (tree: x 0.92).
    """
    c = nccl_constants()
    if proto is Protocol.LL:
        share = busbw_bytes_per_s / c["tree_ll_divisor"] if tree else 0.5 * busbw_bytes_per_s
        return min(_ll_max(tm, n_domains), share)
    if proto is Protocol.LL128:
        if tree:
            return busbw_bytes_per_s * (7 / 9 if n_domains <= 1 else c["tree_ll128_efficiency_multi_node"])
        return busbw_bytes_per_s * c["ll128_efficiency"]
    return busbw_bytes_per_s * c["tree_simple_efficiency"] if tree else busbw_bytes_per_s
