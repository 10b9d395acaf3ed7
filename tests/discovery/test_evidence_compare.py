"""compare follows NCCL's INFO lines: verdicts on hand-written logs and on every shared case.

Hand-written logs: a 2-node (16 x H100, 8 x 400G per node) all_reduce whose rows are built from a published
busbw figure, preceded by NCCL INFO lines in NCCL's own format (see test_nccl_info.py).
"""

from __future__ import annotations

import pytest

from aifabric.discovery.compare import compare_nccl_tests

SIZES = [1 << k for k in range(30, 34)]  # 1 GiB .. 8 GiB: the plateau


def _log(info_lines: list[str], busbw_gb_s: float, n_ranks: int = 16, n_nodes: int = 2) -> str:
    """An nccl-tests all_reduce log whose plateau rows measure ``busbw_gb_s`` (busbw = algbw x 2(n-1)/n)."""
    head = [
        f"$ mpirun -np {n_ranks} ./all_reduce_perf -b 1G -e 8G -f 2 -g 1",
        "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 8589934592 step: 2(factor) warmup iters: 5",
        "#",
    ]
    ranks = [
        f"#  Rank {r:2d} Group  0 Pid {100 + r} on node-{r * n_nodes // n_ranks} device {r % 8} "
        f"[0x{r:02x}] NVIDIA H100 80GB HBM3"
        for r in range(n_ranks)
    ]
    factor = 2 * (n_ranks - 1) / n_ranks
    rows = []
    for size in SIZES:
        algbw = busbw_gb_s / factor
        time_us = size / (algbw * 1e9) * 1e6
        rows.append(
            f"{size:>12d} {size // 4:>12d}     float     sum      -1 {time_us:8.1f} {algbw:7.2f} "
            f"{busbw_gb_s:7.2f}      0 {time_us:8.1f} {algbw:7.2f} {busbw_gb_s:7.2f}      0"
        )
    header = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time"
        "   algbw   busbw #wrong"
    )
    return "\n".join([*head, *ranks, *info_lines, header, *rows, ""])


def _info(*extra: str, gdr: bool = True, network: str = "IB", nodes: int = 2) -> list[str]:
    dev = "mlx5_0:1/RoCE" if network == "IB" else "eth0:10.0.0.1<0>"
    suffix = "/GDRDMA" if gdr else ""
    return [
        "node-a:101:101 [0] NCCL INFO NCCL version 2.19.3+cuda12.2",
        f"node-a:101:130 [0] NCCL INFO NET/{network} : Using [0]{dev}",
        f"node-a:101:130 [0] NCCL INFO Using network {network}",
        f"node-a:101:130 [0] NCCL INFO comm 0x55d0 rank 0 nRanks {8 * nodes} nNodes {nodes} localRanks 8 "
        "localRank 0 MNNVL 0",
        *extra,
        *(
            f"node-a:101:130 [{g}] NCCL INFO Channel 00/0 : {g}[{g}] -> {g + 8}[{g}] [send] "
            f"via NET/{network}/{g}{suffix}"
            for g in range(8)
        ),
    ]


NVLS_OFF = "node-a:101:130 [0] NCCL INFO NVLS multicast support is not available on dev 0"


def test_healthy_two_nodes_nvls_unavailable_is_not_flagged() -> None:
    # Case 24 [S1] (NVIDIA/nccl #1221): 2 nodes x 8 H100, 8 x 400G RoCE, NCCL 2.19.3: ~330 GB/s busbw
    # without NVLS, ~430 with it. A log saying NVLS is unavailable at 330 GB/s is healthy.
    text = _log(_info(NVLS_OFF), 330.0)
    table = compare_nccl_tests(text).tables[0]
    assert all(r.predicted.algorithm not in ("nvls", "nvls_tree") for r in table.rows)
    assert table.verdict == "healthy" and not table.flagged_rows
    assert table.nccl_version == "2.19.3"
    assert any("NVLS multicast support is not available" in e.text for e in table.evidence)
    assert any("NVLS multicast not available (line" in n for n in table.settings.notes)


def test_without_the_info_line_the_same_rows_are_predicted_with_nvls() -> None:
    # The bug the issue reports: without the evidence the model assumes NVLSTree (> 430 GB/s) and flags.
    table = compare_nccl_tests(_log([], 330.0)).tables[0]
    assert table.rows[-1].predicted.algorithm == "nvls_tree"
    with_info = compare_nccl_tests(_log(_info(NVLS_OFF), 330.0)).tables[0]
    assert table.rows[-1].predicted_busbw_bytes_per_s > with_info.rows[-1].predicted_busbw_bytes_per_s


