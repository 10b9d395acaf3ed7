"""nccl-tests' sendrecv on N ranks: every rank sends S to the next and receives S from the previous
(``src/sendrecv.cu``; busbw = algbw), and NCCL's p2p channels per network peer by release
(``src/graph/paths.cc`` ncclTopoGetNchannels / ncclTopoComputeP2pChannels)."""

from __future__ import annotations

import pytest
from tests.collectives.test_nic_reach import _l40s

from aifabric.catalog.nccl import nccl_release
from aifabric.catalog.nccl_p2p import P2pShape, net_peer_channels, p2p_channels
from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.direct import p2p_cost, p2p_peer_channels
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import Protocol, tier_model
from aifabric.engines.api import collective_time
from aifabric.engines.formula import formula_collective

S = 2**29  # 512 MiB, nccl #1272's row


def _busbw(comm: Communicator, efficiency: str) -> float:
    spec = preset("h100-ib-2node")
    c = p2p_cost(Collective.SEND_RECV, Protocol.SIMPLE, S, comm, tier_model(spec, efficiency=efficiency))
    assert c is not None
    return S / c.time_s


def test_eight_ranks_on_one_node_send_over_nvlink_at_the_gpus_whole_rate() -> None:
    # 8 x H100 SXM on NVSwitch: each rank sends 512 MiB to the next over the switch, which gives one peer
    # the GPU's whole NVLink4 rate, 18 links x 25 GB/s = 450 GB/s per direction (H100 datasheet);
    # every rank sends and receives one message at once (full duplex): busbw = 450 GB/s at line rate
    spec = preset("h100-ib-2node")
    assert _busbw(Communicator.contiguous(spec, 8), "line_rate") == pytest.approx(450e9, rel=1e-9)


def test_sixteen_ranks_on_two_nodes_are_bound_by_one_nic() -> None:
    # 2 x 8 H100, one ConnectX-7 400 Gb/s NIC per GPU: ranks 0-6 and 8-14 send over NVLink (450 GB/s);
    # rank 7 sends to rank 8 and rank 15 to rank 0 over their own NIC, 400e9 / 8 = 50 GB/s, the slowest
    # hop: busbw = 50 GB/s at line rate (9x below the NVLink hops)
    spec = preset("h100-ib-2node")
    ring = Communicator.contiguous(spec)
    assert _busbw(ring, "line_rate") == pytest.approx(50e9, rel=1e-9)
    # with NCCL's efficiencies the boundary rank's NIC gives what one rank alone on its NIC gets: the same
    # figure as a pair across the nodes (invariant: one sender per NIC either way)
    pair = Communicator.from_gpus(spec, [7, 8])
    assert _busbw(ring, "nccl") == pytest.approx(_busbw(pair, "nccl"), rel=1e-12)
    assert _busbw(ring, "nccl") < _busbw(Communicator.contiguous(spec, 8), "nccl")


