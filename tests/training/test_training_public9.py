"""The step model against public training figures it was never built on (ninth round), blind.

Each row is one published run with its model, chip or GPU count, layout, sequence length and precision, turned
into tokens/s per chip; the comment above a row quotes its line, the comment after it gives the model's
figure. Tolerance: 15 %. No constant was set from these figures: every row runs the step model's defaults
for its software with the options its source (or the code its source ran) states.

Rows the model misses by more than 15 % are in ``MISSED`` with the measured and predicted figures and the
mechanism the model lacks; they are run (so they stay valid layouts) but not asserted, and
``RECORDED`` keeps the model's figure for each so that a change of mechanism shows (``assert_still_missed``).

Sources
-------
- AI-Hypercomputer/maxtext ``README.md`` @9bc243c ("Fix performance numbers", 2023-10-27; the same table in
  ``MaxText/configs/v5e/README.md`` from 76bd53b), "TPU v5e": TFLOP/sec/chip and MFU of 16B, 32B, 64B and
  128B models on one v5e-256 slice; the runs are ``MaxText/configs/largest_job/{16b,32b,64b,128b}.sh`` of
  the same commit (``global_parameter_scale`` 16-128, ``max_target_length=2048``, ``remat_policy=full``,
  ``per_device_batch_size`` 6 / 4 / 2 / 1; the 128B with ``ici_fsdp_parallelism=16
  ici_tensor_parallelism=16``, the others one FSDP group of the slice), the model shapes from
  ``MaxText/configs/base.yml`` and ``pyconfig.get_individual_scales`` of that commit, and the TFLOP count
  from ``train.py`` ``calculate_training_tflops`` of that commit (6 N per token plus the attention core
  12 a L d s, not halved for causality), turned back into tokens by :func:`maxtext_2023_flops_per_token`.
- allenai/OLMo-core ``README.md`` @5fc1c6b (the parent of 41f8ddc, 2025-03): "Throughput numbers from these
  scripts ... measured on a cluster with NVIDIA H100 GPUs", tokens per second per device, BF16 and
  "BF16/FP8" (torchao float8 linears); the scripts ``src/scripts/train/{OLMo2-1B,OLMo2-7B,Llama3-8B,
  OLMo2-13B}.py`` of that commit: FSDP2 (``DataParallelType.hsdp``, bf16 parameters, fp32 gradient
  reduction), ``torch.compile``, no activation checkpointing, ``rank_microbatch_size`` 8 / 2 / 2 / 1
  sequences of 4,096 tokens, global batch 1,024 (2,048 for 13B) sequences; ``Float8Config`` with
  ``enable_fsdp_float8_all_gather=True``; the shapes from ``nn/transformer/config.py`` (``llama_like``: FFN
  ``int(8 h / 3)`` to a multiple of 256, Llama 3 8B's x 1.3 to a multiple of 1,024) and the Dolma 2
  tokenizer's 100,278 tokens padded to 100,352. The launcher's default is one node (``num_nodes: int =
  1`` in ``internal/experiment.py``): one 8-GPU H100 node, FSDP over its 8 GPUs.
- pytorch/ao ``torchao/float8/README.md`` @8c81863 (2025-03-12, "add perf benchmarks for float8 training
  with rowwise + tensorwise scaling"), "Training benchmarks": torchtitan 0.0.2, "Single-node training on
  8xH100 GPUs", "Batch size 1", "Sequence length 8192", ``torch.compile``, FSDP2, Llama3-8b with per-op SAC:
  "none (bfloat16) ... 6150" and "tensorwise with float8 all-gather ... 7689.5" median tokens/second.
- AI-Hypercomputer/tpu-recipes @c8cfe2f ``training/trillium/Mixtral-8x7B-MaxText/README.md`` (MaxText
  tpu-recipes-v0.1.2, v6e-256, ``mixtral_8x7b_dropped``: per-device batch 12, ``ici_fsdp_parallelism:
  -1``, sequence 4,096, ``capacity_factor: 1.25``, ``megablox: False``, the decoder input and q, k, v, out
  projections offloaded): "completed step: 11, seconds: 13.484, TFLOP/s/device: 302.311, Tokens/s/device:
  3645.203"; MaxText's ``layers/moe.py`` of that tag (``dense_matmul``: with ``capacity_factor > 0`` the
  tokens go to the experts' slots through the one-hot einsums 'BSM,BSEC -> EBCM' and back through 'EBCM,BSEC
  -> BSM'; ``generate_masks``: ceil(s k / E) x c slots an expert per sequence).
- the same repository's ``training/trillium/Llama2-70B-MaxText/README.md`` (tpu-recipes-v0.1.2, v6e-256,
  ``llama2_70b_4096_sc``: FSDP over the slice, ``remat_policy: qkv_proj_offloaded``): "completed step: 16,
  seconds: 9.052, TFLOP/s/device: 402.274, Tokens/s/device: 905.021, total_weights: 2097152", two
  sequences of 4,096 per chip (the workload details say 3; the logged run is the measurement).
- the same repository's ``training/trillium/Mistral-7B-MaxText/README.md`` (tpu-recipes-v0.1.2,
  ``mistral_7b``: per-device batch 6, sequence 8,192, FSDP; "total_weights: 393216" = 6 x 8,192 x 8
  chips, a v6e-8): "completed step: 6, seconds: 6.320, TFLOP/s/device: 431.981, Tokens/s/device:
  7776.813".
- the same repository's ``training/trillium/Gemma3-12B-MaxText/v6e-256/README.md`` (tpu-recipes-v0.1.5,
  ``gemma3_12b_32768_v6e256``: per-device batch 1, sequence 32,768, FSDP, ``remat_policy: custom`` with only
  the decoder input kept; the shape from MaxText's ``configs/models/gemma3-12b.yml`` of that tag, five
  sliding-window layers of 1,024 tokens to every global one, ``layers/gemma3.py``
  ``GEMMA3_ATTENTION_PATTERN``): "completed step: 29, seconds: 7.318, TFLOP/s/device: 349.442,
  Tokens/s/device: 4477.768".
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from tests.missed import assert_still_missed
from tests.training.test_training_public import Row, assert_row_or_says_what_it_misses, fsdp, h100, predict
from tests.training.test_training_public4 import LLAMA3_8B, LLAMA3_8B_FP8_GATHER
from tests.training.test_training_public5 import LLAMA2_70B, MIXTRAL_8X7B
from tests.training.test_training_public8 import NO_FIT, OFFLOAD_8B, v6e
from tests.training.test_training_public8 import fsdp as maxtext_fsdp

from aifabric.cli.sizing import job_cluster
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError
from aifabric.training import ParallelLayout, StepModel
from aifabric.training.flops import (
    attention_core_forward_flops_per_token,
    einsum_dispatch_forward_flops_per_token,
    param_count,
    sliding_window_span,
)
from aifabric.training.models import BytesPerParam, ModelSpec
from aifabric.training.step import StepOptions

# ---------------------------------------------------------------------------- MaxText on TPU v5e, 2023


def maxtext_2023(scale: int) -> ModelSpec:
    """MaxText's model of ``global_parameter_scale`` ``scale`` at 9bc243c: ``base.yml`` (embedding 2,560, 8
    heads of 256, MLP 8,192, 16 layers, one ReLU MLP, vocabulary 32,768, embeddings tied, dropout rate 0)
    scaled by ``get_individual_scales``: log2(scale) = 3 q + r doubles heads and MLP q + (r > 0) times,
    the embedding q + (r > 1) times and the layers q times. 16 -> 32 layers of 5,120 with 32 heads and an
    MLP of 32,768 (16.3 B parameters)."""
    q, r = divmod(int(math.log2(scale)), 3)
    heads, emb = q + (r > 0), q + (r > 1)
    return ModelSpec(
        f"maxtext-{scale}b-2023",
        n_layers=16 * 2**q,
        hidden_size=2560 * 2**emb,
        n_heads=8 * 2**heads,
        head_dim=256,
        ffn_hidden_size=8192 * 2**heads,
        vocab_size=32768,
        seq_len=2048,
        tied_embeddings=True,
        norm="rmsnorm",
        dropout=False,
    )


def maxtext_2023_flops_per_token(model: ModelSpec) -> float:
    """MaxText's count of 9bc243c (``calculate_training_tflops``): 6 N + 12 a L d s per token, N every
    parameter (``calculate_num_params_from_pytree``), the attention not halved for causality."""
    return 6 * param_count(model) + 12 * model.n_heads * model.n_layers * model.head_size * model.seq_len


def v5e_tokens(scale: int, tflops_per_chip: float) -> float:
    """Tokens/s per chip of a row of the v5e table: its TFLOP/s over MaxText's count per token."""
    return tflops_per_chip * 1e12 / maxtext_2023_flops_per_token(maxtext_2023(scale))


