"""Blind check of fabric sizing, second set: published designs the model was not built on.

Each test describes a published design with a cluster file (or a preset resized), runs the product as a user
would (``aifabric cluster show`` or the Python API) and asserts the published counts, exactly where the
design is exact, with its source and the hand derivation. Counts the model misses are in ``MISSED``
(published, predicted, what is missing); not asserted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.power import cluster_power
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.summary import summarize
from aifabric.cluster.topology import build_topology

# A back-end fabric alone: the designs below publish no front-end or management counts.
_BACKEND = "front_end: null\nmanagement: null\n"

# Asterfusion "Middle-to-Large Scale AI Compute Backend Fabric Configuration Guide" (cloudswit.ch): 64
# servers of 4 GPUs, one NIC per GPU, rail-optimised ("NIC N to Leaf N") on CX864E-N switches (64 x 800G
# OSFP, 51.2 Tb/s: Asterfusion "800G AI switch architecture" blog); the catalogue's Tomahawk 5 class entry
# has the same ports x speed, which is all that sizes the Clos. The excerpt read states no NIC speed: 400G
# is the one at which both its counts are exact (at 800G a leaf holds 32 servers at 1:1, at 200G one
# spine has the ports), so this test checks the port arithmetic, not the NIC.
ASTERFUSION = (
    """\
name: asterfusion-cx864e
accelerator: h100-sxm
gpus_per_node: 4
nodes: 64
scale_out: {nic: connectx-7, fabric: ethernet, switch: tomahawk5-51t, tiers: 2}
"""
    + _BACKEND
)

# Alibaba HPN (Qian et al., SIGCOMM 2024; paper notes wuql20.bearblog.dev): hosts of 8 GPUs, each GPU's
# NIC 2 x 200G into two planes, rail-optimised dual-ToR segments of 1,024 GPUs, 15 segments per two-tier
# pod on 51.2 Tb/s single-chip switches (128 x 400G, 256 x 200G).
HPN = (
    """\
name: alibaba-hpn
accelerator: h100-sxm
gpus_per_node: 8
nodes: 1920
scale_out:
  nic: connectx-7
  fabric: ethernet
  switch: spectrum-4-sn5600-400g
  tiers: 2
  planes: 2
  uplink_speed: 400 Gb/s
"""
    + _BACKEND
)

# DGX B300 twin-plane Spectrum-X (DGX SuperPOD (B300) RA): 2 x 400G per GPU over two planes of SN5600
# (64 x 800G cages, 128 x 400G), leaf-spine cables at the cages' 800G.
B300_TWIN_PLANE = (
    """\
name: dgx-b300-spectrum-x
accelerator: b300
gpus_per_node: 8
nodes: 64
scale_out:
  {nic: connectx-8, fabric: ethernet, switch: spectrum-4-sn5600-800g, planes: 2, uplink_speed: 800 Gb/s}
"""
    + _BACKEND
)

# xAI Colossus: 100,000 H100 in HGX nodes of 8, "each GPU has its own 400GbE Nvidia BlueField-3 SuperNIC,
# which xAI has paired with the Spectrum-X SN5600" (datacenterdynamics.com, from ServeTheHome's tour),
# "SN5600 switches support 128 400-gigabit ethernet links per unit" (getcoai.com).
COLOSSUS = (
    """\
name: xai-colossus
accelerator: h100-sxm
gpus_per_node: 8
nodes: 12500
scale_out: {nic: bluefield-3, fabric: ethernet, switch: spectrum-4-sn5600-400g, tiers: 3}
"""
    + _BACKEND
)

# An 800G NIC per GPU split into four 200G planes (NVIDIA Spectrum-X multi-plane: "NIC bandwidth split into
# independent 200 Gb/s planes", reference/fabric-models.md 1.2) on one 51.2 or 102.4 Tb/s switch per tier.
PLANES4 = (
    """\
name: four-planes
accelerator: b300
gpus_per_node: 8
nodes: 16
scale_out: {nic: connectx-8, fabric: ethernet, switch: SWITCH, tiers: 2, planes: 4}
"""
    + _BACKEND
)


# DGX B300 with ConnectX-8 (800G XDR per GPU) under Quantum-X800 Q3400 (144 x 800G), rail-optimised: the DGX
# SuperPOD (B300, XDR) RA's fabric, built for a whole SU of 72 nodes whatever the nodes present.
B300_XDR_FULL_SU = (
    """\
