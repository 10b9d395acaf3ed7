"""Property tests (hypothesis) for the training models: counts, FLOPs, memory monotonicity, rank groups."""

from __future__ import annotations

import dataclasses
import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from aifabric.errors import ConfigError
from aifabric.training.flops import (
    active_param_count,
    megatron_gpt_flops_per_iteration,
    param_count,
    training_flops_per_iteration,
    training_flops_per_token,
)
from aifabric.training.layout import DIMENSIONS, ParallelLayout
from aifabric.training.memory import memory_breakdown
from aifabric.training.models import ModelSpec

SETTINGS = settings(max_examples=60, deadline=None)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def models(draw: st.DrawFn, *, moe: bool | None = None) -> ModelSpec:
    heads = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    head_dim = draw(st.sampled_from([8, 16, 32, 64]))
    kv = draw(st.sampled_from(_divisors(heads)))
    is_moe = draw(st.booleans()) if moe is None else moe
    n_layers = draw(st.integers(1, 48))
    extra = {}
    if is_moe:
        n_experts = draw(st.sampled_from([2, 4, 8, 16]))
        extra = {
            "n_experts": n_experts,
            "top_k": draw(st.integers(1, n_experts)),
            "n_shared_experts": draw(st.integers(0, 2)),
            "expert_ffn_hidden_size": draw(st.sampled_from([32, 64, 256])),
            "moe_layer_freq": draw(st.integers(1, 3)),
            "first_dense_layers": draw(st.integers(0, n_layers)),
        }
    return ModelSpec(
        "random",
        n_layers=n_layers,
        hidden_size=heads * head_dim,
        n_heads=heads,
        n_kv_heads=kv,
        ffn_hidden_size=draw(st.sampled_from([None, 64, 384, 1024])),
        vocab_size=draw(st.integers(16, 60000)),
        seq_len=draw(st.sampled_from([64, 256, 1024, 4096])),
        gated_mlp=draw(st.booleans()),
        tied_embeddings=draw(st.booleans()),
        learned_position_embeddings=draw(st.booleans()),
        bias=draw(st.booleans()),
        norm=draw(st.sampled_from(["layernorm", "rmsnorm"])),
        dropout=draw(st.booleans()),
        **extra,
    )


