"""A Topology as undirected cables: what graph-level simulator formats list, one line per cable."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aifabric.cluster.topology import Topology

__all__ = ["Cables", "GraphCounts", "cables"]


@dataclass(frozen=True)
class GraphCounts:
    """Counts a round trip must preserve: end points (GPUs), switches, cables (undirected links)."""

    nodes: int
    switches: int
    links: int


@dataclass(frozen=True)
class Cables:
    """Every cable once. Arrays of shape (n_cables,); device ids as in the Topology (GPUs first).

    ``bytes_per_s`` is the per-direction capacity, ``latency_s`` the one-way latency, ``tier`` the Topology's
    link tier (0 GPU-NVSwitch, 1 NIC-leaf, 2 leaf-spine, 3 spine-core).
    """

    src: np.ndarray
    dst: np.ndarray
    bytes_per_s: np.ndarray
    latency_s: np.ndarray
    tier: np.ndarray
    n_gpus: int
    n_devices: int

    def counts(self) -> GraphCounts:
        """GPUs, switches (every other device that a cable touches) and cables."""
        used = np.unique(np.concatenate([self.src, self.dst]))
        return GraphCounts(self.n_gpus, int((used >= self.n_gpus).sum()), int(self.src.size))

    def select(self, mask: np.ndarray) -> Cables:
        """The cables where ``mask`` is True."""
        return Cables(
            self.src[mask],
            self.dst[mask],
            self.bytes_per_s[mask],
            self.latency_s[mask],
            self.tier[mask],
            self.n_gpus,
            self.n_devices,
        )


def cables(topo: Topology) -> Cables:
    """One entry per cable of ``topo``: the direction whose link id is below its reverse's.

    Raises
    ------
    ValueError
        If the topology does not pair every link with its reverse.
    """
    ids = np.arange(topo.n_links)
    rev = topo.link_reverse
    if rev.size != topo.n_links:
        raise ValueError(f"topology of {topo.spec.name}: links are not paired with their reverse")
    keep = ids < rev
    return Cables(
        topo.link_src[keep].astype(np.int64),
        topo.link_dst[keep].astype(np.int64),
        topo.link_capacity_bytes_per_s[keep],
        topo.link_latency_s[keep],
        topo.link_tier[keep].astype(np.int64),
        topo.n_gpus,
        topo.n_devices,
    )
