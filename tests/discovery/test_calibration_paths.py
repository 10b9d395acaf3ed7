"""A profile applies only to the algorithm/protocol it was fitted on (issue 9 item 6; trial 9 item 7).

Trial 9 fitted ``intra_scale`` 0.976 on a Ring-only single-node H100 log (NVLS unavailable) and saw it move
the NVLS rows of a healthy H100 log by 1-2.5 %. The profile now records the path of each knob
(``fitted_paths``) and compare applies a knob only to rows NCCL's model runs on that path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aifabric.discovery.calibrate import Calibration, for_path, load_calibration, save_calibration
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.fitting import fit_calibration
from aifabric.errors import ConfigError

DATA = Path(__file__).parent / "data" / "trial9"


@pytest.fixture(scope="module")
def ring_profile() -> Calibration:
    ring = compare_nccl_tests((DATA / "nvls_unavailable_ring.log").read_text(), source="ring.log")
    return fit_calibration(ring.tables).calibration


def test_the_ring_fit_records_its_path(ring_profile: Calibration) -> None:
    assert dict(ring_profile.fitted_paths) == {"intra_scale": ("ring/Simple",)}
    assert ring_profile.intra_scale < 1.0  # Ring plateau below NCCL's 18 x 20.6 GB/s (trial 9: 0.976)


def test_a_ring_fitted_profile_leaves_nvls_rows_unchanged(ring_profile: Calibration) -> None:
    text = (DATA / "h100_nvls.log").read_text()
    plain = compare_nccl_tests(text).tables[0].rows
    calibrated = compare_nccl_tests(text, calibration=ring_profile).tables[0].rows
    assert {row.predicted.algorithm for row in plain} == {"nvls"}
    for before, after in zip(plain, calibrated, strict=True):
        assert after.predicted.time_s == pytest.approx(before.predicted.time_s, rel=1e-3)


def test_a_ring_fitted_profile_still_moves_ring_rows(ring_profile: Calibration) -> None:
    text = (DATA / "nvls_unavailable_ring.log").read_text()
    plain = compare_nccl_tests(text).tables[0].rows[-1]  # 4 GiB, ring/Simple
    calibrated = compare_nccl_tests(text, calibration=ring_profile).tables[0].rows[-1]
    assert calibrated.predicted.time_s > plain.predicted.time_s * 1.01  # slower NVLink: a longer ring


def test_fitted_paths_survive_the_file(ring_profile: Calibration, tmp_path: Path) -> None:
    assert load_calibration(save_calibration(ring_profile, tmp_path / "p.yaml")) == ring_profile


def test_a_profile_without_paths_applies_everywhere() -> None:
    cal = Calibration(intra_scale=0.9)
    assert for_path(cal, "nvls/Simple") is cal


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("fitted_paths:\n  speed: [ring/Simple]\n", "'speed' is not a knob"),
        ("fitted_paths:\n  intra_scale: ring\n", "fitted_paths intra_scale: 'ring'"),
        ("fitted_paths: [ring/Simple]\n", "must map knobs to paths"),
    ],
)
def test_a_bad_fitted_paths_is_refused_naming_it(tmp_path: Path, body: str, named: str) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("intra_scale: 0.9\n" + body)
    with pytest.raises(ConfigError, match=named):
        load_calibration(path)