name: dgx-b300-xdr
accelerator: b300
gpus_per_node: 8
nodes: 32
scale_out: {nic: connectx-8, fabric: infiniband, switch: quantum-x800-q3400, tiers: 2, full_su: true}
"""
    + _BACKEND
)


def _file(tmp_path: Path, text: str, name: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _switches(path: str, nodes: int) -> dict[str, int]:
    """Switch counts per tier as ``aifabric cluster show --json`` prints them (every plane added)."""
    r = CliRunner().invoke(app, ["cluster", "show", path, "--nodes", str(nodes), "--json"])
    assert r.exit_code == 0, r.output
    parts = json.loads(r.stdout)["parts"]
    return {p["part"].split(":")[0]: p["count"] for p in parts if p["item"] == "switch"}


@pytest.mark.parametrize(
    ("nodes", "leaves", "spines", "leaf_spine"),
    [(31, 8, 4, 256), (63, 16, 8, 512), (95, 24, 16, 768)],
)
def test_dgx_superpod_partial_su_rows(nodes, leaves, spines, leaf_spine):
    # NVIDIA DGX SuperPOD (H100) RA, "Network Fabrics", Table 4 "Compute fabric component count"
    # (docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/
    # network-fabrics.html; the DGX B200 RA's Table 4 is the same): 1, 2, 3 SUs = 31, 63, 95 nodes (one DGX
    # per SU gives its ports to UFM), (leaf, spine) = (8, 4), (16, 8), (24, 16); spine-leaf cables 256, 512,
    # 768; "compute and UFM" cables 252, 508, 764 = GPUs + 4 UFM links (not modelled: 248, 504, 760 here).
    # By hand: a QM9700 leaf is 32 down / 32 up, one leaf per rail per SU. The RA cables the full SU ("the
    # fabric should be designed to support the full SU, including leaf switches and leaf-spine cables"),
    # 32 uplinks per leaf, spread evenly: 8 x 32 / 64 = 4 spines; 16 x 32 / 64 = 8; 24 x 32 / 64 = 12 by
    # ports, and 12 does not divide 32 -> 16. (The 4-SU row is in test_power_mgmt_headlines.py.)
    counts = _switches("dgx-h100-superpod", nodes)
    assert (counts["leaf"], counts["spine"]) == (leaves, spines)
    topo = build_topology(resolve_cluster("dgx-h100-superpod", nodes=nodes))
    assert topo.cable_counts == {"nic-leaf": nodes * 8, "leaf-spine": leaf_spine, "spine-core": 0}


def test_asterfusion_two_tier_rail_optimised_guide(tmp_path):
    # Asterfusion guide, "Typical Configuration Example": "64 compute nodes (256 GPUs total, 4 per server).
    # The deployment includes 6 CX864E-N: 2 Spine nodes and 4 Leaf nodes", "NIC N to Leaf N".
    # By hand: 800G ports broken out to 128 x 400G; one leaf per rail (4 rails) with the 64 servers' NIC N
    # down and 64 up at 1:1; spines = 4 x 64 / 128 = 2. Cables: 256 NIC-leaf, 256 leaf-spine.
    path = _file(tmp_path, ASTERFUSION, "aster.yaml")
    assert _switches(path, 64) == {"leaf": 4, "spine": 2}
    topo = build_topology(resolve_cluster(path))
    assert topo.cable_counts == {"nic-leaf": 256, "leaf-spine": 256, "spine-core": 0}


def test_alibaba_hpn_dual_plane_two_tier_pod(tmp_path):
    # HPN paper notes (wuql20.bearblog.dev): "Each Pod interconnects 15K GPUs (1024 GPUs per segment, 15
    # segments in total)", "Two-tier dual-plane", "8 backend NICs (2x200Gbps each)", 8 rails. Segment:
    # "16 Leaf switches ... 2048 200Gbps downstream ports ... 128 GPU servers"; "Each Leaf switch has 64
    # 400Gbps upstream ports and 128 200Gbps downstream ports" (article.woter.ai, on HPN 7.0).
    # By hand: per plane, one ToR per rail per segment: 8 ToRs x 15 segments = 120 ToRs, each 128 x 200G
    # down and 128 x 200G = 64 x 400G up; a two-tier plane of 256-port (200G) aggregation switches holds
    # up to 256 ToRs, so 15 segments need no third tier. Aggregation per plane: 120 x 128 / 256 = 60 by
    # ports, and 60 does not divide a ToR's 128 uplinks -> 64, one per 400G uplink of each ToR.
    path = _file(tmp_path, HPN, "hpn.yaml")
    spec = resolve_cluster(path)
    assert spec.n_gpus == 15 * 1024
    shape = build_topology(spec).shape
    assert shape is not None
    assert (shape.tiers, shape.n_leaves, shape.leaf_down, shape.leaf_up) == (2, 120, 128, 128)
    assert _switches(path, 1920) == {"leaf": 2 * 120, "spine": 2 * 64}
    assert _switches(path, 128) == {"leaf": 16, "spine": 2 * 4}  # one segment: 16 ToRs
    # non-blocking inside the pod: every GPU's 2 x 200G cross the bisection
    s = summarize(spec)
    assert s.bisection_bytes_per_s == pytest.approx(15 * 1024 * 50e9 / 2)
    # cables: 2 x 200G per GPU down (30,720), a ToR's 64 x 400G up (240 x 64 = 15,360, ``uplink_speed``),
    # one 400G module at each end of those
    inv = cluster_power(build_topology(spec)).inventory
    cables = {x.part: x.count for x in inv.lines if x.item == "cable"}
    assert cables == {"nic-leaf": 30_720, "leaf-spine": 15_360}
    ends = [
        x for x in inv.lines if x.item == "transceiver" and x.part.split(":")[0] in ("leaf end", "spine end")
    ]
    assert [(x.count, x.watts) for x in ends[1:]] == [(15_360, 15_360 * 8.0)] * 2


def test_xai_colossus_needs_three_tiers(tmp_path):
    # NVIDIA (Oct 2024, datacenterdynamics.com): Colossus runs "zero application latency degradation or
    # packet loss due to flow collisions across all three tiers of the network fabric"; 100,000 H100, a
    # 400GbE SuperNIC per GPU, SN5600 switches (128 x 400G). By hand: two tiers of 128-port switches reach
    # 128 leaves x 64 GPUs = 8,192 GPUs per plane, so 100,000 GPUs -- or one of its four halls of ~25,000
    # (getcoai.com) -- need three.
    path = _file(tmp_path, COLOSSUS, "colossus.yaml")
    r = CliRunner().invoke(app, ["cluster", "show", path, "--tiers", "2"])
    assert r.exit_code == 2
    assert "8192 GPUs" in r.stderr and "use tiers: 3" in r.stderr
    shape = build_topology(resolve_cluster(path)).shape
    assert shape is not None and shape.tiers == 3
    # a three-tier radix-128 Clos needs at least N / 64 leaves, N / 64 spines and N / 128 cores; the
    # built one is within 3 % of that floor (whole SUs and pods round up)
    floor = 100_000 / 64 * 2 + 100_000 / 128
    assert shape.n_leaves + shape.n_spines + shape.n_cores == pytest.approx(floor, rel=0.03)
    assert shape.n_leaves + shape.n_spines + shape.n_cores >= floor


@pytest.mark.parametrize(
    ("switch", "nodes", "leaves", "spines"),
    [("tomahawk5-51t", 4096, 256, 128), ("tomahawk6-102t", 16384, 512, 256)],
)
def test_broadcom_two_tier_reach_at_200g(tmp_path, switch, nodes, leaves, spines):
    # Broadcom Tomahawk 5: "256 ports of 200GbE ... enabling flat, low latency AI/ML clusters"
    # (convergedigest, Aug 2022); Tomahawk 6 (102.4 Tb/s, 512 x 200G): "enables clusters of more than
    # 100,000 AI accelerators to be deployed in just 2 tiers instead of 3" (Hock Tan, quoted at swift.vc).
    # By hand: radix R at 200G, non-blocking two tiers: R leaves of R/2 down under R/2 spines, R^2/2 GPUs
    # per plane: 32,768 (R = 256) and 131,072 (R = 512); 4 planes of 200G per 800G NIC keep every GPU on
    # each plane. One GPU more needs a third tier.
    text = PLANES4.replace("SWITCH", switch)
    path = _file(tmp_path, text, "planes.yaml")
    assert nodes * 8 == leaves * (leaves // 2)
    assert _switches(path, nodes) == {"leaf": 4 * leaves, "spine": 4 * spines}
    r = CliRunner().invoke(app, ["cluster", "show", path, "--nodes", str(nodes + 1)])
    assert r.exit_code == 2 and "use tiers: 3" in r.stderr


def test_32_dgx_b300_on_a_full_xdr_scalable_unit(tmp_path):
    # Kedios "B300 Full Network & Topology Report" (neocloud.kedios.io, an operator's published build): 32
    # DGX-class B300 nodes, 256 GPUs, "1:1 non-blocking InfiniBand", "IB Switches 12 Q3400-RA (8 leaf + 4
    # spine)", one 800G uplink per GPU "one per leaf". NVIDIA's DGX SuperPOD RAs: "if a different node count
    # is required ... the fabric should be designed to support the full SU, including leaf switches and
    # leaf-spine cables"; the B300 XDR RA's SU (Table 3, 1 SU) is 72 nodes on 8 leaves and 4 spines with
    # 576 leaf-spine cables. By hand, full SU: a Q3400 leaf is 72 down / 72 up at 800G; 8 x 72 / 144 = 4
    # spines. Sized to the 32 nodes present instead (``full_su`` off): 32 uplinks, 8 x 32 / 144 -> 2.
    path = _file(tmp_path, B300_XDR_FULL_SU, "b300.yaml")
    assert _switches(path, 32) == {"leaf": 8, "spine": 4}
    topo = build_topology(resolve_cluster(path))
    assert topo.cable_counts == {"nic-leaf": 256, "leaf-spine": 576, "spine-core": 0}
    present = _file(tmp_path, B300_XDR_FULL_SU.replace(", full_su: true", ""), "b300-present.yaml")
    assert _switches(present, 32) == {"leaf": 8, "spine": 2}
    # a full SU (72 nodes) builds the same either way, and so does the RA's 4-SU row (32 leaves, 18 spines)
    assert _switches(path, 72) == _switches(present, 72) == {"leaf": 8, "spine": 4}
    assert _switches(path, 288) == {"leaf": 32, "spine": 18}


@pytest.mark.parametrize(("sus", "leaves", "spines"), [(1, 16, 8), (4, 64, 32), (8, 128, 64)])
def test_dgx_b300_twin_plane_leaf_spine_cables_at_800g(tmp_path, sus, leaves, spines):
    # NVIDIA DGX SuperPOD (DGX B300) RA, Table 3 "Larger DGX SuperPOD component counts": leaf-spine cables
    # = 512 per SU (512, 2048, 4096 for 1, 4, 8 SUs) with (leaf, spine) = (16, 8), (64, 32), (128, 64).
    # By hand: per plane a leaf has 64 x 400G up = 32 x 800G cages; 16 leaves x 32 = 512 cables per SU.
    # (The RA's 512 node-leaf cables per SU join one NIC cage to both planes; the model counts 1,024
    # 400G links there, in MISSED of test_published_designs.py; its 512 node-end modules agree.)
    path = _file(tmp_path, B300_TWIN_PLANE, "b300eth.yaml")
    assert _switches(path, 64 * sus) == {"leaf": leaves, "spine": spines}
    inv = cluster_power(build_topology(resolve_cluster(path, nodes=64 * sus))).inventory
    cables = {x.part: x.count for x in inv.lines if x.item == "cable"}
    assert cables["leaf-spine"] == 512 * sus
    # one 800G module per cable end (15 W, NVIDIA's 800G class), not a 1.6T twin-port the 800G cage
    # cannot take
    ends = [x for x in inv.lines if x.item == "transceiver" and x.part.startswith("spine end")]
    assert [(x.count, x.watts) for x in ends] == [(512 * sus, 512 * sus * 15.0)]


@pytest.mark.parametrize(
    ("speed", "words"),
    [("300 Gb/s", "no whole multiple of the 400 Gb/s"), ("1600 Gb/s", "faster than the leaf")],
)
def test_uplink_speed_that_bundles_no_whole_links_is_refused(tmp_path, speed, words):
    # a cable carries whole per-plane links (400G here) and fits the switch port (SN5600: 800G)
    path = _file(tmp_path, B300_TWIN_PLANE.replace("800 Gb/s", speed), "bad.yaml")
    r = CliRunner().invoke(app, ["cluster", "show", path])
    assert r.exit_code == 2
    assert "scale_out.uplink_speed" in r.stderr and words in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


MISSED = {
    "Alibaba HPN pod size, 15 segments (15,360 GPUs)": "15,360 GPUs per pod vs 32,768 predicted as the "
    "largest dual-plane two-tier build at 1:1 on 51.2 Tb/s switches (256 ToRs per plane of 256-port "
    "aggregation): HPN keeps 16 of each aggregation switch's 256 200G-port equivalents off the ToRs (120 "
    "ToRs x 2 per plane), presumably for the tier above the pod; a pod holding ports back for a core "
    "the spec does not build is not modelled",
    "xAI Colossus switch counts": "no published count vs 1,592 leaves, 1,575 spines, 819 cores predicted "
    "for 100,000 GPUs (`aifabric cluster show` of the test's file): xAI and NVIDIA state the tiers (3), the "
    "NIC (400GbE per GPU) and the switch (SN5600), not the counts; not checkable until a count is published",
}


def test_missed_entries_name_the_figures():
    assert all(" vs " in why for why in MISSED.values())
