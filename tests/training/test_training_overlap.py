"""Communication that overlaps as frameworks run it (aifabric.training.step): ZeRO-3 per layer, DP buckets,
TP userbuffer overlap, EP load imbalance, and the SM contention that overlap costs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError
from aifabric.training import ParallelLayout, StepModel, get_model
from aifabric.training.efficiency import ComputeProfile, compute_profile
from aifabric.training.step import (
    StepOptions,
    bucketed_exposed_s,
    ep_load_imbalance,
    overlapped_s,
)

H100_F = 24 / 132  # presets/compute.yaml: an NCCL kernel holds 24 of the H100's 132 SMs


def test_contention_comes_from_the_sm_share():
    assert compute_profile("h100-sxm").overlap_contention == pytest.approx(H100_F)
    assert compute_profile("a100-sxm-80gb").overlap_contention == pytest.approx(24 / 108)
    assert ComputeProfile(gemm_efficiency=0.8).overlap_contention == 0.0  # SM count unknown: none charged
    with pytest.raises(ConfigError, match="comm_sms must be >= 0 and below sm_count"):
        ComputeProfile(gemm_efficiency=0.8, sm_count=100, comm_sms=100)


def test_overlap_formulas_by_hand():
    # Hidden: 10 ms beside 30 ms of compute that loses f of its SMs while the collective runs -> f x 10 ms.
    assert overlapped_s(0.010, 0.030, H100_F) == pytest.approx(H100_F * 0.010)
    # Comm-bound: 30 ms beside 10 ms -> the 20 ms that compute cannot cover.
    assert overlapped_s(0.030, 0.010, H100_F) == pytest.approx(0.020)
    # Buckets: 1 s in 4 buckets behind 2 s of backward, no contention: only the last 0.25 s shows; comm-bound
    # (4 s behind 2 s): everything but the 1.5 s of backward the first three buckets overlap.
    assert bucketed_exposed_s(1.0, 2.0, 4, 0.0) == pytest.approx(0.25)
    assert bucketed_exposed_s(4.0, 2.0, 4, 0.0) == pytest.approx(4.0 - 1.5)
    with pytest.raises(ValueError, match="n_buckets must be >= 1, got 0"):
        bucketed_exposed_s(1.0, 1.0, 0, 0.0)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    x=st.floats(0.0, 10.0),
    c=st.floats(0.0, 10.0),
    f=st.floats(0.0, 0.5),
    n=st.integers(1, 64),
)
def test_exposed_time_is_between_the_excess_and_the_whole(x: float, c: float, f: float, n: int):
    # Overlap never costs more than running the collective alone, nor less than what compute cannot cover.
    for exposed in (overlapped_s(x, c, f), bucketed_exposed_s(x, c, n, f)):
        assert max(0.0, x - c) - 1e-12 <= exposed <= x + 1e-12
    # More buckets never expose more (finer buckets start earlier).
    assert bucketed_exposed_s(x, c, n + 1, f) <= bucketed_exposed_s(x, c, n, f) + 1e-12


def test_ep_imbalance_balls_into_bins():
    # mu = 4,096 x 8 / 8 = 4,096 routes per rank: 1 + sqrt(2 ln 8 / 4096) (Raab & Steger 1998).
    assert ep_load_imbalance(4096 * 8, 8) == pytest.approx(1 + math.sqrt(2 * math.log(8) / 4096))
    assert ep_load_imbalance(4096 * 8, 1) == 1.0
    assert ep_load_imbalance(64, 8, capacity_factor=1.25) == 1.25  # dropped tokens cap the busiest rank
    assert ep_load_imbalance(64, 8) > ep_load_imbalance(6400, 8) > 1.0  # fewer tokens, less even
    with pytest.raises(ConfigError, match="capacity_factor must be >= 1"):
        StepOptions(capacity_factor=0.5)


def _zero3_step(dp: int, **options: object):
    """Llama 3 8B, pure ZeRO-3 data parallelism over ``dp`` H100s, 4 sequences of 8,192 tokens per GPU."""
    model, spec = get_model("llama3-8b"), preset("dgx-h100-superpod", nodes=dp // 8)
    lay = ParallelLayout(
        dp=dp, microbatch_size=1, global_batch_size=4 * dp, recompute="selective", zero_stage=3
    )
    return StepModel(model, spec, options=StepOptions(**options)).evaluate(lay)  # type: ignore[arg-type]


@settings(max_examples=8, deadline=None, derandomize=True)
@given(st.sampled_from([(8, 16), (16, 64), (32, 128), (64, 256), (128, 512), (8, 1024)]))
def test_zero3_exposed_communication_grows_with_the_dp_group(pair: tuple[int, int]):
    # Fixed model and work per GPU: each layer's gather and reduce-scatter is the same size whatever dp, but a
    # ring needs dp - 1 steps and crosses more of the fabric, so the exposed part grows with the group.
    small, large = (_zero3_step(d) for d in pair)
    assert large.breakdown_s["dp"] > small.breakdown_s["dp"] > 0


def test_zero3_per_layer_gathers_and_prefetch():
    st1 = _zero3_step(32)
    st0 = _zero3_step(32, zero3_prefetch_layers=0)
    ag = [c for c in st1.comms if c.op == "all_gather"]
    rs = [c for c in st1.comms if c.op == "reduce_scatter"]
    (ag,), (rs,) = ag, rs
    # 32 layers x 4 microbatches; gathered before forward and again before backward, reduced once.
    assert ag.count == 2 * rs.count == 2 * 32 * 4
    # One layer's bf16 parameters: the stage's 8.03 B / 32 layers x 2 bytes (embedding shared out evenly).
    assert ag.message_bytes == pytest.approx(rs.message_bytes / 2)
    assert 0.4e9 < ag.message_bytes < 0.6e9
    # Without prefetch nothing hides: l gathers forward, l (gather + reduce-scatter) backward, per microbatch.
    exposed0 = 4 * 32 * (2 * ag.time_s + rs.time_s)
    assert st0.breakdown_s["dp"] == pytest.approx(exposed0)
    assert st1.breakdown_s["dp"] < 0.5 * st0.breakdown_s["dp"]
    # Memory: each layer gathered ahead holds its full bf16 weights, 31/32 of them beyond the local shard.
    per_layer = st1.memory.params_per_gpu / 32
    extra = st1.memory.other_activation_bytes - st0.memory.other_activation_bytes
    assert extra == pytest.approx(2 * per_layer * 31 / 32)
    with pytest.raises(ConfigError, match="zero3_prefetch_layers must be an integer >= 0"):
        StepOptions(zero3_prefetch_layers=-1)


def test_dp_buckets_expose_the_last_bucket():
    # ZeRO-1 on 256 H100s: the gradient reduce-scatter runs in max(40 M, 1 M x 256) = 256 M-parameter buckets
    # behind the last backward pass; smaller buckets expose less.
    # (Memory is not the point here: 8 B parameters with full gradients do not fit an 80 GB GPU.)
    model, spec = get_model("llama3-8b"), preset("dgx-h100-superpod", nodes=32)
    lay = ParallelLayout(
        dp=256, microbatch_size=1, global_batch_size=512, recompute="selective", zero_stage=1
    )
    coarse = StepModel(model, spec, options=StepOptions(check_memory=False)).evaluate(lay)
    fine_opts = StepOptions(ddp_bucket_params=10_000_000, check_memory=False)
    fine = StepModel(model, spec, options=fine_opts).evaluate(lay)
    (rs,) = [c for c in coarse.comms if c.op == "reduce_scatter"]
    n_b = math.ceil(8.03e9 / 256e6)
    assert rs.exposed_s == pytest.approx(rs.time_s * (1 / n_b + H100_F * (n_b - 1) / n_b), rel=0.01)
    assert fine.breakdown_s["dp"] < coarse.breakdown_s["dp"]


def test_zero2_reduces_every_microbatch():
    # ZeRO-2 keeps only a gradient shard, so it reduce-scatters after each of the m microbatches (m = 2).
    model, spec = get_model("llama3-8b"), preset("dgx-h100-superpod", nodes=4)
    base = dict(dp=32, microbatch_size=1, global_batch_size=64, recompute="selective")
    sm = StepModel(model, spec, options=StepOptions(check_memory=False))
    z1 = sm.evaluate(ParallelLayout(**base, zero_stage=1))  # type: ignore[arg-type]
    z2 = sm.evaluate(ParallelLayout(**base, zero_stage=2))  # type: ignore[arg-type]
    (rs1,) = [c for c in z1.comms if c.op == "reduce_scatter"]
    (rs2,) = [c for c in z2.comms if c.op == "reduce_scatter"]
    assert (rs1.count, rs2.count) == (1, 2)
    assert z2.memory.gradient_bytes < z1.memory.gradient_bytes / 16


def test_tp_comm_overlap_hides_tp_behind_gemms():
    # GPT-3 175B, TP 8 inside a DGX H100: Megatron's userbuffer overlap hides the sequence-parallel
    # collectives behind the GEMMs, leaving the SM share f of their time.
    model, spec = get_model("gpt3-175b"), preset("dgx-h100-superpod", nodes=128)
    lay = ParallelLayout(
        tp=8, pp=8, dp=16, sequence_parallel=True, zero_stage=1, global_batch_size=1536, recompute="selective"
    )
    plain = StepModel(model, spec).evaluate(lay)
    over = StepModel(model, spec, options=StepOptions(tp_comm_overlap=True)).evaluate(lay)
    assert over.breakdown_s["tp"] == pytest.approx(H100_F * plain.breakdown_s["tp"], rel=1e-6)
    assert over.step_s < plain.step_s
    no_sp = ParallelLayout(tp=8, pp=8, dp=16, zero_stage=1, global_batch_size=1536, recompute="full")
    with pytest.raises(ConfigError, match="tp_comm_overlap needs sequence_parallel"):
        StepModel(model, spec, options=StepOptions(tp_comm_overlap=True)).evaluate(no_sp)


def test_ep_overlap_hides_the_all_to_all_behind_the_paired_microbatch():
    # DeepSeek-V3-like on 8 DGX H100 nodes, EP 64 (the eight nodes), b = 1, s = 4,096: each
    # MoE layer's four all-to-alls (x) run beside one layer's forward and backward compute (c); what shows is
    # max(x - c, f x) per MoE layer (overlapped_s), never more than the all-to-alls alone.
    model, spec = get_model("deepseek-v3-like"), preset("dgx-h100-superpod", nodes=8)
    lay = ParallelLayout(dp=64, ep=64, global_batch_size=256)
    sm_alone = StepModel(model, spec, options=StepOptions(fp8=True, check_memory=False))
    sm_hidden = StepModel(
        model, spec, options=StepOptions(fp8=True, check_memory=False, ep_comm_overlap=True)
    )
    alone, hidden = sm_alone.evaluate(lay), sm_hidden.evaluate(lay)
    st_ = sm_hidden.stage(lay, model)
    comp = sm_hidden.compute_term(st_)
    x = alone.breakdown_s["ep"] / (st_.n_mb * st_.n_moe)  # the four all-to-alls of one MoE layer
    c = comp.total_s / st_.layers
    expect = st_.n_mb * st_.n_moe * overlapped_s(x, c, H100_F)
    assert hidden.breakdown_s["ep"] == pytest.approx(expect, rel=1e-9)
    assert hidden.comm_s("ep") == pytest.approx(alone.comm_s("ep"), rel=1e-9)  # same traffic, less exposed
    assert hidden.step_s < alone.step_s
    assert hidden.breakdown_s["ep"] >= H100_F * alone.breakdown_s["ep"] - 1e-9


def test_an_infinite_capacity_factor_is_refused():
    # c = inf pads every expert to infinite slots: its GEMMs take (c - 1) x the routed FLOPs more, an
    # infinite compute and a NaN step; only a finite c >= 1 (or dropless, None) is a routing
    with pytest.raises(ConfigError, match="capacity_factor must be >= 1 and finite.*inf"):
        StepOptions(capacity_factor=math.inf)
