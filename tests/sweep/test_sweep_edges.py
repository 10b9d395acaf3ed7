"""Sweep edges: bad vary keys and values, one bad point recorded, workers dying with the parent, a torn
store."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.errors import ConfigError
from aifabric.sweep import SweepSpec
from aifabric.sweep.db import ResultDB
from aifabric.sweep.grid import SweepPoint
from aifabric.sweep.parallel import columns_for, run_into_db
from aifabric.sweep.runner import evaluate_point

BASE = {"cluster": "h100-ib-2node", "collectives": [{"op": "all_reduce", "sizes": ["1 MiB"]}]}


@pytest.mark.parametrize(
    ("vary", "message"),
    [
        ({"": [1]}, r"vary: '' is not a field name"),
        ({"colour": [1]}, r"vary\.colour: not a cluster field"),
        ({"scale_out.colour": [1]}, r"vary\.scale_out\.colour: not a cluster field \(at 'colour'\)"),
        ({"name.first": ["x"]}, r"vary\.name\.first: name has no sub-field 'first'"),
        ({"nodes": [{"a": 1}]}, r"vary\.nodes: \{'a': 1\} is not a value"),
        (
            {"scale_out.oversubscription": [[[1]]]},
            r"vary\.scale_out\.oversubscription: \[\[1\]\] is not a value",
        ),
        ({"nodes": []}, r"vary\.nodes: expected a non-empty list"),
    ],
)
def test_bad_vary_is_one_line_naming_the_key(vary, message):
    with pytest.raises(ConfigError, match=message):
        SweepSpec.from_dict({**BASE, "vary": vary})


@pytest.mark.parametrize(
    "collectives",
    [
        [{"op": ["all_reduce"]}],
        [{"op": "all_reduce", "sizes": 5}],
        [{"op": "all_reduce", "sizes": [{"a": 1}]}],
    ],
)
def test_bad_collectives_are_refused(collectives):
    with pytest.raises(ConfigError, match=r"collectives\[0\]"):
        SweepSpec.from_dict({"cluster": "lesson", "collectives": collectives})


def test_cli_unknown_vary_key_exits_2_with_one_line(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({**BASE, "vary": {"scale_out.nic_sped": ["200 Gb/s"]}}))
    r = CliRunner().invoke(app, ["sweep", str(f), "--db", str(tmp_path / "o.db")])
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        f"error: {f}: vary.scale_out.nic_sped: not a cluster field (at 'nic_sped')"
    ]


def test_name_can_vary_and_bad_points_are_recorded_not_fatal(tmp_path):
    # "name" used to collide with preset()'s own argument; a speed above the preset's ConnectX-7
    # (400 Gb/s, its datasheet) is valid alone but builds no cluster: that point's error, and the good
    # points still run.
    spec = SweepSpec.from_dict(
        {
            **BASE,
            "vary": {"name": ["a", "b"], "scale_out.nic_speed": ["200 Gb/s", "800 Gb/s", "1600 Gb/s"]},
        }
    )
    db = tmp_path / "r.db"
    assert run_into_db(spec, db) == (6, 0)
    store = ResultDB(db, columns_for(spec))
    rows = store.to_pandas().to_dict("records")
    store.close()
    ok = [r for r in rows if not r["error"]]
    bad = [r for r in rows if r["error"]]
    assert len(ok) == 2 and len(bad) == 4
    assert all(r["error"].startswith("scale_out.nic_speed") or "nic_speed" in r["error"] for r in bad)


@pytest.mark.parametrize(
    ("value", "reason"),
    [("400 GB/s", "above any NIC made"), (7, "7 has no unit")],
)
def test_a_speed_with_a_wrong_unit_or_none_is_refused_before_any_point_runs(value, reason):
    # The same value in a cluster file is refused; a sweep refuses it up-front, naming field and value.
    data = {**BASE, "vary": {"scale_out.nic_speed": ["200 Gb/s", value]}}
    with pytest.raises(ConfigError, match=r"vary\.scale_out\.nic_speed\[1\]: .* is not valid") as err:
        SweepSpec.from_dict(data)
    assert reason in str(err.value)


def test_an_unknown_accelerator_is_refused_before_any_point_runs():
    # A typo in the accelerator is refused like one in the NIC: the catalogue has no 'h100-sxmx', so no
    # point of the grid can run on it (before, every such point was stored with an error, exit 0).
    data = {**BASE, "vary": {"accelerator": ["h100-sxm", "h100-sxmx"]}}
    with pytest.raises(ConfigError, match=r"vary\.accelerator\[1\]: 'h100-sxmx' is not valid") as err:
        SweepSpec.from_dict(data)
    assert "unknown accelerator 'h100-sxmx'" in str(err.value)


def test_an_internal_error_is_recorded_on_its_row(monkeypatch):
    import aifabric.sweep.runner as runner

    def boom(*_a, **_k):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(runner, "formula_collective", boom)
    row = evaluate_point(SweepPoint("h100-ib-2node", (), "all_reduce", 1e6))
    assert row["error"] == "internal error: ZeroDivisionError: float division by zero"


def test_a_store_that_is_not_a_database_is_refused_and_left_alone(tmp_path):
    # the old CSV store had to repair torn rows by hand; SQLite's atomic commit (tested under SIGKILL in
    # test_db.py) leaves none, and a file that is not a store is refused, not overwritten
    spec = SweepSpec.from_dict({**BASE, "vary": {"nodes": [1, 2, 4]}})
    junk = tmp_path / "r.db"
    junk.write_text("key,cluster,changes\n" * 50)
    before = junk.read_bytes()
    with pytest.raises(ValueError, match=r"--db: .* is not a sweep database"):
        run_into_db(spec, junk)
    assert junk.read_bytes() == before


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the worker processes")
def test_workers_die_with_the_parent_after_sigkill(tmp_path):
    f = tmp_path / "s.yaml"
    # enough points that the sweep is still running when it is killed
    f.write_text(yaml.safe_dump({**BASE, "vary": {"nodes": list(range(1, 400))}}))
    cmd = [
        sys.executable,
        "-m",
        "aifabric",
        "sweep",
        str(f),
        "--db",
        str(tmp_path / "o.db"),
        "--workers",
        "2",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline and len(workers) < 2:
            time.sleep(0.2)
            workers = _children(proc.pid)
        assert len(workers) >= 2, "the sweep did not start its workers"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers)
    finally:
        for w in _children(proc.pid):
            os.kill(w, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
