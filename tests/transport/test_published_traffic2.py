"""Traffic mechanics (hash collisions, QP scaling, adaptive routing, spraying, failures) against public
figures, second round.

A blind check: every figure comes from a source the project had not used, expressed with the product's own
routing and max-min rate engine (``route`` + ``max_min_rates``, what ``aifabric fabric`` runs per epoch).
Agreements are asserted at 10 % unless a docstring says the source is coarser; figures the model misses are
in ``MISSED`` (product figure, published figure, diagnosis) and their tests re-measure the product figure.

Sources:
- [BAIDU] Baidu Intelligent Cloud Tech Hub, "How to Eliminate Network Hash Collisions in Large-Model
  Training", 2024-07-03, https://besthub.dev/articles/how-to-eliminate-network-hash-collisions-in-large-model-training-999827c66a59
  (AIPod, 8 rails, ToR/leaf full mesh, ECMP; 100 Gb/s links).
- [BAIDU-HPN] Baidu, "Baidu HPN Network: Solving Hash Collision for 95% Physical Network Bandwidth
  Efficiency in Large Model Training", https://besthub.dev/articles/baidu-hpn-network-solving-hash-collision-for-95-physical-network-bandwidth-efficiency-in-large-model-training-95987ed8f44b
- [SPX] Khashab et al., "High-speed Networking for Giga-Scale AI Factories" (NVIDIA Spectrum-X),
  arXiv:2605.21187, abstract.
- [SOPA] "SOPA: Source Routing Based Packet-Level Multi-Path Routing in Data Center Networks", ZTE
  Communications, abstract (permutation workload), http://soolun.net/periodical/e364f73834ad641daca20c622ba0889b.html
- [HC25] NVIDIA at Hot Chips 2025, Spectrum-X "1.9x better scale-out performance compared to traditional
  Ethernet" (NCCL), https://semivoice.com/post/5688fa3a20
- [FPL] FirstPassLab, "How NVIDIA Spectrum-X ports InfiniBand tricks to Ethernet for AI fabrics",
  https://dev.to/firstpasslab/how-nvidia-spectrum-x-ports-infiniband-tricks-to-ethernet-for-ai-fabrics-3h24
  ("1.6x better AI workload performance over commodity Ethernet").

Fabric for every row: 128 DGX-class nodes, 8 x 100 Gb/s NICs, 2-tier Clos of 128-port switches
(Broadcom Tomahawk 3, 12.8 Tb/s = 128 x 100 GbE, BCM56980 product brief), 64 down / 64 up per leaf: 16
leaves, 8 spines. Traffic: every NIC of the first 64 nodes sends to the same-rail NIC of a node of the other
64 (a random node permutation, seed 0), so every flow crosses the spines ([BAIDU]: inter-ToR traffic is what
ECMP hashes). Metric: mean max-min rate per flow over the NIC rate, the "effective bandwidth" of [BAIDU].
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from tests.missed import assert_miss_is_described, assert_still_missed

from aifabric.cluster.presets import preset
from aifabric.cluster.topology import Topology, build_topology
from aifabric.engines.fabric import link_capacity
from aifabric.engines.failures import parse_failures
from aifabric.engines.maxmin import max_min_rates
from aifabric.engines.routing import route

# ---------------------------------------------------------------------------------------------------------
# Published figures the model misses: (product figure, published figure, diagnosis)

MISSED: dict[str, tuple[float, float, str]] = {
    "sopa_rps_over_ecmp": (
        1.875,
        1.369,
        "[SOPA] permutation throughput: SOPA +77.74 % and +29.87 % over ECMP and random packet spraying "
        "(RPS), so RPS / ECMP = 1.7774 / 1.2987 = 1.369 vs product 1.875 (``spray-blind`` over ``ecmp``, "
        "the permutation of ``_permutation_flows``, seeds 0-2: RPS reaches the NIC rate as SOPA does). "
        "Missing mechanism: TCP under per-packet spraying sees reordering as loss (three duplicate ACKs "
        "halve the window); the product's sprayed transports deliver out of order without penalty (RDMA "
        "NICs with direct placement), so RPS there equals round-robin spraying.",
    ),
    "sopa_over_rps": (
        1.0,
        1.2987,
        "[SOPA] SOPA over RPS +29.87 % vs product 1.00 (``spray`` over ``spray-blind``): same missing "
        "mechanism, TCP's reaction to reordering under random spraying.",
    ),
    "fpl_workload_gain": (
        1.96,
        1.6,
        "[FPL] Spectrum-X '1.6x better AI workload performance' over commodity Ethernet vs product 1.96 "
        "(adaptive over ECMP, one hash key per NIC pair, NCCL_IB_QPS_PER_CONNECTION=1 default). The figure "
        "is a workload's, where compute hides part of the communication, and the test setup is not "
        "published; the product prices communication alone (its network-only figure matches [HC25]).",
    ),
}

TOMAHAWK3_PORTS_100G = 128  # 12.8 Tb/s / 100 Gb/s, Broadcom BCM56980 brief


@cache
def _topology(rails: bool = True) -> Topology:
    """The fabric above; ``rails=False`` wires each node's NICs to one leaf (a plain fat tree of hosts)."""
    kw = {"scale_out.nic_speed": "100 Gb/s", "scale_out.radix": TOMAHAWK3_PORTS_100G}
    return build_topology(preset("dgx-h100-superpod", nodes=128, **kw, **{"scale_out.rail_optimized": rails}))


