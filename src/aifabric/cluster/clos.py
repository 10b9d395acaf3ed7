"""Port arithmetic of a rail-optimised Clos built at the oversubscription the spec asks for, at every tier.

Each tier has its own switch and radix (``scale_out.switch`` for leaves, ``spine_switch``, ``core_switch``;
ports counted at the per-plane link speed). A tier with down:up ratio ``r`` on radix-``k`` switches uses
``u`` up ports and ``d = r u`` down ports,
exactly, with ``d + u <= k`` (the largest such ``u``): 2:1 on 64 ports is 42 down / 21 up, 4:1 is 48 / 12
(not 51 / 13, which is 3.92:1), 7:1 is 56 / 8. A ratio no integer split realises (1.37:1 on 64 ports) is
refused with the nearest ratios that can be built.

The endpoints are the nodes' GPUs, or the NICs that ``gpus_per_nic`` GPUs share
(:attr:`~aifabric.cluster.spec.ClusterSpec.endpoints_per_node`); rail ``k`` is a node's ``k``-th of them.
Ports are counted per NIC link: a GPU with ``nics_per_gpu`` NICs (of the NIC's ``ports`` each) in one
plane takes that many leaf ports at the NIC's speed, all on its rail's leaf
(:attr:`~aifabric.cluster.spec.ScaleOutSpec.nic_links_per_plane`;
16 nodes of 8 GPUs x 3 x 400G are 384 ports of 400G, not 128 of 1.2T).
Leaves come in groups (one scalable unit (SU) = one leaf per rail). Nodes are spread evenly over the SUs
and leaf uplinks cabled at ``ceil(ports used / r)`` (two tiers at 1:1 or under: rounded up where that
spreads them over fewer spines, :func:`even_uplinks`; with ``scale_out.full_su``, a full SU's, ``ceil(ports
of a full SU / r)``, as NVIDIA's SuperPOD RAs cable a partial SU); three tiers group SUs into pods
(Meta's AI Zones: a two-stage Clos per zone, an oversubscribed aggregation layer between zones) whose
spines send ``ceil(leaves per pod / r2)`` uplinks each to their group of cores. Among the SU and pod counts
that fit, the build whose every tier is oversubscribed no worse than asked (realised ratio at most the asked
one, to 1%) with the fewest switches wins (ties: the fewest switch-to-switch links, hence optics and their
watts; then the fewest SUs, then the fewest pods), on two tiers and on three alike: 98 nodes at 2:1 on
128-port leaves are 2 SUs of 49 nodes at 49 down / 25 up, 1.96:1; 2,048 DGX H100 nodes at 2:1 then 2:1 are
49 SUs of 42 nodes in 10 pods of 5 SUs (leaves 1.99:1, spines 1.96:1), 686 switches, not the 832 of 64 SUs
of 32 nodes that realise both ratios exactly. The realised bisection is then at least the requested one:

    requested bisection = min(N, N / (r1 r2)) / 2 links     (r2 = 1 for two tiers or one pod; r < 1
                                                             undersubscribes a tier)
    realised bisection  = min(N, leaves x u1, spines x u2) / 2 links

A fabric cabled for full SUs (``scale_out.full_su``) gives a partial SU's leaves a full SU's uplinks, as the
reference architectures build it: better than asked. A three-tier fabric that fits in one pod is built as
two tiers: a core tier would carry nothing.

References
----------
.. [1] Al-Fares, Loukissas, Vahdat, "A scalable, commodity data center network architecture", SIGCOMM 2008.
.. [2] NVIDIA DGX SuperPOD reference architecture (DGX H100): SUs of 32 nodes, rail-optimised.
.. [3] Gangidi et al., "RDMA over Ethernet for Distributed AI Training at Meta Scale", SIGCOMM 2024
   (AI Zones; 1:7 oversubscribed aggregation training switches).
"""

from __future__ import annotations

import itertools
import math
import operator
from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError

__all__ = [
    "TOLERANCE",
    "ClosShape",
    "binding_ratio",
    "clos_shape",
    "built_clos",
    "bundled_spread",
    "even_spread",
    "even_uplinks",
    "exact_split",
]

TOLERANCE = 0.01
"""Largest relative gap between realised and requested bisection a built fabric may have."""


