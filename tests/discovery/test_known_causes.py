"""Causes with a known size or a known release: the MTU and NCCL versions known for a regression.

Hand-written logs in NCCL's own formats (the helpers of test_evidence_compare.py): a 2-node H100 all_reduce
with NET/IB QP lines (``net_ib/connect.cc``: ``qpn %d mtu %d``, the port's active ``ibv_mtu`` enum) or
``ibv_devinfo`` output, and an 8-node run on NCCL 2.19.3, the release of the NVLSTree chunk regression
(NVIDIA/nccl PR #1112: 104 GB/s busbw at 4 GB on 8 AWS p5 nodes, 280 without it).
"""

from __future__ import annotations

import pytest
from tests.discovery.test_evidence_compare import NVLS_OFF, _info, _log

from aifabric.catalog.transport import transport
from aifabric.discovery.compare import compare_nccl_tests, describe_cause
from aifabric.discovery.evidence import mtu_payload_factor
from aifabric.discovery.nccl_info import parse_nccl_info
from aifabric.discovery.regressions import known_regressions, regression_for

QP_2048 = "node-a:101:130 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 219 mtu 4 LID 7 subnet-prefix 0"
QP_4096 = QP_2048.replace("mtu 4", "mtu 5")
DEVINFO_1024 = "\t\t\tactive_mtu:\t\t1024 (3)"


def test_mtu_is_read_from_qp_lines_and_ibv_devinfo() -> None:
    assert parse_nccl_info([QP_2048]).mtu_bytes == 2048
    assert parse_nccl_info([QP_4096, QP_2048]).mtu_bytes == 2048  # the smallest one counts
    info = parse_nccl_info(["ibv_devinfo -d mlx5_0", DEVINFO_1024])
    assert info.mtu_bytes == 1024 and info.lines("mtu")[0].line == 2
    assert parse_nccl_info(["active_mtu: 4096 (3)"]).mtu_bytes is None  # bytes and enum disagree: not read


def test_mtu_payload_factor_from_the_catalogue_efficiency() -> None:
    # ConnectX-7: 0.983 at 4096 B (catalog/data/nics.yaml) -> h = 4096 (1/0.983 - 1) = 70.8 B of headers
    headers = 4096 * (1 / 0.983 - 1)
    assert mtu_payload_factor(4096, 0.983) == pytest.approx(1.0)
    assert mtu_payload_factor(2048, 0.983) == pytest.approx(2048 / (2048 + headers) / 0.983)
    assert mtu_payload_factor(1024, 0.983) < mtu_payload_factor(2048, 0.983) < 1.0
    with pytest.raises(ValueError):
        mtu_payload_factor(0, 0.983)


def test_mtu_payload_factor_from_the_roce_framing() -> None:
    # RoCEv2 on the wire per packet: Ethernet preamble+SFD 8, header 14, FCS 4, inter-frame gap 12 (IEEE
    # 802.3), IPv4 20 (RFC 791), UDP 8 (RFC 768), BTH 12 and ICRC 4 (IBTA Vol. 1 Annex A17) = 82 B
    roce = transport("roce-v2")
    assert (roce.mtu_bytes, roce.header_bytes) == (4096, 8 + 14 + 4 + 12 + 20 + 8 + 12 + 4)
    for mtu in (1024, 2048):
        expected = (mtu / (mtu + 82)) / (4096 / (4096 + 82))
        assert mtu_payload_factor(mtu, 0.983, framing=roce) == pytest.approx(expected)
    assert mtu_payload_factor(4096, 0.983, framing=roce) == pytest.approx(1.0)
    # a transport without framing data falls back to the NIC's efficiency
    efa = transport("efa-srd")
    assert mtu_payload_factor(2048, 0.983, framing=efa) == mtu_payload_factor(2048, 0.983)


def test_small_mtu_alone_never_flags_a_healthy_run() -> None:
    # Case 24 [S1]: 2 nodes x 8 H100, NVLS unavailable, ~330 GB/s: healthy whatever the MTU (it costs < 2 %).
    table = compare_nccl_tests(_log(_info(NVLS_OFF, QP_2048), 330.0)).tables[0]
    assert table.verdict == "healthy" and not table.findings


def test_small_mtu_explains_only_its_share_and_ranks_after_the_main_cause() -> None:
    # GDR off (120 GB/s, NVIDIA/nccl #412) on RoCE ports (mlx5_0:1/RoCE) at MTU 2048: no_gdr explains most of
    # the gap, the MTU its 1.9 % of the predicted busbw (RoCEv2 framing, 82 B per packet), with the QP line
    # as evidence.
    table = compare_nccl_tests(_log(_info(NVLS_OFF, QP_2048, gdr=False), 120.0)).tables[0]
    assert table.verdict == "no_gdr"
    causes = [f.cause for f in table.findings]
    assert causes == ["no_gdr", "small_mtu"]
    mtu = table.findings[1]
    share = 1 - (2048 / (2048 + 82)) / (4096 / (4096 + 82))
    rows = [r for r in table.large_rows if r.flagged]
    predicted = sum(r.predicted_busbw_bytes_per_s for r in rows) / len(rows)
    assert mtu.gap_bytes_per_s == pytest.approx(share * predicted, rel=1e-6)
    assert "qpn 219 mtu 4" in mtu.evidence[0].text
    assert table.findings[0].gap_bytes_per_s > 10 * mtu.gap_bytes_per_s
    assert "MTU 2048 B here: 1.9%" in describe_cause("small_mtu", table)


def test_mtu_4096_is_no_cause() -> None:
    table = compare_nccl_tests(_log(_info(NVLS_OFF, QP_4096, gdr=False), 120.0)).tables[0]
    assert "small_mtu" not in {f.cause for f in table.findings}


