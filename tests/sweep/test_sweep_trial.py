"""Defects of a new user's trial of ``aifabric sweep`` (issue 13): a huge grid is counted and refused before
it is expanded, a bad sweep file exits 2 before any evaluation, an unreachable Ray address is refused
within a bounded time, repeated sizes run once, a Pareto plot with no successful point is one line."""

from __future__ import annotations

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.errors import ConfigError
from aifabric.sweep.db import ResultDB
from aifabric.sweep.grid import SweepSpec
from aifabric.sweep.parallel import MAX_POINTS, POINT_BYTES, _check_ray_address, columns_for, run_into_db

OK = {"cluster": "h100-ib-2node", "collectives": [{"op": "all_reduce", "sizes": ["1 MiB"]}]}

#: The trial's grid: 1000 node counts x 2 NICs x 100 ratios x 1000 sizes = 200,000,000 points.
HUGE = {
    "cluster": "dgx-h100-superpod",
    "vary": {
        "nodes": list(range(1, 1001)),
        "scale_out.nic": ["connectx-7", "connectx-8"],
        "scale_out.oversubscription": [[1 + i / 10] for i in range(100)],
    },
    "collectives": [{"op": "all_reduce", "sizes": [f"{i} KiB" for i in range(1, 1001)]}],
}


def _sweep(tmp_path, data, *args):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump(data))
    db = tmp_path / "o.db"
    return f, db, CliRunner().invoke(app, ["sweep", str(f), "--db", str(db), *args])


def test_the_grid_is_counted_without_expanding_it():
    spec = SweepSpec.from_dict(HUGE)
    assert spec.n_points == 1000 * 2 * 100 * 1000  # product of the vary lengths x the sizes
    small = SweepSpec.from_dict({**OK, "vary": {"nodes": [1, 2, 4]}})
    assert small.n_points == len(small.points()) == 3


def test_huge_grid_is_refused_naming_its_size_and_the_option(tmp_path):
    _f, db, r = _sweep(tmp_path, HUGE)
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        "error: vary: the grid has 200,000,000 points to run (1000 x 2 x 100 variants x 1,000 per variant), "
        f"above --max-points {MAX_POINTS:,}; shrink the grid, split it with --shards, or raise --max-points"
    ]
    assert not db.exists()  # refused before the store is created


def test_huge_grid_above_the_memory_limit_is_refused_with_the_figure(tmp_path, monkeypatch):
    monkeypatch.setenv("AIFABRIC_MAX_MEMORY", "1 GiB")
    # 200M points x POINT_BYTES (300 B) = 60 GB > 1 GiB: refused even with the cap lifted
    _f, _db, r = _sweep(tmp_path, HUGE, "--max-points", str(10**9))
    assert r.exit_code == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(
        "error: vary: the sweep's 200,000,000 points needs about 60 GB of memory, above the limit of 1.074 GB"
    )
    assert 200_000_000 * POINT_BYTES == 60e9


def test_max_points_counts_this_shards_share(tmp_path):
    data = {**OK, "vary": {"nodes": [1, 2, 4, 8]}}
    _f, _db, r = _sweep(tmp_path, data, "--max-points", "3")
    assert r.exit_code == 2 and "the grid has 4 points to run" in r.stderr
    _f, _db, r = _sweep(tmp_path, data, "--max-points", "2", "--shards", "2", "--shard", "1")
    assert r.exit_code == 0, r.output
    assert "2 point(s) evaluated" in r.stdout


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (
            {**OK, "collectives": [{"op": "all_reduce", "sizes": []}]},
            "collectives[0].sizes: expected a non-empty list",
        ),
        ({**OK, "collectives": [{"op": "all_reduce"}]}, "collectives[0].sizes: expected a non-empty list"),
        ({"cluster": "h100-ib-2node"}, "give collectives or train (or both); neither is in the file"),
        ({**OK, "collectives": []}, "collectives: expected a non-empty list of {op, sizes}"),
        (
            {**OK, "collectives": [{"op": "all_reduce", "sizes": ["1 MiB"], "extra": 1}]},
            "collectives[0]: unknown field(s) extra; known: op, sizes",
        ),
        ({**OK, "cluster": "nosuch"}, "cluster: 'nosuch': "),
        ({**OK, "vary": {"nodes": ["abc"]}}, "vary.nodes[0]: 'abc' is not valid for nodes"),
        ({**OK, "vary": {"nodes": [2, True]}}, "vary.nodes[1]: True is not valid for nodes"),
        ({**OK, "vary": {"scale_out.fabric": ["wifi"]}}, "vary.scale_out.fabric[0]: 'wifi' is not valid"),
        (
            {**OK, "vary": {"scale_out.nic": ["connectx-7", "no-such-nic"]}},
            "vary.scale_out.nic[1]: 'no-such-nic' is not valid for scale_out.nic (unknown nic 'no-such-nic'",
        ),
        (
            {**OK, "vary": {"scale_out.oversubscription": [[1], [-2]]}},
            "vary.scale_out.oversubscription[1]: [-2] is not valid for scale_out.oversubscription",
        ),
    ],
)
def test_a_bad_sweep_file_exits_2_before_evaluating(tmp_path, data, line):
    f, db, r = _sweep(tmp_path, data)
    assert r.exit_code == 2, r.output
    (err,) = r.stderr.strip().splitlines()
    assert err.startswith(f"error: {f}: {line}"), err
    assert not db.exists()


