"""Small defects a second new-user trial found in this round's readers, sizing and models: each test runs
what the user ran, and its docstring holds the command, what it did and what it does now."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery import compare
from aifabric.discovery.compare import MAX_ROWS_MODELLED, compare_nccl_tests

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

PUBLIC = Path(__file__).parents[1] / "discovery" / "data" / "public"

#: tests/discovery/data/public/h200_2x8_datatype_all_fp8_rows.log: 2 x 8 H200, all_reduce, ``-d all``.
H200_ALL_TYPES = PUBLIC / "h200_2x8_datatype_all_fp8_rows.log"


def _repeated_rows(copies: int) -> str:
    """The H200 log's header and its first result row (10 GiB int8, 389.40 GB/s busbw) ``copies`` times:
    the shape of a log whose table was pasted or looped many times over."""
    lines = H200_ALL_TYPES.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.split()[:1] == ["10737418240"])
    return "\n".join(lines[:first] + [lines[first]] * copies) + "\n"


def test_many_rows_of_one_size_price_the_default_range_once_per_size(monkeypatch):
    """``aifabric nccl-tests compare big.log`` on a 6 MB log of one repeated row priced NCCL's default range
    (two extra model runs) once per row below the model and rescanned every row for each of them: 2,048 x
    2,048 row visits, 13 s of the 13 s run, and a 60 MB log (under the 64 MiB input limit) ran past 30 s.
    The range depends on the row's size only, so it is now priced once per distinct size."""
    calls: list[float] = []
    original = compare._default_range

    def counting(row, ctx, algorithms):
        calls.append(row.size_bytes)
        return original(row, ctx, algorithms)

    monkeypatch.setattr(compare, "_default_range", counting)
    result = compare_nccl_tests(_repeated_rows(MAX_ROWS_MODELLED + 10), source="big.log")
    assert len(calls) == len(set(calls)) <= 1
    (table,) = result.tables
    assert len(table.rows) == MAX_ROWS_MODELLED
    # every copy of the row is the same measurement: one deviation and one verdict for all of them
    assert len({r.deviation for r in table.rows}) == 1


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["h100-ib-2node", "--tiers", "1", "--oversubscription", "2:1"], "2:1 at the leaf"),
        (["h100-ib-2node", "--oversubscription", "2:1,3:1"], "3:1 at the spine"),
        (["dgx-h100-superpod", "--oversubscription", "2:1,48:7"], "6.85714:1 at the spine"),
    ],
)
def test_a_ratio_at_a_boundary_the_fabric_lacks_is_refused(args, field):
    """``aifabric cluster show h100-ib-2node --oversubscription 2:1,3:1`` printed a 2-tier fabric at 2:1 and
    dropped the 3:1 without a word (a 2-tier Clos has one boundary, leaf to spine); ``--tiers 1
    --oversubscription 2:1`` printed ``oversubscription (down:up) ;``. Both now exit 2 naming the ratio."""
    result = runner.invoke(app, ["cluster", "show", *args])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "scale_out.oversubscription" in lines[0] and field in lines[0]
    assert "Traceback" not in result.output


def test_the_boundaries_a_fabric_has_keep_their_ratios():
    """A 1:1 past the last boundary changes nothing and stays accepted; three tiers take both ratios."""
    two = runner.invoke(app, ["cluster", "show", "h100-ib-2node", "--oversubscription", "2:1,1:1"])
    assert two.exit_code == 0 and "leaf 2:1 asked, 2:1 built" in two.output
    three = runner.invoke(
        app, ["cluster", "show", "dgx-h100-superpod", "--nodes", "512", "--oversubscription", "1:1,1:2"]
    )
    assert three.exit_code == 0 and "spine 0.5:1 asked, 0.5:1 built" in three.output


def test_a_topo_copy_that_stops_inside_a_nic_row_reads_as_cut_nic_rows(tmp_path):
    """``aifabric inspect half.txt``, the first half (by bytes) of
    tests/discovery/data/public/topo_8gpu_12nic_glued_cells.txt, stopped inside row NIC4 (5 cells of 20)
    and exited 2 with ``row NIC4 has 5 cells, the header has 20 devices``; the same copy stopped at the end
    of a line reads. It now reads as the rows NIC4..NIC11 cut, with the GPU-NIC paths of the GPU rows."""
    text = (PUBLIC / "topo_8gpu_12nic_glued_cells.txt").read_bytes()
    half = tmp_path / "half.txt"
    half.write_bytes(text[: len(text) // 2])
    assert half.read_text().splitlines()[-1].split()[0] == "NIC4"  # the cut falls inside row NIC4
    result = runner.invoke(app, ["inspect", str(half)])
    assert result.exit_code == 0, result.output
    assert "rows NIC4, NIC5, NIC6, NIC7, NIC8, NIC9, NIC10, NIC11 cut" in result.output
    whole = runner.invoke(app, ["inspect", str(PUBLIC / "topo_8gpu_12nic_glued_cells.txt")])
    assert "NIC4" in whole.output and whole.exit_code == 0


def test_a_complete_last_nic_row_is_still_checked(tmp_path):
    """A last NIC row with every cell stays read (and checked): only a row short of cells at the very end
    of the input is taken for the copy's cut."""
    text = (PUBLIC / "topo_8gpu_12nic_glued_cells.txt").read_text()
    lines = text.splitlines()
    last_nic = max(i for i, line in enumerate(lines) if line.split()[:1] == ["NIC11"])
    kept = tmp_path / "to_nic11.txt"
    kept.write_text("\n".join(lines[: last_nic + 1]))
    result = runner.invoke(app, ["inspect", str(kept)])
    assert result.exit_code == 0, result.output
    assert "NIC11 cut" not in result.output
