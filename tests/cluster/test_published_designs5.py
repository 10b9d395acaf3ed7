"""Blind check of fabric sizing, optics and power, fifth set: published designs the model was not built on.

Each test describes a published design with a cluster file (or a preset resized), runs the product as a user
would (``aifabric cluster show --json`` or the Python API) and asserts the published figure: counts exactly
where the design is exact, watts within 10 %, with its source and the hand derivation. Figures the model
misses are in ``MISSED`` (published, predicted, what is missing); the Vera Rubin rack's test re-measures the
product's figure, so a fix shows up as a failure there.

Sources (none in the project's earlier source lists; cloudswit.ch is Asterfusion's site, whose 256K design
and flowlet pages earlier rounds read):
- [AST-M] Asterfusion, "Middle-to-Large Scale AI Compute Backend Fabric Configuration Guide" (cloudswit.ch/
  implementation/m-compute-backend-fabric-configuration): "64 compute nodes (256 GPUs total, 4 per server).
  The deployment includes 6 CX864E-N: 2 Spine nodes and 4 Leaf nodes", rail-optimised, "NIC N to Leaf N".
- [AST-S] Asterfusion, "Compute Backend Fabric Configuration Guide" for small clusters (cloudswit.ch/
  implementation/s-compute-backend-fabric-configuration-guide): rail-only, "32 compute nodes (128 GPUs total,
  4 per server), with 4 CX732Q-N switches deployed as Leaf nodes", "Single-tier Clos architecture".
- [SHKE] "Understanding SuperPOD construction" (shke.com.cn/?p=7546): an SU of 32 DGX H100, 256 GPUs, "8
  Leaf switches"; "A single Leaf switch provides 32 ports for server connections, while the remaining 32
  ports are used for Spine switch uplinks".
- [CN] Cornelis Networks, CN5000 product family, "Director Class Switch" (docs.cornelis.com/en/
  cn5000-product-family-descriptions/fabric-hardware-components/director-class-switch.html): "576 ports, each
  capable of 400 Gbps"; "12 vertical Leaf Modules, with each module providing 48 ports at 400 Gbps"; "six
  horizontal Spine Modules ... creating a robust two-tier fat-tree topology"; each leaf module has "48
  internal 400 Gbps system ports".
- [CE] cloudengined.com, "NVIDIA GPU Compute Network Reference Architecture" scale profiles
  (cloudengined.com/page-architecture.jsx): H200/B200 8-rail "gpus: 128, servers: 16, nics: 128, leaf: 0,
  tor: 1, ... power: 163.2"; GB200 NVL72 4-rail power by size, 144 GPUs 249.7 kW to 6,912 GPUs 12,111 kW;
  GB300 NVL72 on "TH5 800G, Spine/Leaf": 144 GPUs "spine: 3, leaf: 6, oOsfp: 144, oMpo: 288, oOsfp2: 144,
  uOsfp: 144, uMpo: 288, uOsfp2: 144"; 1,728 GPUs "spine: 24, leaf: 48", 1,728 of each module.
- [LL-BOM] Lossless Network, "Sizing & Bill of Materials" (losslessnetwork.com/learn/cluster-build-guide/
  sizing-and-bill-of-materials; the site's cluster-sizing page is an earlier round's): pod sizes of 8-GPU
  servers, "64 GPUs | 8 x 8-GPU | 8 (1 per rail, 8 ports each) | 0", "256 GPUs | 32 x 8-GPU | 8 (1 per rail,
  32 ports each) | 4", "1024 GPUs | 128 x 8-GPU | 16 (2 per rail with super-spine) | 8"; "16 GPUs | 2 x
  8-GPU | 0 (direct server-to-server DAC, one per rail) | 0"; leaves and spines "Spectrum-4, Arista 7060X,
  Tomahawk white-box".
- [SAND] "From Sand to Superintelligence", chapter 14 "The NVL72 Rack" (regantih.github.io/reports-lab/
  sand-to-superintelligence/chapters/14-nvl72.html): a Vera Rubin NVL72 rack "draws roughly 190-230
  kilowatts depending on whether the rack is tuned for energy efficiency (Max Q) or peak performance (Max P)".

Fix this check made (the largest miss with a sourced mechanism): Tomahawk 5 class switches carry their 64
cages of 800GbE (Asterfusion CX864E-N "64x800G"), so an 800G link's switch end takes one single-port 800G
module, not half a 2 x 800G one: the GB300 144-GPU row's optics 360 -> 576 modules (published 576).
"""

