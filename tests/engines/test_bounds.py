"""Physical bounds of the formula engine (issue 8, item 2): properties over random clusters, and three
cases with the bound derived by hand.

Symbols: ``B_o`` the NIC payload bandwidth of one GPU, ``B_i`` its scale-up bandwidth (bytes/s per
direction, from the cluster's TierModel), ``n`` ranks, ``N`` scale-up domains, ``g_min`` ranks in the
least-populated domain. The NICs belong to GPUs (one per GPU; a GB200 tray's four), so the NICs a domain
can use are those of its ranks: ``g_min B_o`` for the slowest domain.

Traffic each domain must push through its NICs (no in-network reduction across domains), hence
``algbw <= g_min B_o x factor``:

- all_reduce: 2 (N-1)/N S (bandwidth-optimal lower bound, Patarasuk & Yuan 2009): factor N / (2 (N-1));
- all_gather, reduce_scatter, all_to_all: the S (n-g)/n bytes its ranks need from (send to) the others:
  factor n / (n - g_min);
- broadcast, reduce, send_recv: S: factor 1.
"""

import dataclasses
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import Algorithm
from aifabric.collectives.nvls import nvls_fill_bytes, nvls_tree_cost
from aifabric.collectives.ops import Collective, busbw_factor
from aifabric.collectives.tiers import Protocol, tier_model
from aifabric.engines.formula import formula_collective

GB = 1e9
OPS = [op.value for op in Collective]
#: (preset, GPUs per node): NVLink HGX nodes, NVL72 racks of 4-GPU trays, an A100 cluster, the lesson
CLUSTERS = ["h100-ib-2node", "dgx-h100-superpod", "megatron-a100", "gb200-nvl72", "rubin-nvl72", "lesson"]

# hbm_check=False below: the invariants are the timing model's, for any logical message size (here up to
# 1e11 B, beyond an 80 GB GPU's HBM, which the collective command and collective_time refuse).


def nic_factor(op: Collective, n: int, n_domains: int, g_min: int) -> float:
    """Bytes a domain's NICs must carry, as a multiple of what algbw allows (see the module docstring)."""
    if op is Collective.ALL_REDUCE:
        return n_domains / (2 * (n_domains - 1))
    if op in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER, Collective.ALL_TO_ALL):
        return n / (n - g_min)
    return 1.0


