"""ZeRO and FSDP steps against public figures the model was never built on, blind: throughput and memory.

Each row is one published figure with its model, GPUs, layout (ZeRO stage or FSDP degree, TP), batch,
sequence and precision, turned into tokens/s per GPU; the comment above a row quotes its line, the comment
after it gives the model's figure. Throughput within 15 %, memory (peak per GPU) within 10 %. No constant
was set from these figures: every row runs the model's defaults for its software with the options its source
(or the code its source ran) states; where a source leaves a setting out, the row says which value it takes.

Rows the model misses are in ``MISSED`` / ``MEMORY_MISSED`` with the measured and predicted figures and the
mechanism the model lacks; they are run (so they stay valid layouts) but not asserted.

Sources
-------
- KempnerInstitute/KempnerForge (PyTorch FSDP2 ``fully_shard`` per Transformer block, DTensor TP with
  sequence parallelism, full activation checkpointing, ``torch.compile``), on nodes of 4 x H200 SXM 141 GB,
  NVLink inside the node, InfiniBand NDR 400 Gb/s between nodes (``benchmarks/config_validation/
  config_validation.md``); taken as one ConnectX-7 per GPU, as an HGX board's rails. Its code
  (``kempnerforge/distributed/parallel.py``, ``training/grad.py``, ``metrics/memory.py``): parameters and
  AdamW moments in bf16 (``model.to(dtype=param_dtype)``), gradients reduced in fp32
  (``MixedPrecisionPolicy(reduce_dtype=float32)``), gradient sync off on all but the last microbatch
  (``maybe_no_sync``: ``set_requires_gradient_sync(False)``), memory as ``max_memory_allocated`` in GiB.
  - ``benchmarks/mfu_scaling/mfu_scaling_2026-04-05.md`` @fbce541 with ``mfu_bench.sh`` @9f3f03a (batch,
    accumulation, compile per experiment): 7B (Llama 3 8B shape) to 70B on 2-32 GPUs, sequence 4,096;
  - ``benchmarks/weak_scaling_160gpu/README.md`` @e9f9189: 13B and 70B, TP 4 x FSDP 2-40, 8-160 GPUs;
  - ``benchmarks/175b_360gpu/README.md`` @b62d2e3: 175B, TP 4 x FSDP 90 on 360 GPUs, 8 sequences per GPU,
    no accumulation.
- FlagOpen/FlagPerf ``training/nvidia/llama1_7B-paddle/README.md`` @5a0d44a: PaddlePaddle 2.5.1 LLaMA 7B
  and 13B on one DGX A100 (80 GB, and 40 GB), fp16 O2, FlashAttention, sequence 2,048 (the throughput
  column's "x 2048 / 8"), Paddle's group sharding stage 1 / stage 2 (ZeRO-1 / ZeRO-2) with and without TP 2;
  memory "单位为GiB" (in GiB).
- hpcaitech/ColossalAI-Pytorch-lightning ``benchmark/gpt/README.md`` @211e8be with ``train.py`` @0d95232,
  ``model.py`` @395762e and ``callback.py`` @8db2fab: Hugging Face GPT-2 XL (1.6 B) on 4 x A100 40 GB,
  Lightning's ``DeepSpeedStrategy(stage=3)`` and DDP, fp16, sequence 1,024, activation checkpointing on
  (``gradient_checkpointing_enable``), memory ``max_memory_allocated`` in MiB.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from tests.clusters import nvswitch_node
from tests.training.test_training_public import (
    LLAMA3_8B,
    LLAMA3_70B,
    Row,
    assert_row_or_says_what_it_misses,
)
from tests.training.test_training_public5 import LLAMA2_7B

from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml
from aifabric.training import ParallelLayout, StepModel
from aifabric.training.efficiency import compute_profile
from aifabric.training.memory import memory_breakdown
from aifabric.training.models import BytesPerParam, ModelSpec
from aifabric.training.step import StepOptions

GIB = 2**30

#: KempnerForge's state: bf16 parameters and AdamW moments (2 + 2 x 2 bytes), fp32 gradient reduction.
KF_BYTES = BytesPerParam(weights=2, grads=4, optimizer=4, gathered=2)
KF_8B = dataclasses.replace(LLAMA3_8B, seq_len=4096, bytes_per_param=KF_BYTES)
#: mfu_scaling "13B | 14.84B | 5120 | 40 | 40 | 8 | auto (1.3x)"; weak_scaling gives ffn_hidden 17,920.
KF_13B = dataclasses.replace(
    KF_8B, name="kempnerforge-13b", n_layers=40, hidden_size=5120, n_heads=40, ffn_hidden_size=17920
)
KF_70B = dataclasses.replace(LLAMA3_70B, seq_len=4096, bytes_per_param=KF_BYTES)
#: 175b_360gpu "Model": hidden 12,288, 96 layers, 96 heads (128), 8 KV heads, SwiGLU 39,680, vocabulary
#: 128,256, untied; 175.0 B parameters.
KF_175B = dataclasses.replace(
    KF_8B,
    name="kempnerforge-175b",
    n_layers=96,
    hidden_size=12288,
    n_heads=96,
    ffn_hidden_size=39680,
)
#: FSDP2 (torchtitan's copies in and out of its buffers), gradient sync on the last microbatch only.
KF = {"framework": "torchtitan", "zero3_no_sync": True}
#: Experiment 08 ran ``--train.compile_model=false``: the Llama code's eager operators.
KF_EAGER = {**KF, "elementwise": "llama-eager"}

#: LLaMA 7B (Llama 2 7B's shape) and 13B (40 layers, 5,120, 40 heads, SwiGLU 13,824) at 2,048 tokens.
LLAMA_7B = dataclasses.replace(LLAMA2_7B, name="llama-7b", seq_len=2048)
LLAMA_13B = dataclasses.replace(
    LLAMA_7B,
    name="llama-13b",
    n_layers=40,
    hidden_size=5120,
    n_heads=40,
    n_kv_heads=40,
    ffn_hidden_size=13824,
)
#: Paddle's dynamic graph runs one kernel per operator (the Llama code's eager set; its fused RMSNorm, on the
#: 80 GB rows, is the one operator the set counts unfused). The 40 GB A100 has the 80 GB part's GA100 die and
#: clocks: the same measured efficiencies.
PADDLE = {"elementwise": "llama-eager", "compute": compute_profile("a100-sxm-80gb")}

#: Hugging Face GPT-2 XL as ``model.py`` builds it (GPT2Config defaults: vocabulary 50,257, dropout 0.1,
#: learned positions, tied embeddings, biases); the 2022 GPT-2 attention writes its scores to HBM.
HF_GPT2_XL = ModelSpec(
    "hf-gpt2-xl", n_layers=48, hidden_size=1600, n_heads=25, vocab_size=50257, seq_len=1024,
    learned_position_embeddings=True, tied_embeddings=True, bias=True, dropout=True,
)  # fmt: skip
HF_EAGER = {"flash_attention": False, "compute": compute_profile("a100-sxm-80gb")}


def h200_nodes(gpus: int) -> ClusterSpec:
    """KempnerForge's machine: nodes of 4 x H200 (NVLink inside), one 400 Gb/s NDR port per GPU on the DGX
    SuperPOD's rail-optimised InfiniBand; fewer than 4 GPUs are one node's."""
    data = load_package_yaml("aifabric.cluster.presets", "dgx-h100-superpod.yaml")
    data = {k: v for k, v in data.items() if k != "nodes"}
    return ClusterSpec.from_dict(
        {**data, "accelerator": "h200-sxm", "gpus_per_node": min(4, gpus), "gpus": gpus}
    )


def kempner(
    model: ModelSpec, tp: int, fsdp: int, b: int, accum: int, tok_s: float, opts: dict[str, Any]
) -> Row:
    """A KempnerForge run: TP ``tp`` (sequence parallel) x FSDP ``fsdp``, ``b`` sequences per microbatch,
    ``accum`` microbatches, full recomputation; ``tok_s`` the report's tokens/s of the whole job."""
    gpus = tp * fsdp
    layout = dict(
        tp=tp, dp=fsdp, sequence_parallel=tp > 1, microbatch_size=b, global_batch_size=b * accum * fsdp,
        zero_stage=3, recompute="full",
    )  # fmt: skip
    return Row(model, lambda: h200_nodes(gpus), layout, tok_s / gpus, opts)


