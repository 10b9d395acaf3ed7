"""``aifabric transport``: scenarios under several transports, JSON numbers, one-line errors."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()


def test_incast_json_reports_line_rate_completion_and_pauses() -> None:
    r = runner.invoke(
        app, ["transport", "incast", "--senders", "8", "--size", "500 kB", "-t", "roce-pfc", "--json"]
    )
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)["results"]
    # 8 x 500 kB at 400 Gb/s = 80 us (hand derivation); one step per hop on top
    assert row["makespan_s"] == pytest.approx(80e-6, rel=0.05)
    assert row["pause_s"] > 0
    assert row["congested_links"] == ["switch->receiver"]


def test_victim_table_and_plot(tmp_path) -> None:
    out = tmp_path / "q" / "leaf.png"
    r = runner.invoke(app, ["transport", "victim", "-t", "roce-pfc", "-t", "uet-lossy", "--plot", str(out)])
    assert r.exit_code == 0, r.output
    assert "A8->W (victim)" in r.stdout
    assert out.stat().st_size > 0


def test_permutation_with_ecmp_is_slower_than_sprayed() -> None:
    times = {}
    for mode in ("ecmp", "even"):
        r = runner.invoke(
            app, ["transport", "permutation", "--spraying", mode, "-t", "ib", "--size", "4 MB", "--json"]
        )
        assert r.exit_code == 0, r.output
        times[mode] = json.loads(r.stdout)["results"][0]["makespan_s"]
    # non-blocking and sprayed: line rate, plus one 0.5 us step per hop (3)
    assert times["even"] == pytest.approx(4e6 / 50e9 + 1.5e-6, rel=0.01)
    assert times["ecmp"] > 1.5 * times["even"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["transport", "incast", "-t", "tcp"], "error: transport: unknown 'tcp'"),
        (["transport", "nope"], "error: scenario: unknown 'nope'"),
        (["transport", "incast", "--size", "10 GB"], "error: --size:"),
        (["transport", "incast", "--rate", "400 GB/s"], "error: --rate:"),
        (["transport", "incast", "--plot", "x.txt"], "error: --plot:"),
        (["transport", "incast", "--spraying", "ev"], "error: --spraying: only the permutation"),
        (["transport", "permutation", "--spraying", "random"], "error: spraying: unknown 'random'"),
    ],
)
def test_bad_input_exit_2(args: list[str], needle: str) -> None:
    r = runner.invoke(app, args)
    assert r.exit_code == 2
    assert needle in r.stderr
