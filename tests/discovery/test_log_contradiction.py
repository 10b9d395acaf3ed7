"""A log measured far above what its own settings and NCCL INFO lines allow contradicts itself (issue 9).

Hand-written 2-node (16 x H100, 8 x 400G) all_reduce logs (test_evidence_compare's ``_log``) measuring the
plateau of case_03 T7, 392.7 GB/s with ``NCCL_ALGO=Ring`` (NVIDIA/nccl-tests #309), under a setting or INFO
line that rules that figure out; and one DGX H100 measuring 474 GB/s (case_01, NVIDIA/nccl-tests #290)
under ``NVLS multicast support is not available`` (the ring figure is ~370 GB/s without NVLS).
"""

from __future__ import annotations

import pytest
from tests.discovery.test_evidence_compare import NVLS_OFF, _info, _log

from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.fitting import fit_calibration

RING = "node-a:101:101 [0] NCCL INFO NCCL_ALGO set by environment to Ring"
T7_BUSBW = 392.7  # GB/s, case_03 T7 (NVIDIA/nccl-tests #309)
DGX_BUSBW = 474.0  # GB/s, case_01 (NVIDIA/nccl-tests #290)


def _env(name: str, value: str) -> str:
    return f"node-a:101:101 [0] NCCL INFO {name} set by environment to {value}"


@pytest.mark.parametrize(
    ("lines", "fact"),
    [
        (_info(RING, _env("NCCL_P2P_DISABLE", "1")), "NCCL_P2P_DISABLE=1"),  # predicted ~44 GB/s
        (_info(RING, _env("NCCL_NET_GDR_LEVEL", "LOC")), "NCCL_NET_GDR_LEVEL=LOC"),  # ~261 GB/s
        (_info(RING, network="Socket", gdr=False), "NET/Socket"),  # 0.55 of line rate: ~219 GB/s
    ],
)
def test_two_nodes_above_what_the_log_allows(lines: list[str], fact: str) -> None:
    text = _log(lines, T7_BUSBW)
    table = compare_nccl_tests(text).tables[0]
    assert table.large_deviation > 0.25  # far above the prediction the log's fact gives
    assert table.verdict == "log_contradiction"
    finding = table.findings[0]
    assert table.contradiction is not None and table.contradiction.fact == fact
    # the evidence is the line of the log that states the fact
    log_lines = text.split("\n")
    assert finding.evidence and all(e.text in log_lines[e.line - 1] for e in finding.evidence)
    assert any(fact.split("=")[0].replace("NET/", "") in e.text for e in finding.evidence)
    # without the fact the model gives the measured figure (within 15 %)
    assert table.contradiction.without_fact_bytes_per_s == pytest.approx(T7_BUSBW * 1e9, rel=0.15)
    assert "the log contradicts itself" in table.describe("log_contradiction")


def test_one_node_above_the_ring_figure_with_nvls_unavailable() -> None:
    text = _log(["node-0:1:1 [0] NCCL INFO NCCL version 2.19.3+cuda12.2", NVLS_OFF], DGX_BUSBW, 8, 1)
    table = compare_nccl_tests(text).tables[0]
    assert table.verdict == "log_contradiction"
    assert table.contradiction is not None and table.contradiction.fact == "NVLS multicast not available"
    assert "NVLS multicast support is not available" in table.findings[0].evidence[0].text


@pytest.mark.parametrize(
    ("lines", "busbw"),
    [
        (_info(RING, network="Socket", gdr=False), 219.0),  # what sockets allow: healthy
        (_info(NVLS_OFF), 330.0),  # case 24 [S1]: 2 nodes without NVLS
        (_info(RING), T7_BUSBW),  # nothing lowers the prediction
    ],
)
def test_a_run_at_what_its_log_allows_is_not_a_contradiction(lines: list[str], busbw: float) -> None:
    table = compare_nccl_tests(_log(lines, busbw)).tables[0]
    assert table.contradiction is None and table.verdict == "healthy"


def test_calibrating_a_self_contradicting_log_is_refused() -> None:
    tables = compare_nccl_tests(_log(_info(RING, _env("NCCL_P2P_DISABLE", "1")), T7_BUSBW)).tables
    with pytest.raises(ValueError, match=r"broken \(log_contradiction: line \d+: .*NCCL_P2P_DISABLE"):
        fit_calibration(tables)
