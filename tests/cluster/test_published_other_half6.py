"""Blind check of the other half, sixth set: checkpoint size, time and cost, failures, local SGD, fabric size.

Each test describes the published setup with the command a user runs (``aifabric checkpoint``, ``aifabric
cluster show``, ``aifabric scale-across``) or its library call (``checkpoint_size``, ``node_path``, the series
MTBF under ``checkpoint --gpu-mtbf``) and asserts the published figure within 10 % (counts exactly; a count of
ten events within its Poisson interval), with its source and the hand derivation. Figures the model misses are
in ``MISSED`` (product figure, published figure, diagnosis); their test re-measures the product's figure, so a
fix shows up as a failure there.

Sources (none in the project's earlier source lists):

- [NVCOMP] NVIDIA developer blog, "Cut checkpoint costs with about 30 lines of Python and NVIDIA nvCOMP"
  (developer.nvidia.com/blog/cut-checkpoint-costs-with-about-30-lines-of-python-and-nvidia-nvcomp, 2026),
  Table 1: a 70B checkpoint is 130 GB of BF16 weights + 521 GB of FP32 momentum and variance + 130 GB of BF16
  gradients = 782 GB, "binary units (GiB)"; as summarised by blockchain.news (9 April 2026): "writing a 782 GB
  checkpoint at 5 GB/s takes 156 seconds. Do that 1,440 times monthly across an 8-GPU cluster, and idle time
  alone costs $2,200. Scale to 128 GPUs training a 405B parameter model, and monthly idle costs exceed
  $200,000", at "$4.40 per GPU hour for on-demand B200 cloud pricing".
- [PINGDO] pingdo.net, "AI storage & throughput modeler" (pingdo.net/tools/ai-storage-performance):
  "Checkpoint size assumes FP16 weights plus Adam optimizer states (32-bit master weights, momentum, and
  variance). This is ~14.4 GB per billion parameters."
- [PINGDO-AR] pingdo.net, "The death of static hashing: a forensic study on AI fabric load balancing"
  (pingdo.net/ai-infrastructure/adaptive-routing-vs-ecmp): a GPU keeps "only 4-8 active RoCE v2 flows"; "the
  probability of two 'Elephants' hashing to the same egress port in a 64-port switch -- a variation of the
  Birthday Paradox -- the likelihood of a 'Hot Path' exceeds 30%".
- [SKT] Technical report on a 63-node NVIDIA B200 production cluster (504 GPUs; SKT, Upstage, Lablup, NVIDIA
  Korea, VAST Data), abstract as listed at catalyzex.com and pulseaugur.com/cluster/53804: "55 days of
  Prometheus time-series data", "10 XID-identified GPU failures"; 523 checkpoint events "along the GPU VRAM to
  NFS path" reach "1.4-10.4% utilization of 200 Gbps RoCE", attributed "to saturation of the 128-slot NFS RPC
  layer"; its arXiv v4 abstract (arXiv:2605.09370, Lablup technical report): "Restart loading reaches an
  average NFS read throughput of 21.5% of the storage's maximum read bandwidth (700 GB/s), while
  checkpoint-save bursts reach an average write throughput of 16.0% of the storage's maximum write bandwidth
  (250 GB/s); NFS/RPC request queueing and transport-layer backlog rise together along this path".
- [OPT] Notes of S. Zhang's talk on OPT-175B (zrss.github.io/archives/9b7ac1f7.html): "56days, 53 - 54
  restarts, OPT-175B survived 143K steps", with causes "Lost GPU, CUDA errors, Job hanging, NCCL error, Job
  Slowdown ... blob storage issues" and hyper-parameter changes; 992 A100 80GB (the OPT paper's count).
- [AIWIKI] aiwiki.ai, "DiLoCo": "DiLoCo with eight workers and 500 inner steps between communications matched
  the validation perplexity of fully synchronous data parallel training on the C4 dataset while exchanging
  roughly 500 times less data".
- [LVL] levelupit.xyz, "Designing the network fabric for a 4,000-GPU B200 cluster": 500 nodes of 8 B200, one
  ConnectX-8 400 Gb/s HCA per GPU, two 100GbE front-end NICs and a 1GbE BMC per server: "4,000 backend IB
  ports", "1,000 frontend Ethernet ports", "500 OOB management ports"; "the 2-tier fat-tree that worked for
  smaller clusters hits its ceiling, and a 3-tier fabric becomes the only path to full bisection bandwidth".
- [APE] apetops-us.com, "AI-256: explanation of 512 H100 clustering solution": "256 servers represents the
  limit of a two-tier Spine-Leaf architecture; exceeding 256 servers requires a three-tier architecture";
  512 servers of 8 x 400 Gb/s NDR in 4 SuperPods of 32 leaf + 32 spine + 16 core switches, "80 x 4 = 320 IB
  switches".
- [KED] Kedios, "B300 full network & topology report" (neocloud.kedios.io, 2026): 32 ASUS B300 servers
  (256 GPUs, 8 ConnectX-8 800 Gb/s each), "IB Switches 12 Q3400-RA (8 leaf + 4 spine)", "1:1 non-blocking
  Q3400-RA InfiniBand fat-tree delivering 204.8 Tb/s of server-side bisection bandwidth"; one server per
  compute rack, "Sustained wall draw: ~14.5 kW".

Fifteen rows agree as found (within 10 %, the largest +7.5 %, [NVCOMP]'s mixed GB/GiB arithmetic; counts
exactly; bounds held: 8 hashed elephants collide on 35.3 % of 300 seeds against "more than 30 %").

Fix, the NFS mount as a stage of the storage path (``storage.nconnect`` / ``nfs_transport``: connections x
one connection's rate, catalogue vast: TCP 2 GB/s, "the 2 GB/s limit of a single mount"; RDMA 50 Gb/s,
VAST's "2 connections for every 100Gbps"). [SKT] one server's checkpoint: the port, 24.58 GB/s (9.5x the
published 0.35-2.6 GB/s) -> one default TCP connection, 2.0 GB/s, inside the range. 63 servers: saves
250 -> 126 GB/s against 40 (+525 % -> +215 %), loads 700 -> 126 GB/s against 150.5 (+365 % -> -16 %); both
stay in ``MISSED`` (the RPC queueing of 60 nodes at once, and the mount the loads ran on, are unpublished),
as does [OPT]'s job MTBF (50.4 h against 25.1 h: restarts with no hardware failure behind them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import numpy as np
import pytest
from tests.clusters import leaf_of_radix
from tests.missed import assert_still_missed
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.topology import build_topology
from aifabric.engines.routing import route
from aifabric.storage import checkpoint_size
from aifabric.storage.interval import series_mtbf_s
from aifabric.storage.paths import node_path

GIB = 2**30
HOUR = 3600.0
B200_USD_PER_GPU_HOUR = 4.40  # [NVCOMP], on-demand B200 cloud pricing
CHECKPOINTS_PER_MONTH = 1440  # [NVCOMP]: every 30 minutes, 48 a day, 30 days


def _cli(args: list[str]) -> dict:
    """A command's ``--json`` output."""
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _cluster_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return str(path)


