"""Element-wise kernel sets (aifabric.training.elementwise): byte counts by operator list, bad names."""

from __future__ import annotations

import dataclasses

import pytest

from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError
from aifabric.training import ParallelLayout, get_model
from aifabric.training.elementwise import (
    ELEMENTWISE_KERNELS,
    MOE_DISPATCHERS,
    elementwise_kernels,
    ep_wire_bytes,
    expected_destinations,
    layer_forward_bytes,
    moe_dispatcher,
)
from aifabric.training.step import StepModel, StepOptions


def test_fused_set_is_the_step_models_standing_count():
    # GPT-3 175B (LayerNorm, GeLU 4h, dropout): 2 norms x 4h + 2 residual adds x 6h + masks 4h = 24h, GeLU
    # read + write 2 bytes of f = 4h elements: 16h; 40h bytes per token, h = 12,288.
    m = get_model("gpt3-175b")
    assert layer_forward_bytes(m, ELEMENTWISE_KERNELS["fused"]) == 40 * 12288
    # With TP 8 and sequence parallelism every part splits eight ways.
    assert layer_forward_bytes(m, ELEMENTWISE_KERNELS["fused"], tp=8, sequence_parallel=True) == 5 * 12288


def test_llama_eager_counts_every_operator_of_the_llama_code():
    # Llama 3 8B, h = q = 4,096, k = 1,024 (8 KV heads of 128), SwiGLU f = 14,336, per token and layer:
    # 2 RMSNorms x 36h (x.float, pow, mean, x * rsqrt, type_as, * weight) + 2 adds x 6h = 84h;
    # RoPE 20 (q + k) = 102,400; output copy 4q = 16,384; repeat_kv 4 (q + k) = 20,480; SwiGLU 10f = 143,360.
    m = get_model("llama3-8b")
    expected = 84 * 4096 + 102_400 + 16_384 + 20_480 + 143_360
    assert layer_forward_bytes(m, ELEMENTWISE_KERNELS["llama-eager"]) == expected == 153 * 4096
    assert expected / layer_forward_bytes(m, ELEMENTWISE_KERNELS["fused"]) == pytest.approx(153 / 41)


def test_moe_layer_adds_megatron_cores_router_and_token_dispatcher():
    # Mixtral 8x7B (h = 4,096, top-2 of 8 experts of SwiGLU width 14,336, no dropout), fused kernels, per
    # token: 2 norms x 4h + 2 adds x 6h = 20h; SwiGLU 6 bytes per element of each of the 2 routed slots'
    # f_e; Megatron-Core core_v0.10.0's router and alltoall dispatcher (moe/router.py gating reads the token:
    # 1; moe_utils.py permute index_select reads + writes each slot: 2k; unpermute multiplies each slot by
    # its prob, 2k, zero-fills the output, 1, scatter_add_ reads each slot and writes the token, k + 1):
    # (5k + 3) h = 13h elements of 2 bytes = 26h.
    m = get_model("mixtral-8x7b")
    assert layer_forward_bytes(m, ELEMENTWISE_KERNELS["fused"], moe=True) == 46 * 4096 + 2 * 6 * 14336
    # The dispatcher works on the sequence-parallel shard, the experts' activation on the TP shard.
    tp8 = layer_forward_bytes(m, ELEMENTWISE_KERNELS["fused"], tp=8, sequence_parallel=True, moe=True)
    assert tp8 == (46 * 4096 + 2 * 6 * 14336) / 8


def _qwen3_30b() -> tuple:
    # Qwen3-30B-A3B's routing: h = 2,048, top-8 of 128 experts (the dispatcher's bytes do not depend on f_e).
    m = dataclasses.replace(get_model("mixtral-8x7b"), hidden_size=2048, n_experts=128, top_k=8)
    fused = ELEMENTWISE_KERNELS["fused"]
    base = layer_forward_bytes(m, fused, moe=True, dispatcher=MOE_DISPATCHERS["flex"])
    return m, fused, base - (4 * 8 + 1) * 2048 * 2  # the layer without its dispatcher


@pytest.mark.parametrize(
    ("name", "elements"),
    [
        # Eager alltoall: (5k + 3) on the shard, and the sort by local expert (sort_chunks_by_idxs before the
        # experts, its inverse after: a read and a write of every slot each way): 4k. k = 8: 43 + 32.
        ("alltoall", 43 + 32),
        # --moe-permute-fusion: Transformer Engine's permute loads the token once and stores k slots, its
        # unpermute loads k slots and stores once, the router reads the token: 2k + 3 = 19, and the sort, 32.
        ("alltoall-fused", 19 + 32),
        # flex (DeepEP, HybridEP): the first permutation is inside the dispatch kernel, the received tokens
        # are permuted into the experts' slots and back, at most a read and a write per slot each way: 4k + 1.
        ("flex", 33),
    ],
)
def test_each_dispatcher_moves_its_kernels_elements(name, elements):
    m, fused, rest = _qwen3_30b()
    got = layer_forward_bytes(m, fused, moe=True, ep=8, dispatcher=moe_dispatcher(name))
    assert got - rest == elements * 2048 * 2