def test_socket_run_is_predicted_over_sockets_and_named() -> None:
    # A 4-node run that fell back to NET/Socket: 8 GB/s busbw on nodes whose RDMA NICs would give ~390.
    text = _log(_info(NVLS_OFF, network="Socket", gdr=False, nodes=4), 8.0, n_ranks=32, n_nodes=4)
    table = compare_nccl_tests(text).tables[0]
    assert table.net is not None and table.net.key == "tcp-socket"
    ib = compare_nccl_tests(_log(_info(NVLS_OFF, nodes=4), 8.0, n_ranks=32, n_nodes=4)).tables[0]
    # Ring on 4 nodes is network-bound: the socket transport's aggregate efficiency (0.55, transports.yaml)
    # over the RoCE one (0.968) = 0.57
    ratio = table.rows[-1].predicted_busbw_bytes_per_s / ib.rows[-1].predicted_busbw_bytes_per_s
    assert ratio == pytest.approx(0.55 / 0.968, rel=0.05)
    assert table.verdict == "net_socket"
    finding = table.findings[0]
    assert any("Using network Socket" in e.text for e in finding.evidence)
    assert "no_gdr" not in table.rows[-1].causes  # sockets never use GDR: not offered as a separate cause


def test_gdr_off_is_the_cause_with_its_lines() -> None:
    # NET/IB without /GDRDMA: bytes staged in host memory, 2-8x lower (NVIDIA/nccl #412, #489): 120 GB/s.
    table = compare_nccl_tests(_log(_info(NVLS_OFF, gdr=False), 120.0)).tables[0]
    assert table.verdict == "no_gdr"
    assert all("GDRDMA" not in e.text and "[send] via NET/IB" in e.text for e in table.findings[0].evidence)


def test_gdr_on_rules_out_no_gdr() -> None:
    table = compare_nccl_tests(_log(_info(NVLS_OFF), 120.0)).tables[0]
    assert table.verdict != "healthy"
    assert all("no_gdr" not in r.causes for r in table.flagged_rows)


def test_pxn_off_is_named() -> None:
    extra = [NVLS_OFF, "node-a:101:101 [0] NCCL INFO NCCL_PXN_DISABLE set by environment to 1."]
    table = compare_nccl_tests(_log(_info(*extra), 250.0)).tables[0]
    assert table.verdict == "pxn_off"
    assert "NCCL_PXN_DISABLE set by environment to 1." in table.findings[0].evidence[0].text


def test_findings_ranked_by_bandwidth_explained() -> None:
    extra = [NVLS_OFF, "node-a:101:101 [0] NCCL INFO NCCL_PXN_DISABLE set by environment to 1."]
    table = compare_nccl_tests(_log(_info(*extra, gdr=False), 100.0)).tables[0]
    causes = table.rows[-1].causes
    assert causes[:2] == ("no_gdr", "pxn_off")
    explained = [f.gap_bytes_per_s for f in table.findings]
    assert explained == sorted(explained, reverse=True)


# Every shared case with a table: (case file, table, ranks, nodes, collective, NCCL version, verdict, source).
CASES = [
    ("case_01_dgx_h100_allreduce_single_node.txt", 1, 8, 1, "all_reduce", None, "healthy",
     "NVIDIA/nccl-tests #290: 474 GB/s with NVLS on one DGX H100 is the expected figure"),
    ("case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", 1, 16, 2, "all_reduce", "2.26.2", "healthy",
     "NVIDIA/nccl-tests #309, maintainer: T1 2 nodes ~469 GB/s 'looks good'"),
    ("case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", 2, 32, 4, "all_reduce", "2.26.2", "healthy",
     "#309, maintainer: 4 nodes at ~366 GB/s is 'a good number'"),
    ("case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", 3, 64, 8, "all_reduce", None, "unexplained_shortfall",
     "#309, maintainer: 8 nodes at ~320 GB/s; NCCL_MIN_CTAS=24, QPS_PER_CONNECTION=2 and AR reach 391 -- a "
     "suggestion, and the log has no INFO line showing those settings off (issue 9 trial, defect 10): "
     "network settings are the alternative, not the verdict; its 4-8 GiB rows (320 GB/s) are within the "
     "default's range (README: ~320-366), the 1 GiB row (287) below it is the finding"),
    ("case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", 4, 16, 2, "all_reduce", None, "healthy",
     "#309: 2 of the 8 nodes, defaults: the 2-node tree figure"),
    ("case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", 5, 32, 4, "all_reduce", None, "healthy",
     "case_03 README 'what a correct model should predict': defaults on 4/8 nodes ~320-366 GB/s (NVLSTree), "
     "T5's 4-8 GiB at 325 are inside it (issue 9 trial 9, defect 10); the T6 settings lift it to 391"),
    ("case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", 6, 64, 8, "all_reduce", None, "healthy",
     "#309: 391 GB/s with the maintainer's settings"),
    ("case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", 7, 16, 2, "all_reduce", None, "healthy",
     "#309: Ring on 2 nodes 392.7 GB/s, the fabric's figure"),
    ("case_08_b200_gke_a4_topo_and_2node_allgather.txt", 1, 16, 2, "all_gather", "2.26.6",
     "unexplained_shortfall",
     "case 08 README (kubernetes-sigs/dranet GKE RDMA guide): 260 of the ~390 GB/s ceiling of 8 x 400G "
     "(67 %), no cause given by the authors; no INFO line in the log; issue 9 thread: no cause the log does "
     "not support"),
    ("case_13_v100_pcie_4gpu_no_nvlink.txt", 1, 4, 1, "all_reduce", "2.8.3", "healthy",
     "case 13: PCIe-only V100 box at the root-complex bound (9.4-11.2 GB/s)"),
    ("case_13_v100_pcie_4gpu_no_nvlink.txt", 2, 4, 1, "all_reduce", "2.8.3", "healthy",
     "case 13: the same box, CUDA 11.0.2"),
    ("case_13_v100_pcie_4gpu_no_nvlink.txt", 3, 4, 1, "all_reduce", "2.4.2", "healthy",
     "case 13: NCCL 2.4.2, 11.18 GB/s plateau"),
    ("case_31_mi300x_single_node_rccl.txt", 1, 8, 1, "all_reduce", None, "healthy",
     "case 31: one 8 MB rccl-tests row, mid-size ramp (not a fault)"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "index", "ranks", "nodes", "op", "version", "verdict", "source"), CASES)
