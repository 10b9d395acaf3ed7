"""Defects D1-D5 and D7 of the issue-9 re-trial (trial 9b), one test each.

Inputs: ``data/trial9/wrong17.log`` (see its README) and hand-written lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.nccl_tests import parse_nccl_tests
from aifabric.errors import ParseError

DATA = Path(__file__).parent / "data" / "trial9"
WRONG = DATA / "wrong17.log"
runner = CliRunner()


# -- D1: nccl-tests' own check failed (#wrong 17, "Out of bounds values : 17 FAILED") ----------------------


def test_wrong_results_is_a_fault_naming_the_lines() -> None:
    table = compare_nccl_tests(WRONG.read_text(), source=WRONG.name).tables[0]
    # the bandwidth alone is healthy (within 7 % of the model); the failed check must still be the verdict
    assert table.verdict == "wrong_results"
    finding = table.findings[0]
    assert [(e.line, e.text) for e in finding.evidence] == [
        (19, "#wrong 17 (out-of-place, 1073741824 B)"),
        (22, "Out of bounds values : 17 FAILED"),
    ]
    assert finding.rows == 2 and finding.gap_bytes_per_s == 0.0


def test_wrong_results_in_the_cli() -> None:
    result = runner.invoke(app, ["nccl-tests", "compare", str(WRONG)])
    assert result.exit_code == 0, result.output
    assert "verdict: wrong_results" in result.output and "verdict: healthy" not in result.output
    assert "evidence line 19: #wrong 17" in result.output


def test_footer_failed_alone_is_a_fault() -> None:
    text = WRONG.read_text().replace("465.25     17", "465.25      0")
    table = compare_nccl_tests(text).tables[0]
    assert table.verdict == "wrong_results"
    assert [e.line for e in table.findings[0].evidence] == [22]


def test_zero_wrong_stays_healthy() -> None:
    text = WRONG.read_text().replace("465.25     17", "465.25      0").replace("17 FAILED", "0 OK")
    assert compare_nccl_tests(text).tables[0].verdict == "healthy"


# -- D5: a bandwidth field that is not a finite number is a corrupt row -------------------------------------


@pytest.mark.parametrize(("field", "value"), [("busbw", "1e309"), ("busbw", "nan"), ("algbw", "inf")])
def test_non_finite_bandwidth_is_refused(field: str, value: str) -> None:
    lines = WRONG.read_text().replace("465.25     17", "465.25      0").split("\n")
    parts = lines[17].split()  # line 18, the 512 MiB row
    parts[7 if field == "busbw" else 6] = value
    lines[17] = "  ".join(parts)
    with pytest.raises(ParseError) as err:
        parse_nccl_tests("\n".join(lines))
    assert err.value.line == 18 and f"{field} {value!r}" in str(err.value)


# -- D7: AIFABRIC_MAX_MEMORY is checked like --max-memory --------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "-5"])
def test_bad_max_memory_variable_exits_2(value: str) -> None:
    result = runner.invoke(app, ["nccl-tests", "compare", str(WRONG)], env={"AIFABRIC_MAX_MEMORY": value})
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "AIFABRIC_MAX_MEMORY" in lines[0] and value in lines[0], result.stderr


# -- D2, D3, D4: rank lines that contradict each other or the run parameters ---------------------------------


def _ok_text() -> str:
    return WRONG.read_text().replace("465.25     17", "465.25      0").replace("17 FAILED", "0 OK")


@pytest.mark.parametrize(
    ("old", "new", "line", "words"),
    [
        # D2: rank 4 an A100 among H100s
        ("device  4 [0x19] NVIDIA H100 80GB HBM3", "device  4 [0x19] NVIDIA A100-SXM4-80GB", 8,
         ["'NVIDIA A100-SXM4-80GB'", "rank 4", "mixed GPU models"]),
        # D3: one process cannot drive 99,999,999 GPUs when 8 rank lines (0-7) list the whole run
        ("nGpus 8 ", "nGpus 99999999 ", 1, ["nGpus 99999999", "rank lines list 8"]),
        # D4: rank 1 printed twice (device 1, then device 2), rank 2 missing
        ("Rank  2 Group  0 Pid 295203 on    <host-A> device  2",
         "Rank  1 Group  0 Pid 295203 on    <host-A> device  2",
         6, ["rank 1 appears twice, at lines 5 and 6"]),
    ],
)  # fmt: skip
def test_contradictory_rank_lines_are_refused(old: str, new: str, line: int, words: list[str]) -> None:
    text = _ok_text()
    assert old in text
    with pytest.raises(ParseError) as err:
        parse_nccl_tests(text.replace(old, new, 1))
    assert err.value.line == line and all(w in str(err.value) for w in words), str(err.value)


def test_identical_repeated_rank_line_and_consistent_ngpus_are_read() -> None:
    lines = _ok_text().split("\n")
    lines.insert(5, lines[4])  # the rank 1 line pasted twice, same values
    table = parse_nccl_tests("\n".join(lines))[0]
    assert table.n_ranks == 8 and table.gpu_name == "NVIDIA H100 80GB HBM3"


def _all_nvlink_matrix(n: int) -> str:
    """An ``nvidia-smi topo -m`` of ``n`` GPUs all joined by NV18, CPU affinity 0-55, NUMA 0."""
    header = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\tCPU Affinity\tNUMA Affinity"
    rows = [
        f"GPU{i}\t" + "\t".join("X" if i == j else "NV18" for j in range(n)) + "\t0-55\t0" for i in range(n)
    ]
    return "\n".join([header, *rows]) + "\n"


def test_matrix_of_more_gpus_than_a_node_holds_is_refused_at_its_header(tmp_path: Path) -> None:
    # D6: 2,000 GPU columns took 34 s and 1.2 GB before a message about scale_out.tiers; one node's topology
    # holds at most NCCL_TOPO_MAX_NODES = 256 GPUs (src/graph/topo.h)
    path = tmp_path / "topo300.txt"
    path.write_text(_all_nvlink_matrix(300))
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 2
    assert (
        "topo300.txt:1: the matrix header names 300 GPUs; one node's matrix holds at most 256"
        in result.output
    )


def test_node_too_big_for_the_two_node_fabric_names_the_input(tmp_path: Path) -> None:
    # D6: 200 GPUs in one node need 200 rails of leaves, more than a two-tier Clos of radix 64 joins. The
    # node alone is priced on its NVLink (one scale-up domain sends nothing to the leaves); the two-node
    # fabric its expected busbw is priced on (discovery/node_spec.expected_busbw) is what cannot be wired:
    # 2 x 200 = 400 GPUs on the same 200 rail leaves
    path = tmp_path / "topo200.txt"
    path.write_text(_all_nvlink_matrix(200))
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 2
    assert "topo200.txt: the node it describes cannot be wired: 400 GPUs need 200 leaves" in result.output
    assert "scale_out.tiers" not in result.output


@pytest.mark.parametrize("count", ["-7", "0", "19"])
def test_nvlink_count_outside_what_a_gpu_has_is_refused(tmp_path: Path, count: str) -> None:
    # D8: a GPU has at most 18 NVLinks (H100 SXM, B200); -7 was read silently as "NVLink: none"
    text = (DATA / "nvlink_negative.xml").read_text().replace('count="-7"', f'count="{count}"')
    path = tmp_path / "topo.xml"
    path.write_text(text)
    result = runner.invoke(app, ["inspect", str(path)])
    assert result.exit_code == 2
    assert f"topo.xml:5: <nvlink>: count={count} NVLinks: a GPU has 1 to 18 links" in result.output