# [NVCOMP]: DGX B200 nodes (192 GB a GPU: 70B at 12 B/param, 840 GB, fits 8 GPUs) writing to storage that
# takes 5 GB/s in all (``checkpoint --storage-write '5 GB/s'`` on a cluster file of that storage).
NVCOMP = """\
name: nvcomp-dgx-b200
accelerator: b200
gpus_per_node: 8
nodes: 16
scale_up: {kind: nvswitch}
scale_out: {nic: connectx-7, nic_speed: 400 Gb/s, fabric: infiniband, switch: quantum-2-qm9700}
front_end: {nic: bluefield-3, nics_per_node: 2}
management: {nic: bmc-1g}
storage: {system: ddn-ai400x2-turbo, aggregate_write: 5 GB/s, aggregate_read: 5 GB/s}
"""


def _nvcomp_write(tmp_path: Path, params: str, gpus: int, tp: int) -> dict:
    """``aifabric checkpoint`` of [NVCOMP]'s 12 B/param state: 2 B of weights, 8 B of moments, 2 B of
    gradients (``--optimizer-bytes 10`` carries moments and gradients)."""
    args = ["checkpoint", _cluster_file(tmp_path, NVCOMP), "--params", params, "--gpus", str(gpus)]
    return _cli([*args, "--tp", str(tp), "--weight-bytes", "2", "--optimizer-bytes", "10"])


