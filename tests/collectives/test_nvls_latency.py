"""NVLS latency per NCCL release (baseLat + hwLat, tuning.cc), NVLS-tree's NET latency steps, and an
``NCCL_ALGO`` that leaves a collective no algorithm (NCCL's error, or its ring backup on 2.19-2.23)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.clusters import nvswitch_node

from aifabric.catalog.nccl import nccl_release, nvls_tree_net_steps, ring_backup
from aifabric.cluster.presets import preset
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

KiB = 2**10
H100 = preset("h100-ib-2node", nodes=1)
A100 = nvswitch_node("a100-sxm-80gb", 8)  # case 20 [S1]: ND A100 v4, one VM


@pytest.mark.parametrize(
    ("version", "latency_us", "load_kib"),
    [
        # v2.18.5 tuning.cc: baseLat[NVLS][Simple] = 23.0, hwLat[NVLINK][NVLS][Simple] = 0; its kernel fills
        # channel 0 first (all_reduce.h offset = gridOffset + bid x nHeads x chunkSize): 1 KiB on 1 of 16
        # channels lasts as long as 16 KiB spread over all of them
        ("2.18.5", 23.0, 16),
        # v2.20.5: baseLat 0, hwLat[NVLINK][NVLS][Simple] = 23; work->oneNode spreads S over the channels
        ("2.20.5", 23.0, 1),
        # v2.30.3: baseLat 0, hwLat[NVLINK][NVLS][Simple] = 25
        ("2.30.3", 25.0, 1),
    ],
)
def test_one_node_nvls_latency_is_base_plus_hw_latency(
    version: str, latency_us: float, load_kib: int
) -> None:
    # 8 x H100, 1 KiB: algbw = 18 x 20.6 GB/s (topo.h SM90_NVLINK_BW, catalogue scaleup.yaml) x .85
    # (nvlsEfficiency, Hopper) x 7/8 = 275.8 GB/s; the pipeline fill is 2 x min(L, 16 x 8 x chunk) = 2 L
    # (nvls_fill_bytes) with L the channel load (nvls_channel_load_bytes), so T = a + 3 L / 275.8 GB/s: on
    # 2.20.5 23 us + 11.1 ns, on 2.18.5 23 us + 178 ns = 23.18 us (case 20 [S2] measured 25.6 us at 1 KiB);
    # before the fix 2.18's 23 us sat in baseLat, charged 0 us.
    r = formula_collective("all_reduce", KiB, H100, nccl_version=version, algorithm="nvls")
    algbw = 18 * 20.6e9 * 0.85 * 7 / 8
    assert r.latency_s == pytest.approx(latency_us * 1e-6)
    assert r.time_s == pytest.approx(latency_us * 1e-6 + 3 * load_kib * KiB / algbw, rel=1e-9)


@pytest.mark.parametrize(
    ("version", "nodes", "steps"),
    [
        # v2.18.5 tuning.cc: latency += 2 * (nNodes - 1) * hwLat[NET][NVLS_TREE]
        ("2.18.5", 1, 0),
        ("2.18.5", 2, 2),
        ("2.18.5", 4, 6),
        ("2.18.5", 5, 8),
        # v2.19.1 on: 2 * log2i(nNodes) (floor of log2)
        ("2.19.1", 2, 2),
        ("2.20.5", 4, 4),
        ("2.30.3", 5, 4),
        ("2.30.3", 8, 6),
        ("2.30.3", 1, 0),
    ],
)
def test_nvls_tree_net_steps_per_release(version: str, nodes: int, steps: int) -> None:
    assert nvls_tree_net_steps(nccl_release(version), nodes) == steps


@given(st.integers(min_value=2, max_value=4096))
def test_nvls_tree_net_steps_log2_never_exceeds_linear(nodes: int) -> None:
    # 2 floor(log2 N) <= 2 (N - 1), equal at N = 2; both even
    log2, linear = (
        nvls_tree_net_steps(nccl_release("2.30.3"), nodes),
        nvls_tree_net_steps(nccl_release("2.18.5"), nodes),
    )
    assert log2 <= linear and log2 % 2 == linear % 2 == 0
    assert (log2 == linear) == (nodes == 2)


@pytest.mark.parametrize("version", ["2.18.5", "2.24.3", "2.30.3"])
def test_nccl_algo_nvls_without_nvls_is_refused_where_nccl_fails(version: str) -> None:
    # v2.18.5 enqueue.cc getAlgoInfo and v2.24.3 on: every bandwidth 0 -> "Error : no algorithm/protocol
    # available" (case 20 [S1]: A100 labelled NVLS on 2.18.5)
    with pytest.raises(ConfigError, match="NCCL_ALGO=NVLS: .*no NVLink SHARP.*no algorithm/protocol"):
        formula_collective("all_reduce", KiB, A100, nccl_version=version, env={"NCCL_ALGO": "NVLS"})


@pytest.mark.parametrize("version", ["2.19.3", "2.20.5", "2.23.4"])
def test_nccl_algo_nvls_without_nvls_runs_ring_on_releases_with_the_backup(version: str) -> None:
    # v2.19.1-v2.23.4 tuning.cc: "at least set ring algo available" (bandwidths[c][RING][p] = ringbdw);
    # the tuner then picks ring's fastest protocol: LL at 1 KiB (6.6 + 14 x 0.6 us = 15.0 us), Simple at
    # 1 GiB; NCCL_PROTO still applies (2.22.3 on zero a disabled protocol's ringbdw)
    small = formula_collective("all_reduce", KiB, A100, nccl_version=version, env={"NCCL_ALGO": "NVLS"})
    assert (small.algorithm, small.protocol) == ("ring", "LL")
    assert small.latency_s == pytest.approx(15.0e-6)
    assert "NCCL_ALGO=NVLS leaves all_reduce no algorithm here" in small.explanation
    ring = formula_collective("all_reduce", KiB, A100, nccl_version=version, env={"NCCL_ALGO": "Ring"})
    assert small.time_s == ring.time_s
    env = {"NCCL_ALGO": "NVLS", "NCCL_PROTO": "Simple"}
    big = formula_collective("all_reduce", 2**30, A100, nccl_version=version, env=env)
    assert (big.algorithm, big.protocol) == ("ring", "Simple")


@pytest.mark.parametrize(
    ("version", "all_reduce", "kept"),
    [
        # v2.18.5 tuning.cc: "Never disable ring for non-allreduce operations"; all_reduce: the error
        ("2.18.5", False, True),
        ("2.18.5", True, False),
        # v2.19.1-v2.23.4: "at least set ring algo available", any collective
        ("2.19.1", True, True),
        ("2.22.3", True, True),
        ("2.23.4", False, True),
        # v2.24.3 on: enqueue.cc "no algorithm/protocol available for function ..."
        ("2.24.3", False, False),
        ("2.30.3", True, False),
    ],
)
def test_ring_backup_per_release(version: str, all_reduce: bool, kept: bool) -> None:
    assert ring_backup(nccl_release(version), all_reduce=all_reduce) is kept


def test_nccl_algo_tree_all_gather_runs_ring_on_2_18() -> None:
    # tuning.cc v2.18.5: NCCL_ALGO=Tree leaves all_gather's ring on (NCCL runs all_gather as ring only);
    # the same call on 2.30.3 is refused (NCCL fails: tests/engines/test_env_conflicts.py)
    env, two = {"NCCL_ALGO": "Tree"}, preset("h100-ib-2node")
    r = formula_collective("all_gather", 2**20, two, nccl_version="2.18.5", env=env)
    plain = formula_collective("all_gather", 2**20, two, nccl_version="2.18.5")
    assert r.algorithm == "ring" and r.time_s == plain.time_s
    assert "so NCCL 2.18.5 runs ring instead (tuning.cc: 'Never disable ring')" in r.explanation
    with pytest.raises(ConfigError, match="NCCL_ALGO=Tree: no algorithm it enables runs all_gather"):
        formula_collective("all_gather", 2**20, two, nccl_version="2.30.3", env=env)
