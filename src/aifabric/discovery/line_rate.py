"""The bus bandwidth no nccl-tests row can exceed: what a rank's links carry.

Every rank must receive, over its own links, a least number of bytes whatever the algorithm:

* all_reduce, broadcast, reduce, send_recv: its ``S``-byte result (or, for reduce, the root its ``S``
  bytes); in-network reduction (NVLS, SHARP) makes it ``S``, no algorithm less for ``n >= 2``, since each
  element of the result depends on the other ranks' elements;
* all_gather, reduce_scatter, all_to_all: the ``(n - 1) / n`` of ``S`` the other ranks hold.

A rank receives at most at its links' line rate ``B`` per direction: the scale-up link (NVLink, Infinity
Fabric, PCIe) plus its share of the node's NICs (a loose bound: the sum of every link it has). So
``algbw = S / t <= B`` (``B n / (n - 1)`` for the second group), and with nccl-tests' bus-bandwidth factor
(:func:`~aifabric.collectives.ops.busbw_factor`)::

    busbw <= B x 2 (n - 1) / n   (all_reduce)
    busbw <= B                   (every other collective)

Two H100s: ``B`` = 450 GB/s of NVLink 4 plus 50 GB/s of a 400 Gb/s NIC, so no 2-rank all_reduce row can
read above 500 GB/s busbw; one at 21,475 GB/s is a broken measurement (a timer, ``-c 0`` with few
iterations, a size or rank count other than the header's), not a fast fabric.
"""

from __future__ import annotations

from dataclasses import dataclass

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.ops import Collective, busbw_factor

__all__ = ["LinkBound", "link_bound"]

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
        factor = busbw_factor(self.op, self.n_ranks)
        share = (self.n_ranks - 1) / self.n_ranks if self.op in _SHARE_OF_OTHERS else 1.0
        return (
            f"{self.busbw_bytes_per_s / 1e9:.0f} GB/s busbw: {links} per rank and direction x "
            f"{factor / share:.2f} ({self.op.value}, {self.n_ranks} ranks)"
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
    out = spec.nic_line_rate_bytes_per_s
    if not up > 0:
        return None
    share = (n_ranks - 1) / n_ranks if op in _SHARE_OF_OTHERS else 1.0
    busbw = (up + out) / share * busbw_factor(op, n_ranks)
    return LinkBound(op, n_ranks, up, out, busbw)
