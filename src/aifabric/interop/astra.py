"""ASTRA-sim's analytical network YAML: the cluster as dimensions of NPUs.

Fields (astra-sim/astra-network-analytical@599a047 ``common/network-parser/NetworkParser.cpp``; examples in
astra-sim/astra-sim@518bd51 ``examples/network/analytical/*.yml``): ``topology`` (one of ``Ring``,
``FullyConnected``, ``Switch`` per dimension), ``npus_count`` (NPUs per dimension), ``bandwidth`` (GB/s per
link per direction) and ``latency`` (ns), lists of the same length. A ``Switch`` dimension costs two hops, so
the latency given is one link's.

A rail-optimised cluster is two ``Switch`` dimensions: the scale-up domain (``domain_gpus`` NPUs at the
GPU's scale-up bandwidth) and the rails (``n_gpus / domain_gpus`` NPUs, one per domain, at the GPU's
scale-out bandwidth over all planes: its share of a NIC that ``gpus_per_nic`` GPUs share, since ASTRA-sim
runs that dimension on every GPU's NPU at once). The analytical backend draws one switch per group of each
dimension, so the leaf/spine tiers are not in this file: the ns-3 topology (:mod:`aifabric.interop.ns3`)
carries them.
A cluster split over sites (``sites:``) has a third ``Switch`` dimension of one NPU per site, its latency
the fibre's between them, its bandwidth the DCI's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from aifabric import catalog
from aifabric.cluster.spec import SitesSpec
from aifabric.cluster.topology import Topology
from aifabric.engines.scale_across import fibre_delay_s
from aifabric.errors import ConfigError, ParseError
from aifabric.interop.graph import GraphCounts

__all__ = ["AnalyticalNetwork", "analytical_network", "read_analytical", "write_analytical"]

_KINDS = ("Ring", "FullyConnected", "Switch")


@dataclass(frozen=True)
class AnalyticalNetwork:
    """One ASTRA-sim analytical network: per dimension its kind, NPUs, GB/s per direction, latency in ns."""

    topology: tuple[str, ...]
    npus_count: tuple[int, ...]
    bandwidth_gbps: tuple[float, ...]
    latency_ns: tuple[float, ...]

    @property
    def n_npus(self) -> int:
        """NPUs in all (product over dimensions)."""
        return int(np.prod(self.npus_count))

    def counts(self) -> GraphCounts:
        """NPUs, and the switches and NPU-switch links the analytical backend builds for ``Switch`` dims."""
        n = self.n_npus
        switch_dims = [k for k, kind in enumerate(self.topology) if kind == "Switch"]
        return GraphCounts(n, sum(n // self.npus_count[k] for k in switch_dims), n * len(switch_dims))


def analytical_network(topo: Topology) -> AnalyticalNetwork:
    """The two ``Switch`` dimensions of a switched cluster (one when it has no scale-out); a full-mesh
    scale-up (MI300X xGMI) is a ``FullyConnected`` first dimension at one pair's link bandwidth. A cluster
    over several sites gets a third ``Switch`` dimension, the sites (:func:`_site_link_latency_s`).

    Raises
    ------
    ConfigError
        For a torus (its ICI is Ring dimensions, not exported here).
    """
    spec = topo.spec
    if spec.scale_up.kind == "torus" or not topo.has_scale_up_links:
        raise ConfigError(f"--format astra-sim: {spec.name} has no scale-up switch (a torus is not exported)")
    # a full mesh is ASTRA-sim's FullyConnected dimension, its bandwidth that of one pair's link
    up = int(topo.mesh_pair_link[0, 1]) if topo.is_mesh else int(topo.gpu_up[0])
    kinds, npus = ["FullyConnected" if topo.is_mesh else "Switch"], [spec.domain_gpus]
    bw, lat = [float(topo.link_capacity_bytes_per_s[up]) / 1e9], [float(topo.link_latency_s[up]) * 1e9]
    sites = spec.sites.count if spec.sites else 1
    if topo.shape is not None and spec.n_gpus > spec.domain_gpus * sites:
        nic = topo.nic_up[:, 0]
        kinds.append("Switch")
        npus.append(spec.n_gpus // spec.domain_gpus // sites)
        bw.append(topo.gpu_nic_bytes_per_s() / 1e9)  # a shared NIC: each GPU's share
        lat.append(float(topo.link_latency_s[nic[0]]) * 1e9)
    if spec.sites:
        kinds.append("Switch")
        npus.append(sites)
        bw.append(spec.sites.dci_bandwidth_bytes_per_s / (spec.n_gpus // sites) / 1e9)
        lat.append(_site_link_latency_s(spec.sites, lat[-1] * 1e-9) * 1e9)
    return AnalyticalNetwork(
        tuple(kinds), tuple(npus), tuple(float(b) for b in bw), tuple(float(x) for x in lat)
    )


def _site_link_latency_s(sites: SitesSpec, fabric_link_s: float) -> float:
    """One link of the sites' ``Switch`` dimension: a message between sites crosses two such links (NPU to
    switch, switch to NPU), so each carries half the one-way fibre delay (``distance x fibre_delay``, the
    DCI transport's catalogue figure, 5 us/km) plus one link of the fabric it leaves or enters. The
    dimension's bandwidth is each GPU's share of its site's DCI, all GPUs of a site crossing at once."""
    fibre = fibre_delay_s(sites.distance_km, s_per_km=catalog.dci(sites.transport).fibre_delay_s_per_km)
    return fibre / 2 + fabric_link_s


def write_analytical(net: AnalyticalNetwork, path: str | Path) -> Path:
    """Write ``net`` as ASTRA-sim analytical YAML."""
    data = {
        "topology": list(net.topology),
        "npus_count": list(net.npus_count),
        "bandwidth": list(net.bandwidth_gbps),
        "latency": list(net.latency_ns),
    }
    p = Path(path)
    p.write_text(
        "# ASTRA-sim analytical network (aifabric export): bandwidth GB/s per direction, latency ns/link\n"
        + yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
    )
    return p


def read_analytical(path: str | Path) -> AnalyticalNetwork:
    """Read an analytical network YAML. Raises ParseError naming the field."""
    p = Path(path)
    data = yaml.safe_load(p.read_text())
    if not isinstance(data, dict):
        raise ParseError(f"{p}: expected a mapping with topology, npus_count, bandwidth, latency")
    try:
        kinds = tuple(str(k) for k in data["topology"])
        npus = tuple(int(n) for n in data["npus_count"])
        bw = tuple(float(b) for b in data["bandwidth"])
        lat = tuple(float(x) for x in data["latency"])
    except (KeyError, TypeError, ValueError) as err:
        raise ParseError(f"{p}: field {err}: missing or not a list of numbers") from err
    if len({len(kinds), len(npus), len(bw), len(lat)}) != 1:
        raise ParseError(f"{p}: topology, npus_count, bandwidth and latency must have the same length")
    bad = [k for k in kinds if k not in _KINDS]
    if bad:
        raise ParseError(f"{p}: topology: unknown {bad[0]!r}; known: {', '.join(_KINDS)}")
    return AnalyticalNetwork(kinds, npus, bw, lat)
