"""Compute profiles: the power limit on sustained GEMMs and the measured FlashAttention-2 rate."""

from __future__ import annotations

import dataclasses

import pytest

from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError
from aifabric.training import ParallelLayout, StepModel, get_model
from aifabric.training.efficiency import ComputeProfile, _profile, compute_profile
from aifabric.training.step import StepOptions


def test_power_limit_ratio_is_the_sustained_over_the_short_run_rate():
    # huggingface/gpu-fryer README @704ba85, reference table (cuBLAS 8192^3 BF16, random data, runs of 60 s
    # and more): H100 SXM ~730, GB200 ~1550, A100 SXM 80 GB ~270 TFLOP/s. Short runs: MAMF 794.5 (H100),
    # 1822.0 (GB200); Mu Li's 230 on the A100 is already below the sustained figure: no limit charged.
    assert compute_profile("h100-sxm").power_limit_ratio == pytest.approx(730 / 794.5, rel=1e-3)
    assert compute_profile("gb200").power_limit_ratio == pytest.approx(1550 / 1822.0, rel=2e-3)
    assert compute_profile("a100-sxm-80gb").power_limit_ratio == 1.0
    assert compute_profile("b200").power_limit_ratio == 1.0  # no sustained figure recorded


def test_attention_core_efficiency_converts_the_flash_attention_count():
    # Azure AI-benchmarking-guide, ND H100 v5: FlashAttention-2 forward + backward 327.9 TFLOP/s at d = 128,
    # s = 8,192, no causal mask, counted as 3.5 forwards of 4 s^2 a d. A causal model's kernel does half the
    # blocks: 3.5 F / 2 / X seconds for the 3 F the step counts, a rate of 12 X / 7 = 562 TFLOP/s.
    h100 = compute_profile("h100-sxm")
    assert h100.attention_core_efficiency * 989 == pytest.approx(327.9 * 12 / 7, rel=2e-3)
    # FlashAttention-3 paper (arXiv:2407.08608), abstract: FlashAttention-2 reaches "only 35% utilization on
    # the H100"; Azure's figure is that third of the peak, well below a large GEMM's 80 %.
    assert h100.attention_efficiency == pytest.approx(0.33, abs=0.02)
    assert h100.attention_efficiency < 0.5 * h100.gemm_efficiency
    # No FlashAttention measurement: the attention core runs at the GEMM figure.
    assert (
        compute_profile("a100-sxm-80gb").attention_core_efficiency
        == compute_profile("a100-sxm-80gb").gemm_efficiency
    )


def test_step_rates_follow_the_profile():
    spec = preset("dgx-h100-superpod", nodes=1)
    sm = StepModel(get_model("llama3-8b"), spec)
    assert sm.gemm_flops_per_s == pytest.approx(730e12, rel=1e-3)
    assert sm.attention_flops_per_s == pytest.approx(327.9e12 * 12 / 7 * 730 / 794.5, rel=2e-3)
    # Without the two measurements the step is faster: they only ever slow it down.
    lay = ParallelLayout(dp=8, global_batch_size=16, microbatch_size=2, zero_stage=3, recompute="selective")
    bare = dataclasses.replace(
        compute_profile("h100-sxm"), sustained_gemm_efficiency=None, attention_efficiency=None
    )
    fast = StepModel(get_model("llama3-8b"), spec, options=StepOptions(compute=bare, check_memory=False))
    slow = StepModel(get_model("llama3-8b"), spec, options=StepOptions(check_memory=False))
    step = slow.evaluate(lay)
    assert step.step_s > fast.evaluate(lay).step_s
    reported = step.to_dict()["compute_profile"]
    assert reported["power_limit_ratio"] == pytest.approx(730 / 794.5, rel=1e-3)
    assert reported["attention_core_efficiency"] == pytest.approx(327.9 * 12 / 7 / 989, rel=2e-3)
    assert "held at 91.9% of those rates by the power limit" in reported["summary"]


@pytest.mark.parametrize("field", ["sustained_gemm_efficiency", "attention_efficiency"])
def test_new_fractions_are_checked(field: str):
    with pytest.raises(ConfigError, match=f"{field} must be in \\(0, 1\\], got 1.2"):
        ComputeProfile(gemm_efficiency=0.8, **{field: 1.2})


def test_a_borrowed_figure_is_the_lenders_own_measurement_or_refused():
    # The MI325X takes the MI300X's FlashAttention-2 figure (Azure ND MI300X v5: 328.6 / 1,307.4 TFLOP/s):
    # same CDNA 3 die and peak, so the same fraction; a figure the lender did not measure is refused.
    assert compute_profile("mi325x").attention_efficiency == compute_profile("mi300x").attention_efficiency
    assert ("attention_efficiency", "mi300x") in compute_profile("mi325x").borrowed
    data = {
        "a": {"gemm_efficiency": 0.5, "source": "x", "borrowed": {"attention_efficiency": "b"}},
        "b": {"gemm_efficiency": 0.6, "source": "y"},
    }
    with pytest.raises(ConfigError, match=r"a\.borrowed\.attention_efficiency: 'b' has no measured"):
        _profile(data, "a")
