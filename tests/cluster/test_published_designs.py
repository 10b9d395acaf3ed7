"""Blind check of fabric sizing, optics, power and storage against published reference designs.

Each test runs the product as a user would (``aifabric cluster show`` / ``checkpoint`` on a cluster file, or
the Python API) on a design a vendor or paper published, and asserts the published figure with its source
and the hand derivation. Figures the model misses are in ``MISSED`` (measured, predicted, what is missing);
not asserted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric import catalog
from aifabric.cli.app import app
from aifabric.cluster.power import cluster_power
from aifabric.cluster.presets import preset
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.summary import summarize
from aifabric.cluster.topology import build_topology
from aifabric.engines.scale_across import fibre_delay_s

# DGX B300 with ConnectX-8 (one 800 Gb/s XDR NIC per GPU), rail-optimised under Quantum-X800 Q3400
# (144 x 800G) leaves and spines: the NVIDIA DGX SuperPOD (DGX B300, XDR) reference architecture.
B300_XDR = """\
name: dgx-b300-xdr
accelerator: b300
gpus_per_node: 8
nodes: 72
scale_up: {kind: nvswitch}
scale_out:
  nic: connectx-8
  fabric: infiniband
  switch: quantum-x800-q3400
  tiers: 2
  rail_optimized: true
front_end: {nic: bluefield-3, nics_per_node: 2}
management: {nic: bmc-1g}
"""

# DGX B300 on a twin-plane Spectrum-X compute fabric: each ConnectX-8 800G port split 2 x 400GbE over two
# planes of 51.2 Tb/s switches (128 x 400G): the NVIDIA DGX SuperPOD (DGX B300) reference architecture.
B300_ETH = """\
name: dgx-b300-spectrum-x
accelerator: b300
gpus_per_node: 8
nodes: 64
scale_up: {kind: nvswitch}
scale_out:
  nic: connectx-8
  fabric: ethernet
  switch: spectrum-4-sn5600-400g
  tiers: 2
  planes: 2
  rail_optimized: true
front_end: {nic: bluefield-3, nics_per_node: 2}
management: {nic: bmc-1g}
"""

# Meta's 24K-GPU cluster: 3,072 nodes of 8 H100, one rack switch per 2 nodes at 1:2, pods of 3,072 GPUs
META_24K = """\
name: meta-24k
accelerator: h100-sxm
gpus_per_node: 8
nodes: 3072
scale_up: {kind: nvswitch}
scale_out:
  nic: connectx-7
  fabric: infiniband
  switch: quantum-2-qm9700
  spine_switch: quantum-x800-q3400
  core_switch: quantum-x800-q3400
  tiers: 3
  rail_optimized: false
  oversubscription: ["1:2", "48:7"]
  pod_gpus: 3072
"""

# DGX B200: 8 x ConnectX-7 400G for the compute fabric, 2 x BlueField-3 for storage (DGX B200 user guide)
DGX_B200 = """\
name: dgx-b200
accelerator: b200
gpus_per_node: 8
nodes: 1
scale_up: {kind: nvswitch}
scale_out:
  nic: connectx-7
  fabric: infiniband
  switch: quantum-2-qm9700
  tiers: 2
  rail_optimized: true
front_end: {nic: bluefield-3, nics_per_node: 2}
management: {nic: bmc-1g}
"""


def _file(tmp_path: Path, text: str, name: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _node_watts(cluster, nodes: int) -> float:
    """Watts of the systems themselves: compute lines + in-node NVSwitch + the nodes' NICs."""
    p = cluster_power(build_topology(cluster))
    w = sum(x.watts for x in p.compute) + p.inventory.watts_by_network["scale-up"]
    w += sum(
        x.watts for x in p.inventory.lines if x.item == "nic" and x.network in ("scale-out", "front-end")
    )
    return w / nodes


