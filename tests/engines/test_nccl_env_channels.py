"""NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS and NCCL_IB_QPS_PER_CONNECTION are modelled, not refused."""

from __future__ import annotations

import pytest

from aifabric.catalog.transport import transport
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.tiers import nic_stream_factor, tier_model
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

ONE_NODE = preset("h100-ib-2node", nodes=1)
# 4 nodes of one B300 with one 800G RoCEv2 NIC each (the lesson's NIC and fabric; DGX B300 datasheet:
# ConnectX-8 800 Gb/s per GPU). Behind the lesson's H100 that NIC would run at the GPU's PCIe Gen5 x16
# link, 57.6 GB/s; B300's Gen6 x16 carries 111.1 GB/s, above the NIC's 98.0
ONE_GPU_PER_NODE = preset("lesson", nodes=4, gpus_per_node=1).with_changes(accelerator="b300")


def _busbw(spec, env):  # noqa: ANN001, ANN202
    r = formula_collective("all_reduce", 2**32, spec, algorithm="ring", protocol="Simple", env=env)
    return r.busbw_bytes_per_s


def test_max_nchannels_leaves_its_share_of_the_channels():
    # 8 x H100, one node: NCCL's search finds 12 x 30 GB/s, duplicated to 24 channels (connect.cc); the
    # ring's busBw is nChannels x bw (tuning.cc), so NCCL_MAX_NCHANNELS=12 keeps 12/24 of it:
    # 370.8 GB/s x 12/24 = 185.4 GB/s (latency is 0.1 % of a 4 GiB call).
    assert tier_model(ONE_NODE, max_nchannels=12).channels[0] == 12
    full, half = _busbw(ONE_NODE, {}), _busbw(ONE_NODE, {"NCCL_MAX_NCHANNELS": "12"})
    assert half / full == pytest.approx(12 / 24, rel=0.002)
    assert half / 1e9 == pytest.approx(370.8 / 2, rel=0.01)


def test_min_nchannels_raises_the_channels_and_the_streams_per_nic():
    # 8 x H100 with two 400G RoCEv2 NICs per GPU (16 per node, as "8 dual-port CX7" in case 24): NCCL runs
    # 16 channels across nodes, one stream per NIC, which reaches RoCE's one-stream 0.95 of the 0.968 all
    # streams reach (transports.yaml): 2 x 50 GB/s x 0.9804 (CX-7 payload under RoCEv2 framing, 4096 / 4178)
    # x 0.95 / 0.968 = 96.22 GB/s per GPU. NCCL_MIN_NCHANNELS=32 (connect.cc copies channels up to it) puts
    # 2 streams on each NIC: 98.04. Both pass what the H100's own PCIe Gen5 x16 link carries to its NICs
    # (GPUDirect RDMA: 64 GB/s x 0.900 bulk-DMA payload = 57.6 GB/s; H100 datasheet, PCI-SIG), which bounds
    # the GPU's scale-out either way.
    spec = ClusterSpec.model_validate(
        {
            "name": "h100-2nic",
            "accelerator": "h100-sxm",
            "gpus_per_node": 8,
            "nodes": 2,
            "scale_up": {"kind": "nvswitch"},
            "scale_out": {
                "nic": "connectx-7",
                "fabric": "ethernet",
                "switch": "spectrum-4-sn5600-400g",
                "nics_per_gpu": 2,
                "planes": 2,
            },
        }
    )
    default, raised = tier_model(spec), tier_model(spec, min_nchannels=32)
    assert (default.channels[1], raised.channels[1]) == (16, 32)
    assert default.nic_own_bytes_per_s / 1e9 == pytest.approx(100 * 4096 / 4178 * 0.95 / 0.968, rel=1e-3)
    assert raised.nic_own_bytes_per_s / 1e9 == pytest.approx(100 * 4096 / 4178, rel=1e-3)
    pcie = 64 * 128 / 130 * 256 / 280  # GB/s
    assert default.nic_bytes_per_s / 1e9 == raised.nic_bytes_per_s / 1e9 == pytest.approx(pcie, rel=1e-3)
    # above NCCL's default the links are already full: more channels do not add NVLink bandwidth
    assert _busbw(ONE_NODE, {"NCCL_MIN_NCHANNELS": "32"}) == pytest.approx(_busbw(ONE_NODE, {}), rel=1e-9)


def test_qps_per_connection_adds_streams_on_the_nic():
    # One B300 per node, one 800G RoCEv2 NIC: NCCL_MAX_NCHANNELS=1 leaves one channel of the default 8
    # across nodes, one stream on the NIC: 1/8 of the ring's busbw at RoCE's one-stream efficiency,
    # 98.3 / 8 x 0.95 / 0.968 = 12.06 GB/s. 2 QPs per connection make 2 streams on the NIC (net_ib),
    # which then reaches RoCE's aggregate efficiency: busbw x 0.968 / 0.95 = x 1.0189. On InfiniBand
    # one QP reaches 0.98 of line rate against 0.982 for all streams: 0.98 / 0.982 = 0.998; 1 with 2 QPs.
    env = {"NCCL_MAX_NCHANNELS": "1"}
    one = _busbw(ONE_GPU_PER_NODE, env)
    two = _busbw(ONE_GPU_PER_NODE, env | {"NCCL_IB_QPS_PER_CONNECTION": "2"})
    assert tier_model(ONE_GPU_PER_NODE).channels[1] == 8
    assert one / 1e9 == pytest.approx(98.3 / 8 * 0.95 / 0.968, rel=0.01)
    assert two / one == pytest.approx(0.968 / 0.95, rel=0.002)
    ib = transport("ib-verbs")
    assert nic_stream_factor(ib, 1, 1) == pytest.approx(0.98 / 0.982)
    assert nic_stream_factor(ib, 1, 1, qps=2) == 1.0
    # 24 channels over 8 NICs (3 streams each): the NICs are full whatever the QPs
    assert nic_stream_factor(transport("roce-v2"), 24, 8) == 1.0


def test_channel_variables_with_precomputed_tiers_are_refused():
    tm = tier_model(ONE_NODE)
    with pytest.raises(ConfigError, match="NCCL_MIN/MAX_NCHANNELS"):
        formula_collective("all_reduce", 2**20, ONE_NODE, tiers=tm, env={"NCCL_MAX_NCHANNELS": "4"})
