"""Defects D1, D5 and D7 of the issue-9 re-trial (trial 9b), one test each.

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

WRONG = Path(__file__).parent / "data" / "trial9" / "wrong17.log"
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
