"""Memory per GPU (aifabric.training.memory) against published per-GPU figures.

Each figure is asserted within 10 %; the ones the model misses by more are in ``MISSED`` with the measured and
predicted figures and the mechanism the model lacks, run but not asserted. No constant of the memory model
was set from these figures.

Sources
-------
- Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC'20,
  arXiv:1910.02054, Fig. 1: a 7.5B-parameter model, Nd = 64, K = 12 (mixed-precision Adam), fp16 weights and
  gradients: "Baseline 120GB", "P_os 31.4GB", "P_os+g 16.6GB", "P_os+g+p 1.9GB" of model states per device,
  from (2 + 2 + K) Psi, 2 Psi + 2 Psi + K Psi / Nd, 2 Psi + (2 + K) Psi / Nd, (2 + 2 + K) Psi / Nd.
- NVIDIA/dgxc-benchmarking ``nemotron/README_340b.md`` ("At least 128 GPUs with at least 80GB memory each")
  and ``nemotron/nemotron4-340b-synth.yaml`` (TP 8, PP 8, VP 12, MBS 1, selective recompute, sequence
  parallel, ``distributed_fused_adam`` with ``dtype: bf16`` and ``grad_sync_dtype: bf16``); the run's layout
  is test_training_public3's row.
- pytorch/torchtitan ``docs/performance.md`` @eaea6f6 (H100 96 GB HBM2e, FSDP2 with fp32 sharded parameters,
  gradients and Adam moments: 16 bytes per parameter sharded; "Memory(GiB)" the peak over all GPUs), run with
  ``framework="torchtitan"``: op-level selective checkpointing (``parallelize_llama.py`` ``_save_list``) and
  the loss's upcast logits (``train.py``), :data:`aifabric.training.memory.FRAMEWORKS`.
"""

from __future__ import annotations

import dataclasses

import pytest
from tests.training.test_training_public3 import NEMOTRON4_340B, nemo

from aifabric.errors import ConfigError
from aifabric.training.layout import ParallelLayout
from aifabric.training.memory import MemoryBreakdown, activation_bytes_per_layer, memory_breakdown
from aifabric.training.models import BytesPerParam, ModelSpec, get_model

GB, GIB = 1e9, 2**30

# ------------------------------------------------------------------------------ ZeRO, arXiv:1910.02054 Fig. 1
PSI, ND = 7.5e9, 64
#: fp16 weights (2) and gradients (2), K = 12 bytes of optimizer state (fp32 master, momentum, variance).
ZERO_BYTES = BytesPerParam(weights=2.0, grads=2.0, optimizer=12.0)
#: ZeRO stage -> the figure's model-state bytes per device for Psi = 7.5B, Nd = 64.
ZERO_FIG1 = {0: 120 * GB, 1: 31.4 * GB, 2: 16.6 * GB, 3: 1.9 * GB}


@pytest.mark.parametrize("stage", list(ZERO_FIG1))
def test_zero_figure_1_model_states_per_device(stage: int) -> None:
    model = dataclasses.replace(get_model("megatron-gpt-7.5b"), bytes_per_param=ZERO_BYTES)
    mb = memory_breakdown(model, ParallelLayout(dp=ND, zero_stage=stage, global_batch_size=ND))
    # bytes per parameter x the figure's Psi (the preset's count differs from 7.5B by its embeddings)
    assert mb.model_state_bytes / mb.params_per_gpu * PSI == pytest.approx(ZERO_FIG1[stage], rel=0.10)


# --------------------------------------------------------------------------- Nemotron-4 340B, dgxc recipe
H, F, KV, V, S = 18432, 73728, 8 * 192, 256000, 4096  # 96 heads of 192 (a d = h), 8 KV heads of 192
#: Parameters of one stage on one GPU: 12 layers (PP 8 x VP 12 of 96, one layer per chunk) of QKV + output
#: projection h (h + 2 kv d + h) and squared-ReLU MLP 2 h f, over TP 8, two LayerNorms of 2 h each
#: (replicated), and the 256,000 x h input embedding (first stage) or output layer (last) over TP 8.
STAGE_PARAMS = 12 * ((H * (2 * H + 2 * KV) + 2 * H * F) / 8 + 2 * 2 * H) + V * H / 8
#: Layer-microbatches the first stage stashes: p v + p - 1 = 103 = l (1 + (p - 1) / (p v)), l = 96.
IN_FLIGHT = 8 * 12 + 8 - 1
#: Selective recompute with sequence parallelism, no dropout, per token over TP 8 (Korthikanti Table 2 with
#: the dropout masks out and the MLP at f = 4h): norms 4h, QKV and MLP inputs 4h, Q 2h, K and V 4 kv d,
#: projection input 2h, MLP 4f.
LAYER_ACT = S * (4 * H + 4 * H + 2 * H + 4 * KV + 2 * H + 4 * F) / 8


