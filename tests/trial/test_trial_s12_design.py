"""Defects a network architect's design work found: sweeping the README's example grid, reading its store,
its HTML report and its exports, and comparing a design's figures across commands. Each test runs the
commands of one defect; its docstring holds what they printed and what they should have."""

import json
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.sweep.pareto import pareto_figure

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: The README's sweep example (examples/sweep.yaml): 3 sizes x 2 NICs x 2 leaf ratios, four collective sizes.
EXAMPLE_SWEEP = Path(__file__).parents[2] / "examples" / "sweep.yaml"

#: One design of that grid: 16 DGX H100 nodes, ConnectX-7, 1:1 (the preset's own NIC and ratio).
ONE_DESIGN = """\
cluster: dgx-h100-superpod
vary:
  nodes: [16]
  scale_out.nic: [connectx-7]
  scale_out.oversubscription: [[1]]
collectives:
  - {op: all_reduce, sizes: ["1 MiB"]}
"""


def _sweep(tmp_path: Path, text: str | None, *extra: str) -> Path:
    """``aifabric sweep`` of ``text`` (None: examples/sweep.yaml) into tmp_path/s.db; returns the store."""
    spec = EXAMPLE_SWEEP
    if text is not None:
        spec = tmp_path / "sweep.yaml"
        spec.write_text(text)
    db = tmp_path / "s.db"
    r = runner.invoke(app, ["sweep", str(spec), "--db", str(db), *extra])
    assert r.exit_code == 0, r.stdout + r.stderr
    return db


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return con.execute(sql).fetchall()