def v5e_256() -> ClusterSpec:
    """One v5e-256 slice (16 x 16 chips, 8 a host), as ``--nodes 32`` takes it from the pod."""
    return job_cluster("tpu-v5e-pod", nodes=32)[0]


#: The 128B run: ``ici_fsdp_parallelism=16 ici_tensor_parallelism=16``, one sequence per chip (256 in all).
#: ``base.yml``'s ``activation_embed: tensor`` keeps the activations split over the tensor axis between the
#: layers, so each layer gathers and reduce-scatters them as Megatron's sequence parallelism does.
V5E_128B_LAYOUT = {**maxtext_fsdp(16, 16), "tp": 16, "sequence_parallel": True, "global_batch_size": 256}

# ---------------------------------------------------------------------------- OLMo-core on 8 H100


def gated(
    name: str, layers: int, hidden: int, heads: int, ffn: int, vocab: int, seq: int, **more: Any
) -> ModelSpec:
    """A Llama-like model: gated MLP of ``ffn``, RMSNorm, no dropout; ``more`` the other fields."""
    return ModelSpec(
        name,
        n_layers=layers,
        hidden_size=hidden,
        n_heads=heads,
        ffn_hidden_size=ffn,
        gated_mlp=True,
        vocab_size=vocab,
        seq_len=seq,
        norm="rmsnorm",
        dropout=False,
        **more,
    )