def _idle_usd_per_month(write_s: float, gpus: int) -> float:
    return write_s * CHECKPOINTS_PER_MONTH * gpus * B200_USD_PER_GPU_HOUR / HOUR


def test_nvcomp_70b_checkpoint_is_782_gib(tmp_path):
    # Published [NVCOMP]: 782 GB, in GiB, for 70B parameters at 2 + 8 + 2 B.
    # Model: 70e9 x 12 = 840.0e9 B = 782.3 GiB (+0.04 %).
    out = _nvcomp_write(tmp_path, "70e9", 8, 1)
    assert out["checkpoint_bytes"] / GIB == pytest.approx(782, rel=0.10)
    assert out["checkpoint_bytes"] == pytest.approx(70e9 * 12)


def test_nvcomp_70b_write_at_5_gb_s(tmp_path):
    # Published [NVCOMP]: "writing a 782 GB checkpoint at 5 GB/s takes 156 seconds" (782 read as 1e9 B).
    # Model: 840.0e9 B at the file system's 5 GB/s, the binding stage: 168.0 s (+7.4 %; the blog divides GiB
    # by GB/s).
    write = _nvcomp_write(tmp_path, "70e9", 8, 1)["write"]
    assert write["bottleneck"] == "file system aggregate"
    assert write["seconds"] == pytest.approx(156, rel=0.10)


def test_nvcomp_eight_gpu_idle_cost_per_month(tmp_path):
    # Published [NVCOMP]: 1,440 synchronous writes a month on 8 GPUs, "idle time alone costs $2,200".
    # Model: 168.0 s x 1,440 x 8 GPUs x $4.40 / 3,600 s = $2,365 (+7.5 %).
    write_s = _nvcomp_write(tmp_path, "70e9", 8, 1)["write"]["seconds"]
    assert _idle_usd_per_month(write_s, 8) == pytest.approx(2200, rel=0.10)


def test_nvcomp_405b_on_128_gpus_idle_cost_exceeds_200k(tmp_path):
    # Published [NVCOMP]: 405B on 128 GPUs, "monthly idle costs exceed $200,000".
    # Model: 405e9 x 12 = 4.86 TB at 5 GB/s = 972 s; x 1,440 x 128 x $4.40 / 3,600 s = $218,972 (a bound).
    out = _nvcomp_write(tmp_path, "405e9", 128, 8)
    assert out["write"]["seconds"] == pytest.approx(972.0)
    assert _idle_usd_per_month(out["write"]["seconds"], 128) > 200_000


def test_pingdo_checkpoint_bytes_per_billion_parameters():
    # Published [PINGDO]: "~14.4 GB per billion parameters" (FP16 weights + fp32 master, momentum, variance).
    # Model: ``checkpoint_size`` defaults, 2 + 12 B a parameter: 14.0 GB (-2.8 %).
    assert checkpoint_size(1e9).total_bytes / 1e9 == pytest.approx(14.4, rel=0.10)


def test_skt_b200_gpu_failures_in_55_days_within_poisson_interval():
    # Published [SKT]: 10 XID-identified GPU failures on 504 B200 in 55 days.
    # Model: ``checkpoint --gpu-mtbf '50000 h'`` on 504 GPUs in series: 50,000 / 504 = 99.2 h, so 1,320 h
    # expect 13.3 failures. Ten counted events carry their own spread: the exact 95 % Poisson interval of a
    # count of 10 is [chi2(0.025; 20) / 2, chi2(0.975; 22) / 2] = [4.80, 18.39] (scipy.stats.chi2.ppf), and
    # 13.3 lies in it (+33 % on the count, within what ten events can tell).
    expected = 55 * 24 * HOUR / series_mtbf_s([(504, 50_000 * HOUR)])
    assert expected == pytest.approx(13.3, rel=0.01)
    assert 4.80 <= expected <= 18.39


