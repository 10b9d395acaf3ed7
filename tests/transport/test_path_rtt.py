"""Each flow's base RTT from its path when the fluid model runs on a fabric (issue 12, item 5)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.topology import Topology, build_topology
from aifabric.engines.api import collective_time
from aifabric.engines.fabric import link_capacity
from aifabric.engines.flowsim import simulate_transfers
from aifabric.engines.routing import route
from aifabric.errors import ConfigError
from aifabric.transport.fluidnet import FluidConfig, fluid_bytes, simulate_fluid
from aifabric.transport.params import dcqcn_preset
from aifabric.transport.wire import decompose_paths, path_rtt

MTU, ACK = 4096.0, 64.0  # the fluid model's MSS and header (FluidConfig defaults)
QM9700 = 0.13e-6  # NVIDIA Quantum-2 QM9700 port-to-port latency, catalogue switches.yaml (datasheet)
NDR = 50e9  # 400 Gb/s per direction, bytes/s
# one hop there and back: the switch latency twice, an MTU and its ACK serialised at 400 Gb/s
HOP_RTT = 2 * QM9700 + (MTU + ACK) / NDR  # 0.26 + 0.0832 = 0.3432 us


def _superpod(nodes: int, tiers: int) -> Topology:
    return build_topology(preset("dgx-h100-superpod", nodes=nodes, **{"scale_out.tiers": tiers}))


def _paths(topo: Topology, src: np.ndarray, dst: np.ndarray) -> list[list[int]]:
    """Each transfer's single ECMP path, in order."""
    inc = route(topo, src, dst, policy="ecmp", pxn=False, seed=0).incidence.tocsc()
    out = []
    for c in range(inc.shape[1]):
        lo, hi = inc.indptr[c], inc.indptr[c + 1]
        ((path, _),) = decompose_paths(inc.indices[lo:hi], inc.data[lo:hi], topo.link_src, topo.link_dst)
        out.append(path)
    return out


@pytest.mark.parametrize(("nodes", "tiers", "hops"), [(64, 2, 4), (512, 3, 6)])
def test_a_path_rtt_is_its_hops_there_and_back_by_hand(nodes: int, tiers: int, hops: int) -> None:
    """GPU 0 to the first GPU of the last node: 2 tiers (64 nodes, two SUs) cross a spine, NIC -> leaf ->
    spine -> leaf -> NIC, 4 hops; 3 tiers (512 nodes, 4,096 GPUs above a radix-64 two-tier Clos's 2,048)
    cross a core, 6 hops. Each hop: 2 x 0.13 us + 4,160 B / 50 GB/s = 0.3432 us, so 1.3728 us and
    2.0592 us."""
    topo = _superpod(nodes, tiers)
    assert topo.shape is not None and topo.shape.tiers == tiers
    (path,) = _paths(topo, np.array([0]), np.array([topo.n_gpus - 8]))
    assert topo.link_tier[path].tolist() == [*range(1, tiers + 1), *range(tiers, 0, -1)]
    rtt = path_rtt([path], topo.link_latency_s, topo.link_capacity_bytes_per_s, MTU, ACK)
    assert rtt[0] == pytest.approx(hops * HOP_RTT, rel=1e-12)
    assert rtt[0] == pytest.approx({4: 1.3728e-6, 6: 2.0592e-6}[hops], rel=1e-12)


