"""Closed-form alpha-beta costs of the collective algorithms, as pure functions.

Symbols: ``S`` bytes per rank (see each function), ``n`` ranks, ``B`` bytes/s per direction of the slowest
link a rank uses, ``alpha`` seconds per algorithm step. Every function returns seconds. These are the
textbook costs (Thakur, Rabenseifner & Gropp 2005; Patarasuk & Yuan 2009); :mod:`aifabric.engines.formula`
combines them with NCCL's per-tier latencies and effective bandwidths.
"""

from __future__ import annotations

import math

__all__ = [
    "direct_all_to_all_time",
    "double_binary_tree_all_reduce_time",
    "hierarchical_all_reduce_time",
    "pipelined_chain_time",
    "ring_all_gather_time",
    "ring_all_reduce_time",
    "ring_reduce_scatter_time",
]


def _check(message_bytes: float, n_ranks: int, link_bytes_per_s: float) -> None:
    if n_ranks < 1:
        raise ValueError(f"n_ranks must be >= 1, got {n_ranks}")
    if message_bytes < 0:
        raise ValueError(f"message_bytes must be >= 0, got {message_bytes}")
    if not link_bytes_per_s > 0:
        raise ValueError(f"link_bytes_per_s must be > 0, got {link_bytes_per_s}")


def ring_all_reduce_time(
    message_bytes: float, n_ranks: int, link_bytes_per_s: float, *, hop_latency_s: float = 0.0
) -> float:
    """Time for one ring AllReduce, in seconds.

    A ring ReduceScatter followed by a ring AllGather: 2 (n - 1) steps, each moving S / n bytes over every
    ring link::

        T = 2 (n - 1) alpha + 2 (n - 1) / n * S / B

    Parameters
    ----------
    message_bytes : float
        S, size of the buffer on each rank, bytes.
    n_ranks : int
        n, ranks in the ring (>= 1; one rank costs nothing).
    link_bytes_per_s : float
        B, unidirectional bandwidth of the slowest ring link, bytes/s.
    hop_latency_s : float
        alpha, fixed cost of one ring step, seconds.

    Raises
    ------
    ValueError
        If ``n_ranks < 1``, ``message_bytes < 0`` or ``link_bytes_per_s <= 0``.

    Notes
    -----
    The bandwidth term tends to 2 S / B as n grows: adding ranks barely changes the time of large buffers.
    The two terms are equal at S = n B alpha (2 MB for n = 8, B = 50 GB/s, alpha = 5 us).

    References
    ----------
    .. [1] P. Patarasuk and X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
       workstations", J. Parallel Distrib. Comput. 69(2):117-124, 2009. doi:10.1016/j.jpdc.2008.09.002

    Examples
    --------
    >>> round(ring_all_reduce_time(1e9, 8, 50e9) * 1e3, 3)  # ms
    35.0

    The seed lesson: 140 GB over 8 GPUs at NVLink's 900 GB/s (its convention): 0.27 s.

    >>> round(ring_all_reduce_time(140e9, 8, 900e9), 2)
    0.27
    """
    _check(message_bytes, n_ranks, link_bytes_per_s)
    if n_ranks == 1:
        return 0.0
    steps = 2 * (n_ranks - 1)
    return steps * hop_latency_s + steps / n_ranks * message_bytes / link_bytes_per_s


def ring_reduce_scatter_time(
    message_bytes: float, n_ranks: int, link_bytes_per_s: float, *, hop_latency_s: float = 0.0
) -> float:
    """Ring ReduceScatter of a buffer of S bytes per rank (output S / n): seconds.

    ``T = (n - 1) alpha + (n - 1) / n * S / B`` (same symbols as :func:`ring_all_reduce_time`).

    >>> round(ring_reduce_scatter_time(1e9, 8, 50e9) * 1e3, 2)
    17.5
    """
    _check(message_bytes, n_ranks, link_bytes_per_s)
    if n_ranks == 1:
        return 0.0
    return (n_ranks - 1) * hop_latency_s + (n_ranks - 1) / n_ranks * message_bytes / link_bytes_per_s


def ring_all_gather_time(
    message_bytes: float, n_ranks: int, link_bytes_per_s: float, *, hop_latency_s: float = 0.0
) -> float:
    """Ring AllGather to an output of S bytes per rank (input S / n): seconds.

    ``T = (n - 1) alpha + (n - 1) / n * S / B``.

    >>> round(ring_all_gather_time(1e9, 8, 50e9) * 1e3, 2)
    17.5
    """
    return ring_reduce_scatter_time(message_bytes, n_ranks, link_bytes_per_s, hop_latency_s=hop_latency_s)


