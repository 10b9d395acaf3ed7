"""Memory per GPU (aifabric.training.memory)."""

from __future__ import annotations

import pytest

from aifabric.errors import ConfigError, Infeasible
from aifabric.training.layout import ParallelLayout
from aifabric.training.memory import (
    activation_bytes_per_layer,
    check_fits,
    in_flight_layer_microbatches,
    memory_breakdown,
)
from aifabric.training.models import BytesPerParam, ModelSpec, get_model

GPT3 = get_model("gpt3-175b")
A100_80GB = 80e9  # Narayanan et al. Sec. 5: 80-GB A100 GPUs


@pytest.mark.parametrize(
    ("zero", "bytes_per_param"),
    [
        (0, 18.0),  # formula note: bf16 params + fp32 grads + fp32 master + 2 fp32 moments
        (1, 6 + 12 / 8),  # formula note, Megatron distributed optimizer: 6 + 12/d
        (2, 2 + 16 / 8),  # ZeRO-2: gradients sharded too
        (3, 18 / 8),  # ZeRO-3 / FSDP: everything sharded
    ],
)
def test_zero_bytes_per_param(zero, bytes_per_param):
    mb = memory_breakdown(get_model("llama3-8b"), ParallelLayout(dp=8, zero_stage=zero))
    assert mb.model_state_bytes / mb.params_per_gpu == pytest.approx(bytes_per_param)


@pytest.mark.parametrize(
    ("precision", "expected"),
    [
        (BytesPerParam(2, 2, 16), 4 + 16 / 8),  # formula note: fp16/fp16 = 4 + 16/d
        (BytesPerParam(4, 4, 8), 8 + 8 / 8),  # formula note: fp32/fp32 = 8 + 8/d
    ],
)
def test_distributed_optimizer_other_precisions(precision, expected):
    m = ModelSpec("m", n_layers=2, hidden_size=256, n_heads=4, vocab_size=1024, seq_len=128,
                  bytes_per_param=precision)  # fmt: skip
    mb = memory_breakdown(m, ParallelLayout(dp=8, zero_stage=1))
    assert mb.model_state_bytes / mb.params_per_gpu == pytest.approx(expected)


# Korthikanti et al. 2022 (arXiv:2205.05198) Table 2, activation bytes per layer, GPT-3 175B, b = 1, t = 8.
S, B, H, A, T = 2048, 1, 12288, 96, 8
SBH = S * B * H


@pytest.mark.parametrize(
    ("sp", "recompute", "expected"),
    [
        (False, "none", SBH * (10 + 24 / T + 5 * A * S / (H * T))),  # tensor parallel
        (True, "none", SBH / T * (34 + 5 * A * S / H)),  # tensor + sequence parallel
        (False, "selective", SBH * (10 + 24 / T)),  # tensor parallel + selective recompute
        (True, "selective", SBH * 34 / T),  # tensor + sequence parallel + selective recompute
        (False, "full", 2 * SBH),  # full activation recomputation
        (True, "full", 2 * SBH / T),  # full, the stored layer input is sequence-parallel
    ],
)
def test_korthikanti_per_layer(sp, recompute, expected):
    lay = ParallelLayout(tp=T, sequence_parallel=sp, recompute=recompute, microbatch_size=B)
    assert activation_bytes_per_layer(GPT3, lay) == pytest.approx(expected, rel=1e-12)


def test_korthikanti_no_parallelism():
    # Korthikanti Eq. 1: s b h (34 + 5 a s / h) per layer with no parallelism at all.
    lay = ParallelLayout(microbatch_size=2)
    assert activation_bytes_per_layer(GPT3, lay) == pytest.approx(2 * SBH * (34 + 5 * A * S / H))


def test_gqa_swiglu_without_dropout():
    # Hand count for Llama 3 8B (no dropout, GQA kv=8, SwiGLU f=14336), b=1, s=8192, t=1, no recompute:
    # norms 4h + QKV input 2h + MLP input 2h = 8h; Q 2h, K and V 2 x 2 x 1024, projection input 2h;
    # SwiGLU 6f; softmax output 2 a s.
    h, f, a, s = 4096, 14336, 32, 8192
    per_token = 8 * h + 4 * h + 4 * 1024 + 6 * f + 2 * a * s
    got = activation_bytes_per_layer(get_model("llama3-8b"), ParallelLayout())
    assert got == s * per_token


def test_context_parallel_divides_tokens():
    lay1 = ParallelLayout(tp=8, sequence_parallel=True, recompute="selective")
    lay4 = ParallelLayout(tp=8, cp=4, sequence_parallel=True, recompute="selective")
    m = get_model("llama3-70b")
    assert activation_bytes_per_layer(m, lay4) == pytest.approx(activation_bytes_per_layer(m, lay1) / 4)