# -- NCCL releases known for a regression --------------------------------------------------------------------

BANNER_2193 = "NCCL version 2.19.3+cuda12.2"


def test_regression_table_is_sourced_and_consistent() -> None:
    regs = known_regressions()
    assert {r.key for r in regs} >= {"nvlstree-chunk-2.19"}
    for r in regs:
        assert r.source and "nccl" in r.source.lower()
        assert r.affects(r.first) and r.affects(r.last) and not r.affects(r.fixed_in)


def test_nccl_2_19_3_on_eight_nodes_is_told_the_regression_with_its_line() -> None:
    # NVIDIA/nccl PR #1112: 8 nodes x 8 H100 (AWS p5), NCCL 2.19.3, all_reduce 4 GB at 104 GB/s busbw.
    text = _log([BANNER_2193], 104.0, n_ranks=64, n_nodes=8)
    table = compare_nccl_tests(text).tables[0]
    assert "nvls_tree" in table.possible_algorithms
    assert table.verdict == "nccl_regression"
    (line,) = table.findings[0].evidence
    assert line.text == BANNER_2193 and text.split("\n")[line.line - 1] == BANNER_2193
    assert "fixed in 2.20.3" in describe_cause("nccl_regression", table)


@pytest.mark.parametrize(
    ("version", "extra"),
    [
        ("2.20.3", []),  # the fixing release
        ("2.19.1", []),  # before the change (PR #1112: 280 GB/s on 2.19.1)
        ("2.19.3", ["NCCL_ALGO=Ring"]),  # Ring: not the NVLSTree code path
        ("2.19.3", [NVLS_OFF]),  # NVLS unavailable: NCCL cannot run NVLSTree
    ],
)
def test_the_regression_is_not_told_where_the_log_contradicts_it(version: str, extra: list[str]) -> None:
    text = _log([f"NCCL version {version}+cuda12.2", *extra], 104.0, n_ranks=64, n_nodes=8)
    table = compare_nccl_tests(text).tables[0]
    assert table.verdict != "nccl_regression"
    assert all("nccl_regression" not in r.causes for r in table.rows)


def test_regression_needs_the_nodes_it_was_seen_on() -> None:
    nvls = {"ring", "tree", "nvls_tree"}
    assert regression_for("2.19.3", "all_reduce", 8, nvls) is not None
    assert regression_for("2.19.4", "all_reduce", 8, nvls) is not None
    assert regression_for("2.19.3", "all_reduce", 2, nvls) is None
    assert regression_for("2.19.3", "all_gather", 8, nvls) is None
    assert regression_for(None, "all_reduce", 8, nvls) is None
    assert regression_for("not a version", "all_reduce", 8, nvls) is None


# -- a collapse is not blamed on the ramp --------------------------------------------------------------------


def _vm_sweep(plateau_gb_s: float) -> str:
    """One 8-GPU node swept 1 MiB .. 8 GiB whose busbw ramps (doubling per size) to ``plateau_gb_s``."""
    header = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time"
        "   algbw   busbw #wrong"
    )
    ranks = [f"#  Rank {r:2d} Group  0 Pid {100 + r} on vm-1 device {r} [0x{r:02x}] NVIDIA H100 80GB HBM3"
             for r in range(8)]  # fmt: skip
    rows = []
    for k in range(20, 34):
        size = 1 << k
        bus = min(plateau_gb_s, 3.0 * 2 ** (k - 20))
        alg = bus / (2 * 7 / 8)
        t = size / (alg * 1e9) * 1e6
        rows.append(
            f"{size} {size // 4} float sum -1 {t:.1f} {alg:.2f} {bus:.2f} 0 {t:.1f} {alg:.2f} {bus:.2f} 0"
        )
    return "\n".join(["./all_reduce_perf -b 1M -e 8G -g 8", *ranks, header, *rows]) + "\n"


def test_a_vm_collapse_is_not_blamed_on_fewer_channels() -> None:
    # NVIDIA/nccl-tests #256: an 8-GPU H200 VM without GPU peer-to-peer reaches ~55 GB/s busbw where bare
    # metal reaches 459-489. The issue: the rows above 32 MB were blamed on "fewer channels" (the ramp), and
    # NVLS off (which leaves the ~370 GB/s ring figure) was offered for 55 GB/s.
    table = compare_nccl_tests(_vm_sweep(55.0)).tables[0]
    assert table.verdict == "nvlink_degraded"
    assert "VM without GPU peer-to-peer" in describe_cause("nvlink_degraded")
    mid = [r for r in table.rows if 32 << 20 <= r.size_bytes < 1 << 30]
    assert mid and all(r.causes[0] == "nvlink_degraded" for r in mid)
    assert all("nvls_off" not in r.causes for r in table.rows)


def test_a_healthy_sweep_keeps_the_ramp_on_mid_sizes() -> None:
    # One DGX H100 at the 474 GB/s plateau (NVIDIA/nccl-tests #290): healthy; its slow mid sizes stay "ramp".
    table = compare_nccl_tests(_vm_sweep(474.0)).tables[0]
    assert table.verdict == "healthy"
    assert all(r.causes[:1] in ((), ("ramp",), ("latency_local",), ("latency_model",)) for r in table.rows)


def test_nvls_off_is_offered_at_the_ring_figure() -> None:
    # ~370 GB/s on one H100 node is the ring figure: NVLS not in use (NCCL maintainer, nccl-tests #212, #309)
    table = compare_nccl_tests(_vm_sweep(370.0)).tables[0]
    assert table.verdict == "nvls_off"
