"""ClusterSpec validation and Topology part counts, checked by hand."""

import numpy as np
import pytest

from aifabric.cluster.inventory import inventory
from aifabric.cluster.presets import list_presets, preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.summary import summarize
from aifabric.cluster.topology import build_topology, clos_shape
from aifabric.errors import ConfigError, ParseError


def test_two_tier_1024_gpus_on_64_port_switches():
    # By hand: 64-port leaf, non-blocking -> 32 down / 32 up. 1,024 GPUs / 32 = 32 leaves (4 SUs x 8 rails).
    # 32 leaves x 32 uplinks = 1,024 uplinks / 64 ports = 16 spines. Cables: 1,024 NIC-leaf + 1,024
    # leaf-spine. Modules, not link ends: QM9700 cages and DGX H100's 4 OSFP cages take twin-port 2x400G
    # modules (H100 RA: "a two-port transceiver to access all eight GPUs"): 1,024 / 2 at the nodes, at
    # the leaves' down ports, at their up ports and at the spines = 4 x 512 = 2,048 (4,096 link ends).
    topo = build_topology(preset("dgx-h100-superpod", nodes=128))
    assert topo.switch_counts == {"scale-up domain": 128, "leaf": 32, "spine": 16, "core": 0}
    assert topo.cable_counts == {"nic-leaf": 1024, "leaf-spine": 1024, "spine-core": 0}
    inv = inventory(topo)
    assert inv.count("scale-out", "transceiver") == 2048
    # 48 QM9700 at 1,720 W + 1,024 CX-7 at 25 W + 2,048 x 15 W (800G twin-port OSFP)
    assert sum(x.watts for x in inv.lines if x.network == "scale-out") == pytest.approx(
        48 * 1720 + 1024 * 25 + 2048 * 15
    )
    # every spine has exactly 64 links (ports all used), every leaf 32 up
    spine_ports = np.bincount(topo.leaf_uplink_spine.ravel(), minlength=16)
    assert (spine_ports == 64).all()


def test_three_tier_32768_gpus():
    # By hand (folded Clos, k = 64): pods of 32 leaves x 32 spines hold 1,024 GPUs -> 32 pods, 1,024
    # leaves, 1,024 spines; each spine 32 up -> 32,768 uplinks / 64 = 512 cores (k^2/4 = 1,024 for the
    # full 65,536-GPU tree, half here). Cables 3 x 32,768.
    topo = build_topology(preset("dgx-h100-superpod", nodes=4096, **{"scale_out.tiers": 3}))
    assert topo.switch_counts == {"scale-up domain": 4096, "leaf": 1024, "spine": 1024, "core": 512}
    assert topo.cable_counts == {"nic-leaf": 32768, "leaf-spine": 32768, "spine-core": 32768}
    assert (np.bincount(topo.spine_uplink_core.ravel()) == 64).all()


def test_oversubscribed_leaf_two_to_one():
    # 64 ports at 2:1 -> d = floor(64*2/3) = 42 down, u = ceil(42/2) = 21 up
    s = clos_shape(preset("dgx-h100-superpod", nodes=42, **{"scale_out.oversubscription": [2]}))
    assert (s.leaf_down, s.leaf_up) == (42, 21)


def test_two_tiers_too_small_says_use_three():
    two = preset("dgx-h100-superpod", nodes=4096, **{"scale_out.tiers": 2})
    with pytest.raises(ConfigError, match="use tiers: 3"):
        clos_shape(two)
    # a resized preset grows a third tier by itself (DGX SuperPOD: two tiers up to 8 SUs, three beyond)
    assert preset("dgx-h100-superpod", nodes=4096).scale_out.tiers == 3
    assert preset("dgx-h100-superpod", nodes=256).scale_out.tiers == 2


def test_dgx_b200_superpod_table():
    # NVIDIA DGX B200 SuperPOD RA, compute fabric (reference/fabric-models.md sec. 4.1): SUs of 32 nodes
    # on 64-port 400G switches -> (leaf, spine, core) = (16, 8, -), (32, 16, -), (64, 32, -),
    # (128, 128, 64), (256, 256, 128), (512, 512, 256) for 2, 4, 8, 16, 32, 64 SUs.
    expected = {
        64: (16, 8, 0),
        128: (32, 16, 0),
        256: (64, 32, 0),
        512: (128, 128, 64),
        1024: (256, 256, 128),
        2048: (512, 512, 256),
    }
    for nodes, (leaf, spine, core) in expected.items():
        topo = build_topology(preset("dgx-h100-superpod", nodes=nodes))
        assert (topo.switch_counts["leaf"], topo.switch_counts["spine"], topo.switch_counts["core"]) == (
            leaf,
            spine,
            core,
        )
        assert set(topo.cable_counts.values()) <= {nodes * 8, 0}  # cables per tier = GPU count: non-blocking


def test_every_preset_builds():
    for name in list_presets():
        spec = preset(name)
        assert summarize(spec).n_gpus == spec.n_gpus


def test_megatron_cluster_is_three_tier_a100():
    spec = preset("megatron-a100")
    assert spec.scale_out.tiers == 3 and spec.n_gpus == 3072
    assert spec.nic_line_rate_bytes_per_s * 8 == 200e9  # 8 x 200 Gb/s HDR per node, one per GPU


def test_bisection_of_non_blocking_two_tier():
    # 1,024 GPUs x 50 GB/s / 2 = 25.6 TB/s per direction
    assert summarize(preset("dgx-h100-superpod", nodes=128)).bisection_bytes_per_s == pytest.approx(25.6e12)


def test_gpu_count_must_fill_domains():
    with pytest.raises(ConfigError, match="gpus=100 does not fill whole nodes of gpus_per_node=8"):
        ClusterSpec.from_dict({"accelerator": "h100-sxm", "gpus": 100})
    with pytest.raises(ConfigError, match="does not fill whole scale-up domains"):
        preset("gb200-nvl72", gpus=100)


def test_nic_speed_bits_bytes_mixup():
    with pytest.raises(ConfigError, match=r"scale_out.nic_speed.*3.2 Tb/s"):
        preset("lesson", **{"scale_out.nic_speed": "400 GB/s"})


def test_malformed_yaml_names_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("accelerator: h100-sxm\nnodes: [1, 2\n")
    with pytest.raises(ParseError, match=r"bad.yaml:\d+: malformed YAML"):
        ClusterSpec.from_yaml(p)


def test_unknown_field_is_named():
    with pytest.raises(ConfigError, match="scale_out.tierz"):
        ClusterSpec.from_dict({"accelerator": "h100-sxm", "nodes": 2, "scale_out": {"tierz": 2}})


@pytest.mark.parametrize("nodes", [32, 100, 128])
def test_declared_oversubscription_holds_at_any_size(nodes):
    # examples/cluster.yaml: 2:1 leaves on 128-port (breakout) switches. Nodes are spread evenly over the
    # scalable units and uplinks cabled at the ratio, so the bisection is half the NIC total at any size
    # (a partly filled last SU would otherwise be under-subscribed).
    from pathlib import Path

    import yaml

    data = yaml.safe_load((Path(__file__).parents[2] / "examples" / "cluster.yaml").read_text())
    data["nodes"] = nodes
    s = summarize(ClusterSpec.from_dict(data))
    assert s.bisection_bytes_per_s == pytest.approx(nodes * 8 * 50e9 / 2 / 2)
    assert s.inventory.count("scale-out", "cable") == nodes * 8 * 3 // 2
