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
   hop k >= 1 offers its queue. A chained flow starts one base RTT (its own) after its predecessor's last
   byte.
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
return one base RTT after delivery, which is what windows see. The base RTT is a flow's own: its path's
on a fabric (``rtt_s``, :func:`aifabric.transport.wire.path_rtt`), else the configured one (12 us, NSCC's
reference network).

Time. Only started, unfinished flows are stepped: a flow joins when its start comes (a chained flow's is
known once its predecessor ends; the flows that become ready join together, vectorised), with its
sender's congestion control in its initial state (DCQCN at line rate with alpha 1, NSCC at its starting
window); a flow not started yet neither sends nor reacts to marks. Steps of ``dt`` are taken one by one
only while something can change in a way the equations above decide step by step: a queue beyond one
step of service, a pause, a mark, a DCQCN rate off its line rate, a window or credit law. Otherwise the
model moves in closed form (an optimisation, exact): with nothing stepped, to the next start; and with
nothing queued (every link that carries a hop beyond the first offered at most what it serves in every
step ahead), every hop passes on what the hop before it sent one step earlier and every sender sends
``min(left, rate dt)`` (its share of it on a first hop its own sub-flows over-offer), so the flows' bytes,
ends and successors' starts follow from their sizes (:func:`_epoch`): such an epoch runs to the first
step where a link would be offered more than it serves, or until a successor could start. The results
are those of single steps on the same grid of ``dt`` (ends, pauses, queues, traces; a settled DCQCN
rate, which single steps let drift by up to 1e-6 of the line rate with no mark, is held): tested in
tests/transport/test_fluid_epochs.py.

A mouse's completion in a FIFO queue is estimated apart (:attr:`FluidResult.fifo_fct_s`): the fluid FIFO
drains a port in proportion to queued bytes, an upper bound for a flow that arrives behind a queue.

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
from dataclasses import dataclass, replace

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
        that the two fabrics differ only by their mechanism [assumption]. Every run raises it to the
        step-discretisation floor ``2 max(cap) dt`` (:func:`with_step_floor`).
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
        Used for every flow unless :func:`simulate_fluid` gets each flow's own (``rtt_s``: on a fabric,
        its path's).
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
    flow_sojourn_s : ndarray, shape (n_flows,)
        The FIFO wait ahead of each flow's first byte when it started: ``sum over its path's switch
        egresses of queue / link rate`` (0 if it never started).
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
    flow_sojourn_s: np.ndarray

    @property
    def retransmission_fraction(self) -> float:
        """Bytes sent again / bytes of the flows (0 on lossless fabrics)."""
        return float(self.trimmed_bytes.sum() / self.flow_bytes.sum())

    @property
    def fifo_fct_s(self) -> np.ndarray:
        """Each flow's completion time in a FIFO queue, s: ``sojourn + size / rate``.

        A flow that finishes before the queue it meets changes (a mouse behind elephants) waits for the
        bytes ahead of it, ``queue / drain rate`` per switch egress (the sojourn time,
        :attr:`flow_sojourn_s`), and its own bytes follow at its contention-free rate (``size / rate`` =
        :attr:`flow_ideal_s`). The fluid model's own FCT (``flow_end_s - flow_start_s``) drains a queue in
        proportion to the bytes each flow holds there, so a mouse's last bytes leave with time constant
        ``queue / C`` rather than after the bytes ahead of them: an upper bound for a mouse, the right
        share for an elephant.
        """
        return self.flow_sojourn_s + self.flow_ideal_s

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
        self.first = (np.cumsum(lengths) - lengths).astype(np.int64)
        self.last = self.first + lengths - 1
        self.hop = np.arange(self.link.size) - self.first[self.flow]
        inner = self.hop > 0
        prev_link = np.concatenate([[n_links], self.link[:-1]]) if link.size else link
        self.inner = np.flatnonzero(inner)
        # optimisation: the gathers the step repeats, done once
        self.inner_link = self.link[self.inner]
        self.inner_flow = self.flow[self.inner]
        self.is_inner = inner.astype(np.float64)
        self.prev_bin = np.where(inner, prev_link, n_links)  # hop 0 counts in a spare bin

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


#: Finished flows are dropped from the step's arrays (an optimisation: a finished flow has delivered
#: everything, so it offers nothing, holds no queue and takes no part in any law) when flows start, before
#: a jump, and every ``_COMPACT_EVERY`` steps once ``_COMPACT_SHARE`` of the stepped flows are done.
_COMPACT_EVERY = 32
_COMPACT_SHARE = 0.25
#: Quiet steps are taken at once (module docstring, "Time"); False steps every ``dt`` (the reference).
_JUMPS = True
#: A DCQCN sender is settled (its rate held through a jump) while its current and target rates are within
#: this fraction of its line rate, and a jump ends before its rate could drift by as much.
_SETTLED = 1e-6
#: Fields of :class:`_Flows` per stepped flow (1-D), and its histories (rows of steps x flows).
_FLOW_FIELDS = (
    "ids",
    "size",
    "line",
    "bdp",
    "receiver",
    "max_window",
    "left",
    "delivered",
    "sent",
    "end",
    "credit",
    "window",
    "rate",
    "rt",
    "alpha",
    "qa_until",
    "speculating",
    "rtt",
    "ack",
    "fb",
)
_HIST_FIELDS = ("deliv_hist", "nack_hist", "p_hist", "rc_hist")


@dataclass
class _Flows:
    """The flows being stepped (started, not dropped): their entries, queues and per-flow state.

    ``ids`` are the flows' ids; ``size``, ``line``, ``bdp``, ``receiver`` and ``max_window`` are fixed per
    flow; the rest is the senders' state (bytes in bytes, rates in bytes/s; ``qa_until``: the end of
    NSCC's quick-adapt period, s; ``speculating``: RCCC before its first NACK; ``rtt``: the flow's base
    RTT, s, ``ack`` and ``fb`` the steps of it and of its DCQCN feedback delay). The histories are ring
    buffers over steps shared by all flows, each flow reading its own delay back: ``deliv_hist`` (rows: two
    of the run's largest ``ack``) the delivered bytes (the acknowledged bytes are those of ``ack`` steps
    ago), ``nack_hist`` (the largest ``ack``) the trimmed bytes whose NACK is on its way back, ``p_hist``
    and ``rc_hist`` (the largest ``fb``) DCQCN's delayed feedback.
    """

    ent: _Entries
    queue: np.ndarray
    ids: np.ndarray
    size: np.ndarray
    line: np.ndarray
    bdp: np.ndarray
    receiver: np.ndarray
    max_window: np.ndarray
    left: np.ndarray
    delivered: np.ndarray
    sent: np.ndarray
    end: np.ndarray
    credit: np.ndarray
    window: np.ndarray
    rate: np.ndarray
    rt: np.ndarray
    alpha: np.ndarray
    qa_until: np.ndarray
    speculating: np.ndarray
    rtt: np.ndarray
    ack: np.ndarray
    fb: np.ndarray
    deliv_hist: np.ndarray
    nack_hist: np.ndarray
    p_hist: np.ndarray
    rc_hist: np.ndarray

    def subset(self, keep: np.ndarray) -> _Flows:
        """The flows where ``keep`` (bool, per stepped flow) is True, in order."""
        return _Flows(
            self.ent.subset(keep),
            self.queue[keep[self.ent.flow]],
            *(getattr(self, f)[keep] for f in _FLOW_FIELDS),
            *(getattr(self, h)[:, keep] for h in _HIST_FIELDS),
        )

    def joined(self, other: _Flows, keep: np.ndarray | None = None) -> _Flows:
        """These flows (those where ``keep``, default all) followed by ``other``'s."""
        keep = np.ones(self.ids.size, dtype=bool) if keep is None else keep
        on_kept = keep[self.ent.flow]
        ent = _Entries(
            np.concatenate([self.ent.link[on_kept], other.ent.link]),
            np.concatenate([self.ent.lengths[keep], other.ent.lengths]),
            self.ent.n_links,
        )
        return _Flows(
            ent,
            np.concatenate([self.queue[on_kept], other.queue]),
            *(np.concatenate([getattr(self, f)[keep], getattr(other, f)]) for f in _FLOW_FIELDS),
            *(np.hstack([getattr(self, h)[:, keep], getattr(other, h)]) for h in _HIST_FIELDS),
        )