def test_the_fabric_json_states_the_base_rtts_of_its_flows() -> None:
    """A sprayed permutation on 64 nodes (seed 0): the shortest paths stay under a leaf (2 hops of 0.13 us),
    the longest are same-node pairs over NVLink (2 hops into and out of the NVSwitch, 0.6 us each,
    catalogue scaleup.yaml); each at its link's NCCL-effective rate, as the fluid model runs."""
    out = CliRunner().invoke(
        app,
        ["fabric", "permutation", "--cluster", "dgx-h100-superpod", "--nodes", "64", "--size", "256KiB",
         "--engine", "flow", "--routing", "spray", "--transport", "ib", "--json"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    rtt = json.loads(out.stdout)["transport"]["base_rtt_s"]
    topo = _superpod(64, 2)
    cap = link_capacity(topo)
    nic, nvl = topo.nic_up[0, 0], topo.gpu_up[0]
    assert topo.link_latency_s[nvl] == 0.6e-6
    assert rtt["min"] == pytest.approx(2 * (2 * QM9700 + (MTU + ACK) / cap[nic]), rel=1e-9)
    assert rtt["max"] == pytest.approx(2 * (2 * 0.6e-6 + (MTU + ACK) / cap[nvl]), rel=1e-9)  # 2.42 us
    assert rtt["min"] <= rtt["median"] <= rtt["max"]


def test_a_chained_ring_under_the_flow_engine_and_the_ib_fluid_model_agree_per_step() -> None:
    """Rail-0 GPUs of 64 nodes (two SUs) in a ring, 6 chained steps of 256 KiB per host, each step after
    the previous one's acknowledgement. Nothing contends (each NIC link carries one flow; two ring edges
    cross a spine, 4 hops; the rest stay under a leaf, 2 hops). Per step, by hand, with S the step's bytes,
    C the link rate, h the hops, dt the fluid step and lambda the switch latency per link:

    - flow engine: ``S / C + 2 h lambda`` (the one-way latency there as start latency, back as dependency
      delay: a round trip of latencies);
    - fluid model: ``ceil(S / (C dt)) dt`` (the sender's steps) ``+ (h - 1) dt`` (a byte moves one hop
      per step) ``+ ceil(RTT / dt) dt``, ``RTT = 2 h lambda + h (MTU + ACK) / C`` (:func:`path_rtt`).

    So ``0 <= fluid - flow <= steps x ((h + 1) dt + h (MTU + ACK) / C)`` on the 4-hop chain that ends
    last: 6 x (2.5 + 0.339) us = 17.0 us. Measured: flow 37.72 us, fluid 49.5 us; with the fixed 12 us
    base RTT the fluid ring took 102.5 us, far outside."""
    topo = _superpod(64, 2)
    hosts = np.arange(0, topo.n_gpus, 8)
    steps, size = 6, 256 * 1024.0
    rank = np.repeat(np.arange(hosts.size), steps)
    src, dst = hosts[rank], hosts[(rank + 1) % hosts.size]
    cap = link_capacity(topo)
    paths = _paths(topo, src, dst)
    inc = route(topo, src, dst, policy="ecmp", pxn=False, seed=0).incidence.tocsc()
    one_way = np.asarray(inc.T @ topo.link_latency_s).ravel()
    flow = simulate_transfers(
        np.full(src.size, size),
        inc,
        cap,
        job=rank,
        stage=np.tile(np.arange(steps), hosts.size),
        start_latency_s=one_way,
        dependency_delay_s=float(one_way.max()),
    ).makespan_s
    cfg = FluidConfig(credit_buffer_bytes=2 * float(cap.max()) * FluidConfig().dt_s)  # as transport.wire
    after = np.where(np.arange(src.size) % steps > 0, np.arange(src.size) - 1, -1)
    rtt = path_rtt(paths, topo.link_latency_s, cap, MTU, ACK)
    sizes = np.full(src.size, size)
    fluid = simulate_fluid(paths, sizes, cap, "ib", after=after, config=cfg, rtt_s=rtt)
    fixed = simulate_fluid(paths, sizes, cap, "ib", after=after, config=cfg).makespan_s
    h, c = 4, float(cap[paths[0][0]])
    bound = steps * ((h + 1) * cfg.dt_s + h * (MTU + ACK) / c)
    assert float(fluid.link_peak_queue_bytes.max()) == 0.0  # nothing contends
    assert 0.0 <= fluid.makespan_s - flow <= bound
    assert fluid.makespan_s == pytest.approx(49.5e-6, rel=1e-9)
    assert fixed - flow > bound


def test_a_round_trip_per_flow_must_be_positive_and_finite() -> None:
    for bad in ([0.0], [float("nan")], [1e-6, 1e-6]):
        with pytest.raises(ConfigError, match="rtt_s: one finite round trip > 0 per flow"):
            simulate_fluid([[0]], [1e3], [50e9], "ib", rtt_s=bad)


def test_a_chained_flow_waits_for_its_own_round_trip() -> None:
    """Two chains of two 50 kB flows, each on its own 400 Gb/s link: a flow takes 50e3 / 50e9 = 1 us (two
    steps of 0.5 us). The successor starts its own RTT after its predecessor's end: 1 + 1 = 2 us with a
    1 us RTT, 1 + 5 = 6 us with 5 us; it ends 1 us later."""
    res = simulate_fluid(
        [[0], [0], [1], [1]],
        [50e3] * 4,
        [50e9, 50e9],
        "ib",
        after=[-1, 0, -1, 2],
        rtt_s=[1e-6, 1e-6, 5e-6, 5e-6],
    )
    np.testing.assert_allclose(res.flow_start_s, [0, 2e-6, 0, 6e-6], atol=1e-12)
    np.testing.assert_allclose(res.flow_end_s, [1e-6, 3e-6, 1e-6, 7e-6], atol=1e-12)


def test_a_collective_under_a_transport_states_its_base_rtts() -> None:
    """A ring all-reduce on 4 DGX H100 nodes: ring neighbours over NVLink (2 x 0.6 us hops) and across
    nodes on one rail (NIC -> leaf -> NIC, 2 x 0.13 us hops); the result's dict carries them (as
    ``collective --json``)."""
    spec = preset("dgx-h100-superpod", nodes=4)
    res = collective_time(
        "all_reduce", 1e6, spec, engine="flow", routing="spray", algorithm="ring", transport="ib"
    )
    rtt = res.to_dict()["extra"]["transport"]["base_rtt_s"]
    topo = build_topology(spec)
    cap = link_capacity(topo)
    nic, nvl = topo.nic_up[0, 0], topo.gpu_up[0]
    assert rtt["min"] == pytest.approx(2 * (2 * QM9700 + (MTU + ACK) / cap[nic]), rel=1e-9)  # 0.69 us
    assert rtt["max"] == pytest.approx(2 * (2 * 0.6e-6 + (MTU + ACK) / cap[nvl]), rel=1e-9)  # 2.42 us


def test_the_memory_estimate_counts_the_longest_round_trip() -> None:
    """By hand: with per-flow RTTs of at most 2 us, A = D = 2 / 0.5 = 4 steps of history (a flow's DCQCN
    feedback delay is its RTT), so 8 B x (24 E + (40 + 3 x 4 + 2 x 4) F + 30 L)."""
    got = fluid_bytes(10, 30, 5, FluidConfig(), dcqcn_preset("conext16"), max_rtt_s=2e-6)
    assert got == 8.0 * (24 * 30 + 60 * 10 + 30 * 5)
