"""Shared fixtures of the discovery tests: the golden case files in ``data/``."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
CASE_01 = "case_01_dgx_h100_allreduce_single_node.txt"
CASE_03 = "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt"
CASE_08 = "case_08_b200_gke_a4_topo_and_2node_allgather.txt"
CASE_13 = "case_13_v100_pcie_4gpu_no_nvlink.txt"
CASE_17 = "case_17_azure_ndv4_ndv5_topology_xml.txt"
CASE_31 = "case_31_mi300x_single_node_rccl.txt"
ALL_CASES = (CASE_01, CASE_03, CASE_08, CASE_13, CASE_17)


def read_case(name: str) -> str:
    """Text of a golden case file (verbatim copy of ``shared/cases/nccl-tests``)."""
    return (DATA / name).read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def case_text() -> dict[str, str]:
    """File name -> text of every golden case file (and the other topology cases the fuzz damages)."""
    extra = ("case_21_aws_p4d_p5_nccl_topology_xml.txt", "case_26_a30_pcie_two_nics_phb_no_pcie_switch.txt")
    return {name: read_case(name) for name in (*ALL_CASES, *extra)}


@pytest.fixture(scope="session")
def all_case_text() -> dict[str, str]:
    """File name -> text of every case file copied into ``data/`` (the README excepted)."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(DATA.glob("case_*.txt"))}