def paddle(model: ModelSpec, gpu: str, tp: int, zero: int, b: int, accum: int, tok_s: float, rc: str) -> Row:
    """A FlagPerf PaddlePaddle row on one 8-GPU DGX A100: TP ``tp`` (no sequence parallelism), sharding
    stage ``zero`` over 8 / tp ranks, ``b`` sequences per microbatch, ``accum`` microbatches."""
    dp = 8 // tp
    layout = dict(
        tp=tp, dp=dp, microbatch_size=b, global_batch_size=b * accum * dp, zero_stage=zero, recompute=rc
    )
    return Row(model, lambda: nvswitch_node(gpu, 8), layout, tok_s, PADDLE)


def gpt2_xl(zero: int, b: int, samples_s: float) -> Row:
    """The Lightning benchmark's GPT-2 XL on 4 x A100 40 GB, ``b`` sequences per GPU, activation
    checkpointing; ``samples_s`` the README's global samples/s."""
    layout = dict(dp=4, microbatch_size=b, global_batch_size=4 * b, zero_stage=zero, recompute="full")
    return Row(HF_GPT2_XL, lambda: nvswitch_node("a100-sxm-40gb", 4), layout, samples_s * 1024 / 4, HF_EAGER)


# ---- the rows, each once; ROWS / MISSED and the memory tables below pick them by name.
# mfu_scaling (2026-04-05), "| # | GPUs | Nodes | Model | Parallelism | tok/s | MFU (%) | Mem/GPU | Step Time
# |";
# mfu_bench.sh gives each experiment's batch x accumulation (7B: 2 x 4 on 1-2 GPUs, 4 x 2 beyond; 13B 4 x 4;
# 70B 2 x 4) and compile (all but 08).
KF_APRIL = {
    # "| 2 | 2 | 1 | 7B | FSDP=2 | 18,728 | 51.7 | 62.4 GB | 3.50s |"
    "KempnerForge 7B 2 H200 FSDP2": kempner(KF_8B, 1, 2, 2, 4, 18728, KF),
    # "| 4 | 4 | 1 | 7B | FSDP=4 | 38,983 | **53.8** | 61.1 GB | 3.36s |"
    "KempnerForge 7B 4 H200 FSDP4": kempner(KF_8B, 1, 4, 4, 2, 38983, KF),
    # "| 6 | 4 | 1 | 7B | TP=2+FSDP=2 | 25,980 | 35.9 | 45.9 GB | 2.52s |"
    "KempnerForge 7B 4 H200 TP2 FSDP2": kempner(KF_8B, 2, 2, 4, 2, 25980, KF),
    # "| 7 | 8 | 2 | 7B | TP=4+FSDP=2 | 44,299 | 30.6 | 32.7 GB | 1.48s |"
    "KempnerForge 7B 8 H200 TP4 FSDP2": kempner(KF_8B, 4, 2, 4, 2, 44299, KF),
    # "| 8 | 8 | 2 | 13B | FSDP=8 | 35,405 | **44.4** | 88.5 GB | 14.81s |" (compile off)
    "KempnerForge 13B 8 H200 FSDP8 eager": kempner(KF_13B, 1, 8, 4, 4, 35405, KF_EAGER),
    # "| 10 | 16 | 4 | 7B | TP=4+FSDP=4 | 82,988 | 28.6 | 29.4 GB | 1.58s |"
    "KempnerForge 7B 16 H200 TP4 FSDP4": kempner(KF_8B, 4, 4, 4, 2, 82988, KF),
    # "| 11 | 16 | 4 | 13B | TP=4+FSDP=4 | 53,814 | **33.7** | 39.2 GB | 4.87s |"
    "KempnerForge 13B 16 H200 TP4 FSDP4": kempner(KF_13B, 4, 4, 4, 4, 53814, KF),
    # "| 12 | 32 | 8 | 7B | TP=4+FSDP=8 | 155,917 | 26.9 | 27.6 GB | 1.68s |"
    "KempnerForge 7B 32 H200 TP4 FSDP8": kempner(KF_8B, 4, 8, 4, 2, 155917, KF),
}
# weak_scaling_160gpu (2026-06-30), "| Model | GPUs | Parallelism | tok/s | MFU % | Mem/GPU GB | Step s | n
# |";
# batch/GPU 4 x 4 (13B), 2 x 4 (70B).
KF_JUNE = {
    # "| 13b | 8 | tp4_fsdp2 | 29,860 | 35.9 | 45.0 | 4.39 | 1 |"
    "KempnerForge 13B 8 H200 TP4 FSDP2": kempner(KF_13B, 4, 2, 4, 4, 29860, KF),
    # "| 13b | 32 | tp4_fsdp8 | 110,373 | 33.2 | 36.2 | 4.75 | 1 |"
    "KempnerForge 13B 32 H200 TP4 FSDP8": kempner(KF_13B, 4, 8, 4, 4, 110373, KF),
    # "| 13b | 64 | tp4_fsdp16 | 216,507 | 32.6 | 34.8 | 4.84 | 1 |"
    "KempnerForge 13B 64 H200 TP4 FSDP16": kempner(KF_13B, 4, 16, 4, 4, 216507, KF),
    # "| 13b | 128 | tp4_fsdp32 | 423,306 | 31.8 | 34.0 | 4.95 | 1 |"
    "KempnerForge 13B 128 H200 TP4 FSDP32": kempner(KF_13B, 4, 32, 4, 4, 423306, KF),
    # "| 13b | 160 | tp4_fsdp40 | 534,644±1,138 | 32.2±0.1 | 33.9 | 4.91 | 2 |"
    "KempnerForge 13B 160 H200 TP4 FSDP40": kempner(KF_13B, 4, 40, 4, 4, 534644, KF),
    # "| 70b | 32 | tp4_fsdp8 | 18,688 | 26.5 | 93.2 | 14.03 | 1 |"
    "KempnerForge 70B 32 H200 TP4 FSDP8": kempner(KF_70B, 4, 8, 2, 4, 18688, KF),
    # "| 70b | 64 | tp4_fsdp16 | 35,824 | 25.4 | 86.8 | 14.63 | 1 |"
    "KempnerForge 70B 64 H200 TP4 FSDP16": kempner(KF_70B, 4, 16, 2, 4, 35824, KF),
    # "| 70b | 128 | tp4_fsdp32 | 69,985 | 24.8 | 83.6 | 14.98 | 1 |"
    "KempnerForge 70B 128 H200 TP4 FSDP32": kempner(KF_70B, 4, 32, 2, 4, 69985, KF),
    # "| 70b | 160 | tp4_fsdp40 | 85,571±43 | 24.3±0.0 | 82.9 | 15.32 | 2 |"
    "KempnerForge 70B 160 H200 TP4 FSDP40": kempner(KF_70B, 4, 40, 2, 4, 85571, KF),
    # 175b_360gpu: "Per-GPU batch | 8 sequences", "Gradient accumulation | 1", "Throughput | **154,523
    # tokens/s**", "Peak memory | 53.8 / 140 GB per GPU".
    "KempnerForge 175B 360 H200 TP4 FSDP90": kempner(KF_175B, 4, 90, 8, 1, 154523, KF),
}
# FlagPerf: "| A100单机8卡（1x8*80G） | config_TP1PP1SH2SP8A10080Gx1x8 | fp16, level="O2" | per_device_bs=4,
# accumulate=64 ... | flash_attention=True, recompute=False, ... sharding="stage2", sharding_degree=8 | 16.67
# * 2048 / 8 = 4267 tokens/s | 70.09 * 8 GB |" and the rows below it.
FLAGPERF = {
    "FlagPerf LLaMA 7B 8 A100-80 ZeRO-2": paddle(LLAMA_7B, "a100-sxm-80gb", 1, 2, 4, 64, 4267, "none"),
    "FlagPerf LLaMA 7B 8 A100-80 TP2 ZeRO-1": paddle(LLAMA_7B, "a100-sxm-80gb", 2, 1, 4, 128, 3888, "none"),
    "FlagPerf LLaMA 7B 8 A100-80 TP2 ZeRO-2": paddle(LLAMA_7B, "a100-sxm-80gb", 2, 2, 4, 128, 3650, "none"),
    "FlagPerf LLaMA 7B 8 A100-40 ZeRO-2": paddle(LLAMA_7B, "a100-sxm-40gb", 1, 2, 2, 128, 2744, "full"),
    "FlagPerf LLaMA 7B 8 A100-40 TP2 ZeRO-1": paddle(LLAMA_7B, "a100-sxm-40gb", 2, 1, 2, 256, 2163, "full"),
    "FlagPerf LLaMA 7B 8 A100-40 TP2 ZeRO-2": paddle(LLAMA_7B, "a100-sxm-40gb", 2, 2, 2, 256, 2160, "full"),
    "FlagPerf LLaMA 13B 8 A100-80 ZeRO-2": paddle(LLAMA_13B, "a100-sxm-80gb", 1, 2, 2, 128, 1707, "full"),
    "FlagPerf LLaMA 13B 8 A100-80 TP2 ZeRO-1": paddle(LLAMA_13B, "a100-sxm-80gb", 2, 1, 2, 256, 1605, "full"),
    "FlagPerf LLaMA 13B 8 A100-80 TP2 ZeRO-2": paddle(LLAMA_13B, "a100-sxm-80gb", 2, 2, 2, 256, 1489, "full"),
}
# ColossalAI-Pytorch-lightning: "| deepspeed (zero3) | 160 | 18.18 | 25360.968 |" and "| ddp (AMP) | 24 |
# 11.76 | 37905.422 |" (global batch, global samples/s, max CUDA memory allocated in MB); README commands
# ``--batch_size 40`` and ``--batch_size 6`` on ``--np 4``.
LIGHTNING = {
    "Lightning GPT-2 XL 4 A100-40 DeepSpeed ZeRO-3 b40": gpt2_xl(3, 40, 18.18),
    "Lightning GPT-2 XL 4 A100-40 DDP b6": gpt2_xl(0, 6, 11.76),
}
ALL = {**KF_APRIL, **KF_JUNE, **FLAGPERF, **LIGHTNING}

