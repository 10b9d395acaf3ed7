"""Memory-bound work of a layer: the HBM bytes its element-wise kernels move, as one code base runs them.

Norms, residual adds, activation functions, rotary embeddings, layout copies and the cross-entropy read and
write whole activation tensors and do a few FLOPs per element: their time is bytes / HBM bandwidth. How
many bytes depends on the kernels, not on the model: a fused kernel reads its inputs and writes its output
once, where eager PyTorch runs one kernel per operator, each reading and writing a full tensor, some of
them in fp32. The step model (:class:`~aifabric.training.step.StepModel`) takes the kernel set from
``StepOptions.elementwise``; the sets are data (:data:`ELEMENTWISE_KERNELS`), each count derived from its
code's operator list below.

Why it matters more on Hopper: the H100 computes 989 TFLOP/s over 3.35 TB/s (295 FLOP per byte), the A100
312 over 2.04 (153): the same bytes cost about twice the share of a step on an H100.

Examples
--------
Forward bytes per token of one Llama 3 8B layer (h = 4,096, SwiGLU f = 14,336, 8 KV heads of 128):

>>> from aifabric.training.models import get_model
>>> m = get_model("llama3-8b")
>>> round(layer_forward_bytes(m, ELEMENTWISE_KERNELS["fused"]) / m.hidden_size, 1)  # bytes per h
41.0
>>> round(layer_forward_bytes(m, ELEMENTWISE_KERNELS["llama-eager"]) / m.hidden_size, 1)
153.0
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from math import comb
from typing import TypeVar

from aifabric.errors import ConfigError
from aifabric.training.models import ModelSpec

__all__ = [
    "ELEMENTWISE_KERNELS",
    "MOE_DISPATCHERS",
    "MOE_DISPATCH_ELEMENTS",
    "ElementwiseKernels",
    "MoeDispatcher",
    "check_kernels_fit",
    "check_kernels_framework",
    "elementwise_kernels",
    "MOE_WIRE_BYTES",
    "ep_wire_bytes",
    "expected_destinations",
    "moe_wire_dtype",
    "layer_forward_bytes",
    "moe_dispatcher",
]

_ACT_BYTES = 2  # 16-bit activations
_T = TypeVar("_T")

#: Forward HBM elements per token of Megatron-Core's MoE router and all-to-all token dispatcher, as
#: (per routed slot: x top_k, per token) multiples of h, all 16-bit: the eager PyTorch operators of
#: NVIDIA/Megatron-LM core_v0.10.0 (NeMo 24.12), ``megatron/core/transformer/moe``:
#:
#: - ``router.py`` ``gating``: ``F.linear(input, weight)``, h -> E logits: reads the token (1 per token;
#:   the E-wide softmax, top-k and auxiliary loss move E << h elements);
#: - ``moe_utils.py`` ``permute``: ``tokens.index_select(0, sorted_indices)`` reads a token row per routed
#:   slot and writes it (2 per slot);
#: - ``moe_utils.py`` ``unpermute``: ``permuted_tokens * permuted_probs`` reads and writes every slot (2 per
#:   slot), ``torch.zeros(restore_shape)`` writes the output (1 per token), ``scatter_add_`` reads every slot
#:   and writes the output (1 per slot + 1 per token).
#:
#: (5, 3): 5 k + 3 elements per token, on the sequence-parallel shard (``token_dispatcher.py``
#: ``MoEAlltoAllTokenDispatcher.token_permutation`` permutes before the expert all-to-all and the expert
#: TP all-gather, ``token_unpermutation`` after the reduce-scatter and the all-to-all).
MOE_DISPATCH_ELEMENTS: tuple[int, int] = (5, 3)


@dataclass(frozen=True, slots=True)
class MoeDispatcher:
    """HBM traffic of one MoE token dispatcher's own kernels, in 16-bit elements of width h.

    Parameters
    ----------
    name : str
        As ``StepOptions.moe_dispatcher`` spells it.
    per_slot, per_token : int
        Forward elements per routed slot (x top_k) and per token of the rank's shard: the router's read of
        the token, the permutation before the all-to-all and the unpermutation after it.
    local_sort : bool
        Whether the received slots are sorted by local expert after the all-to-all and back before the
        return (Megatron-Core's "permutation 2"): :data:`MOE_LOCAL_SORT_ELEMENTS` per slot a rank's
        experts compute, where the rank holds more than one expert and ep > 1.
    source : str
    once_per_rank : bool, default False
        What the expert all-to-all carries: one copy of a token per routed slot (top_k a token, False:
        Megatron-Core's alltoall dispatcher permutes the tokens into their top_k expert slots before the
        all-to-all, ``token_dispatcher.py`` ``MoEAlltoAllTokenDispatcher``), or one per destination rank
        (True: DeepEP's ``get_dispatch_layout`` marks ``is_token_in_rank`` and ``dispatch`` sends each
        token once to every rank marked, the rank's experts picking their slots from it; Hybrid-EP's
        ``dispatched_hidden`` likewise holds a row per token a rank receives): the expected
        :func:`expected_destinations` ranks of the ep.
    quantized_wire : bool, default False
        Whether the all-to-all may carry an MXFP8 payload (:data:`MOE_WIRE_BYTES`): Megatron-LM allows
        ``moe_dispatch_fwd_dtype`` / ``moe_combine_bwd_dtype`` other than bf16 on its flex dispatcher only.
    einsum : bool, default False
        Whether the tokens reach their experts' capacity slots through dense one-hot matrix products
        instead of permutation kernels (GShard, arXiv:2006.16668 Sec. 2.2 and Algorithm 1: ``einsum("GSEC,
        GSM->EGCM", dispatch_mask, inputs)`` and ``einsum("GSEC,GECM->GSM", combine_weights, outputs)``):
        matrix-unit FLOPs the step times with the experts' GEMMs
        (:func:`~aifabric.training.flops.einsum_dispatch_forward_flops_per_token`).
    """

    name: str
    per_slot: int
    per_token: int
    local_sort: bool
    source: str
    once_per_rank: bool = False
    quantized_wire: bool = False
    einsum: bool = False

    def copies_per_token(self, n_experts: int, top_k: int, ep: int) -> float:
        """Copies of a token the dispatch all-to-all sends (its bytes per token over h x 2): top_k, or
        with ``once_per_rank`` ``expected_destinations(ep, n_experts, top_k)``."""
        if not self.once_per_rank:
            return float(top_k)
        return expected_destinations(ep, n_experts, top_k)


def expected_destinations(targets: int, n_experts: int, top_k: int) -> float:
    """Expected distinct targets (ranks, or nodes) a token's top_k experts sit on, with the n_experts
    spread evenly over the targets (n_experts / targets each) and the top_k drawn uniformly, without
    replacement (balanced routing): a target is missed when all top_k fall among the other
    n_experts - n_experts / targets experts, with probability C(E - E / R, k) / C(E, k)
    (hypergeometric), so by linearity of expectation over the R targets

        D = R (1 - C(E - E / R, k) / C(E, k)),

    at most min(k, R), 1 at R = 1. Example: DeepSeek-V3's 256 experts, top-8, on 64 ranks:
    D = 64 (1 - C(252, 8) / C(256, 8)) = 7.68 of the 8 copies; on 8 ranks (32 experts each): 5.29.
    Device-limited routing (DeepSeek-V3's top-4 nodes) caps the nodes a token reaches below this; the
    step model does not route by node groups."""
    per_target = n_experts // targets
    return targets * (1 - comb(n_experts - per_target, top_k) / comb(n_experts, top_k))


#: Forward elements per slot a rank's experts compute of Megatron-Core's "permutation 2" and its inverse:
#: ``token_dispatcher.py`` ``MoEAlltoAllTokenDispatcher.dispatch_postprocess`` ("Permutation 2: Sort tokens
#: by local expert", ``sort_chunks_by_idxs``; with drop-and-pad ``.transpose(0, 1).contiguous()``) reads and
#: writes every received slot (2), and ``combine_preprocess`` ("Unpermutation 2") the experts' outputs (2);
#: eager (``torch.cat`` of the split chunks, core_v0.10.0 ``moe_utils.py``) or fused (Transformer Engine
#: ``triton/permutation.py`` ``_sort_chunks_by_map_kernel``: one load, one store per row) alike.
MOE_LOCAL_SORT_ELEMENTS = 4

#: Every token dispatcher the step model knows (``StepOptions.moe_dispatcher``).
MOE_DISPATCHERS: dict[str, MoeDispatcher] = {
    d.name: d
    for d in (
        MoeDispatcher(
            "alltoall",
            *MOE_DISPATCH_ELEMENTS,
            True,
            "Megatron-Core MoEAlltoAllTokenDispatcher with the eager permutation (core_v0.10.0 moe_utils.py, "
            "MOE_DISPATCH_ELEMENTS) and its permutation 2 (MOE_LOCAL_SORT_ELEMENTS)",
        ),
        MoeDispatcher(
            "alltoall-fused",
            2,
            3,
            True,
            "the alltoall dispatcher with --moe-permute-fusion: Transformer Engine triton/permutation.py "
            "_permute_kernel loads a token once and stores it to each of its k slots (1 + k), "
            "_unpermute_kernel loads the k slots and stores the weighted sum once (k + 1); the router reads "
            "the token (1): 2 k + 3",
        ),
        MoeDispatcher(
            "flex",
            4,
            1,
            False,
            "Megatron-Core MoEFlexTokenDispatcher (DeepEP, HybridEP): the permutation before the all-to-all "
            "is inside the dispatch kernel; the received tokens are permuted into their experts' slots "
            "(get_permuted_hidden_states_by_experts) and back (get_restored_hidden_states_by_experts), a "
            "read and a write of every slot each way at most (fewer received tokens than slots); the router "
            "reads the token (1)",
            once_per_rank=True,
            quantized_wire=True,
        ),
        MoeDispatcher(
            "einsum",
            0,
            1,
            False,
            "GShard's dense dispatch as MaxText runs it with capacity_factor > 0 and megablox off "
            "(tpu-recipes-v0.1.2 MaxText/layers/moe.py dense_matmul: 'BSM,BSEC -> EBCM' and "
            "'EBCM,BSEC -> BSM' over the one-hot masks of generate_masks): no permutation kernel; the "
            "router reads the token (1)",
            einsum=True,
        ),
    )
}


#: Bytes per element of the expert all-to-all's payload by wire dtype (Megatron-LM
#: ``moe_dispatch_fwd_dtype`` / ``moe_combine_bwd_dtype``, transformer_config.py, 'bf16' or 'mxfp8': the
#: 'ncclep' flex backend quantizes the forward dispatch and the backward combine with Transformer Engine;
#: its DeepEP and HybridEP paths send bf16, fused_a2a.py "fp8_dispatch = False  # Currently, we do not
#: support fp8 dispatch"). MXFP8: 8-bit elements and one 8-bit E8M0 scale per block of 32 (OCP
#: Microscaling Formats (MX) v1.0, Sec. 5: k = 32), 1 + 1 / 32 bytes; DeepEP's own FP8 payload, one fp32
#: scale per 128 elements, is 1 + 4 / 128, the same.
MOE_WIRE_BYTES: dict[str, float] = {"bf16": 2.0, "mxfp8": 1.0 + 1.0 / 32}


def moe_wire_dtype(field: str, name: str) -> float:
    """Bytes per element of wire dtype ``name`` (:data:`MOE_WIRE_BYTES`; a ConfigError naming ``field``
    and the value otherwise)."""
    return _named(MOE_WIRE_BYTES, field, name)


def ep_wire_bytes(dispatch_fwd: str, combine_bwd: str, n_rec: int) -> float:
    """Mean bytes per element of one MoE layer's 2 (2 + n_rec) all-to-alls: each forward (the first and
    the n_rec recomputed) dispatches in ``dispatch_fwd`` (w_d) and combines in bf16 (2); the backward
    runs the combine's gradient the dispatch way in ``combine_bwd`` (w_c) and the dispatch's in bf16:

        w = ((1 + n_rec) (w_d + 2) + (w_c + 2)) / (2 (2 + n_rec)),

    2 with both bf16. Every call priced at w, the layer's all-to-all seconds are exact where the time
    is affine in the bytes (alpha + n / beta, one algorithm); the forward / backward split is not."""
    w_d = moe_wire_dtype("moe_dispatch_fwd_dtype", dispatch_fwd)
    w_c = moe_wire_dtype("moe_combine_bwd_dtype", combine_bwd)
    return ((1 + n_rec) * (w_d + 2) + (w_c + 2)) / (2 * (2 + n_rec))


def moe_dispatcher(name: str) -> MoeDispatcher:
    """The dispatcher ``name`` of :data:`MOE_DISPATCHERS` (a ConfigError naming the value and the known
    dispatchers otherwise)."""
    return _named(MOE_DISPATCHERS, "moe_dispatcher", name)


def _named(registry: Mapping[str, _T], field: str, name: str) -> _T:
    """``registry[name]``; a ConfigError naming ``field``, the value and the known names otherwise."""
    found = registry.get(name)
    if found is None:
        raise ConfigError(f"{field} must be one of {', '.join(registry)}, got {name!r}")
    return found


@dataclass(frozen=True, slots=True)
class ElementwiseKernels:
    """Forward HBM bytes per element of each memory-bound kernel group of one Transformer layer.

    Backward moves twice the forward bytes (:class:`~aifabric.training.step.StepModel`). Widths: h hidden,
    f MLP, q = heads x head size, k = KV heads x head size, V vocabulary.

    Parameters
    ----------
    name : str
    norm : float
        Per h element, each of the layer's two norms.
    residual : float
        Per h element, each of the two residual adds.
    dropout : float
        Per h element, both residual dropouts together (models with dropout).
    activation, gated_activation : float
        Per f element: the activation function of a plain (GeLU) and of a gated (SwiGLU) MLP.
    rotary : float
        Per element of Q and K (q + k elements): rotary position embedding.
    output_copy : float
        Per q element: the attention output made contiguous again.
    kv_repeat : float
        Per element of q + k, with grouped-query attention only: K and V repeated to every query head.
    logits : float
        Per V element: the cross-entropy over the logits (one token).
    source : str
    norm_kind : str or None, default None
        The norm the ``norm`` count is of (``"rmsnorm"``: the Llama code's, operator by operator); None:
        any norm (one fused kernel reads and writes the tensor once, LayerNorm or RMSNorm alike).
    logits_backward : float or None, default None
        Per V element: the cross-entropy's backward pass, where it is not twice its forward; None: twice
        ``logits``, as every other group.
    frameworks : tuple of str or None, default None
        The training frameworks (:data:`~aifabric.training.memory.FRAMEWORKS`) whose code the counts are
        of; None: any (fused kernels move the same bytes whichever framework launches them).
    """

    name: str
    norm: float
    residual: float
    dropout: float
    activation: float
    gated_activation: float
    rotary: float
    output_copy: float
    kv_repeat: float
    logits: float
    source: str
    norm_kind: str | None = None
    logits_backward: float | None = None
    frameworks: tuple[str, ...] | None = None

    @property
    def logits_backward_bytes(self) -> float:
        """Per V element, the cross-entropy's backward: ``logits_backward``, or twice ``logits``."""
        return 2 * self.logits if self.logits_backward is None else self.logits_backward


#: Megatron-LM / Transformer Engine fused kernels and torch.compile's fusions.
_FUSED = ElementwiseKernels(
    name="fused",
    norm=4,  # LayerNorm / RMSNorm in one kernel: read 2, write 2
    residual=6,  # bias + dropout + add fused: read 2 + 2, write 2
    dropout=4,  # the two 1-byte masks, written forward and read backward
    activation=4,  # GeLU: read 2, write 2
    gated_activation=6,  # SwiGLU in one kernel: read 2 + 2, write 2
    rotary=0.0,  # fused into the attention input (Transformer Engine)
    output_copy=0.0,
    kv_repeat=0.0,  # the attention kernel reads grouped K, V directly
    logits=8,  # fused cross-entropy: read the fp32 logits (4) and write their gradient (4)
    source=(
        "Megatron-LM / Transformer Engine fused kernels (fused bias-dropout-add, fused LayerNorm, "
        "fused SwiGLU, vocabulary-parallel cross-entropy) and torch.compile's fusions; Korthikanti "
        "et al. 2022 (arXiv:2205.05198) Sec. 4 for the tensors"
    ),
)
#: Meta's Llama code in eager PyTorch, one kernel per operator.
_LLAMA_EAGER = ElementwiseKernels(
    name="llama-eager",
    norm=36,  # x.float() 2+4, pow(2) 4+4, mean 4, x * rsqrt 4+4, type_as 4+2, * weight 2+2
    residual=6,  # x + h: read 2 + 2, write 2
    dropout=4,
    activation=4,
    gated_activation=10,  # F.silu(w1 x): read 2, write 2; * w3 x: read 2 + 2, write 2
    rotary=20,  # xq.float() 2+4, complex multiply 4+4, type_as 4+2 (Q and K)
    output_copy=4,  # output.transpose(1, 2).contiguous(): read 2, write 2
    kv_repeat=4,  # repeat_kv: K and V each read (2 per k element) and written (2 per q element)
    logits=14,  # pred.float() 2+4, log_softmax 4+4 (fp32), before its backward
    source=(
        "Meta's Llama model code as pytorch/torchtitan runs it without torch.compile "
        "(torchtitan/models/llama/model.py and models/norms.py, 2024: RMSNorm as "
        "x * rsqrt(x.pow(2).mean(-1) + eps) on x.float(), apply_rotary_emb through complex fp32, "
        "repeat_kv, F.silu(w1(x)) * w3(x); train.py loss_fn: F.cross_entropy(pred.float(), ...)), "
        "one CUDA kernel per operator"
    ),
    norm_kind="rmsnorm",
)
#: The fused set with Megatron-Core's loss unfused.
_MEGATRON_UNFUSED_CE = replace(
    _FUSED,
    name="megatron-unfused-ce",
    logits=38,  # forward: logits.float() 2+4, max 4, -= max 4+4, exp 4+4, sum 4, div_ 4+4
    logits_backward=14,  # grad.mul_(grad_output) 4+4, the cast back to bf16 4+2
    source=(
        "the fused set with Megatron-Core's vocabulary-parallel cross-entropy unfused, as it runs without "
        "--cross-entropy-loss-fusion (core_r0.8.0 tensor_parallel/cross_entropy.py "
        "_VocabParallelCrossEntropy: logits.float(), torch.max, in-place subtract, torch.exp, sum, div_; "
        "backward mul_ and the bf16 cast of the gradient): 52 bytes per vocabulary element and token against "
        "the fused 24"
    ),
    frameworks=("megatron",),  # a Megatron-LM flag: torchtitan runs its own loss (cross_entropy, upcast)
)

#: Every kernel set the step model knows, by name (``StepOptions.elementwise``).
ELEMENTWISE_KERNELS: dict[str, ElementwiseKernels] = {
    k.name: k for k in (_FUSED, _LLAMA_EAGER, _MEGATRON_UNFUSED_CE)
}


def elementwise_kernels(name: str) -> ElementwiseKernels:
    """The kernel set ``name`` of :data:`ELEMENTWISE_KERNELS`.

    Raises
    ------
    ConfigError
        Naming the value and the known sets.
    """
    return _named(ELEMENTWISE_KERNELS, "elementwise", name)


def check_kernels_fit(model: ModelSpec, kernels: ElementwiseKernels) -> None:
    """ConfigError naming ``elementwise`` when ``kernels`` count a norm ``model`` does not have: the Llama
    code's eager RMSNorm (36 bytes per element) is no count of a LayerNorm model's (``nn.LayerNorm`` is one
    kernel even in eager PyTorch)."""
    if kernels.norm_kind is not None and model.norm != kernels.norm_kind:
        raise ConfigError(
            f"elementwise: {kernels.name!r} counts the kernels of a {kernels.norm_kind} model's code, and "
            f"model {model.name!r} has {model.norm}; use 'fused'"
        )


def check_kernels_framework(kernels: ElementwiseKernels, framework: str) -> None:
    """ConfigError naming ``elementwise`` and ``framework`` when ``kernels`` count another framework's code:
    Megatron-Core's unfused cross-entropy (``--cross-entropy-loss-fusion`` off) is no kernel torchtitan
    runs, whose loss the framework already prices."""
    if kernels.frameworks is not None and framework not in kernels.frameworks:
        code = " or ".join(kernels.frameworks)
        raise ConfigError(
            f"elementwise: {kernels.name!r} counts kernels of the {code} code, not of framework "
            f"{framework!r}, whose own loss is already priced; use 'fused'"
        )


def layer_forward_bytes(
    model: ModelSpec,
    kernels: ElementwiseKernels,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    moe: bool = False,
    ep: int = 1,
    etp: int | None = None,
    dispatcher: MoeDispatcher = MOE_DISPATCHERS["alltoall"],
) -> float:
    """Forward HBM bytes per token of one layer's element-wise kernels on one GPU (attention scores aside).

        bytes = (2 norm + 2 residual [+ dropout]) h / t_sp + act x f / t
                + (rotary (q + k) + output_copy q [+ kv_repeat (q + k)]) / t

    with t_sp = t under sequence parallelism, else 1. MoE layers run the activation of each routed slot
    (top-k + shared experts, expert width) and the ``dispatcher``'s own kernels: (per_slot k + per_token)
    h elements of 2 bytes on the t_sp shard (the alltoall dispatcher's eager kernels:
    :data:`MOE_DISPATCH_ELEMENTS`, 5 k + 3), and, where it sorts the received slots by local expert and a
    rank holds several of the E experts over ep > 1, :data:`MOE_LOCAL_SORT_ELEMENTS` per slot its experts
    compute, k e_t / t per token (e_t = ``etp``, default t: the expert TP all-gather comes first).
    """
    m, k = model, kernels
    h, t = m.hidden_size, tp
    t_sp = t if sequence_parallel else 1
    hidden = (2 * k.norm + 2 * k.residual + (k.dropout if m.dropout else 0.0)) * h / t_sp
    per_width = k.gated_activation if m.gated_mlp else k.activation
    if moe:
        mlp = (m.top_k + m.n_shared_experts) * per_width * m.expert_ffn_size / t
        mlp += (dispatcher.per_slot * m.top_k + dispatcher.per_token) * h * _ACT_BYTES / t_sp
        if dispatcher.local_sort and 1 < ep < m.n_experts:
            slots = m.top_k * (t if etp is None else etp) / t
            mlp += MOE_LOCAL_SORT_ELEMENTS * slots * h * _ACT_BYTES
    else:
        mlp = per_width * m.ffn_size / t
    q, kv = m.n_heads * m.head_size, m.kv_heads * m.head_size
    attention = k.rotary * (q + kv) + k.output_copy * q
    if kv < q:
        attention += k.kv_repeat * (q + kv)
    return hidden + mlp + attention / t
