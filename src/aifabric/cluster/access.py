"""Leaf-spine shape of the networks a node joins through ports of its own: front-end, storage, in-band.

Each such network is two tiers at most. Its endpoints (the nodes' ports, and on a storage fabric the storage
appliances' ports) split over ``groups`` groups of leaves: one group, or, when every node is dual-homed, one
per node port, port ``k`` of every node (and ``1 / groups`` of the appliances' ports) on group ``k`` ("two
200 GbE ports to two separate switches to provide redundancy", NVIDIA HGX AI Factory Enterprise RA, Network
Logical Architecture). A leaf of ``radix`` ports splits them down:up at the network's ratio ``r`` (exactly
where integer ports allow, as the back-end does, :func:`aifabric.cluster.clos.exact_split`)::

    leaves per group = ceil(endpoints per group / down)
    leaves           = groups x leaves per group
    spines           = ceil(leaves x up / radix)      (none when each group is one leaf)
    leaf-spine cables = leaves x up

A group held by one leaf needs no spine: a node's port ``k`` and the appliances' port ``k`` meet on it.
32 DGX B300 with two 400G BlueField-3 ports each on 128 x 400G SN5600 leaves at 1:1 (64 down): one leaf per
port, 2 switches, no spine (Kedios B300 report: "2x Spectrum-4" for the Ethernet side of 32 nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.clos import exact_split

__all__ = ["AccessShape", "access_radix", "access_shape"]


@dataclass(frozen=True)
class AccessShape:
    """Switches and leaf-spine cables of one access network (formulas in the module docstring)."""

    leaves: int
    spines: int
    uplinks: int

    @property
    def switches(self) -> int:
        """Leaves + spines."""
        return self.leaves + self.spines


def access_radix(switch_key: str, port_bytes_per_s: float) -> int:
    """Ports of ``switch_key`` at the node ports' speed (:meth:`~aifabric.catalog.loader.SwitchSpec.ports_at`:
    breakout counted where the port is slower than the switch's, else the switch's own ports).

    >>> access_radix("spectrum-4-sn5600-400g", 50e9), access_radix("sn4600-frontend", 12.5e9)
    (128, 64)
    """
    return catalog.switch(switch_key).ports_at(port_bytes_per_s)


def _split(radix: int, ratio: float) -> tuple[int, int]:
    """(down, up) ports of a leaf: the exact integer split of ``ratio`` where one exists, else the nearest
    (down rounded down, up enough to carry ``down / ratio``)."""
    split = exact_split(radix, ratio)
    if split:
        return split
    down = int(radix * ratio // (ratio + 1))
    return down, math.ceil(down / ratio)


def access_shape(endpoints_per_group: int, groups: int, radix: int, ratio: float) -> AccessShape:
    """Leaves, spines and leaf-spine cables for ``groups`` groups of ``endpoints_per_group`` endpoints.

    Raises
    ------
    ValueError
        If ``groups < 1``, ``radix < 2`` or ``endpoints_per_group < 0``.

    Examples
    --------
    500 nodes x 2 storage ports at 100GbE, dual-homed, on 64-port leaves at 1:1 (32 down, 32 up): 16 leaves
    per port, 32 leaves, 32 x 32 = 1,024 uplinks on 16 spines.

    >>> access_shape(500, 2, 64, 1.0)
    AccessShape(leaves=32, spines=16, uplinks=1024)
    >>> access_shape(32, 2, 128, 1.0)
    AccessShape(leaves=2, spines=0, uplinks=0)
    """
    if groups < 1 or radix < 2 or endpoints_per_group < 0:
        raise ValueError(
            f"groups >= 1, radix >= 2, endpoints >= 0 needed; got {groups}, {radix}, {endpoints_per_group}"
        )
    if endpoints_per_group == 0:
        return AccessShape(0, 0, 0)
    down, up = _split(radix, ratio)
    per_group = math.ceil(endpoints_per_group / down)
    leaves = groups * per_group
    if per_group == 1:
        return AccessShape(leaves, 0, 0)
    return AccessShape(leaves, math.ceil(leaves * up / radix), leaves * up)
