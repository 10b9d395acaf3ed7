"""Blind check of the other half, fourth set: storage, front-end, load balancing and scale-across.

Each test describes the published setup with a preset, a cluster or the command a user runs (``data_loading``
and ``node_path`` under ``aifabric checkpoint``, ``aifabric cluster show``, ``aifabric fabric``, the fibre
delay of ``aifabric scale-across``) and asserts the published figure within 10 % (the sources print two to
four digits; counts and bounds exactly), with its source and the hand derivation. Figures the model misses
are in ``MISSED`` (product figure, published figure, diagnosis); their test re-measures the product's
figure, so a fix shows up as a failure there.

Sources (none in the project's earlier source lists; Asterfusion's site and MLCommons' MLPerf Storage are
named earlier for other pages: a design guide, a 256K design and the v2.0 press release's failure rates):

- [MLPS] MLCommons, MLPerf Storage v1.0 results (github.com/mlcommons/storage_results_v1.0 at 64c2ce4), the
  closed unet3d/H100 runs: ``results/.../run1/summary.json`` (accelerators, hosts, ``train_au_mean_
  percentage``, samples/s, ``train_io_mean_MB_per_second`` in MiB/s), ``systems/*.json`` (client NICs) and the
  DLIO workload ``unet3d_h100.yaml`` (record_length 146,600,628 B, batch_size 7, computation_time 0.323 s,
  metric au 0.90; resnet50_h100: 114,660.07 B, 400, 0.224 s; cosmoflow_h100: 2,828,486 B, 1, 3.5 ms, au 0.70).
  DDN AI400X2T, 18 clients of 1 x 100 Gb/s InfiniBand, 36 H100: AU 93.59 %, 708.85 samples/s, 99,104.2
  MiB/s; resnet50 on 32 clients, 512 H100: 92.52 %, 843,065.24 samples/s; cosmoflow on 16 clients, 64 H100:
  70.26 %, 12,556.64 samples/s. Huawei OceanStor A800, 51 hosts of 2 x 100 GbE, 255 H100: 92.22 %, 4,999.99
  samples/s. IEI AS13000, 10 AMD hosts, 130 H100: 93.85 %, 2,598.53 samples/s; one Intel host of 2 x 400 Gb/s:
  26 H100, 70,201.2 MiB/s; one AMD host, same NICs: 16 H100, 42,906.8 MiB/s. WEKApod, one DGX H100 client of
  1 x 400 Gb/s: 13 H100, 91.22 %, 246.74 samples/s, 34,495.9 MiB/s. MangoBoost NVMe/TCP, one client of
  4 x 100 GbE: 10 H100, 27,014.8 MiB/s.
- [HGX-RA] NVIDIA HGX AI Factory (H100, H200, B200) reference architecture (docs.nvidia.com/enterprise-
  reference-architectures/hgx-ai-factory-h100-h200-b200): "2-8-9-400 ... (2 CPUs, 8 GPUs, 9 NICs at 400 Gb/s
  bandwidth per GPU)"; the CPU converged network "connects the nodes using two 200 GbE ports to two separate
  switches".
- [B300-RA] NVIDIA HGX AI Factory enterprise RA (docs.nvidia.com/enterprise-reference-architectures/
  hgx-ai-factory): "2-8-9-800 ... 800 Gb/s bandwidth per GPU" with HGX B300 and ConnectX-8; "two 400 GbE
  ports to two separate switches".
- [VR-RA] NVIDIA Vera Rubin NVL72 AI Factory RA (docs.nvidia.com/reference-architectures/
  vera-rubin-nvl72-ai-factory, "Network Logical Architecture"): "two 400 Gb/s ports to two separate switches".
- [RTX-RA] NVIDIA Enterprise RAG deployment guide, "Enterprise Reference Architecture Overview"
  (docs.nvidia.com/reference-architectures/enterprise-rag-deployment-guide): RTX PRO AI Factory "2-8-5-200
  ... 8 ports @ 200Gbps on East-West GPU network and 1 port X 400Gbps on the North-South primary network".
- [SPX] NVIDIA, "High-speed networking for giga-scale AI factories" (Spectrum-X multiplane architecture),
  arXiv:2605.21187, abstract: "98% of the theoretical line rate"; "robust, capacity-proportional bisection
  bandwidth and 7% latency increase for 10% fabric link failures".
- [ASTER] Asterfusion, "Maximizing NCCL cluster performance with flowlet-based adaptive routing"
  (cloudswit.ch/?p=21382, 2025-09-25): ECMP five-tuple hash 84.5 % bandwidth utilisation; "ECMP QP Hash mode,
  bandwidth utilization in a 2-node x 8-GPU setup reaches only 88.05%"; INT-based routing 97 %.
- [AWS] AWS whitepaper "AWS Fault Isolation Boundaries", "Availability Zones"
  (docs.aws.amazon.com/whitepapers/latest/aws-fault-isolation-boundaries/availability-zones.html): zones
  "up to 60 miles (~100 km)" apart, "close enough to use synchronous replication with single-digit
  millisecond latency".

Error before -> after this check's fix (the Vera Rubin NVL72 preset's front-end, two 400 Gb/s ports per node
as the RA wires it): front-end per GPU 12.5 GB/s vs 25 GB/s (-50 %) -> 25 GB/s (0 %). Spectrum-X is expressed
with the product's congestion-aware spraying (``reps``): its NICs and switches balance load per packet and
react to congestion; oblivious spraying (``spray``) keeps 0.775 of the bisection after 10 % link failures
(-14 %), congestion-aware spraying 0.850 (-5.6 %).
"""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest
from tests.missed import assert_still_missed
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import build_topology
from aifabric.engines.fabric import link_capacity
from aifabric.engines.failures import parse_failures
from aifabric.engines.maxmin import max_min_rates
from aifabric.engines.routing import route
from aifabric.engines.scale_across import fibre_delay_s
from aifabric.storage.dataload import data_loading
from aifabric.storage.paths import node_path

