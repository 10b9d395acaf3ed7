"""NCCL given fewer NICs than the node has: the NIC-subset cause, with the line that shows it (issue 9).

Hand-written 2-node (2 x 8 H100, 8 x 400G per node) all_reduce logs (test_evidence_compare's ``_log``: 8 rank
lines per host, no ``localRanks`` print) under ``NCCL_ALGO=Ring``, measuring half of case_03 T7's 392.7 GB/s
(NVIDIA/nccl-tests #309): 4 of 8 NICs carry a ring that 8 would, so busbw is halved.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.discovery.test_evidence_compare import _log

from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.evidence import evidence_causes
from aifabric.discovery.nccl_info import parse_nccl_info

RING = "node-a:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring"
FOUR_NICS = (
    "node-a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB ; "
    "OOB eth0:10.0.0.1<0>"
)
HCA = "node-a:1:1 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0,mlx5_1,mlx5_2,mlx5_3"
HALF = 392.7 / 2  # GB/s


@pytest.mark.parametrize(("lines", "shown"), [([RING, FOUR_NICS], FOUR_NICS), ([RING, HCA], HCA)])
def test_four_of_eight_nics_is_the_nic_subset_cause(lines: list[str], shown: str) -> None:
    text = _log(lines, HALF)
    table = compare_nccl_tests(text).tables[0]
    assert table.info.local_ranks is None  # ranks per node from the 8 rank lines per host
    assert (table.n_ranks, table.n_nodes) == (16, 2)
    assert table.verdict == "one_nic"
    (finding,) = table.findings
    assert shown.split("INFO ")[1] in [e.text for e in finding.evidence]
    assert all("NCCL_ALGO" not in e.text for e in finding.evidence)  # the NIC line, not another setting


def test_ib_hca_is_listed_in_settings(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from aifabric.cli.app import app

    log = tmp_path / "hca.log"
    log.write_text(_log([RING, HCA], HALF))
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(log)])
    assert result.exit_code == 0, result.output
    assert "settings: NCCL_ALGO=Ring, NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3" in result.output


def test_a_node_built_with_fewer_nics_is_not_flagged_for_that_alone() -> None:
    info = parse_nccl_info([FOUR_NICS])
    assert dict(evidence_causes(info, 2, local_ranks=8, node_nics=8))["one_nic"]
    assert "one_nic" not in dict(evidence_causes(info, 2, local_ranks=8, node_nics=4))  # 4 NICs modelled
    assert "one_nic" not in dict(evidence_causes(info, 2, local_ranks=4, node_nics=8))  # 4 ranks per node
    # an exclusion list leaves an unknown number of NICs: not evidence of a subset
    excluded = parse_nccl_info(["h:1:1 [0] NCCL INFO NCCL_IB_HCA set by environment to ^mlx5_4"])
    assert "one_nic" not in dict(evidence_causes(excluded, 2, local_ranks=8, node_nics=8))


def test_a_few_connection_lines_alone_do_not_show_a_subset() -> None:
    # a pasted excerpt with one channel line on NIC 0 (and GDR off for HCA 0) says nothing of how many NICs
    # NCCL had: not the NIC-subset cause
    info = parse_nccl_info(["h:1:1 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0"])
    assert "one_nic" not in dict(evidence_causes(info, 2, local_ranks=8, node_nics=8))