def test_in_flight_microbatches():
    # 1F1B: the first stage holds p microbatches of l/p layers = l layer-microbatches (Korthikanti Sec.
    # 4.2.3); fewer when m < p; interleaved: l (1 + (p - 1) / (p v)).
    assert in_flight_layer_microbatches(ParallelLayout(pp=8, global_batch_size=64), 96) == 96
    assert in_flight_layer_microbatches(ParallelLayout(pp=8, global_batch_size=4), 96) == 4 * 96 / 8
    lay = ParallelLayout(pp=8, virtual_pipeline_stages=2, global_batch_size=64)
    assert in_flight_layer_microbatches(lay, 96) == pytest.approx(96 * (1 + 7 / 16))
    assert in_flight_layer_microbatches(ParallelLayout(global_batch_size=64), 96) == 96


def test_full_breakdown_hand_calculation_39b():
    # Narayanan et al. Table 1 row "39.1B": t=8, p=2, n=512 (d=32), B=1536, b=4 (run_table_1.sh),
    # full recompute, no distributed optimizer (DDP=local): 18 bytes/param.
    m = get_model("megatron-gpt-39.1b")
    lay = ParallelLayout(tp=8, pp=2, dp=32, microbatch_size=4, global_batch_size=1536, recompute="full")
    mb = memory_breakdown(m, lay, A100_80GB)
    h, s, b, a, v = 8192, 2048, 4, 64, 51200
    # Stage 0: 24 layers; per layer the matrices and biases 12h^2 + 9h split 8 ways, LayerNorms 4h
    # replicated; plus word and position embeddings (V + s) h split 8 ways.
    params = 24 * ((12 * h * h + 9 * h) / 8 + 4 * h) + (v + s) * h / 8
    assert mb.params_per_gpu == pytest.approx(params)
    assert mb.weight_bytes == pytest.approx(2 * params)
    assert mb.gradient_bytes == pytest.approx(4 * params)
    assert mb.optimizer_bytes == pytest.approx(12 * params)
    # m = 1536 / (4 x 32) = 12 >= p, so 2 microbatches x 24 layers each keep 2 s b h (layer inputs);
    assert mb.layer_activation_bytes == pytest.approx(2 * 24 * 2 * s * b * h)
    # plus 2 in-flight embedding dropout masks (s b h bytes each) and the layer being recomputed,
    # s b h (10 + 24/t + 5 a s / (h t)) (TP without SP).
    other = 2 * s * b * h + s * b * h * (10 + 24 / 8 + 5 * a * s / (h * 8))
    assert mb.other_activation_bytes == pytest.approx(other)
    assert mb.in_flight_microbatches == 2
    assert mb.total_bytes == pytest.approx(18 * params + 2 * 24 * 2 * s * b * h + other)
    assert mb.fits and mb.free_bytes == pytest.approx(A100_80GB - mb.total_bytes)


def test_table1_configurations_fit_in_80gb(table1_row):
    # Every Table 1 configuration trained on 80-GB A100s with full recomputation (--recompute-method
    # uniform in run_table_1.sh) and no distributed optimizer: the model must say each fits.
    name, _, _, _, _, t, p, n, gbs, b, v = table1_row
    lay = ParallelLayout(tp=t, pp=p, dp=n // (t * p), microbatch_size=b, global_batch_size=gbs,
                         virtual_pipeline_stages=v, recompute="full")  # fmt: skip
    mb = check_fits(get_model(name), lay, A100_80GB)
    assert 20e9 < mb.total_bytes < A100_80GB


def test_trillion_without_recompute_does_not_fit():
    # The 1T Table 1 layout (t=8, p=64, b=1) without recomputation: hand calculation of the first stage,
    # 128 layer-microbatches x s b h (10 + 24/8 + 5 a s / (8h)) = 128 x 52.4 MB x 21 = 141 GB of
    # activations alone.
    m = get_model("megatron-gpt-1t")
    lay = ParallelLayout(tp=8, pp=64, dp=6, global_batch_size=3072)
    sbh = 2048 * 25600
    expected_layers = 128 * sbh * (10 + 3 + 5 * 160 * 2048 / (25600 * 8))
    with pytest.raises(Infeasible) as info:
        check_fits(m, lay, A100_80GB)
    msg = str(info.value)
    assert msg.startswith("megatron-gpt-1008b with tp=8 pp=64 dp=6 b=1 B=3072 zero=0 recompute=none needs ")
    assert "per GPU: weights 4.3 GB, grads 8.5 GB, optimizer 25.6 GB, activations " in msg
    assert msg.endswith("; the GPU has 80 GB")
    assert memory_breakdown(m, lay).layer_activation_bytes == pytest.approx(expected_layers)


def test_expert_weights_split_over_ep():
    # Mixtral: 32 layers x 8 experts x 3 x 4096 x 14336 expert weights; ep=8 keeps 1/8 of them per GPU.
    m = get_model("mixtral-8x7b")
    one = memory_breakdown(m, ParallelLayout(dp=8, ep=1))
    eight = memory_breakdown(m, ParallelLayout(dp=8, ep=8))
    experts = 32 * 8 * 3 * 4096 * 14336
    assert one.params_per_gpu - eight.params_per_gpu == pytest.approx(experts * 7 / 8)
    # ZeRO-1 shards expert optimizer state over expert-dp = dp / ep = 1 rank, dense state over 8.
    z1 = memory_breakdown(m, ParallelLayout(dp=8, ep=8, zero_stage=1))
    dense = z1.params_per_gpu - experts / 8
    assert z1.optimizer_bytes == pytest.approx(12 * (dense / 8 + experts / 8))