def olmo_core(
    name: str, layers: int, hidden: int, heads: int, ffn: int, kv_heads: int | None = None
) -> ModelSpec:
    """An OLMo-core ``llama_like`` model: SwiGLU of ``ffn``, RMSNorm, untied embeddings, the Dolma 2
    vocabulary padded to 100,352, 4,096 tokens, no dropout (QK-norm's two small norms not modelled)."""
    return gated(name, layers, hidden, heads, ffn, 100352, 4096, n_kv_heads=kv_heads)


#: ``olmo2_1B`` is ``llama2_1B`` (18 layers of 2,048, 16 heads); FFN int(8 x 2,048 / 3) = 5,461 -> 5,632.
OLMO2_1B = olmo_core("olmo2-1b", 18, 2048, 16, 5632)
#: ``olmo2_7B`` = ``llama2_7B``: 32 x 4,096, 32 heads, FFN 10,922 -> 11,008.
OLMO2_7B = olmo_core("olmo2-7b", 32, 4096, 32, 11008)
#: ``llama3_8B``: 32 x 4,096, 32 heads, 8 KV heads, FFN int(1.3 x 10,922) = 14,198 -> 14,336.
OLMO_LLAMA3_8B = olmo_core("llama3-8b-dolma2", 32, 4096, 32, 14336, kv_heads=8)
#: ``olmo2_13B`` = ``llama2_13B``: 40 x 5,120, 40 heads, FFN 13,653 -> 13,824.
OLMO2_13B = olmo_core("olmo2-13b", 40, 5120, 40, 13824)

#: torchtitan 0.0.2 as torchao's README ran it: FSDP2 and torch.compile, one batch a step.
TORCHTITAN = {"framework": "torchtitan"}
#: FSDP2 as OLMo-core wraps it: gradient sync on every microbatch (no ``set_requires_gradient_sync``).
OLMO = {"framework": "torchtitan", "check_memory": False}
OLMO_FP8 = {**OLMO, "fp8": True}


def fp8_gather(model: ModelSpec) -> ModelSpec:
    """``model`` with torchao's FP8 all-gather (``enable_fsdp_float8_all_gather``): one byte a weight."""
    return dataclasses.replace(model, bytes_per_param=BytesPerParam(gathered=1))


