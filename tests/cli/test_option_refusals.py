"""Options a new-user trial found accepted or named by internal fields (issue 8, items 5 and 8): every
refusal is exit code 2 and one line naming the option as the user typed it."""

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cli.common import BROKEN_PIPE_EXIT

runner = CliRunner()


def one_line_refusal(argv: list[str]) -> str:
    """The one stderr line of ``aifabric argv``, which must exit 2."""
    r = runner.invoke(app, argv)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


def refused(*args: str) -> str:
    return one_line_refusal(["collective", "--size", "1GiB", *args])


@pytest.mark.parametrize("level", ["99", "6", "-1", "PXQ"])
def test_gdr_level_outside_nccls_levels_is_refused(level):
    # NCCL src/graph/paths.cc ncclGetLevel: names LOC..SYS, or old levels 0-5 (levelsOldToNew has 6 entries)
    line = refused("-c", "h100-ib-2node", "--env", f"NCCL_NET_GDR_LEVEL={level}")
    assert line.startswith("error: NCCL_NET_GDR_LEVEL: ") and level in line and "0-5" in line


@pytest.mark.parametrize("level", ["0", "5", "PXB", "SYS"])
def test_gdr_levels_nccl_takes_are_accepted(level):
    r = runner.invoke(
        app, ["collective", "-s", "1GiB", "-c", "h100-ib-2node", "--env", f"NCCL_NET_GDR_LEVEL={level}"]
    )
    assert r.exit_code == 0, r.stderr


def test_ib_qps_on_efa_names_the_transport():
    # aws-p4d runs EFA through the aws-ofi-nccl plugin: NCCL's net_ib, which reads the variable, is unused
    line = refused("-c", "aws-p4d", "--env", "NCCL_IB_QPS_PER_CONNECTION=2")
    assert "NCCL_IB_QPS_PER_CONNECTION" in line and "NET/AWS Libfabric" in line and "does not apply" in line


def test_ib_qps_without_a_network_is_refused_and_on_ib_is_taken():
    assert "no scale-out network" in refused("-c", "v100-pcie-4gpu", "--env", "NCCL_IB_QPS_PER_CONNECTION=2")
    r = runner.invoke(
        app, ["collective", "-s", "1GiB", "-c", "h100-ib-2node", "--env", "NCCL_IB_QPS_PER_CONNECTION=2"]
    )
    assert r.exit_code == 0, r.stderr


@pytest.mark.parametrize("routing", [[], ["--routing", "spray"], ["--routing", "pinning"]])
def test_seed_under_a_routing_without_random_choices_is_refused(routing):
    line = refused("-c", "h100-ib-2node", "--engine", "links", *routing, "--seed", "3")
    assert line.startswith("error: --seed: used only by --routing ecmp") and "spray-blind, reps" in line


def test_seed_under_hashing_routing_is_taken():
    r = runner.invoke(
        app,
        ["collective", "-s", "1GiB", "-c", "h100-ib-2node", "--engine", "links", "--routing", "reps",
         "--seed", "3"],
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--no-nvls", "--algo", "nvls"), "error: --algo nvls conflicts with --no-nvls"),
        (("--no-nvls", "--algo", "nvls_tree"), "error: --algo nvls_tree conflicts with --no-nvls"),
        (("--env", "NCCL_NVLS_ENABLE=0", "--algo", "nvls"), "--algo nvls conflicts with NCCL_NVLS_ENABLE=0"),
        (("--env", "NCCL_ALGO=Tree", "--algo", "ring"), "--algo ring conflicts with NCCL_ALGO=Tree"),
        (("--env", "NCCL_NVLS_ENABLE=1", "--no-nvls"), "error: --no-nvls conflicts with NCCL_NVLS_ENABLE=1"),
    ],
)
def test_conflicting_options_name_both_as_typed(args, said):
    assert said in refused("-c", "h100-ib-2node", *args)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--engine", "links", "--no-nvls"), "error: --no-nvls: the links engine does not take this option"),
        (("--engine", "links", "--algo", "pat"), "error: --algo pat: no transfer-level plan"),
        # the formula engine's own refusal, raised as "algorithm: ...", comes back as the flag typed
        (("-c", "v100-pcie-4gpu", "--algo", "nvls"), "error: --algo: 'nvls' does not apply"),
    ],
)
def test_refusals_never_name_internal_fields(args, said):
    line = refused(*args)
    assert said in line
    for internal in ("exclude", "algorithm:", "protocol:"):
        assert internal not in line, line


@pytest.mark.parametrize("extra", [["--json"], []])
def test_output_cut_short_by_its_reader_exits_quietly(extra):
    # `aifabric collective ... [--json] | head -1`: the reader is gone before anything is written; text
    # (printed by rich, whose own handler exits 1) and JSON end the same way
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    code = "from aifabric.cli.app import main; main()"
    args = ["collective", "-c", "h100-ib-2node", *extra]
    with subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        err = proc.stderr.read().decode()
        rc = proc.wait(timeout=120)
    assert err == ""
    assert rc == BROKEN_PIPE_EXIT


def fabric_refused(*args: str) -> str:
    return one_line_refusal(["fabric", "-c", "h100-ib-2node", "-s", "1MB", *args])


def test_fabric_seed_where_nothing_is_random_is_refused():
    line = fabric_refused("all_reduce", "--routing", "spray", "--seed", "3")
    assert line.startswith("error: --seed: nothing in this run is random (--routing spray")


@pytest.mark.parametrize(
    "args",
    [
        ["all_reduce", "--routing", "ecmp", "--seed", "3"],  # hashes
        ["permutation", "--routing", "spray", "--seed", "3"],  # a random derangement
        ["all_reduce", "--routing", "spray", "--placement", "random", "--seed", "3"],
        ["all_reduce", "--routing", "spray", "--fail", "fabric:0.25", "--seed", "3"],
    ],
)
def test_fabric_seed_is_taken_where_something_draws_on_it(args):
    r = runner.invoke(app, ["fabric", "-c", "h100-ib-2node", "-s", "1MB", "--engine", "links", *args])
    assert r.exit_code == 0, r.stderr


def test_fabric_algo_with_a_traffic_pattern_is_refused():
    assert fabric_refused("permutation", "--algo", "ring").startswith(
        "error: --algo ring: permutation is a traffic pattern, not a collective"
    )


def test_fabric_engine_refusals_name_the_option():
    line = fabric_refused("all_reduce", "--engine", "links", "--transport", "ib")
    assert line.startswith("error: --transport: the links engine does not use a transport model")
    assert fabric_refused("all_reduce", "--algo", "pat").startswith("error: --algo: 'pat' has no")


def test_train_seed_where_nothing_is_random_is_refused():
    base = ["train", "-c", "h100-ib-2node", "-m", "megatron-gpt-1.7b", "--tp", "8", "--global-batch", "16"]
    r = runner.invoke(app, [*base, "--engine", "links", "--routing", "spray", "--seed", "3"])
    assert r.exit_code == 2
    assert r.stderr.startswith(
        "error: --seed: nothing in this step is random (--routing spray, --placement packed)"
    )
    r = runner.invoke(
        app, [*base, "--engine", "links", "--routing", "spray", "--placement", "random", "--seed", "3"]
    )
    assert r.exit_code == 0, r.stderr


def test_nodes_too_many_for_the_clos_names_nodes():
    # 2,097,152 nodes x 8 GPUs need 16,384 pods; a three-tier Clos of radix-64 cores joins 64 (clos.py)
    line = refused("all_reduce", "--nodes", "2097152")
    assert line.startswith("error: --nodes 2097152: 16777216 GPUs need 16384 pods"), line
