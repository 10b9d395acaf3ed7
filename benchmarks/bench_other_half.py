"""The other half's speed: ``aifabric cluster show`` and ``aifabric checkpoint`` on 100,000 GPUs, start-up
included (wall and CPU time of a fresh process), and the library calls behind them.

Run: ``python benchmarks/bench_other_half.py``. The wall time counts waiting for a shared CPU; the CPU time
(user + sys of the child) is the figure to hold against the 1 s budget on a loaded machine.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "examples" / "cluster-100k.yaml")
COMMANDS = {
    "aifabric --version (start-up only)": ["--version"],
    "aifabric cluster show (100,000 GPUs)": ["cluster", "show", CLUSTER],
    "aifabric checkpoint (100,000 GPUs, llama3-405b)": [
        "checkpoint",
        CLUSTER,
        "--model",
        "llama3-405b",
        "--tp",
        "8",
        "--pp",
        "10",
        "--mtbf",
        "2.78 h",
    ],
}


def _run(args: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "from aifabric.cli.app import main; main()", *args],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    width = max(map(len, COMMANDS))
    print(f"{'command':<{width}}  {'wall s':>7}  {'cpu s':>6}  (best of 3)")
    for label, args in COMMANDS.items():
        runs = [_run(args) for _ in range(3)]
        wall = min(r[0] for r in runs)
        cpu = min(r[1] for r in runs)
        print(f"{label:<{width}}  {wall:7.2f}  {cpu:6.2f}")


if __name__ == "__main__":
    main()
