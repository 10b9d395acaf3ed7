"""The step model against public training throughput it was never built on (fifth round), blind.

Each row is one published figure with its model, GPU count, layout and precision, turned into tokens/s per
GPU; the comment above a row quotes its line, the comment after it gives the model's figure. Tolerance: 15 %.
No constant was set from these figures: every row runs the model's defaults for its software with the
options its source states. Where a source leaves a setting out, the row says which value it takes and why.

Rows the model misses by more than 15 % are in ``MISSED`` with the measured and predicted figures and the
mechanism the model lacks; they are run (so they stay valid layouts) but not asserted.

Sources
-------
- NVIDIA NeMo Framework user guide 24.12, "Performance Benchmarks", Pretraining (docs.nvidia.com/
  nemo-framework/user-guide/24.12/nemotoolkit/performance/performance_summary.html): DGX-H100, FP8; columns
  Model, #-GPUs, GBS, MBS, Sequence Length, TP, PP, CP, VP, Tokens / sec / GPU. Model shapes of the GPT-3
  rows: NVIDIA/NeMo-Framework-Launcher ``launcher_scripts/conf/training/gpt3/5b.yaml`` (24 layers, h 4,096,
  32 heads, FFN 4h, sequence 2,048) and ``20b.yaml`` (44 layers, h 6,144, 48 heads, FFN 4h).
- NVIDIA NeMo Framework user guide, "Performance" (archive/25.04-performance-summary.html, "Container: NeMo
  25.04, System: DGX-GB200"), FP8; columns ... FSDP, TP, PP, CP, VP, EP, GA, Tokens / sec / GPU.
- AI-Hypercomputer/maxtext ``MaxText/configs/a3/llama_2_7b/README.md`` (A3 = 8 x H100 80 GB, TFLOP/sec/chip)
  and ``1vm.sh`` (``ici_fsdp_parallelism=8 per_device_batch_size=4 max_target_length=4096
  remat_policy=minimal_flash attention=cudnn_flash_te``); TFLOP/s in MaxText's count
  (``MaxText/maxtext_utils.py`` ``calculate_tflops_training_per_device`` of that time: non-causal attention),
  :func:`maxtext_flops_per_token`.
- ROCm/TransformerEngine issue #76 ("[DDP 8xMI300X] GPT2-1.5B FP8 is 25% slower than BF16", October 2024):
  "8xMI300X DDP FP8 TE (batch size 28): 315TFLOPs", counted as the thread family's scripts count (issue #72's
  GPT-2 XL, :func:`tests.training.test_training_public4.gpt2_xl_tokens`).
- pytorch/torchtitan pull request #1690 ("[Qwen3] Add 32b training configs", September 2025): H100 (MFU
  39.42 % at 389.87 TFLOP/s: the 989 TFLOP/s dense BF16 peak; "memory: 81.85GiB(86.17%)": a 95 GiB part),
  sequence 4,096 (its table's ``seq_len``), Qwen/Qwen3-32B ``config.json`` for the shape.
- mlc-ai/pith-train issue #79 (July 2026): torchtitan on one 8 x B200 node, Qwen3-30B-A3B, "BF16, seq8192",
  "FSDP8, EP1, PP1", "MBS8, GBS64", "Selective activation checkpointing", "Compiled Transformer blocks and
  loss", "19.41k, 19.53k, and 19.52k tokens/s/GPU".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from tests.clusters import nvswitch_node
from tests.training.test_training_public import (
    DATA,
    LLAMA3_8B,
    LLAMA3_70B,
    LLAMA3_405B,
    Row,
    assert_runs_and_says_what_it_misses,
    assert_within_15_percent,
    b200,
    gb200_racks,
    h100,
    megatron,
)
from tests.training.test_training_public2 import BALANCED, QWEN3_30B, moe
from tests.training.test_training_public4 import GPT2_XL, gpt2_xl_tokens

from aifabric.cluster.spec import ClusterSpec
from aifabric.training import get_model
from aifabric.training.models import BytesPerParam, ModelSpec


def nemo_gpt3(layers: int, hidden: int, heads: int) -> ModelSpec:
    """A GPT-3 of NeMo-Framework-Launcher's ``gpt3/*.yaml``: learned absolute positions, LayerNorm, GeLU
    MLP of 4h, biases, embeddings shared with the output layer, dropout 0.1, GPT-2 BPE vocabulary, 2,048
    tokens."""
    return ModelSpec(
        f"nemo-gpt3-{layers}x{hidden}",
        n_layers=layers,
        hidden_size=hidden,
        n_heads=heads,
        vocab_size=50257,
        seq_len=2048,
        bias=True,
        learned_position_embeddings=True,
        tied_embeddings=True,
    )


def llama2(layers: int, hidden: int, heads: int, ffn: int) -> ModelSpec:
    """A Llama 2 (Touvron et al., arXiv:2307.09288, Table 1; meta-llama/Llama-2-{7,13}b-hf ``config.json``):
    multi-head attention, SwiGLU of ``ffn``, RMSNorm, vocabulary 32,000, 4,096 tokens, no dropout."""
    return ModelSpec(
        f"llama2-{layers}x{hidden}",
        n_layers=layers,
        hidden_size=hidden,
        n_heads=heads,
        ffn_hidden_size=ffn,
        vocab_size=32000,
        seq_len=4096,
        gated_mlp=True,
        norm="rmsnorm",
        dropout=False,
    )


LLAMA2_7B, LLAMA2_13B = llama2(32, 4096, 32, 11008), llama2(40, 5120, 40, 13824)
LLAMA2_70B = ModelSpec.from_yaml(DATA / "llama2-70b.yaml")
GPT3_5B, GPT3_20B, GPT3_175B = nemo_gpt3(24, 4096, 32), nemo_gpt3(44, 6144, 48), get_model("gpt3-175b")
#: The NeMo table's Mixtral runs 4,096-token sequences.
MIXTRAL_8X7B = dataclasses.replace(get_model("mixtral-8x7b"), seq_len=4096)
#: Qwen/Qwen3-32B config.json: 64 layers, hidden 5,120, 64 query heads and 8 KV heads of 128, SwiGLU 25,600,
#: vocabulary 151,936, untied; sequence 4,096 as the pull request's table runs it.
QWEN3_32B = ModelSpec(
    "qwen3-32b", n_layers=64, hidden_size=5120, n_heads=64, n_kv_heads=8, head_dim=128, ffn_hidden_size=25600,
    vocab_size=151936, seq_len=4096, gated_mlp=True, norm="rmsnorm", dropout=False,
)  # fmt: skip
QWEN3_30B_8K = dataclasses.replace(QWEN3_30B, seq_len=8192)
#: MaxText in BF16; XLA_PYTHON_CLIENT_MEM_FRACTION=0.85 and XLA's own buffer assignment: memory not checked.
MAXTEXT = {"check_memory": False}

#: NeMo's FP8 recipes (Transformer Engine, userbuffer TP overlap where TP > 1). The tables give no recompute,
#: offload or gradient dtype: memory not checked (the distributed optimizer's bf16 gradients of the
#: recipes, which the tables do not state, bring the 8B CP 2 row under 80 GB).
NEMO_FP8 = {"fp8": True, "check_memory": False}
NEMO_FP8_UB = {**NEMO_FP8, "tp_comm_overlap": True}
#: torchtitan's H100s are 96 GB parts (the pull request's 86.17 % of 95 GiB): memory not checked against the
#: catalogue's 80 GB H100.
TITAN_H100 = {"framework": "torchtitan", "check_memory": False}
#: NeMo 25.04's Megatron-FSDP recipe reduces bf16 gradients (``grad_reduce_in_fp32 = False``).
NEMO_FSDP_70B = dataclasses.replace(LLAMA3_70B, bytes_per_param=BytesPerParam(grads=2))
#: The same without torch.compile: the Llama code's eager element-wise operators.
TITAN_H100_EAGER = {**TITAN_H100, "elementwise": "llama-eager"}


def mi300x(gpus: int) -> Callable[[], ClusterSpec]:
    """One node of ``gpus`` MI300X (8 on Infinity Fabric in the thread's machine)."""
    return lambda: nvswitch_node("mi300x", gpus)


def nemo(tp: int, pp: int, dp: int, v: int, b: int, gbs: int, cp: int = 1) -> dict[str, Any]:
    """A NeMo layout: Megatron-Core's, sequence parallelism wherever TP > 1."""
    return {**megatron(tp, pp, dp, v, b, gbs, cp=cp), "sequence_parallel": tp > 1}


def fsdp(dp: int, b: int, recompute: str, tp: int = 1) -> dict[str, Any]:
    """FSDP (ZeRO-3) over ``dp`` GPUs, ``b`` sequences per data-parallel rank, TP inside a node if ``tp``."""
    return dict(
        tp=tp,
        dp=dp,
        sequence_parallel=tp > 1,
        microbatch_size=b,
        global_batch_size=b * dp,
        zero_stage=3,
        recompute=recompute,
    )


def maxtext_flops_per_token(model: ModelSpec) -> float:
    """FLOPs per token MaxText counts (``calculate_tflops_training_per_device``): 3 x 2 x (the SwiGLU's three
    h x f products, q/k/v and the output projection) per layer, plus the embedding 2 h V, and the attention
    core 4 s a d per layer x 3, not halved for causality ("megatron tflops calculation does not account
    for causality")."""
    h, f, a, d = model.hidden_size, model.ffn_hidden_size, model.n_heads, model.head_size
    per_layer = 2 * h * f * 3 + 2 * h * (a + 2 * model.n_kv_heads) * d + 2 * h * a * d
    weights = 3 * (per_layer * model.n_layers + 2 * h * model.vocab_size)
    return weights + 3 * 4 * model.seq_len * a * d * model.n_layers


ROWS: dict[str, Row] = {
    # ---- NeMo 24.12, DGX-H100, FP8: "| LLAMA2-7B | 8 | 128 | 1 | 4096 | 1 | 1 | 1 | 1 | 16934 | 780 |".
    "NeMo 24.12 Llama 2 7B 8 H100 fp8": Row(LLAMA2_7B, h100(8), nemo(1, 1, 8, 1, 1, 128), 16934, NEMO_FP8),
    # model 18938 (+11.8 %)
    # "| LLAMA2-13B | 16 | 128 | 1 | 4096 | 1 | 4 | 1 | 10 | 8715 | 760 |"
    "NeMo 24.12 Llama 2 13B 16 H100 PP4 VP10 fp8": Row(
        LLAMA2_13B, h100(16), nemo(1, 4, 4, 10, 1, 128), 8715, NEMO_FP8
    ),  # model 8538 (-2.0 %)
    # "| LLAMA2-70B | 64 | 128 | 1 | 4096 | 4 | 4 | 1 | 20 | 1728 | 768 |"
    "NeMo 24.12 Llama 2 70B 64 H100 TP4 PP4 VP20 fp8": Row(
        LLAMA2_70B, h100(64), nemo(4, 4, 4, 20, 1, 128), 1728, NEMO_FP8_UB
    ),  # model 1860 (+7.6 %)
    # "| LLAMA3-8B | 8 | 128 | 1 | 8192 | 1 | 1 | 2 | 1 | 12273 | 711 |"
    "NeMo 24.12 Llama 3 8B 8 H100 CP2 fp8": Row(
        LLAMA3_8B, h100(8), nemo(1, 1, 4, 1, 1, 128, cp=2), 12273, NEMO_FP8
    ),  # model 13762 (+12.1 %)
    # "| LLAMA3-70B | 64 | 128 | 1 | 8192 | 4 | 4 | 2 | 5 | 1524 | 734 |"
    "NeMo 24.12 Llama 3 70B 64 H100 TP4 PP4 CP2 VP5 fp8": Row(
        LLAMA3_70B, h100(64), nemo(4, 4, 2, 5, 1, 128, cp=2), 1524, NEMO_FP8_UB
    ),  # model 1713 (+12.4 %)
    # ---- NeMo 25.04, DGX-GB200, FP8 (racks of 64, :func:`gb200_racks`; the 8-GPU row on two trays' worth
    # of one NVLink domain): "| LLAMA3-8B | 8 | 128 | 2 | 8192 | 0 | 1 | 1 | 1 | 1 | 1 | 8 | 33099 | 1917 |".
    "NeMo 25.04 Llama 3 8B 8 GB200 b2 fp8": Row(
        LLAMA3_8B, gb200_racks(1, 8), nemo(1, 1, 8, 1, 2, 128), 33099, NEMO_FP8
    ),  # model 34982 (+5.7 %; 34925 with the BF16 table's shapes)
    # "| GPT3-175B | 128 | 256 | 2 | 2048 | 0 | 4 | 4 | 1 | 12 | 1 | 16 | 1804 |"
    "NeMo 25.04 GPT-3 175B 128 GB200 TP4 PP4 VP12 fp8": Row(
        GPT3_175B, gb200_racks(2), nemo(4, 4, 8, 12, 2, 256), 1804, NEMO_FP8_UB
    ),  # model 1849 (+2.5 %; 1912 with the BF16 table's shapes)
    # "| LLAMA3-405B | 128 | 64 | 1 | 8192 | 0 | 4 | 8 | 2 | 8 | 1 | 32 | 665 | 1763 |": 32 microbatches
    # (GBS 64 / DP 2) through PP 8 x VP 8, interleaved bubble (p - 1) / (v m) = 7 / 256.
    "NeMo 25.04 Llama 3 405B 128 GB200 TP4 PP8 CP2 VP8 fp8": Row(
        LLAMA3_405B, gb200_racks(2), nemo(4, 8, 2, 8, 1, 64, cp=2), 665, NEMO_FP8_UB
    ),  # model 746 (+12.2 %; 765, +15.1 %, with the BF16 table's shapes: the userbuffer chunks of 1,024 rows
    # (4,096 tokens / TP 4) lose more as FP8 products than the BF16 table says, gemm_b200_sm100_fp8.csv)
    # NeMo 25.04, DGX-GB200: "| LLAMA3-70B | 64 | 128 | 1 | 8192 | 1 | 1 | 1 | 1 | 1 | 1 | 2 | 4035 | 1943 |":
    # Megatron-Core FSDP over all 64 GPUs, no TP/PP, 2 microbatches. NVIDIA/NeMo v2.3.0 (25.04)
    # scripts/performance: model_configs_gb200.csv, row "pre_train,llama3,70b,gb200,fp8" (use_mcore_fsdp 1,
    # recompute_layers 0, activation_offload_layers 0) and utils.py (FSDP: gradient_accumulation_fusion False,
    # fp8_param_gather False, grad_reduce_in_fp32 False): bf16 gathers cast to FP8 at every gather, bf16
    # gradients copied into the FSDP buffer.
    "NeMo 25.04 Llama 3 70B 64 GB200 FSDP fp8": Row(
        NEMO_FSDP_70B,
        gb200_racks(1),
        {**fsdp(64, 1, "none"), "global_batch_size": 128},
        4035,
        {**NEMO_FP8, "gradient_accumulation_fusion": False},
    ),  # model 4591 (+13.8 %; 4860 before the weight casts per gather and the gradient copy, 1 microbatch)
    # torchtitan #1690: "1) local batch size=2, FSDP=8, full AC" with torch.compile: "tps: 1,874".
    "torchtitan Qwen3-32B 8 H100 FSDP b2 full compile": Row(
        QWEN3_32B, h100(8), fsdp(8, 2, "full"), 1874, TITAN_H100
    ),  # model 2074 (+10.7 %; 2158 before FSDP2's copy-out of every gather and copy-in of every gradient):
    # torchtitan's H100s are 96 GB HBM2e parts at a 500 W limit (the torchtitan performance page's Grand
    # Teton), the catalogue's H100 the 700 W HBM3 part
}

#: Why the NeMo H100 FP8 rows run fast in the model (every one of them high, 8-24 %).
NEMO_H100_FP8 = (
    "every NeMo 24.12 H100 FP8 row but the Llama 2 13B is high in the model (24.07's GPT-3 175B and Llama 3 "
    "70B by 12 % already), the asserted ones by 8-12 %. Not the layout: the Llama 3 8B CP 2 DP 4 layout of "
    "this table (12273 measured) is test_training_public4's Megatron-LM README row (13812 measured, model "
    "13772), the same GPUs and precision a release later. What NeMo 24.12's software spent beyond that is "
    "not identified; candidates not charged: the delayed-scaling recipe's per-step amax-history reduction "
    "and scale update of every FP8 tensor (NeMo-Framework-Launcher: fp8_amax_history_len 1024, "
    "fp8_amax_compute_algo max) and host time"
)

MISSED: dict[str, tuple[Row, str]] = {
    # NeMo 24.12: "| GPT3-5B | 64 | 2048 | 4 | 2048 | 1 | 1 | 1 | 1 | 23406 | 765 |"
    "NeMo 24.12 GPT-3 5B 64 H100 b4 fp8": (
        Row(GPT3_5B, h100(64), nemo(1, 1, 64, 1, 4, 2048), 23406, NEMO_FP8),
        f"23406 vs 27750 (+18.6 %): {NEMO_H100_FP8}; as Megatron-LM r0.8's 1.7B and 7.1B rows (+24 %), the "
        "smaller the layer the further the model runs ahead (host launch time of small layers)",
    ),
    # "| GPT3-20B | 64 | 256 | 2 | 2048 | 2 | 1 | 1 | 1 | 5851 | 750 |"
    "NeMo 24.12 GPT-3 20B 64 H100 TP2 b2 fp8": (
        Row(GPT3_20B, h100(64), nemo(2, 1, 32, 1, 2, 256), 5851, NEMO_FP8_UB),
        f"5851 vs 7226 (+23.5 %): {NEMO_H100_FP8}; with DP 32 and 4 microbatches per step the exposed "
        "distributed-optimizer parameter all-gather of the first one and reduce-scatter of the last one are "
        "charged as NCCL over 8 nodes",
    ),
    # "| GPT3-175B | 128 | 256 | 1 | 2048 | 4 | 8 | 1 | 6 | 716 | 771 |"
    "NeMo 24.12 GPT-3 175B 128 H100 TP4 PP8 VP6 fp8": (
        Row(GPT3_175B, h100(128), nemo(4, 8, 4, 6, 1, 256), 716, NEMO_FP8_UB),
        f"716 vs 827 (+15.5 %): {NEMO_H100_FP8}",
    ),
    # "| Mixtral-8x7B | 64 | 256 | 2 | 4096 | 0 | 1 | 1 | 1 | 1 | 8 | 2 | 19275 | 1598 |". Token dropping at
    # capacity 1.0 (BALANCED): NeMo's Mixtral performance recipe (recipes/mixtral_8x7b.py @0067c7b,
    # pretrain_recipe_performance) adds the token-drop callback, whose MegatronTokenDropCallback defaults to
    # moe_expert_capacity_factor 1.0 with inputs padded to capacity.
    "NeMo 25.04 Mixtral 8x7B 64 GB200 EP8 b2 fp8": (
        Row(MIXTRAL_8X7B, gb200_racks(1), moe(1, 1, 64, 8, 2, 256), 19275, {**NEMO_FP8, **BALANCED}),
        "19275 vs 24666 (+28 %; 24545 with the BF16 table's shapes, 24476 with the balls-into-bins imbalance "
        "instead of a balanced router): the "
        "router, the token permutation and each EP rank's expert are charged as one dense SwiGLU product "
        "and element-wise bytes, and the expert GEMMs run at the dense FP8 rate. Not identified",
    ),
    # MaxText A3 README: "| 1x A3 (h100-80gb-8) | 492 |" TFLOP/sec/chip; 1vm.sh: FSDP 8, 4 x 4,096 tokens per
    # GPU, remat minimal_flash (saves the matmul outputs and the attention context: recompute = none).
    "MaxText Llama 2 7B 8 H100 FSDP b4 bf16": (
        Row(LLAMA2_7B, h100(8), fsdp(8, 4, "none"), 492e12 / maxtext_flops_per_token(LLAMA2_7B), MAXTEXT),
        "10676 vs 13323 (+24.8 %): XLA on GPU, not Transformer Engine: the step's element-wise work runs as "
        "XLA fusions and its GEMMs as XLA's cuBLAS calls with the latency-hiding scheduler's collectives "
        "beside them; the model runs the fused-kernel PyTorch stack's rates",
    ),
    # ROCm/TransformerEngine #76: "8xMI300X DDP FP8 TE (batch size 28): 315TFLOPs".
    "GPT-2 XL 8 MI300X DDP b28 fp8": (
        Row(
            GPT2_XL,
            mi300x(8),
            dict(dp=8, microbatch_size=28, global_batch_size=224),
            gpt2_xl_tokens(315),
            {"fp8": True},
        ),
        "30613 vs 72328 (+136 %; 78051, +155 %, with the FP8 GEMMs at the BF16 MAMF fraction of the FP8 "
        "peak before hipBLASLt's measured FP8 rate, 0.443 of it, entered the profile; 54712 in BF16): as "
        "the one-GPU BF16 row of #72 (+156 %), the MI300X's BF16 level is the best-shape MAMF of a newer "
        "ROCm with TunableOp, and with no MI300X GEMM table every product of h = 1,600 runs at that level; "
        "the issue's title gives ROCm Transformer Engine's FP8 before the thread's PR #66 as 25 % slower "
        "than BF16, which the model cannot reproduce",
    ),  # fmt: skip
    # "| 16 (64) | 4096 | fsdp 4, tp 8 | Full AC ... tps: 876" (no compile).
    "torchtitan Qwen3-32B 32 H100 FSDP4 TP8 b16 full eager": (
        Row(QWEN3_32B, h100(32), fsdp(4, 16, "full", tp=8), 876, TITAN_H100_EAGER),
        "876 vs 1476 (+68.5 %; 1481 before FSDP2's copies): TP 8 in torchtitan is DTensor's synchronous "
        "tensor parallelism (no async TP "
        "without torch.compile): every all-gather and reduce-scatter of the sequence-parallel layer waits, "
        "and DTensor's dispatch runs on the host per operator; the model overlaps neither but charges NCCL's "
        "NVLink rate and no host time",
    ),
    # pith-train #79: torchtitan, FSDP 8, EP 1, MBS 8, GBS 64, selective AC, compiled: "19.41k, 19.53k, and
    # 19.52k tokens/s/GPU". The model's torchtitan checkpointing is for dense layers: no recompute, memory
    # off; torchtitan's FSDP2 copies charged.
    "torchtitan Qwen3-30B-A3B 8 B200 FSDP b8 bf16": (
        Row(
            QWEN3_30B_8K,
            b200(8),
            fsdp(8, 8, "none"),
            19520,
            {"check_memory": False, "framework": "torchtitan"},
        ),
        "19520 vs 30829 (+57.9 %; 31616 before FSDP2's copies of the 30.5 B parameters every microbatch): "
        "128 experts of width 768 on every GPU (EP 1) run as torchtitan's grouped "
        "GEMM over 8 x 8,192 tokens routed 8 ways; the model times each expert's share as one dense product "
        "of the table's best-shape rate class, and charges no router, permutation or load imbalance without "
        "expert parallelism",
    ),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_public_row_within_15_percent(name: str) -> None:
    assert_within_15_percent(ROWS[name])


@pytest.mark.parametrize("name", list(MISSED))
def test_missed_row_still_runs_and_says_what_it_misses(name: str) -> None:
    assert_runs_and_says_what_it_misses(*MISSED[name])


def test_maxtext_count_by_hand() -> None:
    # Llama 2 7B at 4,096 tokens: 3 x (32 x (2 x 4,096 x 11,008 x 3 + 2 x 4,096 x 96 x 128 + 2 x 4,096^2) +
    # 2 x 4,096 x 32,000) + 12 x 4,096 x 32 x 128 x 32 = 46.09 GFLOP per token, so the README's 492 TFLOP/s
    # per chip is 10,676 tokens/s per GPU.
    assert maxtext_flops_per_token(LLAMA2_7B) == pytest.approx(46.09e9, rel=1e-3)
    assert 492e12 / maxtext_flops_per_token(LLAMA2_7B) == pytest.approx(10676, rel=1e-3)
