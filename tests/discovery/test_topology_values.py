"""Topology values no machine prints are refused with their line (issue 9 item 2, fix9b).

``nvidia-smi topo -m`` prints one path per pair of devices, in both of its cells (case 08, a GKE A4 B200
node: every GPU pair NV18). NCCL writes a ``<net>`` ``speed`` in Mb/s, -1 when the NIC reports none
(NVIDIA/nccl ``src/graph/topo.cc``); case 21 (AWS p5) carries 100000 (100 Gb/s EFA).
"""

from __future__ import annotations

import pytest
from tests.discovery.conftest import CASE_08, read_case

from aifabric.discovery.nccl_xml import parse_nccl_topologies
from aifabric.discovery.nvsmi import TopoMatrix
from aifabric.errors import ParseError

CASE_21 = "case_21_aws_p4d_p5_nccl_topology_xml.txt"
GPU0_ROW = "GPU0     X      NV18    NV18"  # case 08, line 35


def test_an_asymmetric_matrix_is_refused_naming_both_cells() -> None:
    text = read_case(CASE_08)
    assert GPU0_ROW in text
    edited = text.replace(GPU0_ROW, "GPU0     X      SYS     NV18", 1)
    with pytest.raises(ParseError) as err:
        TopoMatrix.from_text(edited, "a4.txt")
    message = str(err.value)
    assert err.value.line == 36  # GPU1's row, the later of the two
    assert "row GPU1, column GPU0: 'NV18'" in message and "row GPU0, column GPU1 (line 35): 'SYS'" in message


def test_the_real_matrix_and_old_codes_stay_symmetric() -> None:
    matrix = TopoMatrix.from_text(read_case(CASE_08))
    assert matrix.link("GPU0", "GPU1") == matrix.link("GPU1", "GPU0") == "NV18"
    # SOC (drivers before 2018) is SYS: the same path in both spellings is no asymmetry.
    old = "\tGPU0\tGPU1\nGPU0\t X \tSOC\nGPU1\tSYS\t X \n"
    assert TopoMatrix.from_text(old).path_type("GPU0", "GPU1") == "SYS"


def _net_line(text: str) -> int:
    return text[: text.index('speed="100000" port')].count("\n") + 1


@pytest.mark.parametrize("speed", ["-5", "0", "NaN", "1e12", "abc"])
def test_a_net_speed_no_nic_reports_is_refused_with_its_line(speed: str) -> None:
    text = read_case(CASE_21)
    bad = text.replace('speed="100000" port', f'speed="{speed}" port', 1)
    with pytest.raises(ParseError, match=r"speed=") as err:
        parse_nccl_topologies(bad, "p5.xml")
    assert err.value.line == _net_line(text)


def test_nccls_unknown_speed_is_unknown_not_an_error() -> None:
    text = read_case(CASE_21).replace('speed="100000" port', 'speed="-1" port', 1)
    nets = [net for topo in parse_nccl_topologies(text) for nic in topo.nics for net in nic.nets]
    assert nets[0].speed_bytes_per_s is None
    assert nets[1].speed_bytes_per_s == 100_000e6 / 8  # 100 Gb/s, bytes/s per direction
