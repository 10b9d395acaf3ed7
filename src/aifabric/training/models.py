"""Transformer model descriptions: :class:`ModelSpec` and the shipped presets.

A :class:`ModelSpec` holds only what the cost models need: the shape of a decoder-only transformer
(layers, widths, heads, grouped-query attention, gated MLP, mixture of experts) and the bytes each
parameter costs in training. Everything that can be counted from the shape once (parameters per layer
kind, how many layers are MoE) is counted when the spec is built, so that a planner scoring thousands of
layouts per second never recounts it.

Presets live in ``presets/models.yaml`` (package data); every entry names its source. Read them with
:func:`get_model` and :func:`list_models`, or load your own file with :meth:`ModelSpec.from_yaml`.

Why a frozen dataclass and not pydantic: a spec is built once, but layouts built on top of it are built by
the ten thousand; the same plain-``__post_init__`` style keeps this package's hot objects equally cheap,
and :func:`dataclasses.replace` re-runs the checks (``replace(model, seq_len=8192)`` is validated).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aifabric.errors import ConfigError
from aifabric.inputs import load_json, load_yaml_mapping
from aifabric.package_data import load_package_yaml

__all__ = [
    "HF_CONFIG_KEYS",
    "HF_FAMILIES",
    "BytesPerParam",
    "HfFamily",
    "ModelSpec",
    "get_model",
    "list_models",
    "load_model",
]


@dataclass(frozen=True, slots=True)
class BytesPerParam:
    """Bytes of training state per parameter, before any ZeRO sharding.

    The default is mixed-precision Adam as Megatron-LM runs it: bf16 weights (2), fp32 gradients
    (``main_grad``, 4) and an optimizer holding an fp32 master copy and two fp32 moments (4 + 4 + 4 = 12):
    18 bytes per parameter in all (formula note, "Distributed optimizer" row, from Megatron-LM
    ``docs/user-guide/features/dist_optimizer.md``).

    Parameters
    ----------
    weights : float, default 2
        Bytes of the working copy of each weight (bf16).
    grads : float, default 4
        Bytes of each gradient as accumulated and reduced (fp32 by default in Megatron-LM).
    optimizer : float, default 12
        Bytes of optimizer state per parameter: fp32 master weight + Adam's two fp32 moments.
    gathered : float, optional
        Bytes per weight of the copy the layers compute with and that ZeRO / FSDP all-gathers: the
        mixed-precision parameter dtype. Default ``weights``. PyTorch FSDP2 keeps fp32 sharded parameters
        (``weights=4``) and, with ``MixedPrecisionPolicy(param_dtype=torch.bfloat16)`` as torchtitan sets it
        (``parallelize_llama.py`` ``apply_fsdp``), casts each shard and all-gathers bf16: ``gathered=2``
        (PyTorch ``torch.distributed.fsdp.fully_shard`` docs: "param_dtype ... specifies the dtype for the
        unsharded parameter and hence the dtype for forward/backward computation and the parameter
        all-gather"). DeepSpeed ZeRO-3 with bf16 partitions and gathers the 16-bit copy (Rajbhandari et al.
        SC'20 Sec. 5 and 7: 2 Psi bytes of fp16 parameters, all-gathered once forward and once backward):
        the default.

    Raises
    ------
    ConfigError
        If any figure is negative.

    Examples
    --------
    >>> BytesPerParam().total
    18.0
    """

    weights: float = 2.0
    grads: float = 4.0
    optimizer: float = 12.0
    gathered: float | None = None

    def __post_init__(self) -> None:
        if self.gathered is None:
            object.__setattr__(self, "gathered", self.weights)
        for name in ("weights", "grads", "optimizer", "gathered"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ConfigError(f"bytes_per_param.{name} must be a number >= 0, got {value!r}")
            object.__setattr__(self, name, float(value))

    @property
    def total(self) -> float:
        """Bytes per parameter with nothing sharded."""
        return self.weights + self.grads + self.optimizer

    @property
    def gathered_bytes(self) -> float:
        """Bytes per weight of the gathered (compute) copy: ``gathered``, set to ``weights`` by default."""
        return self.weights if self.gathered is None else self.gathered


_INT_FIELDS = (
    "n_layers",
    "hidden_size",
    "n_heads",
    "vocab_size",
    "seq_len",
)
_OPTIONAL_INT_FIELDS = ("n_kv_heads", "head_dim", "ffn_hidden_size", "expert_ffn_hidden_size")
_NORMS = ("layernorm", "rmsnorm")


def _positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A decoder-only transformer, dense or mixture-of-experts, as the training cost models see it.

    Parameters
    ----------
    name : str
        Name of the model (a preset key, or your own).
    n_layers : int
        l, transformer layers.
    hidden_size : int
        h, model width.
    n_heads : int
        a, attention (query) heads.
    n_kv_heads : int, optional
        Key/value heads (grouped-query attention). Default: ``n_heads`` (multi-head attention). Must divide
        ``n_heads``.
    head_dim : int, optional
        Width of one head. Default ``hidden_size // n_heads``, which must then divide exactly.
    ffn_hidden_size : int, optional
        Width of the dense MLP's inner layer. Default ``4 * hidden_size``.
    vocab_size : int
        V, vocabulary size (as trained; Megatron-LM pads it to a multiple of 128 x TP, not modelled).
    seq_len : int
        s, training sequence length in tokens.
    gated_mlp : bool, default False
        True for SwiGLU/GeGLU MLPs (three matrices: gate, up, down); False for the two-matrix GeLU MLP.
    tied_embeddings : bool, default False
        True if the output layer reuses the input embedding matrix.
    learned_position_embeddings : bool, default False
        True for GPT-style learned absolute positions (s x h parameters); False for RoPE/ALiBi.
    bias : bool, default False
        True if linear layers carry biases (GPT-2/3, Megatron GPT); False for Llama-style models.
    norm : {"layernorm", "rmsnorm"}, default "layernorm"
        LayerNorm has a scale and a bias (2h parameters), RMSNorm a scale only (h).
    dropout : bool, default True
        Whether training applies dropout (Megatron GPT: 0.1 on attention and hidden states). It changes
        activation memory only: dropout stores 1-byte masks and a second copy of the attention scores.
    n_experts : int, default 0
        Routed experts per MoE layer; 0 for a dense model.
    top_k : int, default 0
        Routed experts each token visits. Required (>= 1) when ``n_experts > 0``.
    n_shared_experts : int, default 0
        Experts every token visits in addition (DeepSeek-style shared experts).
    expert_ffn_hidden_size : int, optional
        Inner width of one expert (routed and shared). Default ``ffn_hidden_size``.
    moe_layer_freq : int, default 1
        Layer i (0-based) is an MoE layer iff ``i >= first_dense_layers`` and ``i % moe_layer_freq == 0``
        (Megatron-LM's integer ``--moe-layer-freq``; DeepSeek's ``first_k_dense_replace``).
    first_dense_layers : int, default 0
        Leading layers that keep a dense MLP of width ``ffn_hidden_size``.
    sliding_window : int, default 0
        w, keys a query of a local attention layer reaches back (the query's own included): Mistral 7B
        v0.1's 4,096, Gemma 2's 4,096, Gemma 3's 1,024 (``sliding_window`` of their ``config.json``). 0:
        every layer attends to the whole sequence.
    global_layer_every : int, default 0
        With a ``sliding_window``, every ``global_layer_every``-th layer attends to the whole sequence and
        the others to the window: Gemma 3 six (five local layers to one global, ``sliding_window_pattern``
        6; MaxText's ``GEMMA3_ATTENTION_PATTERN``), Gemma 2 two. 0: every layer is local (Mistral 7B v0.1).
    bytes_per_param : BytesPerParam, default BytesPerParam()
        Training-state bytes per parameter (mixed-precision Adam: 2 + 4 + 12).
    source : str, default ""
        Where the shape comes from.
    notes : str, default ""
        Approximations made (e.g. MLA modelled as MHA).
    seq_len_source : str, default ""
        Where ``seq_len`` comes from when it is not the entry's own field (a config.json key).

    Raises
    ------
    ConfigError
        Naming the field and value: a non-positive size, ``n_kv_heads`` not dividing ``n_heads``,
        ``hidden_size`` not divisible by ``n_heads`` without an explicit ``head_dim``, ``top_k`` outside
        ``1..n_experts`` for an MoE model, an unknown ``norm``.

    Examples
    --------
    >>> m = ModelSpec("tiny", n_layers=2, hidden_size=64, n_heads=4, vocab_size=1000, seq_len=128)
    >>> m.head_dim, m.ffn_hidden_size, m.n_kv_heads
    (16, 256, 4)
    """

    name: str
    _: dataclasses.KW_ONLY
    n_layers: int
    hidden_size: int
    n_heads: int
    vocab_size: int
    seq_len: int
    n_kv_heads: int | None = None
    head_dim: int | None = None
    ffn_hidden_size: int | None = None
    gated_mlp: bool = False
    tied_embeddings: bool = False
    learned_position_embeddings: bool = False
    bias: bool = False
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    dropout: bool = True
    n_experts: int = 0
    top_k: int = 0
    n_shared_experts: int = 0
    expert_ffn_hidden_size: int | None = None
    moe_layer_freq: int = 1
    first_dense_layers: int = 0
    sliding_window: int = 0
    global_layer_every: int = 0
    bytes_per_param: BytesPerParam = field(default_factory=BytesPerParam)
    source: str = ""
    notes: str = ""
    seq_len_source: str = ""

    # Counted once in __post_init__ (parameters, not bytes). Not part of equality or the repr.
    attention_params: int = field(init=False, repr=False, compare=False)
    """Q, K, V and output projections (+ biases) of one layer."""
    norm_params: int = field(init=False, repr=False, compare=False)
    """One normalisation layer (2h for LayerNorm, h for RMSNorm)."""
    dense_mlp_params: int = field(init=False, repr=False, compare=False)
    """The MLP of one dense layer (+ biases)."""
    expert_params: int = field(init=False, repr=False, compare=False)
    """One expert's MLP (+ biases); 0 for a dense model."""
    router_params: int = field(init=False, repr=False, compare=False)
    """The router of one MoE layer (h x n_experts); 0 for a dense model."""
    embedding_params: int = field(init=False, repr=False, compare=False)
    """Word embeddings plus learned position embeddings, if any."""
    output_params: int = field(init=False, repr=False, compare=False)
    """The output (logit) layer; 0 when tied to the embedding."""
    n_moe_layers: int = field(init=False, repr=False, compare=False)
    """How many layers carry an MoE MLP."""
    kv_heads: int = field(init=False, repr=False, compare=False)
    """``n_kv_heads`` resolved (the default filled in)."""
    head_size: int = field(init=False, repr=False, compare=False)
    """``head_dim`` resolved."""
    ffn_size: int = field(init=False, repr=False, compare=False)
    """``ffn_hidden_size`` resolved."""
    expert_ffn_size: int = field(init=False, repr=False, compare=False)
    """``expert_ffn_hidden_size`` resolved; 0 for a dense model."""
    attention_matmul_params: int = field(init=False, repr=False, compare=False)
    dense_mlp_matmul_params: int = field(init=False, repr=False, compare=False)
    expert_matmul_params: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check_fields()
        self._resolve_shapes()
        self._count_params()

    def _check_fields(self) -> None:
        """Refuse a field of the wrong type or range; turn a ``bytes_per_param`` mapping into its class."""
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"name must be a non-empty string, got {self.name!r}")
        for f in _INT_FIELDS:
            _positive_int(f, getattr(self, f))
        for f in _OPTIONAL_INT_FIELDS:
            value = getattr(self, f)
            if value is not None:
                _positive_int(f, value)
        for f in ("n_experts", "top_k", "n_shared_experts", "first_dense_layers", "sliding_window"):
            _positive_int(f, getattr(self, f), minimum=0)
        _positive_int("global_layer_every", self.global_layer_every, minimum=0)
        if self.global_layer_every and not self.sliding_window:
            raise ConfigError(
                f"global_layer_every={self.global_layer_every} needs a sliding_window (0: every layer global)"
            )
        _positive_int("moe_layer_freq", self.moe_layer_freq)
        for f in ("gated_mlp", "tied_embeddings", "learned_position_embeddings", "bias", "dropout"):
            if not isinstance(getattr(self, f), bool):
                raise ConfigError(f"{f} must be true or false, got {getattr(self, f)!r}")
        if self.norm not in _NORMS:
            raise ConfigError(f"norm must be one of {_NORMS}, got {self.norm!r}")
        if isinstance(self.bytes_per_param, Mapping):
            object.__setattr__(self, "bytes_per_param", BytesPerParam(**self.bytes_per_param))
        elif not isinstance(self.bytes_per_param, BytesPerParam):
            raise ConfigError(f"bytes_per_param must be a BytesPerParam, got {self.bytes_per_param!r}")

    def _resolve_shapes(self) -> None:
        """Fill the defaults (KV heads = heads, head dim = h / a, FFN = 4 h, expert FFN = FFN) after
        checking that heads, experts and dense layers agree."""
        h, a = self.hidden_size, self.n_heads
        kv = a if self.n_kv_heads is None else self.n_kv_heads
        if a % kv:
            raise ConfigError(f"n_kv_heads={kv} must divide n_heads={a} (grouped-query attention)")
        if self.head_dim is None:
            if h % a:
                raise ConfigError(
                    f"hidden_size={h} is not divisible by n_heads={a}; give head_dim explicitly"
                )
            d = h // a
        else:
            d = self.head_dim
        ffn = 4 * h if self.ffn_hidden_size is None else self.ffn_hidden_size
        if self.n_experts:
            if not 1 <= self.top_k <= self.n_experts:
                raise ConfigError(f"top_k must be in 1..n_experts={self.n_experts}, got {self.top_k}")
        elif self.top_k or self.n_shared_experts:
            raise ConfigError(
                f"top_k={self.top_k} / n_shared_experts={self.n_shared_experts} given for a dense model "
                "(n_experts=0)"
            )
        if self.first_dense_layers > self.n_layers:
            raise ConfigError(
                f"first_dense_layers={self.first_dense_layers} exceeds n_layers={self.n_layers}"
            )
        fe = ffn if self.expert_ffn_hidden_size is None else self.expert_ffn_hidden_size
        _set = object.__setattr__
        _set(self, "n_kv_heads", kv)
        _set(self, "head_dim", d)
        _set(self, "ffn_hidden_size", ffn)
        _set(self, "expert_ffn_hidden_size", fe if self.n_experts else None)
        _set(self, "kv_heads", kv)
        _set(self, "head_size", d)
        _set(self, "ffn_size", ffn)
        _set(self, "expert_ffn_size", fe if self.n_experts else 0)

    def _count_params(self) -> None:
        """The parameter counts of each part of a layer, the embeddings and the output layer."""
        h, d, kv, ffn, fe = (
            self.hidden_size,
            self.head_size,
            self.kv_heads,
            self.ffn_size,
            self.expert_ffn_size,
        )
        q_dim, kv_dim = self.n_heads * d, kv * d
        attn_mm = 2 * h * q_dim + 2 * h * kv_dim
        mlp_mats = 3 if self.gated_mlp else 2

        def mlp_bias(width: int) -> int:
            return ((2 * width if self.gated_mlp else width) + h) if self.bias else 0

        _set = object.__setattr__
        _set(self, "attention_matmul_params", attn_mm)
        _set(self, "attention_params", attn_mm + ((q_dim + 2 * kv_dim + h) if self.bias else 0))
        _set(self, "norm_params", 2 * h if self.norm == "layernorm" else h)
        _set(self, "dense_mlp_matmul_params", mlp_mats * h * ffn)
        _set(self, "dense_mlp_params", mlp_mats * h * ffn + mlp_bias(ffn))
        _set(self, "expert_matmul_params", mlp_mats * h * fe if self.n_experts else 0)
        _set(self, "expert_params", mlp_mats * h * fe + mlp_bias(fe) if self.n_experts else 0)
        _set(self, "router_params", h * self.n_experts)
        pos = self.seq_len * h if self.learned_position_embeddings else 0
        _set(self, "embedding_params", self.vocab_size * h + pos)
        _set(self, "output_params", 0 if self.tied_embeddings else self.vocab_size * h)
        _set(self, "n_moe_layers", self.moe_layers_before(self.n_layers))

    # ----------------------------------------------------------------------------------------- structure
    @property
    def is_moe(self) -> bool:
        """True if the model has routed experts."""
        return self.n_experts > 0

    @property
    def n_local_attention_layers(self) -> int:
        """Layers whose attention reaches back ``sliding_window`` keys only; 0 without a window.

        >>> ModelSpec("g", n_layers=48, hidden_size=64, n_heads=4, vocab_size=8, seq_len=32768,
        ...           sliding_window=1024, global_layer_every=6).n_local_attention_layers
        40
        """
        if not self.sliding_window:
            return 0
        every = self.global_layer_every
        return self.n_layers - (self.n_layers // every if every else 0)

    @property
    def n_dense_layers(self) -> int:
        """Layers with a dense MLP."""
        return self.n_layers - self.n_moe_layers

    def moe_layers_before(self, layer: int) -> int:
        """Number of MoE layers among layers ``0 .. layer-1`` (O(1)).

        >>> m = get_model("deepseek-v3-like")
        >>> m.moe_layers_before(3), m.moe_layers_before(61)
        (0, 58)
        """
        if not self.n_experts or layer <= self.first_dense_layers:
            return 0
        f, lo = self.moe_layer_freq, self.first_dense_layers
        # multiples of f in [lo, layer)
        return (layer - 1) // f - (lo - 1) // f

    @property
    def dense_layer_params(self) -> int:
        """Parameters of one dense transformer layer (attention, MLP, two norms)."""
        return self.attention_params + 2 * self.norm_params + self.dense_mlp_params

    @property
    def moe_layer_params(self) -> int:
        """Parameters of one MoE layer: attention, two norms, router, all routed and shared experts."""
        experts = (self.n_experts + self.n_shared_experts) * self.expert_params
        return self.attention_params + 2 * self.norm_params + self.router_params + experts

    # ----------------------------------------------------------------------------------- constructors
    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, name: str | None = None) -> ModelSpec:
        """Build a spec from a mapping (a YAML entry); unknown keys are an error.

        Parameters
        ----------
        data : mapping
            Field names as in the class; ``bytes_per_param`` may be a mapping. ``aliases`` is accepted and
            ignored (preset files use it).
        name : str, optional
            Used when ``data`` has no ``name`` key.

        Raises
        ------
        ConfigError
            On an unknown key, a missing required key, or an invalid value.
        """
        if not isinstance(data, Mapping):
            raise ConfigError(f"a model entry must be a mapping, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls) if f.init}
        values = {k: v for k, v in data.items() if k != "aliases"}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"model {name or data.get('name')!r}: unknown field(s) {unknown}")
        if "name" not in values:
            if name is None:
                raise ConfigError("model entry has no 'name'")
            values["name"] = name
        missing = [
            k for k in ("n_layers", "hidden_size", "n_heads", "vocab_size", "seq_len") if k not in values
        ]
        if missing:
            raise ConfigError(f"model {values['name']!r}: missing field(s) {missing}")
        if isinstance(values.get("bytes_per_param"), Mapping):
            try:
                values["bytes_per_param"] = BytesPerParam(**values["bytes_per_param"])
            except TypeError as err:
                raise ConfigError(f"model {values['name']!r}: bytes_per_param: {err}") from err
        return cls(**values)

    @classmethod
    def from_hf_config(
        cls,
        config: Mapping[str, Any],
        *,
        name: str,
        seq_len: int | None = None,
        source: str = "",
        file: str = "config.json",
    ) -> ModelSpec:
        """Build a spec from a Hugging Face ``config.json`` (Llama, Mistral, Qwen, DeepSeek, Gemma, GPT-2).

        Keys read (:data:`HF_CONFIG_KEYS`): layers, width, heads, KV heads, head width, MLP width,
        vocabulary, tied embeddings; MoE: routed experts (``num_local_experts``, ``n_routed_experts`` or
        ``num_experts``), ``num_experts_per_tok``, ``n_shared_experts``, ``moe_intermediate_size`` (expert
        width; otherwise ``intermediate_size``), ``first_k_dense_replace``, ``moe_layer_freq``. The family
        (``model_type``, :data:`HF_FAMILIES`) says whether the MLP is gated (Gemma's GeLU too) and whether an
        absent ``tie_word_embeddings`` ties; for another family a SiLU activation means a gated (SwiGLU)
        MLP, and the assumption is said in ``notes``. ``rms_norm_eps`` means an RMSNorm; biases from
        ``attention_bias`` / ``mlp_bias``; no dropout unless ``attention_dropout`` or ``hidden_dropout`` is
        positive. DeepSeek's multi-head latent attention (``kv_lora_rank``) is approximated as multi-head
        attention of width ``hidden_size / n_heads``, as the ``deepseek-v3-like`` preset does (said in
        ``notes``).

        Parameters
        ----------
        config : mapping
            The parsed ``config.json``.
        name : str
            Name of the model.
        seq_len : int, optional
            Training sequence length; default the pre-training length
            ``rope_scaling.original_max_position_embeddings`` where the context was extended, else
            ``max_position_embeddings`` (``n_positions`` for GPT-2); ``seq_len_source`` says which.
        source : str, default ""
            Where the file came from.
        file : str, default "config.json"
            The file's path, which errors name.

        Raises
        ------
        ConfigError
            If a required key is missing or a value is invalid: named by ``file`` and the key the file
            spells (``num_hidden_layers``, not the spec's ``n_layers``).

        Examples
        --------
        >>> cfg = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        ...        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
        ...        "max_position_embeddings": 8192, "hidden_act": "silu", "rms_norm_eps": 1e-5}
        >>> m = ModelSpec.from_hf_config(cfg, name="llama3-8b")
        >>> (m.n_kv_heads, m.gated_mlp, m.norm, m.seq_len) == (8, True, "rmsnorm", 8192)
        True
        """
        if not isinstance(config, Mapping):
            raise ConfigError(
                f"model {name!r}: a config.json must hold an object, got {type(config).__name__}"
            )
        values = _hf_sizes(config, name=name, seq_len=seq_len, file=file)
        model_type = str(config.get("model_type", "")).lower()
        notes = _hf_architecture(config, model_type, values, file)
        notes.append(_hf_drop_mla(config, values))
        values["source"] = source or f"Hugging Face config.json ({model_type or 'unknown type'})"
        values["notes"] = "; ".join(n for n in notes if n)
        try:
            return cls.from_dict(values, name=name)
        except ConfigError as err:  # said in the file's own keys: the spec's attributes are not the user's
            raise ConfigError(f"{file}: {_in_file_keys(str(err), config, values)}") from err

    @classmethod
    def from_yaml(cls, path: str | Path, name: str | None = None) -> ModelSpec:
        """Read a model from a YAML file.

        The file is either one model (a mapping with ``n_layers`` etc.) or, like the preset file, a
        mapping ``{name: entry}``; then ``name`` picks the entry (optional if there is only one).

        Raises
        ------
        ParseError
            If the file is not valid YAML, breaks a limit of :func:`aifabric.inputs.load_yaml`, or does not
            hold a mapping.
        ConfigError
            If the entry is invalid or ``name`` is not in the file.
        """
        path = Path(path)
        data = load_yaml_mapping(path)
        if "n_layers" in data:
            return cls.from_dict(data, name=name or path.stem)
        entries = _index(data, str(path))
        if name is None:
            if len(data) != 1:
                raise ConfigError(f"{path} holds {len(data)} models; pass name= (one of {sorted(data)})")
            name = next(iter(data))
        key = name.lower()
        if key not in entries:
            raise ConfigError(f"{path}: no model {name!r}; models: {sorted(data)}")
        return cls.from_dict(entries[key][1], name=entries[key][0])


