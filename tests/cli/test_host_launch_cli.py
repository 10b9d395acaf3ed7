"""``collective --gpus-per-thread N --launch-us T``: the host launch floor of one thread driving N GPUs
(:mod:`aifabric.engines.host_launch`), and its refusals (exit 2, one line naming the option typed)."""

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

#: a DGX A100 (nccl-tests #123's host: AMD EPYC 7742), one node, no scale-out
DGX_A100 = (
    "name: dgx-a100\naccelerator: a100-sxm-40gb\ngpus_per_node: 8\nnodes: 1\nscale_up: {kind: nvswitch}\n"
    "scale_out: null\ncpu_vendor: amd\n"
)


@pytest.fixture
def cluster(tmp_path):
    path = tmp_path / "dgx-a100.yaml"
    path.write_text(DGX_A100)
    return str(path)


def test_one_thread_of_eight_gpus_sets_the_small_message_time(cluster):
    # nccl-tests #123: 8 GPUs driven by one thread, 33.7 us at 8 B; 8 x 4.21 us = 33.68 us
    r = runner.invoke(
        app,
        ["collective", "-c", cluster, "-s", "8", "--gpus-per-thread", "8", "--launch-us", "4.21", "--json"],
    )
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.stdout)
    assert row["time_s"] == pytest.approx(33.68e-6)
    assert row["bottleneck"] == "host launch"


@pytest.mark.parametrize(
    "args,line",
    [
        (["--launch-us", "4"], "error: --launch-us: needs --gpus-per-thread too"),
        (
            ["--gpus-per-thread", "9", "--launch-us", "4"],
            "error: --gpus-per-thread: 9 is more than the 8 ranks",
        ),
        (
            ["--gpus-per-thread", "2", "--launch-us", "4", "--engine", "links"],
            "error: --gpus-per-thread: the links engine does not take this option",
        ),
    ],
)
def test_launch_options_are_refused_by_name(cluster, args, line):
    r = runner.invoke(app, ["collective", "-c", cluster, "-s", "8", *args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), r.stderr


def test_gpus_per_thread_alone_prices_no_host_floor_and_says_so(cluster):
    # -g 8 without a launch cost: the 8 ranks share a process, no host floor (the floor needs --launch-us)
    args = ["collective", "-c", cluster, "-s", "8", "--gpus-per-thread", "8"]
    alone, plain = runner.invoke(app, [*args, "--json"]), runner.invoke(app, args[:-2] + ["--json"])
    assert alone.exit_code == 0, alone.output
    assert json.loads(alone.stdout)[0]["time_s"] == json.loads(plain.stdout)[0]["time_s"]
    text = runner.invoke(app, args)
    assert "without --launch-us" in text.stdout and "no host launch floor is priced" in text.stdout
