"""A full-mesh scale-up is wired as one cable per pair of GPUs, with no switch.

AMD MI300X platform: 8 GPUs, 7 xGMI links each, one to each peer (catalogue ``infinity-fabric-mi300``,
``topology: full_mesh``): 7 x 128 GB/s both ways = 896 GB/s per GPU, 64 GB/s per direction per link
(16 lanes at 32 Gb/s, Wheeler's Network, January 2024). A 4 x GH200 node (``gh200-quad``) wires its NVLink
all-to-all: 3 bundles of 6 links, 150 GB/s per direction each.
"""

import numpy as np
import pytest
from tests.clusters import mi300x_node, mi300x_nodes

from aifabric.cluster.inventory import inventory
from aifabric.cluster.presets import preset
from aifabric.cluster.topology import build_topology
from aifabric.errors import ConfigError
from aifabric.interop.astra import analytical_network


def test_mi300x_node_is_28_cables_of_one_xgmi_link_and_no_switch():
    topo = build_topology(mi300x_node())
    assert topo.is_mesh and topo.has_scale_up_links
    assert "nvswitch" not in topo.device_offsets  # no scale-up switch: leaves and spines follow the GPUs
    assert topo.device_offsets["leaf"] == 8
    su = topo.link_tier == 0
    assert int(su.sum()) == 2 * 28  # 8 x 7 / 2 cables, both directions
    assert np.allclose(topo.link_capacity_bytes_per_s[su], 64e9)  # 896 GB/s / 2 / 7 links
    assert (topo.gpu_up == -1).all()
    assert topo.tier_name(0) == "gpu-gpu"
    assert topo.switch_counts["scale-up domain"] == 1


def test_every_pair_has_its_own_link_each_way():
    topo = build_topology(mi300x_nodes(2))
    src = np.repeat(np.arange(16), 16)
    dst = np.tile(np.arange(16), 16)
    same = (src // 8 == dst // 8) & (src != dst)
    (links,) = topo.scale_up_hops(src[same], dst[same])
    assert np.unique(links).size == links.size == 2 * 8 * 7  # 112 distinct directed links
    assert (topo.link_src[links] == src[same]).all() and (topo.link_dst[links] == dst[same]).all()
    assert (topo.link_reverse[links] == topo.scale_up_hops(dst[same], src[same])[0]).all()


def test_gh200_quad_pairs_carry_one_six_link_bundle():
    topo = build_topology(preset("gh200-quad", nodes=2))
    su = topo.link_tier == 0
    assert int(su.sum()) == 2 * 2 * 6  # 2 nodes x 6 cables
    assert np.allclose(topo.link_capacity_bytes_per_s[su], 150e9)  # 900 GB/s / 2 / 3 bundles


def test_a_mesh_joins_at_most_one_gpu_per_link_plus_one():
    # the spec refuses it, so no engine models it: before, the formula engine timed 16 MI300X per domain
    # at 15 xGMI links each while the links and flow engines refused the topology
    with pytest.raises(ConfigError, match="scale_up.gpus: 16 GPUs per domain on infinity-fabric-mi300"):
        mi300x_node().with_changes(**{"gpus_per_node": 16})
    with pytest.raises(
        ConfigError, match="scale_up.gpus: 9 GPUs per domain on infinity-fabric-mi300, a full"
    ):
        mi300x_node().with_changes(**{"gpus_per_node": 9})
    assert build_topology(mi300x_node()).mesh_pair_link.shape == (8, 8)  # 7 links + 1: the largest


def test_inventory_keeps_the_mesh_domain():
    inv = inventory(build_topology(mi300x_node()))
    assert inv.count("scale-up", "domain") == 1


def test_astra_sim_gets_a_fully_connected_dimension_at_one_links_rate():
    net = analytical_network(build_topology(mi300x_nodes(2)))
    assert net.topology == ("FullyConnected", "Switch")
    assert net.bandwidth_gbps[0] == pytest.approx(64.0)


def test_a_gpu_reaches_itself_over_no_mesh_link():
    topo = build_topology(mi300x_node())
    with pytest.raises(ValueError, match="GPU 3 sends to itself"):
        topo.scale_up_hops(np.array([3]), np.array([3]))