@dataclass(frozen=True)
class ClosShape:
    """Port arithmetic of the scale-out Clos of one plane (counts, not links).

    Attributes
    ----------
    radix : int
        Ports per leaf switch at the per-plane link speed.
    tiers : int
        1, 2 or 3 as built (a three-tier spec that fits one pod is built with 2).
    leaf_down, leaf_up : int
        GPU-facing ports in use and spine-facing ports per leaf.
    n_leaves, n_spines, n_cores : int
        Switches per tier (one plane).
    spine_down, spine_up : int
        Leaf-facing and core-facing ports per spine (three tiers; two tiers: spine_down = spine_radix).
    leaves_per_pod, spines_per_pod, n_pods : int
        Three-tier grouping (two tiers: one pod holding every leaf and spine).
    rails : int
        Rails (1 when not rail-optimised).
    nodes_per_su : int
        Nodes per scalable unit.
    endpoints : int
        NIC-facing ports cabled in one plane (a GPU's NIC links there, or the shared NICs).
    requested : tuple of float
        The down:up ratio asked for at each built tier boundary, leaf first.
    spine_radix, core_radix : int
        Ports per spine and per core switch at the per-plane link speed.
    """

    radix: int
    tiers: int
    leaf_down: int
    leaf_up: int
    n_leaves: int
    n_spines: int
    n_cores: int
    spine_down: int
    spine_up: int
    leaves_per_pod: int
    spines_per_pod: int
    n_pods: int
    rails: int
    nodes_per_su: int
    endpoints: int = 0
    requested: tuple[float, ...] = ()
    spine_radix: int = 0
    core_radix: int = 0

    @property
    def realised(self) -> tuple[float, ...]:
        """Down:up ratio realised at each tier boundary, leaf first: ports cabled below / ports above."""
        out: list[float] = []
        if self.tiers >= 2:
            out.append(self.endpoints / (self.n_leaves * self.leaf_up))
        if self.tiers == 3:
            out.append(self.n_leaves * self.leaf_up / (self.n_spines * self.spine_up))
        return tuple(out)

    @property
    def bisection_links(self) -> float:
        """Links (of one plane) crossing the worst bisection: min(N, leaf uplinks, spine uplinks) / 2."""
        bounds = [float(self.endpoints)]
        if self.tiers >= 2:
            bounds.append(float(self.n_leaves * self.leaf_up))
        if self.tiers == 3:
            bounds.append(float(self.n_spines * self.spine_up))
        return min(bounds) / 2

    @property
    def requested_bisection_links(self) -> float:
        """N / R / 2: the bisection the requested ratios give, links of one plane, R the most
        oversubscribed boundary's cumulative ratio (:func:`binding_ratio`; the NICs bind below 1)."""
        return self.endpoints / binding_ratio(self.requested) / 2


def binding_ratio(ratios: tuple[float, ...]) -> float:
    """max(1, R_1, ..., R_t) with R_i = r_1 x ... x r_i: what the most oversubscribed tier boundary divides
    the GPUs' injection by. Boundary ``i`` passes at most N / R_i, so an undersubscribed tier above
    (r < 1) cannot undo one below it: 2:1 then 1:2 binds at 2, the leaf (R = 2, 1), and 1:2 then 2:1 at
    1, the NICs (R = 0.5, 1); no bisection exceeds the NICs' N / 2.

    >>> binding_ratio((2.0, 0.5)), binding_ratio((0.5, 2.0)), binding_ratio((2.0, 2.0)), binding_ratio(())
    (2.0, 1.0, 4.0, 1.0)
    """
    return max([1.0, *itertools.accumulate(ratios, operator.mul)])