def test_diloco_500_inner_steps_exchange_500x_less():
    # Published [AIWIKI]: eight workers, 500 inner steps, "roughly 500 times less data" than data parallelism.
    # Model: ``scale-across --inner-steps 500`` (fp32 outer gradients, as the gradient): one all-reduce of the
    # same bytes per 500 steps, 1/500 of data parallelism's cross-site bytes (0 %).
    out = _cli(["scale-across", "--nodes", "64", "--message", "1 GB", "--inner-steps", "500"])
    assert 1 / out["local_sgd"]["cross_site_bytes_ratio"] == pytest.approx(500, rel=0.10)


def test_eight_elephants_on_64_ecmp_uplinks_collide_more_than_30_percent():
    # Published [PINGDO-AR]: 8 elephant flows hashed over a switch's 64 egress choices make a hot path more
    # than 30 % of the time. Model: ``route(policy="ecmp")`` of 8 rail-0 flows from one SU to the other on a
    # DGX H100 fabric whose rail leaf has 64 uplinks (radix 128), 300 hash seeds: the share of seeds where two
    # flows share an uplink. By hand (birthday bound) 1 - prod_{i<8} (1 - i/64) = 0.364; 300 seeds give a
    # binomial sd of 0.028.
    topo = build_topology(preset("dgx-h100-superpod", nodes=128, **leaf_of_radix(128)))
    src = np.arange(8) * 8
    uplinks = topo.leaf_uplinks[0, topo.leaf_of_gpu[0]]
    hits = []
    for seed in range(300):
        r = route(topo, src, src + 64 * 8, policy="ecmp", seed=seed)
        hits.append((np.asarray(r.incidence.tocsr()[uplinks] @ r.share) >= 2).any())
    assert np.mean(hits) > 0.30
    assert np.mean(hits) == pytest.approx(1 - np.prod(1 - np.arange(8) / 64), abs=0.085)


# [LVL]: 500 servers of 8 B200, a 400 Gb/s ConnectX-8 per GPU on NDR InfiniBand (QM9700, 64 ports), two
# 100GbE front-end NICs and one BMC per server. Tiers are left to the product.
LVL = """\
name: levelupit-b200-4000
accelerator: b200
gpus_per_node: 8
nodes: 500
scale_up: {kind: nvswitch}
scale_out:
  {nic: connectx-8, nic_speed: 400 Gb/s, fabric: infiniband, switch: quantum-2-qm9700, rail_optimized: true}
front_end: {nic: connectx-7, nic_speed: 100 Gb/s, nics_per_node: 2}
management: {nic: bmc-1g}
"""


def _parts(show: dict, network: str, item: str) -> dict[str, int]:
    """``cluster show``'s part counts of one network and item, by the part's role (leaf, spine, ...)."""
    return {
        p["part"].split(":")[0]: p["count"]
        for p in show["parts"]
        if (p["network"], p["item"]) == (network, item)
    }


def test_levelupit_4000_b200_need_three_tiers(tmp_path):
    # Published [LVL]: at 4,000 GPUs "a 3-tier fabric becomes the only path to full bisection bandwidth".
    # Model: a 64-port leaf splits 32 down / 32 up; two tiers join at most 64 x 32 = 2,048 GPUs, so 4,000 get
    # three (``cluster show``, tiers left to the product).
    assert _cli(["cluster", "show", _cluster_file(tmp_path, LVL)])["tiers"] == 3


def test_levelupit_4000_b200_port_counts(tmp_path):
    # Published [LVL]: 4,000 backend IB ports, 1,000 front-end Ethernet ports, 500 OOB management ports.
    # Model: 500 x 8 scale-out NICs, 500 x 2 front-end NICs, 500 BMC ports (exact).
    show = _cli(["cluster", "show", _cluster_file(tmp_path, LVL)])
    counts = {net: sum(_parts(show, net, "nic").values()) for net in ("scale-out", "front-end", "management")}
    assert counts == {"scale-out": 4000, "front-end": 1000, "management": 500}


def _dgx_h100_switches(nodes: int) -> tuple[int, dict[str, int]]:
    show = _cli(["cluster", "show", "dgx-h100-superpod", "--nodes", str(nodes)])
    return show["tiers"], _parts(show, "scale-out", "switch")