def test_a_sweep_counts_switches_and_transceivers_over_the_networks_its_watts_cover(tmp_path):
    """The sweep row of 16 x DGX H100 (ConnectX-7, 1:1) says ``switches`` 10, ``transceivers`` 256 and
    ``network_watts`` 46,124 W. ``aifabric cluster show dgx-h100-superpod --nodes 16 --json`` lists, for the
    same design, watts of 12,672 (scale-up) + 24,240 (scale-out) + 7,196 (front-end) + 2,016 (management)
    = 46,124 W, so the row's watts cover every network; but its counts cover only the scale-out's 8 leaves
    + 2 spines and 4 x 64 twin-port modules, leaving out the front-end SN5600, the 4 + 2 management switches
    and the front-end's 32 + 16 modules. A design's switch count in the sweep should be cluster show's (17
    switches, 304 transceivers), the same scope as the watts in the same row."""
    db = _sweep(tmp_path, ONE_DESIGN)
    switches, transceivers, watts = _rows(db, "select switches, transceivers, network_watts from results")[0]
    r = runner.invoke(app, ["cluster", "show", "dgx-h100-superpod", "--nodes", "16", "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    shown = json.loads(r.stdout)
    assert watts == pytest.approx(sum(shown["watts"].values()))  # the row's watts: every network
    parts = shown["parts"]
    assert switches == sum(p["count"] for p in parts if p["item"] == "switch")
    assert transceivers == sum(p["count"] for p in parts if p["item"] == "transceiver")


def _html_rows(html: str) -> list[list[str]]:
    """Every table row of an HTML report as its cells' text."""
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", html, re.S):
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)
        rows.append([re.sub(r"<[^>]+>", "", c).strip() for c in cells])
    return rows


def test_a_sweep_report_describes_a_design_the_sweep_ran(tmp_path):
    """``aifabric sweep examples/sweep.yaml --html r.html``'s "The cluster at a glance" reads "GPUs: 256 in
    32 nodes", "network power 75.0 kW": the preset's default size, which none of the 48 points ran (the
    grid's nodes are 16, 64 and 256: 128, 512 and 2,048 GPUs). An architect reading the report takes that
    as the design it is about; the glance should describe a swept design (or the grid), not one left out."""
    html_path = tmp_path / "r.html"
    db = _sweep(tmp_path, None, "--html", str(html_path))
    swept_gpus = {g for (g,) in _rows(db, "select distinct gpus from results")}
    glance = {row[0]: row[1] for row in _html_rows(html_path.read_text()) if len(row) == 2}
    gpus = int(glance["GPUs"].split()[0].replace(",", ""))
    assert gpus in swept_gpus, (glance["GPUs"], sorted(swept_gpus))


def test_a_sweep_report_names_the_cheapest_of_equally_fast_designs(tmp_path):
    """In examples/sweep.yaml's store, all_reduce of 1 MiB takes the same 114.57 us (time_s equal to the
    last bit) on the four 16-node variants, whose network watts are 43,444 (ConnectX-7, 2:1) to 47,404
    (ConnectX-8, 1:1). The HTML report's answer ("the fastest variant for every collective and size") names
    ConnectX-8 1:1 at 47.4 kW: a design the 43.4 kW one dominates (as fast, 4 kW less; the report's own
    Pareto plot drops it). Among equally fast variants the answer should be the one on the Pareto front."""
    html_path = tmp_path / "r.html"
    db = _sweep(tmp_path, None, "--html", str(html_path))
    answers = [row for row in _html_rows(html_path.read_text()) if len(row) == 8 and row[0] == "all_reduce"]
    assert answers, "no answer row for all_reduce"
    for op, size, _time, _busbw, _mfu, _tok, _variant, kw in answers:
        nbytes = {"1.049 MB": 1048576, "67.11 MB": 67108864, "1.074 GB": 1073741824}[size]
        where = f"op='{op}' and message_bytes={nbytes}"
        (fastest,) = _rows(db, f"select min(time_s) from results where {where}")[0]
        (cheapest,) = _rows(
            db,
            f"select min(network_watts) from results where {where} and time_s={fastest!r}",
        )[0]
        assert float(kw) == pytest.approx(cheapest / 1e3, abs=0.05), (size, kw, cheapest)


def test_a_sweep_export_never_overwrites_its_own_store(tmp_path):
    """``aifabric sweep examples/sweep.yaml --db s.db --csv s.db`` exits 0 ("csv: s.db") having written
    the CSV over the SQLite store: the 48 results are gone and the README's resume ("rerun the same command to
    resume") now fails with "--db: 's.db' is not a sweep database". An export path that is the store's
    is bad input: one line naming --csv and the path, exit 2, the store untouched."""
    db = tmp_path / "s.db"
    r = runner.invoke(app, ["sweep", str(EXAMPLE_SWEEP), "--db", str(db), "--csv", str(db)])
    assert r.exit_code == 2, r.stdout
    assert "--csv" in r.stderr
    if db.exists():
        assert db.read_bytes().startswith(b"SQLite format 3")


def test_a_sweep_refuses_two_exports_to_one_file(tmp_path):
    """``aifabric sweep examples/sweep.yaml --db s.db --parquet x.out --csv x.out`` exits 0 printing
    "parquet: x.out" and "csv: x.out": the CSV overwrote the Parquet file just announced, so one export the
    user asked for is silently lost. Two outputs on one path should be refused (exit 2, naming both)."""
    out = tmp_path / "x.out"
    args = ["--parquet", str(out), "--csv", str(out)]
    r = runner.invoke(app, ["sweep", str(EXAMPLE_SWEEP), "--db", str(tmp_path / "s.db"), *args])
    assert r.exit_code == 2, r.stdout
    assert "--parquet" in r.stderr and "--csv" in r.stderr


def test_a_sweep_refuses_a_parquet_export_named_like_a_csv(tmp_path):
    """``aifabric sweep examples/sweep.yaml --db s.db --parquet rows.csv`` exits 0 and writes Parquet bytes
    into rows.csv, which a spreadsheet or ``pandas.read_csv`` then reads as garbage. The same command refuses
    ``--html x.txt`` ("--html: 'x.txt' must end in .html") and ``--pareto x.txt`` (naming the formats); its
    Parquet export should hold to the same rule: exit 2 naming --parquet and the path."""
    r = runner.invoke(
        app,
        [
            "sweep",
            str(EXAMPLE_SWEEP),
            "--db",
            str(tmp_path / "s.db"),
            "--parquet",
            str(tmp_path / "rows.csv"),
        ],
    )
    assert r.exit_code == 2, r.stdout
    assert "--parquet" in r.stderr and "rows.csv" in r.stderr


def test_a_sweep_file_finds_the_cluster_file_beside_it(tmp_path, monkeypatch):
    """A sweep file ``designs/sweep.yaml`` with ``cluster: cluster.yaml`` (examples/cluster.yaml copied beside
    it) works only when run from ``designs/``; ``aifabric sweep designs/sweep.yaml`` from its parent exits 2
    with "cluster: file 'cluster.yaml' does not exist". The sweep file is the design's record: the same file
    should name the same cluster wherever the command runs (a path inside a file is read from that file's
    folder), or a design handed to a colleague stops resolving."""
    designs = tmp_path / "designs"
    designs.mkdir()
    (designs / "cluster.yaml").write_text((EXAMPLE_SWEEP.parent / "cluster.yaml").read_text())
    text = ONE_DESIGN.replace("cluster: dgx-h100-superpod", "cluster: cluster.yaml").replace("[16]", "[4]")
    text = text.replace("  scale_out.nic: [connectx-7]\n  scale_out.oversubscription: [[1]]\n", "")
    (designs / "sweep.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["sweep", "designs/sweep.yaml", "--db", "s.db"])
    assert r.exit_code == 0, r.stderr


#: Two training layouts of llama3-8b on 8 DGX H100 nodes (the second fits 80 GB, the first does not).
TRAIN_SWEEP = """\
cluster: dgx-h100-superpod
vary:
  nodes: [8]
train:
  models: [llama3-8b]
  layouts: [{tp: 2, pp: 1, microbatch: 2}]
  global_batch: 64
"""


def test_a_sweep_keeps_each_column_to_one_meaning(tmp_path):
    """``aifabric sweep`` of a train section stores, in the same ``algorithm`` column where collective rows
    hold NCCL's algorithm (ring, tree, nvls_tree), the text "tp=2 pp=1 dp=32 sp b=2 B=64 zero=1
    recompute=selective", and in ``bottleneck`` (latency, scale-out) the dimension "tp". A spreadsheet filter
    on algorithm = ring, or a pivot over bottleneck, then mixes layouts with algorithms; the layout already
    has its typed columns (tp, pp, dp, microbatch, global_batch). ``sweep --help`` promises "typed columns":
    a training row's algorithm should be empty or an algorithm its collectives ran."""
    db = _sweep(tmp_path, TRAIN_SWEEP)
    ((algorithm, tp),) = _rows(db, "select algorithm, tp from results")
    assert tp == 2
    assert algorithm in (None, "", "ring", "tree", "nvls", "nvls_tree", "collnet_direct", "collnet_chain"), (
        algorithm
    )


def test_a_sweep_pareto_plot_labels_a_training_front_without_a_message_size(tmp_path):
    """``aifabric sweep train.yaml --pareto p.png`` over a train section draws its front with the legend
    "train:llama3-8b 0 B": a training step has no message (grid.py: its ``message_bytes`` is 0 by
    convention), so "0 B" reads as a zero-byte collective. The legend should name the model's step alone."""
    db = _sweep(tmp_path, TRAIN_SWEEP.replace("nodes: [8]", "nodes: [4, 8]"))
    with sqlite3.connect(db) as con:
        frame = pd.read_sql("select * from results", con)
    fig = pareto_figure(frame)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels and all("0 B" not in label for label in labels), labels
