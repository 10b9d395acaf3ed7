"""A GPU with several NICs and no planes: every NIC is its own link, leaf port, cable and module.

``scale_out.nics_per_gpu: 3`` of 400G ConnectX-7 (one single-port 400G OSFP cage each, NVIDIA ConnectX-7
datasheet) is three 400G links per GPU, each on a 400G leaf port, never one 1.2 Tb/s link: a 51.2 Tb/s
Tomahawk 5 class switch has 128 ports at 400G (64 x 800G cages, 2 x 400G each; Cisco Nexus 9364E-SG2
"128 x 400 GbE through breakouts", the same class). Before, the three NICs were counted as one link:
128 nic-leaf cables, 128 "1.6T OSFP" node-end modules, radix-42 switches (128 x 400G / 1.2T), 4 spines.
"""

from __future__ import annotations

import pytest
from tests.clusters import cluster_file, scale_out_counts, show_json
from typer.testing import CliRunner

from aifabric import catalog
from aifabric.cli.app import app
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.topology import build_topology

THREE_NICS = """\
name: n3
accelerator: h100-sxm
gpus_per_node: 8
nodes: 16
scale_up: {kind: nvswitch}
scale_out:
  nic: connectx-7
  nics_per_gpu: 3
  fabric: ethernet
  switch: tomahawk5-51t
  tiers: 2
  rail_optimized: false
front_end: null
management: null
"""

TWO_NICS_200G = THREE_NICS.replace("nics_per_gpu: 3", "nics_per_gpu: 2\n  nic_speed: 200 Gb/s")


def _scale_out(d: dict, item: str) -> list[tuple[str, int, float]]:
    return [
        (p["part"], p["count"], p["watts"])
        for p in d["parts"]
        if p["network"] == "scale-out" and p["item"] == item
    ]


def _fabric(d: dict) -> tuple[dict[str, int], dict[str, int]]:
    """(switches per tier, cables per tier) of the scale-out network of ``cluster show --json``."""
    return scale_out_counts(d["parts"], "switch"), scale_out_counts(d["parts"], "cable")


def test_three_nics_per_gpu_are_384_links_of_400g(tmp_path):
    # By hand: 16 nodes x 8 GPUs x 3 NICs = 384 NICs, 384 links of 400G on 128-port (400G) leaves. At 1:1 a
    # leaf has 64 down / 64 up; a node's 24 NIC ports stay on one leaf, 2 nodes (48 ports) a leaf, 8 leaves
    # of 48 down / 48 up; 8 x 48 = 384 uplinks on 128-port spines: 3 spines (48 = 3 x 16, even).
    path = cluster_file(tmp_path, THREE_NICS, "n3.yaml")
    d = show_json(path)
    assert (d["tiers"], *_fabric(d)) == (2, {"leaf": 8, "spine": 3}, {"nic-leaf": 384, "leaf-spine": 384})
    shape = build_topology(resolve_cluster(path)).shape
    assert shape is not None
    assert (shape.radix, shape.leaf_down, shape.leaf_up, shape.endpoints) == (128, 48, 48, 384)
    # one 400G module per NIC cage; the switch ends share 800G twin-port cages (2 x 400G): 384 + 384 link
    # ends at the leaves = 384 modules, 384 / 2 = 192 at the spines. Watts = count x the module's datasheet W.
    w400, w800 = catalog.optic("osfp-400g").power_w, catalog.optic("osfp-800g-2xsr4").power_w
    assert _scale_out(d, "nic") == [("NVIDIA ConnectX-7 NDR", 384, 384 * catalog.nic("connectx-7").power_w)]
    modules = _scale_out(d, "transceiver")
    assert modules[0] == ("node end: 400G OSFP/QSFP112 transceiver (SR4/DR4)", 384, 384 * w400)
    twin = "800G OSFP twin-port transceiver (2x400G SR4/DR4)"
    assert modules[1:] == [(f"{end} end: {twin}", 192, 192 * w800) for end in ("leaf", "leaf", "spine")]
    # the bandwidth a GPU sees is unchanged: 3 x 400G = 150 GB/s; bisection 128 / 2 x 150 GB/s = 9.6 TB/s
    assert d["bisection_bytes_per_s"] == pytest.approx(9.6e12)