def test_shared_case_verdicts(
    case: str,
    index: int,
    ranks: int,
    nodes: int,
    op: str,
    version: str | None,
    verdict: str,
    source: str,
    all_case_text: dict[str, str],
) -> None:
    table = compare_nccl_tests(all_case_text[case], source=case).tables[index - 1]
    assert (table.n_ranks, table.n_nodes, table.op, table.nccl_version) == (ranks, nodes, op, version), source
    assert table.verdict == verdict, source


def test_rccl_mi300x_is_modelled_as_mi300x(all_case_text: dict[str, str]) -> None:
    # case 31 (AMD ROCm blog, rccl-tests on 8 x MI300X): the rank lines name "AMD Instinct MI300X"; the node
    # is an xGMI mesh of 7 x ~48 GB/s per GPU, not an H100 NVSwitch node nor PCIe through the CPU.
    table = compare_nccl_tests(all_case_text["case_31_mi300x_single_node_rccl.txt"]).tables[0]
    assert table.spec.accelerator == "mi300x"
    assert table.rows[0].predicted.algorithm == "ring"
    assert abs(table.rows[0].deviation) < 0.15  # 161.14 GB/s measured at 8 MB


def test_one_nic_of_eight_used_is_named() -> None:
    # NCCL_IB_HCA=mlx5_0: every GPU's connections leave through NIC 0, so the 8 GPUs share one 400G NIC
    # (50 GB/s per node): ~47 GB/s busbw on 2 nodes at most, far below 8 rails.
    lines = [
        "node-a:101:101 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0",
        "node-a:101:101 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
        "node-a:101:130 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>",
        "node-a:101:130 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0",
        NVLS_OFF,
        *(
            f"node-a:101:130 [{g}] NCCL INFO Channel 00/0 : {g}[{g}] -> {g + 8}[{g}] [send] "
            "via NET/IB/0/GDRDMA"
            for g in range(8)
        ),
    ]
    table = compare_nccl_tests(_log(lines, 45.0)).tables[0]
    assert table.verdict == "one_nic"
    assert any("NCCL_IB_HCA set by environment to mlx5_0" in e.text for e in table.findings[0].evidence)
    assert "no_gdr" not in table.rows[-1].causes  # every connection printed /GDRDMA


def test_gpus_through_shm_in_a_vm_is_named() -> None:
    # One 8 x H200-class node in a VM without P2P: NCCL connects the GPUs via SHM (transport/shm.cc) and the
    # node reaches ~55 GB/s instead of 459-489 (NVIDIA/nccl-tests #256). H100 rank lines used here.
    lines = [
        "vm-1:11:11 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
        "vm-1:11:30 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0",
        *(f"vm-1:11:30 [{g}] NCCL INFO Channel 00 : {g}[{g}] -> {(g + 1) % 8}[{(g + 1) % 8}] "
          "via SHM/direct/direct" for g in range(8)),
    ]  # fmt: skip
    table = compare_nccl_tests(_log(lines, 55.0, n_ranks=8, n_nodes=1)).tables[0]
    assert table.n_nodes == 1
    assert table.verdict == "no_p2p"
    assert "via SHM/direct/direct" in table.findings[0].evidence[0].text
    healthy = [*lines[:2], "vm-1:11:30 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read"]
    assert compare_nccl_tests(_log(healthy, 55.0, n_ranks=8, n_nodes=1)).tables[0].verdict != "no_p2p"