@st.composite
def clusters(draw):
    """A random cluster (preset, size, NIC speed) and a random communicator on it spanning >= 2 domains."""
    name = draw(st.sampled_from(CLUSTERS))
    base = preset(name)
    domains = draw(st.integers(min_value=2, max_value=6))
    spec = preset(name, gpus=domains * base.domain_gpus)
    speed = draw(st.sampled_from([100, 200, 400, 800]))
    if speed * 1e9 / 8 <= spec.nic_spec.line_rate_bytes_per_s:
        spec = spec.with_changes(**{"scale_out.nic_speed": f"{speed} Gb/s"})
    op = Collective(draw(st.sampled_from(OPS)))
    if op is Collective.SEND_RECV:
        a = draw(st.integers(0, spec.domain_gpus - 1))
        b = draw(st.integers(spec.domain_gpus, spec.n_gpus - 1))
        gpus = [a, b]
    else:
        gpus = draw(st.lists(st.integers(0, spec.n_gpus - 1), min_size=2, max_size=48, unique=True))
    comm = Communicator.from_gpus(spec, gpus)
    return spec, comm, op


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    case=clusters(),
    size=st.floats(min_value=1.0, max_value=1e11),
    efficiency=st.sampled_from(["nccl", "line_rate"]),
)
def test_algbw_across_domains_is_bounded_by_the_ranks_nics(case, size, efficiency):
    spec, comm, op = case
    if comm.n_domains < 2:
        return
    tm = tier_model(spec, efficiency=efficiency)
    r = formula_collective(op, size, spec, comm, efficiency=efficiency, hbm_check=False)
    bound = comm.min_ranks_per_domain * tm.nic_bytes_per_s * nic_factor(op, comm.n_ranks, comm.n_domains,
                                                                      comm.min_ranks_per_domain)  # fmt: skip
    assert r.algbw_bytes_per_s <= bound * (1 + 1e-9), (r.algorithm, r.protocol)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    case=clusters(),
    slot=st.integers(min_value=0, max_value=71),
    size=st.floats(min_value=1.0, max_value=1e11),
    efficiency=st.sampled_from(["nccl", "line_rate"]),
)
def test_busbw_of_one_rank_per_domain_is_bounded_by_its_nic(case, slot, size, efficiency):
    # One rank in each domain: every byte a rank sends or receives crosses its own NIC (B_o), the slowest
    # network it crosses, and nothing else. busbw = algbw x busbw_factor, and the algbw bound above with
    # g_min = 1 gives busbw <= B_o for every collective: all_reduce B_o N / (2 (N-1)) x 2 (N-1)/N,
    # all_gather / reduce_scatter / all_to_all B_o n / (n-1) x (n-1)/n, broadcast / reduce / send_recv B_o.
    spec, _, op = case
    g = spec.domain_gpus
    domains = 2 if op is Collective.SEND_RECV else spec.n_gpus // g  # a send_recv pairs two ranks
    comm = Communicator.from_gpus(spec, [d * g + slot % g for d in range(domains)])
    tm = tier_model(spec, efficiency=efficiency)
    r = formula_collective(op, size, spec, comm, efficiency=efficiency, hbm_check=False)
    assert comm.n_domains == comm.n_ranks >= 2
    assert r.busbw_bytes_per_s <= tm.nic_bytes_per_s * (1 + 1e-9), (r.algorithm, r.protocol)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(
    name=st.sampled_from([*CLUSTERS, "v100-pcie-4gpu", "tpu-v5p-pod"]),
    ranks=st.integers(min_value=2, max_value=72),
    op=st.sampled_from(OPS),
    size=st.floats(min_value=1.0, max_value=1e11),
    efficiency=st.sampled_from(["nccl", "line_rate"]),
)
def test_busbw_in_one_domain_is_bounded_by_scale_up(name, ranks, op, size, efficiency):
    # Every byte crosses scale-up only: busbw <= B_i. NVLS reduces in the switch: a GPU sends S and reads S,
    # so algbw <= B_i, i.e. busbw <= B_i x 2 (n-1)/n.
    spec = preset(name)
    n = 2 if op == "send_recv" else min(ranks, spec.domain_gpus)
    if spec.scale_up.kind == "torus" and op != "send_recv":  # a TPU runs on slices: 4, 8, 16, 32, 64 chips
        n = max(s for s in (4, 8, 16, 32, 64) if s <= max(n, 4))
    comm = Communicator.contiguous(spec, n)
    tm = tier_model(spec, efficiency=efficiency)
    r = formula_collective(op, size, spec, comm, efficiency=efficiency, hbm_check=False)
    in_switch = r.algorithm == "nvls"
    bound = tm.intra_bytes_per_s * (busbw_factor(op, n) if in_switch else 1.0)
    assert r.busbw_bytes_per_s <= bound * (1 + 1e-9)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    case=clusters(),
    size=st.floats(min_value=1.0, max_value=1e11),
    intra=st.floats(min_value=1.0, max_value=4.0),
    nic=st.floats(min_value=1.0, max_value=4.0),
)
def test_more_bandwidth_is_never_slower(case, size, intra, nic):
    spec, comm, op = case
    tm = tier_model(spec)
    fast = dataclasses.replace(
        tm, intra_bytes_per_s=tm.intra_bytes_per_s * intra, nic_bytes_per_s=tm.nic_bytes_per_s * nic
    )
    t0 = formula_collective(op, size, spec, comm, tiers=tm, hbm_check=False).time_s
    t1 = formula_collective(op, size, spec, comm, tiers=fast, hbm_check=False).time_s
    assert t1 <= t0 * (1 + 1e-12)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    name=st.sampled_from(CLUSTERS),
    domains=st.integers(min_value=2, max_value=16),
    more=st.integers(min_value=1, max_value=16),
    op=st.sampled_from([o for o in OPS if o != "send_recv"]),
    size=st.floats(min_value=1.0, max_value=1e11),
)
@example(name="h100-ib-2node", domains=3, more=1, op="all_reduce", size=2.0**28)  # 128 -> 64 KiB chunks
@example(name="gb200-nvl72", domains=2, more=1, op="all_reduce", size=2.0**28)  # 32 -> 24 channels
def test_more_ranks_are_never_faster_per_byte(name, domains, more, op, size):
    # Whole domains at the same per-rank bandwidth (NVLink and NIC both in use, so from 2 domains on: one
    # domain leaves its NICs idle, and a broadcast over 2 nodes rightly beats one over a single node's
    # NVLink): a collective over more domains moves at least as many bytes per rank through the same
    # links, and takes at least as many steps.
    # One exception, NCCL's own: NVLS-tree's pipeline fill (2 loops of channels x heads x chunk) shrinks
    # where NCCL's rules give more nodes fewer channels or smaller chunks (src/transport/nvls.cc
    # ncclNvlsTuning: treeMaxChunkSize 64 KiB from nNodes >= 4, 128 KiB below; ncclNvlsTreeSm100Tuning:
    # 32 channels on 2 Blackwell nodes with >= 48 GB/s NICs, 24 from 3). More ranks are never faster by
    # more than that shrink.
    base = preset(name)
    spec = preset(name, gpus=(domains + more) * base.domain_gpus)
    few = Communicator.contiguous(spec, domains * base.domain_gpus)
    many = Communicator.contiguous(spec)
    small = formula_collective(op, size, spec, few, hbm_check=False)
    large = formula_collective(op, size, spec, many, hbm_check=False)
    shrink = fill_shrink_s(spec, few, many, size, large.algorithm)
    assert large.time_s + shrink >= small.time_s * (1 - 1e-9), (small.algorithm, large.algorithm)