MIB = 2**20

# DLIO unet3d_h100.yaml [MLPS]: one step of one emulated H100 reads 7 records of 146,600,628 B and computes
# 0.323 s; the benchmark passes when the accelerator utilisation (AU) stays >= 90 %.
RECORD_BYTES = 146_600_628
BATCH = 7
COMPUTE_S = 0.323
AU_MIN = 0.90
PER_GPU_BYTES_PER_S = BATCH * RECORD_BYTES / COMPUTE_S  # 3.177 GB/s at 100 % AU


def _client(nodes: int, nic: str, nics: int, speed: str, storage: dict) -> ClusterSpec:
    """MLPerf Storage client hosts as a cluster: the DGX H100 preset resized to the hosts, its front-end the
    client's storage NICs (the emulated accelerators read no PCIe: the node's GPU links bind nowhere)."""
    fe = {"nic": nic, "nics_per_node": nics, "nic_speed": speed}
    return preset("dgx-h100-superpod", nodes=nodes, front_end=fe, storage=storage)


# DLIO workloads [MLPS] (storage-conf/workload/*_h100.yaml): (record bytes, batch, computation_time s).
WORKLOADS = {
    "unet3d": (RECORD_BYTES, BATCH, COMPUTE_S),
    "resnet50": (114_660.07, 400, 0.224),
    "cosmoflow": (2_828_486, 1, 0.00350),
}

# (workload, accelerators, run 1's AU %, run 1's samples/s) [MLPS]
RUNS = {
    "ddn_ai400x2t_18_clients": ("unet3d", 36, 93.59, 708.85),
    "huawei_a800_51_hosts": ("unet3d", 255, 92.22, 4999.99),
    "iei_as13000_10_amd_hosts": ("unet3d", 130, 93.85, 2598.53),
    "weka_one_dgx_h100": ("unet3d", 13, 91.22, 246.74),
    "ddn_ai400x2t_32_clients_resnet50": ("resnet50", 512, 92.52, 843065.24),
    "ddn_ai400x2t_16_clients_cosmoflow": ("cosmoflow", 64, 70.26, 12556.64),
}


