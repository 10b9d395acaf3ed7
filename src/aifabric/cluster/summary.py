"""What a reader of a cluster announcement should ask, answered with numbers.

Bandwidth per GPU of each of the four networks and the ratios between them, the size of the fast (scale-up)
domain, oversubscription, bisection bandwidth, parts and power (second seed, "How to use this when reading
a cluster announcement").
"""

from __future__ import annotations

from dataclasses import dataclass

from aifabric.cluster.clos import binding_ratio
from aifabric.cluster.dragonfly import DragonflyShape
from aifabric.cluster.inventory import Inventory, inventory
from aifabric.cluster.ladder import LadderRung, bandwidth_ladder
from aifabric.cluster.power import PowerBudget, cluster_power
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import Topology, build_topology

__all__ = ["ClusterSummary", "bisection_bytes_per_s", "summarize"]


@dataclass(frozen=True)
class ClusterSummary:
    """Headline figures of a cluster (SI units; bandwidths per direction unless named otherwise)."""

    spec: ClusterSpec
    n_gpus: int
    n_nodes: int
    domain_gpus: int
    rungs: tuple[LadderRung, ...]
    oversubscription: tuple[float, ...]
    realised_oversubscription: tuple[float, ...]
    tiers: int
    planes: int
    bisection_bytes_per_s: float
    inventory: Inventory
    power: PowerBudget | None = None
    dragonfly: DragonflyShape | None = None

    @property
    def requested_bisection_bytes_per_s(self) -> float:
        """N B / 2 / R: the bisection the requested ratios give, bytes/s per direction, R the most
        oversubscribed boundary's cumulative ratio (:func:`aifabric.cluster.clos.binding_ratio`)."""
        return self.n_gpus * self.spec.nic_line_rate_bytes_per_s / 2 / binding_ratio(self.oversubscription)

    @property
    def scale_out_words(self) -> str:
        """The scale-out in a few words: a Clos's tiers, planes and ratios, or a dragonfly's groups and
        global taper."""
        d = self.dragonfly
        if d is not None:
            return f"dragonfly of {d.g} group(s) x {d.a} switches, global taper {d.oversubscription:.3g}:1"
        return f"{self.tiers} tier(s), {self.planes} plane(s), oversubscription {list(self.oversubscription)}"

    @property
    def ratios(self) -> list[tuple[str, str, float]]:
        """(upper, lower, ratio) of per-direction bandwidth per GPU between consecutive networks."""
        out = []
        nets = [r for r in self.rungs if r.network != "memory"]
        for a, b in zip(nets, nets[1:], strict=False):
            out.append((a.level, b.level, a.per_direction_bytes_per_s / b.per_direction_bytes_per_s))
        return out


def bisection_bytes_per_s(topo: Topology) -> float:
    """Scale-out bisection bandwidth, bytes/s per direction, by the fabric's topology (0 without one)."""
    so = topo.spec.scale_out
    return _BISECTION[so.topology](topo) if so is not None else 0.0


def _clos_bisection(topo: Topology) -> float:
    """A Clos's bisection, bytes/s per direction.

    Half of the GPUs talk to the other half: the traffic is capped by the NICs of one half, and by half the
    uplink capacity of every oversubscribed tier (a worst-case cut through the spines / cores):

        bisection = min( N/2 x B_nic,  (uplinks of leaves)/2 x B_link,  (uplinks of spines)/2 x B_link )
    """
    spec = topo.spec
    s = topo.shape
    if s is None:
        return 0.0
    link = spec.link_bytes_per_s
    p = topo.planes
    bounds = [spec.n_gpus / 2 * spec.nic_line_rate_bytes_per_s]
    if s.tiers >= 2:
        bounds.append(s.n_leaves * s.leaf_up * link * p / 2)
    if s.tiers == 3:
        bounds.append(s.n_spines * s.spine_up * link * p / 2)
    return min(bounds)


def _dragonfly_bisection(topo: Topology) -> float:
    """A dragonfly's bisection, bytes/s per direction: the NICs of half the GPUs, or the global links
    between two halves of the groups (:attr:`aifabric.cluster.dragonfly.DragonflyShape.bisection_links`,
    Kim et al. ISCA 2008), whichever is less: ``min(N/2 x B_nic, floor(g/2) ceil(g/2) l x B_link)``."""
    spec, d = topo.spec, topo.dragonfly
    assert d is not None
    nics = spec.n_gpus / 2 * spec.nic_line_rate_bytes_per_s
    return min(nics, d.bisection_links * spec.link_bytes_per_s)


#: The scale-out bisection, by ``scale_out.topology``.
_BISECTION = {"clos": _clos_bisection, "dragonfly": _dragonfly_bisection}


def summarize(spec: ClusterSpec, topo: Topology | None = None) -> ClusterSummary:
    """Build the :class:`ClusterSummary` of ``spec`` (builds its Topology unless given)."""
    if topo is None and spec.scale_up.kind != "torus":
        topo = build_topology(spec)
    inv = inventory(topo) if topo is not None else Inventory(())
    return ClusterSummary(
        spec=spec,
        n_gpus=spec.n_gpus,
        n_nodes=spec.n_nodes,
        domain_gpus=spec.domain_gpus,
        rungs=tuple(bandwidth_ladder(spec)),
        oversubscription=_ratios(topo, realised=False),
        realised_oversubscription=_ratios(topo, realised=True),
        tiers=topo.shape.tiers if topo is not None and topo.shape else 0,
        planes=spec.scale_out.planes if spec.scale_out else 0,
        bisection_bytes_per_s=bisection_bytes_per_s(topo) if topo is not None else 0.0,
        inventory=inv,
        power=cluster_power(topo, inv) if topo is not None else None,
        dragonfly=topo.dragonfly if topo is not None else None,
    )


def _ratios(topo: Topology | None, *, realised: bool) -> tuple[float, ...]:
    """The scale-out's down:up ratios, leaf first: a Clos's asked or realised per tier boundary, a
    dragonfly's global taper under its routing (asked and realised alike: it is what the counts give)."""
    if topo is None:
        return ()
    if topo.dragonfly is not None:
        return (topo.dragonfly.oversubscription,)
    if topo.shape is None:
        return ()
    return topo.shape.realised if realised else topo.shape.requested
