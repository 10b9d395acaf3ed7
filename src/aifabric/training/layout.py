"""Parallelism layouts: how a training job is split over GPUs, and which GPUs talk to which.

A :class:`ParallelLayout` gives the degrees of tensor (tp), pipeline (pp), data (dp), context (cp) and
expert (ep) parallelism, the pipeline schedule (interleaving), ZeRO sharding, the batch split and
activation recomputation. :meth:`ParallelLayout.validate` checks it against a model and a GPU count;
:meth:`ParallelLayout.groups` lists, for every parallel dimension, the groups of global ranks that run
collectives together: these are what the network model is asked about.

Rank placement follows Megatron-LM's ``RankGenerator``: ``order`` lists the dimensions from innermost
(consecutive ranks) to outermost. With the default ``"tp-cp-ep-dp-pp"`` and 8 GPUs per node, a TP group of
8 is one node, the scale-up domain. The experts have their own grid over the same ranks, as Megatron-Core
builds it (``expert_decoder_rank_generator``, MoE Parallel Folding [3]_): for the dense layers the world is
tp x cp x dp x pp; for the experts it is etp x ep x edp x pp with the same ``order`` (cp folded into
ep/expert-dp), etp the expert tensor-parallel degree and edp = tp cp dp / (etp ep). With etp = tp (the
default) EP is carved out of the dp x cp ranks that hold the same dense weights; with etp = 1
(``--expert-tensor-parallel-size 1``) EP folds over TP x DP, and an EP group of the default order is
ep consecutive ranks.

References
----------
.. [1] Megatron-LM, ``megatron/core/parallel_state.py`` (``RankGenerator``, ``initialize_model_parallel``),
   https://github.com/NVIDIA/Megatron-LM.
.. [2] Narayanan et al., SC'21, https://doi.org/10.1145/3458817.3476209, Sec. 2-3 (PTD-P, interleaving).
.. [3] Liu et al., "MoE Parallel Folding", arXiv:2504.14960, Sec. 3; Megatron-Core
   ``megatron/core/transformer/moe/README.md`` ("--expert-tensor-parallel-size"; EP may exceed DP when
   ETP differs from TP) and ``parallel_state.initialize_model_parallel``, which requires
   world_size % (etp x ep x pp) == 0, i.e. etp x ep divides tp x cp x dp, the ranks of a pipeline stage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from math import prod
from typing import Any

import numpy as np

from aifabric.errors import ConfigError
from aifabric.training.models import ModelSpec

__all__ = ["DEFAULT_ORDER", "DIMENSIONS", "ParallelLayout", "RankGroups", "Recompute", "data_parallel_degree"]

#: The parallel dimensions a layout's ``order`` must list, each once.
DIMENSIONS: tuple[str, ...] = ("tp", "cp", "ep", "dp", "pp")
#: Megatron-LM's default order: TP innermost (inside the scale-up domain), PP outermost.
DEFAULT_ORDER = "tp-cp-ep-dp-pp"


class Recompute(str, Enum):
    """Activation recomputation (Korthikanti et al. 2022).

    ``none`` stores every activation; ``selective`` drops and recomputes the attention-score tensors (the
    5as/h term); ``full`` stores only each layer's input and reruns the layer's forward in the backward pass.
    """

    NONE = "none"
    SELECTIVE = "selective"
    FULL = "full"

    @classmethod
    def parse(cls, value: Recompute | str) -> Recompute:
        """Accept an enum member or its value (case-insensitive).

        Raises
        ------
        ConfigError
            On any other value.
        """
        if isinstance(value, cls):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise ConfigError(f"recompute must be one of {[m.value for m in cls]}, got {value!r}") from None


@dataclass(frozen=True, slots=True)
class RankGroups:
    """Groups of global ranks for each parallel dimension of a layout.

    Every attribute is a tuple of groups; each group is a tuple of global GPU indices, listed by increasing
    coordinate along that dimension (so ``pp`` groups list stages in order: neighbours exchange
    activations). Groups are sorted by their first rank.

    Attributes
    ----------
    tp, cp, dp, pp : tuple of tuple of int
        Tensor-, context-, data- and pipeline-parallel groups (dense-layer view).
    dp_cp : tuple of tuple of int
        The ranks holding the same dense weights: where dense gradients are reduced and the distributed
        optimizer shards (dp x cp).
    ep : tuple of tuple of int
        Expert-parallel groups: the ranks among which tokens are dispatched (all-to-all). Singletons when
        ``ep == 1``.
    expert_dp : tuple of tuple of int
        Ranks holding the same experts: where expert gradients are reduced (tp x cp x dp / (etp x ep)).
    """

    tp: tuple[tuple[int, ...], ...]
    cp: tuple[tuple[int, ...], ...]
    dp: tuple[tuple[int, ...], ...]
    pp: tuple[tuple[int, ...], ...]
    dp_cp: tuple[tuple[int, ...], ...]
    ep: tuple[tuple[int, ...], ...]
    expert_dp: tuple[tuple[int, ...], ...]

    def __getitem__(self, dim: str) -> tuple[tuple[int, ...], ...]:
        """``groups["tp"]`` is ``groups.tp``."""
        if dim not in _GROUP_NAMES:
            raise ConfigError(f"dimension must be one of {_GROUP_NAMES}, got {dim!r}")
        return getattr(self, dim)


_GROUP_NAMES = ("tp", "cp", "dp", "pp", "dp_cp", "ep", "expert_dp")


_ORDERS: dict[str, tuple[str, ...]] = {}  # parsed ``order`` strings


def _int_field(name: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")


@dataclass(frozen=True, slots=True)
class ParallelLayout:
    """A parallelism layout for one training job.

    Parameters
    ----------
    tp, pp, dp : int, default 1
        Tensor-, pipeline- and data-parallel degrees (t, p, d).
    ep : int, default 1
        Expert-parallel degree. Expert parallelism reuses the ranks of a pipeline stage; it does not
        multiply the GPU count.
    expert_tp : int, optional
        Expert tensor-parallel degree (Megatron's ``expert_tensor_parallel_size``). Default: tp, and EP is
        carved from dp x cp. Any other value folds EP over the tp x cp x dp ranks of a stage: etp x ep must
        divide them (:meth:`validate`).
    cp : int, default 1
        Context-parallel degree (the sequence split across GPUs).
    sequence_parallel : bool, default False
        Megatron sequence parallelism: LayerNorm/dropout activations split over the TP group.
    virtual_pipeline_stages : int, default 1
        v, model chunks per pipeline rank (interleaved 1F1B schedule when > 1).
    zero_stage : {0, 1, 2, 3} or "fsdp", default 0
        0: replicated; 1: optimizer state sharded over dp x cp (Megatron's distributed optimizer);
        2: gradients too; 3 (alias "fsdp"): weights too.
    microbatch_size : int, default 1
        b, sequences per microbatch.
    global_batch_size : int, optional
        B, sequences per iteration. Default ``microbatch_size * dp`` (one microbatch per pipeline).
    recompute : {"none", "selective", "full"}, default "none"
        Activation recomputation.
    order : str, default "tp-cp-ep-dp-pp"
        Rank placement, innermost dimension first: any permutation of tp, cp, ep, dp, pp joined by "-".

    Raises
    ------
    ConfigError
        On a degree < 1, an unknown ZeRO stage or recomputation mode, or an ``order`` that is not a
        permutation of the five dimensions. Checks against a model and a GPU count are in :meth:`validate`.

    Examples
    --------
    >>> lay = ParallelLayout(tp=8, pp=2, dp=2, microbatch_size=1, global_batch_size=64)
    >>> lay.n_gpus, lay.n_microbatches
    (32, 32)
    >>> lay.groups().tp[:2]
    ((0, 1, 2, 3, 4, 5, 6, 7), (8, 9, 10, 11, 12, 13, 14, 15))
    >>> lay.groups().pp[0], lay.groups().dp[0]
    ((0, 16), (0, 8))
    """

    tp: int = 1
    pp: int = 1
    dp: int = 1
    _: dataclasses.KW_ONLY
    ep: int = 1
    expert_tp: int | None = None
    cp: int = 1
    sequence_parallel: bool = False
    virtual_pipeline_stages: int = 1
    zero_stage: int = 0
    microbatch_size: int = 1
    global_batch_size: int | None = None
    recompute: Recompute = Recompute.NONE
    order: str = DEFAULT_ORDER
    global_batch: int = field(init=False, repr=False, compare=False)
    """B, ``global_batch_size`` resolved (the default filled in)."""
    etp: int = field(init=False, repr=False, compare=False)
    """The expert tensor-parallel degree, ``expert_tp`` resolved (tp when not given)."""
    _dims: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _set = object.__setattr__
        ints = (
            self.tp,
            self.pp,
            self.dp,
            self.ep,
            self.cp,
            self.virtual_pipeline_stages,
            self.microbatch_size,
        )
        if not all(type(x) is int and x >= 1 for x in ints):  # fast path first: planners build many layouts
            for name in ("tp", "pp", "dp", "ep", "cp", "virtual_pipeline_stages", "microbatch_size"):
                _int_field(name, getattr(self, name))
                _set(self, name, int(getattr(self, name)))
        if self.global_batch_size is None:
            _set(self, "global_batch_size", self.microbatch_size * self.dp)
        elif type(self.global_batch_size) is not int or self.global_batch_size < 1:
            _int_field("global_batch_size", self.global_batch_size)
            _set(self, "global_batch_size", int(self.global_batch_size))
        _set(self, "global_batch", self.global_batch_size)
        if self.expert_tp is not None:
            _int_field("expert_tp", self.expert_tp)
        _set(self, "etp", self.tp if self.expert_tp is None else int(self.expert_tp))
        if not isinstance(self.sequence_parallel, bool):
            raise ConfigError(f"sequence_parallel must be true or false, got {self.sequence_parallel!r}")
        zero = self.zero_stage
        if type(zero) is not int or not 0 <= zero <= 3:
            if isinstance(zero, str) and zero.lower() == "fsdp":
                zero = 3
            if isinstance(zero, bool) or zero not in (0, 1, 2, 3):
                raise ConfigError(f"zero_stage must be 0, 1, 2, 3 or 'fsdp', got {self.zero_stage!r}")
            _set(self, "zero_stage", int(zero))
        if type(self.recompute) is not Recompute:
            _set(self, "recompute", Recompute.parse(self.recompute))
        if not isinstance(self.order, str):
            raise ConfigError(f"order must be a string like {DEFAULT_ORDER!r}, got {self.order!r}")
        dims = _ORDERS.get(self.order)
        if dims is None:
            dims = tuple(str(self.order).lower().replace(" ", "").split("-"))
            if sorted(dims) != sorted(DIMENSIONS):
                raise ConfigError(
                    f"order must be a permutation of {'-'.join(DIMENSIONS)} (innermost first), got "
                    f"{self.order!r}"
                )
            _ORDERS[self.order] = dims
        _set(self, "order", "-".join(dims))
        _set(self, "_dims", dims)

    # ------------------------------------------------------------------------------------ derived sizes
    @property
    def n_gpus(self) -> int:
        """GPUs the layout occupies: tp x cp x dp x pp (ep reuses dp x cp ranks)."""
        return self.tp * self.cp * self.dp * self.pp

    @property
    def n_microbatches(self) -> int:
        """m = B / (b d), microbatches per pipeline per iteration (floor; :meth:`validate` checks it
        divides)."""
        return self.global_batch // (self.microbatch_size * self.dp)

    @property
    def expert_dp(self) -> int:
        """Ranks holding the same experts: tp x cp x dp / (etp x ep), dp x cp / ep when etp = tp (floor;
        :meth:`validate` checks it divides)."""
        return self.tp * self.cp * self.dp // (self.etp * self.ep)

    @property
    def folded(self) -> bool:
        """Whether the experts' tensor parallelism differs from the dense layers' (EP folded over TP)."""
        return self.etp != self.tp

    def grid_sizes(self, expert: bool) -> dict[str, int]:
        """Size of each dimension of the dense grid, or of the experts' grid (etp x ep x edp x pp, cp
        folded in): the ranks lie on it in ``order``, innermost first."""
        if expert:
            return {"tp": self.etp, "cp": 1, "ep": self.ep, "dp": self.expert_dp, "pp": self.pp}
        return {"tp": self.tp, "cp": self.cp, "ep": 1, "dp": self.dp, "pp": self.pp}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ParallelLayout:
        """Build a layout from a mapping (a YAML/JSON entry); ``fsdp: true`` means ``zero_stage=3``.

        Raises
        ------
        ConfigError
            On an unknown key or an invalid value.
        """
        values = dict(data)
        if values.pop("fsdp", False):
            values["zero_stage"] = 3
        known = {f.name for f in dataclasses.fields(cls) if f.init and f.name != "_"}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"layout: unknown field(s) {unknown}")
        return cls(**values)

    def describe(self) -> str:
        """A short one-line description, for messages.

        >>> ParallelLayout(tp=8, pp=4, dp=2, recompute="full").describe()
        'tp=8 pp=4 dp=2 b=1 B=2 zero=0 recompute=full'
        """
        parts = [f"tp={self.tp}", f"pp={self.pp}", f"dp={self.dp}"]
        if self.cp > 1:
            parts.append(f"cp={self.cp}")
        if self.ep > 1:
            parts.append(f"ep={self.ep}")
        if self.folded:
            parts.append(f"etp={self.etp}")
        if self.virtual_pipeline_stages > 1:
            parts.append(f"v={self.virtual_pipeline_stages}")
        if self.sequence_parallel:
            parts.append("sp")
        parts += [
            f"b={self.microbatch_size}",
            f"B={self.global_batch_size}",
            f"zero={self.zero_stage}",
            f"recompute={self.recompute.value}",
        ]
        if self.order != DEFAULT_ORDER:
            parts.append(f"order={self.order}")
        return " ".join(parts)

    # ----------------------------------------------------------------------------------------- checks
    def validate(self, model: ModelSpec, n_gpus: int | None = None) -> None:
        """Check that this layout can run ``model`` on ``n_gpus`` GPUs; return None or raise.

        Checks, each with a message naming the fields and values:

        - tp divides the attention heads and the KV heads (heads are split across the TP group);
        - tp x pp x dp x cp equals ``n_gpus``;
        - the global batch divides into microbatch x dp;
        - the layers divide into pp x v stages (no uneven stages);
        - v > 1 needs pp > 1, and the interleaved schedule needs m divisible by pp (Megatron-LM);
        - ep divides the experts and dp x cp, and is 1 for a dense model; the ``order`` keeps the
          ep/dp/cp ranks together so expert groups fall inside the dense data-parallel groups;
        - with ``expert_tp`` other than tp (folding): etp x ep divides tp x cp x dp, the ranks of a stage
          (Megatron's world_size % (etp x ep x pp) == 0), etp divides the experts' width, tp > 1 has
          sequence parallelism (Megatron refuses MoE with TP without it), and the ``order`` gives both
          grids the same pipeline groups;
        - cp > 1 needs s divisible by 2 cp (load-balanced causal split); sequence parallelism needs the
          local sequence divisible by tp.

        Parameters
        ----------
        model : ModelSpec
            The model to train.
        n_gpus : int, optional
            GPUs available; default: the layout's own product (skips that check).

        Raises
        ------
        ConfigError
            On the first failed check. Memory is not checked here: see
            :func:`aifabric.training.memory.check_fits`.

        Examples
        --------
        >>> from aifabric.training.models import get_model
        >>> ParallelLayout(tp=8, pp=2, dp=2).validate(get_model("megatron-gpt-39.1b"), 32)
        >>> ParallelLayout(tp=8, pp=2, dp=2).validate(get_model("megatron-gpt-39.1b"), 64)
        Traceback (most recent call last):
        ...
        aifabric.errors.ConfigError: tp x pp x dp x cp = 8 x 2 x 2 x 1 = 32, but n_gpus = 64
        """
        self._check_heads(model)
        t, p, d, c = self.tp, self.pp, self.dp, self.cp
        if n_gpus is not None and t * p * d * c != n_gpus:
            raise ConfigError(
                f"tp x pp x dp x cp = {t} x {p} x {d} x {c} = {t * p * d * c}, but n_gpus = {n_gpus}"
            )
        self._check_batch_and_stages(model)
        if self.ep > 1 or self.folded:
            self._check_experts(model)
        self._check_sequence(model)

    def _check_heads(self, model: ModelSpec) -> None:
        """tp divides the attention heads and the KV heads."""
        t = self.tp
        if model.n_heads % t:
            raise ConfigError(f"tp={t} does not divide n_heads={model.n_heads} of model {model.name!r}")
        if model.kv_heads % t:
            raise ConfigError(
                f"tp={t} does not divide n_kv_heads={model.n_kv_heads} of model {model.name!r} "
                "(each TP rank needs whole KV heads)"
            )

    def _check_batch_and_stages(self, model: ModelSpec) -> None:
        """The batch divides into microbatch x dp, the layers into pp x v stages, and v > 1 needs pp > 1
        and m divisible by pp."""
        p, d, v = self.pp, self.dp, self.virtual_pipeline_stages
        b, gbs = self.microbatch_size, self.global_batch
        if gbs % (b * d):
            raise ConfigError(
                f"global_batch_size={gbs} is not divisible by microbatch_size x dp = {b} x {d} = {b * d}"
            )
        if model.n_layers % (p * v):
            raise ConfigError(
                f"n_layers={model.n_layers} of model {model.name!r} is not divisible by "
                f"pp x virtual_pipeline_stages = {p} x {v} = {p * v}"
            )
        if v > 1:
            if p == 1:
                raise ConfigError(f"virtual_pipeline_stages={v} needs pp > 1")
            m = gbs // (b * d)
            if m % p:
                raise ConfigError(
                    f"interleaved schedule (virtual_pipeline_stages={v}): n_microbatches={m} is not "
                    f"divisible by pp={p}"
                )

    def _check_experts(self, model: ModelSpec) -> None:
        """ep > 1 or folding: the model has experts, ep divides them, the expert grid fits a stage, and the
        order keeps groups together."""
        e = self.ep
        if not model.is_moe:
            what = f"ep={e}" if e > 1 else f"expert_tp={self.etp}"
            raise ConfigError(f"{what} but model {model.name!r} has no experts")
        if model.n_experts % e:
            raise ConfigError(f"ep={e} does not divide the {model.n_experts} experts of model {model.name!r}")
        if self.folded and model.expert_ffn_size % self.etp:
            raise ConfigError(
                f"expert_tp={self.etp} does not divide the experts' ffn width {model.expert_ffn_size} of "
                f"model {model.name!r}"
            )
        if self.folded and self.tp > 1 and not self.sequence_parallel:
            raise ConfigError(
                f"expert_tp={self.etp} with tp={self.tp} needs sequence_parallel (Megatron-LM refuses MoE "
                "with tensor parallelism without it)"
            )
        self._check_expert_grid()

    def _check_sequence(self, model: ModelSpec) -> None:
        """cp > 1 needs s divisible by 2 cp; sequence parallelism needs s / cp divisible by tp."""
        s, c, t = model.seq_len, self.cp, self.tp
        if c > 1 and s % (2 * c):
            raise ConfigError(
                f"seq_len={s} is not divisible by 2 x cp = {2 * c} (load-balanced context parallelism)"
            )
        if self.sequence_parallel and t > 1 and (s // c) % t:
            raise ConfigError(f"sequence_parallel: seq_len / cp = {s // c} is not divisible by tp={t}")

    def _check_expert_grid(self) -> None:
        """The expert grid fits the ranks of a stage, and lies on them as the dense one does."""
        t, d, c, e = self.tp, self.dp, self.cp, self.ep
        if not self.folded and (d * c) % e:
            raise ConfigError(f"ep={e} does not divide dp x cp = {d} x {c} = {d * c}")
        if (t * c * d) % (self.etp * e):
            raise ConfigError(
                f"ep x expert_tp = {e} x {self.etp} = {e * self.etp} does not divide tp x cp x dp = "
                f"{t} x {c} x {d} = {t * c * d} (Megatron folds the experts over the ranks of a stage)"
            )
        if not self.folded:
            self._check_expert_order()
            return
        inner = self._dims[: self._dims.index("pp")]
        dense, expert = self.grid_sizes(False), self.grid_sizes(True)
        if prod(dense[x] for x in inner) != prod(expert[x] for x in inner):
            raise ConfigError(
                f"order={self.order!r}: with expert_tp={self.etp} the experts' grid puts the pipeline "
                "stages on other ranks than the dense one (Megatron requires the same pipeline groups)"
            )

    def _check_expert_order(self) -> None:
        sizes = {
            "tp": self.tp,
            "pp": self.pp,
            "cp": self.cp,
            "ep": self.ep,
            "dp": max(self.dp, self.expert_dp),
        }
        live = [dim for dim in self._dims if sizes[dim] > 1]
        idx = [i for i, dim in enumerate(live) if dim in ("cp", "ep", "dp")]
        if idx and idx[-1] - idx[0] + 1 != len(idx):
            raise ConfigError(
                f"order={self.order!r}: with ep={self.ep}, the ep, dp and cp dimensions must be adjacent "
                "(no tp/pp between them), so that expert groups lie inside the data-parallel groups"
            )

    # ---------------------------------------------------------------------------------------- groups
    def _check_n(self, n_gpus: int | None) -> None:
        if n_gpus is not None and n_gpus != self.n_gpus:
            raise ConfigError(
                f"tp x pp x dp x cp = {self.tp} x {self.pp} x {self.dp} x {self.cp} = {self.n_gpus}, "
                f"but n_gpus = {n_gpus}"
            )
        if self.ep > 1 or self.folded:
            self._check_expert_grid()

    def groups(self, n_gpus: int | None = None) -> RankGroups:
        """Rank groups of every parallel dimension, given the placement ``order``.

        Parameters
        ----------
        n_gpus : int, optional
            GPU count to check against tp x pp x dp x cp.

        Returns
        -------
        RankGroups
            For each dimension, the tuple of groups (tuples of global ranks).

        Raises
        ------
        ConfigError
            If ``n_gpus`` differs from the layout's product, or ep does not fit dp x cp.

        Notes
        -----
        O(n_gpus) time and memory (about 1 ms at 16k GPUs). A planner that needs one group per dimension
        should call :meth:`group_of` instead, which is O(group size).

        Examples
        --------
        TP innermost (default) vs DP innermost, tp=2 dp=2 on 4 GPUs:

        >>> ParallelLayout(tp=2, dp=2).groups().tp
        ((0, 1), (2, 3))
        >>> ParallelLayout(tp=2, dp=2, order="dp-tp-cp-ep-pp").groups().tp
        ((0, 2), (1, 3))
        """
        self._check_n(n_gpus)
        dense, expert = self.grid_sizes(False), self.grid_sizes(True)
        return RankGroups(
            tp=_grid_groups(dense, self._dims, ("tp",)),
            cp=_grid_groups(dense, self._dims, ("cp",)),
            dp=_grid_groups(dense, self._dims, ("dp",)),
            pp=_grid_groups(dense, self._dims, ("pp",)),
            dp_cp=_grid_groups(dense, self._dims, ("cp", "dp")),
            ep=_grid_groups(expert, self._dims, ("ep",)),
            expert_dp=_grid_groups(expert, self._dims, ("dp",)),
        )

    def group_of(self, dim: str, rank: int = 0) -> tuple[int, ...]:
        """The group of dimension ``dim`` that contains global ``rank``; O(group size).

        Parameters
        ----------
        dim : {"tp", "cp", "dp", "pp", "dp_cp", "ep", "expert_dp"}
            The dimension.
        rank : int, default 0
            A global rank in ``0 .. n_gpus - 1``.

        Returns
        -------
        tuple of int
            The ranks of that group, by increasing coordinate along ``dim``.

        Raises
        ------
        ConfigError
            On an unknown ``dim`` or a rank out of range.

        Examples
        --------
        >>> ParallelLayout(tp=8, pp=2, dp=2).group_of("dp", 13)
        (5, 13)
        """
        if dim not in _GROUP_NAMES:
            raise ConfigError(f"dimension must be one of {_GROUP_NAMES}, got {dim!r}")
        if isinstance(rank, bool) or not 0 <= rank < self.n_gpus:
            raise ConfigError(f"rank must be in 0..{self.n_gpus - 1}, got {rank!r}")
        expert = dim in ("ep", "expert_dp")
        if expert:
            self._check_n(None)
        sizes = self.grid_sizes(expert)
        names = ("cp", "dp") if dim == "dp_cp" else ("dp",) if dim == "expert_dp" else (dim,)
        strides: dict[str, int] = {}
        acc = 1
        for name in self._dims:
            strides[name] = acc
            acc *= sizes[name]
        outer_first = sorted(names, key=self._dims.index, reverse=True)
        base = rank - sum((rank // strides[n]) % sizes[n] * strides[n] for n in names)
        members = [base]
        for name in outer_first:  # the innermost dimension is expanded last, so it varies fastest
            stride = strides[name]
            members = [m + i * stride for m in members for i in range(sizes[name])]
        return tuple(members)


def data_parallel_degree(model: ModelSpec, n_gpus: int, *, tp: int, pp: int, cp: int, of: str) -> int:
    """DP degree that fills ``n_gpus``: dp = n_gpus / (tp x pp x cp).

    A TP that does not divide the heads, or a CP the sequence, is named before the GPU count; the pipeline
    (pp x virtual stages against the layers) is left to the step model, which allows uneven stages.

    Parameters
    ----------
    model : ModelSpec
    n_gpus : int
        GPUs the layout fills (a job's, or the cluster's).
    tp, pp, cp : int
        Tensor-, pipeline- and context-parallel degrees.
    of : str
        What the GPUs belong to, for the message ("a job", "the cluster").

    Raises
    ------
    ConfigError
        When tp x pp x cp does not divide ``n_gpus``, or tp/cp do not fit the model.

    >>> from aifabric.training.models import get_model
    >>> data_parallel_degree(get_model("gpt3-175b"), 1024, tp=8, pp=8, cp=1, of="a job")
    16
    """
    ParallelLayout(tp=tp, cp=cp).validate(model)
    if n_gpus % (tp * pp * cp):
        raise ConfigError(
            f"tp x pp x cp = {tp} x {pp} x {cp} = {tp * pp * cp} does not divide the {n_gpus} GPUs of {of}"
        )
    return n_gpus // (tp * pp * cp)


def _grid_groups(
    sizes: dict[str, int], order: tuple[str, ...], dims: tuple[str, ...]
) -> tuple[tuple[int, ...], ...]:
    """Groups of ranks that differ only along ``dims``, ranks laid out with ``order[0]`` fastest."""
    axes = list(reversed(order))  # numpy C order: the last axis varies fastest
    ranks = np.arange(prod(sizes[a] for a in axes)).reshape([sizes[a] for a in axes])
    group_axes = sorted(dims, key=order.index, reverse=True)  # outer first, innermost last (fastest)
    rest = [axes.index(a) for a in axes if a not in dims]
    moved = ranks.transpose(rest + [axes.index(a) for a in group_axes])
    size = prod(sizes[a] for a in dims)
    return tuple(map(tuple, moved.reshape(-1, size).tolist()))
