"""Input readers on hostile inputs: time at two sizes (linear readers double when the input doubles).

Run: ``python benchmarks/bench_inputs.py [--scale 1.0]``. Prints, for each pathological input of issue 14
(inputs that made the old readers backtrack or rescan) and each reader, the seconds at size n and 2n and
their ratio, then the time to refuse a 100 MB junk file from the command line (the issue asks < 5 s).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.nccl_tests import parse_nccl_tests
from aifabric.discovery.nccl_xml import parse_nccl_topologies
from aifabric.discovery.node import inspect_node_text
from aifabric.discovery.nvsmi import TopoMatrix
from aifabric.errors import AifabricError
from aifabric.inputs import load_yaml_text

HEADER = "#  size  count  type  redop  root  time  algbw  busbw #wrong  time  algbw  busbw #wrong"
ROW = "  4294967296  1073741824  float  sum  -1  15870  270.63  473.60  0  15773  272.30  476.53  0"
TABLE = f"{HEADER}\n{ROW}\n"

# name -> (reader, input of size n)
CASES: dict[str, tuple[Callable[[str], object], Callable[[int], str]]] = {
    "env line NCCL_A=1NCCL_A=1.. x": (parse_nccl_tests, lambda n: "NCCL_A=1" * (n // 400) + f" x\n{TABLE}"),
    "NCCL_NCCL_NCCL_..": (parse_nccl_tests, lambda n: "NCCL_" * (n // 5) + f"\n{TABLE}"),
    "rank line, long blank run": (
        parse_nccl_tests,
        lambda n: "#  Rank  0 Group  0 Pid  1 on h device  0 [0x1b] a" + " " * n + f"b\n{TABLE}",
    ),
    "rank ranges 0-100000 repeated": (
        parse_nccl_tests, lambda n: "# Ranks 0-100000 on h\n" * (n // 1000) + TABLE
    ),
    "cpulist 0-65535 repeated": (
        TopoMatrix.from_text,
        lambda n: "\tGPU0\tCPU Affinity\nGPU0\t X \t" + "0-65535," * (n // 40) + "0\n",
    ),
    "topo header 'CPU Affinity' x n": (
        TopoMatrix.from_text, lambda n: "GPU0 GPU1 " + "CPU Affinity " * (n // 13)
    ),
    "unclosed '<system' lines": (parse_nccl_topologies, lambda n: "<system a\n" * (n // 10)),
    "'<system/>' documents": (
        lambda t: inspect_node_text(t, fmt="nccl-xml"), lambda n: "<system/>\n" * (n // 1000)
    ),
    "YAML alias fan-out": (
        lambda t: load_yaml_text(t, "bench"),
        lambda n: "a: &a [x]\n" + "".join(f"k{i}: [*a, *a]\n" for i in range(n // 20_000)),
    ),
    "nccl-tests rows": (parse_nccl_tests, lambda n: HEADER + "\n" + (ROW + "\n") * (n // len(ROW))),
}  # fmt: skip


def seconds(reader: Callable[[str], object], text: str) -> float:
    t0 = time.perf_counter()
    with contextlib.suppress(AifabricError):
        reader(text)
    return time.perf_counter() - t0


def junk_refusal_s() -> float:
    """Seconds for ``aifabric nccl-tests compare`` to refuse a 100 MB junk file (sparse: no disk used)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "junk.txt"
        with path.open("wb") as fh:
            fh.truncate(100 * 10**6)
        t0 = time.perf_counter()
        result = CliRunner().invoke(app, ["nccl-tests", "compare", str(path)])
        elapsed = time.perf_counter() - t0
        assert result.exit_code == 2, result.stderr
        return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="n = 400 kB x scale")
    args = ap.parse_args()
    n = int(400_000 * args.scale)
    print(f"{'input':34s} {'n (chars)':>10s} {'t(n) s':>8s} {'t(2n) s':>8s} {'ratio':>6s}")
    for name, (reader, make) in CASES.items():
        small, large = seconds(reader, make(n)), seconds(reader, make(2 * n))
        print(f"{name:34s} {len(make(n)):10,d} {small:8.3f} {large:8.3f} {large / max(small, 1e-9):6.2f}")
    print(f"100 MB junk file refused by 'aifabric nccl-tests compare' in {junk_refusal_s():.3f} s")


if __name__ == "__main__":
    os.environ.setdefault("COLUMNS", "180")
    main()