def _hf_sizes(config: Mapping[str, Any], *, name: str, seq_len: int | None, file: str) -> dict[str, Any]:
    """The fields of :data:`HF_CONFIG_KEYS` a config.json gives, and the training sequence length (with
    ``seq_len_source``); a required one missing is refused, named by ``file`` and its config.json key."""
    values: dict[str, Any] = {}
    for key, fld in HF_CONFIG_KEYS.items():
        if config.get(key) is not None and fld not in values:
            values[fld] = config[key]
    values["seq_len_source"] = "--seq-len"
    if seq_len is None:
        seq_len, values["seq_len_source"] = _hf_training_seq_len(config)
    if seq_len is not None:
        values["seq_len"] = seq_len
    required: tuple[str, ...] = ("n_layers", "hidden_size", "n_heads", "vocab_size", "seq_len")
    if not config.get("n_routed_experts") or config.get("first_k_dense_replace"):
        required += ("ffn_hidden_size",)  # a dense MLP somewhere: its width is not guessed
    missing = [k for k in required if k not in values]
    if missing:
        keys = {f: k for k, f in reversed(HF_CONFIG_KEYS.items())}
        raise ConfigError(
            f"model {name!r}: {file} has no {', '.join(keys.get(m, m) for m in missing)}"
            + (" (give --seq-len)" if "seq_len" in missing else "")
        )
    return values