#: What the TP rows of KempnerForge lack (the missed ones high by 15-42 %, the FSDP-only rows within 6 %).
KF_TP = (
    "KempnerForge's TP is DTensor's synchronous tensor parallelism (parallelize_module, SequenceParallel, no "
    "async TP): the model charges its sequence-parallel all-gathers and reduce-scatters exposed at NCCL's "
    "NVLink rate, yet the rows run slower than that: 7B (b 4) and 70B (b 2) by 22-42 %, 13B (b 4) by "
    "8-19 %, while 175B at b 8 is 9 % low and the same framework without TP (FSDP 2, 4, 8) within 6 %. "
    "Not identified: DTensor's per-operator dispatch and redistribution on the host, the "
    "t-way GEMM slices of the small models and the 4-GPU board's direct NVLink (no NVSwitch) are the "
    "candidates; torchtitan's eager TP rows miss the same way (test_training_public5)"
)
KF_TP_DP = (
    KF_TP + ". Before the gradients were reduced once per step (zero3_no_sync) the row ran "
    "{before} (every microbatch reduce-scattered: {before_err})"
)


def _kf_tp(name: str, predicted: int, before: str) -> tuple[Row, str]:
    """A KempnerForge TP row the model misses: its measured and predicted figures and the reason."""
    row = ALL[name]
    err = f"{100 * (predicted / row.measured - 1):+.1f} %"
    why = KF_TP_DP.format(before=before.split(" ")[0], before_err=before.split(" ", 1)[1])
    return row, f"{row.measured:.0f} vs {predicted} ({err}): {why}"


