"""NICs shared by several GPUs in the spec, the Clos, the topology and the parts list (issue 8).

AWS p4d.24xlarge (AWS EC2 P4 page; aws-ofi-nccl topology/p4d-24xl-topo.xml, case 21): 8 x A100 40GB and
4 x 100 Gb/s EFA, two GPUs and one NIC behind each PCIe switch: ``scale_out.gpus_per_nic: 2``.
"""

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.inventory import inventory
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import build_topology
from aifabric.errors import ConfigError

P4D_YAML = """\
name: p4d
accelerator: a100-sxm-40gb
gpus_per_node: 8
nodes: 4
scale_out: {nic: efa-v1, gpus_per_nic: 2, fabric: ethernet, switch: spectrum-4-sn5600-400g,
            transport: efa-srd}
"""


def test_p4d_counts_four_nics_per_node(tmp_path):
    f = tmp_path / "p4d.yaml"
    f.write_text(P4D_YAML)
    spec = ClusterSpec.from_yaml(f)
    assert spec.nics_per_node == 4 and spec.endpoints_per_node == 4 and spec.n_endpoints == 16
    assert spec.nic_speed_bytes_per_s == pytest.approx(100e9 / 8)  # one NIC: 100 Gb/s = 12.5 GB/s
    assert spec.endpoint_line_rate_bytes_per_s == pytest.approx(12.5e9)
    assert spec.nic_line_rate_bytes_per_s == pytest.approx(12.5e9 / 2)  # a GPU's share of its NIC
    p = preset("aws-p4d")
    assert (p.accelerator, p.gpus_per_node, p.nics_per_node) == ("a100-sxm-40gb", 8, 4)
    assert p.nics_per_node * p.nic_speed_bytes_per_s * 8 == pytest.approx(400e9)  # 400 Gbps per instance


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"scale_out.gpus_per_nic": 3}, "scale_out.gpus_per_nic=3 does not divide gpus_per_node=8"),
        ({"scale_out.gpus_per_nic": 2, "scale_out.nics_per_gpu": 2}, "not both"),
        ({"scale_out.gpus_per_nic": 0}, "scale_out.gpus_per_nic"),
        ({"scale_out.gpus_per_nic": 2, "scale_out.rails": 8}, "scale_out.rails=8 is more than the 4 NIC"),
    ],
)
def test_bad_sharing_is_refused_naming_the_field(changes, needle):
    with pytest.raises(ConfigError, match=needle):
        preset("h100-ib-2node", **changes)


def test_cli_refuses_a_bad_gpus_per_nic_with_one_line(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(P4D_YAML.replace("gpus_per_nic: 2", "gpus_per_nic: 3"))
    r = CliRunner().invoke(app, ["cluster", "show", str(f)])
    assert r.exit_code == 2
    assert "scale_out.gpus_per_nic=3" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_inventory_counts_nics_cables_optics_and_leaf_ports():
    # 4 p4d nodes: 4 x 4 = 16 NICs, one NIC-leaf cable each, one module at each end; the same nodes with
    # a NIC per GPU would need 32 of each. Leaf ports in use = the endpoints of the Clos.
    shared, own = (preset("aws-p4d", nodes=4, **{"scale_out.gpus_per_nic": k}) for k in (2, 1))
    for spec, nics in ((shared, 16), (own, 32)):
        topo = build_topology(spec)
        inv = inventory(topo)
        assert inv.count("scale-out", "nic") == nics
        assert topo.cable_counts["nic-leaf"] == nics
        assert topo.shape is not None and topo.shape.endpoints == nics
        assert topo.shape.n_leaves * topo.shape.leaf_down >= nics
        ends = {ln.part.split(":")[0]: ln.links for ln in inv.lines if ln.item == "transceiver"}
        assert ends["node end"] == nics  # one 100G link per NIC at the node end
    # one NIC for a whole node: 2 nodes of 8 H100 -> 2 NICs, 2 NIC-leaf cables
    one = preset("h100-ib-2node", **{"scale_out.gpus_per_nic": 8})
    assert inventory(build_topology(one)).count("scale-out", "nic") == 2
    assert build_topology(one).cable_counts["nic-leaf"] == 2


def test_gpus_sharing_a_nic_share_its_leaf_cable():
    spec = preset("aws-p4d", nodes=2)
    topo = build_topology(spec)
    up, down = topo.nic_up[0], topo.nic_down[0]
    # GPUs 0 and 1 reach NIC 0 over PCIe: one cable, hung off GPU 0, at one NIC's 12.5 GB/s
    assert up[0] == up[1] and down[0] == down[1] and up[1] != up[2]
    assert topo.link_src[up[1]] == 0
    assert topo.link_capacity_bytes_per_s[up[0]] == pytest.approx(12.5e9)
    # rail k = the node's k-th NIC: GPUs 2, 3 on rail 1; GPU 8 (node 1, NIC 0) on rail 0, same leaf as GPU 0
    assert [int(topo.rail_of(g)) for g in (0, 1, 2, 3, 6, 7, 8)] == [0, 0, 1, 1, 3, 3, 0]
    assert topo.leaf_of_gpu[0] == topo.leaf_of_gpu[1] == topo.leaf_of_gpu[8] != topo.leaf_of_gpu[2]
