"""The step model against published training throughput it was never built on (ZeRO-3/FSDP, TP/PP/CP).

Each row is one line of a public table: model, GPU, GPU count, layout (TP/PP/CP/DP, VP, ZeRO stage or
FSDP), global and micro batch, sequence length, precision, and the measured tokens/s per GPU (or MFU).
The comment above each group names the table; the row's last field quotes its figure. Tolerance: 15 %.
No constant was set from these tables; every row runs the model's defaults for its software (FlashAttention,
overlapped gradient reduction, ZeRO-3 prefetch of one layer; fused element-wise kernels, or the Llama code's
eager operators for torchtitan without torch.compile), with the memory check off only where the
GPU's capacity is not what the table's machine had or the table gives no recompute setting (stated per
group). Since the H100 and GB200 profiles charge the power limit (gpu-fryer's sustained GEMM) and the H100's
attention core runs at FlashAttention-2's measured rate (``aifabric.training.efficiency``), the compute-bound
H100 rows moved 4-33 % down; the A100 rows did not move (no limit charged, no attention figure recorded).
Since the B200 and GB200 time their GEMMs by shape (OpenXLA's B200 table) and every table is read against its
own best shape (``StepModel.gemm_rates``), the H100 rows moved 0-2 % down and the dense GB200 rows 0-1 %.

Rows the model misses by more than 15 % are in ``MISSED`` with the measured and predicted figures and the
mechanism the model lacks; they are run (so they stay valid layouts) but not asserted.

Sources
-------
- mosaicml/llm-foundry ``scripts/train/benchmarking/README.md`` @061f2c7, "MPT Training Benchmarks":
  tables "A100 80GB with 1600 Gbps node-node interconnect (RoCE)", "A100 40GB with 1600 Gbps ...",
  "H100 80GB BF16"; PyTorch FSDP FULL_SHARD (ZeRO-3), column "Throughput (T/s/GPU)".
- pytorch/torchtitan ``docs/performance.md`` @0413364 (Llama 3 on 64 A100 80GB, FSDP2) and @eaea6f6
  (Llama 3.1 on H100 96GB HBM2e at a 500 W power limit, Grand Teton, 400 Gb/s per GPU), column "WPS" or
  "TPS/GPU".
- foundation-model-stack/fms-fsdp ``README.md`` @0d31998: 128 A100, 400 Gb/s per node, "token/gpu/sec".
- NVIDIA/NeMo ``docs/source/performance/performance_summary.md`` @070a0bb (NeMo 24.07, DGX-H100, FP8).
- NVIDIA-NeMo/Megatron-Bridge ``docs/performance-summary-archive.md`` @0a25f91, "25.09 NeMo Container",
  "25.11 NeMo Container" and "26.02 NeMo Container" (DGX-H100, DGX-B200, DGX-GB200, FP8).
- Llama Team, "The Llama 3 Herd of Models", arXiv:2407.21783, Table 4 (BF16 MFU on 8,192 and 16,384 H100,
  sequences of 8,192 and 131,072 tokens).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.package_data import load_package_yaml
from aifabric.training import ParallelLayout, StepModel, get_model
from aifabric.training.efficiency import compute_profile
from aifabric.training.models import BytesPerParam, ModelSpec
from aifabric.training.step import StepOptions

DATA = Path(__file__).parent / "data"


class Row(NamedTuple):
    """One published line: model, cluster, layout and options, and the measured figure."""

    model: ModelSpec
    cluster: Callable[[], ClusterSpec]
    layout: dict[str, Any]
    measured: float
    options: dict[str, Any] = {}
    metric: str = "tokens_per_s_per_gpu"  # or "mfu"


def predict(row: Row) -> float:
    """The model's figure for ``row``, in the unit of its ``metric``."""
    spec = row.cluster()
    step = StepModel(row.model, spec, options=StepOptions(**row.options)).evaluate(
        ParallelLayout(**row.layout)
    )
    return step.mfu if row.metric == "mfu" else step.tokens_per_s / spec.n_gpus


def assert_within_15_percent(row: Row) -> None:
    """The model's figure for ``row`` is within 15 % of the published one."""
    assert predict(row) == pytest.approx(row.measured, rel=0.15)


def assert_runs_and_says_what_it_misses(row: Row, why: str) -> None:
    """A missed row still runs and its reason quotes "measured vs predicted"."""
    assert predict(row) > 0
    assert " vs " in why


def assert_row_or_says_what_it_misses(
    name: str, rows: dict[str, Row], missed: dict[str, tuple[Row, str]]
) -> None:
    """Row ``name`` is within 15 % if it is in ``rows``, else it runs and its reason in ``missed`` says
    "measured vs predicted"."""
    if name in rows:
        assert_within_15_percent(rows[name])
    else:
        assert_runs_and_says_what_it_misses(*missed[name])


def mpt(n_layers: int, hidden: int, heads: int, seq_len: int) -> ModelSpec:
    """An MPT model of llm-foundry (``scripts/train/yamls/pretrain/mpt-*.yaml``): GeLU MLP of width 4h, no
    biases, LayerNorm, ALiBi (no position embeddings), tied embeddings, vocabulary 50,368, no dropout. The
    table's NumParams column checks the shape (70b: 64.86 B; 12 l h^2 + V h = 64.84 B)."""
    return ModelSpec(
        name=f"mpt-{n_layers}x{hidden}",
        n_layers=n_layers,
        hidden_size=hidden,
        n_heads=heads,
        vocab_size=50368,
        seq_len=seq_len,
        tied_embeddings=True,
        dropout=False,
    )