def test_three_nics_graph_keeps_150_gb_per_gpu_over_400g_uplinks(tmp_path):
    # A GPU's three NIC links run between the same two devices (the GPU and its leaf): one graph link of
    # 3 x 50 GB/s; the leaf-spine links are 400G each (50 GB/s).
    topo = build_topology(resolve_cluster(cluster_file(tmp_path, THREE_NICS, "n3.yaml")))
    assert topo.gpu_nic_bytes_per_s(0) == pytest.approx(150e9)
    assert topo.link_capacity_bytes_per_s[topo.leaf_uplinks[0, 0, 0]] == pytest.approx(50e9)
    assert topo.spec.nics_per_node == 24  # NCCL's NICs of a node: 3 per GPU
    # whole nodes per leaf: GPUs 0-15 (nodes 0, 1) on leaf 0, GPUs 16-31 on leaf 1
    assert list(topo.leaf_of_gpu[[0, 15, 16, 127]]) == [0, 0, 1, 7]


def test_three_nics_per_gpu_do_not_fit_one_tier_of_128_ports(tmp_path):
    # By hand: 384 NIC ports of 400G > the 128 ports of one 51.2 Tb/s switch at 400G (not "128 GPUs on
    # radix-42 switches", the bundled 1.2T link of before): one clear line, exit 2.
    path = cluster_file(tmp_path, THREE_NICS.replace("tiers: 2", "tiers: 1"), "n3.yaml")
    r = CliRunner().invoke(app, ["cluster", "show", path, "--json"])
    assert r.exit_code == 2
    assert "384 NIC ports do not fit one tier of radix-128 switches" in r.output
    assert "Traceback" not in r.output


def test_two_200g_nics_per_gpu_fill_one_256_port_switch(tmp_path):
    # By hand: 2 x 200G per GPU, 16 nodes: 256 links of 200G; the 51.2 Tb/s switch has 256 ports at 200G
    # (its logical-port cap), so one tier of one switch holds them; one 200G QSFP56 module per NIC. Before,
    # the two NICs were one 400G link: 128 cables and 128 400G modules.
    text = TWO_NICS_200G.replace("tiers: 2", "tiers: 1")
    d = show_json(cluster_file(tmp_path, text, "n2.yaml"))
    assert _fabric(d) == ({"leaf": 1}, {"nic-leaf": 256})
    assert _scale_out(d, "transceiver")[0][:2] == ("node end: 200G QSFP56 HDR transceiver", 256)
    assert d["bisection_bytes_per_s"] == pytest.approx(128 / 2 * 50e9)  # 2 x 25 GB/s per GPU
    r = CliRunner().invoke(app, ["cluster", "show", cluster_file(tmp_path, text, "n2.yaml"), "--nodes", "17"])
    assert r.exit_code == 2 and "272 NIC ports do not fit one tier of radix-256 switches" in r.output


def test_two_200g_nics_two_tiers(tmp_path):
    # By hand: 256 ports of 200G on 256-port leaves, 128 down / 128 up at 1:1; a node's 16 ports whole, 8
    # nodes (128 ports) a leaf: 2 leaves; 256 uplinks on one 256-port spine.
    d = show_json(cluster_file(tmp_path, TWO_NICS_200G, "n2.yaml"))
    assert _fabric(d) == ({"leaf": 2, "spine": 1}, {"nic-leaf": 256, "leaf-spine": 256})


def test_nics_and_planes_that_do_not_divide_are_refused(tmp_path):
    # 3 NICs over 2 planes: one plane would take more of a GPU's NICs than the other. One line, exit 2.
    text = THREE_NICS.replace("nics_per_gpu: 3", "nics_per_gpu: 3\n  planes: 2")
    r = CliRunner().invoke(app, ["cluster", "show", cluster_file(tmp_path, text, "n3p2.yaml")])
    assert r.exit_code == 2
    assert "nics_per_gpu=3 with planes=2" in r.output and "Traceback" not in r.output


def test_four_nics_over_two_planes_are_two_links_a_plane(tmp_path):
    # By hand: 4 x 400G per GPU over 2 planes: 2 NICs a plane, each its own 400G link; per plane 16 x 8 x 2
    # = 256 ports of 400G, 2-tier, 64 down a leaf: a node's 16 ports whole, 4 nodes a leaf, 4 leaves of 64
    # up, 256 uplinks on 2 spines; two planes: 8 leaves, 4 spines, 512 + 512 cables.
    text = THREE_NICS.replace("nics_per_gpu: 3", "nics_per_gpu: 4\n  planes: 2")
    d = show_json(cluster_file(tmp_path, text, "n4p2.yaml"))
    assert _fabric(d) == ({"leaf": 8, "spine": 4}, {"nic-leaf": 512, "leaf-spine": 512})
