"""The SQLite sweep store (aifabric/sweep/db.py, parallel.py, pareto.py, cli/sweep.py)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from tests.sweep.grids import GRID, OPS
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.sweep.db import ResultDB
from aifabric.sweep.grid import SweepSpec
from aifabric.sweep.parallel import columns_for, run_into_db
from aifabric.sweep.pareto import pareto_mask
from aifabric.training.step import PARTS


def _yaml(tmp_path: Path) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(GRID))
    return path


def _rows(db: Path) -> pd.DataFrame:
    store = ResultDB(db, columns_for(SweepSpec.from_dict(GRID)))
    try:
        return store.to_pandas()
    finally:
        store.close()


def test_store_is_wal_typed_and_idempotent(tmp_path):
    store = ResultDB(tmp_path / "r.db", {"op": str, "time_s": float, "gpus": int})
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    types = {name: kind for _, name, kind, *_ in store.conn.execute("PRAGMA table_info(results)")}
    assert types == {"point_hash": "TEXT", "op": "TEXT", "time_s": "REAL", "gpus": "INTEGER"}
    assert store.add([("a", {"op": "all_reduce", "time_s": 1.5, "gpus": 8})]) == 1
    assert store.add([("a", {"op": "x", "time_s": 9.0, "gpus": 1}), ("b", {"op": "y", "time_s": 2.0})]) == 1
    frame = store.to_pandas()
    assert list(frame["op"]) == ["all_reduce", "y"] and frame["gpus"].isna().tolist() == [False, True]
    store.close()


def test_sweep_resumes_and_exports_parquet(tmp_path):
    spec = SweepSpec.from_dict(GRID)
    assert len(spec.points()) == 500
    assert run_into_db(spec, tmp_path / "s.db", workers=1, executor="local", batch=50) == (500, 0)
    assert run_into_db(spec, tmp_path / "s.db", workers=2, batch=50) == (0, 500)
    rows = _rows(tmp_path / "s.db")
    assert len(rows) == 500 and rows["point_hash"].is_unique
    assert rows["time_s"].dtype == np.float64 and rows["vary_nodes"].dtype == "Int64"
    store = ResultDB(tmp_path / "s.db", columns_for(spec))
    out = store.to_parquet(tmp_path / "s.parquet")
    store.close()
    back = pd.read_parquet(out)
    assert len(back) == 500 and back["time_s"].dtype == np.float64
    assert set(back.columns) >= {"vary_nodes", "vary_scale_out_nic", "busbw_bytes_per_s", "network_watts"}


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(db, timeout=10)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.OperationalError:  # the table is not created yet
        return 0


def _wait_for_rows(db: Path, proc: subprocess.Popen, at_least: int) -> None:
    """Return once ``db`` holds ``at_least`` rows or the process has ended."""
    while proc.poll() is None and _count(db) < at_least:
        time.sleep(0.005)


def test_sigkill_at_ten_random_moments_loses_and_duplicates_nothing(tmp_path):
    """2,000 points, SIGKILL (to the whole process group) at 10 random moments of the computation, then
    resume: the rows are exactly those of an uninterrupted run, each once, and SQLite's integrity check
    passes."""
    grid = dict(GRID, collectives=[{"op": op, "sizes": [2**k for k in range(10, 30)]} for op in OPS])
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def start(db: Path) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "aifabric", "sweep", str(path), "--db", str(db), "--workers", "2"]
        return subprocess.Popen(
            [*cmd, "--batch", "8"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    reference = tmp_path / "reference.db"
    assert start(reference).wait(timeout=300) == 0
    killed = tmp_path / "killed.db"
    rng = random.Random(20261201)
    stored = [0]
    for _ in range(10):
        # each kill lands once the store holds a random number of rows of this run (moments chosen by
        # progress, not by a stopwatch, so a busy machine moves them in time but not in the sweep)
        target = rng.randint(stored[-1] + 1, stored[-1] + max(1, (2000 - stored[-1]) // 4))
        proc = start(killed)
        _wait_for_rows(killed, proc, target)
        with contextlib.suppress(ProcessLookupError):  # this run may have finished first
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        stored.append(_count(killed))
    assert stored == sorted(stored)  # a committed point is never lost
    assert any(0 < n < 2000 for n in stored), stored  # kills landed mid-sweep (not only before or after)
    proc = start(killed)
    assert proc.wait(timeout=300) == 0
    conn = sqlite3.connect(killed)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    columns = columns_for(SweepSpec.from_dict(grid))
    a, b = (ResultDB(db, columns) for db in (reference, killed))
    try:
        fa, fb = a.to_pandas(), b.to_pandas()
    finally:
        a.close()
        b.close()
    assert len(fb) == 2000 and fb["point_hash"].is_unique
    pd.testing.assert_frame_equal(fa, fb)


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=40))
def test_pareto_front_is_exactly_the_undominated_points(points):
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    front = pareto_mask(x, y)

    def dominated(i: int) -> bool:
        return bool(np.any((x <= x[i]) & (y <= y[i]) & ((x < x[i]) | (y < y[i]))))

    for i in range(x.size):
        if front[i]:
            assert not dominated(i)
        else:  # dominated, or a duplicate of a point already on the front
            assert dominated(i) or np.any(front & (x == x[i]) & (y == y[i]))


def test_cli_sweep_and_bad_input(tmp_path):
    grid = _yaml(tmp_path)
    db, png = tmp_path / "c.db", tmp_path / "p.png"
    res = CliRunner().invoke(
        app, ["sweep", str(grid), "--db", str(db), "--executor", "local", "--pareto", str(png)]
    )
    assert res.exit_code == 0, res.output
    assert "500 point(s) evaluated" in res.stdout and png.stat().st_size > 10_000
    res = CliRunner().invoke(app, ["sweep", str(grid), "--db", str(db), "--executor", "dask"])
    assert res.exit_code == 2 and "--executor" in res.output
    res = CliRunner().invoke(app, ["sweep", str(grid), "--db", str(db), "--address", "auto"])
    assert res.exit_code == 2 and "--address" in res.output
    (tmp_path / "junk.db").write_text("not a database, just text " * 100)
    res = CliRunner().invoke(app, ["sweep", str(grid), "--db", str(tmp_path / "junk.db")])
    assert res.exit_code == 2 and "--db" in res.output


@pytest.mark.parametrize(
    ("option", "make_bad"),
    [
        ("--db", lambda d: d),  # a folder
        ("--db", lambda d: d / ("y" * 300 + ".db")),  # a name too long for the OS
        ("--db", lambda d: _file(d) / "x.db"),  # below a regular file
        ("--parquet", lambda d: d),  # a folder: refused before the sweep runs
        ("--csv", lambda d: d),
    ],
)
def test_sweep_output_paths_checked_before_work(tmp_path, option, make_bad):
    grid = _yaml(tmp_path)
    args = ["sweep", str(grid), "--db", str(tmp_path / "ok.db"), "--executor", "local"]
    bad = str(make_bad(tmp_path))
    args = [a if a != str(tmp_path / "ok.db") or option != "--db" else bad for a in args]
    if option != "--db":
        args += [option, bad]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert option in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "ok.db").exists()  # nothing was evaluated


def _file(d):
    f = d / "afile"
    f.write_text("x")
    return f


def test_a_one_tier_ratio_is_a_number_and_an_older_text_column_stays_text(tmp_path):
    """``scale_out.oversubscription: [[1], [2]]`` is stored as the numbers 1 and 2 (REAL), so SQL and
    Parquet compare and sort it; a store whose column an older release made TEXT keeps text (no column
    mixes the two), and gains the columns it lacks (a train section's) instead of refusing the rows."""
    spec = SweepSpec.from_dict(
        {
            "cluster": "h100-ib-2node",
            "vary": {"scale_out.oversubscription": [[1], [2]]},
            "collectives": [{"op": "all_reduce", "sizes": ["1 MiB"]}],
        }
    )
    cols = columns_for(spec)
    assert cols["vary_scale_out_oversubscription"] is float
    db = tmp_path / "new.db"
    run_into_db(spec, db)
    with sqlite3.connect(db) as con:
        got = con.execute(
            "select typeof(vary_scale_out_oversubscription), vary_scale_out_oversubscription "
            "from results order by 2"
        ).fetchall()
    assert got == [("real", 1.0), ("real", 2.0)]
    old = tmp_path / "old.db"
    with sqlite3.connect(old) as con:  # an older store: the ratio as TEXT, no training columns
        con.execute(
            "create table results (point_hash TEXT PRIMARY KEY, vary_scale_out_oversubscription TEXT)"
        )
    store = ResultDB(old, cols | {"layout": str})
    store.add([("h", {"vary_scale_out_oversubscription": (2,), "layout": "tp=2"})])
    assert store.conn.execute("select vary_scale_out_oversubscription, layout from results").fetchall() == [
        ("2", "tp=2")
    ]
    store.close()


def test_a_training_row_keeps_its_layout_and_step_bottleneck_in_their_own_columns(tmp_path):
    """A training point's layout text and its step's largest communication part have columns of their own;
    ``algorithm`` and ``bottleneck`` (NCCL's algorithm, a network) stay empty on it, and a collective row
    leaves the training columns empty."""
    spec = SweepSpec.from_dict(
        {
            "cluster": "dgx-h100-superpod",
            "vary": {"nodes": [8]},
            "collectives": [{"op": "all_reduce", "sizes": ["1 MiB"]}],
            "train": {"models": ["llama3-8b"], "layouts": [{"tp": 2, "microbatch": 2}], "global_batch": 64},
        }
    )
    db = tmp_path / "t.db"
    run_into_db(spec, db)
    rows = _rows(db).set_index("op")
    train, coll = rows.loc["train:llama3-8b"], rows.loc["all_reduce"]
    assert train["layout"].startswith("tp=2 pp=1 dp=32")  # ParallelLayout.describe(), as `aifabric train`
    assert train["bottleneck_part"] in PARTS and train["algorithm"] == "" and train["bottleneck"] == ""
    assert coll["algorithm"] != "" and coll["layout"] == "" and coll["bottleneck_part"] == ""
