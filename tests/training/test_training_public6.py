"""The step model against public training throughput it was never built on (sixth round), blind.

Each row is one published figure with its model, GPU count, layout and precision, turned into tokens/s per
GPU; the comment above a row quotes its line, the comment after it gives the model's figure. Tolerance: 15 %.
No constant was set from these figures: every row runs the model's defaults for its software with the
options its source (or the code its source ran) states. Where a source leaves a setting out, the row says
which value it takes and why.

Rows the model misses by more than 15 % are in ``MISSED`` with the measured and predicted figures and the
mechanism the model lacks; they are run (so they stay valid layouts) but not asserted.

Sources
-------
- NVIDIA/dgxc-benchmarking tag v25.05 @68eaf7e (container ``nvcr.io/nvidia/nemo:25.04``), the GB200 tables
  ("Training step time (seconds per step)", turned into tokens as the README does: sequence x global batch
  / step time / GPUs) and the launch scripts of the same tag:
  - ``llama3.1/README.md`` and ``launch.sh``: Llama 3.1 405B, TP 4, PP 8, CP 2, VP 8, MBS 1, GBS = GPUs / 2
    (``-tp -pp -cp -vp -mb -gb -fsdp 0`` passed to NeMo's ``scripts/performance/llm/
    pretrain_llama31_405b.py``);
  - ``nemotron/README.md`` and ``launch.sh``: Nemotron-4 340B, TP 8, PP 4, VP 12, MBS 1, GBS = GPUs / 4
    (weak) or 512 ("Strong Scaling"), for BF16 and FP8 alike. The script passes ``-tp -pp -cp -gb -mb`` but
    no ``-vp``, and NeMo's csv of its commit (``setup.sh``: b4148d2, ``scripts/performance/
    recommended_model_configs/model_configs_gb200.csv``) gives ``vp_size`` 1 for BF16 and 12 for FP8; the
    measurement says interleaved for BF16 too: its weak (8 microbatches) and strong (128) steps per
    sequence differ by 7 %, where four stages without interleaving would idle (p - 1) / m = 3 / 8 of the
    weak step. VP 12 for both, as the README;
  - ``grok1/README.md``: Grok-1 314B, TP 4, EP 8, ETP 4, DP 32, MBS 1, GBS = 2 x GPUs (MoE).
- NVIDIA/dgxc-benchmarking tag v25.12 @db1b14c ``qwen3/pretrain/README.md``: the example log line
  "pretrain_qwen3_235b_a22b_bf16_gpus256_tp2_pp8_cp1_vp4_ep32_mbs1_gbs2048 ... Success 25532.270 ms" on
  256 H100 (the H100 table's TP 2, PP 8, EP 32, VP 4); Megatron-Bridge's performance scripts force-balance
  the expert load.
- huggingface/blog ``deepspeed-to-fsdp-and-back.md`` @09e9aa2 ("From DeepSpeed to FSDP and Back Again with
  Hugging Face Accelerate", Table 3): IBM Granite 7B (the Llama 2 7B architecture), four A100, batch 8 per
  GPU, bf16, "FSDP (aligned mode) | 3158.7 | 10.4 | 0.41" and "DeepSpeed | 3094.5 | 10.6 | 0.40"
  (tokens/s per device, step time, MFU): 3,158.7 x 10.4 = 32,850 tokens per GPU and step = 8 x 4,096.
- AMD-AGI/Primus ``examples/megatron/configs/MI300X/llama3.1_8B-pretrain.yaml`` @116c196 (sequence 8,192,
  TP 1, PP 1, ``gradient_accumulation_fusion: false``) and ``qwen2.5_7B-pretrain.yaml`` @3602f0a (sequence
  2,048), run by the public "Internal Development Report 01" (December 11, 2025, ``rocm/primus:v25.10`` on
  one 8 x MI300X node): Llama 3.1 8B "--fp8 hybrid --micro_batch_size 1 --global_batch_size 128 ... Time per
  Iteration: ~9,873.9 ms"; Qwen 2.5 7B "--fp8 hybrid --micro_batch_size 4 --global_batch_size 512 ...
  Average Tokens/s/GPU: 15,303.5".
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tests.clusters import nvswitch_node
from tests.training.test_training_public import (
    LLAMA3_8B,
    LLAMA3_405B,
    Row,
    assert_row_or_says_what_it_misses,
    gb200_racks,
    h100,
    megatron,
)
from tests.training.test_training_public2 import BALANCED, FUSED, QWEN3_235B, moe
from tests.training.test_training_public3 import GROK1, NEMOTRON4_340B, per_gpu
from tests.training.test_training_public5 import LLAMA2_7B, fsdp, mi300x, nemo

from aifabric.cluster.spec import ClusterSpec
from aifabric.training.models import BytesPerParam, ModelSpec

#: NeMo 2.0's Nemotron-4 340B recipe (the 25.04 container) keeps Megatron-Core's optimizer state: the
#: model's default bytes, not the bf16 moments of the 24.09 synthetic-data yaml (test_training_public3).
NEMOTRON4_340B_MCORE = dataclasses.replace(NEMOTRON4_340B, bytes_per_param=BytesPerParam())
#: Qwen/Qwen2.5-7B config.json: 28 layers, hidden 3,584, 28 query heads and 4 KV heads of 128, SwiGLU
#: 18,944, vocabulary 152,064, untied; sequence 2,048 as the Primus config runs it (the q/k/v biases, 0.01 %
#: of the FLOPs, left out).
QWEN25_7B = ModelSpec(
    "qwen2.5-7b", n_layers=28, hidden_size=3584, n_heads=28, n_kv_heads=4, ffn_hidden_size=18944,
    vocab_size=152064, seq_len=2048, gated_mlp=True, norm="rmsnorm", dropout=False,
)  # fmt: skip

#: NeMo's GB200 recipes: Transformer Engine userbuffers for TP (MegatronCommOverlapCallback). The tables give
#: no memory figure and NeMo's bf16 gradient buffers are not the model's default: memory not checked.
NEMO_UB = {"tp_comm_overlap": True, "check_memory": False}
NEMO_UB_FP8 = {**NEMO_UB, "fp8": True}
#: Megatron-Bridge's and NeMo's MoE benchmarks force-balance the routing (capacity 1.0 in the model).
MOE_BALANCED = {**BALANCED, "check_memory": False}
MOE_FP8 = {**MOE_BALANCED, "fp8": True}
#: Hugging Face transformers' Llama under Accelerate, no torch.compile: one kernel per PyTorch operator
#: (RMSNorm in fp32, SwiGLU, rotary), as Meta's eager Llama code (``llama-eager``); FSDP1's flat parameter
#: (no copies: the framework ``megatron``). The blog names no A100 variant: memory not checked.
HF_EAGER = {"elementwise": "llama-eager", "check_memory": False}
#: Primus (Megatron-LM on ROCm) with ``--fp8 hybrid`` and ``gradient_accumulation_fusion: false``; 192 GB
#: MI300X, Primus's own memory use (118 GB reported): memory not checked.
PRIMUS_FP8 = {"fp8": True, "gradient_accumulation_fusion": False, "check_memory": False}


def a100_node(gpus: int) -> ClusterSpec:
    """One DGX A100 80 GB node's ``gpus`` GPUs on NVSwitch (the blog's four A100)."""
    return nvswitch_node("a100-sxm-80gb", gpus)


def nemotron340(gpus: int, gbs: int, step_s: float, options: dict[str, Any]) -> Row:
    """dgxc's Nemotron-4 340B on ``gpus`` GB200 (racks of 64): TP 8, PP 4, VP 12, MBS 1, ``gbs``, the
    table's ``step_s`` seconds per step of 4,096-token sequences."""
    layout = nemo(8, 4, gpus // 32, 12, 1, gbs)
    measured = per_gpu(4096, gbs, step_s, gpus)
    return Row(NEMOTRON4_340B_MCORE, gb200_racks(gpus // 64), layout, measured, options)


def grok(gpus: int, step_s: float, options: dict[str, Any]) -> Row:
    """dgxc's Grok-1 on ``gpus`` GB200 (racks of 64): TP 4, EP 8, ETP 4, DP = GPUs / 4, MBS 1, GBS = 2 x
    GPUs, the table's ``step_s`` seconds per step of 8,192-token sequences."""
    layout = moe(4, 1, gpus // 4, 8, 1, 2 * gpus, etp=4)
    return Row(GROK1, gb200_racks(gpus // 64), layout, per_gpu(8192, 2 * gpus, step_s, gpus), options)


def llama405(gpus: int) -> dict[str, Any]:
    """dgxc's Llama 3.1 405B layout on ``gpus`` GB200: TP 4, PP 8, CP 2, VP 8, MBS 1, GBS = GPUs / 2."""
    return nemo(4, 8, gpus // 64, 8, 1, gpus // 2, cp=2)


ROWS: dict[str, Row] = {
    # ---- dgxc v25.05, GB200 (racks of 64 in one NVLink domain, :func:`gb200_racks`). "| Llama3.1 405b BF16
    # | 128x GB200 GPUs | 256x GB200 GPUs | 512x GB200 GPUs |": "| Training step time (seconds per step) |
    # 9.347 | 9.484 | 9.508 |"; FP8: "| 6.131 | 6.183 | 6.244 |".
    "dgxc Llama 3.1 405B 128 GB200 TP4 PP8 CP2 VP8 bf16": Row(
        LLAMA3_405B, gb200_racks(2), llama405(128), per_gpu(8192, 64, 9.347, 128), NEMO_UB
    ),  # model 474 (+8.2 %; measured 438)
    "dgxc Llama 3.1 405B 256 GB200 TP4 PP8 CP2 VP8 bf16": Row(
        LLAMA3_405B, gb200_racks(4), llama405(256), per_gpu(8192, 128, 9.484, 256), NEMO_UB
    ),  # model 475 (+9.9 %; measured 432)
    "dgxc Llama 3.1 405B 512 GB200 TP4 PP8 CP2 VP8 bf16": Row(
        LLAMA3_405B, gb200_racks(8), llama405(512), per_gpu(8192, 256, 9.508, 512), NEMO_UB
    ),  # model 475 (+10.2 %; measured 431)
    "dgxc Llama 3.1 405B 128 GB200 TP4 PP8 CP2 VP8 fp8": Row(
        LLAMA3_405B, gb200_racks(2), llama405(128), per_gpu(8192, 64, 6.131, 128), NEMO_UB_FP8
    ),  # model 746 (+11.7 %; measured 668; 765, +14.6 %, with the BF16 table's shapes for the FP8 products):
    # the FP8 rows of NeMo's tables run high (test_training_public5)
    "dgxc Llama 3.1 405B 512 GB200 TP4 PP8 CP2 VP8 fp8": Row(
        LLAMA3_405B, gb200_racks(8), llama405(512), per_gpu(8192, 256, 6.244, 512), NEMO_UB_FP8
    ),  # model 747 (+13.9 %; measured 656; 767, +16.9 %, with the BF16 table's shapes)
    # "| Nemotron 340b BF16 GB200 | 128x GB200 GPUs (GBS=32) | 256x ... (GBS=64) | 512x ... (GBS=128) |":
    # "| 2.189 | 2.19 | 2.229 |"; "Strong Scaling" (GBS=512): "| 32.66 | 16.58 | 8.468 |".
    "dgxc Nemotron-4 340B 128 GB200 TP8 PP4 VP12 bf16": nemotron340(
        128, 32, 2.189, NEMO_UB
    ),  # model 536 (+14.6 %; measured 468; 419, -10.5 %, without interleaving)
    "dgxc Nemotron-4 340B 128 GB200 TP8 PP4 VP12 GBS512 bf16": nemotron340(
        128, 512, 32.66, NEMO_UB
    ),  # model 555 (+10.6 %; measured 502)
    "dgxc Nemotron-4 340B 256 GB200 TP8 PP4 VP12 GBS512 bf16": nemotron340(
        256, 512, 16.58, NEMO_UB
    ),  # model 554 (+12.0 %; measured 494)
    "dgxc Nemotron-4 340B 512 GB200 TP8 PP4 VP12 GBS512 bf16": nemotron340(
        512, 512, 8.468, NEMO_UB
    ),  # model 551 (+14.0 %; measured 484)
    # FP8 (GBS=512): "| 21.83 | 11.21 | 5.668 |", VP 12 (NeMo's csv), CUDA graphs.
    "dgxc Nemotron-4 340B 128 GB200 TP8 PP4 VP12 GBS512 fp8": nemotron340(
        128, 512, 21.83, NEMO_UB_FP8
    ),  # model 839 (+11.8 %; measured 751; 916, +22.1 %, with the BF16 table's shapes for the FP8 products)
    # "| Grok1 314b BF16 | 128x GB200 GPUs | ...": "| 7.325 | 7.39 | 7.324 |"; FP8 "| 5.298 | 5.224 |
    # 5.193 |".
    "dgxc Grok-1 314B 128 GB200 TP4 EP8 ETP4 bf16": grok(128, 7.325, MOE_BALANCED),
    # model 2350 (+5.1 %; measured 2237)
    "dgxc Grok-1 314B 128 GB200 TP4 EP8 ETP4 fp8": grok(128, 5.298, MOE_FP8),
    # model 3546 (+14.7 %; measured 3093; 3539 with the BF16 table's shapes for the FP8 products)
    "dgxc Grok-1 314B 512 GB200 TP4 EP8 ETP4 bf16": grok(512, 7.324, MOE_BALANCED),
    # model 2351 (+5.1 %; measured 2237)
    "dgxc Grok-1 314B 512 GB200 TP4 EP8 ETP4 fp8": grok(512, 5.193, MOE_FP8),
    # model 3527 (+11.8 %; measured 3155; 3520 with the BF16 table's shapes)
    # ---- dgxc v25.12, 256 H100: "pretrain_qwen3_235b_a22b_bf16_gpus256_tp2_pp8_cp1_vp4_ep32_mbs1_gbs2048 ...
    # 25532.270" ms. EP 32 folded over TP x DP (ETP 1). Megatron-Bridge's H100 BF16 Qwen3-235B config sets
    # moe_a2a_overlap=True (v0.2.0); under the combined 1F1B schedule the model gives 1954 (+52 %).
    "dgxc Qwen3-235B-A22B 256 H100 TP2 PP8 VP4 EP32 bf16": Row(
        QWEN3_235B,
        h100(256),
        moe(2, 8, 16, 32, 1, 2048, v=4, etp=1),
        per_gpu(4096, 2048, 25.53227, 256),
        {**MOE_BALANCED, **FUSED},  # NeMo's Qwen3 config: alltoall dispatcher, moe_permute_fusion True
    ),  # model 1266 (-1.4 %; measured 1283; 1276 with the eager dispatcher's count and no sort by local
    # expert)
    # ---- Hugging Face blog, Table 3: FSDP FULL_SHARD and DeepSpeed ZeRO-3 on four A100, 8 x 4,096 tokens
    # per GPU and step, one microbatch. Full activation checkpointing: without it the step's activations
    # (143 GB per GPU in the model's count) would not fit an A100.
    "HF blog Granite 7B 4 A100 FSDP b8 full": Row(
        LLAMA2_7B, lambda: a100_node(4), fsdp(4, 8, "full"), 3158.7, HF_EAGER
    ),  # model 3133 (-0.8 %; 3567, +12.9 %, with fused kernels)
    "HF blog Granite 7B 4 A100 DeepSpeed ZeRO-3 b8 full": Row(
        LLAMA2_7B, lambda: a100_node(4), fsdp(4, 8, "full"), 3094.5, HF_EAGER
    ),  # model 3133 (+1.2 %)
    # ---- Primus on 8 MI300X: Llama 3.1 8B, FP8 hybrid, DP 8 (distributed optimizer), 16 microbatches.
    "Primus Llama 3.1 8B 8 MI300X b1 fp8": Row(
        LLAMA3_8B, mi300x(8), megatron(1, 1, 8, 1, 1, 128), per_gpu(8192, 128, 9.8739, 8), PRIMUS_FP8
    ),  # model 13789 (+3.9 %; measured 13275; see the Qwen 2.5 row of MISSED for why it is in)
}

#: Why the NeMo FP8 rows on GB200 run fast in the model.
NEMO_GB200_FP8 = (
    "the BF16 runs of the same layouts are high by less (Nemotron-4 340B +11 % to +17 %, Llama 3.1 405B +8 %"
    " to +10 %, Grok-1 +5 %) than the FP8 ones (405B +15 % to +17 %, Grok-1 +12 % to +14 %, the 340B +22 % "
    "to +28 %, before the FP8 table by shape): measured FP8 / BF16 step ratios 1.38-1.53 against the model's"
    " 1.51-1.65 then, about 10 % apart on every model. Not the FP8 GEMM level: Azure's 10,000-iteration "
    "cuBLASLt figure (2,876.6 TFLOP/s) is 0.80 of the short-run FP8 MAMF (stas00/ml-engineering @744d01e: "
    "GB200 FP8 3,615.6), as gpu-fryer's power-limited BF16 level is 0.85 of the BF16 MAMF (1,822), so both "
    "already run at the power limit. The FP8 products now take OpenXLA's FP8 table by shape "
    "(gemm_b200_sm100_fp8.csv): with TP overlap they run as userbuffer chunks of T / t rows (512 for the "
    "340B), where an FP8 product loses more of its rate than a BF16 one; that took 10 points off the 340B "
    "rows, 3 off the 405B ones, and brought two rows within the bar. What is left (340B +15 % to +17 %) is "
    "not identified. Not delayed scaling's bookkeeping (``fp8_recipe`` ds): TransformerEngine v2.2.1 "
    "``pytorch/fp8.py`` reduces the amaxes of one autocast region with one blocking all-reduce and one fused"
    " update kernel at its exit (``fp8_autocast_exit`` -> ``reduce_and_update_fp8_tensors``), one region per"
    " model chunk and pass: 2 x 12 chunks x 8 microbatches = 192 small collectives a step, at tens of "
    "microseconds each under 1 % of the 1.48 s"
)

MISSED: dict[str, tuple[Row, str]] = {
    "dgxc Nemotron-4 340B 512 GB200 TP8 PP4 VP12 bf16": (
        nemotron340(512, 128, 2.229, NEMO_UB),
        "459 vs 538 (+17.2 %; the 128- and 256-GPU columns +14.6 % and +15.0 %, the strong-scaling ones +11 "
        "% to +14 %): the model's step holds at 8 microbatches from 128 to 512 GPUs (DP 4 to 16: the "
        "distributed optimizer's gather and reduce hidden); the table's grows 1.8 %. What NeMo 25.04 spends "
        "beyond the model on GB200 in BF16 is not identified (Llama 3.1 405B +8 % to +10 %)",
    ),
    # "| Nemotron 340b FP8 GB200 | 128x GB200 GPUs (GBS=32) | ...": "| 1.483 | 1.517 | 1.549 |"; strong
    # (GBS=512): "| 21.83 | 11.21 | 5.668 |". FP8: VP 12 (NeMo's csv), CUDA graphs.
    "dgxc Nemotron-4 340B 128 GB200 TP8 PP4 VP12 fp8": (
        nemotron340(128, 32, 1.483, NEMO_UB_FP8),
        f"691 vs 809 (+17.1 %; 883, +27.8 %, with the BF16 table's shapes): {NEMO_GB200_FP8}",
    ),
    "dgxc Nemotron-4 340B 512 GB200 TP8 PP4 VP12 GBS512 fp8": (
        nemotron340(512, 512, 5.668, NEMO_UB_FP8),
        f"723 vs 831 (+15.0 %, just outside; 905, +25.3 %, with the BF16 table's shapes; 128 GPUs +11.8 %, "
        f"asserted): {NEMO_GB200_FP8}",
    ),
    # Primus on 8 MI300X: Qwen 2.5 7B, FP8 hybrid, MBS 4, GBS 512, sequence 2,048: 15,303.5 tokens/s/GPU.
    "Primus Qwen2.5 7B 8 MI300X b4 fp8": (
        Row(QWEN25_7B, mi300x(8), megatron(1, 1, 8, 1, 4, 512), 15303.5, PRIMUS_FP8),
        "15304 vs 19334 (+26.3 %): the MI300X has no GEMM table by shape, so every FP8 product runs at "
        "hipBLASLt's 8192^3 level (1,159 TFLOP/s). The same software's Llama 3.1 8B row (+3.9 %) is within "
        "the bar only through its attention: 8,192-token sequences put a larger share of its step in the "
        "attention core, which runs at Azure's FlashAttention-2 rate at head dimension 64 (25 % of peak); "
        "at the GEMM level (51 %) that row would be +23.7 %, and the Qwen one +32.0 %. So the linear "
        "layers of Primus's FP8 step run some 20 % below the model's rate on both models (no MI300X "
        "measurement of FP8 GEMMs by shape)",
    ),
}


@pytest.mark.parametrize("name", [*ROWS, *MISSED])
def test_row_is_within_15_percent_or_says_what_it_misses(name: str) -> None:
    assert_row_or_says_what_it_misses(name, ROWS, MISSED)


def test_granite_step_is_the_blogs_8_sequences_of_4096() -> None:
    # Table 3: 3,158.7 tokens/s per device x 10.4 s per step = 32,850 tokens per GPU and step, 8 x 4,096 =
    # 32,768 within the table's rounding of the step time (10.4 s: +-0.5 %).
    fsdp_tokens, deepspeed_tokens = 3158.7 * 10.4, 3094.5 * 10.6
    assert fsdp_tokens == pytest.approx(8 * 4096, rel=0.005)
    assert deepspeed_tokens == pytest.approx(8 * 4096, rel=0.005)
