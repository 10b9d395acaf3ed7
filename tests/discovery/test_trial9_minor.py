"""Smaller defects of the issue 9 new-user trial (trial 9, "Minor"): each bad input names its line and value;
a sendrecv of eight ranks is reported on eight ranks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.nccl_info import parse_nccl_info
from aifabric.errors import ParseError

DATA = Path(__file__).parent / "data" / "trial9"
_COMM = "node1:1:1 [0] NCCL INFO comm 0x1 rank {rank} nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0"


def test_a_sendrecv_of_eight_ranks_reports_eight_ranks() -> None:
    # Trial 9: "sendrecv with 8 rank lines -> 2 ranks" (the model's pair was reported as the run).
    table = compare_nccl_tests((DATA / "sendrecv_8_ranks.log").read_text()).tables[0]
    assert (table.op, table.n_ranks, table.n_nodes) == ("send_recv", 8, 1)
    # modelled as the run is: eight ranks, each sending to the next (nccl-tests sendrecv.cu), not one pair
    assert table.comm.n_ranks == 8
    assert not any("one pair" in a for a in table.assumptions)


def test_a_repeated_size_names_its_row() -> None:
    # The last row prints 2 GB with the 4 GB row's count (1073741824 floats): size/(count x 4) = 0.5.
    with pytest.raises(
        ParseError, match=r":21: size 2147483648 and count 1073741824 \(float\).* is 0.5 where"
    ):
        compare_nccl_tests((DATA / "repeated_size.log").read_text(), source="repeated_size.log")


def test_info_rank_outside_nranks_is_refused_with_its_line() -> None:
    info = parse_nccl_info(["x", _COMM.format(rank=99)])
    assert [(e.line, e.text) for e in info.count_errors] == [(2, "rank 99 is not one of nRanks 8 (0 to 7)")]
    assert not parse_nccl_info([_COMM.format(rank=7)]).count_errors


@pytest.mark.parametrize("channel", ["99999/64", "64/64", "3/65"])
def test_info_ring_channel_outside_maxchannels_is_refused_with_its_line(channel: str) -> None:
    # NCCL prints "Channel c/nChannels :" with c < nChannels <= MAXCHANNELS (64, NVIDIA/nccl device.h).
    info = parse_nccl_info([_COMM.format(rank=0), f"node1:1:1 [0] NCCL INFO Channel {channel} : 0 1 2 3"])
    assert [e.line for e in info.count_errors] == [2]
    assert f"Channel {channel} is not a channel" in info.count_errors[0].text


def test_in_place_without_columns_names_the_option_to_use() -> None:
    text = (DATA / "h100_nvls.log").read_text()
    half = "\n".join(" ".join(line.split()[:9]) if line[:1] == " " else line for line in text.splitlines())
    with pytest.raises(ParseError, match=r"use --place out-of-place"):
        compare_nccl_tests(half, place="in_place")