from __future__ import annotations

import pytest
from tests.clusters import cluster_file, scale_out_counts, show_json

from aifabric.cluster.power import PowerBudget, cluster_power
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.topology import build_topology

# [AST-M]: 4-GPU servers, one 400G NIC per GPU, rail-optimised over four rails on CX864E-N (51.2 Tb/s,
# 64 x 800G, Tomahawk 5 class). Back-end fabric only, as the guide.
AST_M = """\
name: asterfusion-256
accelerator: h100-sxm
gpus_per_node: 4
nodes: 64
scale_up: {kind: nvswitch}
scale_out: {nic: connectx-7, fabric: ethernet, switch: tomahawk5-51t, rail_optimized: true}
front_end: null
management: null
"""

# [AST-S]: the same servers, 32 of them, one tier of CX732Q-N (32 x 400G QSFP-DD: its radix at 400G).
AST_S = AST_M.replace("nodes: 64", "nodes: 32").replace(
    "rail_optimized: true", "rail_optimized: true, tiers: 1, radix: 32"
)

# [SHKE]: DGX H100, 8 x ConnectX-7 NDR, rail-optimised on QM9700 (64 x 400G), one SU, two tiers.
DGX_SU = """\
name: dgx-h100-su
accelerator: h100-sxm
gpus_per_node: 8
nodes: 32
scale_up: {kind: nvswitch}
scale_out: {nic: connectx-7, fabric: infiniband, switch: quantum-2-qm9700, rail_optimized: true, tiers: 2}
front_end: null
management: null
"""

# [CN]: the director's 576 external 400G ports as 576 single-port endpoints; its modules as radix-96
# switches (a leaf module: 48 external + 48 internal ports). The switch named only carries the 400G ports.
DIRECTOR = """\
name: cn5000-director
accelerator: h100-pcie
gpus_per_node: 1
nodes: 576
scale_out: {nic: connectx-7, fabric: infiniband, switch: quantum-x800-q3400, radix: 96, tiers: 2}
front_end: null
management: null
"""

# [LL-BOM]: HGX H100 servers, one 400G NIC per GPU, rail-optimised on a 51.2 Tb/s switch (128 x 400GbE).
LL_POD = """\
name: lossless-pod
accelerator: h100-sxm
gpus_per_node: 8
nodes: 8
scale_up: {kind: nvswitch}
scale_out: {nic: connectx-7, fabric: ethernet, switch: spectrum-4-sn5600-400g, rail_optimized: true}
front_end: null
management: null
"""

# [CE] H200/B200 8-rail: 16 HGX H200 servers (one 400G NIC per GPU), one SN5600 of 128 x 400GbE.
H200_16 = """\
name: h200-16
accelerator: h200-sxm
gpus_per_node: 8
nodes: 16
scale_up: {kind: nvswitch}
scale_out:
  {nic: connectx-7, fabric: ethernet, switch: spectrum-4-sn5600-400g, rail_optimized: false, tiers: 1}
front_end: null
management: null
"""

# [CE] GB300 NVL72: 4-GPU trays, one 800G ConnectX-8 per GPU, on Tomahawk 5 (64 x 800GbE).
GB300_TH5 = """\
name: gb300-th5
accelerator: gb300
gpus_per_node: 4
gpus: 144
scale_up: {kind: nvswitch, gpus: 72}
scale_out: {nic: connectx-8, fabric: ethernet, switch: tomahawk5-51t, rail_optimized: true, rails: 4}
front_end: null
management: null
"""


def _server_watts(budget: PowerBudget, nic_networks: tuple[str, ...]) -> float:
    """What the servers (or racks) draw: compute lines, the scale-up switches and the NICs of the networks
    named."""
    return budget.compute_watts + sum(
        x.watts
        for x in budget.inventory.lines
        if x.network == "scale-up" or (x.item == "nic" and x.network in nic_networks)
    )


