"""The training framework as a choice (aifabric.training.step, .memory, .flops): torchtitan's op-level
selective recomputation in the step time, and ZeRO-3 / FSDP gathers in the mixed-precision parameter dtype."""

from __future__ import annotations

import dataclasses

import pytest

from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError
from aifabric.training import ParallelLayout, StepModel, get_model
from aifabric.training.flops import (
    attention_core_forward_flops_per_token,
    op_sac_recompute_forward_flops_per_token,
    training_flops_per_iteration,
)
from aifabric.training.memory import FRAMEWORKS, activation_bytes_per_layer, memory_breakdown
from aifabric.training.models import BytesPerParam
from aifabric.training.step import StepOptions

#: Llama 3 8B (Meta's config.json): h, SwiGLU f, kv heads x d.
H8, F8, KV8 = 4096, 14336, 8 * 128
#: torchtitan's FSDP2: fp32 shards (4 + 4 + 8 bytes) gathered in bf16 (MixedPrecisionPolicy(param_dtype)).
TITAN_BYTES = BytesPerParam(weights=4.0, grads=4.0, optimizer=8.0, gathered=2.0)


def test_op_sac_recomputes_every_second_matmul_by_hand() -> None:
    # Gated (wq wk wv wo w1 w3 w2): wk h x kv, wo q x h, w3 h x f, 2 FLOPs per multiply-add.
    assert op_sac_recompute_forward_flops_per_token(get_model("llama3-8b")) == 2 * (
        H8 * KV8 + H8 * H8 + H8 * F8
    )
    # Ungated GPT-3 (wq wk wv wo w1 w2, f = 4h): wk, wo and w2, 2 (h^2 + h^2 + 4h^2) = 12 h^2.
    h = 12288
    assert op_sac_recompute_forward_flops_per_token(get_model("gpt3-175b")) == 12 * h * h


def _llama8b_step(
    framework: str, recompute: str = "selective", accelerator: str = "h100-sxm", **options: object
):
    model = get_model("llama3-8b")
    spec = preset("dgx-h100-superpod", nodes=1, accelerator=accelerator)
    lay = ParallelLayout(dp=8, microbatch_size=1, global_batch_size=16, zero_stage=1, recompute=recompute)
    opts = StepOptions(framework=framework, gemm_shapes=False, **options)  # type: ignore[arg-type]
    opts = dataclasses.replace(opts, check_memory=recompute == "full")  # 80 GB fits full recompute only
    sm = StepModel(model, spec, options=opts)
    return sm, sm.evaluate(lay)


def test_torchtitan_selective_repeats_its_matmuls_not_the_attention_core() -> None:
    # Per GPU 2 microbatches of 8,192 tokens, 32 layers. Megatron repeats the attention core (4 s a d per
    # token at the attention rate); torchtitan wk, wo, w3 at the GEMM rate: the compute parts differ by
    # exactly those two, by hand.
    sm, titan = _llama8b_step("torchtitan")
    _, mega = _llama8b_step("megatron")
    model, tokens = get_model("llama3-8b"), 2 * 8192
    core = 32 * tokens * attention_core_forward_flops_per_token(model) / sm.attention_flops_per_s
    sac = 32 * tokens * op_sac_recompute_forward_flops_per_token(model) / sm.linear_flops_per_s
    diff = titan.breakdown_s["compute"] - mega.breakdown_s["compute"]
    assert diff == pytest.approx(sac - core, rel=1e-9)
    # Hardware FLOPs count what ran: the repeated matmuls instead of the core; model FLOPs do not change.
    assert titan.model_flops_per_iteration == mega.model_flops_per_iteration
    assert titan.flops_per_iteration == pytest.approx(
        training_flops_per_iteration(model, 16)
        + 16 * 8192 * 32 * op_sac_recompute_forward_flops_per_token(model)
    )


def test_torchtitan_selective_replays_the_element_wise_work() -> None:
    # With FlashAttention Megatron's selective recompute moves no scores; torchtitan's replays the layer's
    # element-wise operators (norms, RoPE, SiLU x product, residual adds): one more forward's worth of them.
    sm, titan = _llama8b_step("torchtitan")
    _, mega = _llama8b_step("megatron")
    lay = ParallelLayout(dp=8, microbatch_size=1, global_batch_size=16, zero_stage=1)
    per_token, _ = sm._elementwise_bytes(lay, False)
    replay = 2 * 8192 * 32 * per_token / sm.hbm_bytes_per_s
    diff = titan.breakdown_s["memory-bound"] - mega.breakdown_s["memory-bound"]
    assert diff == pytest.approx(replay, rel=1e-9)