def test_the_sort_by_local_expert_needs_several_experts_and_ranks():
    # No sort with one rank (ep = 1: no all-to-all to sort after) or one expert per rank (ep = E); with the
    # experts folded at etp = 1 under TP 2 a rank's experts see half the slots of the tokens (k etp / t = 4).
    m, fused, _ = _qwen3_30b()
    alltoall = MOE_DISPATCHERS["alltoall"]

    def moe_bytes(**kw: int) -> float:
        return layer_forward_bytes(m, fused, moe=True, dispatcher=alltoall, **kw)

    assert moe_bytes(ep=1) == moe_bytes(ep=128) == moe_bytes(ep=8) - 4 * 8 * 2048 * 2
    tp2 = dict(tp=2, sequence_parallel=True)
    assert moe_bytes(ep=32, etp=1, **tp2) - moe_bytes(ep=128, etp=1, **tp2) == 4 * 4 * 2048 * 2


def test_expected_destinations_is_the_hypergeometric_count():
    # Hand derivation: 8 experts on 4 ranks (2 each), top-2: a rank is missed: C(6, 2) / C(8, 2) = 15 / 28,
    # so D = 4 x 13 / 28 = 13 / 7 ranks a token.
    assert expected_destinations(4, 8, 2) == pytest.approx(13 / 7)
    # DeepSeek-V3, 256 experts top-8 on 64 ranks: 64 (1 - C(252, 8) / C(256, 8)) = 7.676; on 8 ranks 5.295.
    assert expected_destinations(64, 256, 8) == pytest.approx(7.676, abs=5e-4)
    assert expected_destinations(8, 256, 8) == pytest.approx(5.295, abs=5e-4)
    # Invariants: one rank holds every expert (1 copy); one expert a rank, every pick its own rank (k copies).
    assert expected_destinations(1, 128, 8) == 1.0
    assert expected_destinations(128, 128, 8) == pytest.approx(8.0)
    assert all(expected_destinations(r, 128, 8) <= min(8, r) for r in (2, 4, 8, 16, 32, 64, 128))


def test_flex_dispatcher_sends_a_token_once_per_destination_rank():
    # Mixtral 8x7B (8 experts, top-2) at EP 4 on 8 DGX H100 nodes (the layout of test_training_step's EP
    # check): the alltoall dispatcher's all-to-all carries 32,768 tokens / 2 TP ranks x top-2 x 4096 x 2
    # bytes; DeepEP / Hybrid-EP send a token once per rank its two experts sit on, 13 / 7 ranks (above).
    m, spec = get_model("mixtral-8x7b"), preset("dgx-h100-superpod", nodes=8)
    layout = ParallelLayout(tp=2, pp=2, dp=16, ep=4, sequence_parallel=True, microbatch_size=1,
                            global_batch_size=64, recompute="full", zero_stage=1)  # fmt: skip
    sizes = {}
    for name in ("alltoall", "flex"):
        step = StepModel(m, spec, options=StepOptions(moe_dispatcher=name)).evaluate(layout)
        (a2a,) = [c for c in step.comms if c.dim == "ep"]
        sizes[name] = a2a.message_bytes
    assert sizes["alltoall"] == 32768 / 2 * 2 * 4096 * 2
    assert sizes["flex"] == pytest.approx(32768 / 2 * (13 / 7) * 4096 * 2)
    assert MOE_DISPATCHERS["flex"].copies_per_token(8, 2, 8) == pytest.approx(2.0)  # one expert a rank


def test_mxfp8_wire_bytes_are_the_mx_block_count():
    # OCP MX v1.0: 8-bit elements, one 8-bit scale per 32: 33 / 32 bytes. Without recomputation a layer
    # runs 4 all-to-alls: dispatch in MXFP8, combine bf16 forward, the combine's gradient in MXFP8 and the
    # dispatch's bf16 backward: (2 x 33 / 32 + 2 x 2) / 4 = 1.515625 bytes an element. The dispatch alone in
    # MXFP8 with full recomputation (a second forward): ((1 + 1) (33 / 32 + 2) + (2 + 2)) / 6.
    assert ep_wire_bytes("bf16", "bf16", 0) == ep_wire_bytes("bf16", "bf16", 1) == 2.0
    assert ep_wire_bytes("mxfp8", "mxfp8", 0) == pytest.approx(1.515625)
    assert ep_wire_bytes("mxfp8", "bf16", 1) == pytest.approx((2 * (33 / 32 + 2) + 4) / 6)
    # Megatron-LM: moe_dispatch_fwd_dtype / moe_combine_bwd_dtype require the flex dispatcher.
    with pytest.raises(ConfigError, match=r"moe_dispatch_fwd_dtype 'mxfp8' needs .*'alltoall'"):
        StepOptions(moe_dispatch_fwd_dtype="mxfp8")
    with pytest.raises(ConfigError, match=r"moe_combine_bwd_dtype must be one of bf16, mxfp8, got 'fp8'"):
        StepOptions(moe_dispatcher="flex", moe_combine_bwd_dtype="fp8")