@dataclass
class _Links:
    """Per-link state and statistics (bytes, seconds, steps), shape (n_links,) each."""

    paused: np.ndarray
    ingress: np.ndarray
    backlog: np.ndarray  # egress queue after the last step's service
    pause_s: np.ndarray
    peak_q: np.ndarray
    sum_q: np.ndarray
    peak_in: np.ndarray
    busy_steps: np.ndarray
    trimmed: np.ndarray
    headers: np.ndarray  # headers of this step's trims: they cross the link in the next step

    @classmethod
    def zeros(cls, n_links: int) -> _Links:
        return cls(np.zeros(n_links, dtype=bool), *(np.zeros(n_links) for _ in range(9)))


@dataclass
class _Trace:
    """The sampled link's rows (time, queue, throughput, paused) and its flows' rates, one per step."""

    link: int
    traced: np.ndarray  # ids of the flows crossing the link
    column: np.ndarray  # by flow id: its column in a rates row (-1: not traced)
    rows: list[tuple[float, float, float, bool]]
    rates: list[np.ndarray]


@dataclass
class _Run:
    """One run: inputs, per-flow outcomes by flow id, link state and the clock (``step`` steps of ``dt``)."""

    tr: Transport
    cfg: FluidConfig
    dcq: DcqcnParams
    cap: np.ndarray
    ent_all: _Entries
    size: np.ndarray
    line: np.ndarray
    own_start: np.ndarray
    pred: np.ndarray
    succ_ptr: np.ndarray  # successors of flow i: succ[succ_ptr[i]:succ_ptr[i + 1]]
    succ: np.ndarray
    start: np.ndarray  # inf until known (a chained flow: its predecessor's end + its base RTT)
    end: np.ndarray
    trimmed: np.ndarray
    sojourn: np.ndarray
    pending: np.ndarray  # ids of the flows not stepped yet whose start is known
    links: _Links
    trace: _Trace | None
    rtt: np.ndarray  # base RTT of each flow, s
    ack: np.ndarray  # steps of it (>= 1)
    fb: np.ndarray  # steps of its DCQCN feedback delay (>= 1)
    ack_rows: int  # the largest ack: rows of the NACK history (two of it: delivered bytes)
    delay_rows: int  # the largest fb: rows of DCQCN's feedback history
    quiet_after_end: np.ndarray  # steps after a flow's end before a successor of it could start
    max_steps: int
    next_start: float = math.inf
    open_flows: int = 0
    done_bytes: float = 0.0
    step: int = 0
    retry_at: int = 0  # no epoch is looked for before this step

    @property
    def dt(self) -> float:
        return self.cfg.dt_s


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
    rtt_s: np.ndarray | Sequence[float] | None = None,
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
        predecessor's last byte is acknowledged, ``end[after[i]] + rtt[i]`` (delivery plus the ACK's
        round trip: the sender of the next step learns completion from the ACK, not from a one-way
        latency), and not before its own ``start_s``.
    config : FluidConfig, optional
    progress : callable, optional
        Called with the fraction of bytes delivered (0 to 1) every 1,000 steps (for a progress bar).
    rtt_s : array_like, shape (n_flows,), optional
        Each flow's base round trip, s, > 0 (on a fabric: its path's,
        :func:`aifabric.transport.wire.path_rtt`).
        Default: ``config.base_rtt_s`` for every flow, and DCQCN's feedback delay from its parameters.
        Given, a flow's own RTT sets its ACK delay (chained starts, acknowledged bytes), its NACK delay,
        its bandwidth-delay product (NSCC and RCCC windows, receiver grants), NSCC's delay target, and its
        DCQCN feedback delay (a mark reaches the receiver and its CNP comes back: one round trip); the
        lossy buffer (default) is one BDP at the run's largest RTT.

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
    run = _new_run(paths, bytes_per_flow, capacity_bytes_per_s, transport_name, start_s, after, config, rtt_s)
    fl = _new_flows(run, np.empty(0, dtype=np.int64))
    checked = 0
    while run.step < run.max_steps and run.open_flows:
        before = run.step
        if run.next_start <= run.step * run.dt:
            fl = _start_due(run, fl)
        elif run.step - checked >= _COMPACT_EVERY:
            checked = run.step
            if np.count_nonzero(~np.isnan(fl.end)) > _COMPACT_SHARE * fl.ids.size:
                fl = fl.subset(np.isnan(fl.end))
        ln = run.links
        calm = _JUMPS and not (ln.paused.any() or ln.ingress.any() or ln.headers.any())
        if calm and _COMPACT_SHARE <= 1.0 and _may_be_quiet(run, fl):
            fl = fl.subset(np.isnan(fl.end))  # finished flows would hold an epoch back
        idle = _idle_steps(run, fl) if calm else 0
        epoch = _epoch(run, fl) if calm and not idle and run.step >= run.retry_at else None
        if idle > 1:
            _advance_idle(run, idle)
        elif epoch is not None:
            fl = _start_inside(run, *epoch)
            _advance(run, fl, epoch[1])
        else:
            _fine_step(run, fl)
        if progress is not None and run.step // 1000 > before // 1000:
            live = np.isnan(fl.end)
            progress(float((run.done_bytes + fl.delivered[live].sum()) / run.size.sum()))
    return _result(run)