def test_torchtitan_selective_fp8_recomputes_the_same_matmuls_as_bf16() -> None:
    # torchao @0afa4c1 float8_linear.py: matmul_with_hp_or_float8_args.forward calls torch.mm on its Float8
    # tensors; the checkpoint's dispatch mode sees aten.mm.default (in torchtitan @e7c0cae's _save_list)
    # before float8_ops.py float8_mm turns it into torch._scaled_mm: the same every-second-mm count, so the
    # hardware FLOPs (wk, wo, w3 once more) do not depend on FP8.
    _, bf16 = _llama8b_step("torchtitan")
    _, fp8 = _llama8b_step("torchtitan", fp8=True)
    assert fp8.flops_per_iteration == bf16.flops_per_iteration


def test_torchtitan_selective_fp8_casts_again_what_feeds_the_recomputed_matmuls() -> None:
    # The recomputed wk, wo and w3 need their inputs cast again (only aten.max, the amax, is saved): the
    # attention input h, the attention output q = h and the MLP input h per token, 6 bytes an element in
    # torchao's tensorwise cast (roofline_utils.py: the amax kernel reads 2, the cast reads 2 and writes the
    # row- and column-major FP8 copies); the kept w2 needs no cast of its f-wide input. Every cast also
    # costs torchao 2 bytes an element more than Transformer Engine's cast_transpose (4): forward the QKV
    # and FC1 inputs (h each), the projection's (a d = h) and FC2's (f = 14,336); backward the output
    # gradients of QKV (h + 2 x 1,024), the gated FC1 (2 f), the projection and FC2 (h each).
    # Megatron's selective recomputes no cast; the difference is those bytes over 2 x 8,192 tokens x 32
    # layers, beside the element-wise replay of the BF16 test above.
    sm, titan = _llama8b_step("torchtitan", fp8=True)
    _, mega = _llama8b_step("megatron", fp8=True)
    lay = ParallelLayout(dp=8, microbatch_size=1, global_batch_size=16, zero_stage=1)
    ew, _ = sm._elementwise_bytes(lay, False)
    recast = 6 * (H8 + H8 + H8)
    casts = (3 * H8 + F8) + (H8 + 2 * KV8 + 2 * F8 + 2 * H8)
    replay = 2 * 8192 * 32 * (ew + recast + 2 * casts) / sm.hbm_bytes_per_s
    diff = titan.breakdown_s["memory-bound"] - mega.breakdown_s["memory-bound"]
    assert diff == pytest.approx(replay, rel=1e-9)


def test_torchtitan_2025_06_recomputes_cudnn_attention_on_blackwell() -> None:
    # torchtitan 3b85aa3..b39377f (e.g. e7c0cae): attention.py puts cuDNN first when has_cuda_capability(10,
    # 0), and _save_list lacks aten._scaled_dot_product_cudnn_attention: on B200 (sm_100) the attention
    # core (4 s a d per token, causal or not as the model counts it) runs again at the attention rate, its
    # output (2 q) and log-sum-exp (4 a) are not kept. 2 microbatches of 8,192 tokens, 32 layers.
    sm, old = _llama8b_step("torchtitan-2025-06", accelerator="b200")
    _, new = _llama8b_step("torchtitan", accelerator="b200")
    model, tokens = get_model("llama3-8b"), 2 * 8192
    core = 32 * tokens * attention_core_forward_flops_per_token(model) / sm.attention_flops_per_s
    assert old.breakdown_s["compute"] - new.breakdown_s["compute"] == pytest.approx(core, rel=1e-9)
    assert old.flops_per_iteration - new.flops_per_iteration == pytest.approx(
        16 * 8192 * 32 * attention_core_forward_flops_per_token(model)
    )
    lay = ParallelLayout(dp=8, microbatch_size=2, global_batch_size=16, recompute="selective")
    kept = activation_bytes_per_layer(model, lay, flash_attention=True, framework="torchtitan")
    b200 = FRAMEWORKS["torchtitan-2025-06"].on_architecture("blackwell")
    dropped = activation_bytes_per_layer(model, lay, flash_attention=True, framework=b200)
    assert kept - dropped == 2 * 8192 * (2 * H8 + 4 * 32)