@pytest.mark.parametrize("run", sorted(RUNS))
def test_read_demand_per_h100_is_the_workloads(run):
    # Published: samples/s / AU / accelerators = the rate one H100 draws at full utilisation, e.g. DDN unet3d
    # 708.85 / 0.9359 / 36 = 21.04 samples/s = 3.084 GB/s. Model: ``data_loading``'s need for one GPU's step,
    # 7 x 146.6 MB / 0.323 s = 3.177 GB/s (+3.0 %; Huawei +1.9 %, IEI +1.7 %, WEKA +4.1 %); resnet50
    # 400 x 114.7 kB / 0.224 s = 204.7 MB/s against 843,065 / 0.9252 / 512 = 1,779.8 samples/s (+0.3 %);
    # cosmoflow 2.83 MB / 3.5 ms = 808.1 MB/s against 12,556.6 / 0.7026 / 64 = 279.2 samples/s (+2.3 %).
    workload, gpus, au_pct, samples_per_s = RUNS[run]
    record, batch, compute_s = WORKLOADS[workload]
    measured = samples_per_s / (au_pct / 100) / gpus * record
    spec = _client(1, "connectx-7", 1, "400 Gb/s", {"system": "ddn-ai400x2-turbo", "units": 1})
    need = data_loading(spec, batch * record, compute_s).need_bytes_per_s
    assert need == pytest.approx(measured, rel=0.10)


def test_ddn_clients_one_edr_port_each_is_not_their_bottleneck():
    # Published: 18 clients of 1 x 100 Gb/s read 99,104.2 MiB/s = 103.9 GB/s, 5.77 GB/s each, at AU 93.6 %.
    # Model: each client's port carries 12.0 GB/s (12.5 x ConnectX-5's 0.96 payload), twice its 2 GPUs' need
    # (6.35 GB/s); the bound it names is the file system, not the client.
    spec = _client(18, "connectx-5", 1, "100 Gb/s", {"system": "ddn-ai400x2-turbo", "units": 1})
    path = node_path(spec, direction="read", active_nodes=18, gpus=0)
    assert path.stages["node front-end NICs"] == pytest.approx(12.0e9)
    assert path.stages["node front-end NICs"] > 2 * PER_GPU_BYTES_PER_S > 99_104.2 * MIB / 18
    assert path.bottleneck == "file system aggregate"


def test_huawei_hosts_two_100g_ports_feed_five_h100():
    # Published: 51 hosts of 2 x 100 GbE and 5 H100 each pass at AU 92.2 %. Model: a host's 2 ports carry
    # 24.0 GB/s against its 5 GPUs' 15.9 GB/s: the loader keeps up (share 0.66).
    spec = _client(
        51, "connectx-5", 2, "100 Gb/s", {"system": "ddn-ai400x2-turbo", "aggregate_read": "10 TB/s"}
    )
    load = data_loading(spec, 5 * BATCH * RECORD_BYTES, COMPUTE_S, nodes=1)
    assert load.keeps_up
    assert load.share == pytest.approx(15.886 / 24.0, rel=1e-3)


def _networks(cluster: str) -> dict[str, float]:
    """``aifabric cluster show CLUSTER --json``: per-direction bytes/s per GPU of each network."""
    r = CliRunner().invoke(app, ["cluster", "show", cluster, "--json"])
    assert r.exit_code == 0, r.output
    return {n["network"]: n["per_direction_bytes_per_s"] for n in json.loads(r.stdout)["networks"]}