def _new_run(
    paths: Sequence[Sequence[int]],
    bytes_per_flow: np.ndarray | Sequence[float],
    capacity_bytes_per_s: np.ndarray | Sequence[float],
    transport_name: str,
    start_s: np.ndarray | Sequence[float] | None,
    after: np.ndarray | Sequence[int] | None,
    config: FluidConfig | None,
    rtt_s: np.ndarray | Sequence[float] | None = None,
) -> _Run:
    """The inputs checked (see :func:`simulate_fluid`, Raises) and a run at time 0, no flow stepped yet."""
    tr = transport(transport_name)
    cap = np.asarray(capacity_bytes_per_s, dtype=np.float64).reshape(-1)
    if cap.size == 0 or not (np.isfinite(cap).all() and (cap > 0).all()):
        raise ConfigError("capacity_bytes_per_s: every link needs a finite capacity > 0")
    cfg = with_step_floor(config or FluidConfig(), cap)
    size = np.asarray(bytes_per_flow, dtype=np.float64).reshape(-1)
    n_flows, n_links = size.size, cap.size
    if len(paths) != n_flows:
        raise ConfigError(f"paths: {len(paths)} paths for {n_flows} flows")
    if not (np.isfinite(size).all() and (size > 0).all()):
        raise ConfigError("bytes_per_flow: every flow needs a finite size > 0")
    own = np.zeros(n_flows) if start_s is None else np.asarray(start_s, dtype=np.float64).reshape(-1)
    if own.size != n_flows or not (np.isfinite(own).all() and (own >= 0).all()):
        raise ConfigError("start_s: one finite start time >= 0 per flow")
    dcq = cfg.dcqcn or dcqcn_preset(tr.dcqcn_preset)
    pred = _predecessors(after, n_flows)
    rtt, feedback = _round_trips(rtt_s, n_flows, cfg, dcq)
    n_entries = sum(len(p) for p in paths)
    longest = None if rtt_s is None else float(rtt.max(initial=0.0))
    check_memory(
        f"the fluid model of {n_flows:,} flows over {n_entries:,} (flow, hop) entries",
        fluid_bytes(n_flows, n_entries, n_links, cfg, dcq, max_rtt_s=longest),
        "paths",
    )
    ent = _Entries.from_paths(paths, n_links)
    start = np.where(pred >= 0, np.inf, own)  # known once the predecessor is acknowledged
    chained = np.flatnonzero(pred >= 0)
    kids = chained[np.argsort(pred[chained], kind="stable")]
    succ_ptr = np.concatenate([[0], np.cumsum(np.bincount(pred[chained], minlength=n_flows))])
    ack, fb = _steps_of(rtt, cfg.dt_s), _steps_of(feedback, cfg.dt_s)
    run = _Run(
        tr, cfg, dcq, cap, ent, size, cap[ent.link[ent.first]], own, pred, succ_ptr, kids, start,
        np.full(n_flows, np.nan), np.zeros(n_flows), np.zeros(n_flows), np.flatnonzero(pred < 0),
        _Links.zeros(n_links), _new_trace(ent, cfg.trace_link, n_flows), rtt, ack, fb,
        ack_rows=int(ack.max(initial=1)), delay_rows=int(fb.max(initial=1)),
        quiet_after_end=_quiet_after_end(rtt, pred, cfg.dt_s),
        max_steps=int(math.ceil(cfg.max_time_s / cfg.dt_s)),
    )  # fmt: skip
    run.next_start = float(start.min())
    run.open_flows = n_flows
    return run


def _round_trips(
    rtt_s: np.ndarray | Sequence[float] | None, n_flows: int, cfg: FluidConfig, dcq: DcqcnParams
) -> tuple[np.ndarray, np.ndarray]:
    """Each flow's base RTT and DCQCN feedback delay, s (see :func:`simulate_fluid`, ``rtt_s``).

    Raises
    ------
    ConfigError
        If ``rtt_s`` is not one finite value > 0 per flow.
    """
    if rtt_s is None:
        return np.full(n_flows, cfg.base_rtt_s), np.full(n_flows, dcq.feedback_delay_s)
    rtt = np.asarray(rtt_s, dtype=np.float64).reshape(-1)
    if rtt.size != n_flows or not (np.isfinite(rtt).all() and (rtt > 0).all()):
        raise ConfigError("rtt_s: one finite round trip > 0 per flow")
    return rtt, rtt


def _quiet_after_end(rtt: np.ndarray, pred: np.ndarray, dt_s: float) -> np.ndarray:
    """Per flow, whole steps after its end before any successor could start: ``floor(min RTT of its
    successors / dt)`` (a successor starts its own RTT after its predecessor's end); a flow without
    successors: its own RTT's steps (an epoch bound, as without successors)."""
    chained = np.flatnonzero(pred >= 0)
    kid_rtt = np.full(rtt.size, np.inf)
    np.minimum.at(kid_rtt, pred[chained], rtt[chained])
    return np.floor(np.where(np.isinf(kid_rtt), rtt, kid_rtt) / dt_s)


def _steps_of(delay_s: np.ndarray, dt_s: float) -> np.ndarray:
    """Whole steps of each delay, at least one: ``max(1, round(delay / dt))``."""
    return np.maximum(np.round(delay_s / dt_s), 1).astype(np.int64)


def with_step_floor(cfg: FluidConfig, capacity_bytes_per_s: np.ndarray) -> FluidConfig:
    """``cfg`` with its credit buffer raised to the step-discretisation floor ``2 max(cap) dt``.

    A credit-based link can move no more per step than its receive buffer holds, so a buffer below one
    step of the fastest link (an aggregated leaf->spine trunk, NVLink, 800G) caps that link below its
    rate; two steps leave a step of credit in flight [modelling floor, not a hardware figure]. Every run
    of :func:`simulate_fluid` goes through here, so the floor holds on every path; a larger configured
    buffer is kept.
    """
    floor = 2.0 * float(np.max(capacity_bytes_per_s, initial=0.0)) * cfg.dt_s
    if cfg.credit_buffer_bytes >= floor:
        return cfg
    return replace(cfg, credit_buffer_bytes=floor)


def _new_trace(ent: _Entries, link: int | None, n_flows: int) -> _Trace | None:
    """The sampling of ``link`` (None: none)."""
    if link is None:
        return None
    traced = np.flatnonzero(np.bincount(ent.flow, weights=(ent.link == link), minlength=n_flows))
    column = np.full(n_flows, -1)
    column[traced] = np.arange(traced.size)
    return _Trace(link, traced, column, [], [])