def test_torchtitan_2025_06_is_torchtitan_on_hopper() -> None:
    # On sm_90 the same release puts FlashAttention first, whose kernel is in the save list.
    _, old = _llama8b_step("torchtitan-2025-06")
    _, new = _llama8b_step("torchtitan")
    assert old.step_s == new.step_s
    assert old.memory.total_bytes == new.memory.total_bytes


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_framework_changes_nothing_without_selective_recompute_but_the_loss(recompute: str) -> None:
    _, titan = _llama8b_step("torchtitan", recompute)
    _, mega = _llama8b_step("megatron", recompute)
    assert titan.step_s == mega.step_s
    assert titan.memory.total_bytes > mega.memory.total_bytes  # the upcast loss: 12 bytes per logit, not 4


def test_torchtitan_selective_step_is_refused_for_moe_layers() -> None:
    model, spec = get_model("mixtral-8x7b"), preset("dgx-h100-superpod", nodes=1)
    lay = ParallelLayout(dp=8, microbatch_size=1, global_batch_size=8, zero_stage=3, recompute="selective")
    sm = StepModel(model, spec, options=StepOptions(framework="torchtitan", check_memory=False))
    with pytest.raises(ConfigError, match="framework 'torchtitan'"):
        sm.evaluate(lay)


def test_unknown_framework_option_names_the_field() -> None:
    with pytest.raises(ConfigError, match="framework must be one of .*got 'deepspeed'"):
        StepOptions(framework="deepspeed")


# ---------------------------------------------------------------------------------------- ZeRO-3 gathers
def test_gathered_bytes_default_to_the_weights_copy() -> None:
    # Megatron-LM / DeepSpeed bf16: the 16-bit working copy is what is sharded and gathered (ZeRO Sec. 7).
    assert BytesPerParam().gathered_bytes == 2.0
    assert BytesPerParam(weights=4.0).gathered_bytes == 4.0
    assert TITAN_BYTES.gathered_bytes == 2.0 and TITAN_BYTES.total == 16.0
    with pytest.raises(ConfigError, match="bytes_per_param.gathered"):
        BytesPerParam(gathered=-1.0)


def _zero3(gathered: float | None):
    model = dataclasses.replace(
        get_model("llama3-8b"), bytes_per_param=BytesPerParam(4.0, 4.0, 8.0, gathered=gathered)
    )
    spec = preset("dgx-h100-superpod", nodes=2)
    lay = ParallelLayout(dp=16, microbatch_size=1, global_batch_size=32, zero_stage=3, recompute="full")
    return model, lay, StepModel(model, spec, options=StepOptions(check_memory=False)).evaluate(lay)


def test_fsdp2_all_gathers_bf16_and_reduces_fp32() -> None:
    # FSDP2 MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): per-layer gathers of 2 bytes a
    # weight, half the fp32 shards' 4; the reduce-scatter stays in fp32.
    *_, bf16 = _zero3(2.0)
    *_, fp32 = _zero3(None)
    sizes = {(c.dim, c.op): c.message_bytes for c in bf16.comms}
    sizes32 = {(c.dim, c.op): c.message_bytes for c in fp32.comms}
    assert sizes[("dp", "all_gather")] == pytest.approx(sizes32[("dp", "all_gather")] / 2, rel=1e-12)
    assert sizes[("dp", "reduce_scatter")] == sizes32[("dp", "reduce_scatter")]


def test_fsdp2_gathered_layers_are_whole_bf16_copies() -> None:
    # Two layers gathered at once (the one computing, one prefetched). Same dtype as the shard: beyond the
    # local shard, 4 P (1 - 1/16) per layer; cast to bf16: the whole layer, 2 P (the shard is cast too).
    model, lay, _ = _zero3(None)
    p_layer = memory_breakdown(model, lay).params_per_gpu / 32
    fp32 = memory_breakdown(model, lay).other_activation_bytes
    bf16 = memory_breakdown(
        dataclasses.replace(model, bytes_per_param=TITAN_BYTES), lay
    ).other_activation_bytes
    assert fp32 - bf16 == pytest.approx(2 * p_layer * (4 * (1 - 1 / 16) - 2), rel=1e-9)