@pytest.mark.parametrize("n", [8, 64])
def test_links_engine_plans_the_same_ring_of_sends(n: int) -> None:
    # the plan sends S from every rank to the next: on a non-blocking fabric the busiest link is a
    # boundary rank's NIC (or, on one node, a GPU's NVLink), as the formula prices
    spec = preset("dgx-h100-superpod", nodes=max(1, n // 8))
    for size in (2**20, 2**30):
        f = collective_time("send_recv", size, spec, ranks=n, algorithm="p2p", protocol="Simple")
        links = collective_time("send_recv", size, spec, ranks=n, algorithm="p2p", engine="links")
        assert links.time_s == pytest.approx(f.time_s, rel=0.02)


def test_net_peer_channels_follow_each_release_rule() -> None:
    # NVIDIA/nccl #1272: 8 nodes x 4 GH200, one 200 Gb/s (25 GB/s) NIC per GPU, 32 ranks. 2.19 (paths.cc:
    # NCHANNELS_PER_NET_PEER 2) gives every network peer 2 channels. 2.20 halves while 2 x nRanks >
    # 4 x p2pnChannels: with 8 p2p channels, 64 > 32 -> 1 at 32 ranks; 32 = 32 -> 2 at 16 ranks (the
    # thread sees no drop up to 4 nodes). 2.29 on: ceil(25 / 14) = 2 channels, 2 x ceil(32 / 8) = 8 <= 8.
    shape = P2pShape(n_ranks=32, n_nodes=8, comm_channels=8, local_nics=1, local_nic_gbps=25)
    sixteen = shape.model_copy(update={"n_ranks": 16, "n_nodes": 4})

    def channels(version: str, s: P2pShape) -> int:
        rel = nccl_release(version)
        assert rel.net_peer_channels is not None
        return net_peer_channels(rel.net_peer_channels, s, rel.max_channels)

    assert [channels(v, shape) for v in ("2.19.4", "2.20.5", "2.30.3")] == [2, 1, 2]
    assert [channels(v, sixteen) for v in ("2.19.4", "2.20.5", "2.30.3")] == [2, 2, 2]
    # a stated NCCL_NCHANNELS_PER_NET_PEER=4 replaces the rule (the thread's 24.2 GB/s run on 2.20.5)
    rel = nccl_release("2.20.5")
    assert rel.net_peer_channels is not None
    assert net_peer_channels(rel.net_peer_channels, shape, rel.max_channels, stated=4) == 4


def test_p2p_channels_round_the_communicator_channels_up_to_a_power_of_two() -> None:
    # ncclTopoComputeP2pChannels: p2pnChannels = nextPow2(min(nChannels, MAXCHANNELS))
    shape = P2pShape(n_ranks=16, n_nodes=2, comm_channels=24)
    assert p2p_channels(shape, 32) == 32
    assert p2p_channels(shape.model_copy(update={"comm_channels": 12}), 32) == 16


def test_a_cluster_reads_its_own_channels_per_net_peer() -> None:
    # 2 x 8 H100, 400 Gb/s NICs (50 GB/s NCCL speed), 16 communicator channels across nodes:
    # 2.30: ceil(50 / 14) = 4, 4 x ceil(16 / 8) = 8 <= 16 -> 4; 2.19: 2; one node: no network peer
    spec = preset("h100-ib-2node")
    ring = Communicator.contiguous(spec)
    assert p2p_peer_channels(tier_model(spec, nccl_version="2.30.3"), ring) == 4
    assert p2p_peer_channels(tier_model(spec, nccl_version="2.19.4"), ring) == 2
    assert p2p_peer_channels(tier_model(spec), Communicator.contiguous(spec, 8)) is None


@pytest.mark.parametrize("gpus_per_nic", [1, 4])
def test_the_boundary_rank_has_its_nic_to_itself_as_a_pair_does(gpus_per_nic: int) -> None:
    # 2 x 8 L40S (PCIe Gen4 only) with NICs shared by gpus_per_nic GPUs: of each node only rank 7 (15)
    # sends across, over its own x16 link (24.0 GB/s, GPUDirect RDMA) then its NIC (49.15 GB/s), however
    # many GPUs share the NIC. On a release that states the network rate one p2p channel is sized for
    # (paths.cc v2.29.2-1 P2P_PER_CHANNEL_NET_BW, 14 GB/s), each send also runs on the channels NCCL gives a
    # network peer: the pair keeps ceil(49.15 / 14) = 4 (56 GB/s, above its x16 link), the ring of 16 ranks
    # halves them to what 16 ranks in ceil(16 / 8) = 2 batches fit in its p2p channels, 1 here: 14.0 GB/s
    spec = _l40s(gpus_per_nic)
    ring_comm = Communicator.contiguous(spec)
    ring = formula_collective("send_recv", 2**32, spec, ring_comm)
    pair = formula_collective("send_recv", 2**32, spec, Communicator.from_gpus(spec, [7, 8]))
    assert pair.busbw_bytes_per_s / 1e9 == pytest.approx(24.0, rel=1e-3)
    assert p2p_peer_channels(tier_model(spec), ring_comm) == 1
    assert ring.busbw_bytes_per_s / 1e9 == pytest.approx(14.0, rel=1e-3)
    # before that release the channels are not priced: the ring runs at the pair's rate, as before
    old = formula_collective("send_recv", 2**32, spec, ring_comm, nccl_version="2.28.9")
    old_pair = formula_collective(
        "send_recv", 2**32, spec, Communicator.from_gpus(spec, [7, 8]), nccl_version="2.28.9"
    )
    assert old.busbw_bytes_per_s == pytest.approx(old_pair.busbw_bytes_per_s, rel=1e-12)
    assert old.busbw_bytes_per_s / 1e9 == pytest.approx(24.0, rel=1e-3)


def test_links_engine_names_the_p2p_channel_floor_when_it_sets_the_time() -> None:
    # 10 x 8 H100, one 400 Gb/s NIC (50 GB/s) per GPU, newest NCCL: 80 ranks leave each network peer one
    # p2p channel, sized for 14 GB/s (paths.cc P2P_PER_CHANNEL_NET_BW), so the boundary NIC runs at 28% and
    # the time is the channel's, 2^30 / 14e9 s plus the launch: the explanation says so rather than
    # leaving the hottest link's share unexplained; on one node no floor applies and nothing is said
    spec = preset("dgx-h100-superpod", nodes=10)
    far = collective_time("send_recv", 2**30, spec, ranks=80, algorithm="p2p", engine="links")
    assert far.time_s - far.latency_s == pytest.approx(2**30 / 14e9, rel=1e-9)
    assert "the p2p channels to the network peer set the time" in far.explanation
    near = collective_time("send_recv", 2**30, spec, ranks=8, algorithm="p2p", engine="links")
    assert "p2p channels" not in near.explanation
