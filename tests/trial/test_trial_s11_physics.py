"""Physics defects a trial of user cluster files found: each test runs one command; its docstring holds the
command, what it printed and what the physics (or the cited source) says it should do."""

import pytest

from .commands import example_cluster, result_json

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: PCIe payload rate of an x16 link per direction, GB/s: lanes x GT/s / 8 x 0.900, the payload efficiency
#: README states for bulk DMA (128/130 line code x 256-B TLPs with 24 B of framing and header). PCI-SIG
#: base specifications: Gen4 16 GT/s, Gen5 32 GT/s per lane.
X16_PAYLOAD_GBPS = {"gen4": 16 * 16 / 8 * 0.900, "gen5": 16 * 32 / 8 * 0.900}


@pytest.mark.parametrize(
    ("accelerator", "gen", "scale_out"),
    [
        # A100 SXM4 datasheet: PCIe Gen4 x16; a ConnectX-7 at NDR 400 Gb/s behind it.
        ("a100-sxm-80gb", "gen4", {}),
        # H100 SXM5 datasheet: PCIe Gen5 x16; a ConnectX-8 at XDR 800 Gb/s on 800G switch ports.
        (
            "h100-sxm",
            "gen5",
            {"nic": "connectx-8", "nic_speed": "800 Gb/s", "switch": "spectrum-4-sn5600-800g"},
        ),
    ],
)
def test_a_nic_faster_than_the_gpus_pcie_link_runs_at_the_link_rate(tmp_path, accelerator, gen, scale_out):
    """``aifabric collective send_recv -c <examples/cluster.yaml, non-blocking, accelerator: a100-sxm-80gb>
    --nodes 2 -s 1GiB`` printed busbw 49.0 GB/s ("the slowest hop over a NIC at 49.0 GB/s"); the same file
    with h100-sxm and a ConnectX-8 at 800 Gb/s printed 97.8 GB/s.

    GPUDirect RDMA moves a GPU's bytes to its NIC over PCIe (the NIC reads GPU memory through the PCIe
    switch): on an A100 that is a Gen4 x16 link, 28.8 GB/s of payload per direction, on an H100 Gen5 x16,
    57.6 GB/s. The catalogue records each GPU's generation (accelerators.yaml ``pcie``) and README already
    bounds the NIC hop of PCIe-only nodes by the GPU's x16 link ("Each GPU's x16 link bounds its NIC hop in
    both"); on an NVSwitch node the NIC hop still crosses that link, so send_recv between two nodes cannot
    beat it (NVIDIA pairs ConnectX-8's 800 Gb/s with PCIe Gen6 hosts for this reason: DGX B300, not H100).
    """
    cluster = example_cluster(tmp_path, f"pcie-{gen}", **scale_out)
    text = (tmp_path / f"pcie-{gen}.yaml").read_text().replace("h100-sxm", accelerator)
    (tmp_path / f"pcie-{gen}.yaml").write_text(text)
    out = result_json(["collective", "send_recv", "-c", cluster, "--nodes", "2", "-s", "1GiB"])
    busbw = out["busbw_bytes_per_s"] / 1e9
    assert busbw <= X16_PAYLOAD_GBPS[gen] * 1.01, (busbw, X16_PAYLOAD_GBPS[gen], out["explanation"])


def test_a_one_rank_all_reduce_still_copies_its_buffer():
    """``aifabric collective all_reduce --ranks 1 -s 1GiB`` printed "1 rank: nothing to communicate (time
    0)", and the nccl-tests-like sweep (``--ranks 1 -b 8 -e 1MiB``) printed 0.00 us on every row.

    NCCL does not return at once on one rank: ``ncclEnqueueCheck`` calls ``ncclLaunchOneRank`` (NCCL
    2.26.2 src/enqueue.cc), which for a sum out of place copies the send buffer into the receive buffer
    with ``cudaMemcpyAsync`` (src/device/onerank.cu) -- the out-of-place column nccl-tests reports first.
    That copy reads and writes S bytes of HBM: at least 2 x 1 GiB / 3,350 GB/s (H100 SXM datasheet,
    catalogue ``hbm_bandwidth``) = 0.64 ms, and a time of 0 makes algbw = size / time undefined."""
    out = result_json(["collective", "all_reduce", "--ranks", "1", "-s", "1GiB"])
    floor = 2 * 2**30 / 3350e9
    assert out["time_s"] >= floor, (out["time_s"], floor, out["explanation"])
