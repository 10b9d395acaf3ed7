"""Options that used to be dropped without a word, and the bisection headline the GPUs' PCIe path caps.

- ``scale_out.nic_to_leaf_copper`` with a node cage of several links (``nic_twin_port``,
  ``nic_cage_links``): one passive copper splitter per cage (NVIDIA MCP7Y00, 800G twin-port OSFP to
  2 x 400G; MCP7F80, 400G QSFP-DD to 8 x 50G), no longer one plain DAC per link with the cage ignored.
- ``scale_out.rails`` on a dragonfly: refused with the other Clos-only fields, no longer dropped.
- several NIC ports of a GPU on one plane of a rail-optimised Clos (the builder cabled them all to the
  GPU's one rail leaf): with no ``planes`` named, port k goes on plane k (NVIDIA's DGX SuperPOD B300 RA);
  ``planes`` given below the port count is refused, pointing to ``planes`` or ``rail_optimized: false``.
- the far-end (bisection) headline: at most N/2 x min(NIC, PCIe path), as every engine caps a GPU's
  scale-out bandwidth (``ClusterSpec.nic_effective_bytes_per_s``), saying when the PCIe path binds.
"""

from __future__ import annotations

import pytest
import yaml
from tests.cli.refusal import refused

from aifabric.cluster.headlines import headlines
from aifabric.cluster.inventory import inventory
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec, ScaleOutSpec
from aifabric.cluster.summary import summarize
from aifabric.cluster.topology import build_topology


def _copper(spec: ClusterSpec) -> tuple[tuple[int, int], tuple[int, int], int]:
    """(count, links) of the nic-leaf cable and copper lines, and the node-end transceivers."""
    lines = inventory(build_topology(spec)).lines
    cable = next(x for x in lines if x.item == "cable" and x.part == "nic-leaf")
    dac = next(x for x in lines if x.item == "copper" and x.part.startswith("nic-leaf"))
    ends = [x for x in lines if x.network == "scale-out" and x.item == "transceiver"]
    node_end = sum(x.count for x in ends if x.part.startswith("node end"))
    return (cable.count, cable.links), (dac.count, dac.links), node_end


def test_dgx_h100_twin_port_cages_on_copper_are_one_splitter_per_cage():
    # DGX H100: 8 NDR links per node out of 4 twin-port OSFP cages (DGX SuperPOD H100 RA). By hand, 4 nodes:
    # 32 links, 4 x 4 = 16 cages, so 16 twin-port splitter DACs carrying 32 links; no node-end module.
    spec = preset("dgx-h100-superpod", nodes=4, **{"scale_out.nic_to_leaf_copper": True})
    assert spec.scale_out is not None and spec.scale_out.nic_twin_port
    assert _copper(spec) == ((16, 32), (16, 32), 0)


def test_single_port_nics_on_copper_stay_one_dac_per_link():
    # Without twin-port cages every NIC has its own cage: 4 nodes x 8 = 32 DACs for 32 links.
    spec = preset(
        "dgx-h100-superpod",
        nodes=4,
        **{"scale_out.nic_to_leaf_copper": True, "scale_out.nic_twin_port": False},
    )
    assert _copper(spec) == ((32, 32), (32, 32), 0)


def test_four_link_cages_on_copper_are_one_breakout_dac_per_cage():
    # 2 nodes x 8 ConnectX-7 at 100 Gb/s, four links a 400G cage: 16 links, 8 / 4 = 2 cages per node,
    # 4 breakout DACs (one 400G cage end, four 100G legs each).
    spec = preset(
        "h100-ib-2node",
        **{
            "scale_out.nic_speed": "100 Gb/s",
            "scale_out.nic_cage_links": 4,
            "scale_out.nic_to_leaf_copper": True,
        },
    )
    assert _copper(spec) == ((4, 16), (4, 16), 0)


def _four_h100_nodes(**scale_out: object) -> dict[str, object]:
    """4 x 8 H100 on a ConnectX-7 Ethernet scale-out with ``scale_out`` added, as a spec mapping."""
    return {
        "name": "c",
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "nodes": 4,
        "scale_up": {"kind": "nvswitch"},
        "scale_out": {"nic": "connectx-7", "fabric": "ethernet", **scale_out},
    }


def test_rails_on_a_dragonfly_is_refused_naming_it():
    spec = _four_h100_nodes(topology="dragonfly", rails=8)
    with pytest.raises(ValueError, match=r"scale_out\.rails: a Clos field; scale_out\.topology dragonfly"):
        ClusterSpec.model_validate(spec)


def _far_end(spec: ClusterSpec) -> dict[str, tuple[float, str]]:
    return {h.name: (h.value, h.note) for h in headlines(summarize(spec)) if h.name.startswith("far-end")}


