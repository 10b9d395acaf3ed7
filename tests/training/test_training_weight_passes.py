"""Memory-bound passes over the parameters (aifabric.training.step.StepModel.weight_pass_bytes): FP8 casts of
the weights every ZeRO-3 gather brings, FSDP2's copies in and out of its collective buffers, and Megatron's
gradient copy without gradient-accumulation fusion."""

from __future__ import annotations

import dataclasses

import pytest

from aifabric.cluster.presets import preset
from aifabric.training import ParallelLayout, StepModel, get_model
from aifabric.training.models import BytesPerParam
from aifabric.training.step import StepOptions

LLAMA3_8B, LLAMA3_70B = get_model("llama3-8b"), get_model("llama3-70b")
# Llama 3 70B (config.json: h 8,192, 64 heads and 8 KV heads of 128, SwiGLU 28,672): one layer's linear
# weights are q, o (8,192^2 each), k, v (8,192 x 1,024 each) and the three MLP products (8,192 x 28,672):
# 2 x 67.11 M + 2 x 8.39 M + 3 x 234.88 M = 855.6 M; 80 layers 68.45 G.
LLAMA3_70B_LINEAR = 80 * (2 * 8192**2 + 2 * 8192 * 1024 + 3 * 8192 * 28672)
# Llama 3 8B (h 4,096, 32 heads, 8 KV heads of 128, SwiGLU 14,336, vocabulary 128,256): 32 layers of
# 2 x 4,096^2 + 2 x 4,096 x 1,024 + 3 x 4,096 x 14,336 = 218.1 M linear weights and 2 x 4,096 norm weights,
# plus the 525.3 M of the output layer the stage also holds: 7.505 G parameters on the GPU.
LLAMA3_8B_STAGE = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 128256 * 4096


def passes(model, spec, layout, **options) -> tuple[float, float]:
    sm = StepModel(model, spec, options=StepOptions(check_memory=False, **options))
    padded = sm.padded_model(layout)
    return sm.weight_pass_bytes(sm.stage(layout, padded), padded)


def fsdp(dp: int, zero: int = 3) -> ParallelLayout:
    return ParallelLayout(dp=dp, microbatch_size=1, global_batch_size=dp, zero_stage=zero)


def test_fp8_weights_gathered_in_bf16_are_cast_at_every_gather():
    # 68.45 G weights x 4 bytes (cast_transpose: read 2, write the cast and its transpose) = 273.8 GB, once
    # for the forward gather and once for the backward one; the output layer stays BF16.
    gb200 = preset("gb200-nvl72")
    fwd, bwd = passes(LLAMA3_70B, gb200, fsdp(72), fp8=True)
    assert round(LLAMA3_70B_LINEAR / 1e9, 2) == 68.45
    assert fwd == pytest.approx(4 * LLAMA3_70B_LINEAR, rel=1e-3)
    assert bwd == pytest.approx(fwd)


def test_no_cast_for_fp8_gathers_persistent_weights_or_bf16():
    gb200 = preset("gb200-nvl72")
    fp8_gather = dataclasses.replace(LLAMA3_70B, bytes_per_param=BytesPerParam(gathered=1))
    assert passes(fp8_gather, gb200, fsdp(72), fp8=True) == (0.0, 0.0)  # cast on the shard, before the gather
    assert passes(LLAMA3_70B, gb200, fsdp(72, zero=1), fp8=True) == (0.0, 0.0)  # once per step
    assert passes(LLAMA3_70B, gb200, fsdp(72)) == (0.0, 0.0)  # Megatron-FSDP: views of its buffers


def test_fsdp2_copies_out_every_gather_and_copies_in_every_gradient():
    # torchtitan (FSDP2): split_with_sizes_copy reads and writes each gathered bf16 weight (4 bytes), forward
    # and backward; chunk_cat reads the bf16 gradient and writes it in fp32 (2 + 4 bytes), backward.
    fwd, bwd = passes(LLAMA3_8B, preset("dgx-h100-superpod", gpus=8), fsdp(8), framework="torchtitan")
    assert round(LLAMA3_8B_STAGE / 1e9, 3) == 7.505
    assert fwd == pytest.approx(4 * LLAMA3_8B_STAGE, rel=1e-3)
    assert bwd == pytest.approx((4 + 6) * LLAMA3_8B_STAGE, rel=1e-3)


def test_gradient_copy_without_accumulation_fusion():
    # Every parameter's bf16 gradient copied into the fp32 main gradient (2 + 4 bytes) under ZeRO-3; ZeRO-1
    # adds it to the buffer it accumulates in (+ 4 read).
    h100 = preset("dgx-h100-superpod", gpus=8)
    _, z3 = passes(LLAMA3_8B, h100, fsdp(8), gradient_accumulation_fusion=False)
    _, z1 = passes(LLAMA3_8B, h100, fsdp(8, zero=1), gradient_accumulation_fusion=False)
    assert z3 == pytest.approx(6 * LLAMA3_8B_STAGE, rel=1e-3)
    assert z1 == pytest.approx(10 * LLAMA3_8B_STAGE, rel=1e-3)


def test_the_passes_run_at_hbm_speed_on_the_step():
    # With the ZeRO-3 collectives hidden, FSDP2's copies lengthen the step by their bytes over the HBM rate.
    h100 = preset("dgx-h100-superpod", gpus=8)
    lay = ParallelLayout(dp=8, microbatch_size=1, global_batch_size=8, zero_stage=3)
    megatron = StepModel(LLAMA3_8B, h100, options=StepOptions(check_memory=False))
    titan = StepModel(LLAMA3_8B, h100, options=StepOptions(check_memory=False, framework="torchtitan"))
    extra = sum(passes(LLAMA3_8B, h100, lay, framework="torchtitan")) / titan.hbm_bytes_per_s
    gap = titan.evaluate(lay).breakdown_s["memory-bound"] - megatron.evaluate(lay).breakdown_s["memory-bound"]
    assert gap == pytest.approx(extra, rel=1e-6)
    assert titan.step_seconds(lay) > megatron.step_seconds(lay)


def test_zero3_over_one_rank_copies_gradients_as_zero_1_does():
    # Over a data-parallel group of one rank ZeRO-3 shards nothing (ZeRO, SC 2020, Sec. 5), so without
    # gradient-accumulation fusion it copies each bf16 gradient into main_grad and adds it to the buffer as
    # ZeRO 0-2 do: 2 + r + r bytes per parameter, the planner's "one stage at dp 1" made true of the step.
    h100 = preset("dgx-h100-superpod", gpus=8)
    one_rank = [
        passes(LLAMA3_8B, h100, dataclasses.replace(fsdp(1, zero), tp=8), gradient_accumulation_fusion=False)
        for zero in (1, 3)
    ]
    assert one_rank[0] == one_rank[1]
    assert one_rank[0][1] > 0.0
