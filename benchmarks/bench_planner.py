"""Planner benchmarks: layouts evaluated per second, and a full 405B search on 16,384 GPUs.

Run: ``python benchmarks/bench_planner.py``. Prints, on the formula engine:

- the search of GPT-3 175B on 1,024 H100s (128 DGX nodes, global batch 1,536): layouts tried per second,
  cold (collective cache empty) and warm (a second search on the same StepModel);
- the step time of one layout, per call, on the fast path (step seconds only) and in full (breakdown);
- one memory breakdown of a DeepSeek-V3-like MoE layout, per call;
- the full search of Llama 3 405B on 16,384 H100s (2,048 nodes, three tiers, global batch 2,048 sequences
  of 8,192 tokens = 16 M tokens, Llama 3's batch), wall time including building the cluster.

Targets (issue 14: kept here, not in the test suite, since a busy machine measures less): the 405B search
at >= 10,000 layouts/s and under 10 s in all; a memory breakdown under 100 us.
"""

from __future__ import annotations

import argparse
import time

from aifabric.cluster.presets import preset
from aifabric.training.layout import ParallelLayout
from aifabric.training.memory import memory_breakdown
from aifabric.training.models import get_model
from aifabric.training.planner import plan
from aifabric.training.step import StepModel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--calls", type=int, default=5000, help="calls for the per-layout timings")
    args = ap.parse_args()
    rows: list[tuple[str, float, str]] = []

    spec = preset("dgx-h100-superpod", nodes=128)
    model = get_model("gpt3-175b")
    sm = StepModel(model, spec)
    cold = plan(model, spec, 1536, step_model=sm)
    rows.append(
        (f"plan gpt3-175b / 1,024 H100, cold: {cold.n_evaluated} layouts", cold.layouts_per_s, "layouts/s")
    )
    warm = plan(model, spec, 1536, step_model=sm)
    rows.append(
        (f"plan gpt3-175b / 1,024 H100, warm: {warm.n_evaluated} layouts", warm.layouts_per_s, "layouts/s")
    )

    lay = ParallelLayout(
        tp=8,
        pp=8,
        dp=16,
        sequence_parallel=True,
        zero_stage=1,
        microbatch_size=1,
        global_batch_size=1536,
        recompute="selective",
    )
    for label, fn in (
        ("step_seconds (fast path)", sm.step_seconds),
        ("evaluate (full breakdown)", sm.evaluate),
    ):
        fn(lay)
        t0 = time.perf_counter()
        for _ in range(args.calls):
            fn(lay)
        rows.append((f"{label}, one layout", (time.perf_counter() - t0) / args.calls * 1e6, "us/call"))

    # One memory breakdown of an MoE layout (target: well under 100 us, as a planner scores 10,000+
    # layouts per second).
    moe = get_model("deepseek-v3-like")
    moe_lay = ParallelLayout(
        tp=2, pp=1, dp=64, ep=64, zero_stage=1, recompute="selective", global_batch_size=64
    )
    memory_breakdown(moe, moe_lay)
    t0 = time.perf_counter()
    for _ in range(args.calls):
        memory_breakdown(moe, moe_lay, 80e9)
    rows.append(
        (
            "memory_breakdown, deepseek-v3-like layout",
            (time.perf_counter() - t0) / args.calls * 1e6,
            "us/call",
        )
    )

    t0 = time.perf_counter()
    big = preset("dgx-h100-superpod", nodes=2048, **{"scale_out.tiers": 3})
    res = plan(get_model("llama3-405b"), big, 2048)
    dt = time.perf_counter() - t0
    rows.append(
        (
            f"plan llama3-405b / 16,384 H100: {res.n_evaluated} layouts, {res.n_feasible} feasible",
            dt,
            "s total",
        )
    )
    rows.append(("  of which search", res.elapsed_s, "s"))
    rows.append(("  search speed", res.layouts_per_s, "layouts/s"))
    width = max(len(r[0]) for r in rows)
    for label, value, unit in rows:
        print(f"{label:<{width}}  {value:12,.2f} {unit}")
    print(f"405B winner: {res.best.summary()}")
    print(f"175B winner: {cold.best.summary()}")


if __name__ == "__main__":
    main()