def _node(accelerator: str, scale_up: str, scale_out: str, front_end: str) -> str:
    """A 32-node cluster file of one reference architecture's node."""
    return (
        f"name: ra-{accelerator}\naccelerator: {accelerator}\ngpus_per_node: 8\nnodes: 32\n"
        f"scale_up: {scale_up}\nscale_out: {scale_out}\nfront_end: {front_end}\n"
        "management: {nic: bmc-1g, ports_per_node: 1, switch: sn2201-mgmt}\n"
    )


# [HGX-RA], [B300-RA], [RTX-RA]: (cluster file, front-end per GPU, scale-out per GPU), bytes/s per direction.
RA_NODES = {
    "hgx_h100_h200_b200_2_8_9_400": (
        _node(
            "h100-sxm",
            "{kind: nvswitch}",
            "{nic: connectx-7, fabric: ethernet, switch: spectrum-4-sn5600-400g}",
            "{nic: bluefield-3, nics_per_node: 2, nic_speed: 200 Gb/s}",
        ),
        2 * 200e9 / 8 / 8,  # two 200 GbE ports shared by 8 GPUs: 6.25 GB/s
        400e9 / 8,  # "400 Gb/s bandwidth per GPU": 50 GB/s
    ),
    "hgx_b300_2_8_9_800": (
        _node(
            "b300",
            "{kind: nvswitch}",
            "{nic: connectx-8, fabric: ethernet, switch: spectrum-4-sn5600-800g}",
            "{nic: bluefield-3, nics_per_node: 2, nic_speed: 400 Gb/s}",
        ),
        2 * 400e9 / 8 / 8,  # two 400 GbE ports: 12.5 GB/s
        800e9 / 8,  # "800 Gb/s bandwidth per GPU": 100 GB/s
    ),
    "rtx_pro_2_8_5_200": (
        _node(
            "rtx-pro-6000-blackwell",
            "{kind: pcie, link: pcie-gen5}",
            "{nic: connectx-7, nic_speed: 200 Gb/s, fabric: ethernet, switch: spectrum-4-sn5600-400g}",
            "{nic: bluefield-3, nics_per_node: 1, nic_speed: 400 Gb/s}",
        ),
        400e9 / 8 / 8,  # "1 port X 400Gbps on the North-South": 6.25 GB/s
        200e9 / 8,  # "8 ports @ 200Gbps on East-West": 25 GB/s
    ),
}


@pytest.mark.parametrize("ra", sorted(RA_NODES))
def test_reference_architecture_front_end_and_scale_out_per_gpu(ra, tmp_path):
    # Published: the RA's ports per node; model: ``cluster show``'s front-end and scale-out rungs per GPU.
    text, front_end, scale_out = RA_NODES[ra]
    path = tmp_path / f"{ra}.yaml"
    path.write_text(text)
    nets = _networks(str(path))
    assert nets["front-end"] == pytest.approx(front_end, rel=1e-9)
    assert nets["scale-out"] == pytest.approx(scale_out, rel=1e-9)


def test_vera_rubin_nvl72_front_end_two_400g_ports_per_node():
    # Published [VR-RA]: two 400 Gb/s ports per node (4 Rubin GPUs): 2 x 50 / 4 = 25 GB/s per GPU. Before,
    # the preset had one BlueField-3 port: 12.5 GB/s (-50 %).
    assert _networks("rubin-nvl72")["front-end"] == pytest.approx(25e9, rel=1e-9)