MPT_70B, MPT_30B, MPT_13B, MPT_7B = (80, 8192, 64), (48, 7168, 56), (40, 5120, 40), (32, 4096, 32)
LLAMA3_8B, LLAMA3_70B, LLAMA3_405B = get_model("llama3-8b"), get_model("llama3-70b"), get_model("llama3-405b")
# Llama 2 34B shape (codellama/CodeLlama-34b-hf config.json: hidden 8192, 48 layers, 64 heads, 8 KV heads,
# SwiGLU 22,016; vocabulary 32,000 as Llama 2), the "34b" of fms-fsdp.
LLAMA2_34B = dataclasses.replace(
    ModelSpec.from_yaml(DATA / "llama2-70b.yaml"), name="llama2-34b", n_layers=48, ffn_hidden_size=22016
)


def a100(gpus: int) -> Callable[[], ClusterSpec]:
    """DGX A100 80 GB nodes, 8 x 200 Gb/s per node (MosaicML's "1600 Gbps node-node", there RoCE)."""
    return lambda: preset("megatron-a100", gpus=gpus)


def a100_40gb(gpus: int) -> Callable[[], ClusterSpec]:
    """As :func:`a100` with the 40 GB part (same GA100 die and clocks)."""
    return lambda: preset("megatron-a100", gpus=gpus, **{"accelerator": "a100-sxm-40gb"})


def h100(gpus: int, **changes: Any) -> Callable[[], ClusterSpec]:
    """DGX H100 nodes, 8 x 400 Gb/s InfiniBand per node."""
    return lambda: preset("dgx-h100-superpod", gpus=gpus, **changes)


def b200(gpus: int) -> Callable[[], ClusterSpec]:
    """DGX B200 nodes (8 x B200, NVLink 5 through NVSwitch, 8 x 400 Gb/s ConnectX-7 per node: DGX B200
    datasheet), on the DGX SuperPOD fabric of :func:`h100`."""
    return lambda: preset("dgx-h100-superpod", gpus=gpus, **{"accelerator": "b200"})


def gb200_racks(racks: int, gpus_per_rack: int = 64) -> Callable[[], ClusterSpec]:
    """GB200 NVL72 racks, ``gpus_per_rack`` of each in the job as one NVLink domain. The tables' GPU counts
    (64, 128, 256) are multiples of 64, not 72, and the gb200-nvl72 preset refuses a job on part of a rack,
    so each rack enters as a 64-GPU domain (16 trays of 4, one NIC per GPU)."""
    data = load_package_yaml("aifabric.cluster.presets", "gb200-nvl72.yaml")
    gpus = racks * gpus_per_rack
    return lambda: ClusterSpec.from_dict(
        {**data, "gpus": gpus, "scale_up": {"kind": "nvswitch", "gpus": gpus_per_rack}}
    )


def fms_cluster() -> ClusterSpec:
    return ClusterSpec.from_yaml(DATA / "fms-fsdp-a100-400g.yaml")


def fsdp(dp: int, b: int, gbs: int, recompute: str, **more: Any) -> dict[str, Any]:
    """A ZeRO-3 / FSDP FULL_SHARD layout over ``dp`` GPUs."""
    return dict(dp=dp, microbatch_size=b, global_batch_size=gbs, zero_stage=3, recompute=recompute, **more)


def megatron(
    tp: int, pp: int, dp: int, v: int, b: int, gbs: int, cp: int = 1, zero: int = 1
) -> dict[str, Any]:
    """A Megatron-LM layout: sequence parallelism on, the distributed optimizer (ZeRO-1) unless ``zero``."""
    return dict(
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        virtual_pipeline_stages=v,
        sequence_parallel=True,
        microbatch_size=b,
        global_batch_size=gbs,
        zero_stage=zero,
    )


_NO_MEM = {"check_memory": False}
_MEGATRON_FP8 = {"fp8": True, "tp_comm_overlap": True, "check_memory": False}
_FP8 = {"fp8": True, "check_memory": False}
#: Megatron-Bridge's FP8 recipes gather FP8 parameters and reduce bf16 gradients: NVIDIA-NeMo/Megatron-Bridge
#: v0.1.0rc4 (25.09) and v0.2.0 (25.11) ``src/megatron/bridge/training/mixed_precision.py``
#: (``bf16_with_fp8_current_scaling_mixed`` and ``bf16_with_fp8_delayed_scaling_mixed``: ``fp8_param_gather =
#: True``) and ``scripts/performance`` (``grad_reduce_in_fp32: false``). Megatron-FSDP then shards and
#: gathers the FP8 weights (1 byte), with no per-gather cast.
MB_FP8_PARAMS = BytesPerParam(grads=2, gathered=1)


def mb_fp8(model: ModelSpec) -> ModelSpec:
    """``model`` with Megatron-Bridge's FP8 parameter gather and bf16 gradients (:data:`MB_FP8_PARAMS`)."""
    return dataclasses.replace(model, bytes_per_param=MB_FP8_PARAMS)