def fill_shrink_s(spec, few, many, size: float, algorithm: str) -> float:
    """How much shorter NVLS-tree's fill is on ``many`` ranks than on ``few``, seconds (0 unless the
    larger communicator runs NVLS-tree)."""
    if algorithm != "nvls_tree":
        return 0.0
    return max(0.0, nvls_tree_fill_s(spec, few, size) - nvls_tree_fill_s(spec, many, size))


def nvls_tree_fill_s(spec, comm, size: float) -> float:
    """The seconds of NVLS-tree's pipeline fill in an all_reduce of ``size`` bytes on ``comm``: its
    bandwidth term is ``(S + fill) / algbw``, so the fill's share of it is ``fill / (S + fill)``."""
    tm = tier_model(spec)
    cost = nvls_tree_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, size, comm, tm)
    fill = nvls_fill_bytes(tm, size, comm, Algorithm.NVLS_TREE)
    return 0.0 if cost is None else sum(cost.bandwidth_s.values()) * fill / (size + fill)


def test_two_node_tree_is_bounded_by_its_nics():
    # Two nodes of one H100 each, one 400G ConnectX-7 per GPU: B_o = 50 GB/s x 0.983 = 49.15 GB/s. A
    # two-domain all_reduce sends 2 (N-1)/N S = S through each node's one NIC: algbw <= 49.15 GB/s. NCCL's
    # double binary tree on two domains does exactly that (each node one tree's root and the other's leaf:
    # S / 2 up and S / 2 down per tree), x 0.92 for Simple: 45.22 GB/s; timed from NVLink alone (370.8
    # GB/s, the old model) it claimed 170.6 GB/s, 3.5x the NIC. On four nodes an inner node moves 2 S
    # (a parent and two children in one tree, a leaf of the other): 49.15 / 2 x 0.92 = 22.61 GB/s. On
    # three, NCCL's trees are chains (trees.cc ncclGetBtree: the root has one child; ncclGetDtree shifts
    # the second tree by one): at most 3 edges of S / 2 on a node, 1.5 S: 49.15 / 1.5 x 0.92 = 30.15 GB/s.
    spec = preset("h100-ib-2node", nodes=4)
    two = Communicator.from_gpus(spec, [0, 8])
    r = formula_collective("all_reduce", 2**32, spec, two, algorithm="tree", protocol="Simple")
    assert r.algbw_bytes_per_s <= 49.15 * GB
    assert r.algbw_bytes_per_s / GB == pytest.approx(49.15 * 0.92, rel=0.01)
    assert r.bottleneck == "scale-out"
    four = Communicator.from_gpus(spec, [0, 8, 16, 24])
    r4 = formula_collective("all_reduce", 2**32, spec, four, algorithm="tree", protocol="Simple")
    assert r4.algbw_bytes_per_s / GB == pytest.approx(49.15 / 2 * 0.92, rel=0.01)
    assert r4.bottleneck == "scale-out"
    three = Communicator.from_gpus(spec, [0, 8, 16])
    r3 = formula_collective("all_reduce", 2**32, spec, three, algorithm="tree", protocol="Simple")
    assert r3.algbw_bytes_per_s <= 49.15 / 1.5 * GB
    assert r3.algbw_bytes_per_s / GB == pytest.approx(49.15 / 1.5 * 0.92, rel=0.01)
    assert r3.bottleneck == "scale-out"