@cache
def _permutation(routing: str, fail: str | None = None, seed: int = 0) -> dict:
    """``aifabric fabric permutation`` on 64 of the Spectrum-X example's nodes (2 SUs: the traffic crosses
    the spines), 1 GiB per GPU."""
    args = ["fabric", "permutation", "-c", "spectrum-xgs-2-sites", "--nodes", "64", "-s", "1GiB"]
    args += ["--routing", routing, "--seed", str(seed), "--json"]
    if fail:
        args += ["--fail", fail]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_spectrum_x_reaches_98_percent_of_line_rate():
    # Published [SPX]: "98% of the theoretical line rate". Model: Spectrum-X balances load per packet in its
    # NICs and switches, reacting to congestion: of the product's policies, congestion-aware spraying
    # (``reps``: entropy values recycled off overloaded paths). A permutation on the 2-SU Spectrum-X fabric
    # of ConnectX-7 400 Gb/s fills every NIC link (efficiency 1.00) at the 0.983 RoCE payload: 49.0 GB/s of
    # 50 = 98.0 %. (``adaptive``, flowlets placed on the least congested leaf -> spine -> leaf path, fills
    # them too, seeds 0-2: 1.00; placed by the source leaf's uplinks alone they reached 0.50, colliding on
    # the spines' cables down.)
    out = _permutation("reps")
    assert out["efficiency"] == pytest.approx(1.0, rel=1e-3)
    assert out["jobs"][0]["busbw_bytes_per_s"] / 50e9 == pytest.approx(0.98, rel=0.10)