def _nemotron_340b(dp: int) -> MemoryBreakdown:
    layout = ParallelLayout(**nemo(8, 8, dp, 1, 16 * dp, v=12, recompute="selective"))
    return memory_breakdown(NEMOTRON4_340B, layout, 80e9)


def test_nemotron4_340b_fits_the_80gb_parts_of_its_recipe() -> None:
    # README_340b.md: the 340B recipe needs 128 GPUs of 80 GB (DP 2): 62.2 GB counted.
    mb = _nemotron_340b(2)
    assert mb.fits
    assert mb.total_bytes == pytest.approx(62.2e9, rel=0.01)


def test_nemotron4_340b_terms_by_hand() -> None:
    mb = _nemotron_340b(2)
    assert mb.params_per_gpu == pytest.approx(STAGE_PARAMS, rel=1e-3)
    # bf16 weights 2 + bf16 gradient buffer 2 + bf16 Adam moments 4 / DP 2
    assert mb.model_state_bytes == pytest.approx(STAGE_PARAMS * (2 + 2 + 4 / 2), rel=1e-3)
    assert mb.layer_activation_bytes == pytest.approx(IN_FLIGHT * LAYER_ACT, rel=1e-9)


def test_nemotron4_340b_fp8_fits_with_transformer_engine_weight_copies() -> None:
    # The README's FP8 column runs the same layout on the same 128 x 80 GB. Transformer Engine adds an FP8
    # weight and its transpose per linear layer (2 bytes; the linear weights are the stage's parameters
    # less its norms and embedding) and saves the four GEMM inputs in one byte: QKV and fc1 inputs h each,
    # projection input h, fc2 input f.
    layout = ParallelLayout(**nemo(8, 8, 2, 1, 32, v=12, recompute="selective"))
    mb = memory_breakdown(NEMOTRON4_340B, layout, 80e9, fp8=True)
    linear = 12 * (H * (2 * H + 2 * KV) + 2 * H * F) / 8
    assert mb.fits
    assert mb.weight_bytes == pytest.approx(2 * STAGE_PARAMS + 2 * linear, rel=1e-3)
    fp8_act = LAYER_ACT - S * (H + H + H + F) / 8
    assert mb.layer_activation_bytes == pytest.approx(IN_FLIGHT * fp8_act, rel=1e-9)


# ---------------------------------------------------------------------------------------------- torchtitan
#: FSDP2 with fp32 parameters: 4 (sharded fp32 weights) + 4 (fp32 gradients) + 8 (Adam) bytes, gathered in
#: bf16 (torchtitan apply_fsdp: MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)).
TITAN_BYTES = BytesPerParam(weights=4.0, grads=4.0, optimizer=8.0, gathered=2.0)


def _titan(name: str, **changes: int) -> ModelSpec:
    return dataclasses.replace(get_model(name), bytes_per_param=TITAN_BYTES, **changes)


def _fsdp(dp: int, b: int, recompute: str, **changes: int) -> ParallelLayout:
    return ParallelLayout(
        dp=dp, microbatch_size=b, global_batch_size=dp * b, zero_stage=3, recompute=recompute, **changes
    )


def _titan_gib(model: ModelSpec, layout: ParallelLayout) -> float:
    return memory_breakdown(model, layout, flash_attention=True, framework="torchtitan").total_bytes / GIB


def test_torchtitan_table_2_llama3_8b_32k_tokens_full_recompute() -> None:
    # Table 2: "| FSDP 8, CP 1 | 32768 | 3,890 | 83.9 |" (8 GPUs, local batch 1, full checkpointing; its
    # torch.compile and Float8 are not modelled). The peak is the loss at 32,768 tokens: 12 bytes per logit
    # (fp32 log-softmax output, nll_loss's dense fp32 gradient, log_softmax_backward's result), 47.0 GiB
    # of the 75.6 counted, over 15.0 GiB of model states and 8.0 GiB of layer inputs (76.3 when the gathered
    # layers were counted in the shards' fp32: FSDP2 gathers bf16). Measured is reserved memory (the caching
    # allocator's blocks), above what is allocated.
    predicted = _titan_gib(_titan("llama3-8b", seq_len=32768), _fsdp(8, 1, "full"))
    assert predicted == pytest.approx(83.9, rel=0.10)


#: Llama 3 8B: h, SwiGLU f, kv heads x d, heads, vocabulary (Meta's config.json).
H8, F8, KV8, A8, V8 = 4096, 14336, 8 * 128, 32, 128256