def olmo_row(model: ModelSpec, b: int, gbs: int, measured: float, fp8: bool) -> Row:
    """FSDP over one node of 8 H100, ``b`` sequences per GPU, ``gbs`` in all, no activation checkpointing."""
    if fp8:
        return Row(fp8_gather(model), h100(8), fsdp(8, b, gbs, "none"), measured, OLMO_FP8)
    return Row(model, h100(8), fsdp(8, b, gbs, "none"), measured, OLMO)


# ---------------------------------------------------------------------------- MaxText on TPU v6e, 2025

#: MaxText's ``mistral-7b.yml`` (tpu-recipes-v0.1.2): ``mixtral-8x7b.yml``'s shape without experts (32 x
#: 4,096, 32 heads, 8 KV heads, SwiGLU 14,336, vocabulary 32,000, untied), no sliding window in its decoder
#: block; 8,192 tokens in the recipe.
MISTRAL_7B = dataclasses.replace(MIXTRAL_8X7B, name="mistral-7b", n_experts=0, top_k=0, seq_len=8192)
#: MaxText's ``gemma3-12b.yml`` (tpu-recipes-v0.1.5): 48 x 3,840, 16 heads of 256, 8 KV heads, gated GeLU
#: of 15,360, vocabulary 262,144, embeddings tied, ``sliding_window_size: 1024``; ``layers/gemma3.py``'s
#: ``GEMMA3_ATTENTION_PATTERN``: five local layers, then one global; 32,768 tokens in the recipe.
GEMMA3_12B = gated(
    "gemma3-12b",
    48,
    3840,
    16,
    15360,
    262144,
    32768,
    n_kv_heads=8,
    head_dim=256,
    tied_embeddings=True,
    sliding_window=1024,
    global_layer_every=6,
)
#: The recipes' ``remat_policy`` tensors set to ``offload``: Llama 2 70B's ``qkv_proj_offloaded``.
OFFLOAD_QKV = ("query_proj", "key_proj", "value_proj")

# ---------------------------------------------------------------------------- rows

ROWS: dict[str, Row] = {
    # "| 1x v5e-256  | 120              | 61.10% |" (16B): 120 TFLOP/s / 104.1 GFLOP a token = 1,153 T/s
    "maxtext v5e-256 16B": Row(maxtext_2023(16), v5e_256, maxtext_fsdp(256, 6), v5e_tokens(16, 120), NO_FIT),
    # 1,249 (+8.4 %)
    # 32B: "| 1x v5e-256  | 132 ..." (66.86 %)
    "maxtext v5e-256 32B": Row(maxtext_2023(32), v5e_256, maxtext_fsdp(256, 4), v5e_tokens(32, 132), NO_FIT),
    # 652 (-0.4 %)
    # 64B: "| 1x v5e-256  | 118 ..." (59.90 %)
    "maxtext v5e-256 64B": Row(maxtext_2023(64), v5e_256, maxtext_fsdp(256, 2), v5e_tokens(64, 118), NO_FIT),
    # 327 (+11.3 %)
}