def _hf_architecture(
    config: Mapping[str, Any], model_type: str, values: dict[str, Any], file: str = "config.json"
) -> list[str]:
    """Add to ``values`` what a config.json implies rather than states: the MLP's gate and the tied output
    layer from the model's family (:data:`HF_FAMILIES`; otherwise from ``hidden_act`` and transformers'
    defaults, said in the notes returned), ``rms_norm_eps`` an RMSNorm; biases, dropout, GPT-2's learned
    positions; the expert width defaults to the MLP width."""
    family = HF_FAMILIES.get(model_type)
    notes: list[str] = []
    if family is None:
        family = _hf_unknown_family(config, model_type, notes, file)
    values["gated_mlp"] = family.gated_mlp
    values["norm"] = "rmsnorm" if "rms_norm_eps" in config else "layernorm"
    values["bias"] = bool(config.get("attention_bias") or config.get("mlp_bias") or family.bias)
    values["dropout"] = any(float(config.get(k) or 0) > 0 for k in ("attention_dropout", "hidden_dropout"))
    values["learned_position_embeddings"] = family.learned_positions
    values.setdefault("tied_embeddings", family.tied_default)
    if values.get("n_experts"):
        values.setdefault("expert_ffn_hidden_size", values.get("ffn_hidden_size"))
    return notes


