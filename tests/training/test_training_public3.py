"""The step model against NVIDIA's DGX Cloud benchmarking recipes (NeMo and MaxText on DGX H100), blind.

Each row is one column of a recipe's published table: model, GPU count, layout (TP/PP/CP/VP/EP/DP, or
FSDP), global and micro batch, sequence length, precision, and the measured seconds per step, turned into
tokens/s per GPU as the recipe's README does (sequence x global batch / step time / GPUs). The comment above
each row quotes its line; the comment after it gives the model's figure. Tolerance: 15 %. No constant was
set from these tables; every row runs the model's defaults for its software with the options its recipe
file states: ``tp_comm_overlap`` where the recipe sets ``ub_tp_comm_overlap: true`` (Transformer Engine
userbuffers, whose GEMM chunks the model times by shape), the recompute setting of
``activations_checkpoint_granularity`` (NeMo) or ``remat_policy`` (MaxText), ``capacity_factor`` where
``moe_expert_capacity_factor`` is set. The memory check is on where the recipe's recompute setting fits the
model's count and off (stated per row) where it does not: the model counts activations without Transformer
Engine's and Megatron-Core's buffer reuse.

The reference machine of every table: DGX H100 nodes (8 x H100 80 GB HBM3 on NVSwitch, 8 x 400 Gb/s
InfiniBand per node), the ``dgx-h100-superpod`` preset ("Reference Infrastructure" in the repository's
README).

MaxText's 512-2,048 GPU columns shard over 128 GPUs and replicate over the rest (``dcn_data_parallelism``:
HSDP), which a layout cannot say (ZeRO-3 shards over all of DP); only its pure-FSDP columns (128, 256) are
here.

Rows the model misses by more than 15 % are in ``MISSED`` with the measured and predicted figures and the
mechanism the model lacks; they are run (so they stay valid layouts) but not asserted.

Sources
-------
- NVIDIA/dgxc-benchmarking (DGX Cloud Benchmarking - Performance Recipes), "Expected Performance" tables
  ("Training step time (seconds per step)") and the recipe files of the same tag:
  - v25.02 @8f5cbb3: ``llama3.1/README_{8b,70b,405b}.md`` and ``llama3.1/llama3.1_{8b,70b,405b}.yaml``
    (NeMo 24.12); ``nemotron/README_15b.md`` and ``nemotron/nemotron4-15b-synth.yaml`` (NeMo 24.12);
  - v25.01 @143b90d: ``nemotron/README_340b.md``, ``nemotron/nemotron4-340b-synth.yaml`` and
    ``nemotron/configure.sh`` (NeMo 24.09; v25.02 adds CP 2 to the BF16 recipe and keeps the table);
  - v25.04 @741c886: ``nemo_megatron/README_175b.md`` and ``cfg/gpt3_175b_hydra.yaml`` (NeMo 24.12),
    ``grok1/README_314b.md``, ``cfg/grok1_314b.yaml`` and ``configure.sh`` (NeMo 24.12),
    ``maxtext/README_70b.md`` and ``configure.sh`` (JAX MaxText 25.01).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tests.training.test_training_public import Row, h100, predict

from aifabric.training import get_model
from aifabric.training.models import BytesPerParam, ModelSpec

# Row and predict are test_training_public's: every row here is in tokens/s per GPU (its default metric).


def per_gpu(seq_len: int, gbs: int, step_s: float, gpus: int) -> float:
    """The README's "(sequence length) * (global batch size) / (training_step_timing)", per GPU."""
    return seq_len * gbs / step_s / gpus


def nemo(
    tp: int,
    pp: int,
    dp: int,
    b: int,
    gbs: int,
    *,
    v: int = 1,
    cp: int = 1,
    ep: int = 1,
    recompute: str = "none",
) -> dict[str, Any]:
    """A NeMo (Megatron-Core) layout: sequence parallelism with TP (``sequence_parallel: true``), the
    distributed optimizer (``distributed_fused_adam`` / ``mcore_distributed_optim``: ZeRO-1)."""
    return dict(
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=ep,
        virtual_pipeline_stages=v,
        sequence_parallel=tp > 1,
        microbatch_size=b,
        global_batch_size=gbs,
        zero_stage=1,
        recompute=recompute,
    )


