"""GPU memory of a training layout: model states (weights, gradients, optimizer) and activations.

Model states follow mixed-precision Adam (:class:`~aifabric.training.models.BytesPerParam`, 18 bytes per
parameter by default) on the most loaded pipeline stage, split by TP (by etp x ep for experts) and sharded
by ZeRO over the ranks that hold the same weights (dp x cp for dense weights, tp cp dp / (etp ep) for
experts):

============  =========  ==========  ===========  ======================
ZeRO stage    weights    gradients   optimizer    bytes/param (default)
============  =========  ==========  ===========  ======================
0             2          4           12           18
1             2          4           12 / D       6 + 12 / D
2             2          4 / D       12 / D       2 + 16 / D
3 (FSDP)      2 / D      4 / D       12 / D       18 / D
============  =========  ==========  ===========  ======================

Stage 1 is Megatron-LM's distributed optimizer ("6 + 12/d", formula note).

Activations follow Korthikanti et al. 2022 per transformer layer and microbatch (bytes, 16-bit
activations, 1-byte dropout masks)::

    no recompute, TP only    s b h (10 + 24/t + 5 a s / (h t))
    no recompute, TP + SP    s b h (34 + 5 a s / h) / t
    FlashAttention, TP + SP  s b h (34 + 4 a / h) / t     (no s^2 term: only the fp32 log-sum-exp per row)
    selective, TP + SP       34 s b h / t
    full                     2 s b h per layer (the layer input; / t with SP)

generalised here to grouped-query attention, gated MLPs, MoE layers, models trained without dropout,
context parallelism (s -> s / cp for every token-indexed tensor) and Transformer Engine FP8, whose linear
layers save their inputs in one byte and keep an FP8 copy and transpose of their weights (2 bytes per
linear weight, ZeRO < 3). The first pipeline stage holds the
activations of the most microbatches: p under 1F1B, so p x (l / p) = l layer-microbatches, and
l (1 + (p - 1) / (p v)) under the interleaved schedule.

Where training frameworks keep different tensors the framework is named (:data:`FRAMEWORKS`): Megatron-LM
(the default: Korthikanti's selective recomputation and 4 s b V / t fp32 logits) or torchtitan (op-level
selective checkpointing and PyTorch's cross-entropy on upcast logits, 12 s b V / t at the loss's peak).

References
----------
.. [1] Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models", MLSys 2023,
   arXiv:2205.05198, Sec. 4 (Eqs. 1-2, Table 2), Sec. 4.2.3 and 4.3.
.. [2] Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC'20,
   https://doi.org/10.1109/SC41405.2020.00024.
.. [3] Megatron-LM ``docs/user-guide/features/dist_optimizer.md``; ``schedules.py`` (warm-up microbatches of
   the interleaved schedule).
.. [4] Dao, "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning", ICLR 2024,
   arXiv:2307.08691, Algorithm 1 (the forward pass saves O and the log-sum-exp L, one fp32 per query row
   and head, for the backward pass; the s x s scores are never written to HBM).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from aifabric.catalog.archs import gpu_architecture
from aifabric.errors import ConfigError, Infeasible
from aifabric.training.layout import ParallelLayout, Recompute
from aifabric.training.models import ModelSpec
from aifabric.training.offload import check_offload

__all__ = [
    "FRAMEWORKS",
    "MEMORY_REMEDIES",
    "MemoryBreakdown",
    "MemoryRemedy",
    "TrainingFramework",
    "activation_bytes_per_layer",
    "check_fits",
    "check_zero3_no_sync",
    "get_framework",
    "in_flight_layer_microbatches",
    "memory_breakdown",
]


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Memory per GPU of one layout, in bytes, on the most loaded GPU.

    Attributes
    ----------
    weight_bytes, gradient_bytes, optimizer_bytes : float
        Model states of the heaviest pipeline stage, after TP/EP splitting and ZeRO sharding.
    layer_activation_bytes : float
        Transformer-layer activations the first pipeline stage stashes for its in-flight microbatches.
    other_activation_bytes : float
        The rest: input-embedding dropout masks of in-flight microbatches, the output layer's activations
        and the loss's logits (per framework, :data:`FRAMEWORKS`) when the first stage is also the last
        (pp = 1), what the recomputed layer rebuilds during its backward pass, and under ZeRO-3 the
        gathered parameters of the layer computing and the ones prefetched.
    params_per_gpu : float
        Parameters on that GPU before ZeRO sharding (after TP/EP splitting).
    in_flight_microbatches : float
        Microbatches whose activations the first stage holds at peak (fractional with interleaving: in
        units of the stage's layers).
    gpu_hbm_bytes : float or None
        The GPU's memory, if given.
    offloaded_activation_bytes : float
        Layer activations held in the CPU's memory instead (``offload_layers``), not in the total; each
        microbatch's cross the GPU's link to its CPU out in the forward pass and back in the backward.

    Notes
    -----
    Model states come from the heaviest stage and activations from the first: where these are different
    stages (an MoE model whose first layers are dense), the sum is an upper bound. Not counted: CUDA
    context and allocator fragmentation (often 1-5 GB), communication buffers,
    vocabulary padding, MoE routing imbalance.
    """

    weight_bytes: float
    gradient_bytes: float
    optimizer_bytes: float
    layer_activation_bytes: float
    other_activation_bytes: float
    params_per_gpu: float
    in_flight_microbatches: float
    gpu_hbm_bytes: float | None = None
    offloaded_activation_bytes: float = 0.0

    @property
    def model_state_bytes(self) -> float:
        """Weights + gradients + optimizer state."""
        return self.weight_bytes + self.gradient_bytes + self.optimizer_bytes

    @property
    def activation_bytes(self) -> float:
        """All activations: layer stash + the rest."""
        return self.layer_activation_bytes + self.other_activation_bytes

    @property
    def total_bytes(self) -> float:
        """Everything counted, per GPU."""
        return self.model_state_bytes + self.activation_bytes

    @property
    def free_bytes(self) -> float | None:
        """HBM left over (negative if it does not fit); None without ``gpu_hbm_bytes``."""
        return None if self.gpu_hbm_bytes is None else self.gpu_hbm_bytes - self.total_bytes

    @property
    def fits(self) -> bool | None:
        """True if ``total_bytes <= gpu_hbm_bytes``; None without ``gpu_hbm_bytes``."""
        return None if self.gpu_hbm_bytes is None else self.total_bytes <= self.gpu_hbm_bytes

    def summary(self) -> str:
        """One line: ``93.4 GB per GPU: weights 20.1 GB, grads ..., activations ...``."""
        return (
            f"{_gb(self.total_bytes)} per GPU: weights {_gb(self.weight_bytes)}, "
            f"grads {_gb(self.gradient_bytes)}, optimizer {_gb(self.optimizer_bytes)}, "
            f"activations {_gb(self.activation_bytes)}"
            + (
                f" (+ {_gb(self.offloaded_activation_bytes)} offloaded to the CPU)"
                if self.offloaded_activation_bytes
                else ""
            )
        )