def test_bisection_headline_is_capped_by_a_pcie_gen4_path_to_the_nic():
    # 2 x 8 A100 (PCIe Gen4 x16, A100 datasheet) with one 400 Gb/s ConnectX-7 each on a non-blocking Clos.
    # The fabric carries 16 / 2 x 50 GB/s = 400 GB/s across; a GPU puts at most its x16 link's bulk DMA on
    # the wire: 32 GB/s x 128/130 x 256/280 = 28.806 GB/s (pcie-gen4 in scaleup.yaml), 8 x that = 230.45 GB/s.
    spec = preset("h100-ib-2node").with_changes(accelerator="a100-sxm-80gb")
    assert summarize(spec).bisection_bytes_per_s == pytest.approx(400e9)
    host = 32e9 * 128 / 130 * 256 / 280
    far = _far_end(spec)
    whole, note = far["far-end bandwidth (bisection)"]
    assert whole == pytest.approx(8 * host, rel=1e-4)
    assert "capped by each GPU's PCIe Gen4 x16 path to its NIC, 28.8 GB/s, below the NIC's 50.0 GB/s" in note
    assert far["far-end bandwidth per GPU"][0] == pytest.approx(host, rel=1e-4)


def test_bisection_headline_of_h100_on_pcie_gen5_is_the_fabrics():
    # H100's Gen5 x16 carries 64 GB/s x 0.9002 = 57.6 GB/s, above the NIC's 50 GB/s: the fabric's 400 GB/s.
    whole, note = _far_end(preset("h100-ib-2node"))["far-end bandwidth (bisection)"]
    assert whole == pytest.approx(400e9)
    assert "capped" not in note


def test_two_nics_per_gpu_on_one_rail_plane_are_refused_pointing_to_planes():
    # planes: 1 given with two ports per GPU on a rail-optimised Clos: both ports would share one rail leaf.
    with pytest.raises(ValueError) as err:
        preset("h100-ib-2node").with_changes(**{"scale_out.nics_per_gpu": 2, "scale_out.planes": 1})
    assert (
        "scale_out.planes: 1 plane(s) for 2 NIC ports per GPU (nics_per_gpu=2) on a rail-optimised Clos "
        "would cable 2 of a GPU's ports to its one rail leaf; give scale_out.planes: 2"
    ) in str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_two_nics_per_gpu_on_two_planes_each_take_a_rail_leaf():
    # 2 nodes x 8 H100 x 2 ConnectX-7 (400G), planes: 2. By hand, per plane: 16 ports on 8 rail leaves (one
    # SU of 2 nodes), 2 down / 2 up each at 1:1, 16 uplinks on one 64-port QM9700 spine. Both planes: 16
    # leaves, 2 spines, 32 NIC-leaf and 32 leaf-spine cables; GPU j of either node on leaf j of each plane.
    spec = preset("h100-ib-2node").with_changes(**{"scale_out.nics_per_gpu": 2, "scale_out.planes": 2})
    topo = build_topology(spec)
    assert (topo.switch_counts["leaf"], topo.switch_counts["spine"]) == (16, 2)
    assert (topo.cable_counts["nic-leaf"], topo.cable_counts["leaf-spine"]) == (32, 32)
    assert topo.shape is not None and (topo.shape.leaf_down, topo.shape.leaf_up) == (2, 2)
    assert list(topo.leaf_of_gpu) == list(range(8)) * 2


def test_two_nics_per_gpu_without_planes_take_a_plane_each():
    # No planes named: each of a GPU's two ports goes on its own plane (DGX SuperPOD B300 RA), the same build
    # as planes: 2 above, whether asked of the preset or written in a file section without planes.
    two = preset("h100-ib-2node").with_changes(**{"scale_out.nics_per_gpu": 2})
    assert two.scale_out is not None and two.scale_out.planes == 2
    topo = build_topology(two)
    assert (topo.switch_counts["leaf"], topo.switch_counts["spine"]) == (16, 2)
    back = two.with_changes(**{"scale_out.nics_per_gpu": 1})
    assert back.scale_out is not None and back.scale_out.planes == 1
    section = {"nic": "connectx-7", "nics_per_gpu": 4}
    assert ScaleOutSpec.model_validate(section).planes == 4


def test_two_nics_per_gpu_share_a_leaf_off_rails():
    # rail_optimized: false keeps a GPU's two ports on one leaf: 32 ports of 400G on one 64-port leaf.
    spec = preset("h100-ib-2node").with_changes(
        **{"scale_out.nics_per_gpu": 2, "scale_out.rail_optimized": False}
    )
    assert build_topology(spec).cable_counts["nic-leaf"] == 32


@pytest.mark.parametrize(
    ("scale_out", "needles"),
    [
        ({"topology": "dragonfly", "rails": 8}, ("scale_out.rails: a Clos field",)),
        (
            {"nics_per_gpu": 2, "planes": 1},
            ("scale_out.planes: 1 plane(s)", "nics_per_gpu=2", "rail_optimized: false"),
        ),
    ],
)
def test_cluster_show_refuses_in_one_line(tmp_path, scale_out, needles):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_four_h100_nodes(**scale_out)))
    refused(["cluster", "show", str(path)], *needles)