def hierarchical_all_reduce_time(
    message_bytes: float,
    ranks_per_domain: int,
    n_domains: int,
    intra_bytes_per_s: float,
    inter_bytes_per_s: float,
    *,
    intra_hop_latency_s: float = 0.0,
    inter_hop_latency_s: float = 0.0,
) -> tuple[float, float]:
    """Hierarchical AllReduce: ring RS inside each domain, ring AR of the 1/g shards across domains on
    all g rails at once, ring AG inside. Returns ``(intra_s, inter_s)``; the total is their sum.

    ::

        T_intra = 2 [ (g - 1) alpha_i + (g - 1)/g * S / B_i ]
        T_inter = 2 (N - 1) alpha_o + 2 (N - 1)/N * (S / g) / B_o

    with g ranks per domain, N domains, B_i the scale-up and B_o the per-GPU NIC bandwidth (per direction).

    Examples
    --------
    The seed lesson, 140 GB on 128 nodes of 8 with its figures (900 GB/s NVLink, 100 GB/s NIC): 0.27 s +
    0.35 s = 0.62 s.

    >>> a, b = hierarchical_all_reduce_time(140e9, 8, 128, 900e9, 100e9)
    >>> round(a, 2), round(b, 2), round(a + b, 2)
    (0.27, 0.35, 0.62)
    """
    intra = ring_reduce_scatter_time(
        message_bytes, ranks_per_domain, intra_bytes_per_s, hop_latency_s=intra_hop_latency_s
    )
    intra *= 2
    inter = ring_all_reduce_time(
        message_bytes / ranks_per_domain, n_domains, inter_bytes_per_s, hop_latency_s=inter_hop_latency_s
    )
    return intra, inter


def double_binary_tree_all_reduce_time(
    message_bytes: float, n_ranks: int, link_bytes_per_s: float, *, hop_latency_s: float = 0.0
) -> float:
    """Double binary tree AllReduce (Sanders, Speck & Traeff 2009; NCCL 2.4), seconds.

    Two complementary trees each reduce and broadcast half of the buffer, pipelined; an inner node of one
    tree receives from two children and sends to its parent, then the reverse, so a rank moves about 2 S
    per direction::

        T = 2 ceil(log2 n) alpha + 2 S / B    (algbw = B / 2, as in NCCL's tree model)

    References
    ----------
    .. [1] P. Sanders, J. Speck, J. L. Traeff, "Two-tree algorithms for full bandwidth broadcast,
       reduction and scan", Parallel Computing 35(12):581-594, 2009. doi:10.1016/j.parco.2009.09.001

    >>> round(double_binary_tree_all_reduce_time(1e9, 16, 50e9) * 1e3, 1)
    40.0
    """
    _check(message_bytes, n_ranks, link_bytes_per_s)
    if n_ranks == 1:
        return 0.0
    return 2 * math.ceil(math.log2(n_ranks)) * hop_latency_s + 2 * message_bytes / link_bytes_per_s


def direct_all_to_all_time(
    message_bytes: float,
    n_ranks: int,
    ranks_per_domain: int,
    intra_bytes_per_s: float,
    inter_bytes_per_s: float,
    *,
    latency_s: float = 0.0,
) -> float:
    """Direct (pairwise, all peers at once) AllToAll of a send buffer of S bytes per rank, seconds.

    A rank keeps S/n, sends S (g - 1)/n to its g - 1 domain peers over scale-up and S (n - g)/n to the rest
    over its NIC; both proceed at once, so::

        T = alpha + max( S (g-1)/n / B_i , S (n-g)/n / B_o )

    Notes
    -----
    On N nodes of g GPUs the NIC term gives busbw = B_o (n-1)/(n-g) ~ B_o N/(N-1), as the NCCL maintainers
    state (NVIDIA/nccl-tests #130, #267): AllToAll cannot aggregate several NICs per GPU.

    >>> round(direct_all_to_all_time(1e9, 16, 8, 370.8e9, 50e9) * 1e3, 2)  # 2 nodes x 8, 400G NICs
    10.0
    """
    _check(message_bytes, n_ranks, inter_bytes_per_s)
    if n_ranks == 1:
        return 0.0
    g = min(ranks_per_domain, n_ranks)
    t_intra = message_bytes * (g - 1) / n_ranks / intra_bytes_per_s if g > 1 else 0.0
    t_inter = message_bytes * (n_ranks - g) / n_ranks / inter_bytes_per_s
    return latency_s + max(t_intra, t_inter)


def pipelined_chain_time(
    message_bytes: float, n_ranks: int, link_bytes_per_s: float, *, hop_latency_s: float = 0.0
) -> float:
    """Pipelined chain (ring) Broadcast or Reduce: every link carries S once, seconds.

    ``T = (n - 1) alpha + S / B`` (pipelining hides all but one copy of the data).

    >>> round(pipelined_chain_time(1e9, 8, 50e9) * 1e3, 1)
    20.0
    """
    _check(message_bytes, n_ranks, link_bytes_per_s)
    if n_ranks == 1:
        return 0.0
    return (n_ranks - 1) * hop_latency_s + message_bytes / link_bytes_per_s
