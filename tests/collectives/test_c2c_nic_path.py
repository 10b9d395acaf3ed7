"""A NIC behind a Grace CPU (``scale_out.nic_path: P2C``: GH200, GB200) as each NCCL release classes it.

NCCL's source at each tag (NVIDIA/nccl): to v2.26 a GPU-NIC path through the CPU is PATH_PHB (paths.cc
ncclTopoSetPaths: "Consider a path going through the CPU as PATH_PHB"; topo.cc joins GPU and CPU by the
C2C link, typed NVL to v2.25, C2C from v2.26.2), so GPUDirect RDMA waits for NCCL_NET_GDR_LEVEL >= PHB
(default PXB) and tuning.cc drops LL128 across nodes (``typeInter <= PATH_PXB || (minCompCap >= 90 &&
typeInter <= PATH_PXN)``). From v2.27.3 the path is PATH_P2C ("update the GPU -> NIC path in the case of
C2C + PHB"), ncclTopoCheckGdr takes it as C2C (NCCL_NET_GDR_C2C=1 by default: GDR on) and LL128 runs up to
it on Hopper and later (NCCL_LL128_C2C=1).
"""

from __future__ import annotations

import pytest

from aifabric.catalog.nccl import nccl_release
from aifabric.catalog.transport import PathType, net_ll128_allowed, nic_path_class
from aifabric.cluster.presets import preset
from aifabric.collectives.nccl_env import parse_env, stages_in_host
from aifabric.collectives.tiers import tier_model
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

MiB = 2**20
GH200_P2C = preset("gh200-quad", nodes=2)  # the preset's path: each NIC behind its Grace CPU
GH200_PIX = GH200_P2C.with_changes(**{"scale_out.nic_path": "PIX"})  # a NIC on the GPU's own PCIe switch
TREE_PHB = {"NCCL_ALGO": "Tree", "NCCL_NET_GDR_LEVEL": "PHB"}


@pytest.mark.parametrize(
    ("version", "path"),
    [("2.18.1", "PHB"), ("2.20.5", "PHB"), ("2.24.3", "PHB"), ("2.26.6", "PHB"), ("2.27.3", "P2C")]
    + [("2.28.3", "P2C"), ("2.30.3", "P2C")],
)
def test_grace_nic_path_is_phb_to_2_26_and_p2c_from_2_27(version: str, path: str) -> None:
    assert nic_path_class("P2C", nccl_release(version)).name == path
    # every other path keeps its own name in every release
    assert nic_path_class("PXB", nccl_release(version)) is PathType.PXB


def test_ll128_across_nodes_follows_the_path_and_the_compute_capability() -> None:
    # tuning.cc: within PXB on any GPU; up to PXN (P2C sorted below it) on compute capability >= 9.0
    assert net_ll128_allowed(PathType.PXB, 80)
    assert not net_ll128_allowed(PathType.PHB, 90)
    assert net_ll128_allowed(PathType.P2C, 90)
    assert not net_ll128_allowed(PathType.P2C, 80)
    assert not net_ll128_allowed(PathType.SYS, 100)


def test_gh200_preset_prices_the_nic_behind_grace() -> None:
    # GH200 datasheet: the NICs hang off each Grace CPU's PCIe, reached over NVLink-C2C
    assert GH200_P2C.scale_out.nic_path == "P2C"


def test_gpudirect_through_grace_needs_the_gdr_level_before_2_27() -> None:
    default, phb = parse_env({}), parse_env({"NCCL_NET_GDR_LEVEL": "PHB"})
    assert stages_in_host(default, GH200_P2C, nccl_release("2.20.5"))
    assert not stages_in_host(phb, GH200_P2C, nccl_release("2.20.5"))
    assert not stages_in_host(default, GH200_P2C, nccl_release("2.27.3"))


def test_tier_model_reads_the_release_class() -> None:
    old, new = tier_model(GH200_P2C, nccl_version="2.20.5"), tier_model(GH200_P2C, nccl_version="2.27.3")
    assert not old.net_ll128 and new.net_ll128
    assert not old.nic_near and not new.nic_near  # PHB and P2C are both beyond PXB (near_nic)