def _gb(n_bytes: float) -> str:
    text = f"{n_bytes / 1e9:.1f}"
    return f"{text.removesuffix('.0')} GB"


# ------------------------------------------------------------------------------------------- frameworks
@dataclass(frozen=True, slots=True)
class TrainingFramework:
    """What a training framework keeps where frameworks differ: the loss's logits and what "selective"
    recomputation saves.

    Attributes
    ----------
    name : str
        The framework, as the ``framework`` option spells it.
    loss_bytes_per_logit : int
        Bytes per token per vocabulary entry (over t with a vocabulary-parallel loss) the loss holds at its
        peak, the last stage's output layer (pp = 1: the first stage, whose layer stash is full).
    op_level_selective : bool
        True: ``selective`` is torchtitan's op-level policy (:func:`_op_sac_layer_act`); False:
        Korthikanti's, which drops the attention core only.
    source : str
        Where the two come from.
    unsaved_attention_from_sm : int or None, default None
        Compute capability (100 = 10.0) from which the op-level policy does not keep the attention output:
        the SDPA kernel the framework prefers there is missing from its save list, so the attention core
        runs again in the backward pass. None: kept on every GPU.
    keeps_attention : bool, default True
        Whether the op-level policy keeps the attention output on the GPU at hand (:meth:`on_architecture`).
    fsdp_copies : bool, default False
        Whether its ZeRO-3 copies parameters and gradients in and out of the collectives' flat buffers
        (PyTorch FSDP2, per-parameter sharding: each gathered buffer copied out into the parameters, each
        gradient copied into the reduce-scatter buffer; :meth:`aifabric.training.step.StepModel.
        weight_pass_bytes`). False: parameters and gradients are views of the buffers (Megatron-FSDP,
        PyTorch FSDP1's flat parameter).
    fp8_cast_bytes : float, default 4
        HBM bytes per element of an FP8 GEMM's activation or output-gradient cast (``fp8``): Transformer
        Engine's ``cast_transpose`` reads the 16-bit tensor (2) and writes the cast and its transpose (1 + 1)
        with the amax in the same pass, 4. torchao's dynamic tensorwise scaling (torchtitan, OLMo-core)
        needs the tensor's amax before it can scale, so it reads the tensor twice: an amax kernel (2) and
        a cast kernel writing the row- and column-major FP8 copies (2 + 1 + 1), 6.
    fp8_weight_cast_bytes : float, default 4
        The same per weight element, for each 16-bit gather of a linear weight under ZeRO-3 with ``fp8``:
        Transformer Engine's ``cast_transpose``, 4; torchao's tensorwise weight, an amax kernel (2) and a
        cast for the forward and one for the backward layout (2 + 1 each), 8.
    """

    name: str
    loss_bytes_per_logit: int
    op_level_selective: bool
    source: str
    unsaved_attention_from_sm: int | None = None
    keeps_attention: bool = True
    fsdp_copies: bool = False
    fp8_cast_bytes: float = 4.0
    fp8_weight_cast_bytes: float = 4.0

    def on_architecture(self, arch: str) -> TrainingFramework:
        """This framework on a GPU of architecture ``arch`` (an accelerator's ``arch``): ``keeps_attention``
        False where its compute capability is ``unsaved_attention_from_sm`` or above."""
        found = gpu_architecture(arch)
        threshold = self.unsaved_attention_from_sm
        if threshold is None or found is None or found.sm < threshold:
            return self
        return replace(self, keeps_attention=False)


_TORCHTITAN = TrainingFramework(
    "torchtitan",
    12,
    True,
    "torchtitan train.py: cross_entropy(pred.flatten(0, 1).float(), ...) and ``del pred`` before "
    "loss.backward(); PyTorch cross_entropy = log_softmax (saves its fp32 output, 4V) + nll_loss, "
    "whose backward writes a dense fp32 gradient (4V) that log_softmax_backward turns into a third "
    "fp32 tensor (4V): 12 V bytes per token at the loss's backward peak (the forward holds 2V bf16 "
    "logits + 4V upcast + 4V log-softmax = 10V). Selective: parallelize_llama.py's op-level policy, "
    "every SDPA kernel in its save list since b39377f (2025-12-01, 'add all SDPA backends to "
    "op_sac_save_list'). ZeRO-3 is FSDP2's fully_shard (torch/distributed/fsdp/_fully_shard/"
    "_fsdp_collectives.py: foreach_all_gather_copy_out copies the gathered buffer into the parameters "
    "with split_with_sizes_copy, foreach_reduce_scatter_copy_in the gradients into the reduce-scatter "
    "buffer with chunk_cat, in the reduce dtype). FP8 is torchao's float8 training (Float8LinearConfig, "
    "dynamic tensorwise scaling): pytorch/ao torchao/testing/training/roofline_utils.py "
    "get_tensor_memory_traffic_ovhd_s, 'tensorwise', not fused with the previous op: input and "
    "grad_output 'kernel 1: x_bf16 -> max_abs_stage_1' (read 2 bytes) and 'kernel 3: x_bf16, max_abs -> "
    "to_float8 -> x_fp8_dim0, x_fp8_dim1' (read 2, write 1 + 1); weight kernels 1, 3 (fwd) and 4 (bwd), "
    "2 + 3 + 3 bytes",
    fsdp_copies=True,
    fp8_cast_bytes=6.0,
    fp8_weight_cast_bytes=8.0,
)