#: Asserted throughput, tokens/s per GPU.
ROWS: dict[str, Row] = {
    "KempnerForge 7B 2 H200 FSDP2": ALL["KempnerForge 7B 2 H200 FSDP2"],  # model 9108 (-2.7 %; 9364)
    "KempnerForge 7B 4 H200 FSDP4": ALL["KempnerForge 7B 4 H200 FSDP4"],  # model 9236 (-5.2 %; 9746)
    # two nodes, FSDP over InfiniBand, eager
    "KempnerForge 13B 8 H200 FSDP8 eager": ALL["KempnerForge 13B 8 H200 FSDP8 eager"],  # 4505 (+1.8 %; 4426)
    "KempnerForge 13B 8 H200 TP4 FSDP2": ALL["KempnerForge 13B 8 H200 TP4 FSDP2"],  # 4051 (+8.5 %; 3732)
    "KempnerForge 13B 32 H200 TP4 FSDP8": ALL["KempnerForge 13B 32 H200 TP4 FSDP8"],  # 3954 (+14.6 %; 3449):
    # mfu_scaling's run of the same layout two months earlier: 104,309 tok/s (3,260 per GPU, 5.5 % lower)
    "KempnerForge 175B 360 H200 TP4 FSDP90": ALL[
        "KempnerForge 175B 360 H200 TP4 FSDP90"
    ],  # 392 (-8.6 %; 429)
    "FlagPerf LLaMA 7B 8 A100-80 ZeRO-2": ALL["FlagPerf LLaMA 7B 8 A100-80 ZeRO-2"],  # 4394 (+3.0 %)
    "FlagPerf LLaMA 7B 8 A100-80 TP2 ZeRO-1": ALL["FlagPerf LLaMA 7B 8 A100-80 TP2 ZeRO-1"],  # 3928 (+1.0 %)
    "FlagPerf LLaMA 7B 8 A100-80 TP2 ZeRO-2": ALL["FlagPerf LLaMA 7B 8 A100-80 TP2 ZeRO-2"],  # 3893 (+6.6 %)
    "FlagPerf LLaMA 7B 8 A100-40 ZeRO-2": ALL["FlagPerf LLaMA 7B 8 A100-40 ZeRO-2"],  # 3128 (+14.0 %)
    "FlagPerf LLaMA 13B 8 A100-80 ZeRO-2": ALL["FlagPerf LLaMA 13B 8 A100-80 ZeRO-2"],  # 1771 (+3.8 %)
    "FlagPerf LLaMA 13B 8 A100-80 TP2 ZeRO-1": ALL[
        "FlagPerf LLaMA 13B 8 A100-80 TP2 ZeRO-1"
    ],  # 1615 (+0.6 %)
    "FlagPerf LLaMA 13B 8 A100-80 TP2 ZeRO-2": ALL[
        "FlagPerf LLaMA 13B 8 A100-80 TP2 ZeRO-2"
    ],  # 1592 (+6.9 %)
}

