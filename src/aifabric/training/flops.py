"""Parameter counts and training FLOPs of transformer models.

Two families of functions:

- the closed forms of the Megatron-LM paper for GPT models (Eq. 2 for parameters, Eq. 3 for FLOPs with full
  recomputation, Eq. 4 for training time), kept literal so that the paper's tables come out exactly; and
- general counts for any :class:`~aifabric.training.models.ModelSpec` (grouped-query attention, gated MLPs,
  mixture of experts), which reduce to the closed forms for the GPT presets.

FLOPs follow the Megatron-LM convention: a multiply-add is 2 FLOPs; only matrix multiplications count
(weights, the two attention-score products, the logit layer); attention is counted over the whole sequence
(no causal halving); the backward pass costs twice the forward. The paper calls this "a lower bound for the
true FLOP count".

References
----------
.. [1] Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
   SC'21, https://doi.org/10.1145/3458817.3476209 (arXiv:2104.04473), Sec. 5.1 and Appendix.
.. [2] Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models", MLSys 2023
   (arXiv:2205.05198), Sec. 6.3 and Appendix A.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from aifabric.errors import ConfigError
from aifabric.training.layout import Recompute
from aifabric.training.models import ModelSpec

__all__ = [
    "active_param_count",
    "attention_core_forward_flops_per_token",
    "einsum_dispatch_forward_flops_per_token",
    "forward_flops_per_token",
    "layer_forward_flops_per_token",
    "logit_forward_flops_per_token",
    "megatron_gpt_flops_per_iteration",
    "megatron_gpt_params",
    "megatron_training_time_s",
    "op_sac_recompute_forward_flops_per_token",
    "param_count",
    "sliding_window_span",
    "training_flops_per_iteration",
    "training_flops_per_token",
]


def _positive(**values: float) -> None:
    """Raise ``ConfigError`` for the first of ``values`` (in the order given) that is not a number > 0."""
    for name, value in values.items():
        if isinstance(value, bool) or not value > 0:
            raise ConfigError(f"{name} must be > 0, got {value!r}")


# ------------------------------------------------------------------------------------------- parameters
def megatron_gpt_params(n_layers: int, hidden_size: int, vocab_size: int, seq_len: int) -> float:
    """Parameters of a Megatron-LM GPT model, Eq. 2 of the Megatron-LM paper.

        P = 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h))

    Per layer: QKV and output projections 4h^2 + 4h, MLP 8h^2 + 5h, two LayerNorms 4h; plus word and
    position embeddings (V + s) h, the output layer tied to the word embeddings. The final LayerNorm (2h)
    is left out, as in the paper.

    Parameters
    ----------
    n_layers : int
        l, transformer layers.
    hidden_size : int
        h, hidden size.
    vocab_size : int
        V, vocabulary size.
    seq_len : int
        s, sequence length (learned position embeddings).

    Returns
    -------
    float
        Parameters (a count).

    Raises
    ------
    ConfigError
        If any argument is not positive.

    References
    ----------
    .. [1] Narayanan et al., SC'21, https://doi.org/10.1145/3458817.3476209, Eq. 2.

    Examples
    --------
    The 1-trillion-parameter model of Table 1 (l = 128, h = 25,600):

    >>> round(megatron_gpt_params(128, 25600, 51200, 2048) / 1e9, 1)
    1008.0
    """
    _positive(n_layers=n_layers, hidden_size=hidden_size, vocab_size=vocab_size, seq_len=seq_len)
    l, h = n_layers, hidden_size  # noqa: E741 - the paper's symbols
    return 12 * l * h * h * (1 + 13 / (12 * h) + (vocab_size + seq_len) / (12 * l * h))


def param_count(model: ModelSpec) -> int:
    """Total parameters of a model: every layer, all experts, embeddings, output layer, final norm.

        P = n_dense * P_dense_layer + n_moe * P_moe_layer + V h [+ s h] [+ V h if untied] + P_norm

    For the Megatron GPT presets this is Eq. 2 plus the final LayerNorm (2h).

    Parameters
    ----------
    model : ModelSpec
        The model.

    Returns
    -------
    int
        Parameters.

    Examples
    --------
    Llama 3 8B (untied embeddings, GQA with 8 KV heads, SwiGLU):

    >>> from aifabric.training.models import get_model
    >>> param_count(get_model("llama3-8b"))
    8030261248
    """
    return (
        model.n_dense_layers * model.dense_layer_params
        + model.n_moe_layers * model.moe_layer_params
        + model.embedding_params
        + model.output_params
        + model.norm_params
    )


def active_param_count(model: ModelSpec) -> int:
    """Parameters one token passes through: a dense model's total; for MoE, top-k routed + shared experts.

    Embedding parameters count (as in the usual "active parameters" figures, e.g. Mixtral's 12.9 B).

    Parameters
    ----------
    model : ModelSpec
        The model.

    Returns
    -------
    int
        Active parameters per token.

    Examples
    --------
    >>> from aifabric.training.models import get_model
    >>> round(active_param_count(get_model("mixtral-8x7b")) / 1e9, 1)
    12.9
    """
    if not model.is_moe:
        return param_count(model)
    idle = (model.n_experts - model.top_k) * model.expert_params
    return param_count(model) - model.n_moe_layers * idle


# ------------------------------------------------------------------------------------------------ FLOPs
def _megatron_full(B: int, s: int, l: int, h: int, V: int) -> float:  # noqa: N803, E741 - the paper's symbols
    """Full recomputation (Eq. 3 of Narayanan et al.: forward, backward = 2 x forward, and a second
    forward)::

        F_full = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h))
    """
    return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))


def _megatron_selective(B: int, s: int, l: int, h: int, V: int) -> float:  # noqa: N803, E741
    """Selective recomputation (model FLOPs + one more forward of the attention scores, 4 B s^2 h per
    layer)::

        F_selective = 72 B s l h^2 (1 + 2 s / (9 h) + V / (12 l h))

    This counts what Megatron-LM's selective recomputation reruns in the backward pass: the "core
    attention" (Q K^T, softmax, dropout, attention over V), one forward of 4 B s^2 h matmul FLOPs per
    layer. Korthikanti et al. (App. A, as quoted by a secondary source) print 72 B s l h^2 (1 + s/(3h) +
    V/(12 l h)) instead, whose ratio to the model FLOPs, about 1 + s/(6h), is the figure the formula note
    cites from their Sec. 6.3. That expression adds 12 B s^2 h per layer, three forwards of the attention
    core, and exceeds the full-recomputation count of Eq. 3 once s > 3h (long sequences), which cannot be;
    we use the count above. For the paper's own models (s = 2048, h >= 6144) the two differ by < 4 %.
    """
    return 72 * B * s * l * h * h * (1 + 2 * s / (9 * h) + V / (12 * l * h))


def _megatron_none(B: int, s: int, l: int, h: int, V: int) -> float:  # noqa: N803, E741
    """No recomputation (model FLOPs; Korthikanti et al., App. A)::

    F_none = 72 B s l h^2 (1 + s / (6 h) + V / (12 l h))
    """
    return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))


#: The closed form of each recomputation mode, called with (B, s, l, h, V).
_MEGATRON_FORMS: dict[Recompute, Callable[[int, int, int, int, int], float]] = {
    Recompute.FULL: _megatron_full,
    Recompute.SELECTIVE: _megatron_selective,
    Recompute.NONE: _megatron_none,
}


def megatron_gpt_flops_per_iteration(
    batch_size: int,
    seq_len: int,
    n_layers: int,
    hidden_size: int,
    vocab_size: int,
    *,
    recompute: Recompute | str = Recompute.FULL,
) -> float:
    """FLOPs of one training iteration of a GPT model, the Megatron-LM closed forms.

    F_full = 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)) (:func:`_megatron_full`), F_none = 72 B s l h^2
    (1 + s / (6 h) + V / (12 l h)) (:func:`_megatron_none`), F_selective = 72 B s l h^2 (1 + 2 s / (9 h)
    + V / (12 l h)) (:func:`_megatron_selective`, which says why not the form printed in [2]). Per layer,
    the forward pass costs 24 B s h^2 + 4 B s^2 h (QKV 6, attention scores 2 s/h, attention over V 2 s/h,
    output projection 2, MLP 16, all times B s h^2); the logit layer 2 B s h V forward.

    Parameters
    ----------
    batch_size, seq_len, n_layers, hidden_size, vocab_size : int
        B (global batch, sequences), s (tokens), l (transformer layers), h (hidden size), V (vocabulary).
    recompute : {"full", "selective", "none"}, default "full"
        Activation recomputation.

    Returns
    -------
    float
        FLOPs per iteration.

    Raises
    ------
    ConfigError
        If a size is not positive or ``recompute`` is unknown.

    References
    ----------
    .. [1] Narayanan et al., SC'21, https://doi.org/10.1145/3458817.3476209, Eq. 3.
    .. [2] Korthikanti et al., MLSys 2023, arXiv:2205.05198, Sec. 5 and App. A.

    Examples
    --------
    GPT-3 175B, one 1536-sequence batch, full recomputation:

    >>> round(megatron_gpt_flops_per_iteration(1536, 2048, 96, 12288, 51200) / 1e18, 3)  # EFLOP
    4.511
    """
    _positive(
        batch_size=batch_size,
        seq_len=seq_len,
        n_layers=n_layers,
        hidden_size=hidden_size,
        vocab_size=vocab_size,
    )
    form = _MEGATRON_FORMS[Recompute.parse(recompute)]
    return form(batch_size, seq_len, n_layers, hidden_size, vocab_size)


def attention_core_forward_flops_per_token(model: ModelSpec, *, seq_len: int | None = None) -> float:
    """Forward FLOPs per token of one layer's attention scores and attention over V, the mean over layers.

        F = 2 * 2 * s * a * d      (Q K^T and softmax(.) V, each 2 s a d per query token)

    Counted over the whole sequence, as Megatron-LM does (a causal kernel does about half). A model with a
    ``sliding_window`` w runs its local layers (:attr:`ModelSpec.n_local_attention_layers`) over
    :func:`sliding_window_span` keys in that count, and its global ones over s.

    Parameters
    ----------
    model : ModelSpec
        The model (a = heads, d = head width).
    seq_len : int, optional
        s, keys each query attends to. Default ``model.seq_len``.

    Returns
    -------
    float
        FLOPs per token per layer.

    Examples
    --------
    Gemma 3 12B at 32,768 tokens (16 heads of 256; 40 of its 48 layers over a 1,024-token window): the
    mean span is (8 x 32,768 + 40 x 2,016) / 48 = 7,141 keys, 0.218 of the whole sequence.

    >>> g = ModelSpec("g", n_layers=48, hidden_size=3840, n_heads=16, head_dim=256, vocab_size=8,
    ...               seq_len=32768, sliding_window=1024, global_layer_every=6)
    >>> round(attention_core_forward_flops_per_token(g) / (4 * 16 * 256), 1)
    7141.3
    """
    s = model.seq_len if seq_len is None else seq_len
    local = model.n_local_attention_layers
    span = (
        (model.n_layers - local) * s + local * sliding_window_span(s, model.sliding_window)
    ) / model.n_layers
    return 4.0 * span * model.n_heads * model.head_size


def einsum_dispatch_forward_flops_per_token(model: ModelSpec, capacity_factor: float) -> float:
    """Forward FLOPs per token of one MoE layer's dense dispatch and combine (GShard's einsums).

        C = max(ceil(s k / E) c, c)  slots an expert holds per sequence (MaxText ``generate_masks``)
        F = 2 * 2 h E C              (dispatch 'BSM,BSEC -> EBCM' and combine 'EBCM,BSEC -> BSM')

    Each einsum contracts a token's h-wide row with its E x C one-hot mask row, a dense matrix product of
    2 h E C FLOPs a token whatever the mask holds: s k c h x 4 a token, growing with the sequence as the
    attention core does. The backward runs three of the same size (the dispatch's input gradient, the
    combine's gradients of the experts' outputs and of its routing weights; the masks' one-hot indices
    take none): 1.5 x the forward.

    Parameters
    ----------
    model : ModelSpec
        The MoE model (h, E = n_experts, k = top_k, s = seq_len).
    capacity_factor : float
        c, the experts' capacity over their fair share (already capped at E / k).

    Returns
    -------
    float
        FLOPs per token per MoE layer, forward.

    Examples
    --------
    Mixtral 8x7B at 4,096 tokens, c = 1.25: C = 1,024 x 1.25 = 1,280 slots, 4 x 4,096 x 8 x 1,280 =
    167.8 MFLOP a token, 19 % of its routed experts' 881 MFLOP at that capacity.

    >>> mix = ModelSpec("mix", n_layers=32, hidden_size=4096, n_heads=32, vocab_size=8, seq_len=4096,
    ...                 n_experts=8, top_k=2, ffn_hidden_size=14336, gated_mlp=True)
    >>> einsum_dispatch_forward_flops_per_token(mix, 1.25) / 1e6
    167.77216
    """
    slots = max(math.ceil(model.seq_len * model.top_k / model.n_experts) * capacity_factor, capacity_factor)
    return 4.0 * model.hidden_size * model.n_experts * int(slots)


def sliding_window_span(seq_len: int, window: int) -> float:
    """Keys per query of a causal sliding-window layer, in the whole-sequence count of
    :func:`attention_core_forward_flops_per_token`.

    Query i (1-based) reaches min(i, w) keys, so a sequence of s tokens holds s w - w (w - 1) / 2 query-key
    pairs where a causal layer over all of it holds s (s + 1) / 2; the whole-sequence count charges s keys
    a query for the causal layer, so the window's equivalent is

        s_w = (2 s w - w^2 + w) / (s + 1)     (w < s), else s

    about 2 w for w << s. The attention kernel's rate, measured on causal layers, then applies to both.

    >>> round(sliding_window_span(32768, 1024), 1)  # Gemma 3 at 32,768 tokens
    2016.0
    >>> sliding_window_span(4096, 4096), sliding_window_span(4096, 0)
    (4096, 4096)
    """
    if window <= 0 or window >= seq_len:
        return seq_len
    return (2 * seq_len * window - window * window + window) / (seq_len + 1)


def layer_forward_flops_per_token(
    model: ModelSpec, *, moe: bool = False, seq_len: int | None = None
) -> float:
    """Forward FLOPs per token of one transformer layer, dense or MoE.

        F_dense = 2 (P_attn + P_mlp) + F_core
        F_moe   = 2 (P_attn + P_router + (k + n_shared) P_expert) + F_core

    where the P are matrix-multiply weights (no biases, no norms) and ``F_core`` is
    :func:`attention_core_forward_flops_per_token`.

    Parameters
    ----------
    model : ModelSpec
        The model.
    moe : bool, default False
        True for an MoE layer (only meaningful if ``model.is_moe``).
    seq_len : int, optional
        Attention span; default ``model.seq_len``.

    Returns
    -------
    float
        FLOPs per token.

    Raises
    ------
    ConfigError
        If ``moe`` is True for a dense model.

    Examples
    --------
    A Megatron GPT layer costs 24 h^2 + 4 s h per token (Eq. 3's 24 B s h^2 + 4 B s^2 h over B s tokens):

    >>> from aifabric.training.models import get_model
    >>> m = get_model("megatron-gpt-1.7b")
    >>> layer_forward_flops_per_token(m) == 24 * 2304**2 + 4 * 2048 * 2304
    True
    """
    core = attention_core_forward_flops_per_token(model, seq_len=seq_len)
    if not moe:
        return 2.0 * (model.attention_matmul_params + model.dense_mlp_matmul_params) + core
    if not model.is_moe:
        raise ConfigError(f"model {model.name!r} has no MoE layers (n_experts=0)")
    experts = (model.top_k + model.n_shared_experts) * model.expert_matmul_params
    return 2.0 * (model.attention_matmul_params + model.router_params + experts) + core


def op_sac_recompute_forward_flops_per_token(model: ModelSpec) -> float:
    """Forward FLOPs per token of one dense layer that torchtitan's op-level selective checkpointing
    runs again in the backward pass.

    The policy (torchtitan ``parallelize_llama.py`` ``_save_list`` and ``_custom_policy``, the version of
    ``docs/performance.md`` @eaea6f6) saves the output of every second ``aten.mm`` counted within the
    layer and the SDPA output; the other matmuls and the element-wise operators are recomputed, the
    attention core is not. At @e7c0cae (2025-06-11) the matmul entries are the same (``aten.max``, the
    FP8 amax, is saved too; ``aten.abs`` was, 2024-11-26 to 2025-02-06, @88247277c) and the policy sees
    Float8 linear layers as ``aten.mm``: torchao's ``matmul_with_hp_or_float8_args`` (@0afa4c1) calls
    ``torch.mm`` on Float8 tensors, and the checkpoint's dispatch mode runs before the subclass turns it
    into ``aten._scaled_mm``, so FP8 recomputes the same matmuls. A Llama block runs its matmuls in the
    order wq, wk, wv, wo, w1, w3, w2, so wk, wo and w3 are recomputed (ungated, wq, wk, wv, wo, w1, w2: wk,
    wo and w2). With q = a d query width, kv = a_kv d and f the MLP width, per token::

        gated:    2 (h kv + q h + h f)
        ungated:  2 (h kv + q h + f h)

    Llama 3 8B (h = q = 4096, kv = 1024, f = 14336): 2 (4,194,304 + 16,777,216 + 58,720,256) =
    159,383,552 FLOPs per token, against 4 s a d = 134,217,728 for the attention core that Megatron-LM's
    selective recomputation repeats at s = 8192.

    >>> from aifabric.training.models import get_model
    >>> op_sac_recompute_forward_flops_per_token(get_model("llama3-8b"))
    159383552.0
    """
    h, f = model.hidden_size, model.ffn_size
    q, kv = model.n_heads * model.head_size, model.kv_heads * model.head_size
    # matmul weights in call order: wq, wk, wv, wo, w1, (w3,) w2
    weights = [h * q, h * kv, h * kv, q * h, h * f] + ([h * f] if model.gated_mlp else []) + [f * h]
    return 2.0 * sum(weights[1::2])


def logit_forward_flops_per_token(model: ModelSpec) -> float:
    """Forward FLOPs per token of the output (logit) layer: 2 V h.

    >>> from aifabric.training.models import get_model
    >>> logit_forward_flops_per_token(get_model("llama3-8b")) == 2 * 128256 * 4096
    True
    """
    return 2.0 * model.vocab_size * model.hidden_size


def forward_flops_per_token(model: ModelSpec, *, seq_len: int | None = None) -> float:
    """Forward FLOPs per token of the whole model (active parameters only for MoE).

        F_fwd = n_dense F_dense + n_moe F_moe + 2 V h
              ~ 2 N_active + 4 l s a d      (N_active without embeddings)

    Parameters
    ----------
    model : ModelSpec
        The model.
    seq_len : int, optional
        Attention span; default ``model.seq_len``.

    Returns
    -------
    float
        FLOPs per token.

    Examples
    --------
    Llama 3 70B at s = 8192: about 2 x 70 B + the attention term:

    >>> from aifabric.training.models import get_model
    >>> round(forward_flops_per_token(get_model("llama3-70b")) / 1e9, 1)  # GFLOP/token
    160.5
    """
    dense = model.n_dense_layers * layer_forward_flops_per_token(model, seq_len=seq_len)
    moe = (
        model.n_moe_layers * layer_forward_flops_per_token(model, moe=True, seq_len=seq_len)
        if model.n_moe_layers
        else 0.0
    )
    return dense + moe + logit_forward_flops_per_token(model)


def training_flops_per_token(model: ModelSpec, *, recompute: Recompute | str = Recompute.NONE) -> float:
    """Training FLOPs per token (forward + backward, plus what recomputation repeats).

        none:      3 F_fwd                     (model FLOPs, the MFU numerator)
        selective: 3 F_fwd + l F_core          (the attention core runs forward once more)
        full:      4 F_fwd - 2 V h             (the logit layer is not recomputed; Eq. 3)

    For the Megatron GPT presets these equal :func:`megatron_gpt_flops_per_iteration` / (B s) exactly.

    Parameters
    ----------
    model : ModelSpec
        The model.
    recompute : {"none", "selective", "full"}, default "none"
        Activation recomputation.

    Returns
    -------
    float
        FLOPs per token.

    Examples
    --------
    >>> from aifabric.training.models import get_model
    >>> m = get_model("megatron-gpt-39.1b")
    >>> per_token = training_flops_per_token(m, recompute="full")
    >>> per_token * 2048 == megatron_gpt_flops_per_iteration(1, 2048, 48, 8192, 51200)
    True
    """
    mode = Recompute.parse(recompute)
    fwd = forward_flops_per_token(model)
    if mode is Recompute.NONE:
        return 3.0 * fwd
    if mode is Recompute.SELECTIVE:
        return 3.0 * fwd + model.n_layers * attention_core_forward_flops_per_token(model)
    return 4.0 * fwd - logit_forward_flops_per_token(model)


def training_flops_per_iteration(
    model: ModelSpec, global_batch_size: int, *, recompute: Recompute | str = Recompute.NONE
) -> float:
    """Training FLOPs of one iteration: :func:`training_flops_per_token` x B x s.

    Parameters
    ----------
    model : ModelSpec
        The model (s = ``model.seq_len``).
    global_batch_size : int
        B, sequences per iteration.
    recompute : {"none", "selective", "full"}, default "none"
        Activation recomputation.

    Returns
    -------
    float
        FLOPs per iteration.

    Raises
    ------
    ConfigError
        If ``global_batch_size`` is not positive.
    """
    _positive(global_batch_size=global_batch_size)
    return training_flops_per_token(model, recompute=recompute) * global_batch_size * model.seq_len


def megatron_training_time_s(
    n_tokens: float,
    n_params: float,
    n_gpus: int,
    flops_per_s_per_gpu: float,
    *,
    full_recompute: bool = True,
) -> float:
    """End-to-end training time, Eq. 4 of the Megatron-LM paper.

        T_train = 8 T P / (n X)      (full recomputation: 4 passes x 2 FLOPs per parameter per token)
        T_train = 6 T P / (n X)      (no recomputation)

    It drops the attention and logit terms of Eq. 3 (s << 6h, V << 16 l h), and X is the throughput
    actually achieved, not the peak.

    Parameters
    ----------
    n_tokens : float
        T, training tokens.
    n_params : float
        P, model parameters.
    n_gpus : int
        n, GPUs.
    flops_per_s_per_gpu : float
        X, achieved FLOP/s per GPU.
    full_recompute : bool, default True
        Use 8 (full recomputation, as in the paper) or 6.

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ConfigError
        If any argument is not positive.

    References
    ----------
    .. [1] Narayanan et al., SC'21, https://doi.org/10.1145/3458817.3476209, Eq. 4 and Sec. 5.1.

    Examples
    --------
    The paper's GPT-3 example: 175 B parameters, 300 B tokens, 1024 A100s at 140 TFLOP/s, "34 days":

    >>> round(megatron_training_time_s(300e9, 175e9, 1024, 140e12) / 86400, 1)
    33.9
    """
    _positive(n_tokens=n_tokens, n_params=n_params, n_gpus=n_gpus, flops_per_s_per_gpu=flops_per_s_per_gpu)
    return (8.0 if full_recompute else 6.0) * n_tokens * n_params / (n_gpus * flops_per_s_per_gpu)