@cache
def _bisection_share(policy: str, seed: int) -> float:
    """Max-min aggregate rate of a bisection shift (GPU g of node n to rail g+1 of node n+32, PXN off so every
    flow crosses the leaf-spine fabric) on 64 of the Spectrum-X example's nodes with 10 % of the fabric's
    cables failed (``--fail fabric:0.1``, seeded), as a share of the intact fabric's."""
    topo = build_topology(preset("spectrum-xgs-2-sites", nodes=64))
    cap = link_capacity(topo)
    g = np.arange(topo.spec.n_gpus)
    dst = ((g // 8 + 32) % 64) * 8 + (g % 8 + 1) % 8
    total = []
    for alive in (None, parse_failures(topo, "fabric:0.1", seed=seed)):
        r = route(topo, g, dst, policy=policy, seed=seed, link_alive=alive, pxn=False)
        total.append(max_min_rates(r.incidence, cap if alive is None else cap * alive).sum())
    return float(total[1] / total[0])


def test_spectrum_x_bisection_is_capacity_proportional_after_10pct_link_failures():
    # Published [SPX]: "capacity-proportional bisection bandwidth" with 10 % of fabric links failed: 0.90 of
    # the intact fabric. Model: congestion-aware spraying (``reps``), seeds 0-2: 0.853, 0.850, 0.846, mean
    # 0.850 (-5.6 %). Oblivious even spraying (``spray``) keeps 0.775 (-14 %): a spine that lost one of its
    # two cables down to a destination leaf still gets two uplinks' share and sends it down one cable.
    share = sum(_bisection_share("reps", seed) for seed in range(3)) / 3
    assert share == pytest.approx(0.90, rel=0.10)
    assert share < 0.90  # never more than the capacity left


def test_availability_zones_100_km_apart_are_within_single_digit_milliseconds():
    # Published [AWS]: zones up to ~100 km apart, synchronous replication at single-digit ms. Model: the
    # scale-across fibre delay, 5 us/km: 0.5 ms one way, a 1.0 ms round trip at 100 km, inside 1-9 ms.
    rtt_s = 2 * fibre_delay_s(100)
    assert rtt_s == pytest.approx(1.0e-3)
    assert rtt_s < 10e-3


def _gpus_fed(nic: str, nics: int, speed: str, system: str = "ddn-ai400x2-turbo") -> int:
    """H100 that one MLPerf Storage client keeps at the 90 % AU bar: its read path over one GPU's need."""
    storage = {"system": system, "aggregate_read": "1 TB/s"}
    path = node_path(_client(1, nic, nics, speed, storage), direction="read", active_nodes=1, gpus=0)
    return int(path.rate_bytes_per_s // (PER_GPU_BYTES_PER_S * AU_MIN))


def _ddn_appliance_bytes_per_s() -> float:
    spec = _client(18, "connectx-5", 1, "100 Gb/s", {"system": "ddn-ai400x2-turbo", "units": 1})
    return node_path(spec, direction="read", active_nodes=1, gpus=0).stages["file system aggregate"]


def _rail_local_ecmp() -> float:
    r = CliRunner().invoke(
        app, ["fabric", "all_reduce", "-c", "spectrum-xgs-2-sites", "--nodes", "2", "-s", "1GiB", "--json"]
    )
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["efficiency"]


MISSED: dict[str, tuple[float, float, str]] = {
    # name: (product figure, published figure, diagnosis)
    "ddn_ai400x2t_appliance_read_gb_s": (
        80.0,
        99_104.2 * MIB / 1e9,
        "[MLPS] one AI400X2T fed 36 H100 on 18 clients at AU 93.6 %, delivering 103.9 GB/s; the "
        "catalogue's appliance read is 80 GB/s (-23 %), a lower bound from DDN's DGX B200 blog (10 x 1 GB/s "
        "per GPU to one DGX B200), so the product says one appliance cannot feed them (share 1.43). "
        "Missing: a published per-appliance read figure; the MLPerf run itself bounds it from below only.",
    ),
    "weka_h100_fed_by_one_400g_client": (
        17,
        13,
        "[MLPS] one DGX H100 client on 1 x 400 Gb/s fed 13 H100 (36.2 GB/s); the product's client read path "
        "is its NIC, 49.15 GB/s, enough for 17 at the 90 % bar (+31 %). Missing: the client host's own read "
        "cost (DLIO's reader threads decode and copy every sample on the CPU), see the IEI pair below.",
    ),
    "iei_intel_h100_fed_by_two_400g": (
        34,
        26,
        "[MLPS] one Intel Xeon 8558 host on 2 x 400 Gb/s fed 26 H100 (73.6 GB/s), the same storage and NICs "
        "on an AMD host 16 (45.0 GB/s); the product sees only the NICs, 98.3 GB/s, 34 H100 for either (+31 % "
        "and +113 %). Missing: the client CPU as a stage of the read path; no per-core figure is published.",
    ),
    "mangoboost_h100_fed_by_four_100g": (
        16,
        10,
        "[MLPS] one client on 4 x 100 GbE reading NVMe/TCP (DPU target offload) fed 10 H100 (28.3 GB/s); the "
        "product's 4 ports at the 0.96 payload carry 48.0 GB/s, 16 H100 (+60 %). Missing: NVMe/TCP's host "
        "cost on the client (TCP receive and copy) and the client CPU, as above.",
    ),
    "asterfusion_ecmp_qp_hash_2x8_gpus": (
        1.0,
        0.8805,
        "[ASTER] 2 nodes x 8 GPUs, ECMP with QP hashing: 88.05 % bandwidth utilisation (five-tuple 84.5 %, "
        "INT routing 97 %). Product: 2 nodes of the rail-optimised Spectrum-X example, ECMP all_reduce: 1.00 "
        "of the contention-free time, since each rail's traffic stays on its leaf and never meets a hash. "
        "Missing: the test's topology (its leaves and how the 16 NICs reach them) is not published; only a "
        "fabric that sends the two nodes' traffic through spines can lose bandwidth to hashing.",
    ),
}

MEASURE = {
    "ddn_ai400x2t_appliance_read_gb_s": lambda: _ddn_appliance_bytes_per_s() / 1e9,
    "weka_h100_fed_by_one_400g_client": lambda: _gpus_fed("connectx-7", 1, "400 Gb/s", "weka"),
    "iei_intel_h100_fed_by_two_400g": lambda: _gpus_fed("connectx-7", 2, "400 Gb/s"),
    "mangoboost_h100_fed_by_four_100g": lambda: _gpus_fed("connectx-5", 4, "100 Gb/s"),
    "asterfusion_ecmp_qp_hash_2x8_gpus": _rail_local_ecmp,
}


@pytest.mark.parametrize("name", sorted(MISSED))
def test_missed_figures_are_still_missed(name):
    product, published, _ = MISSED[name]
    assert_still_missed(MEASURE[name](), product, published)
