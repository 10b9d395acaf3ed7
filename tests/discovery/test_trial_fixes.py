"""Defects a new-user trial found in the discovery front doors (issue 9), one test each."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.compare import compare_nccl_tests
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