def _nemotron4(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    """Nemotron-4 as the recipe yaml sets it: squared-ReLU MLP of width 4h (not gated), 8 KV heads,
    untied embeddings, no biases, RoPE, no dropout, vocabulary 256,000 (``nemotron_2_256k.model``),
    sequences of 4,096. ``layernorm1p`` is a LayerNorm."""
    return ModelSpec(
        name,
        n_layers=layers,
        hidden_size=hidden,
        n_heads=heads,
        n_kv_heads=8,
        ffn_hidden_size=4 * hidden,
        vocab_size=256000,
        seq_len=4096,
        dropout=False,
    )


def bf16_grads(model: ModelSpec) -> ModelSpec:
    """``model`` as NeMo's ``distributed_fused_adam`` with ``grad_sync_dtype: bf16`` trains it: gradients
    accumulated and reduced in 2 bytes (the model's default is Megatron-LM's fp32 ``main_grad``); fp32
    master weights and moments (12 bytes) sharded over DP (ZeRO-1)."""
    return dataclasses.replace(model, bytes_per_param=BytesPerParam(weights=2.0, grads=2.0, optimizer=12.0))


#: nemotron4-340b-synth.yaml sets ``optim.dtype: bf16`` as well: NeMo 2.0 (the 24.09 container,
#: ``megatron_base_model.py`` ``setup_optimization``) passes it to Apex's ``DistributedFusedAdam`` as the
#: optimizer-state dtype and, the state dtype being the model's, stores no master copy
#: (``store_params=False``): Adam's two moments in bf16, 2 + 2 = 4 bytes per parameter sharded over DP,
#: with bf16 weights (2) and the bf16 contiguous gradient buffer (2, ``grad_sync_dtype: bf16``).
NEMOTRON4_340B = dataclasses.replace(
    _nemotron4("nemotron4-340b", 96, 18432, 96),
    bytes_per_param=BytesPerParam(weights=2.0, grads=2.0, optimizer=4.0),
)
#: The 15B recipe runs Megatron-Core's optimizer (``mcore_distributed_optim``, no ``grad_sync_dtype``):
#: fp32 gradients, the model's default.
NEMOTRON4_15B = _nemotron4("nemotron4-15b", 32, 6144, 48)
#: grok1_314b.yaml: 64 layers, hidden 6,144, 48 heads, 8 query groups, GeGLU experts of width 32,768,
#: 8 experts top-2 in every layer, RMSNorm, no dropout, untied; vocabulary 131,072 (xai-org/grok-1 ``run.py``:
#: 128 x 1024); sequences of 8,192 (``encoder_seq_length``).
GROK1 = ModelSpec(
    "grok-1", n_layers=64, hidden_size=6144, n_heads=48, n_kv_heads=8, ffn_hidden_size=32768,
    vocab_size=131072, seq_len=8192, gated_mlp=True, norm="rmsnorm", dropout=False, n_experts=8, top_k=2,
    bytes_per_param=BytesPerParam(weights=2.0, grads=2.0, optimizer=12.0),
)  # fmt: skip
LLAMA31_8B, LLAMA31_70B, LLAMA31_405B = (bf16_grads(get_model(f"llama3-{s}")) for s in ("8b", "70b", "405b"))
#: MaxText keeps its own optimizer state (fp32 Adam over FSDP shards): the model's default bytes.
LLAMA3_70B = get_model("llama3-70b")
#: gpt3_175b_hydra.yaml: 96 layers, h 12,288, 96 heads, FFN 4h, sequence 2,048, dropout 0.1, NeMo's GPT
#: defaults (biases, learned positions, tied embeddings, LayerNorm, GeLU): the gpt3-175b preset.
GPT3_175B = bf16_grads(get_model("gpt3-175b"))

#: ``ub_tp_comm_overlap: true`` (Transformer Engine userbuffers).
UB = {"tp_comm_overlap": True}
_FP8 = {"fp8": True}

ROWS: dict[str, Row] = {
    # ---- Llama 3.1 (v25.02, NeMo 24.12). 8B: "| Llama 3.1 8b BF16 (TP=1, PP=1, CP=2, MBS=1, GA=32) |" on
    # 8 GPUs (GBS=128): "| Training step time (seconds per step) | 12.78 | 12.99 | 13.00 | 13.00 | 13.16 |"
    # (8 ... 128 GPUs); FP8: "| 9.44 | 9.47 | 9.60 | 9.64 | 9.73 |". No recompute, no TP.
    "dgxc Llama 3.1 8B 8 H100 CP2 DP4 bf16": Row(
        LLAMA31_8B, h100(8), nemo(1, 1, 4, 1, 128, cp=2), per_gpu(8192, 128, 12.78, 8), {}
    ),  # model 10524 (+2.6 %; measured 10256)
    "dgxc Llama 3.1 8B 128 H100 CP2 DP64 bf16": Row(
        LLAMA31_8B, h100(128), nemo(1, 1, 64, 1, 2048, cp=2), per_gpu(8192, 2048, 13.16, 128), {}
    ),  # model 10530 (+5.7 %; measured 9960)
    "dgxc Llama 3.1 8B 8 H100 CP2 DP4 fp8": Row(
        LLAMA31_8B, h100(8), nemo(1, 1, 4, 1, 128, cp=2), per_gpu(8192, 128, 9.44, 8), _FP8
    ),  # model 13772 (-0.8 %; measured 13885)
    # 70B: "| Llama 3.1 70b BF16 (TP=4, PP=4, CP=2, VP=5, MBS=1, GA=64) |" on 64 GPUs (GBS=128) ... 2048
    # (GBS=4096): "| 14.61 | 14.70 | 14.72 | 14.80 | 14.86 | 14.84"; FP8 "| 10.46 | ... | 10.99".
    "dgxc Llama 3.1 70B 64 H100 TP4 PP4 CP2 VP5 bf16": Row(
        LLAMA31_70B, h100(64), nemo(4, 4, 2, 1, 128, v=5, cp=2), per_gpu(8192, 128, 14.61, 64), UB
    ),  # model 1213 (+8.1 %; 1241 before the userbuffer chunks; measured 1121)
    "dgxc Llama 3.1 70B 2048 H100 TP4 PP4 CP2 VP5 bf16": Row(
        LLAMA31_70B, h100(2048), nemo(4, 4, 64, 1, 4096, v=5, cp=2), per_gpu(8192, 4096, 14.84, 2048), UB
    ),  # model 1212 (+9.8 %; 1240 before the userbuffer chunks; measured 1104)
    "dgxc Llama 3.1 70B 64 H100 TP4 PP4 CP2 VP5 fp8": Row(
        LLAMA31_70B, h100(64), nemo(4, 4, 2, 1, 128, v=5, cp=2), per_gpu(8192, 128, 10.46, 64), {**UB, **_FP8}
    ),  # model 1719 (+9.7 %; 1750 before the userbuffer chunks; measured 1566)
    # 405B: "| Llama 3.1 405b BF16 (TP=8, PP=9, CP=2, VP=7, MBS=1, GA=63) |", 576 GPUs, GBS 252: "| 17.50 |"
    # (BF16), "| 11.00 |" (FP8). The 32-GPU column is the recipe's proxy: 7 layers, PP 1, GBS 126: "| 9.00 |".
    "dgxc Llama 3.1 405B 576 H100 TP8 PP9 CP2 VP7 bf16": Row(
        LLAMA31_405B, h100(576), nemo(8, 9, 4, 1, 252, v=7, cp=2), per_gpu(8192, 252, 17.50, 576), UB
    ),  # model 217 (+6.0 %; 229 before the userbuffer chunks; measured 205)
    "dgxc Llama 3.1 405B 576 H100 TP8 PP9 CP2 VP7 fp8": Row(
        LLAMA31_405B,
        h100(576),
        nemo(8, 9, 4, 1, 252, v=7, cp=2),
        per_gpu(8192, 252, 11.00, 576),
        {**UB, **_FP8},
    ),  # model 325 (-0.4 %; 339 before the userbuffer chunks; measured 326)
    "dgxc Llama 3.1 405B proxy (7 layers) 32 H100 TP8 CP2 DP2 bf16": Row(
        dataclasses.replace(LLAMA31_405B, n_layers=7),
        h100(32),
        nemo(8, 1, 2, 1, 126, cp=2),
        per_gpu(8192, 126, 9.00, 32),
        UB,
    ),  # model 3919 (+9.3 %; 4126 before the userbuffer chunks; measured 3584)
    # ---- Nemotron-4 340B (v25.01, NeMo 24.09): "| Nemotron4 340b 24.11 BF16 (TP=8, PP=8, MBS=1, GA=16,
    # VP=12) |", 128 GPUs (GBS=32) ... 2048 (GBS=512): "| 4.61 | 4.67 | 4.7 | 4.73 | 4.84 |"; FP8 "| 3.16 |
    # ... | 3.49 |". The yaml: selective recompute, ``ub_tp_comm_overlap: False``. Memory checked: 62.2 GB
    # on 128 GPUs (weights, gradients and bf16 Adam moments 11.5 GB each, activations 27.5 GB; 85.3 GB
    # when the optimizer was counted as 12 fp32 bytes), within the 80 GB the README asks for. The v25.02
    # recipe adds CP 2 to the BF16 run and keeps the table: with CP 2 (DP 1) the model gives 222.
    "dgxc Nemotron-4 340B 128 H100 TP8 PP8 VP12 bf16": Row(
        NEMOTRON4_340B,
        h100(128),
        nemo(8, 8, 2, 1, 32, v=12, recompute="selective"),
        per_gpu(4096, 32, 4.61, 128),
        {},
    ),  # model 228 (+2.7 %; measured 222)
    "dgxc Nemotron-4 340B 2048 H100 TP8 PP8 VP12 bf16": Row(
        NEMOTRON4_340B,
        h100(2048),
        nemo(8, 8, 32, 1, 512, v=12, recompute="selective"),
        per_gpu(4096, 512, 4.84, 2048),
        {},
    ),  # model 221 (+4.5 %; measured 212)
    "dgxc Nemotron-4 340B 128 H100 TP8 PP8 VP12 fp8": Row(
        NEMOTRON4_340B,
        h100(128),
        nemo(8, 8, 2, 1, 32, v=12, recompute="selective"),
        per_gpu(4096, 32, 3.16, 128),
        _FP8,
    ),  # model 313 (-3.4 %; measured 324)
    # ---- Nemotron-4 15B (v25.02, NeMo 24.12): "| Nemotron4 15b BF16 (TP=4, PP=1, MBS=4, GA=4) |", 16 GPUs
    # (GBS=64) ... 2048 (GBS=8192): "| 2.812 | ... | 2.887"; FP8 "| 2.039 | ...". No recompute;
    # userbuffers on.
    "dgxc Nemotron-4 15B 16 H100 TP4 DP4 b4 bf16": Row(
        NEMOTRON4_15B, h100(16), nemo(4, 1, 4, 4, 64), per_gpu(4096, 64, 2.812, 16), UB
    ),  # model 6508 (+11.7 %; 6518 before the userbuffer chunks; measured 5826)
    "dgxc Nemotron-4 15B 16 H100 TP4 DP4 b4 fp8": Row(
        NEMOTRON4_15B, h100(16), nemo(4, 1, 4, 4, 64), per_gpu(4096, 64, 2.039, 16), {**UB, **_FP8}
    ),  # model 8933 (+11.2 %; 8944 before the userbuffer chunks; measured 8035)
    "dgxc Nemotron-4 15B 2048 H100 TP4 DP512 b4 bf16": Row(
        NEMOTRON4_15B, h100(2048), nemo(4, 1, 512, 4, 8192), per_gpu(4096, 8192, 2.887, 2048), UB
    ),  # model 6439 (+13.5 %; 6449 before the userbuffer chunks; measured 5675)
    # ---- GPT-3 175B (v25.04, NeMo 24.12): TP 4, PP 8, VP 6, MBS 1, 128 GPUs GBS 256 ... 2048 GBS 4096,
    # sequence 2,048: "| NeMo Megatron BF16 | 8.309 | 8.408 | 8.42 | 8.453 | 8.49"; FP8 "| 5.626 | ...".
    "dgxc GPT-3 175B 128 H100 TP4 PP8 VP6 bf16": Row(
        GPT3_175B, h100(128), nemo(4, 8, 4, 1, 256, v=6), per_gpu(2048, 256, 8.309, 128), UB
    ),  # model 544 (+10.4 %; 564 before the userbuffer chunks; measured 493)
    "dgxc GPT-3 175B 2048 H100 TP4 PP8 VP6 bf16": Row(
        GPT3_175B, h100(2048), nemo(4, 8, 64, 1, 4096, v=6), per_gpu(2048, 4096, 8.49, 2048), UB
    ),  # model 541 (+12.2 %; 561 before the userbuffer chunks; measured 482)
    # ---- MaxText Llama 3 70B (v25.04, JAX 25.01): FSDP over every GPU (dcn_FSDP 16 or 32 x ici_FSDP 8),
    # per_device_batch_size 2, sequence 8,192, ``remat_policy=save_qkv_proj`` (everything recomputed but the
    # QKV projections: the model's full recomputation, which also recomputes those), cuDNN flash attention.
    # "| Maxtext Llama3 70b BF16 | 15.563 | 15.444 | ..." (128, 256 GPUs).
    "dgxc MaxText Llama 3 70B 128 H100 FSDP b2 bf16": Row(
        LLAMA3_70B,
        h100(128),
        dict(dp=128, microbatch_size=2, global_batch_size=256, zero_stage=3, recompute="full"),
        per_gpu(8192, 256, 15.563, 128),
        {},
    ),  # model 1003 (-4.7 %; measured 1053)
    "dgxc MaxText Llama 3 70B 256 H100 FSDP b2 bf16": Row(
        LLAMA3_70B,
        h100(256),
        dict(dp=256, microbatch_size=2, global_batch_size=512, zero_stage=3, recompute="full"),
        per_gpu(8192, 512, 15.444, 256),
        {},
    ),  # model 1002 (-5.6 %; measured 1061)
}

#: Why the FP8 rows that miss are fast in the model (shared).
FP8_SHAPES = (
    "the FP8 linear GEMMs run at the measured cuBLASLt FP8 rate of an 8192^3 product (0.65 of the FP8 peak) "
    "times the BF16 table's loss for their shape: an FP8 product of the same shape does twice the FLOPs per "
    "tile load, so small and chunked products lose more to the prologue and epilogue than the BF16 table "
    "says (no FP8 GEMM table by shape is recorded)"
)

MISSED: dict[str, tuple[Row, str]] = {
    # GPT-3 175B (v25.04): "| NeMo Megatron FP8 | 5.626 | ..." on 128 GPUs (GBS 256).
    "dgxc GPT-3 175B 128 H100 TP4 PP8 VP6 fp8": (
        Row(GPT3_175B, h100(128), nemo(4, 8, 4, 1, 256, v=6), per_gpu(2048, 256, 5.626, 128), {**UB, **_FP8}),
        (
            "728 vs 842 (+15.6 %; 869 before the userbuffer chunks). The BF16 rows of the same recipe agree "
            "(+10 to +12 %); at 2,048 tokens the userbuffer chunks are products of 512 rows, where "
            f"{FP8_SHAPES}"
        ),
    ),
    # MaxText (v25.04): "| Maxtext Llama3 70b FP8 | 9.074 | ..." (128 GPUs), the BF16 row's layout.
    "dgxc MaxText Llama 3 70B 128 H100 FSDP b2 fp8": (
        Row(
            LLAMA3_70B,
            h100(128),
            dict(dp=128, microbatch_size=2, global_batch_size=256, zero_stage=3, recompute="full"),
            per_gpu(8192, 256, 9.074, 128),
            _FP8,
        ),
        (
            "1806 vs 1435 (-20.5 %; 1459 before the FP8 cast of the bf16 weights at every gather): the "
            "table's FP8 step is 1.72 x faster than its BF16 step (15.563 s), "
            "the model's 1.45 x: with FP8 only the linear GEMMs speed up (1.76 x at the measured FP8 "
            "rate), and the attention core (a quarter of this full-recompute step at 8,192 tokens), the "
            "element-wise work and the ZeRO-3 traffic do not. MaxText's ``quantization=fp8`` with cuDNN's "
            "flash attention is faster than that; which part (an FP8 attention kernel, XLA fusing the "
            "casts) is not identified, and the BF16 row (-5 %) is within the bar"
        ),
    ),
    # Grok-1 314B (v25.04): 1,024 GPUs, 64 layers, TP 4, PP 8, VP 8, CP 2, EP 8, MBS 1, GBS 2048:
    # "| Grok 1 314b BF16 | ... | 21.20 | ...", FP8 "| ... | 17.01 | ...". Memory checked (46 GB).
    "dgxc Grok-1 314B 1024 H100 TP4 PP8 VP8 CP2 EP8 bf16": (
        Row(
            GROK1,
            h100(1024),
            nemo(4, 8, 16, 1, 2048, v=8, cp=2, ep=8),
            per_gpu(8192, 2048, 21.20, 1024),
            {"capacity_factor": 1.0},
        ),
        (
            "773 vs 901 (+17 %; 926 before the dispatcher's TP all-gather of the routed tokens): the "
            "model's step is 18.2 s against the table's 21.2 s; of it the expert all-to-alls (EP 8 across 8 "
            "nodes, one rail each, on the critical path: ``moe_token_dispatcher_type: alltoall`` without EP "
            "overlap) are 1.7 s, TP (``ub_tp_comm_overlap: false``) 1.4 s, of which the all-gather and "
            "reduce-scatter of the top_k = 2 routed copies at expert TP 4 are 0.9 s, the pipeline sends "
            "0.6 s, the memory-bound kernels 0.9 s (the router's gating read and the eager permute and "
            "unpermute of Megatron-Core 0.10, 0.2 s of it). The 3.0 s left is not identified: the "
            "dispatcher's host synchronisation per MoE layer (token counts copied to the CPU before the "
            "permutation) is not modelled; the dense NeMo rows of the same repository agree within 14 %"
        ),
    ),
    "dgxc Grok-1 314B 1024 H100 TP4 PP8 VP8 CP2 EP8 fp8": (
        Row(
            GROK1,
            h100(1024),
            nemo(4, 8, 16, 1, 2048, v=8, cp=2, ep=8),
            per_gpu(8192, 2048, 17.01, 1024),
            {"capacity_factor": 1.0, **_FP8},
        ),
        (
            "963 vs 1208 (+25 %; 1254 before the routed tokens' TP all-gather): as the BF16 row, and "
            f"{FP8_SHAPES}"
        ),
    ),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_public_row_within_15_percent(name: str) -> None:
    row = ROWS[name]
    assert predict(row) == pytest.approx(row.measured, rel=0.15)


@pytest.mark.parametrize("name", list(MISSED))
def test_missed_row_still_runs_and_says_what_it_misses(name: str) -> None:
    row, why = MISSED[name]
    assert predict(row) > 0
    assert " vs " in why