#: Paddle's TP 2 on the 40 GB rows, with recomputation (the 80 GB TP 2 rows, without it, are within 7 %).
PADDLE_40_TP = (
    "Paddle 2.5's TP 2 with full recomputation on the 40 GB A100 (b 2): the same layouts without "
    "recomputation (80 GB, b 4) are within 7 %, ZeRO-2 alone on the 40 GB part within 14 %, and 13B with "
    "TP 2 and recomputation (80 GB) within 7 %. Not identified (the 40 GB part's HBM2 at 1.56 TB/s and the "
    "recomputed forward's TP all-reduces are both charged)"
)
LIGHTNING_WINDOW = (
    "the README gives no timing window and each run is 3 epochs of 5 steps (train.py defaults), so its "
    "samples/s include the first steps' allocation, NCCL set-up and DeepSpeed's partitioning; its DDP "
    "baseline of the same table misses by more (+157 %), so the shortfall is not ZeRO-3's"
)
MISSED: dict[str, tuple[Row, str]] = {
    "KempnerForge 7B 4 H200 TP2 FSDP2": _kf_tp("KempnerForge 7B 4 H200 TP2 FSDP2", 8511, "8492 +30.7 %"),
    "KempnerForge 7B 8 H200 TP4 FSDP2": _kf_tp("KempnerForge 7B 8 H200 TP4 FSDP2", 7088, "6991 +26.3 %"),
    "KempnerForge 7B 16 H200 TP4 FSDP4": _kf_tp("KempnerForge 7B 16 H200 TP4 FSDP4", 6968, "6828 +31.6 %"),
    "KempnerForge 13B 16 H200 TP4 FSDP4": _kf_tp("KempnerForge 13B 16 H200 TP4 FSDP4", 3988, "3863 +14.9 %"),
    "KempnerForge 7B 32 H200 TP4 FSDP8": _kf_tp("KempnerForge 7B 32 H200 TP4 FSDP8", 6902, "6740 +38.3 %"),
    "KempnerForge 13B 64 H200 TP4 FSDP16": _kf_tp(
        "KempnerForge 13B 64 H200 TP4 FSDP16", 3932, "3778 +11.7 %"
    ),
    "KempnerForge 13B 128 H200 TP4 FSDP32": _kf_tp(
        "KempnerForge 13B 128 H200 TP4 FSDP32", 3910, "3748 +13.3 %"
    ),
    "KempnerForge 13B 160 H200 TP4 FSDP40": _kf_tp(
        "KempnerForge 13B 160 H200 TP4 FSDP40", 3901, "3737 +11.8 %"
    ),
    "KempnerForge 70B 32 H200 TP4 FSDP8": _kf_tp("KempnerForge 70B 32 H200 TP4 FSDP8", 812, "732 +25.3 %"),
    "KempnerForge 70B 64 H200 TP4 FSDP16": _kf_tp("KempnerForge 70B 64 H200 TP4 FSDP16", 782, "683 +22.0 %"),
    "KempnerForge 70B 128 H200 TP4 FSDP32": _kf_tp(
        "KempnerForge 70B 128 H200 TP4 FSDP32", 762, "652 +19.3 %"
    ),
    "KempnerForge 70B 160 H200 TP4 FSDP40": _kf_tp(
        "KempnerForge 70B 160 H200 TP4 FSDP40", 755, "643 +20.3 %"
    ),
    "FlagPerf LLaMA 7B 8 A100-40 TP2 ZeRO-1": (
        ALL["FlagPerf LLaMA 7B 8 A100-40 TP2 ZeRO-1"],
        "2163 vs 2742 (+26.8 %): " + PADDLE_40_TP,
    ),
    "FlagPerf LLaMA 7B 8 A100-40 TP2 ZeRO-2": (
        ALL["FlagPerf LLaMA 7B 8 A100-40 TP2 ZeRO-2"],
        "2160 vs 2708 (+25.4 %): " + PADDLE_40_TP,
    ),
    "Lightning GPT-2 XL 4 A100-40 DeepSpeed ZeRO-3 b40": (
        ALL["Lightning GPT-2 XL 4 A100-40 DeepSpeed ZeRO-3 b40"],
        "4654 vs 8189 (+76.0 %): " + LIGHTNING_WINDOW,
    ),
    "Lightning GPT-2 XL 4 A100-40 DDP b6": (
        ALL["Lightning GPT-2 XL 4 A100-40 DDP b6"],
        "3011 vs 7731 (+156.8 %): " + LIGHTNING_WINDOW,
    ),
}

