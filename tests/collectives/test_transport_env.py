"""NCCL_P2P_DISABLE, NCCL_SHM_DISABLE, NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL and NCCL_COLLNET_ENABLE change
the prediction through the transports and the algorithm registry (collectives/nccl_env.py, collnet.py)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.algorithms import ALGORITHMS, Algorithm, applicable
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.nccl_env import env_tiers
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import tier_model
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

H100_NODE = preset("h100-ib-2node", nodes=1)
H100_2 = preset("h100-ib-2node")
V100 = preset("v100-pcie-4gpu")
# Azure NDv4 (case 17): 8 x A100 40GB SXM, 8 x HDR 200 Gb/s ConnectX-6, AMD EPYC
NDV4 = ClusterSpec.from_dict(
    {
        "accelerator": "a100-sxm-40gb",
        "nodes": 1,
        "cpu_vendor": "amd",
        "scale_out": {"nic": "connectx-6", "switch": "quantum-qm8700"},
    }
)
GIB4 = 2**32


def _busbw_gbps(spec, env=None, size=GIB4, comm=None, **kw):
    return formula_collective("all_reduce", size, spec, comm, env=env, **kw).busbw_bytes_per_s / 1e9


def test_p2p_disable_sends_intra_node_traffic_through_host_memory():
    # SHM: each GPU writes to and reads from host memory over its PCIe Gen5 x16 link:
    # 64 GB/s per direction (PCI-SIG) x 0.6 (transports.yaml shm) = 38.4 GB/s; a 4 GiB ring is
    # bandwidth bound (latency ~0.1 ms of ~196 ms), so busbw ~ 38.4 GB/s. No NVLS, no LL128 (tuning.cc: LL128
    # only when typeIntra <= NVB).
    r = formula_collective("all_reduce", GIB4, H100_NODE, env={"NCCL_P2P_DISABLE": "1"})
    assert r.algorithm == "ring" and r.protocol == "Simple"
    assert r.busbw_bytes_per_s / 1e9 == pytest.approx(38.4, rel=0.01)
    assert {c.algorithm for c in r.candidates} == {"ring"}
    assert "LL128" not in {c.protocol for c in r.candidates}
    assert _busbw_gbps(H100_NODE) > 10 * 38.4  # NVLS over NVLink, ~482


def test_p2p_and_shm_disabled_loop_back_through_the_nics():
    # Azure's NDv4 health check (case 17): P2P and SHM disabled, one VM, all_reduce through the 8 HDR NICs
    # must give > 20 GB/s. Model: each GPU's bytes leave and re-enter through its NIC, B_i = B_o =
    # 200 Gb/s / 8 x 0.96 (ConnectX-6 payload efficiency) = 24.0 GB/s; 4 GiB ring ~ 24.0 busbw.
    env = {"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"}
    busbw = _busbw_gbps(NDV4, env)
    assert busbw == pytest.approx(24.0, rel=0.01)
    assert busbw > 20.0
    assert _busbw_gbps(NDV4) == pytest.approx(240, rel=0.01)  # NVLink: 12 x 20 GB/s (Azure: > 230)
    tm = env_tiers(env, NDV4, tier_model(NDV4)).tiers
    assert tm.intra_kind == "net" and not tm.nvls


def test_shm_disable_alone_keeps_p2p():
    # transport.cc tries P2P first; NCCL_SHM_DISABLE only matters where P2P is not used.
    assert _busbw_gbps(H100_NODE, {"NCCL_SHM_DISABLE": "1"}) == pytest.approx(_busbw_gbps(H100_NODE))
    sys = {"NCCL_P2P_LEVEL": "SYS"}  # P2P through the CPU (V100's default is SHM: see below)
    assert _busbw_gbps(V100, {**sys, "NCCL_SHM_DISABLE": "1"}) == pytest.approx(_busbw_gbps(V100, sys))


def test_p2p_level_below_the_gpu_path_selects_shm():
    # 4 x V100 PCIe (case 13), GPUs through the CPU (PHB) of an Intel host: NCCL's default P2P level is PXB
    # (paths.cc ncclTopoCheckP2p, v2.9.6-1 on; SYS only on an AMD host) -> SHM, Gen3 16 GB/s x 0.6 = 9.6
    # GB/s, as NCCL_P2P_LEVEL=PXB; NCCL_P2P_LEVEL=SYS allows P2P through the CPU (12 GB/s / 1.2 = 10.0).
    assert _busbw_gbps(V100, size=2**30) == pytest.approx(9.6, rel=0.01)
    assert _busbw_gbps(V100, {"NCCL_P2P_LEVEL": "PXB"}, size=2**30) == pytest.approx(9.6, rel=0.01)
    assert _busbw_gbps(V100, {"NCCL_P2P_LEVEL": "SYS"}, size=2**30) == pytest.approx(10.0, rel=0.01)


def test_gdr_off_stages_network_bytes_in_host_memory():
    # 2 x 8 H100, NCCL_ALGO=Ring at 4 GiB: GDR on, busbw ~ 8 x 49.15 = 393.2 less latency (389.7); GDR off
    # (GPU-NIC path beyond NCCL_NET_GDR_LEVEL): 49.15 x 0.667 (NVIDIA/nccl #412: 16 of 24 GB/s) = 32.8 GB/s
    # per NIC -> 8 x 32.8 = 262.3 less latency.
    ring = {"NCCL_ALGO": "Ring"}
    on = _busbw_gbps(H100_2, ring)
    off = _busbw_gbps(H100_2, {**ring, "NCCL_NET_GDR_LEVEL": "LOC"})
    assert on == pytest.approx(389.7, rel=0.005)
    assert off == pytest.approx(262.3, rel=0.01)
    # the same from the cluster: a NIC behind the CPU (PHB) is beyond the default level PXB (paths.cc) ...
    phb = H100_2.with_changes(**{"scale_out.nic_path": "PHB"})
    assert _busbw_gbps(phb, ring) == pytest.approx(off)
    # ... and NCCL_NET_GDR_LEVEL=PHB turns GDR back on
    assert _busbw_gbps(phb, {**ring, "NCCL_NET_GDR_LEVEL": "PHB"}) == pytest.approx(on)


def test_gdr_off_latency_and_no_ll128_across_nodes():
    # 8 B all_reduce, Tree/LL on 2 nodes: lat = base + 2 ((g-1) a_i + log2(2) a_o); GDR off adds 2.0 us to
    # a_o (a host copy at each end, 2 x hwLat PCI 1.0 us), so +4.0 us; the 8 bytes' share of the LL channel's
    # cap across nodes stages in host memory too (x 1 / 0.667, NVIDIA/nccl #412: 16 of 24 GB/s).
    # tuning.cc: no LL128 when typeInter > PXB.
    on = formula_collective("all_reduce", 8, H100_2)
    off = formula_collective("all_reduce", 8, H100_2, env={"NCCL_NET_GDR_LEVEL": "LOC"})
    assert on.algorithm == off.algorithm == "tree" and on.protocol == off.protocol == "LL"
    assert (off.latency_s - on.latency_s) * 1e6 == pytest.approx(4.0, abs=1e-6)
    assert off.time_s - off.latency_s == pytest.approx((on.time_s - on.latency_s) / 0.667, rel=1e-9)
    assert "LL128" in {c.protocol for c in on.candidates}
    assert "LL128" not in {c.protocol for c in off.candidates}


def test_gdr_only_plugin_beyond_the_gdr_level_is_refused():
    tcpx = H100_2.with_changes(
        **{"scale_out.fabric": "ethernet", "scale_out.switch": "spectrum-4-sn5600-400g"}
    )
    tcpx = tcpx.with_changes(**{"scale_out.transport": "gcp-tcpx", "scale_out.nic_path": "SYS"})
    with pytest.raises(ConfigError, match="nic_path: .*needs GPUDirect RDMA .* SYS is beyond"):
        formula_collective("all_reduce", 2**20, tcpx)


def test_transport_settings_that_cannot_apply_are_refused():
    with pytest.raises(ConfigError, match="NCCL_SHM_DISABLE: .*has none"):
        formula_collective("all_reduce", 2**20, V100, env={"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"})
    with pytest.raises(ConfigError, match="NCCL_P2P_DISABLE: a TPU torus"):
        formula_collective("all_reduce", 2**20, preset("tpu-v5p-pod"), env={"NCCL_P2P_DISABLE": "1"})
    with pytest.raises(ConfigError, match="NCCL_NET_GDR_LEVEL: unknown path type"):
        formula_collective("all_reduce", 2**20, H100_2, env={"NCCL_NET_GDR_LEVEL": "FAR"})


@pytest.mark.parametrize(
    ("nodes", "env", "busbw_gbps"),
    [
        (1, ["NCCL_P2P_DISABLE=1"], 38.4),  # SHM: Gen5 64 GB/s x 0.6
        (1, ["NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1"], 49.1),  # NIC loopback: 400G x 0.983 = 49.15
        (2, ["NCCL_ALGO=Ring", "NCCL_NET_GDR_LEVEL=LOC"], 262.3),  # 8 x 49.15 x 0.667 (GDR off)
        (16, ["NCCL_COLLNET_ENABLE=1"], 275.8 * 254 / 128),  # NVLS + SHARP: algbw 275.8, busbw x 2(n-1)/n
    ],
)
def test_cli_env_transport(nodes, env, busbw_gbps):
    args = ["collective", "-c", "h100-ib-2node", "-s", "8GiB", "--nodes", str(nodes), "--json"]
    for item in env:
        args += ["--env", item]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.stdout)
    assert row["busbw_bytes_per_s"] / 1e9 == pytest.approx(busbw_gbps, rel=0.01)


# --- CollNet / SHARP -------------------------------------------------------------------------------------

BIG = preset("h100-ib-2node", nodes=16)
ONE_PER_NODE = Communicator.from_gpus(BIG, list(range(0, 128, 8)))
COLLNET = {"NCCL_COLLNET_ENABLE": "1"}


def test_collnet_is_off_by_default_and_needs_sharp_switches():
    # NCCL_COLLNET_ENABLE defaults to 0 (NCCL docs; init.cc): no CollNet candidate without it
    tm = tier_model(BIG)
    assert not {a.algorithm for a in applicable(Collective.ALL_REDUCE, ONE_PER_NODE, tm)} & {
        Algorithm.COLLNET_DIRECT,
        Algorithm.COLLNET_CHAIN,
    }
    assert ALGORITHMS[Algorithm.COLLNET_DIRECT].plan is None  # formula engine only (collnet.py docstring)
    on = env_tiers(COLLNET, BIG, tm).tiers
    assert {Algorithm.COLLNET_DIRECT, Algorithm.COLLNET_CHAIN} <= {
        a.algorithm for a in applicable(Collective.ALL_REDUCE, Communicator.contiguous(BIG), on)
    }
    # one node: NCCL_COLLNET_NODE_THRESHOLD 2 (init.cc)
    assert Algorithm.COLLNET_CHAIN not in {
        a.algorithm for a in applicable(Collective.ALL_REDUCE, Communicator.from_gpus(BIG, range(8)), on)
    }
    ethernet = BIG.with_changes(
        **{"scale_out.fabric": "ethernet", "scale_out.switch": "spectrum-4-sn5600-400g"}
    )
    with pytest.raises(ConfigError, match="NCCL_COLLNET_ENABLE: .*no in-network reduction"):
        formula_collective("all_reduce", 2**30, ethernet, env=COLLNET)


def test_collnet_halves_the_network_bytes():
    # 16 nodes x 1 GPU, one 400G NIC each (49.15 GB/s), 8 GiB: a ring moves 2 x 15/16 S through each NIC,
    # algbw = 49.15 x 16/30 = 26.2 GB/s; SHARP reduces in the switches, each node sends S once and receives
    # S once: CollNet Chain algbw = 49.15 GB/s (Direct: x 0.85 on Hopper, tuning.cc).
    ring = formula_collective("all_reduce", 2**33, BIG, ONE_PER_NODE)
    sharp = formula_collective("all_reduce", 2**33, BIG, ONE_PER_NODE, env=COLLNET)
    assert ring.algorithm == "ring" and ring.algbw_bytes_per_s / 1e9 == pytest.approx(26.2, rel=0.01)
    assert sharp.algorithm == "collnet_chain"
    assert sharp.algbw_bytes_per_s / 1e9 == pytest.approx(49.15, rel=0.01)
    assert sharp.network_time_s["scale-out"] == pytest.approx(
        ring.network_time_s["scale-out"] * 16 / 30, rel=0.01
    )
    direct = formula_collective(
        "all_reduce", 2**33, BIG, ONE_PER_NODE, env=COLLNET, algorithm="collnet_direct"
    )
    assert direct.algbw_bytes_per_s / 1e9 == pytest.approx(0.85 * 49.15, rel=0.01)


def test_collnet_latency_is_nccls():
    # tuning.cc, newest release (nccl_releases.yaml): CollNet Chain Simple, ppn = 1: base 0 + 2 x 0 x a_i +
    # interLat, interLat = hwLat[NET][Tree][Simple] (ppn = 1) = 14 us.
    r = formula_collective("all_reduce", 8, BIG, ONE_PER_NODE, env=COLLNET, algorithm="collnet_chain")
    assert r.latency_s * 1e6 == pytest.approx(14.0, abs=0.01)


def test_nccl_algo_can_exclude_collnet_and_the_links_engine_refuses_it():
    r = formula_collective(
        "all_reduce", 2**33, BIG, ONE_PER_NODE, env={**COLLNET, "NCCL_ALGO": "^collnetdirect,collnetchain"}
    )
    assert r.algorithm == "ring"
    runner = CliRunner()
    bad = runner.invoke(
        app,
        ["collective", "-c", "h100-ib-2node", "-s", "1GiB", "--engine", "links", "--algo", "collnet_direct"],
    )
    assert bad.exit_code == 2


def test_nvls_across_nodes_runs_only_with_collnet():
    # tuning.cc disables flat NVLS across nodes unless CollNet is on. 16 x 8 H100, 8 GiB: with SHARP each
    # node's 8 NICs carry S each way (8 x 49.15 = 393.2 GB/s algbw), so NVLS inside the node bounds it:
    # algbw = 370.8 x 0.85 (nvlsEfficiency) x 7/8 = 275.8 GB/s; without SHARP NVLS-tree's NICs carry ~2 S
    # (8 x 49.15 / 2 = 196.6 GB/s) and NCCL's per-channel NVLS-tree cap (tuning.cc, 2.28.3+) binds below
    # that: 8 heads x 45.5 GB/s x 128 / (2 x 127) = 183.4 GB/s, under the ring, which NCCL then picks.
    spec = preset("h100-ib-2node", nodes=16)
    default = formula_collective("all_reduce", 2**33, spec)
    tree = formula_collective("all_reduce", 2**33, spec, algorithm="nvls_tree")
    sharp = formula_collective("all_reduce", 2**33, spec, env=COLLNET)
    assert "nvls" not in {c.algorithm for c in default.candidates}
    assert default.algorithm == "ring"
    assert tree.algbw_bytes_per_s / 1e9 == pytest.approx(183.4, rel=0.01)
    assert sharp.algorithm == "nvls"
    assert sharp.algbw_bytes_per_s / 1e9 == pytest.approx(275.8, rel=0.01)


@settings(derandomize=True, max_examples=40, deadline=None)
@given(
    nodes=st.integers(1, 8),
    op=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "broadcast"]),
    log2_size=st.integers(3, 33),
    cluster=st.sampled_from(["h100-ib-2node", "megatron-a100", "dgx-h100-superpod"]),
)
def test_a_slower_transport_is_never_faster(nodes, op, log2_size, cluster):
    # Physical invariant: P2P disabled (SHM through host memory) and GDR off (a host copy at each end) each
    # take a path with less bandwidth, more latency and no more protocols, so no collective gets faster.
    spec = preset(cluster, nodes=nodes)
    size = 2.0**log2_size

    def t(env):
        return formula_collective(op, size, spec, env=env).time_s

    base = t(None)
    assert t({"NCCL_P2P_DISABLE": "1"}) >= base * (1 - 1e-12)
    assert t({"NCCL_NET_GDR_LEVEL": "LOC"}) >= base * (1 - 1e-12)
