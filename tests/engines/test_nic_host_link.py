"""A GPU's own PCIe link bounds its scale-out: GPUDirect RDMA moves its bytes to its NIC(s) over that x16
link, so per GPU B_o = min(NIC payload, x16 bulk-DMA rate) (ClusterSpec.nic_effective_bytes_per_s), in
every engine; and a one-rank collective is NCCL's copy of its buffer (engines/one_rank.py)."""

import pytest

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.api import collective_time
from aifabric.engines.one_rank import one_rank_copy_s

#: x16 bulk-DMA payload rates, GB/s per direction: lanes x GT/s / 8 x line code x 256 / (256 + 24) for
#: Gen4/Gen5 (128b/130b; catalogue scaleup.yaml dma_payload_efficiency 0.9002), Gen6 flits 0.8676.
GEN4 = 16 * 16 / 8 * 128 / 130 * 256 / 280
GEN5 = 16 * 32 / 8 * 128 / 130 * 256 / 280
GEN6 = 16 * 64 / 8 * 0.8676


def _two_nodes(accelerator: str, nic: str, speed: str, switch: str) -> ClusterSpec:
    """2 x 8 GPUs on NVSwitch, one NIC per GPU, RoCE on one non-blocking Ethernet leaf."""
    return ClusterSpec.model_validate(
        {
            "name": f"{accelerator}-{nic}",
            "accelerator": accelerator,
            "gpus_per_node": 8,
            "nodes": 2,
            "scale_up": {"kind": "nvswitch"},
            "scale_out": {"nic": nic, "nic_speed": speed, "fabric": "ethernet", "switch": switch},
        }
    )


H100_CX8 = _two_nodes("h100-sxm", "connectx-8", "800 Gb/s", "spectrum-4-sn5600-800g")


@pytest.mark.parametrize(
    ("spec", "want_gbps"),
    [
        # H100 (PCIe Gen5, datasheet) behind an 800G ConnectX-8 (98.0 GB/s of RoCE payload): the x16 binds
        (H100_CX8, GEN5),
        # A100 (Gen4) behind a 400G ConnectX-7 (49.0): 28.8
        (_two_nodes("a100-sxm-80gb", "connectx-7", "400 Gb/s", "spectrum-4-sn5600-400g"), GEN4),
        # H100 behind a 400G ConnectX-7 (DGX H100): the NIC binds, 50 x 4096 / 4178 = 49.02
        (_two_nodes("h100-sxm", "connectx-7", "400 Gb/s", "spectrum-4-sn5600-400g"), 50 * 4096 / 4178),
        # B300 (Gen6, 111.1) behind an 800G ConnectX-8 (DGX B300): the NIC binds, 98.04
        (_two_nodes("b300", "connectx-8", "800 Gb/s", "spectrum-4-sn5600-800g"), 100 * 4096 / 4178),
    ],
)
def test_scale_out_per_gpu_is_the_smaller_of_nic_and_pcie(spec, want_gbps):
    assert spec.nic_effective_bytes_per_s / 1e9 == pytest.approx(want_gbps, rel=1e-3)
    binds = spec.nic_payload_bytes_per_s > spec.nic_host_link_bytes_per_s
    assert (spec.nic_host_link_note is not None) == binds


def test_a_rubin_package_reaches_its_two_nics_over_two_x16_links():
    # two 800G ConnectX-9 per Rubin package, each on its own Gen6 x16 (catalogue nic_pcie_links: 2):
    # 2 x 111.1 GB/s, above the 1.6 Tb/s payload (196.6), so the NICs bind
    spec = preset("rubin-nvl72")
    assert spec.nic_host_link_bytes_per_s / 1e9 == pytest.approx(2 * GEN6, rel=1e-3)
    assert spec.nic_effective_bytes_per_s == spec.nic_payload_bytes_per_s


def test_a_tpu_has_no_pcie_bound():
    spec = preset("tpu-v5p-pod")
    assert spec.nic_host_link_bytes_per_s == float("inf")


@pytest.mark.parametrize("engine", ["formula", "links", "flow"])
def test_every_engine_runs_the_nic_at_the_gpus_pcie_link_and_says_so(engine):
    # send_recv across 2 nodes: the boundary rank's NIC hop, 1 GiB at 57.6 GB/s = 18.64 ms (+ latency)
    r = collective_time("send_recv", 2**30, H100_CX8, engine=engine)
    assert r.busbw_bytes_per_s / 1e9 == pytest.approx(GEN5, rel=0.002)
    assert "PCIe Gen5 x16 link(s) to its NIC, 57.6 GB/s" in r.explanation


def test_one_rank_out_of_place_is_one_read_and_one_write_of_hbm():
    # 1 GiB on an H100 SXM (3,350 GB/s, datasheet): 2 x 2^30 / 3.35e12 = 641.04 us; algbw = HBM / 2
    r = collective_time("all_reduce", 2**30, "dgx-h100-superpod", ranks=1)
    assert r.time_s == pytest.approx(one_rank_copy_s(2**30, 3350e9)) == pytest.approx(641.04e-6, rel=1e-5)
    assert r.algbw_bytes_per_s == pytest.approx(3350e9 / 2)
    assert r.busbw_bytes_per_s == 0.0  # all_reduce's 2 (n - 1) / n at n = 1