def test_heaviest_stage_with_leading_dense_layers():
    # 8 layers, the first 2 dense, pp=4: stage 0 = 2 dense layers + embeddings; stages 1-3 = 2 MoE
    # layers each; the last adds the output layer and final norm. Expert layers are heavier here.
    m = ModelSpec("moe8", n_layers=8, hidden_size=64, n_heads=4, vocab_size=1000, seq_len=32,
                  n_experts=4, top_k=2, first_dense_layers=2, norm="rmsnorm", dropout=False)  # fmt: skip
    mb = memory_breakdown(m, ParallelLayout(pp=4))
    dense_layer = 4 * 64 * 64 + 2 * 64 * 256 + 2 * 64
    moe_layer = 4 * 64 * 64 + 64 * 4 + 4 * 2 * 64 * 256 + 2 * 64
    stage0 = 2 * dense_layer + 1000 * 64
    last = 2 * moe_layer + 1000 * 64 + 64
    assert mb.params_per_gpu == max(stage0, last) == last


def test_check_fits_returns_breakdown_and_rejects_bad_hbm():
    m, lay = get_model("llama3-8b"), ParallelLayout(tp=8, sequence_parallel=True, recompute="selective")
    assert check_fits(m, lay, 80e9).fits
    with pytest.raises(ConfigError, match="gpu_hbm_bytes must be > 0, got 0"):
        check_fits(m, lay, 0)
    with pytest.raises(ConfigError, match="tp=16 does not divide n_kv_heads=8"):
        memory_breakdown(m, ParallelLayout(tp=16))
    assert memory_breakdown(m, lay).fits is None


def test_fp8_saved_linear_inputs_take_one_byte():
    # Transformer Engine FP8 (TE v1.11 module/linear.py, layernorm_linear.py): the saved inputs of the QKV
    # (h), output-projection (a d = h), fc1 (h) and fc2 (f = 4h) GEMMs take 1 byte instead of 2, so
    # Korthikanti's 34 s b h / t (selective, TP + SP) loses 1 + 1 + 1 + 4 = 7: 27 s b h / t for GPT-3.
    lay = ParallelLayout(tp=T, sequence_parallel=True, recompute="selective", microbatch_size=B)
    assert activation_bytes_per_layer(GPT3, lay, fp8=True) == pytest.approx(27 * SBH / T, rel=1e-12)


def test_fp8_weight_copies_add_two_bytes_per_linear_weight():
    # TE caches each linear layer's FP8 weight and its transpose across a step's microbatches
    # (module/base.py get_fp8_workspace): + 2 bytes per linear weight; norms and embeddings stay BF16.
    lay = ParallelLayout(
        tp=8, pp=8, dp=2, sequence_parallel=True, recompute="selective", global_batch_size=16
    )
    bf16, fp8 = memory_breakdown(GPT3, lay), memory_breakdown(GPT3, lay, fp8=True)
    linear = 12 * (GPT3.attention_params + GPT3.dense_mlp_params) / 8  # 96 / 8 layers on a stage, over t
    assert fp8.weight_bytes - bf16.weight_bytes == pytest.approx(2 * linear, rel=1e-12)
    assert fp8.optimizer_bytes == bf16.optimizer_bytes


def test_fp8_zero3_keeps_no_weight_copies():
    # Under ZeRO-3 a layer's weights exist in full only while gathered: no FP8 copy is kept across the step.
    lay = ParallelLayout(dp=8, zero_stage=3)
    model = get_model("llama3-8b")
    assert memory_breakdown(model, lay, fp8=True).weight_bytes == memory_breakdown(model, lay).weight_bytes


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
def test_fp8_moe_router_keeps_its_16_bit_input(name):
    # Megatron-Core core_v0.10.0 transformer/moe/router.py TopKRouter.gating is a plain
    # torch.nn.functional.linear outside Transformer Engine: its autograd saves the MLP input in 16 bits
    # under FP8 too. The TE layers' saved inputs take 1 byte instead of 2: QKV (h, unsplit under SP), the
    # output projection (a d), each routed slot's dispatched input (h) and fc2 input (f_e), each shared
    # expert's fc2 input (f_e); a shared expert's fc1 adds its own one-byte cast of the MLP input (h).
    m = get_model(name)
    lay = ParallelLayout(tp=8, sequence_parallel=True, recompute="selective", microbatch_size=1)
    h, q, fe = m.hidden_size, m.n_heads * m.head_size, m.expert_ffn_size
    drop = h - m.n_shared_experts * h + q + m.top_k * (h + fe) + m.n_shared_experts * fe  # bytes/token x t
    bf16 = activation_bytes_per_layer(m, lay, moe=True)
    fp8 = activation_bytes_per_layer(m, lay, moe=True, fp8=True)
    assert bf16 - fp8 == pytest.approx(m.seq_len * drop / 8, rel=1e-12)
