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


def test_sprayed_slowdown_is_against_the_nic_not_the_sum_of_spine_paths() -> None:
    """A message sprayed over 4 spines still leaves through one 400 Gb/s NIC: 2 MB alone take 40 us, and
    the sprayed permutation ends in 41.5 us (3 hops x 0.5 us step), so its slowdown is 41.5 / 40."""
    r = runner.invoke(app, ["transport", "permutation", "-t", "ib", "-t", "ib", "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["results"]
    assert len(rows) == 1  # -t ib -t ib runs once
    (row,) = rows
    assert row["ideal_s"] == pytest.approx(2e6 / 50e9)
    assert row["makespan_s"] == pytest.approx(41.5e-6, rel=0.01)
    assert row["flow_slowdown_median"] == pytest.approx(41.5 / 40, rel=0.01)
    assert row["flow_slowdown_max"] == pytest.approx(41.5 / 40, rel=0.01)


def test_meta_story_names_a_winner_with_figures() -> None:
    r = runner.invoke(app, ["transport", "meta", "--size", "256 kB", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert [row["transport"] for row in out["results"]] == ["roce-pfc", "roce-dcqcn-tuned", "receiver-driven"]
    assert out["winner"] in {"roce-pfc", "roce-dcqcn-tuned", "receiver-driven"}
    assert len(out["why"]) == 3 and "PFC pauses" in out["why"][0]
    # receiver-driven admission: no pause, no victim (congestion-control.md Sec. 4)
    assert out["results"][2]["pause_s"] == 0.0 and out["results"][2]["victims"] == []


def test_serial_all_to_all_and_outputs_per_link(tmp_path) -> None:
    out = tmp_path / "rates.png"
    r = runner.invoke(
        app,
        [
            "transport",
            "all-to-all",
            "--senders",
            "8",
            "-s",
            "256 kB",
            "--skew",
            "4",
            "-t",
            "roce-pfc",
            "--link",
            "host1->switch",
            "--plot",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "busiest links" in r.stdout and "head-of-line blocking" in r.stdout
    assert out.stat().st_size > 0
    r = runner.invoke(
        app, ["transport", "all-to-all", "--senders", "8", "-s", "256 kB", "--serial", "--json"]
    )
    row = json.loads(r.stdout)["results"][0]
    # 7 x 5.12 us + 6 RTTs of 12 us (hand), against 35.84 us contention-free
    assert row["makespan_s"] == pytest.approx(7 * 5.12e-6 + 6 * 12e-6, rel=0.06)
    assert row["ideal_s"] == pytest.approx(7 * 5.12e-6)


def test_mice_report_their_fifo_completion_next_to_the_fluid_one() -> None:
    """Mice behind the elephants' PFC queue: the FIFO estimate (sojourn + size / rate) is at least the
    mouse's own transfer time and below the fluid model's proportional-FIFO completion (an upper bound)."""
    r = runner.invoke(app, ["transport", "mice", "--senders", "8", "-t", "roce-pfc", "--json"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)["results"][0]
    assert 64e3 / 50e9 <= row["mice_fct_fifo_median_s"] < row["mice_fct_fluid_median_s"]


def test_a_chained_ring_of_128_hosts_runs() -> None:
    """2 (n - 1) = 254 chained steps of 256 KiB per host (32,512 flows, 128 at a time): by hand a step sends
    in 11 steps of 0.5 us (10.49 rounded up) plus one across the switch, 6 us, and the next starts the
    12 us ACK later: 254 x 18 - 12 us = 4,560 us, plus up to a step where a start lands on a step boundary."""
    r = runner.invoke(app, ["transport", "ring", "--senders", "128", "-s", "256 KiB", "-t", "ib", "--json"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)["results"][0]
    assert 4560e-6 - 1e-12 <= row["makespan_s"] <= 4560e-6 + 253 * 0.5e-6


@pytest.mark.parametrize("scenario", ["mice", "checkpoint", "ring"])
def test_other_scenarios_run(scenario: str) -> None:
    r = runner.invoke(
        app, ["transport", scenario, "--senders", "8", "-s", "256 kB", "-t", "uet-rccc", "--json"]
    )
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)["results"][0]
    assert row["makespan_s"] >= row["ideal_s"] * (1 - 1e-9)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["transport", "incast", "--serial"], "error: --serial: only the all-to-all"),
        (["transport", "ring", "--skew", "2"], "error: --skew: only the all-to-all and meta"),
        (["transport", "all-to-all", "--skew", "0.5"], "error: --skew: must be"),
        (["transport", "incast", "--link", "nowhere"], "error: --link: no link 'nowhere'"),
        (["transport", "mice", "--mouse-size", "-1"], "error: --mouse-size:"),
        (["transport", "incast", "-t", "tcp"], "error: transport: unknown 'tcp'"),
        (["transport", "nope"], "error: scenario: unknown 'nope'"),
        (["transport", "incast", "--size", "10 GB"], "error: --size:"),
        # the mice dominate the run's length: the error names their option, not --size
        (["transport", "mice", "--mouse-size", "1 TB"], "error: --mouse-size: about"),
        (["transport", "incast", "--rate", "400 GB/s"], "error: --rate:"),
        # 0.5 us x 50e9 B/s = 25 kB: a smaller flow would read as 50,000x its ideal time
        (["transport", "incast", "--size", "1 B"], "error: --size: 1 B is under one time step"),
        (["transport", "mice", "--mouse-size", "1 kB"], "= 25000 B); use at least that"),
        (["transport", "incast", "--rate", "0"], "error: --rate: bandwidth must be > 0, got '0'"),
        (["transport", "incast", "--plot", "x.txt"], "error: --plot:"),
        (["transport", "incast", "--spraying", "ev"], "error: --spraying: only the permutation"),
        (["transport", "permutation", "--spraying", "random"], "error: spraying: unknown 'random'"),
        # one elephant and no mouse, or hosts that 4 leaves cannot share evenly, are not run as other counts
        (["transport", "mice", "--senders", "1"], "error: --senders: the mice scenario makes a quarter"),
        (["transport", "permutation", "--senders", "6"], "give a multiple of 4, got 6"),
    ],
)
def test_bad_input_exit_2(args: list[str], needle: str) -> None:
    r = runner.invoke(app, args)
    assert r.exit_code == 2
    assert needle in r.stderr


def test_fabric_and_collective_take_a_transport_on_the_flow_engine_only() -> None:
    base = ["--cluster", "dgx-h100-superpod", "--nodes", "4", "-s", "4 MB"]
    r = runner.invoke(app, ["fabric", "uniform", *base, "--transport", "roce-pfc", "--json"])
    assert r.exit_code == 0, r.output
    tr = json.loads(r.stdout)["transport"]
    assert tr["name"] == "roce-pfc" and tr["pause_s"] > 0 and tr["paused_links"]
    r = runner.invoke(app, ["collective", "all_reduce", *base, "--engine", "flow", "--transport", "ib"])
    assert r.exit_code == 0, r.output
    assert "transport ib (fluid queue model)" in r.stdout
    r = runner.invoke(app, ["collective", "all_reduce", *base, "--engine", "links", "--transport", "ib"])
    assert r.exit_code == 2
    assert "error: --transport: the links engine does not take this option" in r.stderr
    r = runner.invoke(app, ["fabric", "uniform", *base, "--engine", "links", "--transport", "ib"])
    assert r.exit_code == 2 and "the links engine does not use a transport model" in r.stderr
    r = runner.invoke(app, ["fabric", "uniform", *base, "--transport", "tcp"])
    assert r.exit_code == 2 and "error: transport: unknown 'tcp'" in r.stderr


def test_progress_bar_on_long_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bar appears once a run has lasted _PROGRESS_AFTER_S (2 s); forced to 0 here, the run completes
    and stdout keeps only the results."""
    import aifabric.cli.transport as cli

    monkeypatch.setattr(cli, "_PROGRESS_AFTER_S", 0.0)
    seen: list[float] = []
    real = cli._LazyProgress.update

    def spy(self: cli._LazyProgress, label: str, fraction: float) -> None:
        seen.append(fraction)
        real(self, label, fraction)

    monkeypatch.setattr(cli._LazyProgress, "update", spy)
    r = runner.invoke(app, ["transport", "incast", "--senders", "64", "-s", "1 MB", "-t", "ib"])
    assert r.exit_code == 0, r.output
    assert seen and 0 < seen[0] < 1 and seen == sorted(seen)
    assert "incast" in r.stdout


def test_a_fluid_run_too_long_for_the_cli_is_refused_with_its_size() -> None:
    """1024 nodes sprayed under IB: about 6e9 step x (flow, hop) updates, minutes of work, refused at once."""
    args = ["fabric", "all_reduce", "--nodes", "1024", "--routing", "spray", "--transport", "ib"]
    r = runner.invoke(app, args)
    assert r.exit_code == 2
    assert "error: --transport: the ib fluid model would take about" in r.stderr
    assert "use fewer nodes, a smaller size, or no --transport" in r.stderr


@pytest.mark.parametrize("command", ["fabric", "collective"])
def test_fabric_and_collective_feed_the_bar_from_the_transport_run(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bar (a terminal only) receives the fluid run's progress, through to done == total."""
    import contextlib
    from collections.abc import Iterator

    import aifabric.cli.collective as cli_collective
    import aifabric.cli.fabric as cli_fabric

    seen: list[tuple[int, int]] = []

    @contextlib.contextmanager
    def spy_bar() -> Iterator[object]:
        yield lambda done, total: seen.append((done, total))

    monkeypatch.setattr(cli_collective if command == "collective" else cli_fabric, "progress_bar", spy_bar)
    args = [command, "all_reduce", "--cluster", "dgx-h100-superpod", "--nodes", "4", "-s", "4 MB"]
    extra = ["--engine", "flow"] if command == "collective" else []
    r = runner.invoke(app, [*args, *extra, "--transport", "ib"])
    assert r.exit_code == 0, r.output
    assert seen and seen[-1][0] == seen[-1][1] > 0


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch) -> None:
    import aifabric.cli.transport as cli

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run_scenario", interrupted)
    r = runner.invoke(app, ["transport", "incast", "-t", "ib"])
    assert r.exit_code == 130
    assert r.stderr == "interrupted\n"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # 4096 x 4095 = 16.8M flows, each host's NIC 4095 x 2 MB / 50e9 B/s = 0.164 s = 3.28e5 steps
        (
            ["all-to-all", "--senders", "4096"],
            "error: --senders: about 3.28e+05 steps of 0.5 us x 16,773,120",
        ),
        # 100,000 chained steps of 2 MB at 50e9 B/s: 4 s = 8e6 steps, 4096 flows at once
        (["ring", "--senders", "4096", "--steps", "100000"], "error: --senders: about 8e+06 steps"),
        (["ring", "--steps", "100000"], "error: --steps: about 8e+06 steps of 0.5 us x 16 flows"),
        # 16 x 2 MB into one port at 1e-9 Gb/s (0.125 B/s): 2.56e8 s = 5.12e14 steps; the rate, not the
        # size, makes the run long
        (["incast", "--rate", "1e-9 Gb/s"], "error: --rate: about 5.12e+14 steps"),
    ],
)
def test_long_runs_are_refused_from_counts_before_building(
    args: list[str], needle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12: the estimate comes from counts, before the 16.8M-flow scenario is built (building raises)."""
    import aifabric.cli.transport as cli

    def never(*a: object, **k: object) -> None:
        raise AssertionError("built before the estimate")

    for name in ("all_to_all", "chained_ring"):
        monkeypatch.setattr(cli, name, never)
    r = runner.invoke(app, ["transport", *args, "-t", "ib"])
    assert r.exit_code == 2, r.output
    assert needle in r.stderr and "too long a run" in r.stderr


def test_memory_is_refused_from_counts_naming_the_option() -> None:
    """300 ranks all-to-all: 89,700 flows, 179,400 entries; fluid arrays plus the scenario's objects exceed
    100 MB, so the refusal names --senders, not the model's internal 'paths'."""
    r = runner.invoke(
        app, ["--max-memory", "100MB", "transport", "all-to-all", "--senders", "300", "-s", "30 kB"]
    )
    assert r.exit_code == 2
    assert r.stderr.startswith("error: --senders: 89,700 flows over 179,400 (flow, hop) entries needs about")


def test_a_collective_sweep_under_a_transport_is_refused_on_its_whole_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 12: the default sweep (8 B-16 GiB) ran for minutes, each size under the limit alone. The sweep's
    work is the sum over its sizes, estimated before any size runs: a limit above either size's work but
    below their sum refuses the sweep and runs nothing."""
    import aifabric.transport.wire as wire
    from aifabric.cluster.resolve import resolve_cluster
    from aifabric.engines.api import collective_time
    from aifabric.transport.wire import probe_fluid_work

    spec = resolve_cluster("dgx-h100-superpod", nodes=4)
    kw = {"engine": "flow", "transport": "ib", "routing": "spray"}
    works = [
        probe_fluid_work(lambda s=s: collective_time("all_reduce", s, spec, **kw))[0] for s in (16e6, 32e6)
    ]
    assert all(w > 0 for w in works)
    ran: list[object] = []
    monkeypatch.setattr(wire, "simulate_fluid", lambda *a, **k: ran.append(a))
    monkeypatch.setattr(wire, "MAX_FLUID_WORK", 1.01 * max(works))
    args = ["collective", "all_reduce", "--nodes", "4", "--engine", "flow", "--transport", "ib"]
    r = runner.invoke(app, [*args, "--routing", "spray", "-b", "16MB", "-e", "32MB", "-f", "2"])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: --max: the ib fluid model would take more than") and not ran
    r = runner.invoke(app, [*args, "-e", "2GiB"])  # the default 8 B start: 29 sizes
    assert r.exit_code == 2 and "over the sweep's 29 size(s)" in r.stderr
