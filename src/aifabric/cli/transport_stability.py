"""``aifabric transport stability``: the phase margin of DCQCN on one bottleneck against the number of flows
and the feedback delay, from both linearisations of its fluid model (:mod:`aifabric.transport.stability`):
Zhu, Ghobadi, Misra and Padhye, "ECN or Delay: Lessons Learnt from Analysis of DCQCN and TIMELY", CoNEXT
2016, Sec. 4.2 and Appendix A (doi:10.1145/2999572.2999593).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.table import Table

from aifabric.cli.common import console, emit_json, literal
from aifabric.errors import ConfigError
from aifabric.transport.params import DcqcnParams, dcqcn_preset, dcqcn_presets
from aifabric.transport.stability import MarginSweep, margin_sweep, unstable_runs
from aifabric.units import parse_time

__all__ = ["DEFAULT_DELAYS", "DEFAULT_PRESET", "MAX_DELAYS", "MAX_FLOWS", "stability_scenario"]

#: The model as the authors ran it (catalogue ``conext16-code``): the RED slope of the paper's figure
#: without pinning the queue at Kmax; ``conext16-figure`` holds the figure's own parameters.
DEFAULT_PRESET = "conext16-code"
#: The delays of the published phase-margin figure (``pm_rai40_delay50.txt``, ``pm_rai40_delay100.txt``).
DEFAULT_DELAYS = ("50 us", "100 us")
#: Largest N a run takes: the exact linearisation costs ~10 ms per (N, delay) on one core.
MAX_FLOWS = 1000
MAX_DELAYS = 8
_SHOWN = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def _params(preset: str | None) -> DcqcnParams:
    name = preset or DEFAULT_PRESET
    if name not in dcqcn_presets():
        raise ValueError(f"--dcqcn: unknown preset {name!r}; known: {', '.join(dcqcn_presets())}")
    return dcqcn_preset(name)


def _delays(delays: list[str] | None) -> list[float]:
    """Feedback delays in seconds, each in [0, 1) s, at most ``MAX_DELAYS``, in order without repeats."""
    given = list(dict.fromkeys(delays or DEFAULT_DELAYS))
    if len(given) > MAX_DELAYS:
        raise ValueError(f"--delay: at most {MAX_DELAYS} delays per run, got {len(given)}")
    out = [parse_time(d, field="--delay") for d in given]
    for raw, d in zip(given, out, strict=True):
        if not d < 1.0:
            raise ValueError(f"--delay: the control-loop delay must be under 1 s, got {raw!r}")
    return list(dict.fromkeys(out))


def _shown(sweep: MarginSweep, runs: list[list[tuple[int, int]]]) -> list[int]:
    """Rows of the table: round numbers of flows and both ends of every unstable run (and the N after)."""
    top = sweep.flows[-1]
    edges = {n for per in runs for first, last in per for n in (first, last, last + 1)}
    return sorted(n for n in set(_SHOWN) | edges if n <= top)


def _runs_text(runs: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs) or "none"


def _report(name: str, prm: DcqcnParams, sweep: MarginSweep) -> dict[str, Any]:
    per_delay = []
    for i, tau in enumerate(sweep.delays_s):
        row: dict[str, Any] = {"delay_s": tau}
        for model, grid in (("exact", sweep.exact_deg), ("paper", sweep.paper_deg)):
            row[model] = {
                "unstable_flows": [list(r) for r in unstable_runs(sweep.flows, grid[i])],
                "stable_from_flows": sweep.stable_from(grid[i]),
                # JSON has no infinity: a fixed point pinned at Kmax (no margin) is null
                "phase_margin_deg": [float(m) if np.isfinite(m) else None for m in grid[i]],
            }
        per_delay.append(row)
    return {
        "scenario": "stability",
        "dcqcn": name,
        "capacity_bytes_per_s": prm.capacity_bytes_per_s,
        "r_ai_bytes_per_s": prm.r_ai_bytes_per_s,
        "kmin_bytes": prm.kmin_bytes,
        "kmax_bytes": prm.kmax_bytes,
        "pmax": prm.pmax,
        "flows": sweep.flows,
        "delays": per_delay,
        "source": 'Zhu et al., "ECN or Delay", CoNEXT 2016, Sec. 4.2 and Appendix A',
    }


def _margin(m: float) -> str:
    return "pinned" if m == -np.inf else f"{m:+.1f}"


def _print(report: dict[str, Any], sweep: MarginSweep) -> None:
    console.print(
        f"[bold]DCQCN stability[/] on one bottleneck, N = 1-{sweep.flows[-1]} flows, preset "
        f"{literal(report['dcqcn'])}: {report['capacity_bytes_per_s'] * 8 / 1e9:g} Gb/s, R_AI "
        f"{report['r_ai_bytes_per_s'] * 8 / 1e6:g} Mb/s, RED {report['kmin_bytes'] / 1e3:g}-"
        f"{report['kmax_bytes'] / 1e3:g} KB up to Pmax {report['pmax']:g}",
        markup=True,
    )
    console.print(
        "Phase margin (degrees, > 0 stable) of the linearised fluid model: exact, and the paper's Taylor "
        f"linearisation ({report['source']})",
        markup=False,
    )
    runs = [
        unstable_runs(sweep.flows, g[i])
        for g in (sweep.exact_deg, sweep.paper_deg)
        for i in range(len(sweep.delays_s))
    ]
    t = Table(show_edge=False)
    t.add_column("N", justify="right")
    for tau in sweep.delays_s:
        t.add_column(f"{tau * 1e6:g} us exact", justify="right")
        t.add_column(f"{tau * 1e6:g} us paper", justify="right")
    for n in _shown(sweep, runs):
        cells = [
            _margin(g[i, n - 1])
            for i in range(len(sweep.delays_s))
            for g in (sweep.exact_deg, sweep.paper_deg)
        ]
        t.add_row(str(n), *cells)
    console.print(t)
    if np.isneginf(sweep.exact_deg).any():
        console.print("  pinned: p* > Pmax, the queue sits at Kmax (no linearisation; counted unstable)")
    for row in report["delays"]:
        for model in ("exact", "paper"):
            r = row[model]
            runs_i = [tuple(x) for x in r["unstable_flows"]]
            start = r["stable_from_flows"]
            tail = f"stable from N = {start}" if start is not None else "unstable at the largest N"
            console.print(
                f"  {row['delay_s'] * 1e6:g} us, {model}: unstable for N = {_runs_text(runs_i)}; {tail}",
                markup=False,
            )


def stability_scenario(
    max_flows: int | None, delays: list[str] | None, preset: str | None, *, json_out: bool
) -> None:
    """Run the stability scenario: margins for N = 1 .. ``max_flows`` (default 100) at each delay (default
    50 and 100 us, the published figure's) under a catalogue DCQCN preset (default ``conext16-code``).

    Raises
    ------
    ValueError
        For ``max_flows`` outside 1 .. ``MAX_FLOWS``, a delay that cannot be read, is negative or is 1 s or
        more, more than ``MAX_DELAYS`` delays, or an unknown preset; each naming its option.
    """
    n = 100 if max_flows is None else max_flows
    if not 1 <= n <= MAX_FLOWS:
        raise ValueError(f"--flows: must be from 1 to {MAX_FLOWS}, got {n}")
    prm = _params(preset)
    taus = _delays(delays)
    try:
        sweep = margin_sweep(prm, n, taus)
    except ConfigError as err:  # a parameter the preset and the delay give together
        raise ValueError(f"--dcqcn/--delay: {err}") from None
    report = _report(preset or DEFAULT_PRESET, prm, sweep)
    if json_out:
        emit_json(report)
        return
    _print(report, sweep)