_LLAMA3 = {"tp_comm_overlap": True, "embedding_chunks": True}
#: Megatron-Bridge's GB200 Megatron-FSDP recipe for Llama 3 70B FP8-CS (v0.1.0rc4 scripts/performance/configs/
#: llama3/llama3_70b_llm_pretrain.yaml gb200 fp8_cs, v0.2.0 LLAMA3_70B_GB200_FP8_CS_BASE_CONFIG): no
#: recomputation, cpu_offloading_num_layers 40 (utils/helpers.py set_recompute_overrides: cpu_offloading True,
#: activations only), and run_script.py / llama3_llm_pretrain.py turn gradient-accumulation fusion off for
#: Megatron-FSDP at 8B and 70B.
MB_GB200_OFFLOAD_70B = {"fp8": True, "gradient_accumulation_fusion": False, "offload_layers": 40}
#: The 405B recipe (v0.1.0rc4 llama31_405b_llm_pretrain.yaml gb200 num_gpus_128 fp8_cs: tp 2, Megatron-FSDP,
#: cpu_offloading_num_layers 95 of 126); fusion stays on (run_script.py turns it off at 8B and 70B only).
MB_GB200_OFFLOAD_405B = {"fp8": True, "tp_comm_overlap": True, "offload_layers": 95}
#: Why the Megatron-Bridge GB200 FSDP rows run ahead once timed as their recipes ran them.
MB_GB200_FSDP = (
    "Before, the row was asserted with full recomputation, the only one of the model's settings that fits "
    "without offload, which its recipe does not run. With the recipe's layout the step has no recomputed "
    "forward, and the CPU-offload copies (one layer's saved activations of a microbatch: 3.6 GB at 70B b2, "
    "8.1 ms over NVLink-C2C at 450 GB/s per direction; 1.7 GB, 3.8 ms at 405B b1 TP2) hide behind "
    "Transformer Engine's windows of one or two layers (70B: 14.0 ms of forward, 27.8 ms of backward a "
    "layer), so none of them is exposed. What runs slower in the measurement is not identified: not the "
    "link (the 70B copies show only below about 260 GB/s per direction, and at 128 GB/s cost 1.5 %), and "
    "the HBM traffic of the copies beside the memory-bound kernels, not modelled, is about 1 % of the step "
    "at the full HBM rate. NeMo 25.04's 70B run on the same rack without offload or recomputation (b1, "
    "test_training_public5) is +13.8 % in the model too"
)
#: torchtitan without torch.compile: Meta's Llama code in eager PyTorch (aifabric.training.elementwise), and
#: its op-level selective checkpointing and upcast loss (aifabric.training.memory.FRAMEWORKS).
TITAN_EAGER = {"elementwise": "llama-eager", "framework": "torchtitan"}

#: The A100 profile for the 40 GB part (compute.yaml has the 80 GB one: same die, clocks and tensor cores).
A100_40GB_OPTS = {"compute": compute_profile("a100-sxm-80gb")}