#: Framework name -> what it keeps (the ``framework`` option of :func:`memory_breakdown`).
FRAMEWORKS: dict[str, TrainingFramework] = {
    "megatron": TrainingFramework(
        "megatron",
        4,
        False,
        "Korthikanti et al. arXiv:2205.05198 Sec. 4.3: the output layer's fp32 logits 4 s b V / t; "
        "Sec. 4.2.3: selective recomputation drops the attention core",
    ),
    "torchtitan": _TORCHTITAN,
    # the releases from 3b85aa3 to before b39377f, such as e7c0cae of the Trainy H200 benchmark
    "torchtitan-2025-06": replace(
        _TORCHTITAN,
        name="torchtitan-2025-06",
        unsaved_attention_from_sm=100,
        source="as torchtitan, but from 3b85aa3 (2025-05-14, 'Use cudnn backend on B200') to b39377f "
        "(2025-12-01), e.g. e7c0cae (2025-06-11), models/attention.py ScaledDotProductAttention puts "
        "SDPBackend.CUDNN_ATTENTION first when has_cuda_capability(10, 0), and models/llama3/"
        "parallelize_llama.py _save_list holds the flash and efficient SDPA ops but not "
        "aten._scaled_dot_product_cudnn_attention: on sm_100 and later the op-level policy recomputes the "
        "attention (b39377f: 'to avoid recomputing attention during backward')",
    ),
}


def get_framework(name: str | TrainingFramework) -> TrainingFramework:
    """The :data:`FRAMEWORKS` entry for ``name`` (``name`` itself if already one); ConfigError naming the
    value otherwise."""
    if isinstance(name, TrainingFramework):
        return name
    try:
        return FRAMEWORKS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"framework must be one of {sorted(FRAMEWORKS)}, got {name!r}") from None


# ------------------------------------------------------------------------------------------ activations
def _mlp_inner_bytes(model: ModelSpec, width: int, linear_input: int = 2) -> int:
    """Bytes per token an MLP stores between its two matmuls: GeLU input 2f + fc2 input (2f, or f in FP8),
    or, gated, the fused gate/up output 4f + down-projection input (2f, or f in FP8)."""
    return ((4 if model.gated_mlp else 2) + linear_input) * width


def activation_bytes_per_layer(
    model: ModelSpec,
    layout: ParallelLayout,
    *,
    moe: bool = False,
    flash_attention: bool = False,
    fp8: bool = False,
    framework: str | TrainingFramework = "megatron",
) -> float:
    """Activation bytes one transformer layer stores for one microbatch, on one GPU.

    Korthikanti et al.'s per-layer count, term by term (bytes per token; 16-bit tensors, 1-byte masks):

    - not split by TP unless sequence parallel: two norm inputs 4h, QKV input 2h, MLP input 2h, two
      dropout masks 2h (10h, or 8h without dropout);
    - split by TP: Q 2ad, K and V 4 kv d, output-projection input 2ad; the MLP between its matmuls 4f
      (6f gated); for an MoE layer, top_k x (2h dispatched input + the expert's inner bytes) plus the
      shared experts' inner bytes;
    - attention scores, split by TP, only without recomputation: 5as per token (softmax output 2as, its
      dropout mask as and output 2as), or 2as without dropout. With FlashAttention the scores never reach
      HBM: the kernel keeps one fp32 log-sum-exp per query row and head, 4a bytes per token (Dao 2023,
      Algorithm 1); its dropout mask is regenerated from the RNG state in the backward pass.

    With Transformer Engine FP8 each linear layer saves its input for the weight-gradient GEMM as one FP8
    byte instead of two (``Linear`` saves ``inputmat`` or ``inputmat_t``, ``LayerNormLinear`` its FP8
    ``ln_out``; TE v1.11 ``module/linear.py``, ``module/layernorm_linear.py``): the QKV and MLP inputs h
    each, the output-projection input a d, the fc2 / down-projection input f, an expert's dispatched input
    h. Norm inputs, Q, K, V and the MLP's first output stay 16-bit, and so does an MoE layer's MLP input,
    which its router saves (:func:`_moe_input_bytes`).

    With full recomputation only the layer input is kept: 2h per token (/ t with sequence parallelism).
    With ``framework="torchtitan"``, ``selective`` is its op-level policy (:func:`_op_sac_layer_act`).
    Tokens per microbatch per GPU: b s / cp. For a Megatron GPT layer (a d = h, f = 4h) this is
    s b h (34 + 5 a s / h) / t with TP + SP, and s b h (10 + 24/t + 5 a s / (h t)) with TP only.

    Parameters
    ----------
    model : ModelSpec
        The model.
    layout : ParallelLayout
        Gives b, t, cp, sequence parallelism and the recomputation mode.
    moe : bool, default False
        True for an MoE layer.
    flash_attention : bool, default False
        The attention core runs as FlashAttention: 4a instead of 5as bytes per token without recomputation.
    fp8 : bool, default False
        Transformer Engine FP8 linear layers: their saved inputs take one byte per element.
    framework : str or TrainingFramework, default "megatron"
        What ``selective`` recomputation saves (a :data:`FRAMEWORKS` name, or an entry resolved for one GPU
        by :meth:`TrainingFramework.on_architecture`).

    Returns
    -------
    float
        Bytes.

    Raises
    ------
    ConfigError
        If ``moe`` is True for a dense model, or ``framework`` is not in :data:`FRAMEWORKS`.

    References
    ----------
    .. [1] Korthikanti et al., arXiv:2205.05198, Sec. 4.1-4.2, Eq. 1-2 and Table 2.
    .. [2] Dao, arXiv:2307.08691, Algorithm 1 (FlashAttention-2's saved log-sum-exp).
    .. [3] NVIDIA TransformerEngine v1.11, ``transformer_engine/pytorch/module/linear.py``
       (``_Linear.forward``: ``save_for_backward(saved_inputmat, saved_inputmat_t, ...)``, FP8 when ``fp8``).

    Examples
    --------
    GPT-3 175B, b = 1, t = 8 with sequence parallelism and selective recomputation: 34 s b h / t.

    >>> from aifabric.training.models import get_model
    >>> lay = ParallelLayout(tp=8, sequence_parallel=True, recompute="selective")
    >>> activation_bytes_per_layer(get_model("gpt3-175b"), lay) == 34 * 2048 * 12288 / 8
    True
    """
    if moe and not model.is_moe:
        raise ConfigError(f"model {model.name!r} has no MoE layers (n_experts=0)")
    fw = get_framework(framework)
    sac = fw if fw.op_level_selective else None
    return _layer_act(model, layout, layout.recompute, moe, flash_attention, fp8, sac)


