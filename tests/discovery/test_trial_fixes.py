"""Defects a new-user trial found in the discovery front doors (issue 9), one test each."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.fitting import fit_calibration
from aifabric.errors import ParseError

DATA = Path(__file__).parent / "data"
runner = CliRunner()


def _logs() -> list[Path]:
    """Every shared case that nccl-tests compare reads (the topology-only ones have no table)."""
    out = []
    for path in sorted(DATA.glob("case_*.txt")):
        try:
            compare_nccl_tests(path.read_text(), source=path.name)
        except ParseError:
            continue
        out.append(path)
    return out


@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.name[:7])
def test_cli_flags_only_with_a_finding(path: Path) -> None:
    # "a healthy run yields no flag": per table, a 'flagged' line iff the verdict is not healthy
    result = runner.invoke(app, ["nccl-tests", "compare", str(path)], terminal_width=200)
    assert result.exit_code == 0, result.output
    blocks = [b for b in re.split(r"^Table \d+", result.output, flags=re.M) if "verdict" in b]
    assert blocks
    for block in blocks:
        healthy = "verdict: healthy" in block
        assert healthy != bool(re.search(r"^\s+flagged ", block, flags=re.M)), block
        assert healthy != ("FLAG" in block), block


CASE_01 = DATA / "case_01_dgx_h100_allreduce_single_node.txt"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["nccl-tests", "compare", CASE_01, "--algo", "nvls", "--no-nvls"],
            "--algo nvls conflicts with --no-nvls",
        ),
        (["nccl-tests", "compare", CASE_01, "--cluster", "dgx-h100", "--gpu", "b200"], "--gpu: 'b200'"),
        (
            ["nccl-tests", "compare", CASE_01, "--cluster", "dgx-h100", "--nic-speed", "400 Gb/s"],
            "--nic-speed",
        ),
        (
            ["nccl-tests", "compare", CASE_01, "--cluster", "dgx-h100", "--gpus-per-node", "8"],
            "--gpus-per-node",
        ),
        (
            ["calibrate", CASE_01, "--cluster", "dgx-h100", "--gpu", "b200"],
            "conflicts with --cluster dgx-h100",
        ),
        (["calibrate", CASE_01, "--name", ""], "--name: '' is empty"),
    ],
)
def test_conflicting_or_empty_options_refused(args: list, message: str) -> None:
    # an option the run would silently drop is refused: exit 2, one line naming it
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_repeated_table_and_log_used_once() -> None:
    out = runner.invoke(app, ["nccl-tests", "compare", str(CASE_01), "--table", "1", "--table", "1"])
    assert out.exit_code == 0 and out.output.count("verdict:") == 1
    once = runner.invoke(app, ["calibrate", str(CASE_01), "--json"])
    twice = runner.invoke(app, ["calibrate", str(CASE_01), str(CASE_01), "--json"])
    assert twice.exit_code == 0 and twice.output == once.output  # the same rows, fitted once


#: Healthy tables whose rows determine no knob (2-node NVLSTree: NVLink-bound plateau): refused, "nothing
#: to fit" (issue 9, trial 9 defect 6).
_DETERMINE_NOTHING = {("case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", 1),
                      ("case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", 4)}  # fmt: skip


@pytest.mark.parametrize("path", _logs(), ids=lambda p: p.name[:7])
def test_calibrate_refuses_exactly_what_compare_calls_broken(path: Path) -> None:
    # one rule for both commands: a table whose verdict is not healthy is not fitted (case_08, case_03 T3/T5)
    for comp in compare_nccl_tests(path.read_text(), source=path.name).tables:
        if comp.verdict == "healthy" and len(comp.rows) == 1:  # case_31: one 8 MiB row constrains nothing
            with pytest.raises(ValueError, match=r"^nothing to fit: 1 row\(s\)"):
                fit_calibration([comp])
        elif comp.verdict == "healthy" and (path.name, comp.index) in _DETERMINE_NOTHING:
            with pytest.raises(ValueError, match=r"^nothing to fit: intra_scale: "):  # issue 9, defect 6
                fit_calibration([comp])
        elif comp.verdict == "healthy":
            assert fit_calibration([comp]).rows
        else:
            with pytest.raises(ValueError, match=rf"table {comp.index}: not fitted: .*\({comp.verdict}: "):
                fit_calibration([comp])


def test_cli_calibrate_refuses_case_08() -> None:
    result = runner.invoke(app, ["calibrate", str(DATA / "case_08_b200_gke_a4_topo_and_2node_allgather.txt")])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: table 1: not fitted: the diagnosis found the run broken (unexplained_shortfall: 130.9 GB/s "
        "below the model over 4 large row(s)); fix it and measure again"
    )


def test_rank_count_contradicting_the_rank_lines_refused(tmp_path: Path) -> None:
    # case_01 lists ranks 0-7 on one host: 16 ranks, from --ranks or NCCL's own print, is impossible
    forced = runner.invoke(app, ["nccl-tests", "compare", str(CASE_01), "--ranks", "16"])
    assert forced.exit_code == 2
    assert forced.stderr.strip().endswith("--ranks 16 conflicts with the log's 8 rank lines (ranks 0-7)")
    assert len(forced.stderr.strip().splitlines()) == 1
    lines = CASE_01.read_text().split("\n")
    first_rank = next(i for i, line in enumerate(lines) if re.match(r"#\s+Rank\s+0 ", line))
    info = "host:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 1 localRanks 8 localRank 0 MNNVL 0"
    log = tmp_path / "nranks16.txt"
    log.write_text("\n".join([*lines[:first_rank], info, *lines[first_rank:]]))
    said = runner.invoke(app, ["nccl-tests", "compare", str(log)])
    assert said.exit_code == 2
    assert "NCCL INFO nRanks 16 conflicts with the log's 8 rank lines" in said.stderr


def test_collective_contradicting_the_log_refused() -> None:
    # case_01 is all_reduce_perf (redop sum, root -1): --collective all_gather would compare the wrong model
    wrong = runner.invoke(app, ["nccl-tests", "compare", str(CASE_01), "--collective", "all_gather"])
    assert wrong.exit_code == 2
    assert "--collective all_gather conflicts with the log's all_reduce" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1
    same = runner.invoke(app, ["nccl-tests", "compare", str(CASE_01), "--collective", "all_reduce"])
    assert same.exit_code == 0
