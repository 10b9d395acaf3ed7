"""The Meta story on one job: PFC only, tuned DCQCN and receiver-driven admission side by side.

Meta ran RoCE for AI training with PFC alone for over a year after a tuned DCQCN gave only marginal gains at
400G, then co-designed the collective library for receiver-driven admission (a clear-to-send per channel
buffer: the receiver bounds the bytes in flight towards it). The job here is an MoE all-to-all with a hot
expert (:func:`~aifabric.transport.scenarios.all_to_all` with ``skew``): an incast hidden inside an
all-to-all. :func:`meta_story` runs it under the three transports and says who wins and why, from the
figures of the runs (job completion, the cold experts' completion, pause time, the hot port's queue).

The job is done when its last flow is (the step waits for every expert), so the winner is the transport
with the shortest completion; completions within 2 % are a tie, broken by the total pause time (pauses
are what spread to other jobs: the victims of head-of-line blocking).

References
----------
.. [1] A. Gangidi et al., "RDMA over Ethernet for Distributed AI Training at Meta Scale", SIGCOMM 2024,
   doi:10.1145/3651890.3672233; Meta engineering blog, 5 Aug 2024 (congestion-control.md Sec. 4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aifabric.transport.fluidnet import FluidConfig, FluidResult, transport
from aifabric.transport.scenarios import Scenario, all_to_all, run_scenario

__all__ = ["META_TRANSPORTS", "StoryRow", "meta_job", "meta_story", "story_rows", "winner"]

#: PFC only, DCQCN with the paper's stability tuning, receiver clear-to-send admission.
META_TRANSPORTS = ("roce-pfc", "roce-dcqcn-tuned", "receiver-driven")

_TIE = 0.02


@dataclass(frozen=True)
class StoryRow:
    """One transport's run of the job (seconds, bytes).

    Attributes
    ----------
    transport : str
    job_s : float
        When the last flow ended.
    cold_s : float
        When the last flow to a cold expert (not host 0) ended; its contention-free value is
        ``(n - 1) x bytes_per_peer / rate``.
    pause_s : float
        Pause time summed over links.
    hot_peak_queue_bytes : float
        Peak queue at the hot expert's port.
    victims : int
        Flows slowed by a pause without crossing a congested link.
    why : str
        One sentence from the figures.
    """

    transport: str
    job_s: float
    cold_s: float
    pause_s: float
    hot_peak_queue_bytes: float
    victims: int
    why: str


def meta_job(
    hosts: int = 16, bytes_per_peer: float = 256e3, skew: float = 4.0, rate: float = 50e9
) -> Scenario:
    """The story's job: an MoE all-to-all among ``hosts`` with a hot expert (host 0 gets ``skew`` x)."""
    return all_to_all(hosts, bytes_per_peer, rate, skew=skew)


def _why(name: str, res: FluidResult, sc: Scenario, cold_ideal_s: float, cold_s: float) -> str:
    hot = sc.watch_link
    kind = transport(name)
    if kind.congestion_control == "window":
        return (
            f"clear-to-send bounds the bytes in flight to each receiver (one BDP), so the hot port's queue "
            f"stays at {res.link_peak_queue_bytes[hot] / 1e3:.0f} KB, nothing pauses and the cold experts "
            f"finish at {cold_s / cold_ideal_s:.2f}x their contention-free time"
        )
    verb = "DCQCN marks and slows the senders, but" if kind.congestion_control == "dcqcn" else "with no"
    tail = " end-to-end control," if kind.congestion_control != "dcqcn" else ""
    return (
        f"{verb}{tail} the hot port's queue reaches {res.link_peak_queue_bytes[hot] / 1e3:.0f} KB and PFC "
        f"pauses the senders for {res.link_pause_s.sum() * 1e6:.0f} us in all; {res.victims.size} flows to "
        f"cold experts wait behind them (head-of-line blocking) and finish at "
        f"{cold_s / cold_ideal_s:.2f}x their contention-free time"
    )


def story_rows(job: Scenario, results: dict[str, FluidResult]) -> list[StoryRow]:
    """One :class:`StoryRow` per transport from runs of ``job`` already made (name -> result)."""
    last = np.array([p[-1] for p in job.paths])
    cold = last != job.watch_link
    into = np.bincount(last[cold], weights=job.bytes_per_flow[cold], minlength=job.capacity_bytes_per_s.size)
    cold_ideal = float((into / job.capacity_bytes_per_s).max())  # the busiest cold receiver at line rate
    rows = []
    for name, res in results.items():
        cold_s = float(np.nanmax(res.flow_end_s[cold])) if cold.any() else 0.0
        rows.append(
            StoryRow(
                name,
                res.makespan_s,
                cold_s,
                float(res.link_pause_s.sum()),
                float(res.link_peak_queue_bytes[job.watch_link]),
                int(res.victims.size),
                _why(name, res, job, cold_ideal, cold_s),
            )
        )
    return rows


def meta_story(
    sc: Scenario | None = None,
    transports: tuple[str, ...] = META_TRANSPORTS,
    *,
    config: FluidConfig | None = None,
) -> list[StoryRow]:
    """Run the job (default :func:`meta_job`) under each transport; one :class:`StoryRow` each.

    Raises
    ------
    ConfigError
        An unknown transport, or a run above the memory limit.
    """
    job = sc or meta_job()
    for name in transports:
        transport(name)
    return story_rows(job, {name: run_scenario(job, name, config) for name in transports})


def winner(rows: list[StoryRow]) -> tuple[StoryRow, str]:
    """The winning row and the reason (module docstring: completion, ties within 2 % by pause time)."""
    best = min(r.job_s for r in rows)
    tied = [r for r in rows if r.job_s <= best * (1 + _TIE)]
    win = min(tied, key=lambda r: (r.pause_s, r.job_s))
    if len(tied) == 1:
        return win, f"shortest job completion ({win.job_s * 1e6:.1f} us)"
    others = ", ".join(r.transport for r in tied if r is not win)
    return win, (
        f"job completion within {_TIE:.0%} of {others} ({win.job_s * 1e6:.1f} us), and the least pause time "
        f"({win.pause_s * 1e6:.0f} us): pauses are what spread to other jobs"
    )
