"""Fabric-aware training step benchmark: a 4,096-GPU job's step on the flow engine.

Run: ``python benchmarks/bench_training_fabric.py``. Prints the wall time of :func:`fabric_step` for
Llama 3 8B with TP 8 and DP 512 on 512 DGX H100 nodes (4,096 GPUs, two tiers), fragmented placement and
ECMP (issue target: < 30 s), and the DP slowdown it finds.
"""

from __future__ import annotations

import time

from aifabric.cluster.presets import preset
from aifabric.training.fabric_step import fabric_step
from aifabric.training.layout import ParallelLayout
from aifabric.training.models import get_model
from aifabric.training.step import StepOptions


def main() -> None:
    spec = preset("dgx-h100-superpod", nodes=512)
    lay = ParallelLayout(
        tp=8, dp=512, microbatch_size=1, global_batch_size=512, recompute="selective", zero_stage=1
    )
    opts = StepOptions(overlap_grad_reduce=False)
    for placement, routing in (("packed", "ecmp"), ("fragmented", "ecmp"), ("fragmented", "spray")):
        t0 = time.perf_counter()
        fs = fabric_step(
            get_model("llama3-8b"), lay, spec, placement=placement, routing=routing, seed=1, options=opts
        )
        dt = time.perf_counter() - t0
        print(
            f"4,096-GPU step, {placement:>10} {routing:>5}: {dt:6.2f} s wall, "
            f"DP reduction x{fs.dp_slowdowns[0]:.2f}, "
            f"step {fs.steps[0].step_s:.3f} s (formula {fs.formula.step_s:.3f} s)"
        )


if __name__ == "__main__":
    main()