def test_nccl_2_20_runs_no_ll128_across_gh200_nodes() -> None:
    # 2 x 4 GH200, tree forced, GDR through the CPU (NCCL_NET_GDR_LEVEL=PHB): 8 MiB runs tree/LL128 on a
    # NIC within PXB and not on the Grace path in 2.20.5; 2.27.3 runs LL128 on either
    near = formula_collective("all_reduce", 8 * MiB, GH200_PIX, nccl_version="2.20.5", env=TREE_PHB)
    grace = formula_collective("all_reduce", 8 * MiB, GH200_P2C, nccl_version="2.20.5", env=TREE_PHB)
    assert near.protocol == "LL128"
    assert grace.protocol != "LL128"
    new = formula_collective("all_reduce", 8 * MiB, GH200_P2C, nccl_version="2.27.3", env=TREE_PHB)
    assert new.protocol == "LL128"


@pytest.mark.parametrize("size", [8 * MiB, 256 * MiB])
def test_p2c_on_the_newest_release_prices_as_a_near_nic_on_gh200(size: int) -> None:
    # invariant: from 2.27.3 the Grace path keeps GPUDirect RDMA and LL128, and GH200 has no NVLS whose
    # chunk reads near_nic, so every figure is the PIX path's
    pix = formula_collective("all_reduce", size, GH200_PIX)
    p2c = formula_collective("all_reduce", size, GH200_P2C)
    assert p2c.time_s == pytest.approx(pix.time_s, rel=1e-12)


def test_a_nic_behind_the_host_bridge_drops_ll128_even_with_gpudirect() -> None:
    # 2 x 8 H100 with the NICs at PHB and NCCL_NET_GDR_LEVEL=PHB: GDR on, but typeInter PHB > PXN, so
    # NCCL's tuner leaves LL128 off (tuning.cc); at PXB it stays on
    h100 = preset("h100-ib-2node")
    env = {"NCCL_ALGO": "Ring", "NCCL_NET_GDR_LEVEL": "PHB"}
    phb = formula_collective(
        "all_reduce", 4 * MiB, h100.with_changes(**{"scale_out.nic_path": "PHB"}), env=env
    )
    pxb = formula_collective(
        "all_reduce", 4 * MiB, h100.with_changes(**{"scale_out.nic_path": "PXB"}), env=env
    )
    assert phb.protocol != "LL128"
    assert pxb.protocol == "LL128"


def test_net_gdr_c2c_turns_gpudirect_on_in_2_26_and_off_from_2_27() -> None:
    # paths.cc ncclTopoCheckGdr: v2.26.2 NCCL_NET_GDR_C2C (default 0) takes the PHB path of a Grace NIC as
    # C2C; v2.27.3 on (default 1) its P2C path, so =0 leaves P2C beyond the default level PXB
    gb200 = preset("gb200-nvl72", gpus=144)
    on, off = parse_env({"NCCL_NET_GDR_C2C": "1"}), parse_env({"NCCL_NET_GDR_C2C": "0"})
    assert stages_in_host(parse_env({}), gb200, nccl_release("2.26.2"))
    assert not stages_in_host(on, gb200, nccl_release("2.26.2"))
    assert not stages_in_host(parse_env({}), gb200, nccl_release("2.27.3"))
    assert stages_in_host(off, gb200, nccl_release("2.27.3"))
    # a NIC within PXB never reads it
    pix = gb200.with_changes(**{"scale_out.nic_path": "PIX"})
    assert not stages_in_host(off, pix, nccl_release("2.27.3"))


def test_net_gdr_c2c_takes_only_0_or_1() -> None:
    with pytest.raises(ConfigError, match="NCCL_NET_GDR_C2C: expected 0 or 1, got 'yes'"):
        parse_env({"NCCL_NET_GDR_C2C": "yes"})
