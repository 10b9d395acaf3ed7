"""NCCL's NVLS enablement per release and a stated NCCL environment (``--env``) change the prediction."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

ONE_NODE = preset("h100-ib-2node", nodes=1)
TWO_NODES = preset("h100-ib-2node")


def _candidates(r) -> set[str]:
    return {c.algorithm for c in r.candidates}


def test_nvls_needs_three_local_gpus_before_2_19():
    # nvls.cc: NVLS needs >= 3 local GPUs in 2.18.1 and >= 2 in 2.30.3 (nccl_releases.yaml
    # nvls_min_local_gpus): on 2 H100s of one node NVLS is no candidate on 2.18, one on 2.30.
    comm = Communicator.from_gpus(ONE_NODE, [0, 1])
    old = formula_collective("all_reduce", 2**30, ONE_NODE, comm, nccl_version="2.18.1")
    new = formula_collective("all_reduce", 2**30, ONE_NODE, comm, nccl_version="2.30.3")
    assert "nvls" not in _candidates(old)
    assert "nvls" in _candidates(new)


def test_default_is_nccl_default_and_nccl_algo_gives_the_tuned_ring():
    # case_03 T1 vs T7: NCCL's default on 2 H100 nodes runs NVLS-tree; NCCL_ALGO=Ring runs the ring at the
    # NIC bound, 8 x 49.15 GB/s = 393.2 GB/s busbw less latency (T7 measured 392.7 at 8 GiB).
    default = formula_collective("all_reduce", 2**33, TWO_NODES)
    ring = formula_collective("all_reduce", 2**33, TWO_NODES, env={"NCCL_ALGO": "Ring"})
    assert default.algorithm == "nvls_tree"
    assert (ring.algorithm, ring.protocol) == ("ring", "Simple")
    assert ring.busbw_bytes_per_s / 1e9 == pytest.approx(392.7, rel=0.01)


def test_nvls_enable_0_and_nccl_proto():
    # case_01 supporting numbers (#309): NCCL_NVLS_ENABLE=0 on one H100 node -> ring, 368.76 GB/s
    off = formula_collective("all_reduce", 2**32, ONE_NODE, env={"NCCL_NVLS_ENABLE": "0"})
    assert off.algorithm == "ring"
    assert off.busbw_bytes_per_s / 1e9 == pytest.approx(368.76, rel=0.10)
    ll = formula_collective("all_reduce", 2**20, ONE_NODE, env={"NCCL_PROTO": "LL"})
    assert ll.protocol == "LL" and {c.protocol for c in ll.candidates} == {"LL"}


def test_nccl_algo_prefix_grammar_and_all_to_all_unaffected():
    # NCCL's parseList: "allreduce:tree" restricts all_reduce only; all_to_all runs p2p whatever NCCL_ALGO.
    tree = formula_collective("all_reduce", 2**30, TWO_NODES, env={"NCCL_ALGO": "allreduce:tree"})
    assert tree.algorithm == "tree"
    gather = formula_collective("all_gather", 2**30, TWO_NODES, env={"NCCL_ALGO": "allreduce:tree"})
    assert gather.algorithm == "ring"
    a2a = formula_collective("all_to_all", 2**30, TWO_NODES, env={"NCCL_ALGO": "Ring"})
    assert a2a.algorithm == "direct"


@pytest.mark.parametrize(
    "env,match",
    [
        ({"NCCL_NET": "Socket"}, "NCCL_NET: the formula engine does not model"),
        ({"NCCL_MAX_NCHANNELS": "0"}, "NCCL_MAX_NCHANNELS: expected an integer in 1..64"),
        ({"NCCL_ALGO": "foo"}, "NCCL_ALGO: unknown name 'foo'"),
        ({"NCCL_NVLS_ENABLE": "7"}, "NCCL_NVLS_ENABLE"),
    ],
)
def test_unmodelled_or_bad_variables_are_refused(env, match):
    with pytest.raises(ConfigError, match=match):
        formula_collective("all_reduce", 2**20, TWO_NODES, env=env)


def test_cli_env():
    runner = CliRunner()
    ok = runner.invoke(
        app, ["collective", "-c", "h100-ib-2node", "-s", "8GiB", "--env", "NCCL_ALGO=Ring", "--json"]
    )
    assert ok.exit_code == 0, ok.output
    assert '"algorithm": "ring"' in ok.output
    for args in (
        ["--env", "NCCL_ALGO"],
        # not modelled (NCCL_SHM_DISABLE is now: test_transport_env; the QPs: test_nccl_env_channels)
        ["--env", "NCCL_NET=IB"],
        ["--env", "NCCL_PROTO=LL", "--engine", "links"],
    ):
        bad = runner.invoke(app, ["collective", "-c", "h100-ib-2node", "-s", "1MiB", *args])
        assert bad.exit_code == 2, args