def _ranges(first: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The indices ``first[i] .. first[i] + lengths[i] - 1`` of every i, concatenated."""
    offset = np.cumsum(lengths) - lengths
    return np.repeat(first - offset, lengths) + np.arange(int(lengths.sum()))


def _new_flows(run: _Run, ids: np.ndarray) -> _Flows:
    """Flows ``ids`` as they start: nothing sent, line rate, the congestion controls' initial state.

    DCQCN's reaction point starts at line rate with alpha 1 (Zhu et al. 2015, Sec. 3.1), NSCC at its
    starting window, RCCC with one BDP of speculative credit; a flow's state starts when the flow does.
    """
    cfg, all_ent = run.cfg, run.ent_all
    lengths = all_ent.lengths[ids]
    ent = _Entries(all_ent.link[_ranges(all_ent.first[ids], lengths)], lengths, all_ent.n_links)
    size, line, rtt = run.size[ids], run.line[ids], run.rtt[ids]
    bdp = line * rtt
    receiver = all_ent.link[all_ent.last[ids]]
    window = np.full(ids.size, np.inf)
    if run.tr.congestion_control in ("window", "nscc"):
        window = np.full(ids.size, cfg.window_bytes) if cfg.window_bytes is not None else bdp.copy()
    max_window = 1.5 * bdp if cfg.window_bytes is None else np.full(ids.size, 1.5 * cfg.window_bytes)
    zeros = np.zeros(ids.size)
    return _Flows(
        ent, np.zeros(ent.link.size), ids, size, line, bdp, receiver, max_window, size.copy(), zeros,
        zeros.copy(), np.full(ids.size, np.nan), bdp.copy(), window, line.copy(), line.copy(),
        np.ones(ids.size), zeros.copy(), np.ones(ids.size, dtype=bool), rtt, run.ack[ids], run.fb[ids],
        np.zeros((2 * run.ack_rows, ids.size)), np.zeros((run.ack_rows, ids.size)),
        np.zeros((run.delay_rows, ids.size)), np.tile(line, (run.delay_rows, 1)),
    )  # fmt: skip


def _start_inside(run: _Run, fl: _Flows, ep: _Epoch) -> _Flows:
    """``fl`` (an epoch's flows): those that start inside the epoch leave the pending set (no queue ahead
    of them: their sojourn is 0)."""
    new = fl.ids[ep.offset > 0]
    if new.size:
        _leave_pending(run, np.isin(run.pending, new))
    return fl


def _leave_pending(run: _Run, leaving: np.ndarray) -> None:
    """The pending flows where ``leaving`` (bool, per pending flow) start to be stepped."""
    run.pending = run.pending[~leaving]
    run.next_start = float(run.start[run.pending].min()) if run.pending.size else math.inf


def _start_due(run: _Run, fl: _Flows) -> _Flows:
    """The stepped flows with every flow whose start has come added (finished ones dropped).

    Each new flow's FIFO sojourn is noted: the queue ahead of its first byte at each switch egress of its
    path over that link's rate, ``sum_l q_l / C_l``.
    """
    now = run.start[run.pending] <= run.step * run.dt
    due = np.sort(run.pending[now])
    _leave_pending(run, now)
    new = _new_flows(run, due)
    wait = (run.links.backlog / run.cap)[new.ent.inner_link]
    run.sojourn[due] = np.bincount(new.ent.inner_flow, weights=wait, minlength=due.size)
    if _COMPACT_SHARE <= 1.0 and not np.isnan(fl.end).all():
        return fl.joined(new, keep=np.isnan(fl.end))
    return fl.joined(new)


def _fine_step(run: _Run, fl: _Flows) -> None:
    """One step of ``dt`` (module docstring, 1-6), then the flows it finished.

    First the NACKs that come back this step (one base RTT of their flow after their trims): those bytes
    leave the flight and are sent again. The acknowledged bytes are the ones delivered one base RTT ago.
    """
    slot = run.step % run.ack_rows
    nacked = fl.nack_hist[slot].copy()
    fl.nack_hist[slot] = 0.0
    fl.left += nacked
    fl.sent -= nacked
    acked = _delivered_ago(run, fl, 1)
    offer = _offers(run, fl, nacked, acked)
    served, sendable, arrived = _serve(run, fl, offer)
    egress, backlog = _trim(run, fl, arrived)
    egress = _link_state(run, fl, egress, backlog, sendable)
    if run.trace is not None:
        _sample(run, fl, served, 1)
    _control(run, fl, egress, nacked, acked)
    fl.deliv_hist[run.step % (2 * run.ack_rows)] = fl.delivered  # acknowledged one base RTT later
    run.step += 1
    _finish(run, fl)


def _delivered_ago(run: _Run, fl: _Flows, rtts: int) -> np.ndarray:
    """Each stepped flow's delivered bytes ``rtts`` (1 or 2) of its own base RTTs of steps ago (0 before
    it started): the ring's row ``(step - rtts x ack) mod (2 x ack_rows)`` of the flow's column."""
    rows = (run.step - rtts * fl.ack) % (2 * run.ack_rows)
    return fl.deliv_hist[rows, np.arange(fl.ids.size)]


def _offers(run: _Run, fl: _Flows, nacked: np.ndarray, acked: np.ndarray) -> np.ndarray:
    """1. What each entry offers its link this step: the sender's ``min(left, rate dt, room)`` at hop 0,
    the queue at later hops (``nacked``: bytes NACKed this step, ``acked``: bytes acknowledged, per flow)."""
    tr, dt, n_links = run.tr, run.dt, run.cap.size
    active = np.isnan(fl.end)
    in_flight = fl.sent - acked
    if tr.congestion_control == "window":  # the receiver splits its grant among its active senders
        grant = run.cfg.window_bytes or run.cap[fl.receiver] * fl.rtt
        senders = np.bincount(fl.receiver, weights=active.astype(float), minlength=n_links)
        fl.window = grant / np.maximum(senders[fl.receiver], 1.0)
    room = np.maximum(fl.window - in_flight, 0.0)
    if tr.congestion_control == "rccc":  # the receiver paces credit at its link's rate
        # the first NACK ends speculation: the speculative credit left is dropped (htsim uec.cpp
        # processNack -> stopSpeculating)
        stop = fl.speculating & (nacked > 0)
        fl.credit[stop] = np.minimum(fl.credit[stop], 0.0)
        fl.speculating &= ~stop
        senders = np.bincount(fl.receiver, weights=active.astype(float), minlength=n_links)
        grant_now = run.cap[fl.receiver] * dt / np.maximum(senders[fl.receiver], 1.0)
        fl.credit = np.minimum(fl.credit + np.where(active, grant_now, 0.0), fl.max_window)
        room = fl.credit
    offer0 = np.where(active, np.minimum(np.minimum(fl.left, fl.rate * dt), room), 0.0)
    offer = fl.queue.copy()
    offer[fl.ent.first] = offer0
    return offer


def _serve(run: _Run, fl: _Flows, offer: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """2-3. Each link serves its offers in proportion (up to ``cap dt`` and its allowance) and what it sent
    moves one hop on (the next entry of the flow: paths are contiguous) or is delivered.

    Returns the bytes each entry sent, each link's total and each entry's arrivals.
    """
    ln, cap_dt, ent, n_links = run.links, run.cap * run.dt, fl.ent, run.cap.size
    allowance = np.full(n_links, np.inf)
    if run.tr.flow_control == "pfc":
        allowance[ln.paused] = 0.0
    elif run.tr.flow_control == "credit":  # the free credit after the previous step's ingress
        allowance = np.maximum(run.cfg.credit_buffer_bytes - ln.ingress, 0.0)
    total = np.bincount(ent.link, weights=offer, minlength=n_links)
    wanted = np.minimum(total, np.maximum(cap_dt - ln.headers, 0.0))  # trimmed headers go first
    sendable = np.minimum(wanted, allowance)
    if run.tr.flow_control == "credit":  # out of credit for the fraction of the step it could not send
        blocked = np.divide(wanted - sendable, wanted, out=np.zeros(n_links), where=wanted > 0)
        ln.pause_s += blocked * run.dt
        ln.paused = blocked > 0.5
    share = np.divide(sendable, total, out=np.zeros(n_links), where=total > 0)
    served = offer * share[ent.link]
    fl.queue -= served * ent.is_inner
    fl.left -= served[ent.first]
    fl.sent += served[ent.first]
    fl.credit -= served[ent.first]
    arrived = np.zeros(ent.link.size)
    arrived[1:] = served[:-1]
    arrived *= ent.is_inner
    fl.queue += arrived
    fl.delivered += served[ent.last]
    return served, sendable, arrived


def _trim(run: _Run, fl: _Flows, arrived: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """4. Lossy fabrics trim what a queue cannot hold. A link's queue counts what it cannot send in the
    next step (bytes that arrived this step and leave in the next one are in transit, not queued). The
    trimmed bytes stay in flight until their NACK is back (one base RTT of their flow); their headers cross
    the link in the next step. The default buffer is one BDP at the run's largest base RTT.

    Returns each link's egress queue and each entry's backlog (:func:`_backlog`).
    """
    cfg, cap, dt, ent, n_links = run.cfg, run.cap, run.dt, fl.ent, run.cap.size
    egress, backlog = _backlog(fl.queue, ent, cap, dt, n_links)
    if run.tr.trimming:
        buffer = cap * float(run.rtt.max()) if cfg.lossy_buffer_bytes is None else cfg.lossy_buffer_bytes
        over = np.maximum(egress - cap * dt - buffer, 0.0)
        run.links.headers = np.zeros(n_links)
        if over.any():
            arrivals = np.bincount(ent.link, weights=arrived, minlength=n_links)
            ratio = np.divide(np.minimum(over, arrivals), arrivals, out=np.zeros(n_links), where=arrivals > 0)
            cut = arrived * ratio[ent.link]
            run.links.trimmed += np.minimum(over, arrivals)
            run.links.headers = np.minimum(over, arrivals) * (cfg.header_bytes / cfg.mss_bytes)
            fl.queue -= cut
            cut_flow = np.bincount(ent.flow, weights=cut, minlength=fl.ids.size).astype(np.float64)
            run.trimmed[fl.ids] += cut_flow
            back = (run.step + fl.ack) % run.ack_rows  # in flight until its NACK is back
            fl.nack_hist[back, np.arange(fl.ids.size)] += cut_flow
            egress, backlog = _backlog(fl.queue, ent, cap, dt, n_links)
    return egress, backlog


def _link_state(
    run: _Run, fl: _Flows, egress: np.ndarray, backlog: np.ndarray, sendable: np.ndarray
) -> np.ndarray:
    """5. PFC state for the next step and the links' statistics; returns each link's queue after service.

    The ingress counter of a link is the backlog it brought in (hop-0 entries hold no queue, so
    whole-array bincounts equal the inner ones).
    """
    ln, cfg, cap_dt, n_links = run.links, run.cfg, run.cap * run.dt, run.cap.size
    ln.ingress = np.bincount(fl.ent.prev_bin, weights=backlog, minlength=n_links + 1)[:n_links].astype(float)
    if run.tr.flow_control == "pfc":
        ln.paused = np.where(ln.paused, ln.ingress > cfg.pfc_xon_bytes, ln.ingress > cfg.pfc_xoff_bytes)
        ln.pause_s[ln.paused] += run.dt
    egress = np.maximum(egress - cap_dt, 0.0)
    np.maximum(ln.peak_q, egress, out=ln.peak_q)
    np.maximum(ln.peak_in, ln.ingress, out=ln.peak_in)
    ln.sum_q += egress
    ln.busy_steps += sendable >= 0.999 * cap_dt
    ln.backlog = egress
    return egress


def _sample(run: _Run, fl: _Flows, served: np.ndarray, n: int) -> None:
    """The traced link's row for this step (``n`` equal rows: a jump)."""
    tr, ln = run.trace, run.links
    assert tr is not None
    link, t0 = tr.link, run.step * run.dt
    throughput = float(served[fl.ent.link == link].sum()) / run.dt
    tr.rows.extend(
        (t0 + (k + 1) * run.dt, float(ln.backlog[link]), throughput, bool(ln.paused[link])) for k in range(n)
    )
    on_link = np.flatnonzero(fl.ent.link == link)
    row = np.zeros(tr.traced.size)
    row[tr.column[fl.ids[fl.ent.flow[on_link]]]] = served[on_link] / run.dt
    tr.rates.extend([row] * n)