_TPU_TP = (
    "the model puts the tensor axis's activation gathers and reduce-scatters (16 chips on a wrapping ring "
    "of the 16 x 16 torus, 5.4 s of the 19.7 s step) on the critical path; the run sets XLA's "
    "--xla_tpu_enable_async_collective_fusion, ..._fuse_all_gather, ..._multiple_steps and "
    "--xla_tpu_overlap_compute_collective_tc, which start those collectives beside independent compute "
    "(the backward's weight-gradient matmuls), and the model has no TPU counterpart of that overlap "
    "(--tp-comm-overlap is Transformer Engine's and refused on a torus); hidden entirely it would give "
    "+4 %"
)
_H100_FSDP = (
    "one DGX H100 node (the launcher's default), nothing crosses a NIC; the model's compute is 80-85 % of "
    "its step, so what it misses is the rate of the GEMMs and kernels of FSDP2 + torch.compile on H100, the "
    "same gap as the llm-foundry and torchtitan H100 FSDP rows of test_training_public (+26-38 %), while "
    "Megatron-LM's H100 rows agree: no per-framework kernel rate on Hopper is modelled"
)
_TORCHAO_README = (
    "one 8-GPU H100 node, FSDP2 + torch.compile as in the OLMo-core rows, with the same unmodelled rate gap, "
    "larger here (one 8,192-token sequence a GPU, no gradient accumulation): the model's FP8 speed-up, "
    "11478 / 8922 = 1.29, is near the measured 7689.5 / 6150 = 1.25, so what is missing is common to BF16 "
    "and FP8 and is not the float8 recipe"
)
_FP8_TORCHAO = (
    "; torchao's float8 casts are charged as torchao's roofline sizes them (an amax pass and a cast pass, "
    "6 bytes an element: 77003 / 16556 / 15623 / 8520 before), but its two backward GEMMs run without fast "
    "accumulation (torchao config.py: gemm_config_grad_input and gemm_config_grad_weight use_fast_accum="
    "False) where the model times every FP8 GEMM at the fast-accumulation cuBLASLt rate: no measurement "
    "of H100 FP8 GEMMs without fast accumulation is in the catalogue"
)
_V6E = (
    "the v6e rows of test_training_public8 are fast by the same 19-40 %: the v6e GEMM rate is one "
    "8192-cube timed from the device trace (827 TFLOP/s, 0.90), with no sustained-clock or splash-attention "
    "measurement on v6e; MaxText's own MFU on v6e (35-50 %, tiering.md) sits well under v5e's (56-67 %) "
    "on the same code"
)
_MIXTRAL = (
    "the step now runs the recipe's 'dropped' experts (megablox False, sparse_matmul False) through "
    "GShard's dispatch and combine einsums (moe_dispatcher 'einsum': 4 h E C = 167.8 MFLOP a token and "
    "layer forward, 1.5 x that backward, at the experts' GEMM rate), 5,111 (+40.2 %) without them; what "
    "is left is the v6e's: " + _V6E
)
_GEMMA = (
    "the step now runs Gemma 3's five local layers of six over their 1,024-token window (ModelSpec."
    "sliding_window, 2,016 keys a query in the whole-sequence count) and the global ones over all 32,768 "
    "tokens, a mean span of 0.218 of the sequence: 3,780 (-15.6 %) when every layer attended to all of "
    "it, so that agreement was the attention overcount hiding what the other v6e rows miss; " + _V6E
)

