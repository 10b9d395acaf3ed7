"""What the NICs a communicator reaches carry (collectives/tiers.py ``domain_nic_bytes_per_s``,
``nic_stream_factor``), and the x16 link a PCIe-only GPU reaches its NIC over (collectives/direct.py).

Each test is a violation found by running the bounds of tests/engines/test_bounds.py over random clusters
(accelerators, NIC counts, transports, NCCL variables): the bound is derived by hand in its comment.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import formula_collective

GB = 1e9


def _l40s(gpus_per_nic: int) -> ClusterSpec:
    # 2 nodes of 8 x L40S (PCIe Gen4 x16, no NVLink: L40S datasheet), ConnectX-7 400G shared by gpus_per_nic
    return ClusterSpec.from_dict(
        {
            "accelerator": "l40s",
            "gpus_per_node": 8,
            "nodes": 2,
            "scale_up": {"kind": "pcie"},
            "scale_out": {"nic": "connectx-7", "gpus_per_nic": gpus_per_nic},
        }
    )


@pytest.mark.parametrize("gpus_per_nic", [1, 2, 4, 8])
def test_one_rank_per_pcie_node_is_bounded_by_its_x16_link(gpus_per_nic):
    # GPU 0 sends 4 GiB to GPU 8 on the other node. The bytes leave GPU 0 over its own PCIe Gen4 x16 link
    # (GPUDirect RDMA: 24.0 GB/s, the model's PCIe figure for L40S), then its NIC (ConnectX-7, 50 x 0.983 =
    # 49.15 GB/s, however many GPUs share it: only this one sends): busbw <= min(24.0, 49.15) = 24.0 GB/s,
    # whatever the NICs per node. Before: 12.26 (1 NIC per GPU: NCCL's 2 channels spread over all 8 NICs of
    # the node, 49.15 x 2/8, though this rank's two channels run on its own NIC), 24.5 (2 per NIC), 49.0 (4)
    # and 49.1 GB/s (8: twice its x16 link): more NICs were slower, and the link was not a bound.
    spec = _l40s(gpus_per_nic)
    r = formula_collective("send_recv", 2**32, spec, Communicator.from_gpus(spec, [0, 8]))
    assert r.busbw_bytes_per_s <= 24.0 * GB
    assert r.busbw_bytes_per_s / GB == pytest.approx(24.0, rel=1e-3)  # latency 22.4 us of 179 ms


def test_a_pcie_all_to_all_over_more_nodes_is_not_faster():
    # 8 x A30 per node (PCIe Gen4 x16, 32 GB/s line rate) with 4 x ConnectX-5 (4 x 12.5 = 50 GB/s) per GPU,
    # line rate. A rank sends (g-1)/n S to its node's peers and (n-g)/n S through its NICs, all of it over
    # its one x16 link: T >= (n-1)/n S / 32 GB/s. 1 GiB over 2 nodes: 15/16 x 2^30 / 32e9 = 31.457 ms; over
    # 3 nodes 23/24 x 2^30 / 32e9 = 32.156 ms. Before, each share had a link of its own (max, not sum):
    # 3 nodes ran in max(7/24 / 32, 16/24 / 50) = 14.3 ms, faster than 2 nodes' 14.7 ms.
    spec = ClusterSpec.from_dict(
        {
            "accelerator": "a30",
            "gpus_per_node": 8,
            "nodes": 3,
            "scale_up": {"kind": "pcie"},
            "scale_out": {"nic": "connectx-5", "nics_per_gpu": 4, "planes": 4},
        }
    )
    two, three = (
        formula_collective("all_to_all", 2**30, spec, Communicator.contiguous(spec, n), efficiency=eff)
        for n, eff in ((16, "line_rate"), (24, "line_rate"))
    )
    assert two.time_s * 1e3 == pytest.approx(15 / 16 * 2**30 / 32e9 * 1e3, rel=1e-9)
    assert three.time_s * 1e3 == pytest.approx(23 / 24 * 2**30 / 32e9 * 1e3, rel=1e-9)
    assert three.time_s > two.time_s


def _cx5_nodes(nics_per_gpu: int) -> ClusterSpec:
    # 2 nodes of 8 x H100 SXM, ConnectX-5 100G InfiniBand (12.5 x 0.96 = 12.0 GB/s payload per NIC)
    return ClusterSpec.from_dict(
        {
            "accelerator": "h100-sxm",
            "gpus_per_node": 8,
            "nodes": 2,
            "scale_out": {"nic": "connectx-5", "nics_per_gpu": nics_per_gpu, "planes": nics_per_gpu},
        }
    )


def test_max_nchannels_is_charged_once():
    # NCCL_MAX_NCHANNELS=2, 4 GiB ring all_reduce, Simple. NCCL's search runs C0 = 16 channels across nodes
    # on 8 NICs (32 on 16 NICs); the tuner keeps C / C0 of the bandwidth those channels carry (tuning.cc
    # busBw = nChannels x bw): with one NIC per GPU 8 x 12.0 = 95.8 GB/s x 2/16 = 11.98 GB/s busbw, with two
    # 191.6 x 2/32 = 11.98. Before, the two channels also left 6 of 8 NICs idle in the streams factor
    # (x 2/8: 2.99 GB/s), and 14 of 16 with two NICs per GPU (1.50 GB/s): more NICs were slower.
    env = {"NCCL_MAX_NCHANNELS": "2"}
    busbw = [
        formula_collective("all_reduce", 2**32, _cx5_nodes(k), algorithm="ring", protocol="Simple", env=env)
        .busbw_bytes_per_s for k in (1, 2, 4)
    ]  # fmt: skip
    assert busbw[0] / GB == pytest.approx(95.8 * 2 / 16, rel=0.002)
    assert busbw == sorted(busbw)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    op=st.sampled_from(["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all"]),
    size=st.sampled_from([2**10, 2**20, 2**26, 2**30]),
    gpus_per_nic=st.sampled_from([2, 4, 8]),
    max_channels=st.sampled_from([None, "1", "2", "4"]),
)
def test_more_nics_on_a_pcie_node_are_never_slower(op, size, gpus_per_nic, max_channels):
    # Halving the GPUs per NIC doubles a node's NICs: every byte's path only gains bandwidth, with NCCL's
    # own channels or fewer (NCCL_MAX_NCHANNELS)
    env = {"NCCL_MAX_NCHANNELS": max_channels} if max_channels else None
    fewer = formula_collective(op, size, _l40s(gpus_per_nic), env=env).time_s
    more = formula_collective(op, size, _l40s(gpus_per_nic // 2), env=env).time_s
    assert more <= fewer * (1 + 1e-9)