def _shape(path: str) -> tuple[int, int]:
    shape = build_topology(resolve_cluster(path)).shape
    assert shape is not None
    return shape.leaf_down, shape.leaf_up


def test_asterfusion_256_gpus_on_four_rail_leaves_and_two_spines(tmp_path):
    # [AST-M]: 6 CX864E-N, 4 leaves and 2 spines, for 64 servers of 4 GPUs. By hand: one leaf per rail,
    # each taking its rail's 64 NICs; at 400G a 51.2 Tb/s switch has 128 ports, so a leaf has 64 down and
    # 64 up (1:1) and the 4 x 64 = 256 uplinks fill 2 spines of 128. (At 800G per NIC a leaf's 64 ports
    # would all face the servers: the published 4 + 2 close only at 400G.)
    path = cluster_file(tmp_path, AST_M, "ast-m.yaml")
    d = show_json(path)
    assert d["tiers"] == 2
    assert scale_out_counts(d["parts"], "switch") == {"leaf": 4, "spine": 2}
    assert scale_out_counts(d["parts"], "cable") == {"nic-leaf": 256, "leaf-spine": 256}
    assert _shape(path) == (64, 64)


def test_asterfusion_128_gpus_rail_only_one_leaf_per_rail(tmp_path):
    # [AST-S]: 4 CX732Q-N leaves for 32 servers of 4 GPUs, one tier, "NIC N to Leaf N". By hand: rail k's
    # 32 NICs fill the 32 ports of leaf k; four rails, four leaves, no spine.
    d = show_json(cluster_file(tmp_path, AST_S, "ast-s.yaml"))
    assert d["tiers"] == 1
    assert scale_out_counts(d["parts"], "switch") == {"leaf": 4}
    assert scale_out_counts(d["parts"], "cable") == {"nic-leaf": 128}


def test_shke_dgx_h100_su_has_eight_leaves_of_32_down_32_up(tmp_path):
    # [SHKE]: an SU of 32 DGX H100 (256 GPUs) has 8 leaves, each with 32 server ports and 32 spine uplinks.
    # By hand: 8 rails x 32 nodes, one 64-port leaf per rail at 1:1.
    path = cluster_file(tmp_path, DGX_SU, "su.yaml")
    d = show_json(path)
    assert scale_out_counts(d["parts"], "switch")["leaf"] == 8
    assert scale_out_counts(d["parts"], "cable") == {"nic-leaf": 256, "leaf-spine": 256}
    assert _shape(path) == (32, 32)


def test_cornelis_director_is_a_two_tier_fat_tree_of_96_port_modules(tmp_path):
    # [CN]: 576 external 400G ports on 12 leaf modules of 48 (plus 48 internal ports each) and 6 spine
    # modules. By hand: radix 96 at 1:1 is 48 down / 48 up; 576 / 48 = 12 leaves; their 12 x 48 = 576
    # uplinks on 96-port spines, 6 spines.
    path = cluster_file(tmp_path, DIRECTOR, "cn.yaml")
    d = show_json(path)
    assert scale_out_counts(d["parts"], "switch") == {"leaf": 12, "spine": 6}
    assert scale_out_counts(d["parts"], "cable") == {"nic-leaf": 576, "leaf-spine": 576}
    assert _shape(path) == (48, 48)


# [LL-BOM] rows: (nodes, scale_out fields added, switches). By hand: 64 GPUs, one tier, a leaf per rail of
# 8 NICs; 256 GPUs, 8 leaves of 32 down / 32 up, their 256 uplinks on 4 spines of 64 ports (the 64 x 400G
# Arista 7060X / Tomahawk 4 class: radix 64); 1,024 GPUs on 128 x 400G (Spectrum-4): 2 leaves per rail of
# 64 down / 64 up, 16 leaves, 1,024 uplinks on 8 spines of 128.
LL_ROWS = [
    (8, "tiers: 1", {"leaf": 8}),
    (32, "radix: 64", {"leaf": 8, "spine": 4}),
    (128, "tiers: 2", {"leaf": 16, "spine": 8}),
]