def _layer_act(
    model: ModelSpec,
    layout: ParallelLayout,
    recompute: Recompute,
    moe: bool,
    flash: bool = False,
    fp8: bool = False,
    sac: TrainingFramework | None = None,
) -> float:
    h = model.hidden_size
    tokens = layout.microbatch_size * model.seq_len / layout.cp
    t = layout.tp
    sp_div = t if layout.sequence_parallel else 1
    if recompute is Recompute.FULL:
        return tokens * 2 * h / sp_div
    if recompute is Recompute.SELECTIVE and sac is not None:
        return _op_sac_layer_act(model, layout, moe, sac.keeps_attention)
    lin = 1 if fp8 else 2  # bytes of each saved linear-layer input element
    mlp_in = _moe_input_bytes(model, fp8) if moe else lin
    unsplit = ((2 if model.dropout else 0) + 4 + lin + mlp_in) * h  # masks, norm inputs, QKV and MLP inputs
    q, kv = model.n_heads * model.head_size, model.kv_heads * model.head_size
    split = (2 + lin) * q + 4 * kv
    if moe:
        fe = model.expert_ffn_size
        split += model.top_k * (lin * h + _mlp_inner_bytes(model, fe, lin))
        split += model.n_shared_experts * _mlp_inner_bytes(model, fe, lin)
    else:
        split += _mlp_inner_bytes(model, model.ffn_size, lin)
    if recompute is Recompute.NONE:
        split += 4 * model.n_heads if flash else (5 if model.dropout else 2) * model.n_heads * model.seq_len
    return tokens * (unsplit / sp_div + split / t)


def _op_sac_layer_act(
    model: ModelSpec, layout: ParallelLayout, moe: bool, keeps_attention: bool = True
) -> float:
    """Bytes one layer keeps for one microbatch under torchtitan's op-level selective checkpointing.

    The policy (torchtitan ``parallelize_llama.py`` ``_save_list`` and ``_custom_policy``, the version of
    ``docs/performance.md`` @eaea6f6) saves the outputs of ``aten.mm`` except every second one counted
    within the layer, of the SDPA kernels and of ``reduce_scatter_tensor``; everything else (norms, RoPE,
    SiLU and the product, the other matmuls) is recomputed from the kept layer input. A Llama block runs
    its matmuls in the order wq, wk, wv, wo, w1, w3, w2, so it keeps wq, wv, w1 and w2 (ungated, without
    w3: wq, wv and w1; bytes per token, 16-bit)::

        2h / t_sp                  layer input (the checkpoint's argument; / t with sequence parallelism)
        2 q / t + 2 kv d / t       wq and wv outputs (q = a d)
        2 q / t + 4 a / t          FlashAttention output and its fp32 log-sum-exp
        2 f / t                    w1 output
        2h                         w2 output (gated only): partial sums over the whole sequence
        2 x 2h / t                 the two reduce-scatter outputs (TP with sequence parallelism only)

    For Llama 3 8B without TP: 2h + 2h + 2 kv d + 2h + 4a + 2f + 2h = 63,616 bytes per token. Where the
    SDPA kernel that ran is not in the save list (``keeps_attention`` False: cuDNN's on Blackwell in the
    2025-06 release, :data:`FRAMEWORKS`) its output and log-sum-exp are not kept, 2q / t + 4a / t less.

    Raises
    ------
    ConfigError
        For an MoE layer (the policy's saved set there depends on the expert kernels: not modelled).
    """
    if moe:
        raise ConfigError("framework 'torchtitan' selective recomputation is modelled for dense layers only")
    h, f, a, t = model.hidden_size, model.ffn_size, model.n_heads, layout.tp
    q, kv = a * model.head_size, model.kv_heads * model.head_size
    mm_out = [2 * q / t, 2 * kv / t, 2 * kv / t, 2 * h, 2 * f / t] + ([2 * f / t] if model.gated_mlp else [])
    mm_out.append(2 * h)
    sp = layout.sequence_parallel and t > 1
    per_token = 2 * h / (t if sp else 1) + sum(mm_out[0::2]) + (2 * q + 4 * a) / t * keeps_attention
    if sp:
        per_token += 2 * 2 * h / t
    return layout.microbatch_size * model.seq_len / layout.cp * per_token


def _moe_input_bytes(model: ModelSpec, fp8: bool) -> int:
    """Bytes per token and per unit of h that an MoE layer saves of its MLP input (the pre-MLP norm's
    output). Its router keeps it at 16 bits, FP8 or not: Megatron-Core's ``TopKRouter.gating`` is a plain
    ``torch.nn.functional.linear`` outside Transformer Engine (core_v0.10.0 ``transformer/moe/router.py``),
    whose autograd saves its input. Under FP8 the shared experts' first linear layer (a Transformer Engine
    layer, ``SharedExpertMLP``) saves its own one-byte cast as well; in 16 bits it saves the same tensor.
    The routed experts' dispatched inputs are separate copies, counted per slot."""
    return 2 + (1 if fp8 and model.n_shared_experts else 0)


