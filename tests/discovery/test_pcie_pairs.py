"""PCIe cards as ``inspect`` and ``nccl-tests compare`` model them: an NVLink-bridged pair, NCCL's P2P line,
a matrix without NVLink, and a node whose NICs lack GPUDirect RDMA carried in the spec it prints.

Inputs are small hand-written ``nvidia-smi topo -m`` matrices; each test says which cells.
"""

from __future__ import annotations

import pytest

from aifabric import catalog
from aifabric.cluster.spec import ClusterSpec
from aifabric.discovery.inference import DEFAULT_PCIE_GPU, log_scale_up
from aifabric.discovery.nccl_info import Evidence
from aifabric.discovery.node import inspect_node_text
from aifabric.engines.formula import formula_collective

#: Two cards whose matrix shows NV12 between them: 12 NVLink 4 links, an H100 PCIe / NVL bridge.
PAIR = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\t0-31\t0\nGPU1\tNV12\t X \t0-31\t0\n"
#: Four GPUs meeting through the CPU, no NV# anywhere.
NO_NVLINK = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tPHB\tSYS\tSYS\t0-15\t0\nGPU1\tPHB\t X \tSYS\tSYS\t0-15\t0\n"
    "GPU2\tSYS\tSYS\t X \tPHB\t16-31\t1\nGPU3\tSYS\tSYS\tPHB\t X \t16-31\t1\n"
)
P2P_LINE = Evidence(9, "Channel 00/0 : 1[21000] -> 0[1000] via P2P/direct pointer")  # NVIDIA/nccl-tests #194
SHM_LINE = Evidence(9, "Channel 00 : 0[0] -> 1[1] via SHM/direct/direct")


def test_two_bridged_h100_pcie_cards_run_at_the_bridge():
    (node,) = inspect_node_text(PAIR, gpu="h100-pcie")
    assert node.spec_data["scale_up"] == {"kind": "nvswitch", "link": "nvlink4-bridge"}
    assert node.group_shape(node.nvlink_groups[0]) == "full mesh"  # a bridge, no NVSwitch
    # 2-rank ring at 4 GiB: 12 NVLink 4 links x NCCL's SM90_NVLINK_BW 20.6 GB/s = 247.2 GB/s per direction
    # (H100 datasheet: bridge 600 GB/s both ways = 12 x 50 GB/s; NCCL topo.h, topo.cc ncclTopoAddNvLinks)
    assert node.expected[0].busbw_bytes_per_s == pytest.approx(247.2e9, rel=0.01)


def test_a_matrix_without_nvlink_is_a_pcie_card():
    (node,) = inspect_node_text(NO_NVLINK)
    assert node.accelerator == DEFAULT_PCIE_GPU and not catalog.accelerator(node.accelerator).nvlink
    assert node.spec.scale_up.kind == "pcie"


def test_a_p2p_line_runs_p2p_and_a_bridged_pair_at_its_bridge():
    pcie = {"kind": "pcie", "link": "pcie-gen5", "p2p_through_cpu": True}
    notes: list[str] = []
    assert log_scale_up(pcie, "h100-nvl", 2, (SHM_LINE,), notes) == pcie and not notes  # SHM: unchanged
    assert log_scale_up(pcie, "h100-nvl", 2, (P2P_LINE,), notes) == {
        "kind": "nvswitch",
        "link": "nvlink4-bridge",
    }
    assert "line 9" in notes[-1]
    # four cards: a bridge joins two only (the datasheet's "between pairs only"), so P2P over PCIe
    four = log_scale_up(pcie, "h100-pcie", 4, (P2P_LINE,), notes)
    assert four == {**pcie, "p2p_through_cpu": False}
    assert (
        log_scale_up(pcie, "l40s", 2, (P2P_LINE,), notes)["p2p_through_cpu"] is False
    )  # no bridge in catalogue


def _two_gpus_two_nics(path: str) -> str:
    """Two H100 SXM GPUs on NV18, each with a NIC at GPU-NIC path ``path``."""
    return (
        "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\n"
        f"GPU0\t X \tNV18\t{path}\tNODE\t0-31\t0\nGPU1\tNV18\t X \tNODE\t{path}\t0-31\t0\n"
        f"NIC0\t{path}\tNODE\t X \tNODE\nNIC1\tNODE\t{path}\tNODE\t X \n"
    )


def test_nics_behind_the_cpu_are_in_the_printed_spec():
    (node,) = inspect_node_text(_two_gpus_two_nics("SYS"), gpu="h100-sxm")
    assert node.spec_data["scale_out"]["nic_path"] == "PHB"  # each GPU pairs with its NODE NIC: NCCL's PHB
    saved = ClusterSpec.from_dict(node.spec_data).with_changes(nodes=2)
    two = next(e for e in node.expected if e.n_nodes == 2)
    ring = formula_collective("all_reduce", two.message_bytes, saved, algorithm="ring")
    assert ring.busbw_bytes_per_s == pytest.approx(two.busbw_bytes_per_s, rel=1e-6)
    (good,) = inspect_node_text(_two_gpus_two_nics("PIX"), gpu="h100-sxm")
    assert "nic_path" not in good.spec_data["scale_out"]  # GPUDirect RDMA: the default PIX stands
    good_two = next(e for e in good.expected if e.n_nodes == 2)
    # host staging keeps 0.667 of a 400G NIC whose Gen5 x16 GPU link carries all of it (NVIDIA/nccl #412)
    assert two.busbw_bytes_per_s == pytest.approx(good_two.busbw_bytes_per_s * 0.667, rel=0.01)