def _control(run: _Run, fl: _Flows, egress: np.ndarray, nacked: np.ndarray, acked: np.ndarray) -> None:
    """6. Congestion control: DCQCN's fluid equations with the marking ``1 - prod(1 - p_l)`` over the path
    (seen one feedback delay later), or NSCC's window law (from the NACKs, the bytes acknowledged over the
    last base RTT and the queueing delay along the path)."""
    cc, dcq, dt, ent = run.tr.congestion_control, run.dcq, run.dt, fl.ent
    if cc == "dcqcn":
        p_link = red_probability(egress, dcq.kmin_bytes, dcq.kmax_bytes, dcq.pmax)
        log_pass = np.bincount(
            ent.inner_flow,
            weights=np.log1p(-np.minimum(p_link[ent.inner_link], 1 - 1e-12)),
            minlength=fl.ids.size,
        )
        cols, slot = np.arange(fl.ids.size), run.step % run.delay_rows
        old = (run.step - fl.fb) % run.delay_rows  # the feedback of one delay (of this flow) ago
        p_old, rc_old = fl.p_hist[old, cols], fl.rc_hist[old, cols]
        fl.p_hist[slot], fl.rc_hist[slot] = -np.expm1(log_pass), fl.rate
        d_rt, d_rc, d_alpha = dcqcn_derivatives(p_old, rc_old, fl.rt, fl.rate, fl.alpha, dcq)
        floor = dcq.packet_bytes / dcq.cnp_interval_s
        fl.rt = np.clip(fl.rt + d_rt * dt, floor, fl.line)
        fl.rate = np.clip(fl.rate + d_rc * dt, floor, fl.line)
        fl.alpha = np.clip(fl.alpha + d_alpha * dt, 0.0, 1.0)
    elif cc == "nscc":
        acked_last = acked - _delivered_ago(run, fl, 2)  # over the last RTT
        delay = np.bincount(ent.inner_flow, weights=(egress / run.cap)[ent.inner_link], minlength=fl.ids.size)
        sig = _NsccSignals(nacked, acked_last, delay, run.step * dt)
        fl.window, fl.qa_until = _nscc_update(
            fl.window, sig, fl.qa_until, run.cfg, fl.bdp, fl.max_window, fl.rtt
        )