@pytest.mark.parametrize(("nodes", "fields", "switches"), LL_ROWS)
def test_lossless_network_pod_sizes(tmp_path, nodes, fields, switches):
    text = LL_POD.replace("rail_optimized: true", f"rail_optimized: true, {fields}")
    d = show_json(cluster_file(tmp_path, text, "pod.yaml"), "--nodes", str(nodes))
    assert scale_out_counts(d["parts"], "switch") == switches
    assert scale_out_counts(d["parts"], "cable")["nic-leaf"] == nodes * 8


def test_cloudengined_h200_128_gpus_on_one_switch(tmp_path):
    # [CE]: 128 GPUs, 16 servers, 128 NICs, "leaf: 0, tor: 1": every NIC on one switch. By hand: 128 NICs
    # at 400G on one SN5600 of 128 x 400GbE, one tier, 128 cables. Expressed as one tier, not rail-wired
    # (the model wires rails to a leaf each; see MISSED for the file that names neither).
    d = show_json(cluster_file(tmp_path, H200_16, "h200.yaml"))
    assert d["tiers"] == 1
    assert scale_out_counts(d["parts"], "switch") == {"leaf": 1}
    assert scale_out_counts(d["parts"], "cable") == {"nic-leaf": 128}


def test_cloudengined_h200_16_servers_draw_163_kw(tmp_path):
    # [CE]: "servers: 16 ... power: 163.2" kW for the servers. By hand: DGX H200 maximum system power
    # 10.2 kW (catalogue, NVIDIA DGX H200) x 16 = 163.2 kW; the model's GPUs, CPUs, NVSwitches, NICs and
    # rest of node add to the node maximum.
    budget = cluster_power(build_topology(resolve_cluster(cluster_file(tmp_path, H200_16, "h200.yaml"))))
    server_w = _server_watts(budget, ("scale-out",))
    assert server_w == pytest.approx(163.2e3, rel=0.10)


# [CE] GB200 NVL72 4-rail: (GPUs, published kW). By hand per rack: 72 x 1.2 kW GPUs + 18 trays' Grace pairs
# and rest to the tray's 5.4 kW maximum (97.2 kW), NVLink switches, NICs, and the fabric's share: ~125 kW;
# 249.7 / 2 = 124.9, 12,111 / 96 = 126.2 kW per rack published.
GB200_POWER = [
    (144, 249.7),
    (216, 380.0),
    (432, 759.0),
    (864, 1518.0),
    (1728, 3036.0),
    (3456, 6055.0),
    (6912, 12111.0),
]


