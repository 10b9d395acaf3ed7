"""A calibration profile never makes a link faster than its wire: the bandwidth scales are capped at line
rate over the rate they multiply, where the profile is applied (``collectives.tiers.line_rate_caps``)."""

from __future__ import annotations

import pytest

from aifabric.cluster.presets import preset
from aifabric.collectives.tiers import line_rate_caps, tier_model
from aifabric.discovery.calibrate import Calibration


def test_scales_above_line_rate_are_cut_to_it():
    # H100 NVLink 4: 18 links x 25 GB/s = 450 GB/s per direction (datasheet: 900 GB/s both ways); a
    # ConnectX-7 port 400 Gb/s = 50 GB/s. A scale of 5 on either may reach those line rates, not more.
    spec = preset("dgx-h100-superpod", nodes=2)
    tm = tier_model(spec, calibration=Calibration(intra_scale=5.0, inter_scale=5.0))
    assert tm.intra_bytes_per_s == pytest.approx(450e9)
    assert tm.nic_bytes_per_s <= 50e9 * (1 + 1e-12)
    line = tier_model(spec, efficiency="line_rate", calibration=Calibration(intra_scale=5.0))
    assert line.intra_bytes_per_s == pytest.approx(450e9)  # line rates already: cut to x1


def test_scales_within_line_rate_are_applied_whole():
    spec = preset("dgx-h100-superpod", nodes=2)
    intra_cap, inter_cap = line_rate_caps(spec, "per_direction", "nccl")
    assert intra_cap > 1 and inter_cap >= 1
    plain = tier_model(spec)
    scaled = tier_model(spec, calibration=Calibration(intra_scale=0.9, inter_scale=0.8))
    assert scaled.intra_bytes_per_s == pytest.approx(0.9 * plain.intra_bytes_per_s)
    assert scaled.nic_bytes_per_s == pytest.approx(0.8 * plain.nic_bytes_per_s)