#: (row, what the model lacks) of the rows outside 15 %; the model's figure is in ``RECORDED``.
_MISSED_ROWS: dict[str, tuple[Row, str]] = {
    # 128B: "| 1x v5e-256  | 110 | 56.06% |"
    "maxtext v5e-256 128B TP16": (
        Row(maxtext_2023(128), v5e_256, V5E_128B_LAYOUT, v5e_tokens(128, 110), NO_FIT),
        _TPU_TP,
    ),
    # "| **1B**  | OLMo-1124 | 4096 | BF16 | 55,000 TPS | `OLMo2-1B.py` | |"
    "olmo-core 1B bf16": (olmo_row(OLMO2_1B, 8, 1024, 55000, fp8=False), _H100_FSDP),
    # "| | | 4096 | BF16/FP8[^2] | 65,000 TPS | `OLMo2-1B.py` | `--train_module.float8_config.enabled=true` |"
    "olmo-core 1B fp8": (olmo_row(OLMO2_1B, 8, 1024, 65000, fp8=True), _H100_FSDP + _FP8_TORCHAO),
    # "| **7B**  | OLMo-1124 | 4096 | BF16 | 10,000 TPS | `OLMo2-7B.py` | |"
    "olmo-core 7B bf16": (olmo_row(OLMO2_7B, 2, 1024, 10000, fp8=False), _H100_FSDP),
    # "| | | 4096 | BF16/FP8 | 13,000 TPS | `OLMo2-7B.py` | ..."
    "olmo-core 7B fp8": (olmo_row(OLMO2_7B, 2, 1024, 13000, fp8=True), _H100_FSDP + _FP8_TORCHAO),
    # "| **8B**  | Llama | 4096 | BF16 | 9,500 TPS | `Llama3-8B.py` | |"
    "olmo-core Llama 8B bf16": (olmo_row(OLMO_LLAMA3_8B, 2, 1024, 9500, fp8=False), _H100_FSDP),
    # "| | | 4096 | BF16/FP8 | 12,500 TPS | `Llama3-8B.py` | ..."
    "olmo-core Llama 8B fp8": (olmo_row(OLMO_LLAMA3_8B, 2, 1024, 12500, fp8=True), _H100_FSDP + _FP8_TORCHAO),
    # "| **13B** | OLMo-1124 | 4096 | BF16 | 4,600 TPS | `OLMo2-13B.py` | |"
    "olmo-core 13B bf16": (olmo_row(OLMO2_13B, 1, 2048, 4600, fp8=False), _H100_FSDP),
    # "| | | 4096 | BF16/FP8 | 5,500 TPS | `OLMo2-13B.py` | ..."
    "olmo-core 13B fp8": (olmo_row(OLMO2_13B, 1, 2048, 5500, fp8=True), _H100_FSDP + _FP8_TORCHAO),
    # torchao README @8c81863: "| Llama3-8b     |  none (bfloat16)                   | per op SAC
    # | 47.65             |  6150                | -"
    "torchao README Llama3-8b 8 H100 bf16": (
        Row(LLAMA3_8B, h100(8), fsdp(8, 1, 8, "selective"), 6150, TORCHTITAN),
        _TORCHAO_README,
    ),
    # "| Llama3-8b     |  tensorwise with float8 all-gather | per op SAC               | 47.77             |
    # 7689.5              | 25.03%"
    "torchao README Llama3-8b 8 H100 fp8 tensorwise": (
        Row(LLAMA3_8B_FP8_GATHER, h100(8), fsdp(8, 1, 8, "selective"), 7689.5, {**TORCHTITAN, "fp8": True}),
        _TORCHAO_README,
    ),
    # Mixtral 8x7B v6e-256: "Tokens/s/device: 3645.203"
    "maxtext v6e-256 Mixtral 8x7B dropped": (
        Row(
            MIXTRAL_8X7B,
            lambda: v6e(256),
            maxtext_fsdp(256, 12),
            3645.203,
            {**NO_FIT, "host_offload": OFFLOAD_8B, "capacity_factor": 1.25, "moe_dispatcher": "einsum"},
        ),
        _MIXTRAL,
    ),
    # Llama 2 70B v6e-256: "total_weights: 2097152" (2 sequences a chip), "Tokens/s/device: 905.021"
    "maxtext v6e-256 Llama 2 70B": (
        Row(
            LLAMA2_70B,
            lambda: v6e(256),
            maxtext_fsdp(256, 2),
            905.021,
            {**NO_FIT, "host_offload": OFFLOAD_QKV},
        ),
        _V6E,
    ),
    # Mistral 7B v6e-8: "Tokens/s/device: 7776.813"
    "maxtext v6e-8 Mistral 7B": (
        Row(MISTRAL_7B, lambda: v6e(8), maxtext_fsdp(8, 6), 7776.813, {**NO_FIT, "host_offload": OFFLOAD_8B}),
        _V6E,
    ),
    # Gemma 3 12B v6e-256, 32,768 tokens: "Tokens/s/device: 4477.768"
    "maxtext v6e-256 Gemma 3 12B 32k": (
        Row(GEMMA3_12B, lambda: v6e(256), maxtext_fsdp(256, 1), 4477.768, NO_FIT),
        _GEMMA,
    ),
}

#: The model's tokens/s per chip for each missed row when it was recorded.
RECORDED: dict[str, float] = {
    "maxtext v5e-256 128B TP16": 116,  # -15.9 %
    "olmo-core 1B bf16": 63848,  # +16.1 %
    "olmo-core 1B fp8": 74629,  # +14.8 %
    "olmo-core 7B bf16": 12078,  # +20.8 %
    "olmo-core 7B fp8": 16168,  # +24.4 %
    "olmo-core Llama 8B bf16": 11337,  # +19.3 %
    "olmo-core Llama 8B fp8": 15257,  # +22.1 %
    "olmo-core 13B bf16": 6012,  # +30.7 %
    "olmo-core 13B fp8": 8358,  # +52.0 %
    "torchao README Llama3-8b 8 H100 bf16": 8922,  # +45.1 %
    "torchao README Llama3-8b 8 H100 fp8 tensorwise": 11478,  # +49.3 %
    "maxtext v6e-256 Mixtral 8x7B dropped": 4783,  # +31.2 %; 5,111 (+40.2 %) before the einsum dispatch
    "maxtext v6e-256 Llama 2 70B": 1254,  # +38.5 %
    "maxtext v6e-8 Mistral 7B": 9238,  # +18.8 %
    "maxtext v6e-256 Gemma 3 12B 32k": 5984,  # +33.6 %; 3,780 (-15.6 %) before the sliding window
}

