"""Reports and sweeps: HTML report generation, trace generation, a 10,000-point formula sweep into SQLite.

Run: ``python benchmarks/bench_report.py [--workers 2]``. Prints the wall time of: rendering the HTML report
of a plan (64 DGX H100 nodes; the plan search itself excluded), of a fabric scenario (8 nodes, flow engine;
simulation excluded), of an nccl-tests comparison (case 03, 7 tables; comparison excluded), of an inspected
node (case 17 XML), the Perfetto trace of a step, and a 10,000-point sweep (50 cluster variants x 5
collectives x 40 sizes) with the local process executor into a fresh SQLite store. Targets: report < 2 s,
sweep < 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aifabric.cluster.presets import preset
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.node import inspect_node_text
from aifabric.engines.scenario import run_scenario
from aifabric.report.html import fabric_report, inspect_report, nccl_tests_report, plan_report, write_html
from aifabric.report.trace import step_trace, write_trace
from aifabric.sweep.grid import SweepSpec
from aifabric.sweep.parallel import run_into_db
from aifabric.training.models import get_model
from aifabric.training.planner import plan
from aifabric.training.step import StepModel


def timed(label: str, fn: Callable[[], object]) -> float:
    """Run ``fn``; print its wall time and this process's CPU time (the machine may be shared); return the
    wall time."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{label}: {wall:.2f} s wall, {cpu:.2f} s CPU in this process")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    print(f"load average over the last minute: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    out = Path(tempfile.mkdtemp())
    spec = preset("dgx-h100-superpod", nodes=64)
    model = get_model("megatron-gpt-39.1b")
    sm = StepModel(model, spec)
    res = plan(model, spec, 1536, top=5, step_model=sm)
    why = res.why(sm)
    timed("plan report (HTML, 5 layouts)", lambda: write_html(plan_report(res, why, spec), out / "plan.html"))
    sc = run_scenario("all_reduce", 2**26, preset("dgx-h100-superpod", nodes=8))
    timed("fabric report (HTML, heatmaps)", lambda: write_html(fabric_report(sc), out / "fabric.html"))
    data = Path(__file__).resolve().parents[1] / "tests" / "discovery" / "data"
    log = (data / "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt").read_text()
    comparison = compare_nccl_tests(log, source="case_03")
    timed(
        f"nccl-tests compare report (HTML, {len(comparison.tables)} tables)",
        lambda: write_html(nccl_tests_report(comparison), out / "nccl.html"),
    )
    xml = (data / "case_17_azure_ndv4_ndv5_topology_xml.txt").read_text()
    nodes = inspect_node_text(xml, source="case_17")
    timed(
        f"inspect report (HTML, {len(nodes)} nodes)",
        lambda: write_html(inspect_report(nodes), out / "i.html"),
    )
    timed("step trace (JSON)", lambda: write_trace(step_trace(res.best), out / "step.json"))
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
    dt = timed(
        f"sweep of {n:,} points, {args.workers} local process(es), SQLite",
        lambda: run_into_db(grid, out / "sweep.db", workers=args.workers, executor="local", batch=256),
    )
    print(f"  {n / dt:,.0f} points/s (wall)")


if __name__ == "__main__":
    main()
