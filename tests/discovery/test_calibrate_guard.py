"""Calibration that cannot make things worse (issue 9, item 6)."""

from __future__ import annotations

import pytest
from tests.discovery.test_evidence_compare import NVLS_OFF, _info, _log

from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.fitting import fit_calibration

CASE_01 = "case_01_dgx_h100_allreduce_single_node.txt"
CASE_03 = "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt"


@pytest.mark.parametrize("index", [1, 7])
def test_two_node_fit_leaves_the_single_node_prediction(index: int, all_case_text: dict[str, str]) -> None:
    # case_03 T1 (2 nodes, defaults, NVLSTree) and T7 (2 nodes, Ring): network-bound rows say nothing about
    # NVLink. The regression: a T1-like fit scaled NVLink to 0.78 and one DGX H100 (474 GB/s, case 01,
    # NVIDIA/nccl-tests #290) was then predicted at 376 GB/s.
    tables = compare_nccl_tests(all_case_text[CASE_03], tables=[index]).tables
    fit = fit_calibration(tables, name=f"case_03 T{index}")
    assert fit.calibration.intra_scale == 1.0
    assert not fit.determined["intra_scale"]
    node = compare_nccl_tests(all_case_text[CASE_01]).tables[0]
    size = 4 << 30
    before = node.predict(size).busbw_bytes_per_s
    after = node.predict(size, fit.calibration).busbw_bytes_per_s
    assert after == pytest.approx(before, rel=1e-3)


def test_broken_run_is_refused_with_its_cause() -> None:
    # NET/IB without /GDRDMA at 120 GB/s on 2 x 8 H100 (see test_evidence_compare): the run is broken.
    tables = compare_nccl_tests(_log(_info(NVLS_OFF, gdr=False), 120.0)).tables
    with pytest.raises(ValueError, match=r"not fitted: the diagnosis found the run broken \(no_gdr: line "):
        fit_calibration(tables)


def test_healthy_run_with_info_lines_is_fitted() -> None:
    tables = compare_nccl_tests(_log(_info(NVLS_OFF), 330.0)).tables
    fit = fit_calibration(tables)
    assert fit.calibration.intra_scale == 1.0
