"""Leftovers of the last trial (issue 9): a row out of order is said, not taken silently; case 08's advice
does not ask for the ``topo -m`` its own file holds; a finding's busbw gap is named for what it is in text,
JSON and HTML; the AWS p5 GPU->NIC table (32 NICs) stays readable when piped."""

from __future__ import annotations

import json
from pathlib import Path

from tests.discovery.test_evidence_compare import NVLS_OFF, _info, _log
from tests.discovery.test_log_contradiction import RING, T7_BUSBW, _env
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.compare import compare_nccl_tests

runner = CliRunner()
DATA = Path(__file__).parent / "data"
CASE_01 = DATA / "case_01_dgx_h100_allreduce_single_node.txt"
CASE_08 = DATA / "case_08_b200_gke_a4_topo_and_2node_allgather.txt"
CASE_21 = DATA / "case_21_aws_p4d_p5_nccl_topology_xml.txt"
#: case 01's 256 MiB row (line 51, NVIDIA/nccl-tests #290), pasted again after its 4 GiB row (line 55).
ROW_256M = "   268435456      67108864     float     sum      -1   1139.2  235.63  412.35      0   1134.8  236.56  413.97      0"  # noqa: E501


def _case_01_with_repeat() -> str:
    lines = CASE_01.read_text().split("\n")
    assert lines[50].split()[0] == "268435456" and lines[54].split()[0] == "4294967296"
    return "\n".join([*lines[:55], ROW_256M, *lines[55:]])  # the repeat is line 56


# -- a row out of order --------------------------------------------------------------------------------------


def test_a_repeated_row_out_of_order_is_said_in_text_and_json(tmp_path: Path) -> None:
    table = compare_nccl_tests(_case_01_with_repeat()).tables[0]
    ((row, before, first),) = table.out_of_order
    assert (row.line, row.size_bytes, before.line, before.size_bytes) == (56, 1 << 28, 55, 1 << 32)
    assert first is not None and first.line == 51
    assert len(table.rows) == 7  # compared as printed
    log = tmp_path / "repeat.txt"
    log.write_text(_case_01_with_repeat())
    text = runner.invoke(app, ["nccl-tests", "compare", str(log)]).stdout
    said = "out of order (line 56): 256 MiB comes after 4 GiB (line 55) and repeats the size of line 51"
    assert said in text
    page = tmp_path / "repeat.html"
    data = json.loads(
        runner.invoke(app, ["nccl-tests", "compare", str(log), "--json", "--html", str(page)]).stdout
    )
    assert "table 1: line 56 out of order" in page.read_text()
    rows = data["tables"][0]["out_of_order_rows"]
    assert rows == [{"size_bytes": 1 << 28, "line": 56, "after_line": 55, "repeats_line": 51}]


def test_rows_in_order_say_nothing() -> None:
    table = compare_nccl_tests(CASE_01.read_text()).tables[0]
    assert table.out_of_order == ()
    assert table.to_dict()["out_of_order_rows"] == []


# -- case 08: the topo -m is in the file ---------------------------------------------------------------------


def test_case_08_advice_points_at_its_own_topology() -> None:
    table = compare_nccl_tests(CASE_08.read_text()).tables[0]
    assert table.topology_line == 34  # the matrix header of RAW DATA 1 (kubernetes-sigs/dranet)
    text = table.describe("unexplained_shortfall")
    assert "the GPU-NIC paths with nvidia-smi topo -m" not in text  # not asked for again
    assert "the GPU-NIC paths are in this file: nvidia-smi topo -m at line 34" in text
    assert "NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH" in text and "ibv_devinfo" in text  # the other asks stay


def test_a_log_without_topology_still_asks_for_it() -> None:
    table = compare_nccl_tests(_log([], 120.0)).tables[0]  # 120 of ~390 GB/s, no INFO line
    assert table.verdict == "unexplained_shortfall" and table.topology_line is None
    assert "the GPU-NIC paths with nvidia-smi topo -m" in table.describe("unexplained_shortfall")


# -- findings: the gap, not "explained" bandwidth ------------------------------------------------------------


def test_unexplained_shortfall_json_carries_its_gap_not_explained_bandwidth(tmp_path: Path) -> None:
    page = tmp_path / "case08.html"
    res = runner.invoke(app, ["nccl-tests", "compare", str(CASE_08), "--json", "--html", str(page)])
    finding = json.loads(res.stdout)["tables"][0]["findings"][0]
    assert finding["cause"] == "unexplained_shortfall" and "explained_bytes_per_s" not in finding
    assert finding["side"] == "below"
    # the mean of predicted - measured busbw over the 4 flagged large rows (1-8 GiB), as the text prints it
    table = compare_nccl_tests(CASE_08.read_text()).tables[0]
    gaps = [r.predicted_busbw_bytes_per_s - r.measured_busbw_bytes_per_s for r in table.flagged_rows]
    assert len(gaps) == finding["rows"] == 4
    assert finding["gap_bytes_per_s"] == sum(gaps) / len(gaps)
    assert f"unexplained_shortfall: {finding['gap_bytes_per_s'] / 1e9:,.2f} GB/s below" in page.read_text()


def test_a_contradiction_is_a_gap_above_the_model() -> None:
    # case_03 T7's plateau (392.7 GB/s, NVIDIA/nccl-tests #309) under NCCL_P2P_DISABLE=1 (~44 GB/s predicted)
    table = compare_nccl_tests(_log(_info(RING, _env("NCCL_P2P_DISABLE", "1")), T7_BUSBW)).tables[0]
    finding = table.findings[0]
    assert finding.cause == "log_contradiction" and finding.side == "above"
    above = [r.measured_busbw_bytes_per_s - r.predicted_busbw_bytes_per_s for r in table.large_rows]
    assert finding.gap_bytes_per_s == sum(above) / len(above) > 0
    assert table.to_dict()["findings"][0]["side"] == "above"


def test_a_cause_with_evidence_keeps_its_gap_below() -> None:
    table = compare_nccl_tests(_log(_info(NVLS_OFF, gdr=False), 120.0)).tables[0]
    assert table.verdict == "no_gdr"
    assert table.findings[0].side == "below" and table.findings[0].gap_bytes_per_s > 0


# -- the p5 GPU->NIC table -----------------------------------------------------------------------------------


def test_p5_gpu_nic_table_lists_each_gpus_nics_by_path_when_piped() -> None:
    # case 21: the AWS p5.48xlarge topology file, 8 H100 and 32 EFA NICs, four behind each GPU's switch
    out = runner.invoke(app, ["inspect", str(CASE_21)]).stdout
    p5, p4d = out.split("\n\n")[:2]
    assert "NICs by path" in p5 and "NIC31 ┃" not in p5
    gpu0 = next(line for line in p5.splitlines() if line.startswith(" GPU0 "))
    assert gpu0.rstrip().endswith("│ PIX: NIC0-NIC3; PHB: NIC4-NIC31")
    gpu7 = next(line for line in p5.splitlines() if line.startswith(" GPU7 "))
    assert gpu7.rstrip().endswith("│ PIX: NIC28-NIC31; PHB: NIC0-NIC27")
    assert max(len(line) for line in p5.splitlines() if "│" in line) <= 180  # the piped console's width
    # the p4d node's 4 NICs fit: a column each, as before
    assert "NICs by path" not in p4d and " NIC3 " in p4d