#: Asserted peak memory per GPU, bytes (the sources' GiB; KempnerForge's ``max_memory_allocated``).
MEMORY: dict[str, tuple[Row, float]] = {
    # "62.4 GB" (GiB): model 67.7 GiB (+8.6 %; 52.8, -15.4 %, with the gradients sharded between microbatches)
    "KempnerForge 7B 2 H200 FSDP2": (ALL["KempnerForge 7B 2 H200 FSDP2"], 62.4 * GIB),
    # "45.9 GB": model 41.3 GiB (-9.9 %; 33.9, -26.2 %, before)
    "KempnerForge 7B 4 H200 TP2 FSDP2": (ALL["KempnerForge 7B 4 H200 TP2 FSDP2"], 45.9 * GIB),
    # "93.2": model 84.8 GiB (-9.0 %; 27.3, -70.7 %, before): the unsharded fp32 gradients of a TP rank's
    # 17.6 B parameters, 70.6 GB, held across the four microbatches
    "KempnerForge 70B 32 H200 TP4 FSDP8": (ALL["KempnerForge 70B 32 H200 TP4 FSDP8"], 93.2 * GIB),
    "KempnerForge 70B 64 H200 TP4 FSDP16": (
        ALL["KempnerForge 70B 64 H200 TP4 FSDP16"],
        86.8 * GIB,
    ),  # 78.7 -9.4 %
    "KempnerForge 70B 128 H200 TP4 FSDP32": (
        ALL["KempnerForge 70B 128 H200 TP4 FSDP32"],
        83.6 * GIB,
    ),  # 75.6 -9.6 %
    "KempnerForge 70B 160 H200 TP4 FSDP40": (
        ALL["KempnerForge 70B 160 H200 TP4 FSDP40"],
        82.9 * GIB,
    ),  # 75.0 -9.5 %
    # "28.4 * 8 GB": model 29.9 GiB (+5.1 %)
    "FlagPerf LLaMA 7B 8 A100-40 TP2 ZeRO-1": (ALL["FlagPerf LLaMA 7B 8 A100-40 TP2 ZeRO-1"], 28.4 * GIB),
    # "52.27 * 8 GB": model 56.8 GiB (+8.7 %)
    "FlagPerf LLaMA 13B 8 A100-80 TP2 ZeRO-1": (ALL["FlagPerf LLaMA 13B 8 A100-80 TP2 ZeRO-1"], 52.27 * GIB),
}

