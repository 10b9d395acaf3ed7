"""Megatron-Core's combined 1F1B expert all-to-all overlap (aifabric.training.ep_overlap): the two-stream
schedule of one merged layer, the unpaired warm-up and cool-down passes, and the step model's use of both."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError
from aifabric.training import ParallelLayout, StepModel, get_model
from aifabric.training.ep_overlap import EP_OVERLAP_SCHEDULES, LayerPasses, merged_layer_s, unpaired_fraction
from aifabric.training.step import StepOptions

H100_F = 24 / 132  # presets/compute.yaml: an NCCL kernel holds 24 of the H100's 132 SMs
ONES = LayerPasses(1.0, 1.0, 1.0, 1.0, 1.0)
seconds = st.floats(0.0, 10.0)


def test_merged_layer_by_hand():
    # Each all-to-all (0.5 s) shorter than the compute beside it: all hidden, no contention -> 5 s of compute.
    assert merged_layer_s(ONES, 0.5, 0.0) == pytest.approx(5.0)
    # 2 s each: combine_bwd 0-2 beside attn_fwd 0-1; dispatch_fwd 2-4 beside mlp_dgrad 2-3 and mlp_wgrad 3-4;
    # dispatch_bwd 4-6 beside mlp_fwd 4-5; combine_fwd 6-8 beside attn_bwd 6-7: 8 s, 3 s exposed.
    assert merged_layer_s(ONES, 2.0, 0.0) == pytest.approx(8.0)
    # Hidden, but each compute pass beside an all-to-all runs at 1 - f for its 0.5 s: 5 + 4 x 0.5 f.
    assert merged_layer_s(ONES, 0.5, H100_F) == pytest.approx(5.0 + 4 * 0.5 * H100_F)
    with pytest.raises(ValueError, match="negative"):
        merged_layer_s(ONES, -1.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(st.tuples(seconds, seconds, seconds, seconds, seconds), seconds, st.floats(0.0, 0.5))
def test_merged_layer_lies_between_full_overlap_and_none(passes, a2a_s, f):
    # Never faster than its compute (nor its four all-to-alls), never slower than both in a row.
    p = LayerPasses(*passes)
    merged = merged_layer_s(p, a2a_s, f)
    assert merged >= max(sum(p), 4 * a2a_s) - 1e-9
    assert merged <= sum(p) + 4 * a2a_s + 1e-9


@settings(max_examples=40, deadline=None)
@given(st.tuples(seconds, seconds, seconds, seconds, seconds), st.floats(0.0, 1.0))
def test_all_to_alls_shorter_than_the_compute_beside_them_are_hidden(passes, share):
    # combine_bwd beside attn_fwd, dispatch_fwd beside mlp_dgrad, dispatch_bwd beside mlp_wgrad, combine_fwd
    # beside attn_bwd: each no longer than its partner -> nothing exposed without contention.
    p = LayerPasses(*passes)
    x = share * min(p.attn_fwd, p.mlp_dgrad, p.mlp_wgrad, p.attn_bwd)
    assert merged_layer_s(p, x, 0.0) == pytest.approx(sum(p), abs=1e-9)


def test_unpaired_passes_follow_megatrons_warmup():
    # get_pp_rank_microbatches, rank 0: 2 (p - 1) + (v - 1) p warm-up forwards, + 1 with the overlap, of m v.
    assert unpaired_fraction(8, 4, 128) == pytest.approx(39 / 512)
    assert unpaired_fraction(8, 3, 256) == pytest.approx((14 + 16 + 1) / 768)
    assert unpaired_fraction(1, 1, 16) == pytest.approx(1 / 16)  # first forward, last backward alone
    assert unpaired_fraction(8, 4, 2) == 1.0  # all warm-up: nothing paired
    with pytest.raises(ValueError, match="must be >= 1"):
        unpaired_fraction(0, 1, 1)


def _mixtral(**options):
    model, spec = get_model("mixtral-8x7b"), preset("dgx-h100-superpod", nodes=4)
    sm = StepModel(model, spec, options=StepOptions(check_memory=False, **options))
    return sm, ParallelLayout(tp=2, dp=16, ep=8, sequence_parallel=True, global_batch_size=256)


def test_combined_1f1b_hides_part_of_the_all_to_alls():
    # Mixtral 8x7B, TP 2 EP 8 on 4 DGX H100: same traffic; the unpaired share (the first forward and the last
    # backward, 1 of m = 16 microbatches) shows whole, so at least 1/16 of the exposed all-to-alls remains.
    alone_sm, lay = _mixtral()
    hidden_sm, _ = _mixtral(ep_comm_overlap=True, ep_overlap_schedule="combined-1f1b")
    alone, hidden = alone_sm.evaluate(lay), hidden_sm.evaluate(lay)
    m = hidden_sm.stage(lay, hidden_sm.model).n_mb
    assert m == 16
    assert hidden.comm_s("ep") == pytest.approx(alone.comm_s("ep"), rel=1e-9)
    assert alone.breakdown_s["ep"] / m <= hidden.breakdown_s["ep"] < alone.breakdown_s["ep"]
    assert hidden.step_s < alone.step_s


@pytest.mark.parametrize(
    "layout,message",
    [
        (dict(tp=2, pp=2, dp=8, ep=8), "with pp=2 needs virtual_pipeline_stages > 1"),
        (dict(tp=2, dp=16, ep=8, recompute="full"), "without full recomputation"),
    ],
)
def test_combined_1f1b_is_refused_where_megatron_refuses_it(layout, message):
    # megatron/core/transformer/transformer_config.py: a virtual pipeline with pp > 1, no full recompute.
    sm, _ = _mixtral(ep_comm_overlap=True, ep_overlap_schedule="combined-1f1b")
    with pytest.raises(ConfigError, match=message):
        sm.evaluate(ParallelLayout(sequence_parallel=True, global_batch_size=256, **layout))


def test_unknown_schedule_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match="ep_overlap_schedule must be one of dualpipe, combined-1f1b"):
        StepOptions(ep_overlap_schedule="zero-bubble")
    assert list(EP_OVERLAP_SCHEDULES) == ["dualpipe", "combined-1f1b"]