@pytest.mark.parametrize(
    ("sus", "leaves", "spines"),
    [(1, 8, 4), (2, 16, 8), (4, 32, 18), (8, 64, 36), (18, 144, 72)],
)
def test_dgx_b300_xdr_superpod_table(tmp_path, sus, leaves, spines):
    # NVIDIA DGX SuperPOD (DGX B300, XDR) RA, Table 3 "Example Compute Fabric Components"
    # (docs.nvidia.com/dgx-superpod/reference-architecture/scalable-infrastructure-b300-xdr/latest/
    # dgx-superpod-architecture.html): SU = 72 nodes = 576 GPUs; (leaf, spine) = (8, 4), (16, 8), (32, 18),
    # (64, 36), (144, 72) for 1, 2, 4, 8, 18 SUs; node-leaf = leaf-spine cables = GPUs. (The table's
    # 18-SU GPU count reads 9,216; its nodes 1,296 x 8 = 10,368 = its cable counts.)
    # By hand: a Q3400 leaf is 72 down / 72 up at 1:1; one leaf per rail per SU -> 8 x SUs leaves.
    # Spines by ports: leaves x 72 / 144 = 4, 8, 16, 32, 72; a leaf cables its 72 uplinks evenly to
    # every spine, so the count divides 72: 16 -> 18 and 32 -> 36, as the table builds.
    path = _file(tmp_path, B300_XDR, "b300.yaml")
    r = CliRunner().invoke(app, ["cluster", "show", path, "--nodes", str(72 * sus), "--json"])
    assert r.exit_code == 0, r.output
    parts = {
        p["part"].split(":")[0]: p["count"] for p in json.loads(r.stdout)["parts"] if p["item"] == "switch"
    }
    assert (parts["leaf"], parts["spine"]) == (leaves, spines)
    topo = build_topology(resolve_cluster(path, nodes=72 * sus))
    assert topo.cable_counts == {"nic-leaf": 576 * sus, "leaf-spine": 576 * sus, "spine-core": 0}


@pytest.mark.parametrize(("sus", "leaves", "spines"), [(1, 16, 8), (2, 32, 16), (4, 64, 32), (8, 128, 64)])
def test_dgx_b300_twin_plane_superpod_table(tmp_path, sus, leaves, spines):
    # NVIDIA DGX SuperPOD (DGX B300) RA, Table 3 "Larger DGX SuperPOD component counts"
    # (docs.nvidia.com/dgx-superpod/reference-architecture/scalable-infrastructure-b300/latest/
    # dgx-superpod-architecture.html): SU = 64 nodes = 512 GPUs; (leaf, spine) = (16, 8), (32, 16),
    # (64, 32), (128, 64) for 1, 2, 4, 8 SUs; network-fabrics page: "each GPU has 2x 400GbE connectivity
    # through two different planes". By hand, per plane: 8 rails x SUs leaves of 64 down / 64 up at 400G,
    # spines = leaves x 64 / 128; two planes double both. Node-leaf cables 512 per SU = one 800G module
    # per GPU (its twin-port 2 x 400G feeds both planes).
    path = _file(tmp_path, B300_ETH, "b300eth.yaml")
    topo = build_topology(resolve_cluster(path, nodes=64 * sus))
    assert (topo.switch_counts["leaf"], topo.switch_counts["spine"]) == (leaves, spines)
    node_end = [x for x in cluster_power(topo).inventory.lines if x.part.startswith("node end")]
    assert [(x.count, x.links) for x in node_end if x.network == "scale-out"] == [(512 * sus, 1024 * sus)]


def test_meta_24k_pods_with_undersubscribed_rack_switches(tmp_path):
    # glennklockwood.com "Meta's H100 clusters" (from Meta's 2024 blog and the Llama 3 paper): 24,576 H100
    # in 3,072 Grand Teton nodes, 1,536 racks of 2 nodes, 8 pods of 3,072 GPUs (192 racks); "T0-T1 links
    # are undersubscribed by 2:1", "T1-T2 links are oversubscribed by 7:1". By hand: one rack switch (RTSW)
    # per rack: 16 GPU ports down, 32 up (1:2); a pod of 192 RTSWs has 32 cluster switches (one per RTSW
    # uplink) of 192 down ports each; 7:1 over 192 ports is 192 / 28 = 48:7 (6.86:1), what the file asks.
    # Cross-pod bandwidth per GPU: 2 x 50 GB/s / (48/7) = 14.58 GB/s. The cluster switch (an Arista 7800,
    # not in the catalogue) is stood in for by a 288-port-at-400G Q3400: only its radix (>= 220) matters.
    spec = resolve_cluster(_file(tmp_path, META_24K, "meta.yaml"))
    shape = build_topology(spec).shape
    assert shape is not None
    assert (shape.n_leaves, shape.leaf_down, shape.leaf_up) == (1536, 16, 32)
    assert (shape.n_pods, shape.leaves_per_pod, shape.spines_per_pod) == (8, 192, 32)
    assert shape.realised == pytest.approx((0.5, 48 / 7))
    s = summarize(spec)
    assert s.bisection_bytes_per_s / (s.n_gpus / 2) == pytest.approx(2 * 50e9 * 7 / 48)
    assert s.bisection_bytes_per_s == pytest.approx(s.requested_bisection_bytes_per_s)


