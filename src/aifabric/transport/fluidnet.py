"""A time-stepped fluid model of flows crossing queues, with the transport's flow and congestion control.

Where the max-min flow engine gives every flow its fair share instantly, this model keeps what transports
do between the senders and the bottleneck: a queue at the egress of every link, PFC pauses or credits that
stop a link when the downstream ingress fills, ECN marking, sender rate (DCQCN) or window (receiver-driven
admission, NSCC) control, and trimming on lossy fabrics. It runs in steps of ``dt`` on a small set of
links (every flow's path as an ordered list of link ids) and reports, per link, the queue and pause time,
and per flow, the completion time, the bytes trimmed and retransmitted, and whether it was a victim.

One step (all vectorised over (flow, hop) entries; ``cap dt`` is what a link can send in a step):

1. Senders offer ``min(left, rate dt, window - in flight)`` (RCCC: ``min(left, rate dt, credit)``, the
   credit growing by the receiver's ``cap dt / active senders`` each step, at most 1.5 BDP); an entry at
   hop k >= 1 offers its queue. A chained flow starts one base RTT after its predecessor's last byte.
2. Link ``l`` sends ``min(sum of offers, cap_l dt, allowance_l)``, shared in proportion to the offers
   (the fluid FIFO approximation). The allowance is 0 while PFC pauses the link, the free credit
   ``buffer - ingress`` on a credit-based link (InfiniBand), unbounded otherwise.
3. What a link sent joins the flow's queue at its next hop, or is delivered at the last one.
4. Lossy fabrics: an egress queue above its buffer trims the excess of this step's arrivals. The
   header (64 B of each 4 KiB) still crosses the trimming link, ahead of data in the next step; it
   reaches the receiver, whose NACK reaches the sender one base RTT after the trim (UET packet trimming,
   congestion-control.md Sec. 3.6; htsim ``processNack``): until then the bytes stay in flight and hold
   the window, then they leave it and are sent again. A trimmed byte costs its sender's link twice and
   the trimming link only its header, so a flow takes at least ``(size + trimmed) / line rate`` and a
   link at least ``(bytes through it + headers) / capacity``.
5. PFC: a link is paused while the bytes it brought into the downstream switch (its ingress queue)
   exceed XOFF, until they fall below XON (hysteresis, 802.1Qbb). The pause acts one step later, so the
   headroom must cover ``cap dt``; the run reports the peak ingress to compare with XOFF + headroom.
6. Congestion control updates the senders (DCQCN fluid equations with marking probability
   ``1 - prod(1 - p_l)`` over the path; window control from queueing delay and NACKs).

Propagation delay is not modelled hop by hop (a byte moves at most one hop per step); acknowledgements
return ``base_rtt`` after delivery, which is what windows see.

References
----------
.. [1] congestion-control.md, Sec. 2.3 (flow-level approximation of PFC pause spreading and head-of-line
   blocking, [own design]), Sec. 3.4 (NSCC), Sec. 4 (receiver-driven admission).
.. [2] Y. Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015 (DCQCN, PFC
   head-of-line blocking and victim flows).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from aifabric.budget import check_memory
from aifabric.errors import ConfigError
from aifabric.transport.dcqcn import dcqcn_derivatives, red_probability
from aifabric.transport.params import DcqcnParams, dcqcn_preset

__all__ = [
    "TRANSPORTS",
    "FluidConfig",
    "FluidResult",
    "LinkTrace",
    "Transport",
    "fluid_bytes",
    "simulate_fluid",
    "transport",
]


@dataclass(frozen=True)
class Transport:
    """How a fabric moves bytes: link-level flow control, end-to-end congestion control, loss handling.

    Attributes
    ----------
    name : str
    flow_control : {"pfc", "credit", "none"}
        ``pfc``: XOFF/XON pauses (lossless Ethernet); ``credit``: the upstream sends only into free
        downstream buffer (InfiniBand, lossless); ``none``: best effort (lossy).
    congestion_control : {"none", "dcqcn", "window", "nscc", "rccc"}
        ``window``: the receiver grants (clear-to-send) a fixed in-flight budget, shared by its active
        senders (receiver-driven admission, Meta);
        ``nscc``: a window cut by NACKs and queueing delay above target (UET NSCC, htsim ``uec.cpp``);
        ``rccc``: the receiver issues credit at its own link's rate, split among its active senders; a
        sender starts with one BDP of speculative credit, drops what is left of it at its first NACK
        (``stopSpeculating``) and holds at most 1.5 BDP (UET RCCC, htsim ``uec.cpp``
        ``can_send_RCCC``/``initRccc``; congestion-control.md Sec. 3.5).
    trimming : bool
        A full queue trims payloads (the header reaches the receiver, which NACKs; UET).
    description : str
    dcqcn_preset : str
        The catalogue's DCQCN preset (``dcqcn`` only; :class:`FluidConfig` ``dcqcn`` overrides it).
    """

    name: str
    flow_control: str
    congestion_control: str
    trimming: bool
    description: str
    dcqcn_preset: str = "conext16"


#: The transports this model knows, by name (the CLI's ``--transport`` choices).
TRANSPORTS: dict[str, Transport] = {
    t.name: t
    for t in (
        Transport("ib", "credit", "none", False, "InfiniBand: credit-based link flow control, lossless"),
        Transport("roce-pfc", "pfc", "none", False, "RoCEv2 with PFC only (Meta's production setting)"),
        Transport("roce-dcqcn", "pfc", "dcqcn", False, "RoCEv2 with PFC and DCQCN"),
        Transport(
            "roce-dcqcn-tuned",
            "pfc",
            "dcqcn",
            False,
            "RoCEv2 with PFC and DCQCN tuned for stability (R_AI 10 Mb/s, Kmax 1000 KB; CoNEXT'16)",
            "conext16-stable",
        ),
        Transport(
            "receiver-driven",
            "pfc",
            "window",
            False,
            "RoCEv2 PFC only + receiver clear-to-send admission (Meta)",
        ),
        Transport(
            "uet-lossy", "none", "nscc", True, "Ultra Ethernet: NSCC window over a lossy fabric with trimming"
        ),
        Transport("uet-lossless", "pfc", "nscc", False, "Ultra Ethernet: NSCC window over a PFC fabric"),
        Transport(
            "uet-rccc",
            "none",
            "rccc",
            True,
            "Ultra Ethernet: receiver credits (RCCC) paced at the receiver's line rate, lossy with trimming",
        ),
    )
}


def transport(name: str) -> Transport:
    """The transport named ``name``.

    Raises
    ------
    ConfigError
        Naming the value and the known transports.
    """
    try:
        return TRANSPORTS[name]
    except KeyError:
        raise ConfigError(f"transport: unknown {name!r}; known: {', '.join(TRANSPORTS)}") from None


@dataclass(frozen=True)
class FluidConfig:
    """Knobs of :func:`simulate_fluid` (SI units).

    Attributes
    ----------
    dt_s : float
        Step, seconds (default 0.5 us: 25 KB per step at 400 Gb/s).
    pfc_xoff_bytes, pfc_xon_bytes : float
        PFC thresholds per ingress queue: htsim's RoCE defaults, 15 and 12 packets of 4 KiB
        (Broadcom/csg-htsim ``main_roce.cpp`` l.69, congestion-control.md Sec. 1.5).
    credit_buffer_bytes : float
        Receive buffer per link on a credit-based fabric; the default equals the PFC XOFF threshold so
        that the two fabrics differ only by their mechanism [assumption]. It must cover one step of a
        link's rate (``cap dt``) or the step discretisation caps the link (see :mod:`.wire`).
    lossy_buffer_bytes : float or None
        Egress buffer per link on a lossy fabric before trimming; default one bandwidth-delay product of
        the link, ``capacity x base_rtt_s`` (htsim's automatic queue sizing with trimming,
        ``DEFAULT_TRIMMING_QUEUESIZE_FACTOR = 1`` x BDP, ultraethernet/uet-htsim
        ``htsim/sim/datacenter/main_uec.cpp`` l.40 and l.642-682): a full queue then delays by one RTT,
        above NSCC's target of 0.75 RTT.
    header_bytes : float
        What is left of a trimmed packet: its header, 64 B (htsim ``main_uec.cpp``, congestion-control.md
        Sec. 3.6). It still crosses the trimming link, ahead of data (its own traffic class).
    base_rtt_s : float
        Round trip without queueing: NSCC's reference network, 12 us (htsim ``uec.cpp`` initNsccParams).
    window_bytes : float or None
        In-flight budget per receiver for ``window`` (Meta: channels x channel buffer) and the starting
        window per flow for ``nscc``; default one bandwidth-delay product of the link (rate x base RTT).
    dcqcn : DcqcnParams or None
        DCQCN parameters (default: the transport's preset, ``conext16`` for ``roce-dcqcn``, whose RED
        profile (5-200 KB) marks before the PFC thresholds pause, the paper's own assumption; its
        capacity is not used, each flow's line rate is its first link's).
    mss_bytes : float
        NSCC's segment, 4096 B (htsim ``uec.cpp``).
    max_time_s : float
        The run stops here (unfinished flows end at NaN).
    trace_link : int or None
        A link whose queue and throughput are sampled every step (:class:`LinkTrace`).
    """

    dt_s: float = 0.5e-6
    pfc_xoff_bytes: float = 15 * 4096.0
    pfc_xon_bytes: float = 12 * 4096.0
    credit_buffer_bytes: float = 15 * 4096.0
    lossy_buffer_bytes: float | None = None
    header_bytes: float = 64.0
    base_rtt_s: float = 12e-6
    window_bytes: float | None = None
    dcqcn: DcqcnParams | None = None
    mss_bytes: float = 4096.0
    max_time_s: float = 1.0
    trace_link: int | None = None

    def __post_init__(self) -> None:
        for name in (
            "dt_s",
            "pfc_xoff_bytes",
            "credit_buffer_bytes",
            "base_rtt_s",
            "header_bytes",
            "mss_bytes",
        ):
            value = getattr(self, name)
            if not (value > 0 and math.isfinite(value)):
                raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
        if not self.header_bytes < self.mss_bytes:
            raise ConfigError(f"header_bytes must be < mss_bytes, got {self.header_bytes!r}")
        if not 0 <= self.pfc_xon_bytes <= self.pfc_xoff_bytes:
            raise ConfigError(f"pfc_xon_bytes must be in [0, pfc_xoff_bytes], got {self.pfc_xon_bytes!r}")
        if self.lossy_buffer_bytes is not None and not (
            self.lossy_buffer_bytes > 0 and math.isfinite(self.lossy_buffer_bytes)
        ):
            raise ConfigError(
                f"lossy_buffer_bytes must be a finite number > 0, got {self.lossy_buffer_bytes}"
            )
        if self.window_bytes is not None and not self.window_bytes > 0:
            raise ConfigError(f"window_bytes must be > 0, got {self.window_bytes!r}")
        if not self.max_time_s > 0:
            raise ConfigError(f"max_time_s must be > 0, got {self.max_time_s!r}")


@dataclass(frozen=True)
class LinkTrace:
    """Queue (bytes, egress of the link), throughput and each flow's rate (bytes/s) on one link, every step.

    ``flows`` are the ids of the flows that cross the link; ``flow_rate_bytes_per_s`` has shape
    ``(n_steps, flows.size)``.
    """

    link: int
    time_s: np.ndarray
    queue_bytes: np.ndarray
    throughput_bytes_per_s: np.ndarray
    paused: np.ndarray
    flows: np.ndarray
    flow_rate_bytes_per_s: np.ndarray


@dataclass(frozen=True)
class FluidResult:
    """Outcome of :func:`simulate_fluid`. Times in seconds, sizes in bytes; arrays are per flow or per link.

    Attributes
    ----------
    transport : str
    flow_end_s : ndarray, shape (n_flows,)
        When each flow's last byte was delivered (NaN if not by ``max_time_s``).
    flow_ideal_s : ndarray, shape (n_flows,)
        Its contention-free time: size / the slowest link of its path (from its start).
    trimmed_bytes : ndarray, shape (n_flows,)
        Payload trimmed, hence sent again.
    link_pause_s : ndarray, shape (n_links,)
        Time each link was paused (PFC), or the time-equivalent it could not send for lack of credit.
    link_peak_queue_bytes, link_mean_queue_bytes : ndarray, shape (n_links,)
        Egress queue of each link: peak, and mean over the run.
    link_peak_ingress_bytes : ndarray, shape (n_links,)
        Peak of what each link brought into the downstream switch (the PFC ingress counter).
    victims : ndarray of int
        Flows slowed by more than 10 % whose paths cross a paused link but no congested one: head-of-line
        blocking.
    congested_links : ndarray of int
        The roots: switch egress links that sent at full capacity for more than a quarter of the run, or
        trimmed (a sender's own NIC link is never a root).
    makespan_s : float
    trace : LinkTrace or None
    steps : int
    flow_bytes : ndarray, shape (n_flows,)
    flow_start_s : ndarray, shape (n_flows,)
        When each flow started (a chained flow: its predecessor's end + one base RTT; inf if never).
    """

    transport: str
    flow_end_s: np.ndarray
    flow_ideal_s: np.ndarray
    trimmed_bytes: np.ndarray
    link_pause_s: np.ndarray
    link_peak_queue_bytes: np.ndarray
    link_mean_queue_bytes: np.ndarray
    link_peak_ingress_bytes: np.ndarray
    victims: np.ndarray
    congested_links: np.ndarray
    makespan_s: float
    trace: LinkTrace | None
    steps: int

    flow_bytes: np.ndarray
    flow_start_s: np.ndarray

    @property
    def retransmission_fraction(self) -> float:
        """Bytes sent again / bytes of the flows (0 on lossless fabrics)."""
        return float(self.trimmed_bytes.sum() / self.flow_bytes.sum())

    @property
    def slowdown(self) -> np.ndarray:
        """Flow completion time (end - start) of each flow over its contention-free time (>= 1)."""
        return (self.flow_end_s - self.flow_start_s) / self.flow_ideal_s


class _Entries:
    """(flow, hop) pairs flattened: the link each waits for, the link it came in by, the next entry."""

    def __init__(self, link: np.ndarray, lengths: np.ndarray, n_links: int) -> None:
        """From the concatenated paths ``link`` and the length of each flow's path."""
        self.n_links = n_links
        self.lengths = lengths
        self.link = link
        self.flow = np.repeat(np.arange(lengths.size), lengths)
        self.first = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        self.last = self.first + lengths - 1
        self.hop = np.arange(self.link.size) - self.first[self.flow]
        self.prev_link = np.where(self.hop > 0, np.roll(self.link, 1), -1)
        self.inner = np.flatnonzero(self.hop > 0)
        # optimisation: the gathers the step repeats, done once
        self.inner_link = self.link[self.inner]
        self.inner_prev = self.prev_link[self.inner]
        self.inner_flow = self.flow[self.inner]
        self.is_inner = (self.hop > 0).astype(np.float64)
        self.prev_bin = np.where(self.hop > 0, self.prev_link, n_links)  # hop 0 counts in a spare bin
        self.not_last = np.ones(self.link.size, dtype=bool)
        self.not_last[self.last] = False
        self.forward = np.flatnonzero(self.not_last)

    @classmethod
    def from_paths(cls, paths: Sequence[Sequence[int]], n_links: int) -> _Entries:
        """Raises ConfigError for an empty path or a link id out of range."""
        lengths = np.array([len(p) for p in paths], dtype=np.int64)
        if (lengths < 1).any():
            raise ConfigError(f"paths: flow {int(np.flatnonzero(lengths < 1)[0])} has an empty path")
        link = np.concatenate([np.asarray(p, dtype=np.int64) for p in paths])
        if link.min() < 0 or link.max() >= n_links:
            raise ConfigError(f"paths: link ids must be in [0, {n_links}), got {int(link.max())}")
        return cls(link, lengths, n_links)

    def subset(self, keep: np.ndarray) -> _Entries:
        """The entries of the flows where ``keep`` (bool, per flow) is True, flows renumbered in order."""
        return _Entries(self.link[keep[self.flow]], self.lengths[keep], self.n_links)


#: Steps between checks for finished flows to drop from the step's arrays, and the share of the flows
#: still stepped that must have finished for a compaction (an optimisation: a finished flow has
#: delivered everything, so it offers nothing, holds no queue and takes no part in any law).
_COMPACT_EVERY = 32
_COMPACT_SHARE = 0.25


def simulate_fluid(
    paths: Sequence[Sequence[int]],
    bytes_per_flow: np.ndarray | Sequence[float],
    capacity_bytes_per_s: np.ndarray | Sequence[float],
    transport_name: str,
    *,
    start_s: np.ndarray | Sequence[float] | None = None,
    after: np.ndarray | Sequence[int] | None = None,
    config: FluidConfig | None = None,
    progress: Callable[[float], None] | None = None,
) -> FluidResult:
    """Run flows over queues under a transport (module docstring) until all are delivered.

    Parameters
    ----------
    paths : sequence of sequences of int
        Links each flow crosses, in order; the first is the sender's NIC link, the last the receiver's.
    bytes_per_flow : array_like, shape (n_flows,)
        Bytes to deliver, > 0.
    capacity_bytes_per_s : array_like, shape (n_links,)
        Per-direction capacity, > 0 and finite. A flow's line rate is its first link's capacity.
    transport_name : str
        A key of :data:`TRANSPORTS`.
    start_s : array_like, shape (n_flows,), optional
        When each flow starts (default 0).
    after : array_like of int, shape (n_flows,), optional
        A chained step: flow ``i`` waits for flow ``after[i]`` (-1: for none). It starts when its
        predecessor's last byte is acknowledged, ``end[after[i]] + base_rtt_s`` (delivery plus the ACK's
        round trip: the sender of the next step learns completion from the ACK, not from a one-way
        latency), and not before its own ``start_s``.
    config : FluidConfig, optional
    progress : callable, optional
        Called with the fraction of bytes delivered (0 to 1) every 1,000 steps (for a progress bar).

    Returns
    -------
    FluidResult

    Raises
    ------
    ConfigError
        Unknown transport, an empty path, a link id out of range, a non-positive size or capacity, or
        arrays that would exceed the memory limit of :mod:`aifabric.budget` (estimate:
        :func:`fluid_bytes`, stated in the message), before anything is allocated; a predecessor out of
        range or a cycle of predecessors.
    """
    tr = transport(transport_name)
    cfg = config or FluidConfig()
    cap = np.asarray(capacity_bytes_per_s, dtype=np.float64).reshape(-1)
    if cap.size == 0 or not (np.isfinite(cap).all() and (cap > 0).all()):
        raise ConfigError("capacity_bytes_per_s: every link needs a finite capacity > 0")
    size = np.asarray(bytes_per_flow, dtype=np.float64).reshape(-1)
    n_flows, n_links = size.size, cap.size
    if len(paths) != n_flows:
        raise ConfigError(f"paths: {len(paths)} paths for {n_flows} flows")
    if not (np.isfinite(size).all() and (size > 0).all()):
        raise ConfigError("bytes_per_flow: every flow needs a finite size > 0")
    start = np.zeros(n_flows) if start_s is None else np.asarray(start_s, dtype=np.float64).reshape(-1)
    if start.size != n_flows or not (np.isfinite(start).all() and (start >= 0).all()):
        raise ConfigError("start_s: one finite start time >= 0 per flow")
    dcq = cfg.dcqcn or dcqcn_preset(tr.dcqcn_preset)
    pred_all = _predecessors(after, n_flows)
    start = np.where(pred_all >= 0, np.inf, start)  # known once the predecessor is acknowledged
    n_entries = sum(len(p) for p in paths)
    check_memory(
        f"the fluid model of {n_flows:,} flows over {n_entries:,} (flow, hop) entries",
        fluid_bytes(n_flows, n_entries, n_links, cfg, dcq),
        "paths",
    )
    ent_all = _Entries.from_paths(paths, n_links)
    ent = ent_all
    dt = cfg.dt_s
    line = cap[ent.link[ent.first]]
    path_cap = np.full(n_flows, np.inf)
    np.minimum.at(path_cap, ent.flow, cap[ent.link])
    ideal = size / path_cap

    # Per-flow outputs, by flow id; the step works on the flows not finished yet (ids), see _COMPACT_EVERY.
    end_all = np.full(n_flows, np.nan)
    trimmed_all = np.zeros(n_flows)
    ids = np.arange(n_flows)
    flow_size, flow_start = size.copy(), start.copy()
    own_start = (
        np.asarray(start_s, dtype=np.float64).reshape(-1) if start_s is not None else np.zeros(n_flows)
    )
    pred = pred_all.copy()
    end_by_id = np.full(n_flows, np.nan)  # every finished flow's end, by id (chained flows read it)
    start_by_id = start.copy()
    queue = np.zeros(ent.link.size)  # bytes waiting for entry's link (hop >= 1)
    left = size.copy()  # bytes the sender still has to send (retransmissions included)
    delivered = np.zeros(n_flows)
    sent = np.zeros(n_flows)
    trimmed = np.zeros(n_flows)
    link_trimmed = np.zeros(n_links)
    lossy_buffer = cap * cfg.base_rtt_s if cfg.lossy_buffer_bytes is None else cfg.lossy_buffer_bytes
    headers = np.zeros(n_links)  # headers of this step's trims: they cross the link in the next step
    end = np.full(n_flows, np.nan)
    paused = np.zeros(n_links, dtype=bool)
    ingress = np.zeros(n_links)
    pause_s = np.zeros(n_links)
    peak_q, sum_q, peak_in = np.zeros(n_links), np.zeros(n_links), np.zeros(n_links)
    busy_steps = np.zeros(n_links)
    ack_steps = max(1, round(cfg.base_rtt_s / dt))
    # delivered bytes of the last two base RTTs, by step: the sender's acknowledged bytes are the
    # delivered ones of one RTT ago, and the bytes acknowledged over the last RTT their difference
    deliv_hist = np.zeros((2 * ack_steps, n_flows))
    nack_hist = np.zeros((ack_steps, n_flows))  # trimmed bytes whose NACK is on its way back
    qa_until = np.zeros(n_flows)  # NSCC quick adapt: once per period, NACK cuts ignored until its end
    bdp = line * cfg.base_rtt_s
    window = np.full(n_flows, np.inf)
    if tr.congestion_control in ("window", "nscc"):
        window = np.full(n_flows, cfg.window_bytes) if cfg.window_bytes is not None else bdp.copy()
    receiver = ent.link[ent.last]
    grant = cap * cfg.base_rtt_s if cfg.window_bytes is None else np.full(n_links, cfg.window_bytes)
    max_window = 1.5 * bdp if cfg.window_bytes is None else np.full(n_flows, 1.5 * cfg.window_bytes)
    credit = bdp.copy()  # RCCC: speculative start, one BDP
    speculating = np.ones(n_flows, dtype=bool)  # RCCC: until the first NACK
    rate = line.copy()
    delay_steps = max(1, round(dcq.feedback_delay_s / dt))
    p_hist = np.zeros((delay_steps, n_flows))
    rc_hist = np.tile(line, (delay_steps, 1))
    rt, alpha = line.copy(), np.ones(n_flows)
    trace_rows: list[tuple[float, float, float, bool]] = []
    trace_rates: list[np.ndarray] = []
    traced = np.flatnonzero(
        np.bincount(ent_all.flow, weights=(ent_all.link == cfg.trace_link), minlength=n_flows)
    )
    traced_col = np.full(n_flows, -1)
    traced_col[traced] = np.arange(traced.size)
    max_steps = int(math.ceil(cfg.max_time_s / dt))
    step = 0
    while step < max_steps and np.isnan(end).any():
        if step % _COMPACT_EVERY == 0:
            done_flows = ~np.isnan(end)
            if np.count_nonzero(done_flows) > _COMPACT_SHARE * end.size:
                # optimisation: drop the finished flows from every per-flow and per-entry array
                end_all[ids[done_flows]] = end[done_flows]
                trimmed_all[ids[done_flows]] += trimmed[done_flows]
                keep = ~done_flows
                queue = queue[keep[ent.flow]]
                ent = ent.subset(keep)
                ids, flow_size, flow_start, left, delivered, sent, trimmed, end = (
                    x[keep] for x in (ids, flow_size, flow_start, left, delivered, sent, trimmed, end)
                )
                own_start, pred, credit, qa_until, speculating = (
                    x[keep] for x in (own_start, pred, credit, qa_until, speculating)
                )
                line, bdp, window, receiver, max_window, rate, rt, alpha = (
                    x[keep] for x in (line, bdp, window, receiver, max_window, rate, rt, alpha)
                )
                deliv_hist, nack_hist, p_hist, rc_hist = (
                    h[:, keep] for h in (deliv_hist, nack_hist, p_hist, rc_hist)
                )
        n_live = end.size
        now = step * dt
        active = (flow_start <= now) & np.isnan(end)
        # 0. NACKs back (one base RTT after the trim): the bytes leave the flight and are sent again
        nacked = nack_hist[step % ack_steps].copy()
        nack_hist[step % ack_steps] = 0.0
        left += nacked
        sent -= nacked
        # 1. offers
        acked = deliv_hist[(step + ack_steps) % (2 * ack_steps)]  # delivered one base RTT ago
        in_flight = sent - acked
        if tr.congestion_control == "window":  # the receiver splits its grant among its active senders
            senders = np.bincount(receiver, weights=active.astype(float), minlength=n_links)
            window = grant[receiver] / np.maximum(senders[receiver], 1.0)
        room = np.maximum(window - in_flight, 0.0)
        if tr.congestion_control == "rccc":  # the receiver paces credit at its link's rate
            # the first NACK ends speculation: the speculative credit left is dropped (htsim uec.cpp
            # processNack -> stopSpeculating)
            stop = speculating & (nacked > 0)
            credit[stop] = np.minimum(credit[stop], 0.0)
            speculating &= ~stop
            senders = np.bincount(receiver, weights=active.astype(float), minlength=n_links)
            grant_now = cap[receiver] * dt / np.maximum(senders[receiver], 1.0)
            credit = np.minimum(credit + np.where(active, grant_now, 0.0), max_window)
            room = credit
        offer0 = np.where(active, np.minimum(np.minimum(left, rate * dt), room), 0.0)
        offer = queue.copy()
        offer[ent.first] = offer0
        # 2. allowance and service
        allowance = np.full(n_links, np.inf)
        if tr.flow_control == "pfc":
            allowance[paused] = 0.0
        elif tr.flow_control == "credit":
            allowance = np.maximum(cfg.credit_buffer_bytes - ingress, 0.0)  # ingress of the previous step
        total = np.bincount(ent.link, weights=offer, minlength=n_links)
        wanted = np.minimum(total, np.maximum(cap * dt - headers, 0.0))
        sendable = np.minimum(wanted, allowance)
        if tr.flow_control == "credit":  # out of credit for the fraction of the step it could not send
            blocked = np.divide(wanted - sendable, wanted, out=np.zeros(n_links), where=wanted > 0)
            pause_s += blocked * dt
            paused = blocked > 0.5
        share = np.divide(sendable, total, out=np.zeros(n_links), where=total > 0)
        served = offer * share[ent.link]
        # 3. move: what an entry sent joins the queue of the next entry of its flow (the next one in the
        # array: paths are contiguous), or is delivered at the last hop
        queue -= served * ent.is_inner
        left -= served[ent.first]
        sent += served[ent.first]
        credit -= served[ent.first]
        arrived = np.zeros(ent.link.size)
        arrived[1:] = served[:-1]
        arrived *= ent.is_inner
        queue += arrived
        delivered += served[ent.last]
        # 4. trimming on lossy fabrics. A link's queue counts what it cannot send in the next step (the bytes
        # that arrived this step and leave in the next one are in transit, not queued).
        egress, backlog = _backlog(queue, ent, cap, dt, n_links)
        if tr.trimming:
            over = np.maximum(egress - cap * dt - lossy_buffer, 0.0)
            headers = np.zeros(n_links)
            if over.any():
                arrivals = np.bincount(ent.link, weights=arrived, minlength=n_links)
                ratio = np.divide(
                    np.minimum(over, arrivals), arrivals, out=np.zeros(n_links), where=arrivals > 0
                )
                cut = arrived * ratio[ent.link]
                link_trimmed += np.minimum(over, arrivals)
                headers = np.minimum(over, arrivals) * (cfg.header_bytes / cfg.mss_bytes)
                queue -= cut
                cut_flow = np.bincount(ent.flow, weights=cut, minlength=n_live).astype(np.float64)
                trimmed += cut_flow
                nack_hist[step % ack_steps] += cut_flow  # in flight until its NACK is back
                egress, backlog = _backlog(queue, ent, cap, dt, n_links)
        # 5. PFC state for the next step: the ingress counter of a link is the backlog it brought in
        # (hop-0 entries hold no queue, so whole-array bincounts equal the inner ones)
        ingress = np.bincount(ent.prev_bin, weights=backlog, minlength=n_links + 1)[:n_links].astype(float)
        if tr.flow_control == "pfc":
            paused = np.where(paused, ingress > cfg.pfc_xon_bytes, ingress > cfg.pfc_xoff_bytes)
            pause_s[paused] += dt
        egress = np.maximum(egress - cap * dt, 0.0)
        np.maximum(peak_q, egress, out=peak_q)
        np.maximum(peak_in, ingress, out=peak_in)
        sum_q += egress
        busy_steps += sendable >= 0.999 * cap * dt
        if cfg.trace_link is not None:
            link = cfg.trace_link
            trace_rows.append((now + dt, float(egress[link]), float(sendable[link] / dt), bool(paused[link])))
            on_link = np.flatnonzero(ent.link == link)
            row = np.zeros(traced.size)
            row[traced_col[ids[ent.flow[on_link]]]] = served[on_link] / dt
            trace_rates.append(row)
        # 6. congestion control
        if tr.congestion_control == "dcqcn":
            p_link = red_probability(egress, dcq.kmin_bytes, dcq.kmax_bytes, dcq.pmax)
            log_pass = np.bincount(
                ent.inner_flow,
                weights=np.log1p(-np.minimum(p_link[ent.inner_link], 1 - 1e-12)),
                minlength=n_live,
            )
            slot = step % delay_steps
            p_old, rc_old = p_hist[slot].copy(), rc_hist[slot].copy()
            p_hist[slot], rc_hist[slot] = -np.expm1(log_pass), rate
            d_rt, d_rc, d_alpha = dcqcn_derivatives(p_old, rc_old, rt, rate, alpha, dcq)
            floor = dcq.packet_bytes / dcq.cnp_interval_s
            rt = np.clip(rt + d_rt * dt, floor, line)
            rate = np.clip(rate + d_rc * dt, floor, line)
            alpha = np.clip(alpha + d_alpha * dt, 0.0, 1.0)
        elif tr.congestion_control == "nscc":
            acked_last = acked - deliv_hist[step % (2 * ack_steps)]  # acknowledged over the last RTT
            delay = np.bincount(ent.inner_flow, weights=(egress / cap)[ent.inner_link], minlength=n_live)
            window, qa_until = _nscc_update(
                window, _NsccSignals(nacked, acked_last, delay, now), qa_until, cfg, bdp, max_window
            )
        # acknowledgements come back one base RTT after delivery
        deliv_hist[step % (2 * ack_steps)] = delivered
        step += 1
        if progress is not None and step % 1000 == 0:
            progress(float((size.sum() - flow_size.sum() + delivered.sum()) / size.sum()))
        done = np.isnan(end) & (delivered >= flow_size * (1 - 1e-9))
        end[done] = step * dt
        if done.any():
            end_by_id[ids[done]] = step * dt
            # a finished flow's residue (at most 1e-9 of its size) leaves the network now, as compaction
            # would drop it: a window law near its threshold must not see it
            queue[done[ent.flow]] = 0.0
            nack_hist[:, done] = 0.0
            waiting = (pred >= 0) & np.isinf(flow_start)
            ready = waiting & np.isfinite(end_by_id[np.maximum(pred, 0)])
            if ready.any():
                flow_start[ready] = np.maximum(own_start[ready], end_by_id[pred[ready]] + cfg.base_rtt_s)
                start_by_id[ids[ready]] = flow_start[ready]
    end_all[ids] = end
    trimmed_all[ids] += trimmed
    return _result(
        tr,
        cfg,
        ent_all,
        size,
        ideal,
        start_by_id,
        end_all,
        trimmed_all,
        link_trimmed,
        busy_steps,
        pause_s,
        peak_q,
        sum_q,
        peak_in,
        step,
        trace_rows,
        trace_rates,
        traced,
    )


#: Float64 arrays the step keeps or makes per (flow, hop) entry (the entry tables, queue, offer, served,
#: moved and backlog copies), per flow (sender state, congestion control, outputs) and per link; counted
#: from simulate_fluid's code, with one spare each for temporaries.
_ARRAYS_PER_ENTRY = 24
_ARRAYS_PER_FLOW = 40
_ARRAYS_PER_LINK = 30


def fluid_bytes(n_flows: int, n_entries: int, n_links: int, cfg: FluidConfig, dcq: DcqcnParams) -> float:
    """Estimate of the bytes :func:`simulate_fluid` allocates, from counts (no allocation)::

        8 (24 E + F (40 + 3 A + 2 D) + 30 L)

    for ``E`` (flow, hop) entries, ``F`` flows, ``L`` links, ``A = base_rtt / dt`` steps of history (two
    round trips of delivered bytes for the acknowledgements, one of NACKs) and ``D = feedback_delay / dt``
    steps of DCQCN feedback history per flow (the per-step trace of ``trace_link`` comes on top: 32 B a
    step).
    """
    ack = max(1, round(cfg.base_rtt_s / cfg.dt_s))
    delay = max(1, round(dcq.feedback_delay_s / cfg.dt_s))
    per_flow = _ARRAYS_PER_FLOW + 3 * ack + 2 * delay
    return 8.0 * (_ARRAYS_PER_ENTRY * n_entries + per_flow * n_flows + _ARRAYS_PER_LINK * n_links)


def _predecessors(after: np.ndarray | Sequence[int] | None, n_flows: int) -> np.ndarray:
    """``after`` as an int array (-1: none), checked: in range, no flow after itself, no cycle."""
    if after is None:
        return np.full(n_flows, -1, dtype=np.int64)
    pred = np.asarray(after, dtype=np.int64).reshape(-1)
    if pred.size != n_flows or (pred < -1).any() or (pred >= n_flows).any():
        raise ConfigError(f"after: one predecessor in [-1, {n_flows}) per flow")
    cur = pred.copy()
    for _ in range(n_flows + 1):  # follow every chain; a chain longer than n_flows is a cycle
        alive = cur >= 0
        if not alive.any():
            return pred
        cur[alive] = pred[cur[alive]]
    raise ConfigError("after: the predecessors form a cycle")


def _backlog(
    queue: np.ndarray, ent: _Entries, cap: np.ndarray, dt: float, n_links: int
) -> tuple[np.ndarray, np.ndarray]:
    """Bytes waiting at each link's egress, and each entry's part of them beyond one step of service."""
    egress = np.bincount(ent.link, weights=queue, minlength=n_links)  # hop-0 entries hold no queue
    stays = np.divide(np.maximum(egress - cap * dt, 0.0), egress, out=np.zeros(n_links), where=egress > 0)
    return egress, queue * stays[ent.link]


@dataclass(frozen=True)
class _NsccSignals:
    """What an NSCC sender learns in one step, per flow: bytes NACKed (trims whose NACK came back this
    step), bytes acknowledged over the last base RTT, queueing delay along the path (s), and the time."""

    nacked: np.ndarray
    acked_last_rtt: np.ndarray
    delay_s: np.ndarray
    now_s: float


def _nscc_update(
    window: np.ndarray,
    sig: _NsccSignals,
    qa_until: np.ndarray,
    cfg: FluidConfig,
    bdp: np.ndarray,
    max_window: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """NSCC's window law, spread over one base RTT per decision (htsim ``uec.cpp``, UETH commit of
    congestion-control.md Sec. 3.4). Returns the new window and the end of each flow's quick-adapt period.

    - Increase only on acknowledged bytes: ``fair_increase`` adds ``fi x newly_acked`` to ``inc_bytes`` and
      ``fulfill_adjustment`` adds ``inc_bytes / cwnd`` to the window, so over one RTT the window grows by
      ``fi x min(acked / window, 1)``, ``fi = 5 MSS x scaling``, ``scaling = BDP / (100 Gb/s x 12 us)``.
      A window whose bytes are not acknowledged does not grow.
    - Decrease: queueing delay above the target (0.75 x base RTT with trimming) cuts the window by
      ``gamma (delay - target) / delay`` per RTT (gamma 0.8, at most a half; ``multiplicative_decrease``,
      taken here for any queue longer than the target, which an ECN threshold below it would mark).
    - A NACK (``updateCwndOnNack_NSCC``) triggers quick adapt when the bytes acknowledged over the last
      period are below ``max window / 2^qa_gate`` (qa_gate 3): the window falls to those bytes (at least one
      MSS) and the NACKs of the bytes already in flight are ignored for the period, ``base RTT + target``.
      Otherwise the window loses the NACKed bytes.
    """
    target = 0.75 * cfg.base_rtt_s
    per_step = cfg.dt_s / cfg.base_rtt_s
    delay = sig.delay_s
    cut = np.minimum(0.8 * np.maximum(delay - target, 0.0) / np.maximum(delay, 1e-30), 0.5)
    fair = 5 * cfg.mss_bytes * bdp / (12.5e9 * 12e-6)
    grow = fair * np.minimum(sig.acked_last_rtt / window, 1.0)
    window = np.where(delay > target, window * (1 - cut * per_step), window + grow * per_step)
    nack = sig.nacked > 0
    quiet = sig.now_s < qa_until  # NACKs of bytes in flight at the last quick adapt
    qa = nack & ~quiet & (sig.acked_last_rtt < max_window / 8)
    window = np.where(nack & ~quiet & ~qa, window - sig.nacked, window)
    window = np.where(qa, sig.acked_last_rtt, window)
    qa_until = np.where(qa, sig.now_s + cfg.base_rtt_s + target, qa_until)
    return np.clip(window, cfg.mss_bytes, max_window), qa_until


def _result(
    tr: Transport,
    cfg: FluidConfig,
    ent: _Entries,
    size: np.ndarray,
    ideal: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    trimmed: np.ndarray,
    link_trimmed: np.ndarray,
    busy_steps: np.ndarray,
    pause_s: np.ndarray,
    peak_q: np.ndarray,
    sum_q: np.ndarray,
    peak_in: np.ndarray,
    steps: int,
    trace_rows: list[tuple[float, float, float, bool]],
    trace_rates: list[np.ndarray],
    traced: np.ndarray,
) -> FluidResult:
    n_flows = size.size
    switch_egress = np.bincount(ent.inner_link, minlength=busy_steps.size) > 0
    congested = (switch_egress & (busy_steps > 0.25 * max(steps, 1))) | (link_trimmed > 0)
    on_paused = np.bincount(ent.flow, weights=(pause_s > 0)[ent.link].astype(float), minlength=n_flows) > 0
    on_congested = (
        np.bincount(ent.inner_flow, weights=congested[ent.inner_link].astype(float), minlength=n_flows) > 0
    )
    slowed = (end - start) > 1.1 * ideal
    victims = np.flatnonzero(on_paused & ~on_congested & slowed)
    trace = None
    if cfg.trace_link is not None and trace_rows:
        t, q, r, p = (np.array(col) for col in zip(*trace_rows, strict=True))
        trace = LinkTrace(cfg.trace_link, t, q, r, p.astype(bool), traced, np.array(trace_rates))
    return FluidResult(
        transport=tr.name,
        flow_end_s=end,
        flow_ideal_s=ideal,
        trimmed_bytes=trimmed,
        link_pause_s=pause_s,
        link_peak_queue_bytes=peak_q,
        link_mean_queue_bytes=sum_q / max(steps, 1),
        link_peak_ingress_bytes=peak_in,
        victims=victims,
        congested_links=np.flatnonzero(congested),
        makespan_s=float(np.nanmax(end)) if np.isfinite(end).any() else math.nan,
        trace=trace,
        steps=steps,
        flow_bytes=size,
        flow_start_s=start,
    )
