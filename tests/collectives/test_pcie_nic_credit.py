"""The multi-node ring's scale-up credit ``B_i g/(g-1)`` (one hop per channel leaves through a NIC) holds on
NVLink, where the NIC hop leaves over PCIe, and not where scale-up is the GPU's own PCIe link (a PCIe-only
node, or SHM through the host): there the GPU reaches its NIC over the same x16 link, which carries one hop
per ring step either way (collectives/cost.py scaleup_bound). Re-trial fix11a: 8 x L40S ran faster on 2
nodes than on 1 (busbw 27.42 > the 24.0 GB/s PCIe link)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.clusters import l40s_nodes

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.cost import scaleup_bound
from aifabric.collectives.tiers import tier_model
from aifabric.engines.api import collective_time
from aifabric.engines.formula import formula_collective

GiB = 2**30
LOC = {"NCCL_P2P_LEVEL": "LOC"}  # SHM through the host inside the node (nccl_env.py)


def _l40s(nodes: int) -> ClusterSpec:
    # 8 x L40S per node (PCIe Gen4 x16, no NVLink: L40S datasheet), 8 x ConnectX-7 400G, as the presets
    return l40s_nodes(nodes)


def test_l40s_two_nodes_are_not_faster_than_one():
    # 8 GiB all_reduce: 1 node busbw 24.0 GB/s (the model's PCIe Gen4 x16 figure for L40S); 2 nodes before
    # the fix 27.42 = 24.0 x 8/7, now the same 24.0 link bound (the NICs' 98.1 GB/s are not the limit)
    one = formula_collective("all_reduce", 8 * GiB, _l40s(1))
    two = formula_collective("all_reduce", 8 * GiB, _l40s(2))
    assert one.busbw_bytes_per_s / 1e9 == pytest.approx(24.0, rel=1e-3)
    assert two.busbw_bytes_per_s <= one.busbw_bytes_per_s * (1 + 1e-9)
    assert two.time_s > one.time_s


def test_shm_two_nodes_are_not_faster_than_one():
    # h100-ib-2node with NCCL_P2P_LEVEL=LOC: SHM at PCIe Gen5 64 GB/s x 0.6 = 38.4 GB/s (nccl_env.py); 1 GiB
    # ran 49.0 ms on 1 node and 46.1 ms on 2 (busbw 43.9 > 38.4) before the fix
    one = formula_collective("all_reduce", GiB, preset("h100-ib-2node", nodes=1), env=LOC)
    two = formula_collective("all_reduce", GiB, preset("h100-ib-2node", nodes=2), env=LOC)
    assert two.busbw_bytes_per_s / 1e9 <= 38.4 * (1 + 1e-9)
    assert two.time_s > one.time_s


def test_nvlink_nodes_keep_the_credit():
    # 8 x H100 SXM on NVSwitch, 2 nodes: scale-up bound B_i x 8/7 (the NIC hop leaves over PCIe, not NVLink)
    tm = tier_model(preset("h100-ib-2node"))
    assert scaleup_bound(tm, 8, 2) == pytest.approx(tm.intra_bytes_per_s * 8 / 7, rel=1e-12)
    assert scaleup_bound(tm, 8, 1) == pytest.approx(tm.intra_bytes_per_s, rel=1e-12)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    nodes=st.integers(min_value=1, max_value=6),
    more=st.integers(min_value=1, max_value=4),
    size=st.floats(min_value=2.0**26, max_value=2.0**34),
)
def test_more_pcie_nodes_are_never_faster_for_a_ring(nodes, more, size):
    # On a PCIe-only node the ring's busbw is bounded by the GPU's PCIe link on any node count, and more nodes
    # add steps and latency: a bandwidth-bound ring all_reduce never runs faster on more nodes
    small = formula_collective("all_reduce", size, _l40s(nodes), algorithm="ring", protocol="Simple")
    large = formula_collective("all_reduce", size, _l40s(nodes + more), algorithm="ring", protocol="Simple")
    assert large.time_s >= small.time_s * (1 - 1e-9)


def test_links_engine_routes_the_nic_hop_over_the_pcie_link():
    # The links engine routes a PCIe-only GPU's NIC traffic over its own x16 link (engines/routing.py), so
    # per link it finds the formula's bound: 2 x 8 L40S, 1 GiB ring all_reduce, within the engines' 2 %
    # (tests/engines/test_agreement.py); before, the links engine gave 2 nodes the 8/7 credit (73.7 ms)
    spec = _l40s(2)
    f = collective_time("all_reduce", GiB, spec, algorithm="ring", protocol="Simple")
    links = collective_time("all_reduce", GiB, spec, algorithm="ring", engine="links")
    assert links.time_s == pytest.approx(f.time_s, rel=0.02)
    one = collective_time("all_reduce", GiB, _l40s(1), algorithm="ring", engine="links")
    assert links.time_s > one.time_s