def test_an_undersubscribed_leaf_leaves_the_nics_binding():
    # 1:2 at the leaf: twice the uplinks, but no bisection beyond the NICs' N x 50 GB/s / 2
    s = summarize(preset("dgx-h100-superpod", nodes=16, **{"scale_out.oversubscription": ["1:2"]}))
    assert s.realised_oversubscription == (0.5,)
    assert s.bisection_bytes_per_s == pytest.approx(128 * 50e9 / 2)
    assert s.requested_bisection_bytes_per_s == pytest.approx(s.bisection_bytes_per_s)
    r = CliRunner().invoke(app, ["cluster", "show", "--oversubscription", "1:0"])
    assert r.exit_code == 2 and "oversubscription" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_twin_port_and_nic_transceiver_power_against_nvidia_datasheets():
    # NVIDIA MMA4Z00-NS-T twin-port 2x400G multimode OSFP (docs.nvidia.com/networking/display/
    # 800gmma4z00nst/overview): "remain at 15 Watts for all configurations"; NVIDIA MMA1Z00-NS400 /
    # MMA4Z00-NS400 single-port 400G (the NIC end): "9 Watts maximum or 8 Watts typical"; the single-mode
    # DR8 twin-port (MMS4X00-NS-T) draws 17 W, the class the seed's "roughly 15 W" per 800G module spans.
    assert catalog.optic("osfp-800g-2xsr4").power_w == 15.0
    assert 8.0 <= catalog.optic("osfp-400g").power_w <= 9.0
    assert 15.0 <= catalog.optic("osfp-800g-dr8").power_w <= 17.0
    # a GB200 NVL72 rack's 72 ConnectX-7 (single-port 400G at the tray) under twin-port switch cages:
    # 72 NIC ends x 8 W and 72 / 2 leaf-end modules x 15 W
    inv = cluster_power(build_topology(preset("gb200-nvl72", gpus=72))).inventory
    ends = {
        x.part.split(":")[0]: x for x in inv.lines if x.network == "scale-out" and x.item == "transceiver"
    }
    assert (ends["node end"].count, ends["node end"].watts) == (72, 72 * 8.0)


def test_dgx_b200_and_b300_system_power(tmp_path):
    # DGX B200 user guide, power specifications: 14.3 kW max. DGX SuperPOD (B300, XDR) RA: four DGX B300
    # per rack, "rack-level power consumption per rack is ~56kW" -> 14 kW per system.
    b200 = resolve_cluster(_file(tmp_path, DGX_B200, "b200.yaml"), nodes=2)
    assert _node_watts(b200, 2) == pytest.approx(14_300)
    b300 = resolve_cluster(_file(tmp_path, B300_XDR, "b300.yaml"), nodes=4)
    assert 4 * _node_watts(b300, 4) == pytest.approx(56_000, rel=0.02)
    # the GPUs are the largest share: 8 x 1,000 W of 14.3 kW
    p = cluster_power(build_topology(b200))
    gpu = next(x for x in p.compute if x.item == "gpu")
    assert gpu.watts == pytest.approx(2 * 8 * 1000.0)


def test_gb200_nvl72_rack_power():
    # GB200 NVL72 rack: "~120 kW" (kshirol-dev learnAI "Training clusters"; awesomeagents.ai GB200 NVL72:
    # "~120kW power draw"; secondary, NVIDIA states no rack figure). Model: 18 trays x 5.4 kW (fibermall:
    # "each compute tray consuming up to 5400W") + 9 NVLink switch trays (72 x 18 ports x 5.5 W = 7.1 kW)
    # + 72 ConnectX-7 + 36 BlueField-3 = 111.5 kW, within 10 % of 120 kW.
    rack = preset("gb200-nvl72", gpus=72)
    assert _node_watts(rack, 1) == pytest.approx(120_000, rel=0.10)


