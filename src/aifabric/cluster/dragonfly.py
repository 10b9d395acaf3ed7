"""Port arithmetic of a dragonfly scale-out (HPE Slingshot, Cray XC): groups of all-to-all switches joined
all-to-all by global links.

Kim, Dally, Scott and Abts [1]_ name the parameters: each switch of radix ``k`` has ``p`` endpoint ports,
``a - 1`` local ports (one to each other switch of its group of ``a``) and ``h`` global ports (to other
groups), ``p + (a - 1) + h <= k``; ``g`` groups, at most ``a h + 1`` (one global link between every pair of
groups). A balanced dragonfly spends as much on global as on injection bandwidth and twice the switches of
a group on local links: ``a = 2p = 2h`` (Kim 2008 Sec. 3.1), so ``k = 4p - 1`` and ``p = floor((k + 1)/4)``:
a radix-64 switch gives ``p = h = 16``, ``a = 32``, at most ``32 x 16 + 1 = 513`` groups of 512 endpoints
(262,656: Kim's "over 256K nodes" with radix-64 routers). HPE Slingshot spends the 64th port on one more
global link: 16 endpoint, 31 local and 17 global ports per Rosetta switch (De Sensi et al. [2]_), at most
545 groups of 512 endpoints.

Counting rules (one group per Cray EX cabinet: its switch blades come with it, so groups are whole)::

    groups          g = ceil(N / (a p))               (N endpoints: the nodes' NIC ports, each its own
                                                      link at the NIC's speed, as a Clos leaf counts them)
    switches        g a
    local links     g a (a - 1) / 2                   electrical, one per pair of switches of a group
    links per arc   l = floor(a h / (g - 1))          the group's a h global ports spread evenly over
                                                      the g - 1 other groups (or as cabled: links_per_arc)
    global links    g (g - 1) / 2 x l                 optical
    bisection       floor(g/2) ceil(g/2) l links      every arc from one half of the groups to the other

A collective that leaves its group sends, per group, the traffic of its ``a p`` endpoints over the ``(g -
1) l`` global links the group has: the global taper ``r = a p / ((g - 1) l)`` is the down:up ratio of the
scale-out tier, as a Clos leaf's. Minimal routing crosses one global link; Valiant routing (and UGAL on
adversarial traffic) sends every packet "first to a randomly-chosen intermediate group" and then to its
destination (Kim 2008 Sec. 4.1): two global links, unless the intermediate group is the source's or the
destination's, which a random one of the ``g`` groups is with probability ``2/g``, so a packet crosses
``2 - 2/g`` global links on average: ``r_valiant = (2 - 2/g) r`` (twice as g grows, Kim's "load on the
global channels is doubled"; once between two groups, which have no third group to go through).

References
----------
.. [1] Kim, Dally, Scott, Abts, "Technology-Driven, Highly-Scalable Dragonfly Topology", ISCA 2008,
   doi:10.1109/ISCA.2008.19.
.. [2] De Sensi, Di Girolamo, McMahon, Roweth, Hoefler, "An In-Depth Analysis of the Slingshot
   Interconnect", SC20, doi:10.1109/SC41405.2020.00039 (arXiv:2008.08886): Rosetta, 64 ports of 200 Gb/s;
   groups of up to 32 switches; 16 endpoint, 31 local and 17 global ports per switch.
.. [3] NERSC, "Perlmutter Architecture" (docs.nersc.gov/systems/perlmutter/architecture): one dragonfly
   group per cabinet; a GPU cabinet has 32 switch blades and 128 nodes of 4 NICs, a CPU cabinet 16 switch
   blades and 256 nodes of 1 NIC; copper L0 (node-switch) and L1 (in-group) cables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError

__all__ = ["DragonflyShape", "balanced", "dragonfly_shape", "global_taper", "ROUTING_GLOBAL_LINKS"]


def _minimal_global_links(g: int) -> float:
    """Minimal routing: one global link between any two groups (Kim 2008 Sec. 4.1)."""
    return 1.0


def _valiant_global_links(g: int) -> float:
    """Valiant routing through a random one of the ``g`` groups: two global links, one where that group is
    the source's or the destination's (probability 2/g): ``2 - 2/g`` (Kim 2008 Sec. 4.1).

    >>> _valiant_global_links(2), _valiant_global_links(8)
    (1.0, 1.75)
    """
    return 2.0 - 2.0 / g


#: Mean global links a packet crosses between two of ``g`` groups, by routing (Kim 2008 Sec. 4.1).
ROUTING_GLOBAL_LINKS = {"minimal": _minimal_global_links, "valiant": _valiant_global_links}


@dataclass(frozen=True)
class DragonflyShape:
    """Switch and link counts of a dragonfly (Kim 2008 symbols).

    Attributes
    ----------
    radix : int
        Ports per switch at the link speed.
    p, a, h, g : int
        Endpoints per switch, switches per group, global ports per switch, groups.
    endpoints : int
        NIC ports cabled (N).
    routing : str
        ``minimal`` or ``valiant``.
    arc : int or None
        Global links between two groups as cabled (``scale_out.dragonfly.links_per_arc``); None: every
        global port used, ``floor(a h / (g - 1))``.
    """

    radix: int
    p: int
    a: int
    h: int
    g: int
    endpoints: int
    routing: str = "minimal"
    arc: int | None = None

    @property
    def switches(self) -> int:
        """g a."""
        return self.g * self.a

    @property
    def local_links(self) -> int:
        """g a (a - 1) / 2: one electrical link per pair of switches of a group."""
        return self.g * self.a * (self.a - 1) // 2

    @property
    def links_per_arc(self) -> int:
        """l: global links between two groups, as cabled, else floor(a h / (g - 1)) (0 for one group)."""
        if self.g == 1:
            return 0
        return self.arc if self.arc is not None else self.a * self.h // (self.g - 1)

    @property
    def global_links(self) -> int:
        """g (g - 1) / 2 x l: optical links between groups."""
        return self.g * (self.g - 1) // 2 * self.links_per_arc

    @property
    def group_endpoints(self) -> int:
        """a p: endpoints one group holds."""
        return self.a * self.p

    @property
    def bisection_links(self) -> int:
        """Links crossing the cut between two halves of the groups, floor(g/2) ceil(g/2) l; one group is
        cut between halves of its switches, floor(a/2) ceil(a/2) local links."""
        if self.g == 1:
            return (self.a // 2) * ((self.a + 1) // 2)
        return (self.g // 2) * ((self.g + 1) // 2) * self.links_per_arc

    @property
    def oversubscription(self) -> float:
        """The global taper under this routing: ``a p / ((g - 1) l)`` x global links crossed (1 for one
        group: every switch of it is one local hop from every other)."""
        return global_taper(self.a, self.p, self.g, self.links_per_arc, self.routing)


def global_taper(a: int, p: int, g: int, links_per_arc: int, routing: str = "minimal") -> float:
    """Down:up ratio of a dragonfly group's injection to its global links, ``a p / ((g - 1) l)``, times
    the mean global links a packet crosses (:data:`ROUTING_GLOBAL_LINKS`: minimal 1, Valiant 2 - 2/g).

    Examples
    --------
    Perlmutter's 14 GPU groups of 32 switches, 16 global ports each: l = floor(512 / 13) = 39, 507 global
    links for 512 endpoints; Valiant routing multiplies it by 2 - 2/14 = 1.857.

    >>> round(global_taper(32, 16, 14, 39), 4), round(global_taper(32, 16, 14, 39, "valiant"), 4)
    (1.0099, 1.8755)
    """
    if g <= 1:
        return 1.0
    return a * p / ((g - 1) * links_per_arc) * ROUTING_GLOBAL_LINKS[routing](g)


def balanced(radix: int) -> tuple[int, int, int]:
    """(p, a, h) of the balanced dragonfly of radix-``radix`` switches: ``a = 2p = 2h``, ``p = floor((k +
    1) / 4)`` (Kim 2008 Sec. 3.1).

    >>> balanced(64), balanced(48)
    ((16, 32, 16), (12, 24, 12))
    """
    p = (radix + 1) // 4
    return p, 2 * p, p


def _radix(spec: ClusterSpec) -> int:
    """Ports per switch at the link speed, one NIC's (``scale_out.radix``, else the switch's ports at
    :attr:`ClusterSpec.link_bytes_per_s`, as a Clos leaf's)."""
    so = spec.scale_out
    assert so is not None
    return so.radix or catalog.switch(so.leaf_switch).ports_at(spec.link_bytes_per_s)


