"""Sweeps: the grid, results in the store, resume, shards, the CSV export, bad files."""

import csv
import sqlite3

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.errors import ConfigError
from aifabric.sweep import SweepSpec
from aifabric.sweep.db import ResultDB
from aifabric.sweep.parallel import columns_for, run_into_db

SPEC = {
    "cluster": "dgx-h100-superpod",
    "vary": {"nodes": [4, 16], "scale_out.oversubscription": [[1], [2]]},
    "collectives": [
        {"op": "all_reduce", "sizes": ["1 MiB", "1 GiB"]},
        {"op": "all_to_all", "sizes": ["64 MiB"]},
    ],
}


def _frame(spec, db):
    store = ResultDB(db, columns_for(spec))
    try:
        return store.to_pandas()
    finally:
        store.close()


def test_grid_is_the_product_and_results_resume(tmp_path):
    spec = SweepSpec.from_dict(SPEC)
    assert len(spec.points()) == 2 * 2 * 3
    db = tmp_path / "r.db"
    assert run_into_db(spec, db) == (12, 0)
    rows = _frame(spec, db)
    assert len(rows) == 12 and not rows["error"].astype(bool).any()
    # 4 nodes x 8 H100, 1 GiB all-reduce: the same figure as the formula engine alone (ring over 4 nodes)
    big = rows[(rows["op"] == "all_reduce") & (rows["message_bytes"] == 2**30) & (rows["vary_nodes"] == 4)]
    assert len(big) == 2 and big["busbw_bytes_per_s"].between(300e9, 400e9).all()
    # oversubscription halves the leaf uplinks' share of the bisection
    bis = rows[rows["vary_nodes"] == 16].groupby("vary_scale_out_oversubscription")["bisection_bytes_per_s"]
    assert bis.max().min() < bis.max().max()
    # a second run evaluates nothing: everything is already in the store
    assert run_into_db(spec, db) == (0, 12)
    # a stopped run (only some rows stored) resumes with the rest
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("DELETE FROM results WHERE rowid NOT IN (SELECT rowid FROM results LIMIT 5)")
    conn.close()
    assert run_into_db(spec, db) == (7, 5)
    assert _frame(spec, db).equals(rows)


def test_shards_split_the_grid_without_overlap(tmp_path):
    spec = SweepSpec.from_dict(SPEC)
    parts = [run_into_db(spec, tmp_path / f"s{k}.db", shard=k, n_shards=3) for k in range(3)]
    assert parts == [(4, 0), (4, 0), (4, 0)]
    hashes = [set(_frame(spec, tmp_path / f"s{k}.db")["point_hash"]) for k in range(3)]
    assert not (hashes[0] & hashes[1]) and not (hashes[1] & hashes[2]) and len(set().union(*hashes)) == 12
    with pytest.raises(ValueError, match="--shard: 3 of 3"):
        run_into_db(spec, tmp_path / "x.db", shard=3, n_shards=3)


def test_bad_sweep_files(tmp_path):
    with pytest.raises(ConfigError, match="vary.nodes"):
        SweepSpec.from_dict({"cluster": "lesson", "vary": {"nodes": 4}})
    with pytest.raises(ConfigError, match="unknown field"):
        SweepSpec.from_dict({"cluster": "lesson", "grid": {}})
    f = tmp_path / "s.yaml"
    f.write_text(
        yaml.safe_dump({"cluster": "lesson", "collectives": [{"op": "all_reduce", "sizes": ["-1 GB"]}]})
    )
    r = CliRunner().invoke(app, ["sweep", str(f), "--db", str(tmp_path / "o.db")])
    assert r.exit_code == 2 and "sizes" in r.stderr
    assert not (tmp_path / "o.db").exists()


def test_cli_sweep_and_csv_export(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(SPEC))
    db, out = tmp_path / "o.db", tmp_path / "o.csv"
    r = CliRunner().invoke(app, ["sweep", str(f), "--db", str(db), "--workers", "2", "--csv", str(out)])
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "12 point(s) evaluated" in r.stdout and f"csv: {out}" in r.stdout
    rows = list(csv.DictReader(out.open()))
    frame = _frame(SweepSpec.from_dict(SPEC), db)
    assert len(rows) == 12 and list(rows[0]) == list(frame.columns)
    assert [float(r["time_s"]) for r in rows] == pytest.approx(frame["time_s"].tolist(), rel=1e-12)
    r = CliRunner().invoke(app, ["sweep", str(f), "--db", str(db)])
    assert r.exit_code == 0 and "0 point(s) evaluated, 12 already in" in r.stdout


TRAIN = {
    "cluster": "dgx-h100-superpod",
    "vary": {"nodes": [32, 64]},
    "train": {
        "models": ["megatron-gpt-39.1b"],
        "layouts": [{"tp": 8, "pp": 2, "microbatch": 4}, {"tp": 3}],
        "global_batch": 1536,
    },
}


def test_training_points_are_the_step_model(tmp_path):
    import aifabric as af

    spec = SweepSpec.from_dict(TRAIN)
    assert len(spec.points()) == 2 * 2  # no default all_reduce when the sweep trains
    db = tmp_path / "t.db"
    assert run_into_db(spec, db) == (4, 0)
    rows = _frame(spec, db)
    ok = rows[rows["error"] == ""].sort_values("vary_nodes")
    # the same step as `aifabric train` / af.train with that layout (its defaults for the rest)
    for nodes, row in zip((32, 64), ok.itertuples(), strict=True):
        st = af.train("megatron-gpt-39.1b", "dgx-h100-superpod", nodes=nodes, tp=8, pp=2, microbatch=4).result
        assert row.step_s == row.time_s == pytest.approx(st.step_s, rel=1e-12)
        assert row.dp == st.layout.dp and row.op == "train:megatron-gpt-39.1b" and row.message_bytes == 0
        assert row.mfu == pytest.approx(st.mfu, rel=1e-12) and row.network_watts > 0
    bad = rows[rows["error"] != ""]
    assert len(bad) == 2 and bad["error"].str.contains("tp=3 does not divide").all()


def test_collective_point_hashes_are_those_of_older_stores():
    # a store written before sweeps could train must resume: a collective point's hash is unchanged
    from aifabric.sweep.db import point_hash
    from aifabric.sweep.parallel import _hash
    from aifabric.version import __version__

    p = SweepSpec.from_dict(SPEC).points()[0]
    old = {"cluster": p.cluster, **dict(p.changes), "op": p.op, "bytes": p.message_bytes}
    assert _hash(p) == point_hash(old, model_version=__version__)


@pytest.mark.parametrize(
    ("train", "message"),
    [
        ({"models": "x"}, r"train\.models: expected a non-empty list"),
        ({"models": ["no-such-model"]}, r"train\.models\[0\]"),
        ({"models": ["llama3-8b"], "layouts": [{"tp": 0}]}, r"train\.layouts\[0\]\.tp: expected an integer"),
        ({"models": ["llama3-8b"], "layouts": [{"vp": 2}]}, r"train\.layouts\[0\]: expected a mapping of"),
        ({"models": ["llama3-8b"], "global_batch": 1.5}, r"train\.global_batch"),
        ({"models": ["llama3-8b"], "seq": 1}, r"train: unknown field"),
        ([1], r"train: expected a mapping"),
    ],
)
def test_bad_train_sections(train, message):
    with pytest.raises(ConfigError, match=message):
        SweepSpec.from_dict({"cluster": "lesson", "train": train})