def test_apetops_two_tiers_end_at_256_h100_servers():
    # Published [APE]: "256 servers represents the limit of a two-tier Spine-Leaf architecture; exceeding 256
    # servers requires a three-tier architecture".
    # Model: QM9700 (64 x 400G) leaves of 32 down / 32 up: 256 servers x 8 = 2,048 GPUs on 64 leaves and
    # 32 spines, the two-tier maximum; 512 servers take three.
    assert _dgx_h100_switches(256)[0] == 2
    assert _dgx_h100_switches(512)[0] == 3


def test_apetops_512_h100_servers_take_320_ib_switches():
    # Published [APE]: 4 SuperPods x (32 leaf + 32 spine + 16 core) = 320 IB switches for 512 servers.
    # Model: 4,096 GPUs / 32 = 128 leaves, 128 spines, 4,096 spine uplinks / 64 = 64 cores: 320 (exact).
    _, switches = _dgx_h100_switches(512)
    assert switches == {"leaf": 128, "spine": 128, "core": 64}
    assert sum(switches.values()) == 320


# [KED]: 32 B300 servers, 8 ConnectX-8 at 800 Gb/s each, Q3400 (144 x 800G) leaves and spines, the SU cabled
# whole as the report's standard baseline does (``scale_out.full_su``).
KED = """\
name: kedios-b300-32
accelerator: b300
gpus_per_node: 8
nodes: 32
scale_up: {kind: nvswitch}
scale_out:
  nic: connectx-8
  nic_speed: 800 Gb/s
  fabric: infiniband
  switch: quantum-x800-q3400
  rail_optimized: true
  full_su: true
front_end: {nic: bluefield-3, nics_per_node: 2}
management: {nic: bmc-1g}
"""


def test_kedios_32_b300_on_12_q3400(tmp_path):
    # Published [KED]: "12 Q3400-RA (8 leaf + 4 spine)".
    # Model: one leaf per rail (8), and the full SU's 4 spines (exact). Without ``full_su`` the 256 leaf
    # uplinks fit 2 spines of 144 ports: 10 switches.
    show = _cli(["cluster", "show", _cluster_file(tmp_path, KED)])
    assert _parts(show, "scale-out", "switch") == {"leaf": 8, "spine": 4}


def test_kedios_server_side_bandwidth_is_204_8_tbps(tmp_path):
    # Published [KED]: "204.8 Tb/s of server-side bisection bandwidth", 1:1 non-blocking.
    # Model: the bisection (the cut between two halves of the GPUs) is 128 x 800 Gb/s = 102.4 Tb/s each way;
    # the report's "server-side" figure is every server's NICs together, twice that: 204.8 Tb/s (0 %).
    show = _cli(["cluster", "show", _cluster_file(tmp_path, KED)])
    assert 2 * show["bisection_bytes_per_s"] * 8 / 1e12 == pytest.approx(204.8, rel=0.10)


def test_kedios_b300_server_draws_14_5_kw(tmp_path):
    # Published [KED]: one ASUS XA NB3I-E12 (8 B300) per rack, "Sustained wall draw: ~14.5 kW".
    # Model: ``cluster show``'s node power is the DGX B300's 14 kW (its RA's ~56 kW per rack of four): the
    # GPUs, CPUs and rest of node (compute) with the node's own NICs and NVSwitch; 14.0 kW (-3.4 %).
    show = _cli(["cluster", "show", _cluster_file(tmp_path, KED)])
    nics = sum(p["watts"] for p in show["parts"] if p["item"] == "nic" and p["network"] != "management")
    node_w = (show["compute_watts"] + show["watts"]["scale-up"] + nics) / show["nodes"]
    assert node_w / 1e3 == pytest.approx(14.5, rel=0.10)


# [SKT]: B200 servers writing their checkpoint over one 200 Gb/s RoCE front-end port each to NFS (VAST) whose
# maximum is 250 GB/s of writes and 700 GB/s of reads (the report's figures). The mount is NFS over TCP (the
# report's "transport-layer backlog" and 128 RPC slots are sunrpc's TCP transport) and, as the report names no
# nconnect, Linux's default of one connection (man 5 nfs).
SKT = """\
name: skt-b200-nfs
accelerator: b200
gpus_per_node: 8
nodes: 63
scale_up: {kind: nvswitch}
scale_out: {nic: connectx-7, nic_speed: 400 Gb/s, fabric: infiniband, switch: quantum-2-qm9700}
front_end: {nic: connectx-7, nic_speed: 200 Gb/s, nics_per_node: 1, switch: spectrum-4-sn5600-400g}
management: {nic: bmc-1g}
storage: {system: vast, aggregate_write: 250 GB/s, aggregate_read: 700 GB/s, nconnect: 1, nfs_transport: tcp}
"""