def dragonfly_shape(spec: ClusterSpec) -> DragonflyShape:
    """The dragonfly ``spec``'s scale-out is built as: ``scale_out.dragonfly`` where given, else the
    balanced parameters of the switch's radix, the fewest whole groups that hold the endpoints.

    Raises
    ------
    ConfigError
        One line naming the field: ports over the radix, more groups than ``a h + 1``, groups that do not
        hold the endpoints.

    Examples
    --------
    >>> from aifabric.cluster.presets import preset
    >>> spec = preset("dgx-h100-superpod", nodes=128, **{"scale_out.topology": "dragonfly",
    ...     "scale_out.switch": "slingshot-rosetta", "scale_out.fabric": "ethernet",
    ...     "scale_out.nic": "slingshot-11-cassini", "scale_out.rail_optimized": None})
    >>> s = dragonfly_shape(spec)
    >>> (s.p, s.a, s.h, s.g, s.switches, s.local_links, s.global_links)
    (16, 32, 16, 2, 64, 992, 512)
    """
    so = spec.scale_out
    if so is None:
        raise ConfigError("scale_out: this cluster has no scale-out network")
    radix = _radix(spec)
    d = so.dragonfly
    p0, a0, h0 = balanced(radix)
    p = d.endpoints_per_switch or p0
    a = d.switches_per_group or a0
    h = d.global_links_per_switch or h0
    _check_ports(radix, p, a, h)
    n = spec.endpoint_ports
    g = d.groups or math.ceil(n / (a * p))
    _check_groups(n, p, a, h, g, blame=_groups_blame(spec, radix))
    _check_arc(d.links_per_arc, a, h, g)
    return DragonflyShape(radix, p, a, h, g, n, d.routing, d.links_per_arc)