def _finish(run: _Run, fl: _Flows, at_step: np.ndarray | None = None) -> None:
    """Flows that delivered their bytes end (now, or at their ``at_step``, NaN: not ended); their
    successors' starts become known, in one batch."""
    if at_step is None:
        done = np.isnan(fl.end) & (fl.delivered >= fl.size * (1 - 1e-9))
        if not done.any():
            return
        fl.end[done] = run.step * run.dt
    else:
        done = ~np.isnan(at_step)
        if not done.any():
            return
        fl.end[done] = at_step[done] * run.dt
    # a finished flow's residue (at most 1e-9 of its size) leaves the network now, as compaction would
    # drop it: a window law near its threshold must not see it
    fl.queue[done[fl.ent.flow]] = 0.0
    fl.nack_hist[:, done] = 0.0
    ids = fl.ids[done]
    run.end[ids] = fl.end[done]
    run.open_flows -= ids.size
    run.done_bytes += float(fl.size[done].sum())
    kids = run.succ[_ranges(run.succ_ptr[ids], run.succ_ptr[ids + 1] - run.succ_ptr[ids])]
    if kids.size:
        run.start[kids] = np.maximum(run.own_start[kids], run.end[run.pred[kids]] + run.rtt[kids])
        run.pending = np.concatenate([run.pending, kids])
        run.next_start = min(run.next_start, float(run.start[kids].min()))


def _next_start_step(run: _Run) -> int:
    """The first step at which a waiting flow starts (``start <= step dt``), or ``max_steps``."""
    if not math.isfinite(run.next_start):
        return run.max_steps
    s = math.ceil(run.next_start / run.dt)
    while s > 0 and run.next_start <= (s - 1) * run.dt:
        s -= 1
    while run.next_start > s * run.dt:
        s += 1
    return min(s, run.max_steps)


def _may_be_quiet(run: _Run, fl: _Flows) -> bool:
    """Finished flows are stepped while the cheap conditions of an idle gap or an epoch hold."""
    ln = run.links
    live = np.isnan(fl.end)
    if ln.paused.any() or ln.ingress.any() or ln.headers.any() or live.all():
        return False
    if not live.any():
        return True
    return run.tr.congestion_control == "none" or (
        run.tr.congestion_control == "dcqcn" and not _recovering(fl, live)
    )


def _recovering(fl: _Flows, live: np.ndarray) -> bool:
    """Some DCQCN sender's current or target rate is off its line rate by more than ``_SETTLED``."""
    tol = _SETTLED * fl.line[live]
    return bool((fl.line[live] - fl.rate[live] > tol).any() or (fl.line[live] - fl.rt[live] > tol).any())


def _idle_steps(run: _Run, fl: _Flows) -> int:
    """Steps until the next start when nothing is stepped, no link is paused and no ingress is held (0:
    not idle)."""
    ln = run.links
    if fl.ids.size or ln.paused.any() or ln.ingress.any() or ln.headers.any():
        return 0
    return _next_start_step(run) - run.step


@dataclass(frozen=True)
class _Epoch:
    """Quiet steps to take at once (:func:`_epoch`), for the stepped flows and those starting inside it.

    Each sender sends nothing for ``offset`` steps (a flow starting inside the epoch), then ``per_step``
    for ``full`` steps (inf: through the epoch), ``rest`` once, then nothing. ``ends``: steps from now to
    each flow's end (inf: not inside). ``marks``: the steps (from 0) where some link's load changes, with
    each entry's sends (``sends``) and each link's load (``loads``) from there on, one row per mark.
    """

    offset: np.ndarray
    per_step: np.ndarray
    full: np.ndarray
    rest: np.ndarray
    ends: np.ndarray
    n: int
    marks: np.ndarray
    sends: np.ndarray
    loads: np.ndarray


#: Most load changes one epoch tracks (an epoch ends at the next one): bounds an epoch's work.
_EPOCH_MARKS = 64
#: Waiting flows per stepped flow above which an epoch is first bounded by the stepped flows alone, so that
#: only the few starting within it are built (an optimisation).
_FEW_PENDING = 4


def _epoch(run: _Run, fl: _Flows) -> tuple[_Flows, _Epoch] | None:
    """The quiet steps ahead, with the stepped flows and those that start inside them; None: take one fine
    step.

    Quiet: congestion control none, or DCQCN with no mark pending and every rate settled
    (:func:`_settled_steps`); no pause, no ingress held, no finished flow stepped; and in every step of the
    epoch every link serves all it is offered (within its rate and allowance), so nothing queues beyond one
    step, nothing pauses and nothing is marked; a link that carries only first hops may serve a share of
    its senders' offers (the senders keep the rest). Every hop then passes on what the hop before it sent
    one step earlier, and a sender sends ``min(left, rate dt)`` per step (its share of it on a shared first
    hop), so every flow's course is known in closed form (:func:`_sends`), and so are its end and its
    successors' starts (one base RTT later). The epoch ends before a successor could start, before a
    shared first hop's offers change (no flow joins it inside), or before a link would be offered more
    than it serves.
    """
    ln = run.links
    if run.tr.congestion_control not in ("none", "dcqcn") or run.tr.trimming or not fl.ids.size:
        return None
    if ln.paused.any() or ln.ingress.any() or ln.headers.any() or not np.isnan(fl.end).all():
        return None
    if run.tr.congestion_control == "dcqcn" and _recovering(fl, np.ones(fl.ids.size, dtype=bool)):
        run.retry_at = run.step + _COMPACT_EVERY  # a rate recovers over many steps: look again later
        return None
    limit = run.cap * run.dt
    if run.tr.flow_control == "credit":
        limit = np.minimum(limit, run.cfg.credit_buffer_bytes)
    offer = fl.queue.copy()
    offer[fl.ent.first] = np.minimum(fl.left, fl.rate * run.dt)
    total = np.bincount(fl.ent.link, weights=offer, minlength=run.cap.size)
    inner = np.bincount(fl.ent.inner_link, minlength=run.cap.size) > 0
    share = np.divide(limit, total, out=np.ones(run.cap.size), where=total > limit)
    shared = share < 1
    if (shared & inner).any() or (shared & (limit < run.cap * run.dt)).any():
        return None  # a queue builds, or a credit fabric runs out of credit (pause time, step by step)
    n = run.max_steps - run.step
    if run.tr.congestion_control == "dcqcn":
        n = min(n, _settled_steps(run, fl))
    if shared.any():
        n = min(n, _next_start_step(run) - run.step)
    if run.pending.size > _FEW_PENDING * max(fl.ids.size, 16) and not shared.any():
        # many flows waiting: only those starting within the stepped flows' own epoch can join it
        alone = _epoch_course(run, fl, np.zeros(fl.ids.size), share, n, limit)
        if alone is None:
            return None
        n = alone.n
    due = _starting_within(run, n) if not shared.any() else np.empty((2, 0), dtype=np.int64)
    for _ in range(2):  # with the flows that start inside; again without any that would start after its end
        merged = fl.joined(_new_flows(run, due[0])) if due.size else fl
        offset = np.concatenate([np.zeros(fl.ids.size), due[1] - run.step])
        ep = _epoch_course(run, merged, offset, share, n, limit)
        if ep is None:
            return None
        late = offset >= ep.n
        if not late.any():
            return merged, ep
        due, n = due[:, ~late[fl.ids.size :]], ep.n
    return None


