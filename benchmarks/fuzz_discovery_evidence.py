"""Fuzz the pasted-log reader, the NCCL INFO reader and compare with many more damaged logs than the suite.

Run: ``python benchmarks/fuzz_discovery_evidence.py [--examples N]`` from the repository root (tests/ must
be importable). Prints the examples run per target and the slowest example's wall time; exits 1 on the
first input that raises anything but a one-line ParseError/ValueError with its line inside the input.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.discovery import test_robustness_evidence as t  # noqa: E402
from tests.discovery.test_robustness import SEEDS  # noqa: E402

from aifabric.discovery.node import inspect_node_text  # noqa: E402


def _fuzz(target: Callable[[str], object], texts: tuple[str, ...], examples: int, slowest: dict) -> int:
    count = 0

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(t.damaged(texts))
    def run(text: str) -> None:
        nonlocal count
        start = time.perf_counter()
        try:
            target(text)
        except ValueError as err:
            t._check_error(err, text)
        count += 1
        slowest["seconds"] = max(slowest["seconds"], time.perf_counter() - start)

    run()
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--examples", type=int, default=5000, help="examples per target (default 5000)")
    args = ap.parse_args()
    data = Path(__file__).resolve().parents[1] / "tests" / "discovery" / "data"
    topologies = (
        "case_08_b200_gke_a4_topo_and_2node_allgather.txt",
        "case_17_azure_ndv4_ndv5_topology_xml.txt",
        "case_21_aws_p4d_p5_nccl_topology_xml.txt",
        "case_26_a30_pcie_two_nics_phb_no_pcie_switch.txt",
    )
    texts = (
        tuple((data / c).read_text(encoding="utf-8") for c in (*t.CASES, *topologies))
        + t.HAND
        + tuple(SEEDS.values())
    )
    slowest = {"seconds": 0.0}
    targets = {
        "parse_pasted": lambda text: t.parse_pasted(text, "fuzz"),
        "parse_nccl_info": lambda text: t.parse_nccl_info(text.split("\n")),
        "compare_nccl_tests": lambda text: t.compare_nccl_tests(text, source="fuzz"),
        "inspect_node_text": lambda text: inspect_node_text(text, source="fuzz"),
    }
    for name, target in targets.items():
        print(f"{name:20s} {_fuzz(target, texts, args.examples, slowest):7d} examples, no traceback")
    print(f"slowest example: {slowest['seconds'] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
