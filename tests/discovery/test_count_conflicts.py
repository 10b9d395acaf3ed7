"""Options and log sources that disagree are refused naming both (issue 9 items 1 and 4, fix9b).

Case 01 (NVIDIA/nccl-tests #290) is one DGX H100: 8 rank lines on one host, ``nGpus 8``. Its rows give
busbw/algbw = 473.60 / 270.63 = 1.75 = 2 x 7 / 8: 8 ranks, which 4 or 16 GPUs per node cannot hold on the
one node the rank lines show. INFO values NCCL cannot print (``init.cc``: C ints; channels up to
MAXCHANNELS, ``device.h``; QP ``mtu`` an ``enum ibv_mtu`` code 1-5, rdma-core ``verbs.h``) are refused
with their line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.discovery.conftest import CASE_01, read_case
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.nccl_info import parse_nccl_info

runner = CliRunner()
ROW_16 = (
    "  4294967296    1073741824     float     sum      -1  23000.0  186.74  350.14      0  23000.0  186.74"
    "  350.14      0"
)
HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
    "   busbw #wrong"
)


def _compare(tmp_path: Path, text: str, *options: str) -> tuple[int, str]:
    log = tmp_path / "run.log"
    log.write_text(text)
    res = runner.invoke(app, ["nccl-tests", "compare", str(log), *options])
    return res.exit_code, res.stderr


@pytest.mark.parametrize(
    ("options", "names"),
    [
        (["--gpus-per-node", "4"], ["the log's 1 node(s) above line 48", "--gpus-per-node 4"]),
        (["--gpus-per-node", "16"], ["--gpus-per-node 16", "8 ranks"]),
        (["--nodes", "1", "--gpus-per-node", "4"], ["--nodes 1", "--gpus-per-node 4"]),
        (["--nodes", "2"], ["--nodes 2", "the log's 1 node(s) above line 48"]),
        (["--ranks", "16"], ["--ranks 16", "8 rank lines"]),
    ],
)
def test_case_01_refuses_counts_it_contradicts(tmp_path: Path, options: list[str], names: list[str]) -> None:
    code, err = _compare(tmp_path, read_case(CASE_01), *options)
    assert code == 2 and err.count("\n") == 1, err
    assert all(name in err for name in names), err


def test_case_01_accepts_the_counts_it_shows(tmp_path: Path) -> None:
    code, err = _compare(tmp_path, read_case(CASE_01), "--nodes", "1", "--gpus-per-node", "8", "--ranks", "8")
    assert code == 0, err


def test_launcher_and_info_counts_that_disagree_are_refused(tmp_path: Path) -> None:
    # mpirun -np 16 -H a:8,b:8: 16 ranks on 2 hosts; NCCL says 32 on 4: refused naming both, as rank lines.
    text = "\n".join([
        "mpirun -np 16 -H a:8,b:8 ./all_reduce_perf -b 4G -e 4G -g 1",
        "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 32 nNodes 4 localRanks 8 localRank 0 MNNVL 0",
        HEADER,
        ROW_16,
    ])  # fmt: skip
    code, err = _compare(tmp_path, text + "\n")
    assert code == 2 and "NCCL INFO nRanks 32 at line 2" in err and "16 ranks" in err, err


def test_uneven_nodes_name_the_info_line_not_the_table(tmp_path: Path) -> None:
    # NCCL prints nNodes 3 for 16 ranks (8 + 4 + 4): the INFO line is the cause, not the header at line 2.
    text = "\n".join([
        "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 3 localRanks 8 localRank 0 MNNVL 0",
        HEADER,
        ROW_16,
    ])  # fmt: skip
    code, err = _compare(tmp_path, text + "\n")
    assert code == 2 and ".log:1:" in err and "NCCL INFO nNodes 3 at line 1" in err, err
    code, err = _compare(tmp_path, text + "\n", "--ranks", "16", "--nodes", "3")
    assert code == 2 and "give --ranks" not in err and "--nodes 3" in err, err
    code, err = _compare(tmp_path, text + "\n", "--ranks", "16", "--nodes", "2")
    assert code == 2 and "--nodes 2 conflicts with NCCL INFO nNodes 3 at line 1" in err, err


_INFO = "node:1:1 [0] NCCL INFO "


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("comm 0x5 rank 0 nRanks 99999999999999999999999999 nNodes 2 localRanks 8", "nRanks 999999999999"),
        ("comm 0x5 rank 0 nRanks " + "9" * 46 + " nNodes 2 localRanks 8", "(46 digits)"),
        ("comm 0x5 rank 0 nRanks 16 nNodes " + "7" * 5000 + " localRanks 8", "(5000 digits)"),
        ("999999999999 coll channels, 0 collnet channels, 0 nvls channels, 32 p2p channels", "coll channels"),
        ("32 coll channels, 0 collnet channels, -3 nvls channels, 32 p2p channels", "-3 nvls channels"),
        ("0 coll channels, 0 collnet channels, 0 nvls channels, 32 p2p channels", "0 coll channels"),
        ("NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 219 mtu 9 LID 7 subnet-prefix 0", "mtu 9"),
        ("NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 219 mtu 0 LID 7 subnet-prefix 0", "mtu 0"),
    ],
)
def test_info_values_nccl_cannot_print_are_refused_with_the_line(line: str, named: str) -> None:
    info = parse_nccl_info(["# nThread 1", _INFO + line])
    assert len(info.count_errors) == 1 and info.count_errors[0].line == 2
    assert named in info.count_errors[0].text
    with pytest.raises(ValueError, match=r"line 2|:2"):
        info.check_counts("run.log")


def test_info_values_nccl_prints_are_kept() -> None:
    # 2.25+: MAXCHANNELS 64; NDR IB active MTU 4096 = ibv_mtu 5.
    info = parse_nccl_info([
        _INFO + "64 coll channels, 64 collnet channels, 16 nvls channels, 64 p2p channels",
        _INFO + "NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 219 mtu 5 LID 7 subnet-prefix 0",
    ])  # fmt: skip
    assert info.count_errors == ()
    assert (info.coll_channels, info.collnet_channels, info.nvls_channels, info.mtu_bytes) == (
        64,
        64,
        16,
        4096,
    )


@settings(max_examples=40)
@given(digits=st.integers(min_value=11, max_value=3000))
def test_any_length_of_rank_count_is_refused_the_same_way(digits: int) -> None:
    # The same rule for 26, 46 or 3000 digits: above any C int, refused at its line, never skipped.
    info = parse_nccl_info([_INFO + f"comm 0x5 rank 0 nRanks {'8' * digits} nNodes 2 localRanks 8"])
    assert len(info.count_errors) == 1 and info.count_errors[0].line == 1


def test_a_rank_count_the_printed_bandwidths_of_any_row_exclude_is_refused(tmp_path: Path) -> None:
    """busbw = algbw x 2(n-1)/n for an all_reduce (nccl-tests doc/PERFORMANCE.md), each printed to two
    decimals. 512 B at 10.05 us prints 0.05 / 0.05 (NVIDIA/nccl#439): the ratio lies in [0.045/0.055,
    0.055/0.045] = [0.82, 1.22], which holds 2 ranks (factor 1) and not 8 (1.75: 0.09 printed). A row of
    0.01 / 0.01 allows [0.33, 3] and excludes no count."""
    small = "         512           128     float     sum      -1    10.05    0.05    0.05      0    9.87    0.05    0.05      0"  # noqa: E501
    tiny = "         128            32     float     sum      -1     9.99    0.01    0.01      0    9.82    0.01    0.01      0"  # noqa: E501
    text = f"{HEADER}\n{tiny}\n{small}\n"
    code, err = _compare(tmp_path, text, "--collective", "all_reduce", "--ranks", "8", "--nodes", "1")
    assert code == 2 and err.count("\n") == 1, err
    assert "--ranks 8 conflicts with the row at line 3: busbw 0.05 and algbw 0.05 GB/s" in err, err
    assert _compare(tmp_path, text, "--collective", "all_reduce", "--ranks", "2", "--nodes", "1")[0] == 0
    code, err = _compare(
        tmp_path, f"{HEADER}\n{tiny}\n", "--collective", "all_reduce", "--ranks", "8", "--nodes", "1"
    )
    assert code == 0, err