def _starting_within(run: _Run, n: int) -> np.ndarray:
    """The waiting flows that start within ``n`` steps: their ids and start steps, shape (2, k)."""
    if run.next_start > (run.step + n) * run.dt:
        return np.empty((2, 0), dtype=np.int64)
    ids = np.sort(run.pending[run.start[run.pending] < (run.step + n) * run.dt])
    start = run.start[ids]
    s = np.ceil(start / run.dt).astype(np.int64)  # the first step with start <= step dt, as the fine step
    s -= start <= (s - 1) * run.dt
    s += start > s * run.dt
    inside = s < run.step + n
    return np.stack([ids[inside], s[inside]])


def _epoch_course(
    run: _Run, fl: _Flows, offset: np.ndarray, share: np.ndarray, n: int, limit: np.ndarray
) -> _Epoch | None:
    """The senders' courses, the flows' ends and the epoch's length (at most ``n``) and load changes; None
    if fewer than 2 steps."""
    o = fl.rate * run.dt
    s = share[fl.ent.link[fl.ent.first]]
    alone = s == 1
    if (~alone & (fl.left < o)).any():
        return None  # a sender at its last bytes on a shared first hop: its offer changes the shares
    per_step = o * s
    full = np.where(alone, np.floor(fl.left / o), np.inf)
    rest = np.where(alone, fl.left - full * o, 0.0)
    if (~alone).any():
        n = min(n, int(np.floor((fl.left - o) / per_step)[~alone].min()) + 1)
    ends = _end_steps(fl, offset, per_step, full, rest)
    n = min(n, int(min((ends + run.quiet_after_end[fl.ids]).min(), n)))
    if fl.ids.size == run.open_flows:  # the run stops at its last end
        n = min(n, int(min(ends.max(), n)))
    if run.tr.congestion_control == "dcqcn":
        n = min(n, _settled_steps(run, fl))
    if n < 2:
        return None
    ent = fl.ent
    start = ent.hop + offset[ent.flow]
    at = np.concatenate(
        [np.arange(int(ent.hop.max()) + 1), start, start + full[ent.flow], start + full[ent.flow] + 1]
    )
    marks = np.unique(at[np.isfinite(at) & (at < n)]).astype(np.int64)
    if marks.size > _EPOCH_MARKS:
        n, marks = int(marks[_EPOCH_MARKS]), marks[:_EPOCH_MARKS]
    sends = _sends(fl, offset, per_step, full, rest, marks)
    rows = np.repeat(np.arange(marks.size), ent.link.size) * run.cap.size + np.tile(ent.link, marks.size)
    loads = np.bincount(rows, weights=sends.ravel(), minlength=marks.size * run.cap.size)
    loads = loads.reshape(marks.size, run.cap.size)
    served_all = share == 1
    over = np.flatnonzero((loads[:, served_all] > limit[served_all]).any(axis=1))
    if over.size:
        n, marks, sends, loads = int(marks[over[0]]), marks[: over[0]], sends[: over[0]], loads[: over[0]]
    if n < 2:
        return None
    return _Epoch(offset, per_step, full, rest, ends, n, marks, sends, loads)