def test_megatron_1t_checkpoint_size():
    # Narayanan et al., SC'21 (arXiv:2104.04473) sec. 5.10: the trillion-parameter model's checkpoint is
    # 13.8 TB. Model: 1e12 x (2 B bf16 weights + 12 B fp32 master + Adam m, v) = 14 TB, +1.4 %.
    r = CliRunner().invoke(
        app,
        ["checkpoint", "megatron-a100", "--params", "1e12", "--tp", "8", "--pp", "64"]
        + ["--storage", "selene-lustre", "--json"],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["checkpoint_bytes"] == pytest.approx(13.8e12, rel=0.02)


def test_dgx_b200_storage_rate_against_ddn(tmp_path):
    # DDN blog "DDN AI storage optimized for NVIDIA DGX B200": several AI400X2-Turbo reach 96 % of the DGX
    # B200's storage NICs, "nearly 100 GB/s (800 Gbps)", read and write. Model: 2 x BlueField-3 400 Gb/s
    # = 100 GB/s x 0.96 payload = 96 GB/s, the node's NICs binding (4 appliances give 320 GB/s).
    path = _file(tmp_path, DGX_B200, "b200.yaml")
    args = ["checkpoint", path, "--params", "70e9", "--tp", "8", "--storage", "ddn-ai400x2-turbo"]
    r = CliRunner().invoke(app, [*args, "--storage-units", "4", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    for way in ("write", "restore"):
        assert out[way]["rate_bytes_per_s"] == pytest.approx(96e9, rel=0.01)
        assert out[way]["bottleneck"] == "node front-end NICs"


def test_dgx_h100_gds_read_over_40_gb_per_s_per_node():
    # NVIDIA DGX SuperPOD (H100) RA, storage: "a GDS-enabled application should be able to read data at
    # over 40 GBps" per node. Model, one AI400X2-Turbo per node: min(2 x BlueField-3 x 0.96 = 96 GB/s,
    # 4 x 80 GB/s / 4 nodes) = 80 GB/s per node.
    r = CliRunner().invoke(
        app,
        ["checkpoint", "--nodes", "4", "-m", "llama3-70b", "--tp", "8", "--storage", "ddn-ai400x2-turbo"]
        + ["--storage-units", "4", "--json"],
    )
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["restore"]["rate_bytes_per_s"] == pytest.approx(80e9)


def test_fibre_delay_against_group_index():
    # mapyourtech.com "The 5-microsecond rule": 4.897 us/km at 1550 nm (group index 1.468); Wikipedia
    # "Latency (engineering)": "about 5.0 us of latency for every kilometer". Model 5 us/km, +2.1 %.
    assert fibre_delay_s(100.0) / 100.0 == pytest.approx(4.897e-6, rel=0.025)


MISSED = {
    "Megatron-LM 1T checkpoint write, 384 DGX A100 on Selene (Narayanan et al. SC'21 sec. 5.10)": "273 GB/s "
    "measured (13.8 TB in ~50.5 s) vs 682.5 GB/s predicted (14 TB in 20.5 s, `aifabric checkpoint "
    "megatron-a100 --params 1e12 --tp 8 --pp 64 --storage selene-lustre`): the paper's saves reach 40 % of "
    "the file system's peak write; the model caps at the peak. What is missing: the writer's efficiency "
    "(torch.save serialisation, file-per-rank metadata, Lustre striping), which no second source sizes",
    "Meta 24K-GPU clusters, T1-T2 '7:1' as stated": "8 pods x 3,072 GPUs vs 10 pods of <= 3,072 GPUs "
    "predicted when the file asks 1:2,7:1 (the 8 pods are asserted above at 48:7): 7:1 over Meta's 192 "
    "rack switches per pod is 192 / 27.4 uplinks per cluster switch, no integer, and the builder holds a "
    "ratio to 1 %; Meta's cluster-switch (Arista 7800) port split is not published to the port",
    "DGX SuperPOD (GB200) RA: 'Each SU requires a TDP of 1.2 MW' (8 NVL72 racks)": "1,200 kW vs 998.7 kW "
    "predicted (`aifabric cluster show gb200-nvl72`, 576 GPUs): the SU figure is a facility budget that "
    "includes storage, UFM and management servers and cooling distribution units, none of which the "
    "inventory holds; the racks, fabric, optics and switches alone are 17 % below it",
    "DGX SuperPOD (B300, twin-plane Spectrum-X) RA Table 3 node-leaf cables": "512 per SU vs 1,024 "
    "predicted (the test's cluster file): the RA counts one cable per GPU's NIC cage, split to both planes' "
    "leaves; the model one per 400G plane link. Switches and node-end modules agree (asserted); leaf-spine "
    "cables agree at 512 per SU with `scale_out.uplink_speed: 800 Gb/s` (test_published_designs2.py); a "
    "cable split between planes is not modelled",
    "Quantum-X800 Q3400 switch power": "no published figure found vs 14,000 W in the catalogue (marked an "
    "estimate): a B300 XDR SU's 12 Q3400 then draw 168 kW of its 1.2 MW; not checkable until NVIDIA's "
    "datasheet figure is found",
}


def test_missed_entries_name_the_figures():
    assert all(" vs " in why for why in MISSED.values())