def test_nvl72_multi_rack_all_reduce_is_bounded_by_the_trays_nics():
    # GB200 NVL72: a rack is 18 trays x 4 GPUs, one ConnectX-8 (800 Gb/s, 98.3 GB/s payload) per GPU.
    # One tray in each of two racks (8 ranks): the racks' NICs that carry this job are the 4 of each tray,
    # 4 x 98.3 = 393.2 GB/s per rack; two domains send S each way: algbw <= 393.2 GB/s, whatever NVLink
    # (721.8 GB/s per GPU) allows. All 72 GPUs of both racks: 72 NICs per rack, algbw <= 7,077.6 GB/s
    # (the NICs are not the limit: NVLS in the rack, 721.8 x 0.74 x 31/32 = 517.4 GB/s over its 32 NVLS
    # heads, is).
    spec = preset("gb200-nvl72", gpus=144)
    trays = Communicator.from_gpus(spec, [0, 1, 2, 3, 72, 73, 74, 75])
    for algo in (None, "ring", "tree", "nvls_tree", "hierarchical"):
        r = formula_collective("all_reduce", 2**34, spec, trays, algorithm=algo)
        assert r.algbw_bytes_per_s <= 4 * 98.3 * GB * 1.0001, algo
    racks = formula_collective("all_reduce", 2**34, spec, Communicator.contiguous(spec))
    assert racks.algbw_bytes_per_s <= 72 * 98.3 * GB
    assert racks.algbw_bytes_per_s <= 721.8 * 0.74 * 31 / 32 * GB * 1.001
    assert racks.algorithm == "nvls_tree"


