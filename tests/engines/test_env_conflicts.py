"""A stated NCCL environment that contradicts the engine's options or cannot apply to the cluster is refused
with one line naming both sides (exit code 2 on the command line); sizes and NCCL versions the tables cannot
answer are refused too."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from aifabric.catalog.nccl import nccl_release
from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.collectives.algorithms import Algorithm
from aifabric.collectives.nccl_env import check_env
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import tier_model
from aifabric.errors import ConfigError, UnitError
from aifabric.units import one_size

runner = CliRunner()


def _refused(*args: str) -> str:
    r = runner.invoke(app, ["collective", "-s", "1GiB", "-c", "h100-ib-2node", *args])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--algo", "ring", "--env", "NCCL_ALGO=Tree"), "--algo ring conflicts with NCCL_ALGO=Tree"),
        (("--proto", "LL", "--env", "NCCL_PROTO=Simple"), "--proto LL conflicts with NCCL_PROTO=Simple"),
        (("--algo", "nvls", "--env", "NCCL_NVLS_ENABLE=0"), "--algo nvls conflicts with NCCL_NVLS_ENABLE=0"),
        (
            ("--no-nvls", "--env", "NCCL_NVLS_ENABLE=1"),
            "--no-nvls conflicts with NCCL_NVLS_ENABLE=1",
        ),
        (("--env", "NCCL_ALGO=Ring", "--env", "NCCL_ALGO=Tree"), "--env: NCCL_ALGO given twice"),
    ],
)
def test_conflicting_options_name_both_sides(args, said):
    assert said in _refused(*args)


def test_nvls_asked_on_a_cluster_without_nvswitch_says_why():
    line = _refused("-c", "v100-pcie-4gpu", "--env", "NCCL_ALGO=NVLS")
    assert "NCCL_ALGO=NVLS: v100-pcie-4gpu has no NVSwitch" in line


def test_nccl_variables_on_a_tpu_torus_are_refused():
    line = _refused("-c", "tpu-v5p-pod", "--env", "NCCL_ALGO=Ring")
    assert line.endswith(
        "NCCL_ALGO: a TPU torus (tpu-v5p-pod) runs XLA collectives, not NCCL; NCCL variables do not apply"
    )


def test_nvls_variables_on_rccl_are_refused():
    # accelerators.yaml: mi300x collective_library rccl; RCCL implements no NVLS (NVLink SHARP is NVIDIA's)
    spec = preset("h100-ib-2node")
    amd = spec.model_copy(update={"accelerator": "mi300x"})
    with pytest.raises(ConfigError, match="NCCL_NVLS_ENABLE: 'mi300x' runs RCCL, which has no NVLS"):
        check_env({"NCCL_NVLS_ENABLE": "1"}, amd, Collective.ALL_REDUCE, tier_model(spec))


def test_agreeing_options_pass():
    spec = preset("h100-ib-2node")
    check_env(
        {"NCCL_ALGO": "Ring,Tree", "NCCL_PROTO": "Simple"},
        spec,
        Collective.ALL_REDUCE,
        tier_model(spec),
        algorithm=Algorithm.RING,
    )


def test_message_sizes_are_whole_bytes():
    assert one_size("1.5 GiB", "--size") == 1.5 * 2**30  # 1610612736 bytes
    assert one_size("1.1 GB", "--size") == 1_100_000_000  # 1.1e9 computed with a binary rounding
    with pytest.raises(UnitError, match=r"--size: a message is a whole number of bytes, got '1.5B'"):
        one_size("1.5B", "--size")
    assert "--size: a message is a whole number of bytes, got '1.5B'" in _refused("-s", "1.5B")


def test_nccl_versions_past_the_newest_recorded_series_are_refused():
    assert nccl_release("2.30.7").version == "2.30.3"  # same minor: the tables were read through it
    for version in ("3.0", "2.99.0", "2.31.0"):
        with pytest.raises(ConfigError, match="newer than the newest recorded release 2.30.3"):
            nccl_release(version)
    assert "'3.0' is newer than the newest recorded release 2.30.3" in _refused("--nccl-version", "3.0")


@pytest.mark.parametrize("engine", ["formula", "links"])
def test_one_rank_says_there_is_nothing_to_communicate(engine):
    # one rank: no peer, no byte crosses a link; NCCL still copies the send buffer into the receive buffer
    # out of place (NVIDIA/nccl v2.26.2-1 src/device/onerank.cu ncclLaunchOneRank: cudaMemcpyAsync when
    # dst != src), so the time is that copy's, 2 x 1 GiB / 3,350 GB/s (H100 SXM datasheet) = 641.04 us
    r = runner.invoke(
        app, ["collective", "-s", "1GiB", "-c", "h100-ib-2node", "--ranks", "1", "--engine", engine]
    )
    assert r.exit_code == 0, r.output
    assert "1 rank," in r.stdout and "1 rank: nothing crosses a link" in r.stdout
    assert "time 641.04 us" in r.stdout and "in place it is a no-op" in r.stdout
    assert "none/none" not in r.stdout


@pytest.mark.parametrize(
    ("op", "algo", "said"),
    [
        # tuning.cc: Tree runs only all_reduce; NCCL has no tree all_gather and fails rather than fall back
        ("all_gather", "Tree", "NCCL_ALGO=Tree: no algorithm it enables runs all_gather here"),
        # init.cc: CollNet stays off unless NCCL_COLLNET_ENABLE=1
        ("all_reduce", "CollnetDirect", "CollNet needs NCCL_COLLNET_ENABLE=1"),
    ],
)
def test_nccl_algo_enabling_nothing_that_runs_is_refused(op, algo, said):
    r = runner.invoke(
        app, ["collective", op, "-s", "1MiB", "-c", "h100-ib-2node", "--env", f"NCCL_ALGO={algo}"]
    )
    assert r.exit_code == 2, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and said in r.stderr


@pytest.mark.parametrize(
    ("version", "refused"),
    [
        # v2.18.5 enqueue.cc getAlgoInfo: "Error : no algorithm/protocol available" (case 20 [S1], A100)
        ("2.18.5", True),
        # v2.20.5 tuning.cc: "at least set ring algo available": ring, said in the explanation
        ("2.20.5", False),
        # v2.24.3 enqueue.cc: the error again ("NCCL_ALGO was set to NVLS")
        ("2.24.3", True),
    ],
)
def test_nccl_algo_nvls_on_a100_follows_the_release(version, refused):
    args = ["collective", "all_reduce", "-s", "1KiB", "-c", "megatron-a100", "--nodes", "1"]
    r = runner.invoke(app, [*args, "--env", "NCCL_ALGO=NVLS", "--nccl-version", version])
    if refused:
        assert r.exit_code == 2, r.output
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "NCCL_ALGO=NVLS" in lines[0] and f"NCCL {version}'s tuner" in lines[0]
    else:
        assert r.exit_code == 0, r.output
        assert "(ring/LL)" in r.stdout and f"so NCCL {version} runs ring instead" in r.stdout