def in_flight_layer_microbatches(layout: ParallelLayout, n_layers: int) -> float:
    """Layer-microbatches of activations the first pipeline stage holds at its peak.

        pp = 1:          l                                   (one microbatch at a time)
        1F1B (v = 1):    min(p, m) x l / p
        interleaved:     min(p v + p - 1, m v) x l / (p v)   (= l (1 + (p - 1) / (p v)) when m is large)

    The interleaved count is Megatron-LM's warm-up (2 (p - 1) + (v - 1) p model chunks on rank 0) plus
    the one in steady state, each chunk l / (p v) layers; it equals Korthikanti et al.'s factor
    1 + (p - 1) / (p v).

    Parameters
    ----------
    layout : ParallelLayout
        Gives p, v and m.
    n_layers : int
        l, layers of the model.

    Returns
    -------
    float
        Layer-microbatches (multiply by :func:`activation_bytes_per_layer`).

    Examples
    --------
    The 530B model of Narayanan et al. Table 1 (p = 35, v = 3, m = 280, l = 105):

    >>> lay = ParallelLayout(tp=8, pp=35, dp=9, virtual_pipeline_stages=3, global_batch_size=2520)
    >>> in_flight_layer_microbatches(lay, 105), 105 * (1 + 34 / 105)
    (139.0, 139.0)
    """
    p, v, m = layout.pp, layout.virtual_pipeline_stages, layout.n_microbatches
    if p == 1:
        return float(n_layers)
    if v == 1:
        return min(p, m) * n_layers / p
    return min(p * v + p - 1, m * v) * n_layers / (p * v)


# -------------------------------------------------------------------------------------- stage layouts
@lru_cache(maxsize=4096)
def _stage_moe_counts(
    n_layers: int, first_dense: int, freq: int, is_moe: bool, p: int, v: int
) -> tuple[int, int, int, int]:
    """MoE layers on stage 0, on the last stage, and the most and fewest on any middle stage.

    Stage k holds model chunks k, k + p, ..., each of l / (p v) consecutive layers (Megatron-LM's
    interleaved assignment; v = 1 is the plain contiguous split).
    """
    if not is_moe:
        return 0, 0, 0, 0

    def before(layer: int) -> int:
        if layer <= first_dense:
            return 0
        return (layer - 1) // freq - (first_dense - 1) // freq

    chunk = n_layers // (p * v)
    counts = [
        sum(before((j * p + k + 1) * chunk) - before((j * p + k) * chunk) for j in range(v)) for k in range(p)
    ]
    middle = counts[1:-1] or [counts[0]]
    return counts[0], counts[-1], max(middle), min(middle)


def _stage_params(
    model: ModelSpec, layout: ParallelLayout, n_moe: int, first: bool, last: bool
) -> tuple[float, float]:
    """(dense-sharded, expert) parameters of one stage on one GPU, after TP/EP splitting."""
    t, e = layout.tp, layout.ep
    per_stage = model.n_layers // layout.pp
    n_dense = per_stage - n_moe
    norms = 2 * model.norm_params  # replicated across TP
    dense = n_dense * ((model.attention_params + model.dense_mlp_params) / t + norms)
    expert = 0.0
    if n_moe:
        shared = model.n_shared_experts * model.expert_params
        dense += n_moe * ((model.attention_params + shared) / t + norms + model.router_params)
        expert = n_moe * model.n_experts * model.expert_params / (layout.etp * e)
    if first:
        dense += model.embedding_params / t
    if last:
        # Megatron-LM keeps a copy of tied word embeddings on the last stage when pp > 1.
        out = model.output_params or (model.vocab_size * model.hidden_size if layout.pp > 1 else 0)
        dense += out / t + model.norm_params
    return dense, expert


