"""A cluster may name a different switch per tier (scale_out.spine_switch / core_switch): each tier's radix,
parts line, watts and latency come from its own part."""

import pytest

from aifabric import catalog
from aifabric.cluster.clos import clos_shape
from aifabric.cluster.inventory import inventory
from aifabric.cluster.presets import preset
from aifabric.cluster.topology import build_topology
from aifabric.errors import ConfigError

# 512 DGX H100 = 4,096 GPUs, 8 x 400G rails, two tiers, 1:1
BASE = preset("dgx-h100-superpod", nodes=512).with_changes(**{"scale_out.tiers": 2})
MIXED = BASE.with_changes(**{"scale_out.spine_switch": "quantum-x800-q3400"})


def test_spine_radix_comes_from_the_spine_switch():
    # Leaf QM9700: 64 x 400G -> 1:1 split 32 down / 32 up; 32 nodes per SU (one leaf per rail), 512 nodes ->
    # 16 SUs x 8 rails = 128 leaves. Spine Q3400: 144 x 800G = 288 ports at 400G (breakout), so one spine
    # tier connects up to 288 leaves: 128 leaves x 32 uplinks / 288 = 14.2 -> 15 spines by ports, and 16 so
    # that each leaf cables its 32 uplinks evenly, 2 to every spine (clos.even_spread; 32 / 15 is no integer).
    shape = clos_shape(MIXED)
    assert (shape.radix, shape.spine_radix) == (64, 288)
    assert (shape.tiers, shape.n_leaves, shape.leaf_down, shape.leaf_up, shape.n_spines) == (
        2,
        128,
        32,
        32,
        16,
    )
    # with QM9700 spines (radix 64) two tiers connect at most 64 leaves: refused, naming the spine radix
    with pytest.raises(ConfigError, match="more than a two-tier Clos of radix-64 spines"):
        clos_shape(BASE)


def test_parts_and_watts_per_tier():
    # 128 leaves x 1,720 W (QM9700 datasheet) + 16 spines x the Q3400 catalogue entry's watts
    topo = build_topology(MIXED)
    lines = {ln.part: ln for ln in inventory(topo).lines if ln.network == "scale-out" and ln.item == "switch"}
    leaf = lines[f"leaf: {catalog.switch('quantum-2-qm9700').name}"]
    spine = lines[f"spine: {catalog.switch('quantum-x800-q3400').name}"]
    assert (leaf.count, leaf.watts) == (128, 128 * 1720.0)
    assert (spine.count, spine.watts) == (16, 16 * catalog.switch("quantum-x800-q3400").power_w)
    assert topo.switch_counts["spine"] == 16


def test_three_tiers_core_switch_and_fabric_check():
    three = preset("dgx-h100-superpod", nodes=512).with_changes(
        **{"scale_out.tiers": 3, "scale_out.core_switch": "quantum-x800-q3400"}
    )
    s = clos_shape(three)
    assert (s.radix, s.spine_radix, s.core_radix) == (64, 64, 288)
    assert three.scale_out.tier_switches == {
        "leaf": "quantum-2-qm9700",
        "spine": "quantum-2-qm9700",
        "core": "quantum-x800-q3400",
    }
    with pytest.raises(ConfigError, match="spine_switch 'spectrum-4-sn5600-400g' is an ethernet switch"):
        BASE.with_changes(**{"scale_out.spine_switch": "spectrum-4-sn5600-400g"})