@dataclass(frozen=True, slots=True)
class HfFamily:
    """How transformers builds one ``model_type``: what its config.json leaves implicit.

    Parameters
    ----------
    gated_mlp : bool
        The MLP class has a gate (``gate_proj``, ``up_proj``, ``down_proj``), whatever ``hidden_act`` is.
    tied_default : bool
        The ``tie_word_embeddings`` default of the family's config class (``PretrainedConfig``: True).
    learned_positions, bias : bool, default False
        Learned position embeddings; biases in every linear layer.
    """

    gated_mlp: bool
    tied_default: bool
    learned_positions: bool = False
    bias: bool = False


_GATED_UNTIED = HfFamily(gated_mlp=True, tied_default=False)

#: ``model_type`` -> :class:`HfFamily`, read from transformers' ``models/<type>/modeling_*.py`` MLP class and
#: ``configuration_*.py`` ``__init__`` default of ``tie_word_embeddings``. Gemma: ``GemmaMLP`` is gated with
#: ``ACT2FN[hidden_act]`` (GeGLU, Gemma Team 2024, arXiv:2403.08295 Sec. 2) and ``GemmaConfig`` ties by
#: default; GPT-2: ``GPT2Config`` keeps ``PretrainedConfig``'s True, ``GPT2MLP`` is ``c_fc``/``c_proj``.
HF_FAMILIES: dict[str, HfFamily] = {
    "llama": _GATED_UNTIED,
    "mistral": _GATED_UNTIED,
    "mixtral": _GATED_UNTIED,
    "qwen2": _GATED_UNTIED,
    "qwen2_moe": _GATED_UNTIED,
    "deepseek_v2": _GATED_UNTIED,
    "deepseek_v3": _GATED_UNTIED,
    "gemma": HfFamily(gated_mlp=True, tied_default=True),
    "gemma2": HfFamily(gated_mlp=True, tied_default=True),
    "gpt2": HfFamily(gated_mlp=False, tied_default=True, learned_positions=True, bias=True),
}