def memory_breakdown(
    model: ModelSpec,
    layout: ParallelLayout,
    gpu_hbm_bytes: float | None = None,
    *,
    flash_attention: bool = False,
    zero3_prefetch_layers: int = 1,
    fp8: bool = False,
    framework: str | TrainingFramework = "megatron",
    offload_layers: int = 0,
    zero3_no_sync: bool = False,
) -> MemoryBreakdown:
    """Memory per GPU of training ``model`` with ``layout``, term by term.

        weights     = P_gpu x 2  / (D if ZeRO-3)  (+ 2 x the linear layers' weights with FP8, ZeRO < 3)
        gradients   = P_gpu x 4  / (D if ZeRO >= 2)
        optimizer   = P_gpu x 12 / (D if ZeRO >= 1)
        activations = in-flight layer-microbatches x per-layer activations + embedding/output terms

    with P_gpu the heaviest pipeline stage's parameters split over t (experts over t x ep), and D = dp x cp
    for dense weights, tp x cp x dp / (etp x ep) for experts.

    Parameters
    ----------
    model : ModelSpec
        The model.
    layout : ParallelLayout
        The layout; validated against the model (not against a GPU count).
    gpu_hbm_bytes : float, optional
        GPU memory, bytes; recorded so that ``fits`` and ``free_bytes`` can answer.
    flash_attention : bool, default False
        FlashAttention: no s x s score tensors (see :func:`activation_bytes_per_layer`).
    zero3_prefetch_layers : int, default 1
        ZeRO-3 holds the full ``weights`` of 1 + this many layers at once (the one computing and those
        prefetched: FSDP's unsharded units): (1 - 1/D) of each beyond the local shard, counted with the
        other activations.
    fp8 : bool, default False
        Transformer Engine FP8: each linear layer keeps an FP8 copy of its weight and of its transpose
        across the microbatches of a step (``get_fp8_workspace(cache_name="weight")`` with a transpose
        cache when gradients are on, TE v1.11 ``module/base.py``), 2 bytes per linear-layer weight added to
        ``weight_bytes`` (not under ZeRO-3, where each gathered layer is cast and freed); saved linear
        inputs take 1 byte (:func:`activation_bytes_per_layer`).
    framework : str or TrainingFramework, default "megatron"
        The training framework (a :data:`FRAMEWORKS` name or entry, as above): what ``selective`` saves,
        and the bytes per logit the loss holds at its peak when the first stage is also the last
        (4 s b V / t Megatron-LM's fp32 logits; 12 s b V / t torchtitan's upcast cross-entropy), plus,
        for torchtitan's op-level selective checkpointing, the rest of one layer rebuilt during its
        backward pass.
    offload_layers : int, default 0
        Layers whose activations Transformer Engine's CPU offload moves to the CPU's memory
        (:mod:`aifabric.training.offload`; pp = 1, no recomputation, fewer than the model's layers): the
        layer stash keeps L - N of its L layers' activations (the mean layer's, x N moved to
        ``offloaded_activation_bytes``). At most L - N layers' sets are on the GPU at once: each
        offloaded layer's GPU copy is freed at the end of its window, before the forward pass ends.
    zero3_no_sync : bool, default False
        ZeRO-3 with the gradient reduction skipped on all but the last microbatch (FSDP2
        ``set_requires_gradient_sync(False)``, FSDP1 ``no_sync()``): each parameter's gradient accumulates
        unsharded, in the reduce dtype, until the last microbatch reduce-scatters it, so with more than
        one microbatch ``gradient_bytes`` is ``grads`` x P_gpu, not / D (:func:`_zero3_unsharded_grads`).
        Refused below ZeRO-3 (:func:`check_zero3_no_sync`).

    Returns
    -------
    MemoryBreakdown
        Each term and the total, bytes per GPU.

    Raises
    ------
    ConfigError
        If the layout does not suit the model (see :meth:`ParallelLayout.validate`), ``framework`` is
        not in :data:`FRAMEWORKS`, the offload is one Megatron-LM refuses (:func:`check_offload`), or
        ``zero3_no_sync`` is set below ZeRO-3 (:func:`check_zero3_no_sync`).

    Notes
    -----
    Costs a few microseconds: the per-stage layer mix is cached per (model shape, pp, v).

    References
    ----------
    .. [1] Korthikanti et al., arXiv:2205.05198, Sec. 4.
    .. [2] Rajbhandari et al., https://doi.org/10.1109/SC41405.2020.00024, Sec. 5 (ZeRO stages).

    Examples
    --------
    The distributed optimizer's 6 + 12/d bytes per parameter (formula note): Llama 3 8B, dp = 8, ZeRO-1:

    >>> from aifabric.training.models import get_model
    >>> mb = memory_breakdown(get_model("llama3-8b"), ParallelLayout(dp=8, zero_stage=1), 80e9)
    >>> round(mb.model_state_bytes / mb.params_per_gpu, 3)
    7.5
    """
    layout.validate(model)
    check_offload(offload_layers, layout, model.n_layers)
    check_zero3_no_sync(zero3_no_sync, layout)
    fw = get_framework(framework)
    p, v = layout.pp, layout.virtual_pipeline_stages
    stage_moe = _stage_moe_counts(
        model.n_layers, model.first_dense_layers, model.moe_layer_freq, model.is_moe, p, v
    )
    weights, grads, optim, dense_params, expert_params = _heaviest_stage_state(model, layout, stage_moe)
    if fp8 and layout.zero_stage < 3:
        weights += _fp8_weight_cache(model, layout, stage_moe)
    params = dense_params + expert_params
    if zero3_no_sync:
        grads = max(grads, _zero3_unsharded_grads(model, layout, params))
    first = stage_moe[0]
    per_stage = model.n_layers // p
    units = in_flight_layer_microbatches(layout, model.n_layers)
    sac = fw if fw.op_level_selective else None
    layer_act = _first_stage_layer_act(model, layout, first, units, flash_attention, fp8, sac)
    offloaded = layer_act * offload_layers / model.n_layers  # pp = 1: units = L layers of one microbatch
    in_flight = units / per_stage
    other = _other_act(model, layout, first, flash_attention, fp8, fw)
    if layout.zero_stage >= 3:
        other += _zero3_gathered(model, layout, dense_params, expert_params, zero3_prefetch_layers)

    return MemoryBreakdown(
        weight_bytes=weights,
        gradient_bytes=grads,
        optimizer_bytes=optim,
        layer_activation_bytes=layer_act - offloaded,
        other_activation_bytes=other,
        params_per_gpu=params,
        in_flight_microbatches=in_flight,
        gpu_hbm_bytes=None if gpu_hbm_bytes is None else float(gpu_hbm_bytes),
        offloaded_activation_bytes=offloaded,
    )


def check_zero3_no_sync(zero3_no_sync: bool, layout: ParallelLayout) -> None:
    """Refuse gradient sync skipped below ZeRO-3 (FSDP full-shard), where it means nothing.

    FSDP2's ``set_requires_gradient_sync(False)`` and FSDP1's ``no_sync()`` skip the per-layer gradient
    reduce-scatters that only full sharding issues every microbatch; below it the gradients already reduce
    once per step, after the last microbatch (Megatron-Core's schedules run every microbatch but the last
    inside the DDP's ``no_sync_func``, ``megatron/core/pipeline_parallel/schedules.py``, the gradients
    accumulating in ``main_grad``), so the option would change neither the memory nor the step.

    Raises
    ------
    ConfigError
        Naming ``zero3_no_sync`` and the layout's ``zero_stage``.

    >>> check_zero3_no_sync(True, ParallelLayout(dp=8, zero_stage=1))
    Traceback (most recent call last):
    ...
    aifabric.errors.ConfigError: zero3_no_sync=True with zero_stage=1: skips the per-layer gradient reduce-scatters of ZeRO-3 (FSDP full-shard), and zero_stage 1 reduces the gradients once per step already
    """  # noqa: E501  (the doctest's expected message is one line)
    if zero3_no_sync and layout.zero_stage < 3:
        raise ConfigError(
            f"zero3_no_sync=True with zero_stage={layout.zero_stage}: skips the per-layer gradient "
            f"reduce-scatters of ZeRO-3 (FSDP full-shard), and zero_stage {layout.zero_stage} reduces the "
            "gradients once per step already"
        )