def _sends(
    fl: _Flows, offset: np.ndarray, per_step: np.ndarray, full: np.ndarray, rest: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """What each entry sends in steps ``t`` (0: now) of an epoch, shape (t.size, n_entries): a hop ``k``
    sends the queue of hop ``k - t`` while ``t < k`` (what was in the pipeline; nothing for a flow not
    started), then what its sender sent ``k`` steps earlier."""
    ent = fl.ent
    t = np.asarray(t, dtype=np.int64)[:, None]
    pipeline = fl.queue[np.arange(ent.link.size) - np.minimum(t, ent.hop)]
    f = ent.flow
    sender_step = t - ent.hop - offset[f]
    sent = np.where(sender_step < full[f], per_step[f], np.where(sender_step == full[f], rest[f], 0.0))
    return np.where(sender_step < 0, pipeline, sent)


def _sender_total(per_step: np.ndarray, full: np.ndarray, rest: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Bytes each sender sends in its first ``m`` steps of an epoch."""
    return np.minimum(m, full) * per_step + np.where(m > full, rest, 0.0)


def _end_steps(
    fl: _Flows, offset: np.ndarray, per_step: np.ndarray, full: np.ndarray, rest: np.ndarray
) -> np.ndarray:
    """Steps from now until each flow has delivered all but ``1e-9`` of its bytes, its end (inf: not in
    this epoch). The last hop delivers the pipeline first (the queue of the last hop, then the one before),
    then the sender's bytes, ``h - 1`` steps after it sends them."""
    ent = fl.ent
    need = fl.size * (1 - 1e-9) - fl.delivered
    behind = np.cumsum(np.where(ent.hop > 0, fl.queue, 0.0)[::-1])[::-1]  # from each entry to the array's end
    from_here = (
        behind - np.append(behind, 0.0)[ent.last + 1][ent.flow]
    )  # the pipeline from here to the last hop
    depth = ent.lengths - 1
    steps = np.full(fl.ids.size, np.inf)
    done_in_pipe = (ent.hop > 0) & (from_here >= need[ent.flow])
    np.minimum.at(steps, ent.flow[done_in_pipe], (depth[ent.flow] - ent.hop + 1)[done_in_pipe])
    left = need - from_here[ent.first + np.minimum(depth, 1)] * (depth > 0)
    m = np.where(left <= full * per_step, np.ceil(left / per_step), full + 1)
    reach = _sender_total(per_step, full, rest, m) >= left
    return np.where(np.isfinite(steps), steps, np.where(reach, offset + depth + m, np.inf))


def _advance(run: _Run, fl: _Flows, ep: _Epoch) -> None:
    """Take an epoch's ``n`` steps at once: senders, pipelines and deliveries in closed form, the links'
    busy steps and the trace per load change, then the flows that ended inside it (at their own steps);
    queues, pauses and marks stay at zero.

    DCQCN's alpha decays as the steps of its law would since each flow started (no mark: ``alpha -> a +
    (alpha - a) (1 - g dt / tau_alpha)^m``, ``a`` its no-mark limit); rates are held (settled). The
    acknowledgement history is read only by window transports, which never take an epoch.
    """
    ent, n, dt = fl.ent, ep.n, run.dt
    last_send = _sends(fl, ep.offset, ep.per_step, ep.full, ep.rest, np.array([n - 1]))[0]
    sending = np.maximum(n - ep.offset, 0.0)
    depth = ent.lengths - 1
    in_reach = (ent.hop > 0) & (ent.hop >= (depth - n + 1)[ent.flow])
    pipe = np.bincount(ent.flow, weights=np.where(in_reach, fl.queue, 0.0), minlength=fl.ids.size)
    delivered = pipe + _sender_total(ep.per_step, ep.full, ep.rest, np.maximum(sending - depth, 0.0))
    sender = _sender_total(ep.per_step, ep.full, ep.rest, sending)
    fl.queue = np.where(ent.hop > 0, np.concatenate([[0.0], last_send[:-1]]), 0.0)
    fl.left = fl.left - sender
    fl.sent = fl.sent + sender
    fl.delivered = fl.delivered + delivered
    lengths = np.diff(np.append(ep.marks, n))
    run.links.busy_steps += lengths @ (ep.loads >= 0.999 * run.cap * dt)
    if run.tr.congestion_control == "dcqcn":
        dcq = run.dcq
        _, _, d_alpha = dcqcn_derivatives(np.zeros(fl.ids.size), fl.rate, fl.rt, fl.rate, fl.alpha, dcq)
        limit = fl.alpha + d_alpha * dcq.alpha_interval_s / dcq.g
        decay = (1 - dcq.g * dt / dcq.alpha_interval_s) ** sending
        fl.alpha = np.clip(limit + (fl.alpha - limit) * decay, 0, 1)
        fl.rc_hist[:] = fl.rate
    step0 = run.step
    for length, sends in zip(lengths.tolist(), ep.sends, strict=True):
        if run.trace is not None:
            _sample(run, fl, sends, length)
        run.step += length
    _finish(run, fl, np.where(ep.ends <= n, step0 + ep.ends, np.nan))


def _advance_idle(run: _Run, n: int) -> None:
    """``n`` steps with nothing stepped."""
    if run.trace is not None:
        tr = run.trace
        t0 = run.step * run.dt
        tr.rows.extend((t0 + (k + 1) * run.dt, 0.0, 0.0, False) for k in range(n))
        tr.rates.extend([np.zeros(tr.traced.size)] * n)
    run.step += n


def _settled_steps(run: _Run, fl: _Flows) -> int:
    """Steps DCQCN's senders hold their rates within ``_SETTLED`` (0: a mark pending or a rate recovering)."""
    tol = _SETTLED * fl.line
    if _recovering(fl, np.ones(fl.ids.size, dtype=bool)) or fl.p_hist.any():
        return 0
    _, d_rc, _ = dcqcn_derivatives(np.zeros(fl.ids.size), fl.rate, fl.rt, fl.rate, fl.alpha, run.dcq)
    drift = float(np.abs(d_rc).max()) * run.dt
    return run.max_steps if drift == 0 else int(min(tol.min() / drift, run.max_steps))


#: Float64 arrays the step keeps or makes per (flow, hop) entry (the entry tables, queue, offer, served,
#: moved and backlog copies), per flow (sender state, congestion control, outputs) and per link; counted
#: from simulate_fluid's code, with one spare each for temporaries.
_ARRAYS_PER_ENTRY = 24
_ARRAYS_PER_FLOW = 40
_ARRAYS_PER_LINK = 30


def fluid_bytes(
    n_flows: int,
    n_entries: int,
    n_links: int,
    cfg: FluidConfig,
    dcq: DcqcnParams,
    *,
    max_rtt_s: float | None = None,
) -> float:
    """Estimate of the bytes :func:`simulate_fluid` allocates, from counts (no allocation)::

        8 (24 E + F (40 + 3 A + 2 D) + 30 L)

    for ``E`` (flow, hop) entries, ``F`` flows, ``L`` links, ``A = base_rtt / dt`` steps of history (two
    round trips of delivered bytes for the acknowledgements, one of NACKs) and ``D = feedback_delay / dt``
    steps of DCQCN feedback history per flow (the per-step trace of ``trace_link`` comes on top: 32 B a
    step). With per-flow round trips (``max_rtt_s``: the largest, s), ``A`` and ``D`` are its steps (a
    flow's DCQCN feedback delay is then its RTT).
    """
    rtt = cfg.base_rtt_s if max_rtt_s is None else max_rtt_s
    ack = max(1, round(rtt / cfg.dt_s))
    delay = max(1, round((dcq.feedback_delay_s if max_rtt_s is None else max_rtt_s) / cfg.dt_s))
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
    rtt: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """NSCC's window law, spread over one base RTT (``rtt``: each flow's, s) per decision (htsim
    ``uec.cpp``, UETH commit of congestion-control.md Sec. 3.4). Returns the new window and the end of each
    flow's quick-adapt period.

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
    target = 0.75 * rtt
    per_step = cfg.dt_s / rtt
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
    qa_until = np.where(qa, sig.now_s + rtt + target, qa_until)
    return np.clip(window, cfg.mss_bytes, max_window), qa_until


def _result(run: _Run) -> FluidResult:
    """The outcome (:class:`FluidResult`): victims and roots from the links' statistics, the trace."""
    ent, ln, steps, end, start = run.ent_all, run.links, run.step, run.end, run.start
    n_flows = run.size.size
    path_cap = np.full(n_flows, np.inf)
    np.minimum.at(path_cap, ent.flow, run.cap[ent.link])
    ideal = run.size / path_cap
    switch_egress = np.bincount(ent.inner_link, minlength=run.cap.size) > 0
    congested = (switch_egress & (ln.busy_steps > 0.25 * max(steps, 1))) | (ln.trimmed > 0)
    on_paused = np.bincount(ent.flow, weights=(ln.pause_s > 0)[ent.link].astype(float), minlength=n_flows) > 0
    on_congested = (
        np.bincount(ent.inner_flow, weights=congested[ent.inner_link].astype(float), minlength=n_flows) > 0
    )
    slowed = (end - start) > 1.1 * ideal
    victims = np.flatnonzero(on_paused & ~on_congested & slowed)
    trace = None
    if run.trace is not None and run.trace.rows:
        tr = run.trace
        t, q, r, p = (np.array(col) for col in zip(*tr.rows, strict=True))
        trace = LinkTrace(tr.link, t, q, r, p.astype(bool), tr.traced, np.array(tr.rates))
    return FluidResult(
        transport=run.tr.name,
        flow_end_s=end,
        flow_ideal_s=ideal,
        trimmed_bytes=run.trimmed,
        link_pause_s=ln.pause_s,
        link_peak_queue_bytes=ln.peak_q,
        link_mean_queue_bytes=ln.sum_q / max(steps, 1),
        link_peak_ingress_bytes=ln.peak_in,
        victims=victims,
        congested_links=np.flatnonzero(congested),
        makespan_s=float(np.nanmax(end)) if np.isfinite(end).any() else math.nan,
        trace=trace,
        steps=steps,
        flow_bytes=run.size,
        flow_start_s=start,
        flow_sojourn_s=run.sojourn,
    )