ROWS: dict[str, Row] = {
    # llm-foundry, A100 80GB table: Model | SeqLen | #GPUs | MicroBatchSize | GradAccum | GlobalBatchSize |
    # Activation Checkpointing | Throughput (T/s/GPU).
    "llm-foundry A100-80GB mpt-70b 2048 64 GPUs b8 AC": Row(
        mpt(*MPT_70B, 2048), a100(64), fsdp(64, 8, 2048, "full"), 410
    ),  # model 409
    "llm-foundry A100-80GB mpt-30b 2048 8 GPUs b3 AC": Row(
        mpt(*MPT_30B, 2048), a100(8), fsdp(8, 3, 504, "full"), 916
    ),  # model 867
    "llm-foundry A100-80GB mpt-13b 2048 8 GPUs b2 no AC": Row(
        mpt(*MPT_13B, 2048), a100(8), fsdp(8, 2, 48, "none"), 2262
    ),  # model 2529
    "llm-foundry A100-80GB mpt-7b 2048 8 GPUs b6 no AC": Row(
        mpt(*MPT_7B, 2048), a100(8), fsdp(8, 6, 96, "none"), 4641
    ),  # model 4965
    # llm-foundry, A100 40GB table (bf16 PURE, FULL_SHARD, AC on).
    "llm-foundry A100-40GB mpt-70b 2048 128 GPUs b4": Row(
        mpt(*MPT_70B, 2048), a100_40gb(128), fsdp(128, 4, 512, "full"), 376, A100_40GB_OPTS
    ),  # model 400
    "llm-foundry A100-40GB mpt-30b 2048 32 GPUs b4": Row(
        mpt(*MPT_30B, 2048), a100_40gb(32), fsdp(32, 4, 128, "full"), 857, A100_40GB_OPTS
    ),  # model 857
    "llm-foundry A100-40GB mpt-13b 2048 64 GPUs b16": Row(
        mpt(*MPT_13B, 2048), a100_40gb(64), fsdp(64, 16, 1024, "full"), 1976, A100_40GB_OPTS
    ),  # model 1989
    "llm-foundry A100-40GB mpt-7b 2048 128 GPUs b18": Row(
        mpt(*MPT_7B, 2048), a100_40gb(128), fsdp(128, 18, 2304, "full"), 3623, A100_40GB_OPTS
    ),  # model 3751
    # llm-foundry, H100 80GB BF16 table: the one H100 row within 15 % (the others are in MISSED, H100_RATE).
    # Its products (b = 14: 28,672 rows by h = 7,168) run at 98 % of the sustained 730 TFLOP/s; it came
    # inside the bar when the table was read against its own best shape (810 TFLOP/s) instead of the MAMF
    # figure (794.5), a 2 % step down for every H100 GEMM.
    "llm-foundry H100 mpt-30b 2048 32 GPUs b14 AC": Row(
        mpt(*MPT_30B, 2048), h100(32), fsdp(32, 14, 1344, "full"), 2308
    ),  # model 2649 (+14.8 %; 2702 with the table read against the MAMF figure, 2976 before the power limit)
    # torchtitan @0413364 "Llama 3 performance numbers": FSDP2 on 64 A100 80GB, local batch 1 (global 64),
    # sequence 8,192: "| 70B | 1 | full | 331 | 51.7% |", "| 8B | 1 | selective op | 2973 | 58.2% |". Eager
    # PyTorch (train_configs/llama3_*.toml of the time: compile = false): the Llama code's element-wise
    # operators one kernel each (TITAN_EAGER).
    "torchtitan Llama 3 70B 64 A100 FSDP b1 full AC": Row(
        LLAMA3_70B, a100(64), fsdp(64, 1, 64, "full"), 331, TITAN_EAGER
    ),  # model 314 (321 before FSDP2's copies; 341 with fused kernels)
    "torchtitan Llama 3 8B 64 A100 FSDP b1 selective op": Row(
        LLAMA3_8B, a100(64), fsdp(64, 1, 64, "selective"), 2973, TITAN_EAGER
    ),  # model 2899 (-2.5 %; 2967 before FSDP2's copies; 3342 with fused kernels; 3115 with Megatron's
    # selective recompute, which repeats the attention core, not the element-wise operators). torchtitan's
    # 'selective op' AC saves the SDPA output and every other matmul output and recomputes the rest: wk, wo
    # and w3 (159.4 MFLOP per token, against the core's 134.2) and every element-wise operator of the layer,
    # eager
    # fms-fsdp README: "| 34b | 128 * A100 | FSDP | True | 8 | **772 token/gpu/sec** |" (sequence 4,096).
    "fms-fsdp Llama 2 34B 128 A100 FSDP b8 AC": Row(LLAMA2_34B, fms_cluster, fsdp(128, 8, 1024, "full"), 772),
    # model 741
    # ---- FP8 (Transformer Engine): the linear GEMMs at the measured cuBLASLt FP8 rate (compute.yaml,
    # fp8_gemm_efficiency), the cast_transpose bytes charged; the BF16 parts at the power-limited rate and
    # the H100's attention core at FlashAttention-2's measured rate (TE_ATTENTION below). Memory not
    # checked: the tables give no recompute or offload setting.
    # Megatron-Bridge 25.09, DGX-H100: "| LLAMA3_8B | 8 | 128 | 1 | 8192 | 8 | 1 | 1 | 1 | n/a | 1 | 16 |
    # 14079 | 725 |" (FSDP 8). The recipe (Megatron-Bridge v0.1.0rc4 scripts/performance/run_script.py) turns
    # gradient-accumulation fusion off for Megatron-FSDP at 8B and 70B.
    "Megatron-Bridge 25.09 Llama 3 8B 8 H100 FSDP fp8": Row(
        mb_fp8(LLAMA3_8B),
        h100(8),
        fsdp(8, 1, 128, "none"),
        14079,
        {**_FP8, "gradient_accumulation_fusion": False},
    ),  # model 13330 (12543 gathering bf16 and casting per gather; 13249 before the weight passes)
    # NeMo 24.07: "| GPT3-175B | 512 | 2048 | 2 | 2048 | 4 | 8 | 1 | 6 | 782 | 842 |".
    "NeMo 24.07 GPT-3 175B 512 H100 TP4 PP8 VP6 fp8": Row(
        get_model("gpt3-175b"), h100(512), megatron(4, 8, 16, 6, 2, 2048), 782, _MEGATRON_FP8
    ),  # model 874 (+11.8 %; 892 before the userbuffer chunks, 917 before)
    # NeMo 24.07: "| LLAMA3-70B | 64 | 128 | 1 | 8192 | 4 | 4 | 2 | 5 | 1533 | 738 |".
    "NeMo 24.07 Llama 3 70B 64 H100 TP4 PP4 CP2 VP5 fp8": Row(
        LLAMA3_70B, h100(64), megatron(4, 4, 2, 5, 1, 128, cp=2), 1533, _MEGATRON_FP8
    ),  # model 1713 (+11.7 %; 1744 before the userbuffer chunks, 1908 before)
    # Megatron-Bridge 25.09, DGX-H100: "| LLAMA3.1_405B | 1024 | 512 | 1 | 8192 | 0 | 8 | 8 | 2 | 8 | 1 | 64 |
    # 302 | 763 |".
    "Megatron-Bridge 25.09 Llama 3.1 405B 1024 H100 TP8 PP8 CP2 VP8 fp8": Row(
        LLAMA3_405B, h100(1024), megatron(8, 8, 8, 8, 1, 512, cp=2), 302, _MEGATRON_FP8
    ),  # model 316 (+4.7 %; 330 before the userbuffer chunks, 350 before)
    # Blind rows (added after the power limit and the attention figure; never used to set anything).
    # Megatron-Bridge 25.11, DGX-H100: "| LLAMA3_70B | 64 | FP8-CS | 128 | 1 | 8192 | 0 | 4 | 8 | 1 | 5 | 1 |
    # 64 | 1602 | 719 |".
    "Megatron-Bridge 25.11 Llama 3 70B 64 H100 TP4 PP8 VP5 fp8": Row(
        LLAMA3_70B, h100(64), megatron(4, 8, 2, 5, 1, 128), 1602, _MEGATRON_FP8
    ),  # model 1578 (1585 before the userbuffer chunks, 1766 before)
    # Megatron-Bridge 26.02, LLAMA3_70B: "| DGX-H100 | 64 | FP8 | 256 | 1 | 8192 | 0 | 4 | 8 | 1 | 5 | n/a |
    # 1621 | 728 |".
    "Megatron-Bridge 26.02 Llama 3 70B 64 H100 TP4 PP8 VP5 B256 fp8": Row(
        LLAMA3_70B, h100(64), megatron(4, 8, 2, 5, 1, 256), 1621, _MEGATRON_FP8
    ),  # model 1597 (1604 before the userbuffer chunks, 1786 before)
    # Megatron-Bridge 26.02, LLAMA3.1_405B: "| DGX-H100 | 1024 | FP8 | 1536 | 1 | 8192 | 0 | 8 | 8 | 2 | 8 |
    # n/a | 311 | 784 |".
    "Megatron-Bridge 26.02 Llama 3.1 405B 1024 H100 TP8 PP8 CP2 VP8 B1536 fp8": Row(
        LLAMA3_405B, h100(1024), megatron(8, 8, 8, 8, 1, 1536, cp=2), 311, _MEGATRON_FP8
    ),  # model 329 (+5.8 %; 344 before the userbuffer chunks, 366 before)
    # Megatron-Bridge 25.11, DGX-GB200: "| LLAMA3_8B | 8 | FP8-CS (FP8-MX) | 128 | 2 | 8192 | 0 | 1 | 1 | 1 |
    # n/a | 1 | 8 | 31508 (29789) | 1622 (1533) |" (DDP with the distributed optimizer, 8 GPUs of a rack).
    "Megatron-Bridge 25.11 Llama 3 8B 8 GB200 DDP fp8": Row(
        LLAMA3_8B,
        gb200_racks(1, 8),
        dict(dp=8, microbatch_size=2, global_batch_size=128, zero_stage=1),
        31508,
        _FP8,
    ),  # model 34981 (+11 %; 34925 before the FP8 table by shape, 35152 before GEMMs by shape, 37171
    # before the limit)
    # Megatron-Bridge 25.11, DGX-GB200 (performance-summary-archive.md, "25.11 NeMo Container"):
    # "| LLAMA3.1_405B | 256 | FP8-CS | 1536 | 1 | 8192 | 0 | 4 | 16 | 1 | 4 | 1 | 384 | 813 | 2053 |".
    "Megatron-Bridge 25.11 Llama 3.1 405B 256 GB200 (4 racks) TP4 PP16 VP4 fp8": Row(
        LLAMA3_405B, gb200_racks(4), megatron(4, 16, 4, 4, 1, 1536), 813, _MEGATRON_FP8
    ),  # model 768 (-5.5 %; 753 with the BF16 table's shapes, 785 before the userbuffer chunks, 789 before
    # GEMMs by shape, 815 before the limit)
    # Megatron-Bridge 25.11, DGX-GB200: "| LLAMA3_70B | 64 | FP8-CS | 256 | 2 | 8192 | 64 | 1 | 1 | 1 | 1 |
    # 1 | 2 | 4312 | 1937 |": Megatron-FSDP over 64 GPUs of one NVL72 rack, run as its recipe runs it
    # (Megatron-Bridge v0.2.0 scripts/performance/configs/llama3/workload_base_configs.py
    # LLAMA3_70B_GB200_FP8_CS_BASE_CONFIG: no recomputation, cpu_offloading_num_layers=40;
    # llama3_llm_pretrain.py: gradient_accumulation_fusion False for Megatron-FSDP): the activations of 40 of
    # the 80 layers go to the Grace CPU over NVLink-C2C (MB_GB200_OFFLOAD_70B), memory checked: 173.5 GB of
    # the 186 (318.6 GB without the offload).
    "Megatron-Bridge 25.11 Llama 3 70B 64 GB200 FSDP fp8": Row(
        mb_fp8(LLAMA3_70B), gb200_racks(1), fsdp(64, 2, 256, "none"), 4312, MB_GB200_OFFLOAD_70B
    ),  # model 4834 (+12.1 %; the copies hide behind the two-layer windows: 8.1 ms a layer at 450 GB/s
    # beside 14 ms of forward). Asserted before with full recomputation, which the recipe does not run:
    # 3681 (-14.6 %)
    # ---- Llama 3 paper (Dubey et al. 2024, arXiv:2407.21783), Table 4: "8,192 | 8 | 1 | 16 | 64 | 8,192 |
    # 32 | 16M | 430 | 43%", "16,384 | 8 | 1 | 16 | 128 | 8,192 | 16 | 16M | 400 | 41%" (TP, CP, PP, DP,
    # sequence, batch per DP rank, tokens per batch, TFLOPs/GPU, BF16 MFU). Sec. 3.3.2 sets the pipeline: "we
    # reduce one Transformer layer each from the first and the last stages ... the first model chunk on the
    # first stage has only the embedding, and the last model chunk on the last stage has only output
    # projection and loss", an interleaved schedule with V chunks per rank: 126 layers + 2 = 128 = 16 ranks x
    # 8 one-layer chunks, so V = 8 (StepOptions.embedding_chunks); FSDP "shards the optimizer states and
    # gradients" (zero 2: a reduce-scatter in fp32 after each microbatch, same section). Memory: the 8,192
    # row needs 84 GB in the model's count (76 GB of activations for the 1F1B warm-up), where the paper
    # "proactively deallocate[s]" each stage's input and output tensors to train 8K sequences without
    # recomputation: not checked there.
    "Llama 3 Table 4, 405B on 8,192 H100, TP8 PP16 V8 DP64": Row(
        LLAMA3_405B,
        h100(8192, **{"scale_out.tiers": 3}),
        megatron(8, 16, 64, 8, 1, 2048, zero=2),
        0.43,
        {**_LLAMA3, "check_memory": False},
        "mfu",
    ),  # model 0.444 (+3.3 %; 0.448 before the userbuffer chunks; 0.336 with v = 1 and the output layer on
    # the busiest stage)
    "Llama 3 Table 4, 405B on 16,384 H100, TP8 PP16 V8 DP128": Row(
        LLAMA3_405B,
        h100(16384, **{"scale_out.tiers": 3}),
        megatron(8, 16, 128, 8, 1, 2048, zero=2),
        0.41,
        _LLAMA3,
        "mfu",
    ),  # model 0.418 (+2.0 %; 0.421 before the userbuffer chunks, 0.265 before). Reducing once per step
    # instead (zero 1) gives 0.600 and 0.560
}