def _skt_gb_s(tmp_path: Path, direction: Literal["read", "write"], nodes: int) -> float:
    """GB/s ``nodes`` of the [SKT] servers move together to (write) or from (read) the NFS storage."""
    spec = resolve_cluster(_cluster_file(tmp_path, SKT))
    return nodes * node_path(spec, direction=direction, active_nodes=nodes).rate_bytes_per_s / 1e9


def test_skt_one_b200_server_checkpoints_at_one_tcp_connections_rate(tmp_path):
    # Published [SKT]: checkpoints to NFS reach 1.4-10.4 % of a server's 200 Gb/s RoCE port: 0.35-2.6 GB/s.
    # Model: the node's NFS mount, one TCP connection of 2 GB/s (catalogue vast: "the 2 GB/s limit of a single
    # mount"), binds below the port's 24.58 GB/s payload: 2.0 GB/s, 8.0 % of the port, inside the range.
    # Before the mount stage: the port, 24.58 GB/s (9.5x the top of the range).
    assert 0.014 * 25.0 <= _skt_gb_s(tmp_path, "write", 1) <= 0.104 * 25.0


def _opt_job_mtbf_h(_tmp_path: Path) -> float:
    return series_mtbf_s([(992, 50_000 * HOUR)]) / HOUR


MISSED: dict[str, tuple[float, float, str]] = {
    # name: (product figure, published figure, diagnosis)
    "skt_b200_63_nodes_checkpoint_save_gb_s": (
        126.0,
        0.160 * 250.0,
        "[SKT] 63 servers' checkpoint-save bursts average 16.0 % of the storage's 250 GB/s: 40 GB/s, 0.63 "
        "GB/s a server; the product gives each server its mount's one TCP connection, 63 x 2 GB/s = 126 GB/s "
        "(+215 %; before the mount stage the 250 GB/s maximum, +525 %). Missing: the NFS/RPC queueing the "
        "report measures when 60 nodes write at once (Little's law: slots x wsize / RPC round trip, the "
        "round trip under that load unpublished), which one client alone does not meet.",
    ),
    "skt_b200_63_nodes_restart_load_gb_s": (
        126.0,
        0.215 * 700.0,
        "[SKT] 63 servers' restart loads average 21.5 % of the storage's 700 GB/s: 150.5 GB/s, 2.39 GB/s a "
        "server, above one TCP connection's 2 GB/s; the product gives 126 GB/s (-16.3 %; before the mount "
        "stage the 700 GB/s maximum, +365 %). Missing: the mount the loads ran on (more connections, or "
        "RDMA), which the report does not name.",
    ),
    "opt_175b_job_mtbf_h": (
        50.40,
        56 * 24 / 53.5,
        "[OPT] 53-54 restarts in 56 days on 992 A100: one every 25.1 h; the product's 992 GPUs of "
        "50,000 h in series give 50.4 h (+101 %). Missing: restarts with no hardware failure behind them "
        "(job hangs, NCCL errors, slowdowns, storage issues, restarts to change hyper-parameters after loss "
        "spikes), which no part MTBF carries; adding the rest of each of the 124 nodes (``--node-mtbf "
        "'30000 h'``, two NICs and two PSUs of the Reddi appendix) gives 41.7 h, still +66 %. ``checkpoint "
        "--mtbf`` takes a measured job MTBF instead.",
    ),
}

MEASURE = {
    "skt_b200_63_nodes_checkpoint_save_gb_s": lambda tmp: _skt_gb_s(tmp, "write", 63),
    "skt_b200_63_nodes_restart_load_gb_s": lambda tmp: _skt_gb_s(tmp, "read", 63),
    "opt_175b_job_mtbf_h": _opt_job_mtbf_h,
}


@pytest.mark.parametrize("name", sorted(MISSED))
def test_missed_figures_are_still_missed(name, tmp_path):
    product, published, _ = MISSED[name]
    assert_still_missed(MEASURE[name](tmp_path), product, published)
