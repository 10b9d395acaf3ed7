"""The bus bandwidth no nccl-tests row can exceed: what a rank's links carry.

Without in-network reduction an all_reduce makes every rank send at least ``2 (n - 1) / n x S`` bytes
(Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of workstations", JPDC 69(2), 2009:
the bandwidth lower bound of all-reduce), and nccl-tests' busbw is exactly ``2 (n - 1) / n x S / t``
(NVIDIA/nccl-tests doc/PERFORMANCE.md), so ``busbw <= B``, a rank's line rate per direction. Only where the
network reduces (NVLS on an NVSwitch whose GPU and switch both reduce, SHARP in every scale-out switch) may a
rank send and receive just ``S``, and the weaker receive bound below holds.

Every rank must receive, over its own links, a least number of bytes whatever the algorithm:

* all_reduce, broadcast, reduce, send_recv: its ``S``-byte result (or, for reduce, the root its ``S``
  bytes); in-network reduction (NVLS, SHARP) makes it ``S``, no algorithm less for ``n >= 2``, since each
  element of the result depends on the other ranks' elements;
* all_gather, reduce_scatter, all_to_all: the ``(n - 1) / n`` of ``S`` the other ranks hold.

A rank receives at most at its links' line rate ``B`` per direction: the scale-up link (NVLink, Infinity
Fabric) plus its share of the node's NICs (a loose bound: the sum of every link it has); a GPU whose peers
meet over PCIe (``scale_up.kind: pcie``) has its PCIe x16 link alone, since its NICs' bytes cross it too
(GPUDirect RDMA reads and writes the GPU's memory over that link). So
``algbw = S / t <= B`` (``B n / (n - 1)`` for the second group), and with nccl-tests' bus-bandwidth factor
(:func:`~aifabric.collectives.ops.busbw_factor`)::

    busbw <= B x 2 (n - 1) / n   (all_reduce with in-network reduction)
    busbw <= B                   (every other case)

Two H100s of an HGX board (NVLS): ``B`` = 450 GB/s of NVLink 4 plus 50 GB/s of a 400 Gb/s NIC, so no
2-rank all_reduce row can read above 500 GB/s busbw; one at 21,475 GB/s is a broken measurement (a timer,
``-c 0`` with few iterations, a size or rank count other than the header's), not a fast fabric. Eight
RTX 4090s on PCIe Gen4 (32 GB/s, no NVLS): 32 GB/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from aifabric import catalog
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.ops import Collective, busbw_factor

__all__ = ["LinkBound", "link_bound", "reduces_in_network"]

#: Collectives in which a rank receives only what the others hold, ``(n - 1) / n`` of ``S``.
_SHARE_OF_OTHERS = (Collective.ALL_GATHER, Collective.REDUCE_SCATTER, Collective.ALL_TO_ALL)


@dataclass(frozen=True)
class LinkBound:
    """The highest busbw a row of ``op`` on ``n_ranks`` ranks can read on a cluster's links, bytes/s.

    ``scale_up_bytes_per_s`` and ``scale_out_bytes_per_s`` are one rank's line rates per direction (its
    scale-up link, its share of the NICs); ``busbw_bytes_per_s`` the bound (module docstring).
    """

    op: Collective
    n_ranks: int
    scale_up_bytes_per_s: float
    scale_out_bytes_per_s: float
    busbw_bytes_per_s: float

    def describe(self) -> str:
        """The bound and where it comes from, in GB/s (1e9 B/s)."""
        links = f"{self.scale_up_bytes_per_s / 1e9:.0f} GB/s scale-up"
        if self.scale_out_bytes_per_s > 0:
            links += f" + {self.scale_out_bytes_per_s / 1e9:.0f} GB/s of NICs"
        multiple = self.busbw_bytes_per_s / (self.scale_up_bytes_per_s + self.scale_out_bytes_per_s)
        return (
            f"{self.busbw_bytes_per_s / 1e9:.0f} GB/s busbw: {links} per rank and direction x "
            f"{multiple:.2f} ({self.op.value}, {self.n_ranks} ranks)"
        )


def link_bound(op: str | Collective, n_ranks: int, spec: ClusterSpec) -> LinkBound | None:
    """The busbw bound of ``op`` on ``n_ranks`` ranks of ``spec`` (module docstring); None for one rank
    (nothing crosses a link) or a cluster without a scale-up line rate.

    >>> from aifabric.cluster.presets import preset
    >>> b = link_bound("all_reduce", 2, preset("h100-ib-2node", nodes=1))
    >>> round(b.busbw_bytes_per_s / 1e9)
    500
    """
    op = Collective.parse(op)
    if n_ranks < 2:
        return None
    up = spec.scaleup_line_rate_bytes_per_s
    out = 0.0 if spec.scale_up.kind == "pcie" else spec.nic_line_rate_bytes_per_s  # NICs behind that link
    if not up > 0:
        return None
    share = (n_ranks - 1) / n_ranks if op in _SHARE_OF_OTHERS else 1.0
    factor = busbw_factor(op, n_ranks)
    if op is Collective.ALL_REDUCE and not reduces_in_network(spec, n_ranks):
        factor = 1.0  # each rank sends 2 (n - 1) / n x S: busbw <= B (module docstring)
    busbw = (up + out) / share * factor
    return LinkBound(op, n_ranks, up, out, busbw)


def reduces_in_network(spec: ClusterSpec, n_ranks: int) -> bool:
    """Whether a network ``n_ranks`` packed ranks of ``spec`` cross can sum buffers in flight: NVLS (a GPU
    with ``nvls`` on an NVSwitch link with ``in_switch_reduction``, accelerators.yaml / scale_up.yaml) or,
    for ranks on more than one node, SHARP (every scale-out tier's switch with ``in_network_reduction``,
    switches.yaml; NCCL's CollNet needs the whole tree).

    >>> from aifabric.cluster.presets import preset
    >>> reduces_in_network(preset("h100-ib-2node", nodes=1), 2)
    True
    """
    nvls = spec.accelerator_spec.nvls and spec.scaleup_link.in_switch_reduction
    if nvls and spec.scale_up.kind == "nvswitch":
        return True
    so = spec.scale_out
    if so is None or n_ranks <= spec.gpus_per_node:
        return False
    tiers = list(so.tier_switches.values())[: so.tiers]
    return all(catalog.switch(key).in_network_reduction for key in tiers)
