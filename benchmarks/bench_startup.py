"""Start-up benchmark: wall time of ``aifabric collective all_reduce --size 1GiB`` including Python start-up.

Issue 8 asks for <= 0.5 s. Run: ``python benchmarks/bench_startup.py`` (best of 5; on a loaded machine the
best run is the one closest to the idle figure). Import breakdown: ``python -X importtime -m aifabric
collective all_reduce --size 1GiB 2>&1 >/dev/null | sort -t'|' -k2 -n | tail``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def main() -> None:
    cmd = [sys.executable, "-m", "aifabric", "collective", "all_reduce", "--size", "1GiB"]
    walls, cpus = [], []
    for _ in range(5):
        before = os.times()
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        walls.append(time.perf_counter() - t0)
        after = os.times()
        cpus.append(
            after.children_user + after.children_system - before.children_user - before.children_system
        )
    print(f"{'aifabric collective (wall, best of 5)':45s} {min(walls):8.3f} s")
    print(f"{'aifabric collective (CPU user+sys, best of 5)':45s} {min(cpus):8.3f} s")


if __name__ == "__main__":
    main()