def test_one_gpu_per_node_ring_is_bounded_by_its_nic():
    # 8 nodes, one H100 per node, one 400G NIC each (49.15 GB/s): every ring hop crosses a NIC, so busbw
    # <= 49.15 GB/s, and no scale-up term applies (no byte stays in a node).
    spec = preset("h100-ib-2node", nodes=8)
    comm = Communicator.from_gpus(spec, list(range(0, 64, 8)))
    r = formula_collective("all_reduce", 2**34, spec, comm, algorithm="ring", protocol="Simple")
    assert r.busbw_bytes_per_s <= 49.15 * GB
    assert r.busbw_bytes_per_s / GB == pytest.approx(49.15, rel=0.01)  # latency < 1 % at 16 GiB
    assert r.bottleneck == "scale-out"
    assert math.isclose(sum(r.network_time_s.values()), r.time_s)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(
    nodes=st.integers(min_value=2, max_value=6),
    data=st.data(),
    op=st.sampled_from([o for o in OPS if o != "send_recv"]),
    size=st.floats(min_value=1.0, max_value=1e11),
    efficiency=st.sampled_from(["nccl", "line_rate"]),
)
def test_algbw_with_shared_nics_is_bounded_by_the_nodes_nics(nodes, data, op, size, efficiency):
    # Shared NICs (the random clusters above give each GPU its own): AWS p4d.24xlarge, 8 x A100 and 400 Gb/s
    # EFA as 4 x 100 Gb/s (AWS EC2 P4 page), two GPUs per NIC. However few of a node's GPUs are ranks, the
    # node has 4 x 12.5 = 50 GB/s of line rate per direction: algbw <= 50 GB/s x the traffic factor of the
    # module docstring (line rate: the payload efficiency only lowers it).
    spec = preset("aws-p4d", nodes=nodes)
    gpus = data.draw(st.lists(st.integers(0, spec.n_gpus - 1), min_size=2, max_size=48, unique=True))
    comm = Communicator.from_gpus(spec, gpus)
    if comm.n_domains < 2:
        return
    r = formula_collective(op, size, spec, comm, efficiency=efficiency, hbm_check=False)
    g_min = comm.min_ranks_per_domain
    bound = 4 * 12.5 * GB * nic_factor(Collective(op), comm.n_ranks, comm.n_domains, g_min)
    assert r.algbw_bytes_per_s <= bound * (1 + 1e-9), (r.algorithm, r.protocol)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    name=st.sampled_from(["gb200-nvl72", "rubin-nvl72"]),
    racks=st.integers(min_value=2, max_value=12),
    more=st.integers(min_value=1, max_value=8),
    size=st.floats(min_value=2.0**20, max_value=2.0**36),
)
@example(name="gb200-nvl72", racks=2, more=1, size=2.0**28)  # the trial's 36 -> 54 trays, 256 MiB
def test_more_nvl72_racks_are_never_faster_per_byte(name, racks, more, size):
    # NVL72 racks of 18 four-GPU trays, one NCCL node each, all_reduce on NVLS-tree's ground: from 3 racks
    # NCCL 2.30 runs one NVLS-tree configuration (nvls.cc ncclNvlsTreeSm100Tuning: 24 channels x 64 KiB on
    # GB200's 400G NICs, 32 x 64 KiB on Rubin's 1.6T), so the same fill, and more racks only add tree depth
    # and NIC bytes. 2 racks run 32 channels on GB200 (nNodes == 2 and NICs >= 48 GB/s): NCCL's own
    # configuration, a 4/3 larger fill (test_nvl72_nvls_tree_fill_is_nccls_own_loops), the one amount by
    # which a third rack may be faster.
    base = preset(name)
    g = base.domain_gpus
    spec = preset(name, gpus=(racks + more) * g)
    few, many = Communicator.contiguous(spec, racks * g), Communicator.contiguous(spec)
    small = formula_collective("all_reduce", size, spec, few)
    large = formula_collective("all_reduce", size, spec, many)
    shrink = fill_shrink_s(spec, few, many, size, large.algorithm)
    assert large.time_s + shrink >= small.time_s * (1 - 1e-9), (small.algorithm, large.algorithm)


def test_nvl72_one_gib_all_reduce_slows_with_racks():
    # The trial's repro (gb200-nvl72, 1 GiB): 216, 288, 360, 576 ranks; before fix10a 288 ranks (2338 us) beat
    # 216 (2488 us): 128 KiB chunks below 4 racks, 64 KiB from 4, the fallback NCCL applies only where
    # ncclNvlsTreeSm100Tuning sets no maximum (nvls.cc 2.30.3); NCCL's 64 KiB on every rack count now.
    spec = preset("gb200-nvl72")
    times = [formula_collective("all_reduce", 2**30, spec, Communicator.contiguous(spec, n)).time_s
             for n in (216, 288, 360, 576)]  # fmt: skip
    assert times == sorted(times)
