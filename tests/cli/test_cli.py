"""The CLI: main commands print what they should; bad input is one line on stderr and exit code 2."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric import budget
from aifabric.cli.app import app

runner = CliRunner()


def run(*args):
    return runner.invoke(app, list(args))


def test_demo_prints_lesson_and_why_conventions_differ():
    r = run("demo")
    assert r.exit_code == 0
    for fig in ("0.27", "0.31", "2.80", "0.62", "0.45", "1.40", "0.34", "1.39x"):
        assert fig in r.stdout
    assert "both directions" in r.stdout and "450 GB/s" in r.stdout


def test_collective_single_and_sweep():
    r = run("collective", "all_reduce", "-c", "h100-ib-2node", "--nodes", "1", "--size", "4GiB")
    assert r.exit_code == 0, r.stdout
    assert "nvls" in r.stdout and "busbw" in r.stdout and "per direction" in r.stdout
    r = run("collective", "all_gather", "-c", "h100-ib-2node", "-b", "1MiB", "-e", "1GiB", "-f", "4")
    assert r.exit_code == 0
    assert "1073741824" in r.stdout


def test_ladder_tpu():
    r = run("ladder", "tpu-v5p-pod")
    assert r.exit_code == 0
    for fig in ("0.362 ms", "0.833 ms", "160 ms"):
        assert fig in r.stdout


def test_ladder_takes_its_cluster_as_argument_or_option_but_not_two():
    # the same TPU v5p ladder (HBM 0.362 ms per GB, as above) either way; two different clusters: one line
    assert (
        run("ladder", "-c", "tpu-v5p-pod", "--json").stdout == run("ladder", "tpu-v5p-pod", "--json").stdout
    )
    assert run("ladder", "--cluster", "tpu-v5p-pod").stdout == run("ladder").stdout
    r = run("ladder", "tpu-v5p-pod", "-c", "gb200-nvl72")
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        "error: --cluster: 'gb200-nvl72' and the CLUSTER argument 'tpu-v5p-pod' name two clusters; "
        "give one of them"
    ]


def test_cluster_show():
    r = run("cluster", "show", "dgx-h100-superpod", "--nodes", "128")
    assert r.exit_code == 0
    assert "bisection" in r.stdout and "Parts and power" in r.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (("collective", "-c", "no-such-preset"), "no-such-preset"),
        (("collective", "--size", "-1GB"), "size"),
        (("collective", "--size", "0"), "size"),
        (("collective", "-c", "lesson", "--nodes", "0"), "nodes"),
        (("cluster", "show", "does-not-exist.yaml"), "does not exist"),
    ],
)
def test_bad_input_exit_2(args, needle):
    r = run(*args)
    assert r.exit_code == 2
    assert needle in (r.stderr + r.stdout)


def test_bad_yaml_and_units(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text("accelerator: h100-sxm\nnodes: 4\nscale_out: {nic_speed: 400 GB/s}\n")
    r = run("cluster", "show", str(bad))
    assert r.exit_code == 2
    assert "scale_out.nic_speed" in r.stderr and "3.2 Tb/s" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    bad.write_text("accelerator: [h100\n")
    r = run("cluster", "show", str(bad))
    assert r.exit_code == 2 and "malformed YAML" in r.stderr
    fill = tmp_path / "f.yaml"
    fill.write_text("accelerator: gb200\ngpus_per_node: 4\ngpus: 100\nscale_up: {gpus: 72}\n")
    r = run("cluster", "show", str(fill))
    assert r.exit_code == 2 and "does not fill" in r.stderr


def test_fabric_command_reports_links_and_writes_heatmap(tmp_path):
    png = tmp_path / "heat.png"
    r = run(
        "fabric",
        "all_reduce",
        "--nodes",
        "32",
        "--jobs",
        "4",
        "--placement",
        "fragmented",
        "--routing",
        "ecmp",
        "--seed",
        "3",
        "--size",
        "1GB",
        "--plot",
        str(png),
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "Most loaded links and why" in r.stdout and "efficiency" in r.stdout
    assert png.stat().st_size > 10_000


def test_collective_on_flow_engine():
    r = run(
        "collective", "all_reduce", "--nodes", "2", "--size", "1GB", "--engine", "flow", "--routing", "ecmp"
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "engine flow" in r.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (("fabric", "--routing", "magic"), "routing"),
        (("fabric", "--placement", "scattered"), "placement"),
        (("fabric", "--nodes", "4", "--fail", "leaf:0"), "cannot reach"),
        (("fabric", "--fail", "spine:x"), "--fail"),
        (("collective", "--routing", "spray"), "formula engine"),
    ],
)
def test_fabric_bad_input_exit_2(args, needle):
    r = run(*args)
    assert r.exit_code == 2
    assert needle in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_front_end_without_nics_is_refused_not_dropped(tmp_path):
    # examples/cluster.yaml with front_end.nics_per_node 0: no node joins the front-end, so no checkpoint or
    # data loading could use it; the spec says so in one line instead of modelling a cluster without one.
    example = Path(__file__).parents[2] / "examples" / "cluster.yaml"
    text = example.read_text().replace("nics_per_node: 1}", "nics_per_node: 0}")
    (tmp_path / "fe.yaml").write_text(text)
    r = run("cluster", "show", "-c", str(tmp_path / "fe.yaml"))
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'fe.yaml'}: front_end.nics_per_node: must be 1 or more, got 0 "
        "(a cluster without a front-end network: front_end: null)"
    ]


def test_plan_refuses_a_memory_limit_it_would_not_use(monkeypatch):
    # the planner builds no topology and routes no flow (aifabric.cli.app.NO_MEMORY_LIMIT): --max-memory is
    # named and refused, not taken and ignored; the same limit in the environment is the shell's, not refused
    monkeypatch.setattr(budget, "_explicit", None)  # the root option sets this process's limit: undone after
    args = ["plan", "-m", "llama3-8b", "--nodes", "2", "-B", "64", "--top", "1", "--json"]
    r = run("--max-memory", "8GiB", *args)
    assert r.exit_code == 2
    assert r.stderr.strip().splitlines() == [
        "error: --max-memory: aifabric plan builds no topology and routes no flows, so no memory limit "
        "applies to it; leave --max-memory out"
    ]
    budget.set_memory_limit(None)
    monkeypatch.setenv(budget.ENV_VAR, "8GiB")
    assert run(*args).exit_code == 0