#: KempnerForge's output layer under TP: the logits of every TP rank's full sequence.
KF_LOGITS = (
    "KempnerForge's output head is ColwiseParallel, gathered to Replicate for the loss "
    "(kempnerforge/distributed/tensor_parallel.py: 'split vocab, gather to Replicate for loss'): every TP "
    "rank holds the whole b s V logits in bf16 and the plain cross-entropy's fp32 copy, 12.6 GB at 13B b 4, "
    "where the model counts them split over t; the gap is about that size at every FSDP degree"
)
PADDLE_MEMORY = (
    "Paddle 2.5's group sharding keeps what the model does not count (its fp16 O2 parameter copies, fused "
    "gradient buffers of the sharding stage); the ZeRO-1 TP 2 rows are within 9 %. Not identified"
)


def _gib_missed(name: str, measured_gib: float, predicted_gib: float, why: str) -> tuple[Row, float, str]:
    """A memory row the model misses: the row, the measured bytes and "measured vs predicted: why"."""
    err = f"{100 * (predicted_gib / measured_gib - 1):+.1f} %"
    return ALL[name], measured_gib * GIB, f"{measured_gib} vs {predicted_gib} GiB ({err}): {why}"


MEMORY_MISSED: dict[str, tuple[Row, float, str]] = {
    name: _gib_missed(name, *figures)
    for name, figures in {
        "KempnerForge 7B 4 H200 FSDP4": (
            61.1, 71.7, "49.3 before; the model's loss holds torchtitan's upcast logits (12 s b V, 25 GB at "
            "b 4); torch.compile fuses KempnerForge's cross-entropy and its upcast",
        ),
        "KempnerForge 13B 8 H200 FSDP8 eager": (
            88.5, 99.5, "51.2 before; as the 7B FSDP4 row, the loss's upcast logits at b 4",
        ),
        "KempnerForge 13B 32 H200 TP4 FSDP8": (36.2, 24.9, "12.8 before; " + KF_LOGITS),
        "KempnerForge 13B 160 H200 TP4 FSDP40": (33.9, 22.9, "9.4 before; " + KF_LOGITS),
        "KempnerForge 175B 360 H200 TP4 FSDP90": (53.8, 39.3, "one microbatch: unchanged; " + KF_LOGITS),
        "FlagPerf LLaMA 7B 8 A100-80 ZeRO-2": (70.09, 58.4, PADDLE_MEMORY),
        "FlagPerf LLaMA 7B 8 A100-80 TP2 ZeRO-2": (54.01, 39.5, PADDLE_MEMORY),
        "FlagPerf LLaMA 13B 8 A100-80 ZeRO-2": (60.06, 51.2, PADDLE_MEMORY),
        # max_memory_allocated "25360.968" MB (MiB)
        "Lightning GPT-2 XL 4 A100-40 DeepSpeed ZeRO-3 b40": (
            round(25360.968 / 1024, 2), 27.4, "DeepSpeed stage 3 frees each layer's gathered fp16 parameters "
            "after use and the checkpointed GPT-2 keeps only each layer's input; the model also holds the "
            "prefetched next layer and the recomputed layer's 2022 attention scores (no FlashAttention). "
            "Not identified further",
        ),
    }.items()
}  # fmt: skip


def predict_memory(row: Row) -> float:
    """The model's peak memory per GPU for ``row``, bytes."""
    sm = StepModel(row.model, row.cluster(), options=StepOptions(**row.options))
    return sm.check(ParallelLayout(**row.layout))[1].total_bytes


@pytest.mark.parametrize("name", [*ROWS, *MISSED])
def test_row_is_within_15_percent_or_says_what_it_misses(name: str) -> None:
    assert_row_or_says_what_it_misses(name, ROWS, MISSED)


