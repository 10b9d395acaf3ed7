"""The out-of-band network takes the management port of every managed device, not only the nodes' BMCs.

Sources:
- [H100RA] NVIDIA DGX SuperPOD H100 RA, Out-of-Band Management Network: the OOB fabric "connects the
  management ports of all devices including DGX and management servers, storage, networking gear, rack PDUs";
  Table 4 (4 SU, 127 nodes): 32 leaf + 16 spine QM9700; Table 7: 4 UFM appliances, 5 management servers.
- [GB200UG] DGX GB200 user guide, Rack Configuration: 18 compute trays, 9 NVLink switch trays, "2x TOR
  Switches for management" per rack; compute tray: 2 x BlueField-3. [BFBMC] BlueField BMC software, "OOB
  Network 3-Port Switch Control": one RJ45 OOB port per BlueField. [BCM] Base Command Manager, "Power Shelf
  Integration": 8 power shelves per GB200 rack; NVLink switch trays listed on ipminet0.
- [GB300RA] NVIDIA GB300 NVL72 Enterprise RA, components: "2 SN2201 OOB switches" per rack.
- [B300RA] DGX SuperPOD B300 (XDR) RA: 4 DGX B300 per rack, "three (3) 2U rack PDUs" per rack.
- [RUBINRA] DGX SuperPOD Rubin NVL8 RA, Network Fabrics: the BMCs of the DGX and of its BlueField-4 on OOB.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.inventory import fabric_switches, inventory
from aifabric.cluster.management import management_reachability, management_shape
from aifabric.cluster.presets import preset
from aifabric.cluster.topology import build_topology


def test_gb200_rack_needs_the_two_management_switches_nvidia_ships():
    # [GB200UG]/[BFBMC]/[BCM] per rack: 18 tray BMCs + 18 x 2 BlueField OOB ports + 9 NVLink switch trays +
    # 8 power shelves = 71 ports; a 48-port SN2201 keeps one port for its own management port, 47 left:
    # ceil(71 / 47) = 2 switches per rack, as [GB200UG] "2x TOR Switches" and [GB300RA] "2 SN2201" publish.
    spec = preset("gb200-nvl72")
    shape = management_shape(spec)
    assert shape.racks == 8 and shape.switches_per_rack == 2 and shape.rack_switches == 16
    kinds = dict(shape.ports_by_kind)
    # 8 racks (576 GPUs / 72)
    assert kinds["node BMC"] == 144 and kinds["DPU BMC"] == 288
    assert kinds["NVLink switch tray"] == 72 and kinds["power shelf"] == 64


def test_h100_superpod_127_nodes_counts_every_device():
    # [H100RA], 4 SU / 127 nodes: 127 BMCs, 48 QM9700 (Table 4), 9 servers (Table 7), the front-end's
    # switches; 4 DGX per rack -> 32 racks of one SN2201 (4 ports + its own <= 48). Management racks:
    # 48 + front-end + 9 + 2 aggregation switches' own ports on 47-port SN2201s.
    topo = build_topology(preset("dgx-h100-superpod", nodes=127))
    inv = inventory(topo)
    shape = management_shape(topo.spec, fabric_switches(topo))
    kinds = dict(shape.ports_by_kind)
    front = inv.count("front-end", "switch")
    assert kinds["node BMC"] == 127 and kinds["scale-out switch"] == 48
    assert kinds["front-end switch"] == front and kinds["management server"] == 9
    assert (shape.rack_switches, shape.aggregation_switches) == (32, 2)
    infra = -(-(48 + front + 9 + 2) // 47)
    assert shape.infra_switches == infra
    assert kinds["OOB switch"] == 32 + infra + 2
    assert shape.managed_ports == 127 + 48 + front + 9 + 32 + infra + 2
    # the bill lists each managed kind and every rack switch, compute and management racks alike
    assert inv.count("management", "switch") == 32 + infra + 2
    assert inv.count("management", "port") == shape.managed_ports - 127


def test_bmc_only_keeps_the_nodes_ports_alone():
    # a source that counts only BMCs (test_published_other_half6: "500 OOB management ports" for 500
    # servers) sets devices: bmc, which takes no count of other managed devices (the preset's 9 servers)
    bmc_only = {"management.devices": "bmc", "management.servers": 0}
    spec = preset("dgx-h100-superpod", nodes=127).with_changes(**bmc_only)
    shape = management_shape(spec, {"scale-out": 48})
    assert shape.ports_by_kind == (("node BMC", 127),) and shape.infra_switches == 0
    assert shape.cables == 127 + 2 * 32 + 2


def test_rack_pdus_and_dpu_bmcs_count_per_rack():
    # [B300RA] 4 DGX and 3 PDUs per rack; [RUBINRA] a BlueField BMC beside each node's: 4 x 2 + 3 = 11 ports
    # per rack; 64 nodes -> 16 racks: 128 BMC ports, 48 PDU ports, one SN2201 each.
    spec = preset("dgx-h100-superpod", nodes=64).with_changes(
        **{"management.pdus_per_rack": 3, "management.dpu_bmcs_per_node": 1}
    )
    shape = management_shape(spec)
    kinds = dict(shape.ports_by_kind)
    assert (kinds["node BMC"], kinds["DPU BMC"], kinds["rack PDU"]) == (64, 64, 48)
    assert shape.racks == 16 and shape.switches_per_rack == 1


def test_a_management_rack_switch_down_cuts_no_node():
    # the management racks' switches follow the compute racks' in mgmt-rack: 127 nodes -> 32 compute racks
    topo = build_topology(preset("dgx-h100-superpod", nodes=127))
    fs = fabric_switches(topo)
    assert management_reachability(topo, ["mgmt-rack:32"], fs).reachable_bmcs == 127
    assert management_reachability(topo, ["mgmt-rack:31"], fs).unreachable_bmcs == (124, 125, 126)
    assert management_reachability(topo, ["mgmt-agg:*"], fs).reachable_bmcs == 0


def test_cli_mgmt_reports_ports_by_kind():
    r = CliRunner().invoke(app, ["cluster", "mgmt", "--nodes", "16", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["ports_by_kind"]["node BMC"] == 16
    assert out["managed_ports"] == sum(out["ports_by_kind"].values())
    text = CliRunner().invoke(app, ["cluster", "mgmt", "--nodes", "16"])
    assert text.exit_code == 0 and "16 node BMC" in text.stdout and "scale-out switch" in text.stdout