def test_torchtitan_op_level_selective_layer_by_hand() -> None:
    # Saved per token: layer input 2h, wq 2h, wv 2 kv d, SDPA output 2h and log-sum-exp 4a, w1 2f, w2 2h
    # (every other matmul of wq wk wv wo w1 w3 w2); 8,192 tokens of local batch 2 -> 63,616 x 16,384 bytes.
    lay = _fsdp(8, 2, "selective")
    per_token = 2 * H8 + 2 * H8 + 2 * KV8 + 2 * H8 + 4 * A8 + 2 * F8 + 2 * H8
    assert per_token == 63616
    model = get_model("llama3-8b")
    got = activation_bytes_per_layer(model, lay, flash_attention=True, framework="torchtitan")
    assert got == pytest.approx(16384 * per_token, rel=1e-12)


def test_torchtitan_loss_holds_three_fp32_logit_copies() -> None:
    # Megatron's 4 bytes per logit against torchtitan's 12 (pp = 1, no TP): 8 V bytes per token apart.
    model, lay = _titan("llama3-8b"), _fsdp(8, 2, "full")
    titan = memory_breakdown(model, lay, flash_attention=True, framework="torchtitan")
    megatron = memory_breakdown(model, lay, flash_attention=True)
    assert titan.other_activation_bytes - megatron.other_activation_bytes == pytest.approx(16384 * 8 * V8)


def test_unknown_framework_is_refused() -> None:
    with pytest.raises(ConfigError, match="framework must be one of .*'deepspeed'"):
        memory_breakdown(get_model("llama3-8b"), _fsdp(8, 2, "selective"), framework="deepspeed")


def test_torchtitan_selective_is_not_guessed_for_moe_layers() -> None:
    with pytest.raises(ConfigError, match="framework 'torchtitan'"):
        memory_breakdown(get_model("mixtral-8x7b"), _fsdp(8, 1, "selective"), framework="torchtitan")


#: name -> (model, layout, measured GiB, why the model misses it).
MISSED: dict[str, tuple[ModelSpec, ParallelLayout, float, str]] = {
    # Table 1: "| FSDP | 5,762 | 82.4 |" (8 GPUs, local batch 2, selective activation checkpointing).
    "torchtitan Table 1 Llama 3.1 8B FSDP 8 b2 selective": (
        _titan("llama3-8b"),
        _fsdp(8, 2, "selective"),
        82.4,
        "71.9 GiB vs 82.4 (-12.8 %; 72.5 with the gathered layers in fp32, not FSDP2's bf16): op-level "
        "checkpointing (31.1 GiB of layers) and the loss's 12 bytes "
        "per logit (23.5 GiB) counted; not counted: reserved over allocated memory (the caching "
        "allocator's blocks of the 4.2-8.4 GB logit tensors), FSDP2's root module (embedding and output "
        "layer) kept gathered in bf16 through the step",
    ),
    # Table 3: "| FSDP | 5,605 | 67.0 |" (128 GPUs, same per-GPU batch).
    "torchtitan Table 3 Llama 3.1 8B FSDP 128 b2 selective": (
        _titan("llama3-8b"),
        _fsdp(128, 2, "selective"),
        67.0,
        "57.8 GiB vs 67.0 (-13.7 %; 58.7 with fp32 gathers): as Table 1; the 8 -> 128 GPU drop (15.4 GiB "
        "measured) is the model "
        "states sharded 16 times further (14.0 GiB of 16 bytes per parameter, 14.0 GiB in all counted)",
    ),
    # Table 4: "| 2D | 829 | 71.9 |" (FSDP 32, TP 8, local batch 16, full checkpointing, Float8).
    "torchtitan Table 4 Llama 3.1 70B FSDP 32 TP 8 b16 full": (
        _titan("llama3-70b"),
        _fsdp(32, 16, "full", tp=8, sequence_parallel=True),
        71.9,
        "52.7 GiB vs 71.9 (-27 %; 53.1 with fp32 gathers): the loss counted as 12 bytes per logit over TP 8 "
        "at 131,072 tokens "
        "(23.5 GiB); not counted: loss_parallel's own temporaries (its log-softmax computes x - max and "
        "exp(x - max) in fp32 beside the upcast), the full-recompute layer's gradients beside its "
        "activations at local batch 16, Float8's weight casts, and reserved over allocated memory",
    ),
}


@pytest.mark.parametrize("name", list(MISSED))
def test_missed_memory_row_still_runs_and_says_what_it_misses(name: str) -> None:
    model, layout, measured_gib, why = MISSED[name]
    predicted_gib = _titan_gib(model, layout)
    assert predicted_gib > 0
    assert f"vs {measured_gib}" in why