@pytest.mark.parametrize("name", [*MEMORY, *MEMORY_MISSED])
def test_memory_is_within_10_percent_or_says_what_it_misses(name: str) -> None:
    if name in MEMORY:
        row, measured = MEMORY[name]
        assert predict_memory(row) == pytest.approx(measured, rel=0.10)
    else:
        row, measured, why = MEMORY_MISSED[name]
        assert predict_memory(row) > 0 and measured > 0
        assert " vs " in why


def test_rows_come_from_at_least_four_projects_on_several_nodes_and_gpus() -> None:
    asserted = [*ROWS.values(), *(row for row, _ in MEMORY.values())]
    gpus = {row.cluster().accelerator for row in asserted}
    assert {"h200-sxm", "a100-sxm-80gb", "a100-sxm-40gb"} <= gpus
    assert max(row.cluster().n_gpus for row in asserted) == 360  # 90 nodes of 4
    assert len(ROWS) >= 12


def test_kempnerforge_step_tokens_are_the_reports_batch() -> None:
    # weak_scaling: 13B on 32 GPUs, 4 x 4 sequences of 4,096 per FSDP rank (8), "Step s 4.75":
    # 110,373 tok/s x 4.75 s = 524,272 = 8 x 16 x 4,096 = 524,288 within the step's rounding.
    step_tokens = 110373 * 4.75
    assert step_tokens == pytest.approx(8 * 16 * 4096, rel=0.001)
    # 175B: "Global batch | 2.95M tokens/step (8 x 90 dp x 4,096)" and "Step time | 19.09 s".
    step_tokens = 154523 * 19.09
    assert step_tokens == pytest.approx(8 * 90 * 4096, rel=0.001)


# ---- the mechanism the KempnerForge rows brought in: ZeRO-3 with gradient sync on the last microbatch
#: KempnerForge's 70B on 32 GPUs: TP 4 x FSDP 8, 4 microbatches of 2.
NO_SYNC_LAYOUT = ParallelLayout(**ALL["KempnerForge 70B 32 H200 TP4 FSDP8"].layout)


def test_no_sync_holds_every_parameter_gradient_unsharded_hand_count() -> None:
    # 70B over TP 4: a rank's parameters P (params_per_gpu), fp32 reduce dtype (4 bytes each) unsharded,
    # against 4 P / 8 sharded over FSDP 8 with a reduce-scatter every microbatch.
    synced = memory_breakdown(KF_70B, NO_SYNC_LAYOUT, framework="torchtitan")
    held = memory_breakdown(KF_70B, NO_SYNC_LAYOUT, framework="torchtitan", zero3_no_sync=True)
    assert synced.gradient_bytes == pytest.approx(4 * synced.params_per_gpu / 8)
    assert held.gradient_bytes == pytest.approx(4 * held.params_per_gpu)
    assert held.total_bytes - synced.total_bytes == pytest.approx(4 * held.params_per_gpu * 7 / 8)


def test_no_sync_changes_nothing_with_one_microbatch() -> None:
    one = dataclasses.replace(NO_SYNC_LAYOUT, global_batch_size=16)  # 2 x 8: one microbatch
    base = memory_breakdown(KF_70B, one, framework="torchtitan")
    assert memory_breakdown(KF_70B, one, framework="torchtitan", zero3_no_sync=True) == base


@pytest.mark.parametrize("zero", [0, 1, 2])
def test_no_sync_is_refused_below_zero_3(zero: int) -> None:
    # Below full sharding the gradients reduce once per step already (Megatron-Core runs all microbatches
    # but the last under no_sync): the option would mean nothing, so the memory model and the step refuse it.
    lay = dataclasses.replace(NO_SYNC_LAYOUT, zero_stage=zero)
    message = f"zero3_no_sync=True with zero_stage={zero}: skips the per-layer gradient reduce-scatters"
    with pytest.raises(ConfigError, match=message):
        memory_breakdown(KF_70B, lay, framework="torchtitan", zero3_no_sync=True)
    sm = StepModel(KF_70B, h200_nodes(32), options=StepOptions(framework="torchtitan", zero3_no_sync=True))
    with pytest.raises(ConfigError, match=message):
        sm.evaluate(lay)


def test_no_sync_reduce_scatters_once_per_step_and_is_never_slower() -> None:
    cluster = h200_nodes(32)
    steps = [
        StepModel(
            KF_70B, cluster, options=StepOptions(framework="torchtitan", check_memory=False, zero3_no_sync=s)
        ).evaluate(NO_SYNC_LAYOUT)
        for s in (False, True)
    ]
    counts = [sum(c.count for c in st.comms if c.op == "reduce_scatter" and c.dim == "dp") for st in steps]
    assert counts == [4 * 80, 80]  # 4 microbatches x 80 layers, then 80 layers on the last microbatch
    assert steps[1].step_s <= steps[0].step_s