@pytest.mark.parametrize(("gpus", "kw"), GB200_POWER)
def test_cloudengined_gb200_nvl72_power_by_size(gpus, kw):
    # The preset (QM9700 back end, BlueField-3 front end, OOB) resized to the row's racks; two tiers to
    # 1,728 GPUs, three beyond. Model: 256.9, 373.2, 743.0, 1,478, 2,950, 6,147 kW (within 3 %).
    d = show_json("gb200-nvl72", "--nodes", str(gpus // 4))
    assert d["gpus"] == gpus
    assert d["total_watts"] == pytest.approx(kw * 1e3, rel=0.10)


def test_cloudengined_gb300_800g_optics_one_module_per_link_end(tmp_path):
    # [CE] GB300, 144 GPUs on TH5 800G: 144 NIC-end OSFPs, 144 at the leaves' server ports, 144 + 144 at the
    # two ends of the uplinks (oOsfp, oOsfp2, uOsfp, uOsfp2): 576, four per GPU. By hand: a Tomahawk 5
    # box's 64 cages run 800GbE each (CX864E-N "64x800G"), so every 800G link end takes one single-port
    # 800G module; the model's 144 uplinks (8 leaves of 18 up) give 144 + 144. Before the cages were
    # known the switch ends shared 1.6T twin-port modules: 144 + 72 x 3 = 360.
    d = show_json(cluster_file(tmp_path, GB300_TH5, "gb300.yaml"))
    optics = [p for p in d["parts"] if p["item"] == "transceiver" and p["network"] == "scale-out"]
    assert [(p["count"], p["links"]) for p in optics] == [(144, 144)] * 4
    assert {p["part"].split(": ")[1] for p in optics} == {"800G OSFP single-port transceiver (DR8/SR8)"}


def test_vera_rubin_rack_power_remeasured():
    # [SAND]: a Vera Rubin NVL72 rack draws 190-230 kW (Max Q / Max P). The model's rack: 72 Rubin GPUs at
    # 1.8 kW (an estimate) + 36 Vera at 300 W = 140.4 kW, NVLink 6 switches 14.3 kW, 72 ConnectX-9 3.6 kW
    # and 36 BlueField-3 5.4 kW: 163.7 kW, 14 % under the Max-Q figure (MISSED: no rest-of-tray line).
    budget = cluster_power(build_topology(resolve_cluster("rubin-nvl72", nodes=18)))
    rack_w = _server_watts(budget, ("scale-out", "front-end"))
    assert rack_w == pytest.approx(163.7e3, rel=0.01)
    assert rack_w < 0.9 * 190e3


MISSED = {
    "Lossless Network, 16-GPU pod": "0 switches published (2 servers, 'direct server-to-server DAC, one per "
    "rail') vs 8 leaves predicted (one tier, 2 nodes): the model always puts a switch between nodes; a "
    "switchless back-end of two nodes cabled NIC to NIC is the missing mechanism",
    "cloudengined H200 8-rail, 16 servers, the file naming no tiers": "1 switch published ('leaf: 0, tor: "
    "1') vs 8 leaves + 1 spine predicted (`aifabric cluster show` of 16 H200 nodes, rail_optimized: true, "
    "SN5600 400G, tiers unnamed): a file that names no tiers gets two (or three), never one, and a "
    "rail-optimised tier gives each rail its own leaf even when every NIC fits one switch (128 NICs, 128 "
    "ports); the published design puts all rails on one switch. Named as one un-railed tier it is built "
    "as published (test above); choosing one tier, and folding rails onto a switch, is the missing "
    "mechanism (Lossless Network's 64-GPU pod, tested above, keeps a leaf of 8 ports per rail where one "
    "switch would hold all 64 NICs: folding is a design choice, not a rule)",
    "cloudengined GB300 NVL72 on TH5 800G, 144 GPUs": "6 leaves + 3 spines published vs 8 leaves + 3 spines "
    "predicted: the model's leaves come in SUs of one leaf per rail (4 rails), 2 SUs of 18 down / 18 up; "
    "6 leaves of 24 / 24 keep no rail alignment over 4 rails, the model has no un-railed SU",
    "cloudengined GB300 NVL72 on TH5 800G, 1,728 GPUs": "48 leaves + 24 spines published vs 56 leaves + 31 "
    "spines predicted: 1,728 uplinks over 24 spines are 72 per spine, more than a 64-port 800G switch has; "
    "the published counts are not buildable at 1:1 on the named switch, the model builds what is",
    "From Sand to Superintelligence, Vera Rubin NVL72 rack": "190-230 kW published vs 163.7 kW predicted "
    "(GPUs 129.6, CPUs 10.8, NVLink switches 14.3, NICs 9.0): the vera-rubin power entry has no node "
    "maximum (NVIDIA publishes none), so the rest of the tray (memory, BlueField-4, fans and pumps, power "
    "conversion) is missing; a tray maximum of (190 - 14.3) / 18 = 9.8 kW from this rack figure would "
    "close it, but would be fitted to the one figure it is checked against",
    "Compal HGX Rubin NVL8 (as reported by ngtimes.org, 2026-06-02)": "about 24 kW per 2U 8-GPU server "
    "published vs 17.0 kW predicted (`vera-rubin`, 8 GPUs in one NVSwitch node: GPUs 14.4, the tray's CPU "
    "figure 0.6, NVSwitch 1.6, ConnectX-9 0.4): the same missing rest of node as the NVL72 rack, and an x86 "
    "host the vera-rubin entry does not describe; spreading the rack's 26 kW gap over its 72 GPUs (0.37 kW "
    "each) would still leave this server 17 % short, so no single tray figure serves both",
}


def test_missed_entries_name_the_figures():
    assert all(" vs " in why for why in MISSED.values())
