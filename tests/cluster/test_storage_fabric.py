"""A storage fabric and an in-band management network of their own, as NVIDIA's DGX SuperPOD RAs draw them.

Sources (each figure below names its own):

- [H100RA] NVIDIA DGX SuperPOD H100 RA, Network Fabrics (docs.nvidia.com/dgx-superpod/reference-architecture-
  scalable-infrastructure-h100/latest/network-fabrics.html): "DGX SuperPOD configurations utilize four network
  fabrics: Compute Fabric, Storage Fabric, In-Band Management Network, Out-of-Band Management Network"; "each
  pair of in-band management and storage ports provide parallel pathways into the DGX H100 system"; 127 nodes
  in 4 SUs (Table 4); the in-band network's switch is the SN4600C (its Figure 9).
- [BASEPOD] NVIDIA DGX BasePOD RA, Core Components: DGX H100/H200 "2x dual-port QSFP112 NVIDIA ConnectX-7
  VPI, up to 400 Gb/s InfiniBand/Ethernet"; DGX B200 "2x dual-port QSFP112 NVIDIA BlueField-3 DPU", "each
  pair of dual-port BlueField-3 HCAs (NIC mode) provide parallel pathways to the storage and management
  fabrics".
- [HGXRA] NVIDIA HGX AI Factory Enterprise RA, Network Logical Architecture: the nodes join "using two 200 GbE
  ports to two separate switches to provide redundancy" (dual-homing: port k on leaf group k).
- [LVL] levelupit.xyz, "Designing the network fabric for a 4,000-GPU B200 cluster": 500 nodes, "two 100GbE
  NICs for the dedicated storage network", "1,000 storage Ethernet ports (two per node, dedicated storage
  I/O)", "1,000 frontend Ethernet ports", "500 OOB management ports"; the product folded that storage
  network into the front-end before it had a storage fabric (test_published_other_half6.py).
- [KED] Kedios, "B300 Server Farm & Network Tower Architecture" (neocloud.kedios.io): 32 B300 servers, each
  with "2x BlueField-3 3220 DPU (400 Gb/s)", "Eth uplinks: 2x 400 Gb/s to Spectrum-4"; network rack N2 holds
  "2x Spectrum-4" for that Ethernet side.

The RA pages reached here give the storage and in-band fabrics' port counts per node and their switches, not
their per-SU switch tables, so the switch and cable counts below are hand derivations from those ports and
the counting rule of :mod:`aifabric.cluster.access` (each derivation in its comment); [KED] and [LVL] are
published counts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.refusal import refused
from tests.cluster.test_published_other_half6 import KED as KED_FRONT_END_ONLY
from tests.cluster.test_published_other_half6 import LVL as LVL_FRONT_END_ONLY
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.inventory import Inventory, inventory
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import NETWORKS, build_topology
from aifabric.storage import checkpoint_size, checkpoint_time
from aifabric.storage.paths import storage_network

EXAMPLE = Path(__file__).parents[2] / "examples" / "dgx-h100-superpod-four-fabrics.yaml"


def _cli(args: list[str]) -> dict:
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _inv(spec: ClusterSpec) -> Inventory:
    return inventory(build_topology(spec))


def _switches(inv: Inventory, network: str) -> dict[str, int]:
    return {
        line.part.split(":")[0]: line.count
        for line in inv.lines
        if line.network == network and line.item == "switch"
    }


def _cables(inv: Inventory, network: str) -> dict[str, int]:
    return {line.part: line.count for line in inv.lines if line.network == network and line.item == "cable"}


def _h100_ra(nodes: int, **changes: object) -> ClusterSpec:
    return ClusterSpec.from_yaml(EXAMPLE).with_changes(nodes=nodes, **changes)


# ---- [H100RA] per SU: storage (QM9700) and in-band (SN4600C), two ports per node, dual-homed ---------


@pytest.mark.parametrize(
    ("nodes", "leaves", "spines", "uplinks"),
    [
        # 1 SU, 31 nodes: each port group 31 ports; a QM9700 leaf at 1:1 takes 32 down -> one leaf per group,
        # 2 leaves, no spine (port k of every node and of the appliances meets on leaf k).
        (31, 2, 0, 0),
        # 2 SUs, 63 nodes: ceil(63 / 32) = 2 leaves per group, 4 leaves x 32 up = 128 uplinks / 64 = 2 spines.
        (63, 4, 2, 128),
        # 3 SUs, 95 nodes: 3 per group, 6 leaves, 192 uplinks on 3 spines.
        (95, 6, 3, 192),
        # 4 SUs, 127 nodes [H100RA Table 4]: 4 per group, 8 leaves, 256 uplinks on 4 spines.
        (127, 8, 4, 256),
    ],
)
def test_h100_ra_storage_fabric_per_su(nodes: int, leaves: int, spines: int, uplinks: int) -> None:
    inv = _inv(_h100_ra(nodes))
    assert _switches(inv, "storage") == ({"leaf": leaves, "spine": spines} if spines else {"leaf": leaves})
    cables = {"node-leaf": 2 * nodes} | ({"leaf-spine": uplinks} if uplinks else {})
    assert _cables(inv, "storage") == cables
    # the in-band network's SN4600C has 64 x 100GbE, the same 32 down / 32 up at 1:1: the same shape
    assert _switches(inv, "in-band") == _switches(inv, "storage")
    assert _cables(inv, "in-band") == cables


def test_single_homed_ports_share_one_leaf_group() -> None:
    # dual_homed false: 31 nodes x 2 ports = 62 ports in one group, ceil(62 / 32) = 2 leaves that now need
    # 2 x 32 = 64 uplinks on 1 spine (dual-homed, each port group was one leaf and needed none).
    inv = _inv(_h100_ra(31, **{"storage_fabric.dual_homed": False}))
    assert _switches(inv, "storage") == {"leaf": 2, "spine": 1}
    assert _cables(inv, "storage") == {"node-leaf": 62, "leaf-spine": 64}


def test_h100_ra_four_networks_by_name_in_cluster_show() -> None:
    # ``cluster show`` lists every part with its network: 254 storage and 254 in-band ports (127 x 2,
    # [H100RA]), 1,016 compute NICs (127 x 8), 127 BMC ports, and no front-end (its traffic is these two).
    show = _cli(["cluster", "show", str(EXAMPLE)])
    nics = {net: 0 for net in NETWORKS}
    for p in show["parts"]:
        if p["item"] == "nic":
            nics[p["network"]] += p["count"]
    assert nics == {
        "scale-up": 0,
        "scale-out": 1016,
        "front-end": 0,
        "storage": 254,
        "in-band": 254,
        "management": 127,
    }
    assert show["storage_network"] == "storage"
    assert {"storage", "in-band"} <= set(show["watts"])


def test_in_band_ports_run_at_the_sn4600c_port_speed() -> None:
    # [BASEPOD]: the ConnectX-7 ports run "up to 400 Gb/s"; on SN4600C's 100GbE ports [H100RA Fig. 9] each
    # link runs at 100 Gb/s: 2 x 12.5 GB/s per node, 3.125 GB/s per GPU on the ladder.
    show = _cli(["cluster", "show", str(EXAMPLE)])
    rung = next(r for r in show["networks"] if r["network"] == "in-band")
    assert rung["per_direction_bytes_per_s"] == pytest.approx(2 * 12.5e9 / 8)


def test_storage_appliance_ports_join_the_storage_leaves() -> None:
    # 16 appliance ports on the 4-SU fabric: 8 per port group, 127 + 8 = 135 per group -> ceil(135 / 32) = 5
    # leaves per group, 10 leaves, 320 uplinks on 5 spines; 16 appliance-leaf cables.
    spec = _h100_ra(127, **{"storage_fabric.appliance_ports": 16})
    inv = _inv(spec)
    assert _switches(inv, "storage") == {"leaf": 10, "spine": 5}
    assert _cables(inv, "storage") == {"node-leaf": 254, "appliance-leaf": 16, "leaf-spine": 320}


def test_appliance_ports_default_to_the_storage_servers_ports() -> None:
    # storage.units x unit_nics where the storage section names the servers' NIC: 8 x 2 = 16, as above.
    spec = _h100_ra(
        127, storage={"system": "ddn-ai400x2-turbo", "units": 8, "unit_nic": "connectx-7", "unit_nics": 2}
    )
    assert spec.storage_appliance_ports == 16
    assert _switches(_inv(spec), "storage") == {"leaf": 10, "spine": 5}


# ---- published counts -----------------------------------------------------------------------------------

#: [LVL]'s cluster as test_published_other_half6.py gives it, its storage network now a fabric of its own.
LVL = LVL_FRONT_END_ONLY + (
    "storage_fabric: {nic: connectx-7, port_speed: 100 Gb/s, ports_per_node: 2, switch: sn4600-frontend}\n"
)


def test_levelupit_storage_network_is_its_own(tmp_path: Path) -> None:
    # Published [LVL]: 4,000 backend, 1,000 front-end, 1,000 storage and 500 OOB ports (exact).
    path = tmp_path / "lvl.yaml"
    path.write_text(LVL)
    show = _cli(["cluster", "show", str(path)])
    ports = {net: 0 for net in ("scale-out", "front-end", "storage", "management")}
    for p in show["parts"]:
        if p["item"] == "nic" and p["network"] in ports:
            ports[p["network"]] += p["count"]
    assert ports == {"scale-out": 4000, "front-end": 1000, "storage": 1000, "management": 500}
    # Hand derivation on SN4600C (64 x 100GbE) at 1:1, dual-homed: 500 ports per group / 32 down = 16 leaves
    # per group, 32 leaves, 32 x 32 = 1,024 uplinks on 16 spines.
    parts = [(p["network"], p["item"], p["part"].split(":")[0], p["count"]) for p in show["parts"]]
    assert [(part, n) for net, item, part, n in parts if (net, item) == ("storage", "switch")] == [
        ("leaf", 32),
        ("spine", 16),
    ]
    assert [(part, n) for net, item, part, n in parts if (net, item) == ("storage", "cable")] == [
        ("node-leaf", 1000),
        ("leaf-spine", 1024),
    ]


#: [KED]'s farm as test_published_other_half6.py gives it, its two BlueField-3 ports a storage fabric of
#: their own on SN5600 (400GbE) rather than a front-end.
KED = KED_FRONT_END_ONLY.replace(
    "front_end: {nic: bluefield-3, nics_per_node: 2}",
    "front_end: null\nstorage_fabric: {nic: bluefield-3, ports_per_node: 2, switch: spectrum-4-sn5600-400g}",
)


def test_kedios_two_spectrum4_switches_for_32_nodes(tmp_path: Path) -> None:
    # Published [KED]: "2x Spectrum-4" for 32 nodes' "2x 400 Gb/s" BlueField-3 ports. Model: SN5600 as 128 x
    # 400GbE at 1:1 takes 64 down per leaf; each port group is 32 ports -> one leaf per group, 2 switches,
    # no spine (exact).
    assert "storage_fabric" in KED
    path = tmp_path / "ked.yaml"
    path.write_text(KED)
    inv = _inv(ClusterSpec.from_yaml(path))
    assert _switches(inv, "storage") == {"leaf": 2}


# ---- invariants -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("network", ["storage", "in-band"])
def test_more_nodes_never_fewer_switches(network: str) -> None:
    counts = [sum(_switches(_inv(_h100_ra(n)), network).values()) for n in range(1, 257, 5)]
    assert counts == sorted(counts), counts


def test_more_appliance_ports_never_fewer_switches() -> None:
    counts = [
        sum(_switches(_inv(_h100_ra(127, **{"storage_fabric.appliance_ports": a})), "storage").values())
        for a in range(0, 200, 9)
    ]
    assert counts == sorted(counts), counts


def test_without_a_storage_fabric_the_front_end_is_unchanged() -> None:
    # Presets have no storage fabric: storage traffic stays on the front-end and no storage or in-band part
    # is listed.
    spec = preset("dgx-h100-superpod")
    assert spec.storage_fabric is None and spec.inband_management is None
    assert storage_network(spec) == "front-end"
    assert not [line for line in _inv(spec).lines if line.network in ("storage", "in-band")]


#: A 70B model on the 4 nodes (TP 8 in a node, DP 4 over the nodes), every node writing its shard.
SIZE = checkpoint_size(70e9, tp=8, dp=4)


def _write_s(spec: ClusterSpec) -> float:
    return checkpoint_time(spec, SIZE).write.seconds


def test_a_storage_fabric_never_slows_a_checkpoint() -> None:
    # The same cluster with its storage traffic on the front-end (2 x 400G BlueField-3, payload 0.96) and on
    # the RA's storage fabric (2 x 400G ConnectX-7, payload 0.983) [H100RA, BASEPOD]: the fabric is no slower,
    # and with the front-end's own ports it gives the same time.
    base = preset("dgx-h100-superpod", nodes=4).with_changes(
        storage={"system": "ddn-ai400x2-turbo", "units": 64}
    )
    ra = base.with_changes(
        storage_fabric={"nic": "connectx-7", "ports_per_node": 2, "switch": "quantum-2-qm9700"}
    )
    same = base.with_changes(storage_fabric={"nic": "bluefield-3", "ports_per_node": 2})
    assert _write_s(ra) <= _write_s(base)
    assert _write_s(same) == pytest.approx(_write_s(base), rel=1e-12)
    bound = checkpoint_time(ra, SIZE).write
    assert bound.bottleneck == "node storage-fabric ports"


def test_more_storage_ports_never_slow_a_checkpoint() -> None:
    base = preset("dgx-h100-superpod", nodes=4).with_changes(
        storage={"system": "ddn-ai400x2-turbo", "units": 64}
    )
    times = [
        _write_s(
            base.with_changes(
                storage_fabric={"nic": "connectx-7", "ports_per_node": p, "switch": "quantum-2-qm9700"}
            )
        )
        for p in (1, 2, 4, 8)
    ]
    assert times == sorted(times, reverse=True), times


def test_an_oversubscribed_storage_leaf_shares_its_uplinks() -> None:
    # 2 x 400G ConnectX-7 at 2:1: the leaf's share of uplinks, 2 x 50 x 0.983 / 2 = 49.15 GB/s, binds.
    spec = preset("dgx-h100-superpod", nodes=4).with_changes(
        storage={"system": "ddn-ai400x2-turbo", "units": 64},
        storage_fabric={
            "nic": "connectx-7",
            "ports_per_node": 2,
            "switch": "quantum-2-qm9700",
            "oversubscription": 2,
        },
    )
    w = checkpoint_time(spec, SIZE).write
    assert w.bottleneck == "storage fabric (leaf uplinks)"
    assert w.rate_bytes_per_s == pytest.approx(49.15e9)


# ---- bad inputs -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ("storage_fabric: {ports_per_node: 0}", "storage_fabric.ports_per_node"),
        ("storage_fabric: {oversubscription: 0.5}", "storage_fabric.oversubscription"),
        ("storage_fabric: {switch: no-such-switch}", "no-such-switch"),
        ("storage_fabric: {port_speed: 400}", "no unit"),
        ("storage_fabric: {appliance_ports: -1}", "storage_fabric.appliance_ports"),
        ("inband_management: {port_speed: 400 Gb/s}", "do not fit"),
        ("inband_management: {nic_ports: 0}", "inband_management.nic_ports"),
        ("inband_management: {homing: dual}", "inband_management.homing"),
    ],
)
def test_bad_fabric_inputs_one_line_exit_2(tmp_path: Path, section: str, needle: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(f"name: bad\naccelerator: h100-sxm\nnodes: 4\n{section}\n")
    refused(["cluster", "show", str(path)], needle)