def _check_ports(radix: int, p: int, a: int, h: int) -> None:
    """``p + (a - 1) + h <= k``: a switch has its endpoint, local and global ports."""
    if p + (a - 1) + h > radix:
        raise ConfigError(
            f"scale_out.dragonfly: {p} endpoint + {a - 1} local + {h} global ports per switch are more than "
            f"the switch's {radix} (p + (a - 1) + h <= radix)"
        )


def min_balanced_radix(n: int) -> int:
    """The smallest radix whose balanced dragonfly (:func:`balanced`) holds ``n`` endpoints: ``(a h + 1) a
    p >= n`` with ``a = 2p = 2h``, ``k = 4p - 1`` (Kim 2008 Sec. 3.1).

    >>> min_balanced_radix(6144), min_balanced_radix(72), min_balanced_radix(73)
    (27, 7, 11)
    """
    p = 1
    while (2 * p * p + 1) * 2 * p * p < n:
        p += 1
    return 4 * p - 1


def _groups_blame(spec: ClusterSpec, radix: int) -> str:
    """The field and value to name when a dragonfly needs more than ``a h + 1`` groups: ``groups`` or
    ``global_links_per_switch`` where the file gives them, else what set h, the radix (``scale_out.radix``,
    else the switch's ports), with the least radix whose balanced dragonfly holds the NIC ports."""
    so = spec.scale_out
    assert so is not None
    d = so.dragonfly
    if d.groups is not None:
        return f"scale_out.dragonfly.groups: {d.groups}"
    if d.global_links_per_switch is not None:
        return f"scale_out.dragonfly.global_links_per_switch: {d.global_links_per_switch}"
    field = (
        f"scale_out.radix: {so.radix}"
        if so.radix
        else f"scale_out.switch: {so.leaf_switch!r} of radix {radix}"
    )
    if d.endpoints_per_switch is None and d.switches_per_group is None:
        need = min_balanced_radix(spec.endpoint_ports)
        ports = spec.endpoint_ports
        return f"{field} (a balanced dragonfly of {ports} NIC ports needs a radix of at least {need})"
    return field


def _check_groups(n: int, p: int, a: int, h: int, g: int, *, blame: str) -> None:
    """At most ``a h + 1`` groups (one global link per pair of groups), and enough of them for ``n``;
    ``blame`` opens the line (the field and value that set the limit)."""
    if g > a * h + 1:
        raise ConfigError(
            f"{blame}: {g} groups need at least one global link to each other group, more than a h + 1 = "
            f"{a * h + 1} ({a} switches x {h} global ports + 1)"
        )
    if g * a * p < n:
        raise ConfigError(
            f"scale_out.dragonfly.groups: {g} groups of {a} switches x {p} endpoints hold {g * a * p} NIC "
            f"ports, fewer than the cluster's {n}"
        )


def _check_arc(links_per_arc: int | None, a: int, h: int, g: int) -> None:
    """``links_per_arc`` as cabled: a pair of groups to join (two groups at least), and no more global
    ports than a group's ``a h`` over its ``g - 1`` arcs."""
    if links_per_arc is None:
        return
    if g == 1:
        raise ConfigError(
            f"scale_out.dragonfly.links_per_arc: {links_per_arc} links between each pair of groups, but the "
            "dragonfly is one group: there is no pair of groups to cable (leave links_per_arc out)"
        )
    if links_per_arc * (g - 1) > a * h:
        raise ConfigError(
            f"scale_out.dragonfly.links_per_arc: {links_per_arc} links to each of {g - 1} other groups "
            f"need {links_per_arc * (g - 1)} global ports a group, more than its a h = {a} x {h} = {a * h}"
        )
