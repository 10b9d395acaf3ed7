"""Sweeps: the grid, incremental results, resume, bad files."""

import csv

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.errors import ConfigError
from aifabric.sweep import SweepSpec, run_sweep

SPEC = {
    "cluster": "dgx-h100-superpod",
    "vary": {"nodes": [4, 16], "scale_out.oversubscription": [[1], [2]]},
    "collectives": [
        {"op": "all_reduce", "sizes": ["1 MiB", "1 GiB"]},
        {"op": "all_to_all", "sizes": ["64 MiB"]},
    ],
}


def test_grid_is_the_product_and_results_resume(tmp_path):
    spec = SweepSpec.from_dict(SPEC)
    assert len(spec.points()) == 2 * 2 * 3
    out = tmp_path / "r.csv"
    ran, skipped = run_sweep(spec, out)
    assert (ran, skipped) == (12, 0)
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 12 and not any(r["error"] for r in rows)
    # 4 nodes x 8 H100, 1 GiB all-reduce: the same figure as the formula engine alone (ring over 4 nodes)
    big = [
        r
        for r in rows
        if r["op"] == "all_reduce" and float(r["message_bytes"]) == 2**30 and '"nodes": 4,' in r["changes"]
    ]
    assert all(300e9 < float(r["busbw_bytes_per_s"]) < 400e9 for r in big)
    # oversubscription halves the leaf uplinks' share of the bisection
    bis = {r["changes"]: float(r["bisection_bytes_per_s"]) for r in rows if '"nodes": 16' in r["changes"]}
    assert min(bis.values()) < max(bis.values())
    # a second run evaluates nothing: everything is already in the file
    assert run_sweep(spec, out) == (0, 12)
    # a stopped run (only some rows written) resumes with the rest
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:6]) + "\n")
    assert run_sweep(spec, out) == (7, 5)
    assert len(list(csv.DictReader(out.open()))) == 12


def test_bad_sweep_files(tmp_path):
    with pytest.raises(ConfigError, match="vary.nodes"):
        SweepSpec.from_dict({"cluster": "lesson", "vary": {"nodes": 4}})
    with pytest.raises(ConfigError, match="unknown field"):
        SweepSpec.from_dict({"cluster": "lesson", "grid": {}})
    f = tmp_path / "s.yaml"
    f.write_text(
        yaml.safe_dump({"cluster": "lesson", "collectives": [{"op": "all_reduce", "sizes": ["-1 GB"]}]})
    )
    r = CliRunner().invoke(app, ["sweep", str(f), "-o", str(tmp_path / "o.csv")])
    assert r.exit_code == 2 and "sizes" in r.stderr


def test_cli_sweep(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(SPEC))
    r = CliRunner().invoke(app, ["sweep", str(f), "-o", str(tmp_path / "o.csv"), "--workers", "2"])
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "12 point(s) evaluated" in r.stdout