def _cross_su_flows() -> tuple[np.ndarray, np.ndarray]:
    """Same-rail flows from the first 64 nodes to a permutation of the other 64 (every flow via a spine)."""
    half = 64
    dst_node = half + np.random.default_rng(0).permutation(half)
    src = np.arange(half * 8)
    return src, dst_node[src // 8] * 8 + src % 8


def _permutation_flows() -> tuple[np.ndarray, np.ndarray]:
    """[SOPA]'s permutation workload: every NIC sends to a random other one (seed 1), same-node pairs
    dropped (they never reach the network)."""
    src = np.arange(128 * 8)
    dst = np.random.default_rng(1).permutation(src.size)
    keep = src // 8 != dst // 8
    return src[keep], dst[keep]


FLOWS = {"cross_su": (_cross_su_flows, True), "permutation": (_permutation_flows, False)}


def _goodput(
    policy: str, *, seeds: int = 5, qps: int = 4, fail: str | None = None, flows: str = "cross_su"
) -> float:
    """Mean max-min rate per flow over the NIC rate, averaged over ``seeds`` hash (and failure) seeds.
    The permutation runs without PXN: hosts of a fat tree, no NVLink relay."""
    make, rails = FLOWS[flows]
    topo = _topology(rails)
    src, dst = make()
    kw = {} if rails else {"pxn": False}
    out = []
    for seed in range(seeds):
        alive = parse_failures(topo, fail, seed=seed)
        cap = link_capacity(topo) if alive is None else np.where(alive, link_capacity(topo), 0.0)
        r = route(topo, src, dst, policy=policy, seed=seed, qps=qps, link_alive=alive, **kw)
        rates = np.bincount(r.parent, weights=max_min_rates(r.incidence, cap), minlength=src.size)
        out.append(rates.mean() / link_capacity(topo)[topo.nic_up[0, 0]])
    return float(np.mean(out))


# ---------------------------------------------------------------------------------------------------------
# [BAIDU] hash collisions and their three fixes


def test_baidu_two_flows_on_one_uplink_each_get_half_the_link() -> None:
    """[BAIDU] "upward collision": two machines' flows hashed onto the same ToR uplink each get 50 Gb/s of
    their 100 Gb/s. Product: the first seed where two flows of one leaf share an uplink; max-min gives each
    exactly half (1e-9)."""
    topo = _topology()
    src, dst = np.array([0, 8]), np.array([64 * 8, 65 * 8])
    cap = link_capacity(topo)
    for seed in range(64):
        r = route(topo, src, dst, policy="ecmp", seed=seed)
        both = np.asarray((r.incidence.tocsr() > 0).sum(axis=1)).ravel() == 2
        if (both & (topo.link_tier == 2)).any():  # one leaf-spine cable carries both flows
            rates = max_min_rates(r.incidence, cap) / cap[topo.nic_up[0, 0]]
            assert rates == pytest.approx([0.5, 0.5], abs=1e-9)
            return
    raise AssertionError("no collision in 64 seeds")


def test_baidu_same_rail_traffic_under_one_tor_is_never_hashed() -> None:
    """[BAIDU-HPN]: "Same-GPU communication can pass through just one TOR hop at best", the case ToR-affinity
    scheduling aims for. Product: same-rail flows between nodes under one rail leaf (the first 64 nodes,
    node i to node 63 - i) never reach a spine, so ECMP has nothing to hash: 1.000 of the NIC rate for
    every seed (1e-9, a physical invariant)."""
    topo = _topology()
    src = np.arange(64 * 8)
    dst = (63 - src // 8) * 8 + src % 8
    cap = link_capacity(topo)
    for seed in range(3):
        r = route(topo, src, dst, policy="ecmp", seed=seed)
        rates = np.bincount(r.parent, weights=max_min_rates(r.incidence, cap), minlength=src.size)
        assert rates / cap[topo.nic_up[0, 0]] == pytest.approx(np.ones(src.size), abs=1e-9)


def test_baidu_ecmp_effective_bandwidth_with_two_qps() -> None:
    """[BAIDU]: ECMP collisions bring "effective bandwidth to around 70 Gbps on a 100 Gbps link", before
    QPs are raised "from 2". Product, 2 QPs per connection hashed independently: 0.662 (seeds 0-4), -5 %
    (10 %; the source says "around")."""
    assert _goodput("qp", qps=2) == pytest.approx(0.70, rel=0.10)


def test_baidu_dynamic_load_balancing_reaches_95_percent() -> None:
    """[BAIDU]: dynamic load balancing on their switches brings the effective bandwidth "up to 95%".
    Product, per-flowlet adaptive routing: 1.000 (+5 %, 10 %)."""
    assert _goodput("adaptive") == pytest.approx(0.95, rel=0.10)


def test_baidu_more_qps_spread_the_hash() -> None:
    """[BAIDU]: raising QPs "from 2 to 16 or 64" spreads traffic "across more hash buckets". Product: the
    effective bandwidth rises with the QPs, 0.66 (2) < 0.80 (4) < 0.95 (16) < 0.99 (64), and 16 QPs reach
    the source's 95 % (10 %). By hand: a flow of q equal QPs over u uplinks loses the share of its QPs that
    collide, which falls as 1/q."""
    effs = [_goodput("qp", qps=q, seeds=3) for q in (2, 4, 16, 64)]
    assert effs == sorted(effs) and effs[-1] <= 1.0 + 1e-9
    assert effs[2] == pytest.approx(0.95, rel=0.10)


# ---------------------------------------------------------------------------------------------------------
# [SPX] Spectrum-X: line rate, failures


def test_spectrum_x_adaptive_routing_near_line_rate() -> None:
    """[SPX]: "98% of the theoretical line rate". Product, adaptive routing on the cross-spine
    permutation: 1.000 of the NIC rate (+2 %, 10 %)."""
    assert _goodput("adaptive") == pytest.approx(0.98, rel=0.10)


def test_spectrum_x_bandwidth_proportional_to_surviving_links() -> None:
    """[SPX]: "capacity-proportional bisection bandwidth" with 10 % of fabric links failed, i.e. 0.90 of
    the intact bandwidth. Product, ``fabric:10%`` (random leaf-spine cables, seeds 0-2), adaptive routing:
    0.84, -7 % (10 %): random failures leave some leaves with fewer than 90 % of their uplinks, and those
    leaves' flows lose more than the average."""
    got = _goodput("adaptive", seeds=3, fail="fabric:0.1")
    assert got == pytest.approx(0.90, rel=0.10)
    assert got < 0.90 + 1e-9


# ---------------------------------------------------------------------------------------------------------
# [SOPA] packet-level spraying over ECMP; [HC25] / [FPL] Spectrum-X over plain Ethernet


def test_sopa_round_robin_spraying_over_ecmp() -> None:
    """[SOPA]: round-robin packet-level routing gives 77.74 % more permutation throughput than ECMP.
    Product, ``spray`` over ``ecmp``, every NIC of a plain fat tree (no rails, no PXN) sending to a random
    other: 1 / 0.533 = 1.875, +5.5 % (10 %)."""
    gain = _goodput("spray", seeds=3, flows="permutation") / _goodput("ecmp", seeds=3, flows="permutation")
    assert gain == pytest.approx(1.7774, rel=0.10)


def test_sopa_random_spraying_is_remeasured() -> None:
    """[SOPA]: see ``MISSED['sopa_rps_over_ecmp']`` and ``MISSED['sopa_over_rps']``."""
    blind, ecmp, spray = (_goodput(p, seeds=3, flows="permutation") for p in ("spray-blind", "ecmp", "spray"))
    assert_still_missed(blind / ecmp, *MISSED["sopa_rps_over_ecmp"][:2])
    assert_still_missed(spray / blind, *MISSED["sopa_over_rps"][:2])


def test_hot_chips_spectrum_x_over_traditional_ethernet() -> None:
    """[HC25]: Spectrum-X NCCL scale-out performance "1.9x" that of traditional Ethernet. Product, adaptive
    over ECMP with one hash key per NIC pair (NCCL_IB_QPS_PER_CONNECTION=1, NCCL's default): 1.96, +3 %
    (10 %)."""
    gain = _goodput("adaptive", seeds=3) / _goodput("ecmp", seeds=3)
    assert gain == pytest.approx(1.9, rel=0.10)
    assert_still_missed(gain, *MISSED["fpl_workload_gain"][:2])


# ---------------------------------------------------------------------------------------------------------
# The misses themselves


@pytest.mark.parametrize("name", list(MISSED))
def test_each_miss_names_its_source_and_lies_outside_the_tolerance(name: str) -> None:
    """Every entry cites its source tag, says measured vs predicted and lies more than 10 % from the
    published figure."""
    assert_miss_is_described(MISSED[name])