def test_well_typed_but_infeasible_variants_are_still_recorded_per_row(tmp_path):
    # Each value is valid alone; 800 Gb/s is above the preset's ConnectX-7 (400 Gb/s, its datasheet).
    spec = SweepSpec.from_dict({**OK, "vary": {"scale_out.nic_speed": ["400 Gb/s", "800 Gb/s"]}})
    db = tmp_path / "r.db"
    assert run_into_db(spec, db) == (2, 0)
    store = ResultDB(db, columns_for(spec))
    errors = sorted(store.to_pandas()["error"])
    store.close()
    assert errors[0] == "" and "above what connectx-7 does" in errors[1]


def test_repeated_sizes_and_values_are_evaluated_once(tmp_path):
    data = {
        "cluster": "h100-ib-2node",
        "vary": {"nodes": [1, 2, 2]},
        "collectives": [
            {"op": "all_reduce", "sizes": ["1 MiB", "1 MiB", "1048576"]},
            {"op": "all_reduce", "sizes": ["1 MiB", "2 MiB"]},
        ],
    }
    assert SweepSpec.from_dict(data).n_points == 2 * 2  # nodes {1, 2} x sizes {1 MiB, 2 MiB}
    _f, db, r = _sweep(tmp_path, data)
    assert r.exit_code == 0, r.output
    assert "4 point(s) evaluated" in r.stdout
    store = ResultDB(db, columns_for(SweepSpec.from_dict(data)))
    assert store.count() == 4
    store.close()


def test_pareto_with_no_successful_point_is_one_line(tmp_path):
    data = {**OK, "vary": {"scale_out.nic_speed": ["800 Gb/s"]}}  # above ConnectX-7's 400 Gb/s: no build
    png = tmp_path / "p.png"
    _f, _db, r = _sweep(tmp_path, data, "--pareto", str(png))
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        "error: --pareto: no successful points to plot (1 point(s), all failed)"
    ]
    assert not png.exists()


def test_an_address_where_no_ray_listens_is_refused_at_once():
    # port 1 (tcpmux) is closed on a test machine: the connect is refused, no retry loop
    with pytest.raises(ConfigError, match=r"^--address: no Ray cluster at 127\.0\.0\.1:1$"):
        _check_ray_address("127.0.0.1:1")
    with pytest.raises(ConfigError, match=r"^--address: no Ray cluster at ray://127\.0\.0\.1:1$"):
        _check_ray_address("ray://127.0.0.1:1")
    with pytest.raises(ConfigError, match="has no port number"):
        _check_ray_address("127.0.0.1:x")
    _check_ray_address("auto")  # left to Ray
    _check_ray_address(None)


def test_cli_ray_address_nobody_listens_exits_2(tmp_path):
    pytest.importorskip("ray")
    _f, _db, r = _sweep(tmp_path, OK, "--executor", "ray", "--address", "127.0.0.1:1")
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == ["error: --address: no Ray cluster at 127.0.0.1:1"]