#: Activations that mean a gated MLP in a family :data:`HF_FAMILIES` does not list (SwiGLU's Swish/SiLU).
_GATED_ACTIVATIONS = ("silu", "swiglu", "swish")


def _hf_unknown_family(
    config: Mapping[str, Any], model_type: str, notes: list[str], file: str = "config.json"
) -> HfFamily:
    """The family of a ``model_type`` :data:`HF_FAMILIES` does not list: gated iff ``hidden_act`` (or
    ``activation_function``) is SiLU/Swish, tied as ``PretrainedConfig`` defaults (True); each assumption
    appended to ``notes``. No activation at all is refused: the MLP's width would be a guess."""
    # what the file says of its family, stated positively: "names no model_type", not "no model_type is not"
    unknown = (
        f"model_type {model_type!r} is not a family aifabric knows" if model_type else "names no model_type"
    )
    act = config.get("hidden_act", config.get("activation_function"))
    if act is None:
        raise ConfigError(
            f"{file} has neither hidden_act nor activation_function, and {unknown} (families known: "
            f"{', '.join(HF_FAMILIES)}): add hidden_act (silu: gated MLP; gelu: plain)"
        )
    gated = str(act).lower() in _GATED_ACTIVATIONS
    mlp = "gated" if gated else "plain (two matrices)"
    notes.append(f"{file} {unknown}: MLP assumed {mlp} from hidden_act {act!r}")
    if "tie_word_embeddings" not in config:
        notes.append("no tie_word_embeddings: output layer tied (PretrainedConfig's default)")
    return HfFamily(gated_mlp=gated, tied_default=True)