MISSED: dict[str, tuple[Row, str]] = {
    name: (
        row,
        f"{row.measured:.0f} vs {RECORDED[name]:.0f} ({RECORDED[name] / row.measured - 1:+.1%}): {why}",
    )
    for name, (row, why) in _MISSED_ROWS.items()
}


@pytest.mark.parametrize("name", [*ROWS, *MISSED])
def test_public_training_ninth_round(name: str) -> None:
    assert_row_or_says_what_it_misses(name, ROWS, MISSED)


@pytest.mark.parametrize("name", _MISSED_ROWS)
def test_missed_rows_are_still_missed_by_what_was_recorded(name: str) -> None:
    row, _ = _MISSED_ROWS[name]
    assert_still_missed(predict(row), RECORDED[name], row.measured)


def test_maxtext_2023_shapes_are_the_table_sizes() -> None:
    # The README names the models by size: 16B, 32B, 64B, 128B (global_parameter_scale of each).
    sizes = [param_count(maxtext_2023(s)) / 1e9 for s in (16, 32, 64, 128)]
    assert sizes == pytest.approx([16, 32, 64, 128], rel=0.02)


def test_maxtext_2023_count_by_hand() -> None:
    # 16B: N = 32 x (4 x 5,120 x 8,192 + 2 x 5,120 x 32,768 + 2 x 5,120) + 32,768 x 5,120 + 5,120
    #        = 16,274,232,320; attention 12 x 32 x 32 x 256 x 2,048 = 6,442,450,944 -> 104.09 GFLOP a token.
    assert param_count(maxtext_2023(16)) == 16_274_232_320
    assert maxtext_2023_flops_per_token(maxtext_2023(16)) == 6 * 16_274_232_320 + 6_442_450_944
    # MFU check of the table: 120 TFLOP/s / 197 = 60.9 % ("61.10%"; the table's TFLOP/s is rounded).
    assert v5e_tokens(16, 120) == pytest.approx(1152.9, abs=0.1)


def test_olmo_shapes_are_their_names() -> None:
    # OLMo 2 7B: 7.30 B parameters, 13B: 13.7 B (allenai/OLMo-2-1124-{7,13}B model cards).
    assert param_count(OLMO2_7B) / 1e9 == pytest.approx(7.30, abs=0.05)
    assert param_count(OLMO2_13B) / 1e9 == pytest.approx(13.7, abs=0.1)


def test_recipe_rows_are_their_log_lines() -> None:
    # tokens/s/device = the line's total_weights (tokens of the step) / chips / seconds. Mixtral: 12 x 4,096
    # per chip, the recipe's batch. Llama 2 70B: 2,097,152 / 256 = 8,192 = 2 x 4,096 per chip, not the 3 of
    # the README's workload details: the row takes the logged run's 2.
    assert pytest.approx(3645.203, rel=1e-3) == 12582912 / 256 / 13.484 and 12582912 == 256 * 12 * 4096
    assert pytest.approx(905.021, rel=1e-3) == 2097152 / 256 / 9.052
    assert pytest.approx(7776.813, rel=1e-3) == 393216 / 8 / 6.320
    assert pytest.approx(4477.768, rel=1e-3) == 8388608 / 256 / 7.318


def test_rows_and_misses_are_disjoint() -> None:
    assert not set(ROWS) & set(MISSED)


# ---- Gemma 3's sliding window: the attention core of its local layers spans the window, not the sequence