@st.composite
def model_and_layout(draw: st.DrawFn, *, moe: bool | None = None, interleave: bool = True):
    m = draw(models(moe=moe))
    tp = draw(st.sampled_from(_divisors(math.gcd(m.n_heads, m.n_kv_heads))))
    pp = draw(st.sampled_from(_divisors(m.n_layers)))
    v = 1
    if interleave and pp > 1:
        v = draw(st.sampled_from(_divisors(m.n_layers // pp)))
    dp = draw(st.sampled_from([1, 2, 4, 8]))
    cp = draw(st.sampled_from([1, 2, 4]))
    ep = draw(st.sampled_from(_divisors(math.gcd(m.n_experts, dp * cp)))) if m.is_moe else 1
    b = draw(st.sampled_from([1, 2, 4]))
    m_micro = draw(st.integers(1, 16)) * (pp if v > 1 else 1)
    layout = ParallelLayout(
        tp=tp, pp=pp, dp=dp, cp=cp, ep=ep,
        sequence_parallel=draw(st.booleans()),
        virtual_pipeline_stages=v,
        zero_stage=draw(st.integers(0, 3)),
        microbatch_size=b,
        global_batch_size=m_micro * b * dp,
        recompute=draw(st.sampled_from(["none", "selective", "full"])),
    )  # fmt: skip
    try:
        layout.validate(m)
    except ConfigError:
        assume(False)
    return m, layout


def _valid(model: ModelSpec, layout: ParallelLayout) -> bool:
    try:
        layout.validate(model)
    except ConfigError:
        return False
    return True


@SETTINGS
@given(models())
def test_counts_positive_and_active_at_most_total(m):
    assert param_count(m) > 0
    assert 0 < active_param_count(m) <= param_count(m)
    none, sel, full = (training_flops_per_token(m, recompute=r) for r in ("none", "selective", "full"))
    assert 0 < none <= sel <= full


@SETTINGS
@given(
    st.integers(1, 128), st.sampled_from([128, 1024, 2048, 8192]), st.integers(1, 128),
    st.sampled_from([256, 1024, 4096, 12288]), st.integers(1000, 256000),
)  # fmt: skip
def test_general_flops_equal_megatron_for_gpt_shapes(batch, s, n_layers, h, vocab):
    # Any Megatron GPT shape (MHA, GeLU 4h, learned positions, tied): the general count is Eq. 3.
    m = ModelSpec("gpt", n_layers=n_layers, hidden_size=h, n_heads=h // 64, vocab_size=vocab, seq_len=s,
                  bias=True, learned_position_embeddings=True, tied_embeddings=True)  # fmt: skip
    for mode in ("none", "selective", "full"):
        closed = megatron_gpt_flops_per_iteration(batch, s, n_layers, h, vocab, recompute=mode)
        general = training_flops_per_iteration(m, batch, recompute=mode)
        assert math.isclose(general, closed, rel_tol=1e-9)


@SETTINGS
@given(model_and_layout())
def test_memory_never_increases_when_tp_doubles(case):
    m, lay = case
    bigger = dataclasses.replace(lay, tp=2 * lay.tp)
    assume(_valid(m, bigger))
    assert memory_breakdown(m, bigger).total_bytes <= memory_breakdown(m, lay).total_bytes * (1 + 1e-12)


@SETTINGS
@given(model_and_layout(moe=False, interleave=False))
def test_model_states_and_layer_activations_never_increase_when_pp_doubles(case):
    # 1F1B (v = 1), dense models. Total memory can grow with pp: the first stage keeps one input-embedding
    # dropout mask per in-flight microbatch, and p of them are in flight; so this checks the two terms that
    # must not grow. (With interleaving the in-flight count l (1 + (p-1)/(pv)) itself grows with p.)
    m, lay = case
    bigger = dataclasses.replace(lay, pp=2 * lay.pp)
    assume(_valid(m, bigger))
    small, big = memory_breakdown(m, lay), memory_breakdown(m, bigger)
    assert big.model_state_bytes <= small.model_state_bytes * (1 + 1e-12)
    assert big.layer_activation_bytes <= small.layer_activation_bytes * (1 + 1e-12)


@SETTINGS
@given(model_and_layout(moe=True))
def test_memory_never_increases_when_ep_doubles(case):
    m, lay = case
    bigger = dataclasses.replace(lay, ep=2 * lay.ep)
    assume(_valid(m, bigger))
    assert memory_breakdown(m, bigger).total_bytes <= memory_breakdown(m, lay).total_bytes * (1 + 1e-12)


@SETTINGS
@given(model_and_layout())
def test_memory_never_increases_with_zero_stage(case):
    m, lay = case
    totals = [memory_breakdown(m, dataclasses.replace(lay, zero_stage=z)).total_bytes for z in range(4)]
    assert all(a >= b * (1 - 1e-12) for a, b in itertools_pairwise(totals))


def itertools_pairwise(seq):
    return zip(seq, seq[1:], strict=False)


@SETTINGS
@given(
    st.permutations(DIMENSIONS),
    st.sampled_from([1, 2, 4]), st.sampled_from([1, 3]), st.sampled_from([1, 2]), st.sampled_from([1, 2, 4]),
    st.data(),
)  # fmt: skip
def test_groups_partition_and_cross_at_one_rank(order, tp, pp, cp, dp, data):
    ep = data.draw(st.sampled_from(_divisors(dp * cp)))
    lay = ParallelLayout(tp=tp, pp=pp, cp=cp, dp=dp, ep=ep, order="-".join(order))
    try:
        groups = lay.groups(tp * pp * cp * dp)
    except ConfigError:
        assume(False)
    n = lay.n_gpus
    sizes = {"tp": tp, "pp": pp, "cp": cp, "dp": dp, "dp_cp": dp * cp, "ep": ep, "expert_dp": dp * cp // ep}
    for dim, size in sizes.items():
        assert sorted(r for g in groups[dim] for r in g) == list(range(n))
        assert all(len(g) == size for g in groups[dim])
    # A TP group and a DP group share at most one rank; each rank's TP x DP x PP x CP coordinates are
    # unique, so the four groups through a rank meet only there.
    rank = data.draw(st.integers(0, n - 1))
    through = [set(lay.group_of(d, rank)) for d in ("tp", "cp", "dp", "pp")]
    for i in range(4):
        for j in range(i + 1, 4):
            assert through[i] & through[j] == {rank}
    # EP groups lie inside the dense dp x cp group of their ranks.
    assert set(lay.group_of("ep", rank)) <= set(lay.group_of("dp_cp", rank))