def exact_split(radix: int, ratio: float) -> tuple[int, int] | None:
    """Down and up ports ``(d, u)`` with ``d = ratio x u`` exactly and ``d + u <= radix``, largest ``u``.

    Returns None when no integer split realises ``ratio`` to 1e-9; raises ValueError for a ``ratio`` not > 0.

    Examples
    --------
    A ratio below 1 undersubscribes the tier, more ports up than down (Meta's 24K-GPU clusters run T0-T1 at
    1:2, glennklockwood.com "Meta's H100 clusters"):

    >>> exact_split(64, 2.0), exact_split(64, 4.0), exact_split(64, 7.0), exact_split(64, 1.37)
    ((42, 21), (48, 12), (56, 8), None)
    >>> exact_split(64, 0.5)
    (21, 42)
    """
    if not ratio > 0:
        raise ValueError(f"ratio must be > 0, got {ratio!r}")
    for up in range(int(radix // (ratio + 1)), 0, -1):
        down = ratio * up
        if abs(down - round(down)) < 1e-9 and round(down) + up <= radix:
            return round(down), up
    return None


@dataclass(frozen=True)
class Radix:
    """Ports per switch of each tier at the per-plane link speed."""

    leaf: int
    spine: int
    core: int


def _radix(spec: ClusterSpec) -> Radix:
    """Each tier's radix: ``scale_out.radix``, else its switch's ports at the link speed (ports x port speed
    / link speed, at most the datasheet's logical ports: :meth:`aifabric.catalog.SwitchSpec.ports_at`)."""
    so = spec.scale_out
    assert so is not None
    link_bps = spec.link_bytes_per_s
    out = {}
    for tier, key in so.tier_switches.items():
        sw = catalog.switch(key)
        radix = so.radix or sw.ports_at(link_bps)
        if radix < 4:
            field = "switch" if tier == "leaf" else f"{tier}_switch"
            raise ConfigError(
                f"scale_out.{field}: {key!r} has too few ports at {link_bps * 8 / 1e9:g} Gb/s per link "
                f"(radix {radix})"
            )
        out[tier] = radix
    return Radix(**out)


def built_clos(spec: ClusterSpec) -> ClosShape | None:
    """The Clos ``spec``'s topology is built with: :func:`clos_shape`, or None without a scale-out or with a
    dragonfly one, or for
    one scale-up domain (one HGX node) whose Clos cannot be built as asked. One domain sends nothing over
    its scale-out fabric (the collectives' rule: :func:`aifabric.collectives.communicator.Communicator.
    contiguous` takes no Clos for it), so a leaf ratio only more nodes realise (2:1 on the one port per
    rail leaf of one node) leaves the node with its NICs and no leaf instead of refusing it.

    Raises
    ------
    ConfigError
        A Clos of several domains that cannot be built (:func:`clos_shape`).
    """
    if spec.scale_out is None or spec.scale_out.topology != "clos":
        return None  # a dragonfly is sized by aifabric.cluster.dragonfly, not wired link by link
    if spec.n_domains > 1:
        return clos_shape(spec)
    try:
        return clos_shape(spec)
    except ConfigError:
        return None


def clos_shape(spec: ClusterSpec) -> ClosShape:
    """Switch and port counts of one plane of ``spec``'s scale-out fabric, at the requested ratios or better.

    Raises
    ------
    ConfigError
        If the fabric cannot be built: too many GPUs for the tiers and radix, or a ratio that no
        integer port split realises (the message names the nearest buildable ratios).

    Examples
    --------
    1,024 GPUs on 64-port switches, rail-optimised, two tiers: 32 leaves of 32 down/32 up, 16 spines.

    >>> from aifabric.cluster.presets import preset
    >>> s = clos_shape(preset("dgx-h100-superpod", nodes=128))
    >>> (s.n_leaves, s.leaf_down, s.leaf_up, s.n_spines)
    (32, 32, 32, 16)
    """
    so = spec.scale_out
    if so is None:
        raise ConfigError("scale_out: this cluster has no scale-out network")
    radix = _radix(spec)
    os_ = list(so.oversubscription) + [1.0] * 3
    shape = _build(spec, radix, os_[0], os_[1])
    if isinstance(shape, str):
        ratio_helps = not shape.startswith(("scale_out.pod_gpus", "scale_out.radix"))
        raise ConfigError(shape + (_nearest(spec, radix, os_[0], os_[1]) if ratio_helps else ""))
    _check_ratios_used(spec, so.oversubscription, shape.tiers)
    if so.pod_gpus is not None and shape.n_pods == 1:
        raise ConfigError(
            f"scale_out.pod_gpus: {so.pod_gpus} is not used: a {shape.tiers}-tier fabric of "
            f"{spec.n_gpus} GPUs has one pod (pods need tiers: 3 and more GPUs than one pod)"
        )
    return shape


#: The tier whose uplinks each down:up ratio sizes, leaf first (a Clos has at most three tiers).
_BOUNDARIES = ("leaf", "spine")


def _check_ratios_used(spec: ClusterSpec, ratios: tuple[float, ...], tiers: int) -> None:
    """Refuse a down:up ratio other than 1:1 at a tier boundary the built fabric does not have: a
    ``tiers``-tier Clos has ``tiers - 1`` boundaries (leaf, then spine), and a ratio past them would be
    dropped without a word (``--tiers 1 --oversubscription 2:1``, or ``2:1,3:1`` on two tiers). The
    remedy named is one that can be given: three tiers are the most, and three asked that fit one pod
    are built with two (:func:`_build`), where only pods (``pod_gpus``) bring the core back."""
    for i, ratio in enumerate(ratios[tiers - 1 :], start=tiers - 1):
        if ratio == 1.0:
            continue
        where = (
            f"{ratio:g}:1 at the {_BOUNDARIES[i]}"
            if i < 2
            else f"ratio {i + 1} ({ratio:g}:1, above the core)"
        )
        unused = f"scale_out.oversubscription: {where} is not used"
        asked = spec.scale_out.tiers if spec.scale_out else tiers
        if asked > tiers:
            raise ConfigError(
                f"{unused}: tiers {asked} were asked, but the {spec.n_gpus} GPUs fit one pod, built with "
                f"{tiers} tiers and no core (give 1:1 there, or scale_out.pod_gpus below {spec.n_gpus})"
            )
        remedy = "give 1:1 there, or drop it" if tiers == 3 else "give 1:1 there, or more tiers"
        raise ConfigError(f"{unused}: a {tiers}-tier fabric has {tiers - 1} tier boundaries ({remedy})")


def _units(spec: ClusterSpec, rails: int, leaf_down_max: int) -> tuple[int, int, int]:
    """(units to place, leaf ports per unit, leaves per group): nodes per SU when rail-optimised. A GPU's
    NIC links of one plane (``k`` of them) stay on one leaf: ``k`` ports per endpoint."""
    so = spec.scale_out
    assert so is not None
    k = so.nic_links_per_plane
    g = spec.endpoints_per_node
    if so.rail_optimized:
        return spec.n_nodes, max(1, g // rails) * k, rails
    if leaf_down_max >= g * k:  # whole nodes per leaf where they fit, so a node's NICs share a leaf
        return spec.n_nodes, g * k, 1
    return spec.n_endpoints, k, 1


def _build(spec: ClusterSpec, radix: Radix, r1: float, r2: float, span: int = 32) -> ClosShape | str:
    """The cheapest shape (:func:`_cost`: the fewest switches) that holds (:func:`_holds`), or why none does.

    SU counts from the fewest that hold the GPUs to ``span`` more are tried (more SUs, fewer nodes each,
    need fewer uplinks a leaf), each with its cheapest pod count, until the leaves alone reach the best
    build's switches.
    """
    so = spec.scale_out
    assert so is not None
    rails = (so.rails or spec.endpoints_per_node) if so.rail_optimized else 1
    n = spec.endpoint_ports
    k = radix.leaf
    if so.tiers == 1:
        if (so.rail_optimized and n > k * rails) or (not so.rail_optimized and n > k):
            return f"scale_out.tiers: {n} {_ports(spec)} do not fit one tier of radix-{k} switches"
        n_leaves = math.ceil(n / k) if not so.rail_optimized else rails
        return ClosShape(
            k, 1, k, 0, n_leaves, 0, 0, 0, 0, n_leaves, 0, 1, rails, k, n, (), radix.spine, radix.core
        )
    split = exact_split(k, r1)
    if split is None:
        return f"scale_out.oversubscription: {r1:g}:1 is no integer split of {k} ports"
    units, ppu, group = _units(spec, rails, split[0])
    m_max = split[0] // ppu
    if m_max < 1:
        return f"scale_out.radix: {k}-port leaves at {r1:g}:1 cannot hold one node's ports"
    g0 = math.ceil(units / m_max)
    why = ""  # why the ratio failed (an SU or pod count that holds the GPUs but misses the ratio)
    size_why = ""  # why the size failed (pods, or their cap): another field than the ratio is at fault
    best: ClosShape | None = None
    for n_groups in range(g0, min(units, g0 + span) + 1):
        m = math.ceil(units / n_groups)
        u = math.ceil((m_max if so.full_su else m) * ppu / r1 - 1e-9)  # full_su: a full SU's uplinks
        n_leaves = n_groups * group
        if so.tiers == 2 or (n_leaves <= group and (so.pod_gpus is None or spec.n_gpus <= so.pod_gpus)):
            if n_leaves > radix.spine:
                if best is not None or n_groups > g0:
                    break  # more SUs only add leaves: the ratio, not the size, is what failed
                return (
                    f"scale_out.tiers: {n} {_ports(spec)} need {n_leaves} leaves, more than a two-tier Clos "
                    f"of radix-{radix.spine} spines connects ({radix.spine} leaves, {radix.spine * m * ppu} "
                    f"{_ports(spec)}); use tiers: 3"
                )
            found: ClosShape | str = _two_tier(radix, rails, m, ppu, u, n_leaves, n, r1)
            if isinstance(found, ClosShape) and not _holds(found):
                found = "no scalable-unit count realises it"
        else:
            found = _three_tier(spec, radix, rails, m, ppu, u, n_groups, group, n, r1, r2)
        if isinstance(found, str) and found.startswith("scale_out."):
            size_why = size_why or found  # the fewest SUs: the smallest size that fails
        elif isinstance(found, str):
            why = found
        elif best is None or _cost(found) < _cost(best):
            best = found
        if best is not None and (n_groups + 1) * group >= _switches(best):
            break  # more SUs: their leaves alone are as many switches as the best build has
    if best is not None:
        return best
    if size_why and not why:
        return size_why
    return (
        f"scale_out.oversubscription: {r1:g}:1"
        + (f" then {r2:g}:1" if so.tiers == 3 else "")
        + f" cannot be built for {n} {_ports(spec)} on radix-{_radix_text(radix)} switches ({why})"
    )


def _ports(spec: ClusterSpec) -> str:
    """What the fabric's endpoint ports are, for messages: ``GPUs``, ``shared NICs``, or ``NIC ports`` (a
    GPU's several NIC links of a plane)."""
    so = spec.scale_out
    if so is not None and so.nic_links_per_plane > 1:
        return "NIC ports"
    return "shared NICs" if so is not None and so.gpus_per_nic > 1 else "GPUs"


def _radix_text(radix: Radix) -> str:
    """``64`` when every tier has the same radix, else ``64/288`` (leaf/spine) or ``64/288/288``."""
    ks = (radix.leaf, radix.spine, radix.core)
    return str(ks[0]) if len(set(ks)) == 1 else "/".join(map(str, ks))


def _switches(shape: ClosShape) -> int:
    return shape.n_leaves + shape.n_spines + shape.n_cores


def _cost(shape: ClosShape) -> tuple[int, int]:
    """What a build is ranked by, fewest first: its switches, then its switch-to-switch links (each a cable
    and, optical, two modules: the optics and their watts). Equal costs keep the build found first (the
    fewest SUs, then the fewest pods)."""
    return _switches(shape), shape.n_leaves * shape.leaf_up + shape.n_spines * shape.spine_up


def even_spread(uplinks: int, fewest: int) -> int:
    """The fewest switches, at least ``fewest``, over which each lower switch spreads its ``uplinks`` evenly.

    A Clos cables every lower switch to every upper switch of its group with the same number of links
    (Al-Fares et al. 2008 [1]_; ECMP then splits a leaf's traffic evenly), so the upper count divides the
    uplinks: the smallest divisor of ``uplinks`` >= ``fewest`` (``uplinks`` itself always is one). Raises
    ValueError when ``uplinks < 1`` or ``fewest > uplinks`` (no such divisor).
    NVIDIA's DGX SuperPOD (B300, XDR) RA, Table 3, builds so: 32 leaves of 72 x 800G uplinks on 144-port
    Q3400 spines need ceil(32 x 72 / 144) = 16 spines by ports, and get 18 (72 / 16 is no integer).

    Examples
    --------
    >>> even_spread(72, 16), even_spread(72, 32), even_spread(32, 16), even_spread(21, 8)
    (18, 36, 16, 21)
    """
    if uplinks < 1 or fewest > uplinks:
        raise ValueError(f"no even spread of {uplinks} uplinks over at least {fewest} switches")
    return next(d for d in range(max(1, fewest), uplinks + 1) if uplinks % d == 0)


def bundled_spread(uplinks: int, n_leaves: int, spine_radix: int) -> int:
    """The fewest spines that take a leaf's ``uplinks`` when each spine takes the same bundle from every
    leaf, bundles of ``floor(k2 / leaves)`` links at most (each spine has a port for every leaf's bundle)::

        S = ceil(u / floor(k2 / L))

    Every leaf cables uplink ``j`` to spine ``j mod S`` (:mod:`aifabric.cluster.topology`), so spine ``s``
    takes the same ``c_s`` links from every leaf: ECMP over a leaf's ``u`` uplinks sends ``c_s / u`` of
    its traffic through ``s``, which reaches each destination leaf over the same ``c_s`` links, and no link
    carries more than another (Al-Fares et al. 2008 [1]_ need each lower switch cabled to every upper
    one, not the same bundle to each). ``S`` is at least the ports' ``ceil(L u / k2)`` and never falls as
    ``u`` or ``L`` grow. It gives NVIDIA's DGX SuperPOD (B300, XDR) RA, Table 3: 32 leaves of 72 uplinks on
    144-port Q3400 spines, bundles of 4, 18 spines. Raises ValueError when ``n_leaves`` exceeds
    ``spine_radix`` (no two-tier Clos) or ``uplinks < 1``.

    Examples
    --------
    >>> bundled_spread(72, 32, 144), bundled_spread(17, 8, 128), bundled_spread(21, 8, 64)
    (18, 2, 3)
    """
    per_spine = spine_radix // n_leaves if n_leaves > 0 else 0
    if uplinks < 1 or per_spine < 1:
        raise ValueError(
            f"no spread of {uplinks} uplinks of {n_leaves} leaves over radix-{spine_radix} spines"
        )
    return math.ceil(uplinks / per_spine)


def even_uplinks(
    leaf_radix: int, spine_radix: int, down: int, up: int, n_leaves: int, ratio: float
) -> tuple[int, int]:
    """Uplinks per leaf and spines of a two-tier Clos: at 1:1 or undersubscribed (``ratio <= 1``), the
    uplink count from ``up`` to the leaf's free ports that spreads evenly over the fewest spines (ties keep
    the fewest uplinks); oversubscribed, ``up`` itself, which is what realises the ratio.

    A leaf short of a full SU has an uplink count that may divide badly: 31 nodes at 1:1 on 64-port
    leaves need 31 uplinks, which spread evenly only over 31 spines. NVIDIA's DGX SuperPOD (H100, B200)
    RAs, Table 4, cable the full SU instead ("the fabric should be designed to support the full SU,
    including leaf switches and leaf-spine cables"): 31 nodes on 8 leaves of 32 uplinks under 4 spines.
    An extra uplink at 1:1 or under leaves the bisection where it was, bound by the NICs (``min(N, leaves x
    u) = N``), so one node more never needs fewer spines: 11 nodes at 1:2 need 22 uplinks, which spread
    evenly over 11 spines by divisors, and 24 over 3, as 12 nodes have them. A leaf never takes more
    uplinks than a full SU's leaf has at the ratio (``radix / (1 + ratio)``, 32 of 64 at 1:1): 155 nodes
    on 4 rails of 5 leaves (31 down each) would spread 33 uplinks over 11 spines, more optics than the 32
    uplinks under 16 spines that 156 nodes must have; the full SU's cabling serves both.

    Oversubscribed, the leaf has no uplink to spare (one more would change the ratio), so its ``up`` go
    out in bundles that may differ between spines: :func:`bundled_spread`'s ``ceil(up / floor(k2 /
    leaves))`` spines, which never falls as nodes are added (34 nodes at 2:1 on 8 leaves: 17 uplinks
    under 2 spines, not the 17 an even spread of a prime needs).

    Examples
    --------
    >>> even_uplinks(64, 64, 31, 31, 8, 1.0), even_uplinks(64, 64, 16, 16, 8, 1.0)
    ((32, 4), (16, 2))
    >>> even_uplinks(64, 64, 11, 22, 8, 0.5), even_uplinks(64, 64, 12, 24, 8, 0.5)
    ((24, 3), (24, 3))
    >>> even_uplinks(64, 64, 42, 21, 8, 2.0), even_uplinks(128, 128, 34, 17, 8, 2.0)  # 2:1: up alone
    ((21, 3), (17, 2))
    """
    if ratio > 1.0 + 1e-9:
        return up, bundled_spread(up, n_leaves, spine_radix)
    best = (up, even_spread(up, math.ceil(n_leaves * up / spine_radix)))
    full_su = max(up, math.floor(leaf_radix / (1.0 + ratio) + 1e-9))  # a full SU leaf's uplinks at this ratio
    for more in range(up + 1, min(leaf_radix - down, full_su) + 1):
        fewest = math.ceil(n_leaves * more / spine_radix)
        if fewest >= best[1]:
            break  # the spines the ports need only grow with more uplinks
        spines = even_spread(more, fewest)
        if spines < best[1]:
            best = (more, spines)
    return best


def _two_tier(
    radix: Radix, rails: int, m: int, ppu: int, u: int, n_leaves: int, n: int, r1: float
) -> ClosShape:
    u, n_spines = even_uplinks(radix.leaf, radix.spine, m * ppu, u, n_leaves, r1)
    return ClosShape(
        radix.leaf,
        2,
        m * ppu,
        u,
        n_leaves,
        n_spines,
        0,
        radix.spine,
        0,
        n_leaves,
        n_spines,
        1,
        rails,
        m,
        n,
        (r1,),
        radix.spine,
        radix.core,
    )


def _three_tier(
    spec: ClusterSpec,
    radix: Radix,
    rails: int,
    m: int,
    ppu: int,
    u: int,
    n_groups: int,
    group: int,
    n: int,
    r1: float,
    r2: float,
) -> ClosShape | str:
    """Pods of whole SUs: among the pod counts that hold (:func:`_holds`), the cheapest (:func:`_cost`), else
    why none does.

    Pod counts run up from the fewest that hold the SUs while a pod more could still cost less: ``P`` pods
    have ``u P`` spines and at least ``u ceil(L / (r2 k3))`` cores (their ``P ceil(L / P / r2)`` uplinks
    per spine position are at least ``L / r2``), so the count stops once ``L + u P`` plus those cores
    exceeds the best build's switches.
    """
    p0 = _fewest_pods(spec, radix, m, ppu, n_groups, group, n, r2)
    if isinstance(p0, str):
        return p0
    n_leaves = n_groups * group
    fewest_cores = u * math.ceil(n_leaves / r2 / radix.core - 1e-9)
    best: ClosShape | None = None
    for n_pods in range(p0, min(n_groups, radix.core) + 1):
        if best is not None and n_leaves + u * n_pods + fewest_cores > _switches(best):
            break
        sus_per_pod = math.ceil(n_groups / n_pods)
        pods = math.ceil(n_groups / sus_per_pod)
        if pods == 1:
            shape = _two_tier(radix, rails, m, ppu, u, n_leaves, n, r1)
        else:
            shape = _pod_shape(radix, rails, m, ppu, u, n_leaves, sus_per_pod * group, pods, n, r1, r2)
        if _holds(shape) and (best is None or _cost(shape) < _cost(best)):
            best = shape
    return best if best is not None else "no pod count realises it"


def _fewest_pods(
    spec: ClusterSpec, radix: Radix, m: int, ppu: int, n_groups: int, group: int, n: int, r2: float
) -> int | str:
    """The fewest pods of whole SUs (``n_groups`` SUs of ``group`` leaves) that hold the SUs: a pod holds
    as many as its spines' ``r2`` split of downlinks serves and ``scale_out.pod_gpus`` allows. Else why
    none does: no integer split, a pod smaller than one SU, or more pods than the cores connect."""
    so = spec.scale_out
    assert so is not None
    split = exact_split(radix.spine, r2)
    if split is None:
        return f"{r2:g}:1 is no integer split of {radix.spine} spine ports"
    lp_max = split[0] // group  # SUs per pod
    su_gpus = m * ppu * group * so.gpus_per_nic // so.nic_links_per_plane  # an SU's endpoints x their GPUs
    if so.pod_gpus is not None:
        lp_max = min(lp_max, so.pod_gpus // su_gpus)
    if lp_max < 1:
        return (
            f"scale_out.pod_gpus: {so.pod_gpus} GPUs per pod cannot hold one scalable unit of {su_gpus} GPUs"
        )
    p0 = math.ceil(n_groups / lp_max)
    if p0 > min(n_groups, radix.core):
        return (
            f"scale_out.tiers: {n} {_ports(spec)} need {p0} pods, more than a three-tier Clos of "
            f"radix-{radix.core} cores connects ({radix.core} pods)"
        )
    return p0


def _pod_shape(
    radix: Radix,
    rails: int,
    m: int,
    ppu: int,
    u: int,
    n_leaves: int,
    lp: int,
    pods: int,
    n: int,
    r1: float,
    r2: float,
) -> ClosShape:
    """A three-tier Clos of ``pods`` pods of ``lp`` leaves each and ``u`` spines per pod (one per leaf
    uplink): each spine has ``lp`` leaf-facing ports and ``u2 = ceil(lp / r2)`` core-facing ones (``r2``:
    the spine tier's down:up ratio), under ``ceil(pods u2 / core radix)`` cores per spine position."""
    u2 = math.ceil(lp / r2 - 1e-9)
    cores_per_group = math.ceil(pods * u2 / radix.core)
    return ClosShape(
        radix.leaf,
        3,
        m * ppu,
        u,
        n_leaves,
        u * pods,
        cores_per_group * u,
        lp,
        u2,
        lp,
        u,
        pods,
        rails,
        m,
        n,
        (r1, r2),
        radix.spine,
        radix.core,
    )


def _holds(shape: ClosShape) -> bool:
    """Every built tier boundary is oversubscribed no worse than asked: its realised down:up ratio is at most
    the requested one (to 1%), leaves and spines alike.

    A network architect sizes each tier to the asked ratio or better, never worse, with the fewest switches:
    98 nodes at 2:1 on 128-port leaves are 2 SUs of 49 nodes, 49 down / 25 up per rail leaf (1.96:1, 16
    leaves), not 7 SUs of 14 that realise 2:1 exactly with 56 leaves. Leaf uplinks are ``ceil(ports used /
    r1)`` per leaf and spine uplinks ``ceil(leaves per pod / r2)`` per spine, so an SU count that does not
    divide the nodes, or a pod count that does not divide the SUs, leaves a tier under its ratio: 2,048 DGX
    H100 nodes at 2:1 then 2:1 are 49 SUs of 42 nodes (1.99:1) in 10 pods of 5 SUs, the last of 4 (spines
    392 x 21 down / 210 x 20 up = 1.96:1): 686 switches, where the exact ratios took 64 SUs of 32 nodes and
    832. A ratio below 1 (undersubscribed) is held the same way: at most ``r`` down per up.
    """
    pairs = zip(shape.realised, shape.requested, strict=True)
    return all(got <= want * (1 + TOLERANCE) for got, want in pairs)


def _nearest(spec: ClusterSpec, radix: Radix, r1: float, r2: float) -> str:
    """``; buildable ... 1.9:1, 2.1:1``: the buildable ratios (varying the failing tier) nearest the ask."""
    so = spec.scale_out
    assert so is not None
    vary_spine = so.tiers == 3 and exact_split(radix.leaf, r1) is not None and r2 != 1.0
    target = r2 if vary_spine else r1
    k = radix.spine if vary_spine else radix.leaf
    cands = sorted({d / u for u in range(1, k) for d in range(u, k - u + 1)})
    below = next(
        (x for x in reversed(cands) if x < target and _builds(spec, radix, r1, r2, x, vary_spine)), None
    )
    above = next((x for x in cands if x > target and _builds(spec, radix, r1, r2, x, vary_spine)), None)
    found = [_ratio_text(x, target) for x in (below, above) if x is not None]
    tier = "spine" if vary_spine else "leaf"
    return f"; buildable {tier} ratios nearest: {', '.join(found)}" if found else "; no ratio builds it"


def _ratio_text(x: float, asked: float) -> str:
    """``x:1`` to 3 significant digits, or as many more as tell it from ``asked`` (1.368:1 and 1.3704:1 are
    the ratios nearest 1.37:1 on 64 ports, 26:19 and 37:27; both read 1.37:1 to 3 digits)."""
    digits = 3
    while f"{x:.{digits}g}" == f"{asked:.{digits}g}" and digits < 12:
        digits += 1
    return f"{x:.{digits}g}:1"


def _builds(spec: ClusterSpec, radix: Radix, r1: float, r2: float, x: float, vary_spine: bool) -> bool:
    built = _build(spec, radix, r1, x, 4) if vary_spine else _build(spec, radix, x, r2, 4)
    return isinstance(built, ClosShape)