def test_gemma3_attention_core_is_its_layers_mean_span() -> None:
    # 8 global layers over 32,768 keys, 40 local over (2 x 32,768 x 1,024 - 1,024^2 + 1,024) / 32,769 =
    # 2,015.97: the mean span is 7,141.3 keys, 16 heads x 256 x 4 FLOPs each.
    span = (8 * 32768 + 40 * (2 * 32768 * 1024 - 1024**2 + 1024) / 32769) / 48
    assert span == pytest.approx(7141.3, abs=0.1)
    assert attention_core_forward_flops_per_token(GEMMA3_12B) == pytest.approx(4 * span * 16 * 256)
    assert GEMMA3_12B.n_local_attention_layers == 40


def test_a_window_as_long_as_the_sequence_changes_nothing() -> None:
    full = dataclasses.replace(GEMMA3_12B, sliding_window=0, global_layer_every=0)
    long = dataclasses.replace(GEMMA3_12B, sliding_window=32768)
    assert attention_core_forward_flops_per_token(long) == attention_core_forward_flops_per_token(full)
    assert attention_core_forward_flops_per_token(full) == 4 * 32768 * 16 * 256


def test_the_window_pairs_are_counted_exactly() -> None:
    # s = 8, w = 3: queries reach 1, 2, 3, 3, 3, 3, 3, 3 keys = 21 pairs; causal over all: 36 pairs of the
    # whole-sequence count's 64, so the window's span is 8 x 21 / 36 = 4.667 keys.
    assert sliding_window_span(8, 3) == pytest.approx(8 * 21 / 36)


def test_the_sliding_window_is_mistral_and_gemma_alike() -> None:
    # Mistral 7B v0.1: every layer local (4,096); Gemma 2: every second layer global.
    mistral = dataclasses.replace(MISTRAL_7B, sliding_window=4096)
    gemma2 = dataclasses.replace(GEMMA3_12B, n_layers=42, global_layer_every=2)
    assert mistral.n_local_attention_layers == 32 and gemma2.n_local_attention_layers == 21


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"global_layer_every": 6}, "global_layer_every=6 needs a sliding_window"),
        ({"sliding_window": -1}, "sliding_window must be an integer >= 0"),
        ({"sliding_window": 1024, "global_layer_every": 1.5}, "global_layer_every must be an integer >= 0"),
    ],
)
def test_sliding_window_fields_are_checked(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        ModelSpec("m", n_layers=2, hidden_size=64, n_heads=4, vocab_size=8, seq_len=128, **fields)


# ---- MaxText's dropping MoE: GShard's one-hot dispatch and combine are matrix products


def test_einsum_dispatch_flops_by_hand() -> None:
    # Mixtral 8x7B, 4,096 tokens, c = 1.25: C = ceil(4,096 x 2 / 8) x 1.25 = 1,280 slots; dispatch and
    # combine each 2 x 4,096 x 8 x 1,280 = 83.9 MFLOP a token.
    assert einsum_dispatch_forward_flops_per_token(MIXTRAL_8X7B, 1.25) == 2 * 2 * 4096 * 8 * 1280


def test_einsum_dispatch_adds_its_flops_to_the_step() -> None:
    # The dispatch is 5 einsums a layer (2 forward, 3 backward) plus the 2 the full recomputation repeats:
    # 7 x 83.9 MFLOP a token x 32 layers x 49,152 tokens a chip = 0.924 PFLOP at the MoE GEMM rate.
    row, _ = _MISSED_ROWS["maxtext v6e-256 Mixtral 8x7B dropped"]
    plain = {k: v for k, v in row.options.items() if k != "moe_dispatcher"}
    with_ein = StepModel(row.model, row.cluster(), options=StepOptions(**row.options))
    without = StepModel(row.model, row.cluster(), options=StepOptions(**plain))
    layout = ParallelLayout(**row.layout)
    added = with_ein.evaluate(layout).breakdown_s["compute"] - without.evaluate(layout).breakdown_s["compute"]
    flops = 7 / 2 * einsum_dispatch_forward_flops_per_token(MIXTRAL_8X7B, 1.25) * 32 * 12 * 4096
    rate = with_ein.gemm_rates(layout, 12 * 4096).moe_fwd
    assert added == pytest.approx(flops / rate, rel=1e-6)


def test_einsum_dispatch_needs_a_capacity() -> None:
    with pytest.raises(ConfigError, match="moe_dispatcher 'einsum' fills capacity slots"):
        StepOptions(moe_dispatcher="einsum")