def _in_file_keys(message: str, config: Mapping[str, Any], values: Mapping[str, Any]) -> str:
    """``message`` (a :class:`ModelSpec` check's) with each spec field named by the config.json key that
    gave it: "n_layers must be ..." becomes "num_hidden_layers must be ..."; the sequence length by the key
    ``seq_len_source`` names ("config.json max_position_embeddings (...)")."""
    keys = {fld: key for key, fld in reversed(HF_CONFIG_KEYS.items()) if config.get(key) is not None}
    source = str(values.get("seq_len_source", ""))
    keys.pop("seq_len", None)
    if source.startswith("config.json "):
        keys["seq_len"] = source.split()[1]
    for fld, key in keys.items():
        message = re.sub(rf"\b{fld}\b", key, message)
    return message


def _hf_drop_mla(config: Mapping[str, Any], values: dict[str, Any]) -> str:
    """DeepSeek's multi-head latent attention (``kv_lora_rank``) as multi-head attention of width
    hidden_size / n_heads: drop the head width and KV heads from ``values``; the note to record, or ""."""
    if not config.get("kv_lora_rank"):
        return ""
    values.pop("head_dim", None)
    values.pop("n_kv_heads", None)
    return (
        "MLA approximated as MHA: multi-head latent attention (kv_lora_rank, q_lora_rank, "
        "qk_nope_head_dim, qk_rope_head_dim, v_head_dim not read) modelled as multi-head "
        "attention of width hidden_size / n_heads"
    )