def _zero3_unsharded_grads(model: ModelSpec, layout: ParallelLayout, params: float) -> float:
    """Bytes of the unsharded gradients ZeRO-3 holds when it reduces once per step: ``grads`` x ``params``
    (the stage's parameters on one GPU, after TP/EP splitting) with more than one microbatch; 0 otherwise
    (one microbatch reduce-scatters, and frees, each layer's gradient as its backward ends).

    FSDP2's ``FSDPParam.to_accumulated_grad_if_needed`` (torch ``distributed/fsdp/_fully_shard/
    _fsdp_param.py``) moves each unsharded gradient into ``unsharded_accumulated_grad`` in the reduce
    dtype while gradient sync is off, kept until the synced microbatch: KempnerForge's 175B run on 360
    H200 ("with gradient accumulation, FSDP2 retains the unsharded fp32 gradient across microbatches ...
    on top of the working set", ``benchmarks/175b_360gpu/README.md`` @b62d2e3) ran out of memory with
    eight microbatches and fit with one."""
    if layout.zero_stage < 3 or layout.n_microbatches < 2:
        return 0.0
    return model.bytes_per_param.grads * params


def _heaviest_stage_state(
    model: ModelSpec, layout: ParallelLayout, stage_moe: tuple[int, int, int, int]
) -> tuple[float, float, float, float, float]:
    """Model state of the pipeline stage that holds the most: (weights, grads, optimizer) bytes and its
    (dense, expert) parameters per GPU.

        weights = P_gpu x 2 / (D if ZeRO-3), gradients = P_gpu x 4 / (D if ZeRO >= 2),
        optimizer = P_gpu x 12 / (D if ZeRO >= 1)

    with D = dp x cp for dense weights, tp x cp x dp / (etp x ep) for experts. ``stage_moe`` is the
    MoE-layer count of the (first, last, most, fewest) stages from :func:`_stage_moe_counts`; the middle ones
    count when pp > 2.
    """
    first, last, most, fewest = stage_moe
    p = layout.pp
    bpp = model.bytes_per_param
    zero = layout.zero_stage
    d_dense = layout.dp * layout.cp
    d_expert = layout.expert_dp
    w_div = (d_dense, d_expert) if zero >= 3 else (1, 1)
    g_div = (d_dense, d_expert) if zero >= 2 else (1, 1)
    o_div = (d_dense, d_expert) if zero >= 1 else (1, 1)

    candidates = [(first, True, p == 1), (last, p == 1, True)]
    if p > 2:
        candidates += [(most, False, False), (fewest, False, False)]
    best: tuple[float, float, float, float, float] | None = None
    for n_moe, is_first, is_last in candidates:
        dense, expert = _stage_params(model, layout, n_moe, is_first, is_last)
        w = bpp.weights * (dense / w_div[0] + expert / w_div[1])
        g = bpp.grads * (dense / g_div[0] + expert / g_div[1])
        o = bpp.optimizer * (dense / o_div[0] + expert / o_div[1])
        if best is None or w + g + o > best[0] + best[1] + best[2]:
            best = (w, g, o, dense, expert)
    assert best is not None  # candidates is never empty
    return best


def _fp8_weight_cache(
    model: ModelSpec, layout: ParallelLayout, stage_moe: tuple[int, int, int, int]
) -> float:
    """Bytes of Transformer Engine's FP8 weight copies and transposes (1 + 1 byte per weight) of the linear
    layers of the stage with the most MoE layers, on one GPU: attention, dense MLP or shared experts over
    t, routed experts over etp x ep."""
    n_moe = max(stage_moe[:3])
    per_stage = model.n_layers // layout.pp
    shared = model.n_shared_experts * model.expert_params
    dense = (per_stage - n_moe) * model.dense_mlp_params + n_moe * shared
    linear = (per_stage * model.attention_params + dense) / layout.tp
    linear += n_moe * model.n_experts * model.expert_params / (layout.etp * layout.ep)
    return 2.0 * linear


def _first_stage_layer_act(
    model: ModelSpec,
    layout: ParallelLayout,
    first: int,
    units: float,
    flash: bool,
    fp8: bool = False,
    sac: TrainingFramework | None = None,
) -> float:
    """Layer activations of the first stage, bytes: ``units`` in-flight layer-microbatches, each the mean
    per-layer activation of a stage with ``first`` MoE layers."""
    per_stage = model.n_layers // layout.pp
    mode = layout.recompute
    dense_act = _layer_act(model, layout, mode, False, flash, fp8, sac) if first < per_stage else 0.0
    moe_act = _layer_act(model, layout, mode, True, flash, fp8, sac) if first else 0.0
    return units * ((per_stage - first) * dense_act + first * moe_act) / per_stage


def _other_act(
    model: ModelSpec,
    layout: ParallelLayout,
    first: int,
    flash: bool,
    fp8: bool = False,
    fw: TrainingFramework = FRAMEWORKS["megatron"],
) -> float:
    """Activations outside the layers, bytes: embedding dropout mask, output layer and loss (pp = 1), and
    the layer being recomputed (full recomputation; torchtitan's op-level selective: what it rebuilds)."""
    p = layout.pp
    per_stage = model.n_layers // p
    h = model.hidden_size
    tokens = layout.microbatch_size * model.seq_len / layout.cp
    t = layout.tp
    sp_div = t if layout.sequence_parallel else 1
    other = 0.0
    if model.dropout:
        other += min(p, layout.n_microbatches) * tokens * h / sp_div  # input-embedding dropout mask
    if p == 1:
        # final norm input + output-layer input (16-bit), the loss's logits at its peak: with SP and
        # Megatron's 4 bytes per logit Korthikanti's 4 s b h / t (1 + V / h); torchtitan 12 (FRAMEWORKS)
        other += tokens * (4 * h / sp_div + fw.loss_bytes_per_logit * model.vocab_size / t)
    if layout.recompute is Recompute.FULL:
        # the layer being recomputed holds its full activations during its backward pass
        working = _layer_act(model, layout, Recompute.NONE, False, flash, fp8) if first < per_stage else 0.0
        if first:
            working = max(working, _layer_act(model, layout, Recompute.NONE, True, flash, fp8))
        other += working
    elif layout.recompute is Recompute.SELECTIVE and fw.op_level_selective and first < per_stage:
        # the layer being recomputed rebuilds what the policy did not save, during its backward pass
        full = _layer_act(model, layout, Recompute.NONE, False, flash, fp8)
        other += full - _op_sac_layer_act(model, layout, False, fw.keeps_attention)
    return other