#: Why the H100 BF16 rows miss (shared by every H100 BF16 row below).
H100_RATE = (
    "the step now holds the H100's 16-bit GEMMs at the clock its 700 W limit sustains on random data "
    "(x 730 / 794.5: huggingface/gpu-fryer's sustained cuBLAS 8192^3 against the MAMF short run) and runs "
    "the attention core at FlashAttention-2's measured 327.9 TFLOP/s (Azure ND H100 v5), which took 4-33 % "
    "off the compute-bound H100 rows; the A100 rows of the same tables, where neither applies (gpu-fryer's "
    "sustained A100 figure, 270, is above the profile's 230), still agree within 12 %. What is left is not "
    "the network: llm-foundry's 13b at 2,048 tokens, b2, runs 4,792 T/s/GPU on 8 GPUs (NVLink only) and "
    "4,800 on 64, and the table's HFU at 2,048 tokens is 35-59 % for every size from 760m to 70b (about "
    "350-580 TFLOP/s), where the model's compute runs at 660-720. The H100 table sits under the README's "
    "'TODO: Update tables with torch 2.0 after next Composer release': early Hopper software, and a "
    "software rate per release is not modelled. Eager element-wise kernels do not explain it: MPT's "
    "LayerNorm (llm-foundry's LPLayerNorm) and GeLU are one kernel each and its attention a Triton flash "
    "kernel, so only the cross-entropy over autocast fp32 logits (14 bytes per V, not 8) differs from the "
    "fused count: under 0.5 % of these steps"
)
TITAN_H100 = (
    "torchtitan's H100s are 96 GB HBM2e parts (2.4 TB/s) at a 500 W power limit ('peak between SXM and "
    "NVL'): the power limit modelled is the 700 W part's (gpu-fryer), a 500 W limit lowers the sustained "
    "clock further and no sustained GEMM figure at 500 W is recorded; the catalogue's H100 has HBM3 at "
    "3.35 TB/s, 1.4 x the 2.4 TB/s the eager element-wise work ran at; 'selective' AC is torchtitan's op "
    "policy, see the A100 8B row"
)
#: The attention figure of the FP8 (Transformer Engine) rows.
TE_ATTENTION = (
    "the attention core runs at FlashAttention-2's measured rate, where Transformer Engine calls cuDNN's "
    "fused attention, faster on Hopper: that part of the step is pessimistic"
)
FP8 = (
    "FP8 linear GEMMs run at the measured cuBLASLt FP8 rate (Azure AI-benchmarking-guide, 8192^3, random "
    "data after 10,000 warm-ups, already at the power-limited clock: 0.65 of the FP8 peak on H100, 0.58 on "
    "GB200) and Transformer Engine's cast_transpose bytes are charged; weight casts and current scaling's "
    f"separate amax pass are not; {TE_ATTENTION}"
)
LLAMA3 = (
    "the pipeline as in the asserted 8,192-token rows (V = 8, embedding and output chunks); the model's "
    "reduce-scatter per microbatch (zero 2) is 7 % of this step; reducing once per step gives 0.501"
)

