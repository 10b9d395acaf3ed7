"""Reports and sweeps: HTML report generation, trace generation, a 10,000-point formula sweep into SQLite.

Run: ``python benchmarks/bench_report.py [--workers 2]``. Prints the wall time of: rendering the HTML report
of a plan (64 DGX H100 nodes; the plan search itself excluded), of a fabric scenario (8 nodes, flow engine;
simulation excluded), the Perfetto trace of a step, and a 10,000-point sweep (50 cluster variants x 5
collectives x 40 sizes) with the local process executor into a fresh SQLite store. Targets: report < 2 s,
sweep < 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from aifabric.cluster.presets import preset
from aifabric.engines.scenario import run_scenario
from aifabric.report.html import fabric_report, plan_report, write_html
from aifabric.report.trace import step_trace, write_trace
from aifabric.sweep.grid import SweepSpec
from aifabric.sweep.parallel import run_into_db
from aifabric.training.models import get_model
from aifabric.training.planner import plan
from aifabric.training.step import StepModel


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp())
    spec = preset("dgx-h100-superpod", nodes=64)
    model = get_model("megatron-gpt-39.1b")
    sm = StepModel(model, spec)
    res = plan(model, spec, 1536, top=5, step_model=sm)
    why = res.why(sm)
    t0 = time.perf_counter()
    write_html(plan_report(res, why, spec), out / "plan.html")
    print(f"plan report (HTML, 5 layouts): {time.perf_counter() - t0:.2f} s")
    sc = run_scenario("all_reduce", 2**26, preset("dgx-h100-superpod", nodes=8))
    t0 = time.perf_counter()
    write_html(fabric_report(sc), out / "fabric.html")
    print(f"fabric report (HTML, heatmaps): {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    write_trace(step_trace(res.best), out / "step.json")
    print(f"step trace (JSON): {time.perf_counter() - t0:.3f} s")
    grid = SweepSpec.from_dict(
        {
            "cluster": "dgx-h100-superpod",
            "vary": {"nodes": [4 * k for k in range(1, 26)], "scale_out.nic": ["connectx-7", "connectx-8"]},
            "collectives": [
                {"op": op, "sizes": [2**k for k in range(0, 40)]}
                for op in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
            ],
        }
    )
    n = len(grid.points())
    t0 = time.perf_counter()
    run_into_db(grid, out / "sweep.db", workers=args.workers, batch=256)
    dt = time.perf_counter() - t0
    print(f"sweep of {n:,} points, {args.workers} process(es), SQLite: {dt:.1f} s ({n / dt:,.0f} points/s)")


if __name__ == "__main__":
    main()