def _zero3_gathered(
    model: ModelSpec, layout: ParallelLayout, dense_params: float, expert_params: float, prefetch_layers: int
) -> float:
    """ZeRO-3: the gathered parameters of the computing layer and the prefetched ones beyond the local
    shard, bytes: min(1 + prefetch, l/pp) x w_g x (P_dense (1 - 1/D) + P_expert (1 - 1/D_e)) / (l/pp),
    w_g the bytes per gathered weight (``BytesPerParam.gathered``, the mixed-precision parameter dtype).

    Where the gathered dtype is not the shard's (FSDP2's fp32 shards gathered as bf16,
    ``MixedPrecisionPolicy(param_dtype=torch.bfloat16)``) the local shard is cast too and the whole layer
    is a new copy: the (1 - 1/D) factors become 1.
    """
    bpp = model.bytes_per_param
    per_stage = model.n_layers // layout.pp
    d_dense = layout.dp * layout.cp
    d_expert = max(1, layout.expert_dp)
    in_flight_layers = min(1 + prefetch_layers, per_stage)
    if bpp.gathered_bytes == bpp.weights:
        unsharded = dense_params * (1 - 1 / d_dense) + expert_params * (1 - 1 / d_expert)
    else:
        unsharded = dense_params + expert_params
    return in_flight_layers * bpp.gathered_bytes * unsharded / per_stage


@dataclass(frozen=True)
class MemoryRemedy:
    """A published setting that lowers memory per GPU: the CLI option, the layout field it sets, its
    source."""

    option: str
    field: str
    value: int | Recompute
    source: str

    def applies(self, layout: ParallelLayout) -> bool:
        """True if the layout does not already use this setting (a ZeRO stage: nor a higher one)."""
        current = getattr(layout, self.field)
        return current < self.value if isinstance(self.value, int) else current != self.value

    def apply(self, layout: ParallelLayout) -> ParallelLayout:
        """The layout with this setting."""
        changes: dict[str, Any] = {self.field: self.value}
        return replace(layout, **changes)


#: Settings published runs used to make a layout fit, mildest first (tried in this order).
MEMORY_REMEDIES: tuple[MemoryRemedy, ...] = (
    MemoryRemedy(
        "--zero 2",
        "zero_stage",
        2,
        "Llama 3 Sec. 3.3.2: FSDP shards gradients and optimizer states, weights not resharded after the "
        "forward pass",
    ),
    MemoryRemedy(
        "--recompute full",
        "recompute",
        Recompute.FULL,
        "Korthikanti et al. 2022 Sec. 4, Megatron-LM --recompute-granularity full",
    ),
)


def check_fits(
    model: ModelSpec,
    layout: ParallelLayout,
    gpu_hbm_bytes: float,
    *,
    flash_attention: bool = False,
    zero3_prefetch_layers: int = 1,
    fp8: bool = False,
    framework: str | TrainingFramework = "megatron",
    offload_layers: int = 0,
    zero3_no_sync: bool = False,
) -> MemoryBreakdown:
    """Return the memory breakdown if the layout fits in ``gpu_hbm_bytes``; raise otherwise.

    Parameters
    ----------
    model : ModelSpec
        The model.
    layout : ParallelLayout
        The layout.
    gpu_hbm_bytes : float
        Usable GPU memory, bytes (e.g. 80e9 for an A100/H100 80 GB; subtract what the runtime reserves).
    flash_attention, zero3_prefetch_layers, fp8, framework, offload_layers, zero3_no_sync
        See :func:`memory_breakdown`.

    Returns
    -------
    MemoryBreakdown
        As :func:`memory_breakdown`.

    Raises
    ------
    Infeasible
        If the total exceeds ``gpu_hbm_bytes``; the message gives every term and the GPU's memory, and the
        exception's ``memory`` attribute holds the :class:`MemoryBreakdown`.
    ConfigError
        If the layout does not suit the model, or ``gpu_hbm_bytes`` is not positive.

    Examples
    --------
    >>> from aifabric.training.models import get_model
    >>> check_fits(get_model("llama3-405b"), ParallelLayout(tp=8), 80e9)
    Traceback (most recent call last):
    ...
    aifabric.errors.Infeasible: llama3-405b with tp=8 pp=1 dp=1 b=1 B=1 zero=0 recompute=none needs 1370.4 GB per GPU: weights 101.5 GB, grads 202.9 GB, optimizer 608.8 GB, activations 457.1 GB; the GPU has 80 GB
    """  # noqa: E501  (the doctest's expected message is one line)
    if isinstance(gpu_hbm_bytes, bool) or not gpu_hbm_bytes > 0:
        raise ConfigError(f"gpu_hbm_bytes must be > 0, got {gpu_hbm_bytes!r}")
    mb = memory_breakdown(
        model,
        layout,
        gpu_hbm_bytes,
        flash_attention=flash_attention,
        zero3_prefetch_layers=zero3_prefetch_layers,
        fp8=fp8,
        framework=framework,
        offload_layers=offload_layers,
        zero3_no_sync=zero3_no_sync,
    )
    if not mb.fits:
        err = Infeasible(
            f"{model.name} with {layout.describe()} needs {mb.summary()}; the GPU has {_gb(gpu_hbm_bytes)}"
        )
        err.memory = mb  # type: ignore[attr-defined]  # the breakdown, for callers that rank failures (planner)
        raise err
    return mb