MISSED: dict[str, tuple[Row, str]] = {
    # ---- H100, BF16, FSDP: the other H100 rows are predicted 18-48 % fast while the A100 rows above agree.
    # (Before the power limit and the attention figure: 29-104 %.)
    "llm-foundry H100 mpt-70b 2048 64 GPUs b8 AC": (
        Row(mpt(*MPT_70B, 2048), h100(64), fsdp(64, 8, 2048, "full"), 1039),
        f"1039 vs 1228 (+18 %; 1378 before); {H100_RATE}",
    ),
    "llm-foundry H100 mpt-70b 2048 32 GPUs b2 AC": (
        Row(mpt(*MPT_70B, 2048), h100(32), fsdp(32, 2, 1024, "full"), 882),
        f"882 vs 1171 (+33 %; 1289 before); {H100_RATE}",
    ),
    "llm-foundry H100 mpt-13b 2048 64 GPUs b2 no AC": (
        Row(mpt(*MPT_13B, 2048), h100(64), fsdp(64, 2, 128, "none"), 4800),
        f"4800 vs 7145 (+49 %; 7903 before); {H100_RATE}",
    ),
    "llm-foundry H100 mpt-7b 2048 8 GPUs b6 no AC": (
        Row(mpt(*MPT_7B, 2048), h100(8), fsdp(8, 6, 48, "none"), 10643),
        f"10643 vs 14307 (+34 %; 16076 before); {H100_RATE}",
    ),
    "llm-foundry H100 mpt-7b 8192 8 GPUs b8 AC": (
        Row(mpt(*MPT_7B, 8192), h100(8), fsdp(8, 8, 128, "full"), 6935),
        f"6935 vs 8742 (+26 %; 10463 before); {H100_RATE}",
    ),
    # torchtitan @eaea6f6 Table 1 / Table 3: "| FSDP | 5,762 | 82.4 |" (8 GPUs), "| FSDP | 5,605 | 67.0 |"
    # (128 GPUs); Llama 3.1 8B, local batch 2, sequence 8,192, selective AC, eager, BF16. 96 GB H100.
    "torchtitan Llama 3.1 8B 8 H100 FSDP b2 selective": (
        Row(LLAMA3_8B, h100(8), fsdp(8, 2, 16, "selective"), 5762, {**_NO_MEM, **TITAN_EAGER}),
        f"5762 vs 7747 (+34 %; 7882 before FSDP2's copies; 9450 with fused kernels; 8255 with Megatron's "
        f"selective recompute, 11439 "
        f"before the power limit and with it); {TITAN_H100}",
    ),
    "torchtitan Llama 3.1 8B 128 H100 FSDP b2 selective": (
        Row(LLAMA3_8B, h100(128), fsdp(128, 2, 256, "selective"), 5605, {**_NO_MEM, **TITAN_EAGER}),
        f"5605 vs 7743 (+38 %; 7878 before FSDP2's copies; 9444 with fused kernels; 8251 with Megatron's "
        f"selective recompute, 11437 "
        f"before the power limit and with it); {TITAN_H100}",
    ),
    # torchtitan @eaea6f6 Table 5: Llama 3.1 405B, 512 GPUs (FSDP 8, TP 8, PP 8), local batch 32, global
    # 256, full AC, Float8 + AsyncTP: "| 1F1B | 100 |", "| Interleaved 1F1B | 128 |".
    "torchtitan Llama 3.1 405B 512 H100 FSDP8 TP8 PP8 1F1B fp8": (
        Row(
            LLAMA3_405B,
            h100(512),
            fsdp(8, 1, 256, "full", tp=8, pp=8, sequence_parallel=True),
            100,
            _MEGATRON_FP8,
        ),
        "100 vs 106 (+6 %), not asserted: the agreement comes from the model charging ZeRO-3's per-layer "
        "gathers and reduce-scatters on every microbatch (44 % of the step exposed), while PyTorch's "
        "pipeline schedule runs FSDP without resharding between microbatches and reduces gradients on the "
        "last one only (torch.distributed.pipelining); as ZeRO-1 (once per step) the model gave 240 "
        f"(+140 %) before the power limit: {FP8}; {TITAN_H100}",
    ),
    # torchtitan @eaea6f6 Table 2: Llama 3.1 8B, 8 GPUs, local batch 1, full AC, Float8 + compile:
    # "| FSDP 1, CP 8 | 262144 | 548 |".
    "torchtitan Llama 3.1 8B 8 H100 CP8 262,144 tokens fp8": (
        Row(
            dataclasses.replace(LLAMA3_8B, seq_len=262144),
            h100(8),
            fsdp(1, 1, 1, "full", cp=8),
            548,
            _FP8,
        ),
        (
            "548 vs 886 (+62 %; 1325 before the attention figure): at 262,144 tokens the attention core "
            "is about 90 % of the FLOPs, now at FlashAttention-2's measured rate for a causal kernel "
            "(0.57 of peak over the full-sequence count, x 0.919 for the power limit). The figure is "
            "measured at s = 8,192, b = 2; ring attention over 8 ranks splits each rank's work into "
            "blocks with their own launch and load imbalance (the causal diagonal), not modelled; "
            f"{TITAN_H100}"
        ),
    ),
    # Blind row: the long-context line of Table 4 (131,072 tokens, CP 16, batch 16 per DP rank: B = 128).
    # Memory not checked: the paper's CP all-gathers K and V per layer, not the model's ring buffers.
    "Llama 3 Table 4, 405B on 16,384 H100, TP8 CP16 PP16 V8 DP8, 131,072 tokens": (
        Row(
            dataclasses.replace(LLAMA3_405B, seq_len=131072),
            h100(16384, **{"scale_out.tiers": 3}),
            megatron(8, 16, 8, 8, 1, 128, cp=16, zero=2),
            0.38,
            {**_LLAMA3, "check_memory": False},
            "mfu",
        ),
        (
            "MFU 0.38 vs 0.460 (+21 %; 0.274 with v = 1): at 131,072 tokens the attention core is over half "
            "the FLOPs, at FlashAttention-2's measured rate (0.33 of peak). Not modelled: the paper's "
            "all-gather CP exposes its K, V gathers ('the exposed latency is small', not zero), and "
            "document masks make the causal work uneven across CP ranks (the paper's reason for "
            f"asynchronous pipeline sends); {LLAMA3}"
        ),
    ),
    # ---- DGX-B200 (blind rows). The b200 profile records the MAMF BF16 search and OpenXLA's GEMM tables by
    # shape, BF16 and FP8: the FP8 level is the FP8 table's best shape (0.729 of the FP8 peak, a short run,
    # where the BF16 fraction 0.776 stood before); no sustained (power-limited) GEMM figure, datasheet HBM.
    # Megatron-Bridge 25.11, DGX-B200: "| LLAMA3_8B | 8 | FP8-CS (FP8-MX) | 128 | 2 | 8192 | 0 | 1 | 1 | 1 |
    # n/a | 1 | 8 | 30624 (29521) | 1576 (1519) |".
    "Megatron-Bridge 25.11 Llama 3 8B 8 B200 DDP fp8": (
        Row(
            LLAMA3_8B,
            b200(8),
            dict(dp=8, microbatch_size=2, global_batch_size=128, zero_stage=1),
            30624,
            _FP8,
        ),
        (
            "30624 vs 39030 (+27 %; 40187 before the FP8 table, 40435 before GEMMs by shape): no sustained "
            "GEMM or HBM measurement of the B200 is recorded, and its FP8 level is the best shape of "
            "OpenXLA's short FP8 runs (0.729 of the FP8 peak); with the GB200's FP8 fraction (0.575, "
            "cuBLASLt after 10,000 warm-ups: the clock the power limit holds) the model gives 34408 (+12 %)"
        ),
    ),
    # Megatron-Bridge 25.11, DGX-B200: "| LLAMA3.1_405B | 128 | FP8-CS (FP8-MX) | 64 | 1 | 8192 | 0 | 4 | 8 |
    # 2 | 8 | 1 | 32 | 661 (624) | 1667 (1576) |".
    "Megatron-Bridge 25.11 Llama 3.1 405B 128 B200 TP4 PP8 CP2 VP8 fp8": (
        Row(LLAMA3_405B, b200(128), megatron(4, 8, 2, 8, 1, 64, cp=2), 661, _MEGATRON_FP8),
        (
            "661 vs 763 (+15.4 %; 811 before the FP8 table by shape, 850 before the userbuffer chunks, 857 "
            "before GEMMs by shape): as the B200 8B row; with the GB200's measured FP8 fraction the model "
            "gives 651 (-1.5 %; 667 with the BF16 table's shapes)"
        ),
    ),
    # ---- Megatron-Bridge GB200 Megatron-FSDP rows, timed with their recipes' layouts (MB_GB200_OFFLOAD_70B).
    # Megatron-Bridge 25.09, DGX-GB200: "| LLAMA3_70B | 64 | 128 | 2 | 8192 | 64 (0) | 1 (2) | 1 (4) | 1 |
    # 1 (5) | 1 | 1 (16) | 3986 (3546) |".
    "Megatron-Bridge 25.09 Llama 3 70B 64 GB200 FSDP fp8": (
        Row(mb_fp8(LLAMA3_70B), gb200_racks(1), fsdp(64, 2, 128, "none"), 3986, MB_GB200_OFFLOAD_70B),
        f"3986 vs 4832 (+21.2 %; 3679 with full recomputation, asserted before). The 25.11 row of the same "
        f"layout measures 4312 (+8 % on 25.09), asserted at +12.1 %. {MB_GB200_FSDP}",
    ),
    # Megatron-Bridge 25.09, DGX-GB200: "| LLAMA3.1_405B | 128 | 64 | 1 | 8192 | 64 (0) | 2 (4) | 1 (8) |
    # 1 (2) | 1 (8) | 1 | 1 (32) | 729 (578) |": Megatron-FSDP over 64 with TP 2 on two racks.
    "Megatron-Bridge 25.09 Llama 3.1 405B 128 GB200 FSDP64 TP2 fp8": (
        Row(
            mb_fp8(LLAMA3_405B),
            gb200_racks(2),
            fsdp(64, 1, 64, "none", tp=2, sequence_parallel=True),
            729,
            MB_GB200_OFFLOAD_405B,
        ),
        f"729 vs 966 (+32.4 %; 953 with the BF16 table's shapes; 712 with full recomputation, asserted "
        f"before; 109.4 GB of the 186 with 95 of 126 layers offloaded, 162.8 GB of them). {MB_GB200_FSDP}",
    ),
    # ---- A100 rows just outside the bar.
    # llm-foundry A100 40GB: "| 70b | 2048 | 64 | a100_40gb | 35.87 | ... | 2 | 1 | 128 | ... | 276 |".
    "llm-foundry A100-40GB mpt-70b 2048 64 GPUs b2": (
        Row(mpt(*MPT_70B, 2048), a100_40gb(64), fsdp(64, 2, 128, "full"), 276, A100_40GB_OPTS),
        (
            "276 vs 387 (+40 %): the same model on 128 GPUs at b4 agrees (+6 %, asserted above); here MFU "
            "falls from 48.9 to 35.9 % while the model's exposed ZeRO-3 time stays under 7 % of the step. "
            "The run holds 70B / 64 parameter shards and full-AC activations on a 40 GB part; what slows "
            "it (allocator retries near the capacity, FSDP's all-gather rate limit) is not in the model "
            "and not identified"
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


def test_enough_public_rows() -> None:
    assert len(ROWS) + len(MISSED) >= 15


@pytest.mark.parametrize(
    "name,compiled",
    [
        ("torchtitan Llama 3.1 8B 8 H100 FSDP b2 selective", 6667),
        ("torchtitan Llama 3.1 8B 128 H100 FSDP b2 selective", 6514),
    ],
)
def test_fused_kernels_buy_what_torch_compile_bought_torchtitan(name: str, compiled: float) -> None:
    """torchtitan @eaea6f6 Tables 1 and 3: "FSDP + torch.compile" runs 6,667 and 6,514 TPS/GPU against 5,762
    and 5,605 eager (x 1.157, x 1.162), where compile fuses the element-wise operators. The model's step with
    fused kernels over its step with the Llama code's eager ones: x 1.199 on both rows (x 1.154 with
    Megatron's selective recompute: torchtitan's op-level policy runs the element-wise operators again in the
    backward pass, which the fused kernels also speed up). The rows themselves
    stay in MISSED (see TITAN_H100): the ratio does not depend on the unknown 500 W peak."""
    row, _ = MISSED[name]
    fused = predict(row._replace(options={**row.options, "elementwise": "fused"}))
    assert fused / predict(row) == pytest.approx(compiled / row.measured, rel=0.05)
