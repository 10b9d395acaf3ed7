"""Options a run cannot use, or given twice, are refused rather than dropped (issue 9 item 1, fix9b).

Case 01 (NVIDIA/nccl-tests #290) is one DGX H100 node: no network, so ``--nic-speed`` has nothing to act on.
Its rows cut to the out-of-place group (9 fields) carry no in-place time, so ``--place in-place`` cannot be
answered with the out-of-place one.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tests.discovery.conftest import CASE_01, read_case
from typer.testing import CliRunner

from aifabric.cli import app as app_module
from aifabric.cli.app import app

runner = CliRunner()


def _out_of_place_only() -> str:
    lines = read_case(CASE_01).split("\n")
    cut = [" ".join(line.split()[:9]) if line.strip()[:1].isdigit() else line for line in lines]
    return "\n".join(cut)


def _compare(tmp_path: Path, text: str, *options: str) -> tuple[int, str]:
    log = tmp_path / "run.log"
    log.write_text(text)
    res = runner.invoke(app, ["nccl-tests", "compare", str(log), *options])
    return res.exit_code, res.stderr


def test_in_place_is_refused_when_no_row_prints_it(tmp_path: Path) -> None:
    code, err = _compare(tmp_path, _out_of_place_only(), "--place", "in-place")
    assert code == 2 and ":48:" in err and "in-place" in err and err.count("\n") == 1, err
    code, err = _compare(tmp_path, _out_of_place_only())
    assert code == 0, err


def test_in_place_compares_the_in_place_times(tmp_path: Path) -> None:
    # 4 GiB row of case 01: out-of-place 15870 us, in-place 15773 us.
    log = tmp_path / "run.log"
    log.write_text(read_case(CASE_01))
    res = runner.invoke(app, ["nccl-tests", "compare", str(log), "--place", "in-place", "--json"])
    assert res.exit_code == 0, res.stderr
    assert '"place": "in_place"' in res.stdout and "0.015773" in res.stdout


def test_nic_speed_is_refused_on_a_single_node_log(tmp_path: Path) -> None:
    code, err = _compare(tmp_path, read_case(CASE_01), "--nic-speed", "400 Gb/s")
    assert code == 2 and "--nic-speed" in err and "one node" in err and err.count("\n") == 1, err


def test_all_gather_ranks_against_its_count_column(tmp_path: Path) -> None:
    # all_gather's count column is per rank: 4 GiB / (4 B x 67108864) = 16 ranks, so --ranks 8 contradicts it.
    row = "  4294967296      67108864     float    none      -1    15394  279.00  261.57      0    15332  280.13  262.62      0"  # noqa: E501
    header = read_case(CASE_01).split("\n")[47]
    code, err = _compare(tmp_path, f"{header}\n{row}\n", "--collective", "all_gather", "--ranks", "8")
    assert code == 2 and "--ranks 8" in err and "16 ranks" in err, err


def _main(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(sys, "argv", ["aifabric", *argv])
    with pytest.raises(SystemExit) as stop:
        app_module.main()
    return int(stop.value.code or 0)


@pytest.mark.parametrize("gpu", [["--gpu", "b200"], ["--gpu=b200"]])
def test_an_option_given_twice_is_refused(
    tmp_path: Path, gpu: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "run.log"
    log.write_text(read_case(CASE_01))
    code = _main(["nccl-tests", "compare", str(log), "--gpu", "h100-sxm", *gpu], monkeypatch)
    err = capsys.readouterr().err
    assert code == 2 and err == "error: --gpu: given 2 times ('h100-sxm', 'b200'); give it once\n"


def test_a_repeatable_option_may_repeat(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "run.log"
    log.write_text(read_case(CASE_01))
    assert _main(["nccl-tests", "compare", str(log), "-t", "1", "--table", "1"], monkeypatch) == 0
    assert capsys.readouterr().err == ""


def test_version_is_answered_without_building_commands(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(argv: list[str]) -> None:
        raise AssertionError("built the commands for --version")

    monkeypatch.setattr(app_module, "_app_for", fail)
    assert _main(["--version"], monkeypatch) == 0
    assert capsys.readouterr().out.startswith("aifabric ")