def test_mxfp8_dispatch_shrinks_the_flex_all_to_all_by_its_mean_bytes():
    # The layout of the flex test above, full recomputation: every all-to-all priced at the layer's mean
    # wire bytes, ((1 + 1) (33 / 32 + 2) + (33 / 32 + 2)) / 6 = 1.515625 of bf16's 2.
    m, spec = get_model("mixtral-8x7b"), preset("dgx-h100-superpod", nodes=8)
    layout = ParallelLayout(tp=2, pp=2, dp=16, ep=4, sequence_parallel=True, microbatch_size=1,
                            global_batch_size=64, recompute="full", zero_stage=1)  # fmt: skip
    sizes, steps = {}, {}
    for wire in ("bf16", "mxfp8"):
        opts = StepOptions(moe_dispatcher="flex", moe_dispatch_fwd_dtype=wire, moe_combine_bwd_dtype=wire)
        step = StepModel(m, spec, options=opts).evaluate(layout)
        (a2a,) = [c for c in step.comms if c.dim == "ep"]
        sizes[wire], steps[wire] = a2a.message_bytes, step
    assert sizes["mxfp8"] / sizes["bf16"] == pytest.approx(1.515625 / 2)
    assert steps["mxfp8"].breakdown_s["ep"] < steps["bf16"].breakdown_s["ep"]


def test_unknown_dispatcher_names_the_field():
    with pytest.raises(ConfigError, match=r"moe_dispatcher must be one of alltoall, alltoall-fused, flex"):
        StepOptions(moe_dispatcher="deepep")


def test_unknown_kernel_set_names_the_field():
    with pytest.raises(
        ConfigError,
        match=r"elementwise must be one of fused, llama-eager, megatron-unfused-ce, got 'compiled'",
    ):
        elementwise_kernels("compiled")
    with pytest.raises(ConfigError, match=r"elementwise must be one of"):
        StepOptions(elementwise="compiled")


def test_llama_eager_is_refused_on_a_layernorm_model():
    # The llama-eager norm count is the Llama code's RMSNorm operator by operator (36 bytes per element); a
    # LayerNorm model runs nn.LayerNorm, one kernel even in eager PyTorch: GPT-3 175B has no such count.
    with pytest.raises(
        ConfigError, match=r"elementwise: 'llama-eager' counts .* rmsnorm .* 'gpt3-175b' has layernorm"
    ):
        StepModel(
            get_model("gpt3-175b"), preset("h100-ib-2node"), options=StepOptions(elementwise="llama-eager")
        )
    StepModel(get_model("llama3-8b"), preset("h100-ib-2node"), options=StepOptions(elementwise="llama-eager"))


def test_megatron_unfused_cross_entropy_moves_52_bytes_per_logit():
    # Megatron-Core core_r0.8.0 tensor_parallel/cross_entropy.py without --cross-entropy-loss-fusion, per
    # vocabulary element and token: forward logits.float() (read 2, write 4), max (4), in-place subtract
    # (4 + 4), exp (4 + 4), sum (4), div_ (4 + 4) = 38; backward mul_ (4 + 4) and the bf16 cast of the
    # gradient (4 + 2) = 14. The fused set: 8 forward, 16 backward. Everything else is the fused set's.
    unfused, fused = ELEMENTWISE_KERNELS["megatron-unfused-ce"], ELEMENTWISE_KERNELS["fused"]
    assert (unfused.logits, unfused.logits_backward_bytes) == (38, 14)
    assert (fused.logits, fused.logits_backward_bytes) == (8, 16)
    m = get_model("gpt3-175b")
    assert layer_forward_bytes(m, unfused) == layer_forward_bytes(m, fused)
    # One H100 node, DP 8, b 1, 2 microbatches of 2,048 tokens: the step's memory-bound part grows by
    # (52 - 24) V s per microbatch at the H100's streaming rate (BabelStream Mul 2.90 TB/s).
    spec, lay = preset("dgx-h100-superpod", gpus=8), ParallelLayout(dp=8, global_batch_size=16)
    small = dataclasses.replace(m, n_layers=2)
    times = [
        StepModel(small, spec, options=StepOptions(elementwise=k, check_memory=False)).evaluate(lay)
        for k in ("fused", "megatron-unfused-ce")
    ]
    grown = times[1].breakdown_s["memory-bound"] - times[0].breakdown_s["memory-bound"]
    assert grown == pytest.approx(2 * 28 * 50257 * 2048 / 2.90e12, rel=0.01)