def _hf_training_seq_len(config: Mapping[str, Any]) -> tuple[int | None, str]:
    """The sequence a config.json's model was pre-trained at, and the key it comes from.

    A model whose context was extended after pre-training (RoPE scaling: Llama 3.1, DeepSeek-V3, Qwen)
    records the pre-training length as ``rope_scaling.original_max_position_embeddings`` (Llama 3.1:
    8192, Dubey et al. 2024 Sec. 3.4; DeepSeek-V3: 4096, its report Sec. 4.2); otherwise the only length
    given is ``max_position_embeddings`` (``n_positions`` for GPT-2), the longest the model supports.
    """
    rope = config.get("rope_scaling")
    if isinstance(rope, Mapping) and rope.get("original_max_position_embeddings") is not None:
        return rope["original_max_position_embeddings"], (
            "config.json rope_scaling.original_max_position_embeddings (the pre-training length; "
            "--seq-len to change)"
        )
    for key in ("max_position_embeddings", "n_positions"):
        if config.get(key) is not None:
            return config[key], f"config.json {key} (the longest it supports; --seq-len to change)"
    return None, ""


def _index(data: Mapping[str, Any], where: str) -> dict[str, tuple[str, Mapping[str, Any]]]:
    """Map lower-cased names and aliases to (canonical name, entry)."""
    out: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for key, entry in data.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"{where}: model {key!r} must be a mapping")
        for alias in [key, *entry.get("aliases", [])]:
            out[str(alias).lower()] = (key, entry)
    return out


