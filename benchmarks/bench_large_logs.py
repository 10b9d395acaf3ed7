"""``compare_nccl_tests`` on large logs (issue 9, trial 9 item 11): CPU time and peak memory at two sizes.

Run: ``python benchmarks/bench_large_logs.py [--scale 1.0]``. For each large input of the trial (one table of
many rows, many tables, a table under many ``NCCL INFO`` lines, interleaved kubectl pods) it prints the CPU
seconds of :func:`~aifabric.discovery.compare.compare_nccl_tests` at size n and 2n, their ratio (a linear
reader about doubles) and the peak traced memory. Trial 9 measured, before the fix: 6,000 rows 16.5 s, 120k
rows > 120 s at 750 MB, 200k INFO lines 36 s, 2,000 tables 53 s.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

from aifabric.discovery.compare import compare_nccl_tests

HEAD = (
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20\n"
    + "".join(
        f"#  Rank {r:2d} Group  0 Pid 1 on host-a device {r:2d} [0x18] NVIDIA H100 80GB HBM3\n"
        for r in range(8)
    )
    + "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
)
# case 01 (NVIDIA/nccl-tests #290), the 4 GB row
ROW = (
    "  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0"
    "    15773  272.30  476.53      0\n"
)
INFO = "node000:12345:12345 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA\n"

CASES: dict[str, Callable[[int], str]] = {
    "one table, n rows": lambda n: HEAD + ROW * n,
    "n/10 tables of 10 rows": lambda n: (HEAD + ROW * 10) * (n // 10),
    "n x 10 INFO lines, one table": lambda n: INFO * (10 * n) + HEAD + ROW * 6,
    "kubectl pods interleaved, n rows": lambda n: "".join(
        f"[pod/l/launcher] {line}\n[pod/w/worker] noise 1 2 3\n" for line in (HEAD + ROW * n).splitlines()
    ),
}


def measure(text: str) -> tuple[float, float]:
    """CPU seconds and peak traced MB of one comparison of ``text``."""
    tracemalloc.start()
    start = time.process_time()
    compare_nccl_tests(text)
    seconds = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    return seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies n (default n = 5,000)")
    n = int(5000 * parser.parse_args().scale)
    print(f"{'input':36s} {'n':>8s} {'s (n)':>8s} {'s (2n)':>8s} {'ratio':>6s} {'MB (2n)':>8s}")
    for name, make in CASES.items():
        small, _ = measure(make(n))
        large, peak = measure(make(2 * n))
        print(f"{name:36s} {n:8d} {small:8.2f} {large:8.2f} {large / small:6.2f} {peak:8.1f}")


if __name__ == "__main__":
    main()
