"""Input defects a new user's trial of the README's sweep found: each test runs one command; its docstring
holds the command, what it printed and what it should do."""

import re

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: examples/sweep.yaml's grid with one part name mistyped (the README's sweep example, a typo added).
SWEEP_WITH_A_TYPO = """\
cluster: dgx-h100-superpod
vary:
  nodes: [16, 64]
  scale_out.nic: [connectx-7, connectx-8x]
collectives:
  - {op: all_reduce, sizes: ["1 MiB"]}
"""

#: Nine GB200 trays fill no NVL72 rack of 18 (a node is one tray of 4 GPUs); eighteen fill one.
SWEEP_WITH_AN_UNBUILDABLE_VARIANT = """\
cluster: gb200-nvl72
vary:
  nodes: [18, 9]
collectives:
  - {op: all_reduce, sizes: ["1 MiB"]}
"""


def test_a_sweep_naming_an_unknown_part_is_refused_naming_the_field_and_the_value(tmp_path):
    """``aifabric sweep typo.yaml --db s.db`` with ``scale_out.nic: [connectx-7, connectx-8x]`` printed
    "4 point(s) evaluated, 0 already in s.db (resumed)" and exit 0: the two connectx-8x points sit in the
    store with the error "scale_out.nic: unknown nic 'connectx-8x'; known: ...", which the user only sees
    by querying SQLite. A part name is read from the file, not from a combination of fields: like every
    other unknown name (README: "exits with code 2 and one line on stderr for bad input (an unknown
    preset, ...)"), it should be refused before any point runs, naming the field and the value."""
    sweep_file = tmp_path / "typo.yaml"
    sweep_file.write_text(SWEEP_WITH_A_TYPO)
    r = runner.invoke(app, ["sweep", str(sweep_file), "--db", str(tmp_path / "s.db")])
    assert r.exit_code == 2, r.stdout + r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    assert "scale_out.nic" in lines[0] and "connectx-8x" in lines[0], lines[0]
    assert "Traceback" not in r.stdout + r.stderr


def test_a_sweep_says_how_many_points_were_stored_with_an_error(tmp_path):
    """``aifabric sweep nvl72.yaml --db s.db`` over ``nodes: [18, 9]`` on gb200-nvl72 printed "2 point(s)
    evaluated, 0 already in s.db (resumed)": nothing says that the 9-tray variant could not be built (36
    GPUs fill no 72-GPU NVLink domain) and was stored with its error, not a result. The docstring of
    ``sweep`` says such a variant "is stored with its error"; the summary line should count them (1 of 2
    here) so that a user sees it without querying the store."""
    sweep_file = tmp_path / "nvl72.yaml"
    sweep_file.write_text(SWEEP_WITH_AN_UNBUILDABLE_VARIANT)
    r = runner.invoke(app, ["sweep", str(sweep_file), "--db", str(tmp_path / "s.db")])
    assert r.exit_code == 0, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert re.search(r"(?<![\w/-])1 (\S+ ){0,5}(error|failed|could not be built)", out), out