#: Hugging Face ``config.json`` key -> :class:`ModelSpec` field; the first key present wins.
HF_CONFIG_KEYS: dict[str, str] = {
    "num_hidden_layers": "n_layers",
    "n_layer": "n_layers",  # GPT-2
    "hidden_size": "hidden_size",
    "n_embd": "hidden_size",
    "num_attention_heads": "n_heads",
    "n_head": "n_heads",
    "num_key_value_heads": "n_kv_heads",
    "head_dim": "head_dim",
    "intermediate_size": "ffn_hidden_size",
    "n_inner": "ffn_hidden_size",
    "vocab_size": "vocab_size",
    "max_position_embeddings": "seq_len",
    "n_positions": "seq_len",
    "tie_word_embeddings": "tied_embeddings",
    "num_local_experts": "n_experts",  # Mixtral
    "n_routed_experts": "n_experts",  # DeepSeek
    "num_experts": "n_experts",  # Qwen MoE
    "num_experts_per_tok": "top_k",
    "n_shared_experts": "n_shared_experts",
    "moe_intermediate_size": "expert_ffn_hidden_size",
    "first_k_dense_replace": "first_dense_layers",
    "moe_layer_freq": "moe_layer_freq",
}


def load_model(ref: str, *, seq_len: int | None = None) -> ModelSpec:
    """A model from a preset name, a YAML file (``.yaml``/``.yml``) or a Hugging Face ``config.json``.

    Parameters
    ----------
    ref : str
        Preset name or alias, or the path of a file.
    seq_len : int, optional
        Train with this sequence length instead of the model's (must be >= 1).

    Raises
    ------
    ConfigError
        An unknown preset, a file that is not a model, or ``seq_len < 1``.
    ParseError
        A file that is not valid YAML or JSON.

    Examples
    --------
    >>> load_model("llama3-8b", seq_len=4096).seq_len
    4096
    """
    if seq_len is not None and (isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1):
        raise ConfigError(f"seq_len must be an integer >= 1, got {seq_len!r}")
    path = Path(ref)
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            config = load_json(path)  # size-checked; NaN and Infinity refused
        except ConfigError as err:  # cannot be read: missing, a folder, a device, too large
            raise ConfigError(f"model: cannot read {ref!r}: {str(err).split(': ', 1)[-1]}") from err
        name = path.parent.name if path.stem == "config" and path.parent.name else path.stem
        return ModelSpec.from_hf_config(
            config, name=name, seq_len=seq_len, source=f"config.json {ref}", file=ref
        )
    if suffix in (".yaml", ".yml"):
        if not path.is_file():
            raise ConfigError(f"model: no such file {ref!r}")
        model = ModelSpec.from_yaml(path)
    elif ref.lower() not in _presets() and _exists(path):
        kind = "a folder" if path.is_dir() else "a file"
        raise ConfigError(
            f"model: {ref!r} is {kind}, not a model file: a model file is a .yaml/.yml model or a Hugging "
            "Face config.json (or give a preset name)"
        )
    else:
        model = get_model(ref)
    return model if seq_len is None else dataclasses.replace(model, seq_len=seq_len)


def _exists(path: Path) -> bool:
    """Whether ``path`` names something on disk (False for a name the file system cannot hold)."""
    try:
        return path.exists()
    except OSError:  # a name too long for the file system: not a file, so a preset name to look up
        return False


_PRESETS: dict[str, ModelSpec] | None = None
_PRESET_NAMES: list[str] = []


def _presets() -> dict[str, ModelSpec]:
    global _PRESETS
    if _PRESETS is None:
        data = load_package_yaml("aifabric.training", "presets/models.yaml")
        entries = _index(data, "presets/models.yaml")
        built = {key: ModelSpec.from_dict(entry, name=key) for key, entry in data.items()}
        _PRESET_NAMES[:] = list(data)
        _PRESETS = {alias: built[canonical] for alias, (canonical, _) in entries.items()}
    return _PRESETS


def list_models() -> list[str]:
    """Names of the preset models, in file order (aliases not listed).

    >>> "llama3-70b" in list_models()
    True
    """
    _presets()
    return list(_PRESET_NAMES)


def get_model(name: str) -> ModelSpec:
    """Return a preset model by name or alias (case-insensitive).

    Raises
    ------
    ConfigError
        If there is no such preset; the message lists the presets.

    Examples
    --------
    >>> get_model("megatron-gpt-1t").n_layers
    128
    """
    presets = _presets()
    try:
        return presets[name.lower()]
    except (KeyError, AttributeError):
        raise ConfigError(f"model: no preset named {name!r}; presets: {', '.join(list_models())}") from None
