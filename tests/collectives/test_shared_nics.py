"""NICs shared by several GPUs (``scale_out.gpus_per_nic``): nothing crosses nodes faster than their NICs.

Issue 8, "A two-node tree ignores the network": a two-node tree, a one-NIC-per-node ring and a
one-GPU-per-node ring are each bounded by their NICs; the formula and links engines agree on a shared-NIC
cluster; halving the NICs is never faster.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.engines.api import collective_time
from aifabric.engines.formula import formula_collective

GIB = 2**30
#: ConnectX-7: 400 Gb/s = 50 GB/s per direction x 0.983 payload efficiency (catalog/data/nics.yaml).
CX7 = 50e9 * 0.983


def _h100(gpus_per_nic: int, nodes: int = 2):
    return preset("h100-ib-2node", nodes=nodes, **{"scale_out.gpus_per_nic": gpus_per_nic})


def test_two_node_tree_on_four_shared_nics_is_bounded_by_them():
    # 2 nodes x 8 H100, 4 x 400G per node (2 GPUs per NIC): B_node = 4 x 49.15 = 196.6 GB/s per direction.
    # On two domains each node is one tree's root and the other's leaf, so NCCL's double binary tree moves
    # S through a node's NICs each way (tree.py; NVIDIA/nccl #527: busbw 57.17 on 2 p4d, 31.77 on 3):
    #   algbw <= B_node = 196.6 GB/s; NVLink's 370.8 / 2 x 0.92 (Simple) = 170.6 is under the NICs, and
    # NCCL's tree cap is under both: the ring graph on 4 x 400G is 4 x 48 GB/s, duplicated to 8 x 24
    # (search.cc ncclTopoDupChannels), so tuning.cc's graphs[TREE]->nChannels x perChMaxTreeBw[Hopper][2
    # nodes] = 8 x 41.4 = 331.2 GB/s busBw, algbw 165.6 (tiers.tree_graph_cap).
    r = formula_collective("all_reduce", GIB, _h100(2), algorithm="tree")
    assert r.algbw_bytes_per_s <= 4 * CX7
    assert r.algbw_bytes_per_s <= 370.8e9 / 2 * 0.92
    assert r.busbw_bytes_per_s == pytest.approx(8 * 41.4e9 / 2 * 30 / 16, rel=0.02)
    assert r.bottleneck == "scale-up"
    # 2 x 400G per node (4 GPUs per NIC): B_node = 98.3 GB/s bounds it: 98.3 x 0.92 = 90.4 GB/s; the ring
    # graph on 2 NICs is 2 x 48 duplicated to 4 x 24 GB/s, so NCCL's tree cap, 4 x 41.4 = 165.6 GB/s busBw
    # (algbw 82.8), sets it: the tree's channels follow the NICs.
    half = formula_collective("all_reduce", GIB, _h100(4), algorithm="tree")
    assert half.algbw_bytes_per_s <= 2 * CX7 * 0.92
    assert half.algbw_bytes_per_s == pytest.approx(4 * 41.4e9 / 2, rel=0.01)
    assert half.bottleneck == "scale-out"
    # 4 nodes: an inner node of a tree moves 2 S each way (a parent and two children in one tree, a leaf
    # of the other; Sanders, Speck & Traeff 2009):
    #   algbw <= B_node / 2 = 98.3 GB/s,  busbw = algbw x 2 (n-1)/n <= 98.3 x 62/32 = 190.5 GB/s;
    # Simple's tree factor 0.92 leaves 175.2 GB/s, less the latency (0.3 % at 4 GiB).
    four = formula_collective("all_reduce", 4 * GIB, _h100(2, nodes=4), algorithm="tree")
    assert four.algbw_bytes_per_s <= 4 * CX7 / 2
    assert four.busbw_bytes_per_s <= 4 * CX7 / 2 * 62 / 32
    assert four.busbw_bytes_per_s == pytest.approx(4 * CX7 / 2 * 62 / 32 * 0.92, rel=0.01)
    assert four.bottleneck == "scale-out"
    # 3 nodes: NCCL's trees are chains (trees.cc: the root has one child), a node has at most 3 edges of
    # S / 2 each way, 1.5 S (NVIDIA/nccl #1801: tree/ring 1.19 and 1.23 on 3 GB200 partitions; 2 / (1.5 x
    # 1.0) x 11/12 = 1.22):  algbw <= B_node / 1.5 = 131.1 GB/s,  busbw <= 131.1 x 46/24 = 251.2 GB/s.
    three = formula_collective("all_reduce", 4 * GIB, _h100(2, nodes=3), algorithm="tree")
    assert three.algbw_bytes_per_s <= 4 * CX7 / 1.5
    assert three.busbw_bytes_per_s <= 4 * CX7 / 1.5 * 46 / 24
    assert three.busbw_bytes_per_s == pytest.approx(4 * CX7 / 1.5 * 46 / 24 * 0.92, rel=0.01)
    assert three.bottleneck == "scale-out"
    # with a NIC per GPU (B_node = 393.2 GB/s) NVLink's 370.8 / 2 x 30/16 x 0.92 = 319.8 GB/s is above
    # NCCL's tree cap again: 8 x 45 GB/s ring graph channels (not duplicated: 45 < 50 with > 4 channels,
    # ncclTopoDupChannels), 8 x 41.4 = 331.2 GB/s busBw, the 4-NIC node's: 331.2 / 2 x 30/16 = 310.5 GB/s
    full = formula_collective("all_reduce", GIB, _h100(1), algorithm="tree")
    assert full.busbw_bytes_per_s <= 370.8e9 / 2 * 30 / 16 * 0.92
    assert full.busbw_bytes_per_s == pytest.approx(8 * 41.4e9 / 2 * 30 / 16, rel=0.02)
    assert full.bottleneck == "scale-up"


def test_one_nic_for_a_whole_node_bounds_every_algorithm():
    # 2 nodes x 8 H100 and one 400G NIC each: B_node = 49.15 GB/s. A ring's busbw <= B_node (each channel
    # crosses a node boundary once, carrying 2 (n-1)/n S per direction); NCCL's default pick (NVLS-tree on
    # 2 nodes moves S through the NIC: algbw <= B_node) too.
    spec = _h100(8)
    assert spec.nics_per_node == 1
    ring = formula_collective("all_reduce", GIB, spec, algorithm="ring")
    assert ring.busbw_bytes_per_s <= CX7 and ring.busbw_bytes_per_s == pytest.approx(CX7, rel=0.01)
    default = formula_collective("all_reduce", GIB, spec)
    assert default.algbw_bytes_per_s <= CX7


def test_one_gpu_per_node_ring_is_one_nic():
    # 4 nodes of one H100 and one 400G NIC: ring busbw <= 49.15 GB/s, the latency leaves 48.96 at 1 GiB.
    spec = preset("h100-ib-2node", nodes=4, gpus_per_node=1, **{"scale_up.gpus": 1})
    r = formula_collective("all_reduce", GIB, spec, algorithm="ring")
    assert r.busbw_bytes_per_s <= CX7 and r.busbw_bytes_per_s == pytest.approx(CX7, rel=0.01)


def test_one_rank_per_p4d_node_owns_its_nic():
    # AWS p4d: 4 x 100 Gb/s EFA for 8 A100, SRD at 0.59 of line rate (transports.yaml): one NIC carries
    # 12.5 x 0.968 x 0.59 / 0.968 = 7.375 GB/s. One rank per node has a NIC to itself (not half of it);
    # two ranks sharing a NIC (GPUs 0 and 1) still have one; two on different NICs (0 and 2) have two.
    spec = preset("aws-p4d", nodes=4)
    one_nic = 12.5e9 * 0.59
    cases = {(0, 8, 16, 24): one_nic, (0, 1, 8, 9, 16, 17, 24, 25): one_nic}
    cases[(0, 2, 8, 10, 16, 18, 24, 26)] = 2 * one_nic
    for gpus, bound in cases.items():
        r = formula_collective("all_reduce", GIB, spec, Communicator.from_gpus(spec, gpus), algorithm="ring")
        assert r.busbw_bytes_per_s <= bound and r.busbw_bytes_per_s == pytest.approx(bound, rel=0.01), gpus


def test_p4d_ring_matches_the_four_node_efa_measurement():
    # 4 x p4dn, Ring AllReduce 1 GiB: 29.6 GB/s busbw measured (NVIDIA/nccl #527, the source of efa-srd's
    # 0.59); bound 4 NICs x 12.5 GB/s x 0.59 = 29.5 GB/s.
    r = formula_collective("all_reduce", GIB, preset("aws-p4d", nodes=4), algorithm="ring")
    assert r.busbw_bytes_per_s <= 4 * 12.5e9 * 0.59
    assert r.busbw_bytes_per_s == pytest.approx(29.6e9, rel=0.02)


@pytest.mark.parametrize(
    ("op", "algo"),
    [
        ("all_reduce", "ring"),
        ("broadcast", "chain"),
        ("all_reduce", "hierarchical"),
        ("all_reduce", "flat_ring"),
        ("all_to_all", "direct"),
    ],
)
def test_formula_and_links_agree_on_a_shared_nic_cluster(op, algo):
    # Both engines see the same shared NIC: the formula as a node's 4 NICs, the links engine as one leaf
    # cable per NIC that two GPUs' flows cross.
    for spec in (preset("aws-p4d", nodes=4), _h100(4, nodes=4)):
        f = collective_time(op, GIB, spec, algorithm=algo, protocol="Simple")
        links = collective_time(op, GIB, spec, algorithm=algo, engine="links")
        assert links.time_s == pytest.approx(f.time_s, rel=0.02), spec.name


def test_links_and_flow_engines_share_the_nic_by_placement():
    # Ranks on GPUs 0 and 1 of each p4d node share NIC 0; on GPUs 0 and 2 they use two NICs (the flow
    # engine, max-min fair on the same links, alone on a non-blocking fabric, reaches the same bound).
    spec = preset("aws-p4d", nodes=4)
    for gpus in ([0, 1, 8, 9, 16, 17, 24, 25], [0, 2, 8, 10, 16, 18, 24, 26]):
        f = collective_time("all_reduce", GIB, spec, ranks=gpus, algorithm="ring", protocol="Simple")
        for engine in ("links", "flow"):
            r = collective_time("all_reduce", GIB, spec, ranks=gpus, algorithm="ring", engine=engine)
            assert r.time_s == pytest.approx(f.time_s, rel=0.02), (gpus, engine)
        f = collective_time("all_to_all", GIB, spec, ranks=gpus, algorithm="direct", protocol="Simple")
        links = collective_time("all_to_all", GIB, spec, ranks=gpus, algorithm="direct", engine="links")
        assert links.time_s == pytest.approx(f.time_s, rel=0.02), gpus


def test_one_rank_alone_on_a_shared_nic_sends_at_its_whole_rate():
    # p4d: GPU 1 -> GPU 9 is alone on NIC 0 of both nodes: 12.5 GB/s x 0.59 (SRD) = 7.375 GB/s, not half
    spec = preset("aws-p4d", nodes=2)
    for engine in ("formula", "links"):
        r = collective_time("send_recv", GIB, spec, ranks=[1, 9], algorithm="p2p", engine=engine)
        assert r.busbw_bytes_per_s <= 12.5e9 * 0.59
        assert r.busbw_bytes_per_s == pytest.approx(12.5e9 * 0.59, rel=0.01), engine


_SHARES = st.sampled_from([1, 2, 4, 8])


@settings(derandomize=True, max_examples=30, deadline=None)
@given(
    k=_SHARES,
    nodes=st.sampled_from([2, 3, 4, 8]),
    op=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter"]),
    size=st.integers(min_value=1 << 10, max_value=1 << 33),
)
def test_algbw_across_nodes_is_bounded_by_the_nodes_nics(k, nodes, op, size):
    # Whatever the algorithm (no CollNet: NCCL's default is off), a node must send at least
    # 2 (N-1)/N S (all_reduce) or (N-1)/N S (all_gather, reduce_scatter) through its NICs, so
    #   algbw <= B_node x N / (2 (N-1))   or   B_node x N / (N-1),   B_node = nics_per_node x B_nic.
    spec = _h100(k, nodes=nodes)
    b_node = spec.nics_per_node * CX7
    traffic = (2 if op == "all_reduce" else 1) * (nodes - 1) / nodes
    r = formula_collective(op, size, spec)
    assert r.algbw_bytes_per_s <= b_node / traffic * (1 + 1e-9)


@settings(derandomize=True, max_examples=30, deadline=None)
@given(
    k=st.sampled_from([1, 2, 4]),
    nodes=st.sampled_from([2, 4, 8]),
    op=st.sampled_from(["all_reduce", "all_gather", "broadcast"]),
    size=st.integers(min_value=1 << 10, max_value=1 << 33),
    algo=st.sampled_from([None, "ring", "tree"]),
)
def test_halving_the_nics_is_never_faster(k, nodes, op, size, algo):
    # every protocol: a channel's LL rate is the channel's own (llMaxBw over the GPU's channels whatever its
    # NICs, tiers._per_channel_cap), so fewer NICs (fewer channels) never give a 1-channel call more
    if algo is not None and op != "all_reduce":
        algo = "chain" if op == "broadcast" else "ring"
    more = formula_collective(op, size, _h100(k, nodes=nodes), algorithm=algo)
    fewer = formula_collective(op, size, _h100(2 * k, nodes=nodes), algorithm=algo)
    assert fewer.time_s >= more.time_s * (1 - 1e-9)


@settings(derandomize=True, max_examples=20, deadline=None)
@given(
    k=st.sampled_from([1, 2, 4]),
    nodes=st.sampled_from([2, 4, 8]),
    op=st.sampled_from(["all_reduce", "all_gather"]),
    size=st.integers(min_value=1 << 26, max_value=1 << 33),
)
def test_halving_the_nics_is_never_faster_on_nccls_default_pick(k, nodes, op, size):
    # >= 64 MiB every call runs on all of the communicator's channels
    more = formula_collective(op, size, _h100(k, nodes=nodes))
    fewer = formula_collective(op, size, _h100(2 * k, nodes=nodes))
    assert fewer.time_s >= more.time_s * (1 - 1e-9)
