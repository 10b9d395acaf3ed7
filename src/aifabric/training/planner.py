"""Planner: enumerate the layouts of a model on a cluster for a global batch, rank them by throughput.

:func:`plan` enumerates, then ranks. :func:`candidate_layouts` lists every combination of TP (dividing the
heads), CP (:func:`cp_degrees`: only where each rank keeps >= 8,192 tokens), PP, DP (their product is the GPU
count), EP (MoE models), microbatch size, interleaving, recomputation and ZeRO stage, by arithmetic alone;
each candidate then passes :meth:`~aifabric.training.layout.ParallelLayout.validate` and the memory check and
is timed by :class:`~aifabric.training.step.StepModel` (collective times cached per communicator shape); a
heap keeps the fastest. All layouts share the global batch, so the shortest step is the highest throughput.
:func:`compare` says why one layout beats another: which part of the step grew, and on which network.

Examples
--------
>>> from aifabric.cluster.presets import preset
>>> from aifabric.training.models import get_model
>>> res = plan(get_model("llama3-8b"), preset("dgx-h100-superpod", nodes=2), 64, top=3)
>>> res.best.layout.tp <= 8 and len(res.ranked) == 3
True
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import TierModel
from aifabric.errors import ConfigError, Infeasible
from aifabric.training.layout import DEFAULT_ORDER, ParallelLayout, Recompute
from aifabric.training.memory import MemoryBreakdown
from aifabric.training.models import ModelSpec
from aifabric.training.step import NETWORKS, PARTS, CommItem, StepModel, StepOptions, StepTime

__all__ = [
    "MIN_TOKENS_PER_CP_RANK",
    "Comparison",
    "OptionScope",
    "PlanResult",
    "candidate_layouts",
    "compare",
    "cp_degrees",
    "plan",
]

_COMM_PARTS = ("tp", "cp", "ep", "pp", "dp")
_PART_LABEL = {
    "compute": "compute (GEMMs)",
    "memory-bound": "memory-bound work",
    "tp": "TP collectives",
    "cp": "CP collectives",
    "ep": "EP all-to-all",
    "pp": "PP send/recv",
    "bubble": "pipeline bubble",
    "dp": "exposed DP reduction",
    "optimizer": "optimizer step",
}


@dataclass(frozen=True)
class Comparison:
    """Why ``slower`` takes longer per step than ``faster``.

    Attributes
    ----------
    faster, slower : StepTime
    slower_by_s : float
        Extra seconds per step.
    parts_delta_s : dict
        Change of each critical-path part (slower minus faster), seconds per step.
    network_delta_s : dict
        Change of exposed communication per network, seconds per step.
    blamed_network : str or None
        The network whose exposed time grew most, if communication explains the difference.
    text : str
        One paragraph.
    """

    faster: StepTime
    slower: StepTime
    slower_by_s: float
    parts_delta_s: dict[str, float]
    network_delta_s: dict[str, float]
    blamed_network: str | None
    text: str


def _exposed_by_network(st: StepTime) -> dict[str, float]:
    return {net: st.network_s.get(net, {}).get("exposed", 0.0) for net in NETWORKS}


def compare(faster: StepTime, slower: StepTime) -> Comparison:
    """Explain the step-time difference between two layouts of the same model and batch.

    Parameters
    ----------
    faster, slower : StepTime
        Normally ``faster.step_s <= slower.step_s`` (the text says "faster"/"slower" by the actual times).

    Returns
    -------
    Comparison
    """
    a, b = faster, slower
    delta = b.step_s - a.step_s
    parts = {k: b.breakdown_s.get(k, 0.0) - a.breakdown_s.get(k, 0.0) for k in PARTS}
    ea, eb = _exposed_by_network(a), _exposed_by_network(b)
    nets = {net: eb[net] - ea[net] for net in NETWORKS}
    grown = sorted(((v, k) for k, v in parts.items() if v > 0), reverse=True)
    blamed = max(nets, key=nets.get) if nets and max(nets.values()) > 0 else None  # type: ignore[arg-type]
    text = _parts_text(a, b, delta, parts, grown)
    top_part = grown[0][1] if grown else None
    if top_part in _COMM_PARTS:
        text += _comm_text(a, b, top_part)
    elif blamed is not None and nets[blamed] > 0.1 * max(delta, 1e-12):
        text += f". Exposed communication grows most on {blamed} (+{nets[blamed]:.3f} s per step)"
    return Comparison(a, b, delta, parts, nets, blamed, text + ".")


def _parts_text(
    a: StepTime, b: StepTime, delta: float, parts: dict[str, float], grown: list[tuple[float, str]]
) -> str:
    """The headline sentence of :func:`compare`: how much slower, and which parts grew (top 3) and shrank."""
    word = "slower" if delta >= 0 else "faster"
    text = (
        f"{b.layout.describe()} is {abs(delta) / a.step_s:.1%} {word} than {a.layout.describe()} "
        f"({b.step_s:.3f} vs {a.step_s:.3f} s/step)"
    )
    if grown:
        text += ": " + ", ".join(f"{_PART_LABEL[k]} +{v:.3f} s" for v, k in grown[:3])
        shrunk = sorted(((v, k) for k, v in parts.items() if v < 0))
        if shrunk:
            text += "; " + ", ".join(f"{_PART_LABEL[k]} {v:.3f} s" for v, k in shrunk[:2])
    return text


def _comm_text(a: StepTime, b: StepTime, top_part: str) -> str:
    """Where the communication part that grew most went: its network and its widest group in each layout."""
    dim_nets = {
        net: b.comm_s(top_part, net, exposed_only=True) - a.comm_s(top_part, net, exposed_only=True)
        for net in NETWORKS
    }
    net = max(dim_nets, key=dim_nets.get)  # type: ignore[arg-type]
    text = (
        f". The extra {top_part.upper()} time is on the {net} network "
        f"(+{dim_nets[net]:.3f} s exposed per step)"
    )
    span = _widest_group(b, top_part)
    if span is None:
        return text
    ref = _widest_group(a, top_part)
    if top_part == "pp":
        return text + _pp_span_text(a, b, span, ref)
    text += (
        f": the {top_part.upper()} group of {span.n_ranks} ranks spans {span.n_domains} scale-up "
        f"domain(s), {span.algorithm} {span.op} at {span.time_s * 1e3:.2f} ms per call"
    )
    if ref is not None:
        text += f" (vs {ref.n_ranks} ranks in {ref.n_domains} domain(s), {ref.time_s * 1e3:.2f} ms)"
    return text


def _widest_group(st: StepTime, dim: str) -> CommItem | None:
    """The communicator of ``dim`` in ``st`` that spans the most scale-up domains, if any."""
    groups = [c for c in st.comms if c.dim == dim]
    return max(groups, key=lambda c: c.n_domains) if groups else None


def _pp_span_text(a: StepTime, b: StepTime, span: CommItem, ref: CommItem | None) -> str:
    """The pipeline's p2p is between two adjacent stages, whatever pp is: say so, not "a group of 2"."""
    where = "crosses scale-up domains" if span.n_domains > 1 else "stays inside one scale-up domain"
    text = (
        f": PP send/recv between adjacent stages (pp={b.layout.pp}) {where}, "
        f"{span.algorithm} {span.op} at {span.time_s * 1e3:.2f} ms per call"
    )
    if ref is not None:
        text += f" (vs {ref.time_s * 1e3:.2f} ms with pp={a.layout.pp} v={a.layout.virtual_pipeline_stages})"
    return text


@dataclass(frozen=True)
class OptionScope:
    """An option that applies to some layouts only (``--zero3-prefetch``: ZeRO-3 ones), and which.

    ``train`` refuses such an option on a layout outside its scope; :func:`plan` given it searches only the
    layouts inside, so the winner reruns in ``train`` with the options the plan was given.

    Attributes
    ----------
    flag : str
        The option as the user writes it (``--zero3-prefetch``).
    scope : str
        The layouts it applies to, in words (``ZeRO-3``, ``pp > 1``).
    applies : callable
        ``applies(layout) -> bool``.
    """

    flag: str
    scope: str
    applies: Callable[[ParallelLayout], bool]

    @property
    def label(self) -> str:
        """``--zero3-prefetch (ZeRO-3)``."""
        return f"{self.flag} ({self.scope})"


@dataclass(frozen=True)
class PlanResult:
    """The ranked layouts of one search.

    Attributes
    ----------
    model, cluster : str
    n_gpus, global_batch_size : int
    ranked : tuple of StepTime
        The fastest layouts, fastest first, with their full breakdown.
    n_evaluated : int
        Layouts built and checked (validation, memory, time).
    n_feasible : int
        Layouts that fit and were timed.
    rejected : dict
        Why the others were rejected (reason -> count).
    elapsed_s : float
        Wall time of the search.
    best_by : dict
        For ``tp``, ``pp``, ``cp``, ``ep``, ``recompute``: the fastest step time of each value, for "why".
    constraints : dict
        Degrees forced by the caller.
    scopes : tuple of str
        The options that narrowed the search (:class:`OptionScope` labels), said in :meth:`why`.
    """

    model: str
    cluster: str
    n_gpus: int
    global_batch_size: int
    ranked: tuple[StepTime, ...]
    n_evaluated: int
    n_feasible: int
    rejected: dict[str, int]
    elapsed_s: float
    best_by: dict[str, dict[object, tuple[float, ParallelLayout]]] = field(default_factory=dict)
    constraints: dict[str, int] = field(default_factory=dict)
    scopes: tuple[str, ...] = ()

    @property
    def best(self) -> StepTime:
        """The winner."""
        return self.ranked[0]

    @property
    def layouts_per_s(self) -> float:
        """Search speed: layouts evaluated per second of wall time."""
        return self.n_evaluated / self.elapsed_s if self.elapsed_s > 0 else float("inf")

    def cp_rule_note(self) -> str:
        """Why no cp > 1 was tried (the :data:`MIN_TOKENS_PER_CP_RANK` rule), or "" where CP was forced
        or the sequence is long enough."""
        if "cp" in self.constraints:
            return ""
        return _cp_rule_note(self.best.seq_len)

    def why(self, model: StepModel | None = None) -> str:
        """Why the winner wins: its breakdown, then the best layout of each other TP/PP/recompute choice.

        Parameters
        ----------
        model : StepModel, optional
            To re-time the alternatives in full (the search keeps only their step times); without it the
            alternatives are quoted by step time alone.
        """
        w = self.best
        bd = w.breakdown_s
        parts = ", ".join(f"{_PART_LABEL[k]} {v:.3f} s" for k, v in bd.items() if v > 5e-4)
        lines = [
            f"Winner {w.layout.describe()}: {w.step_s:.3f} s/step, {w.tokens_per_s:,.0f} tokens/s, "
            f"{w.achieved_flops_per_gpu / 1e12:.0f} TFLOP/s per GPU, MFU {w.mfu:.1%} ({parts})."
        ]
        summary = w.compute.summary()
        lines.append(f"{summary[:1].upper()}{summary[1:]}.")
        caution = w.compute.caution()
        if caution:
            lines.append(f"Caution: {caution}.")
        tp_items = [c for c in w.comms if c.dim == "tp"]
        if tp_items:
            nd = max(c.n_domains for c in tp_items)
            where = "stays inside one scale-up domain" if nd == 1 else f"spans {nd} scale-up domains"
            lines.append(f"Its TP group of {w.layout.tp} {where}.")
        excluded = self.cp_rule_note()
        if excluded:
            lines.append(excluded)
        if self.scopes:
            lines.append(
                f"Searched only the layouts every option given applies to: {', '.join(self.scopes)}; "
                "train refuses them elsewhere."
            )
        shown: set[ParallelLayout] = {w.layout}  # a layout already compared is not compared again
        if len(self.ranked) > 1:
            lines.append("Runner-up: " + compare(w, self.ranked[1]).text)
            shown.add(self.ranked[1].layout)
        for dim in ("tp", "pp", "recompute"):
            current = getattr(w.layout, dim)
            current = current.value if isinstance(current, Recompute) else current
            others = [(s, lay) for val, (s, lay) in self.best_by.get(dim, {}).items() if val != current]
            if not others:
                continue
            s, lay = min(others, key=lambda x: x[0])
            if lay in shown:
                continue
            shown.add(lay)
            if model is not None:
                lines.append(f"Best other {dim}: " + compare(w, model.evaluate(lay)).text)
            else:
                lines.append(
                    f"Best other {dim}: {lay.describe()} at {s:.3f} s/step "
                    f"({(s - w.step_s) / w.step_s:+.1%})."
                )
        return "\n".join(lines)


def _cp_rule_note(seq_len: int) -> str:
    """The sentence saying that the CP rule excluded every cp > 1 at ``seq_len``, or "" if it did not."""
    if seq_len // 2 >= MIN_TOKENS_PER_CP_RANK:
        return ""
    return (
        f"Context parallelism not tried: at {seq_len:,} tokens a CP rank of cp >= 2 would keep fewer than "
        f"{MIN_TOKENS_PER_CP_RANK:,} (Llama 3 trained 8K sequences with cp = 1, arXiv:2407.21783 Table 4; "
        "Megatron-LM presents CP for long sequences); the cost model may still rank such a layout faster "
        "(force it with --cp)."
    )


def _reason(message: str) -> str:
    """The field a validation message starts with (``global_batch_size``, ``interleaved schedule`` ...)."""
    match = re.match(r"[A-Za-z_ ]+", message)
    return (match.group(0).strip() if match else message[:40]) or message[:40]


def _check_forced(model: ModelSpec, spec: ClusterSpec, forced: dict[str, int]) -> None:
    """Refuse a forced degree that no layout could use, naming it and what it must divide."""
    for name, value in forced.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    tp = forced.get("tp")
    if tp and (model.n_heads % tp or model.kv_heads % tp):
        raise ConfigError(
            f"tp={tp} does not divide n_heads={model.n_heads} / n_kv_heads={model.kv_heads} of model "
            f"{model.name!r}"
        )
    ep = forced.get("ep")
    if ep and ep > 1 and not model.is_moe:
        raise ConfigError(f"ep={ep} but model {model.name!r} has no experts")
    if ep and model.is_moe and model.n_experts % ep:
        raise ConfigError(f"ep={ep} does not divide the {model.n_experts} experts of model {model.name!r}")
    for name, value in forced.items():
        if name != "ep" and spec.n_gpus % value:
            raise ConfigError(f"{name}={value} does not divide the {spec.n_gpus} GPUs of {spec.name}")


def _divisors(n: int) -> list[int]:
    small = [i for i in range(1, int(n**0.5) + 1) if n % i == 0]
    return sorted(set(small + [n // i for i in small]))


#: Fewest tokens of a sequence that one context-parallel rank keeps. Llama 3 trained its 8,192-token stage
#: with cp = 1 and its 131,072-token stage with cp = 16, i.e. 8,192 tokens per CP rank (Llama Team,
#: arXiv:2407.21783, Table 4); Megatron-LM's ``context_parallel.md`` presents CP for long sequences only. The
#: planner never proposes a CP group that would leave a rank fewer tokens (a degree forced by the caller is
#: kept).
MIN_TOKENS_PER_CP_RANK = 8192


def cp_degrees(seq_len: int, candidates: list[int], max_cp: int) -> list[int]:
    """The context-parallel degrees the planner tries for a sequence of ``seq_len`` tokens.

    cp = 1 always; cp > 1 only if cp <= ``max_cp``, 2 cp divides the sequence (load-balanced causal split)
    and each rank keeps at least :data:`MIN_TOKENS_PER_CP_RANK` tokens.

    >>> cp_degrees(8192, [1, 2, 4, 8, 16], 16), cp_degrees(131072, [1, 2, 4, 8, 16, 32], 16)
    ([1], [1, 2, 4, 8, 16])
    """
    return [
        c
        for c in candidates
        if c == 1 or (c <= max_cp and seq_len % (2 * c) == 0 and seq_len // c >= MIN_TOKENS_PER_CP_RANK)
    ]


def candidate_layouts(
    model: ModelSpec,
    n_gpus: int,
    global_batch_size: int,
    *,
    forced: dict[str, int],
    microbatch_sizes: tuple[int, ...],
    virtual_stages: tuple[int, ...],
    recompute: tuple[Recompute, ...],
    zero_stages: tuple[int, ...],
    max_cp: int,
    order: str,
    uneven: bool,
) -> Iterator[ParallelLayout]:
    """Every layout the planner times: pure arithmetic, no cost model.

    Rules, each testable on its own: tp divides the attention and KV heads; tp x cp x pp x dp = ``n_gpus``;
    cp follows :func:`cp_degrees`; pp <= layers (and divides them unless ``uneven``); ep divides the experts
    and dp x cp; b x dp divides the batch; v > 1 needs pp > 1, m divisible by pp and l >= pp v. Sequence
    parallelism is on whenever tp > 1. A degree in ``forced`` is the only value tried.
    """
    for t, c, p, d in _degree_grid(model, n_gpus, forced, max_cp=max_cp, uneven=uneven):
        eps = _ep_degrees(model, forced, d * c)
        for b in microbatch_sizes:
            if global_batch_size % (b * d):
                continue
            m = global_batch_size // (b * d)
            for v in virtual_stages:
                if not _interleaving_fits(v, p, m, model.n_layers, uneven):
                    continue
                for e, rc, z in itertools.product(eps, recompute, _distinct_zero_stages(zero_stages, d * c)):
                    yield ParallelLayout(
                        tp=t,
                        pp=p,
                        dp=d,
                        ep=e,
                        cp=c,
                        sequence_parallel=t > 1,
                        virtual_pipeline_stages=v,
                        zero_stage=z,
                        microbatch_size=b,
                        global_batch_size=global_batch_size,
                        recompute=rc,
                        order=order,
                    )


def _distinct_zero_stages(zero_stages: tuple[int, ...], zero_group: int) -> tuple[int, ...]:
    """The ZeRO stages that give distinct layouts over a group of ``zero_group`` = dp x cp ranks holding the
    same weights: all of them, or only the lowest when the group is one rank.

    ZeRO shards optimizer state, gradients and weights over the data-parallel group (Rajbhandari et al.,
    "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", SC 2020, Sec. 5); over one rank
    every stage keeps the whole state and runs the same step. The experts' group is one rank too: the
    planner keeps etp = tp, so ep divides dp x cp and edp = dp x cp / ep.

    >>> _distinct_zero_stages((1, 2, 3), 1), _distinct_zero_stages((1, 2, 3), 8)
    ((1,), (1, 2, 3))
    """
    return zero_stages if zero_group > 1 else tuple(sorted(zero_stages)[:1])


def _degree_grid(
    model: ModelSpec, n_gpus: int, forced: dict[str, int], *, max_cp: int, uneven: bool
) -> Iterator[tuple[int, int, int, int]]:
    """Every (tp, cp, pp, dp) whose product is ``n_gpus``, by the rules of :func:`candidate_layouts`."""
    l = model.n_layers  # noqa: E741
    tps = [forced["tp"]] if "tp" in forced else _divisors(n_gpus)
    for t in tps:
        if model.n_heads % t or model.kv_heads % t or n_gpus % t:
            continue
        rest_t = n_gpus // t
        cps = [forced["cp"]] if "cp" in forced else cp_degrees(model.seq_len, _divisors(rest_t), max_cp)
        for c in cps:
            if rest_t % c:
                continue
            rest_c = rest_t // c
            for p in [forced["pp"]] if "pp" in forced else _divisors(rest_c):
                if rest_c % p or p > l or (not uneven and l % p):
                    continue
                d = rest_c // p
                if "dp" in forced and d != forced["dp"]:
                    continue
                yield t, c, p, d


def _ep_degrees(model: ModelSpec, forced: dict[str, int], dp_cp: int) -> list[int]:
    """The expert-parallel degrees tried: 1 for a dense model, else the forced one or each divisor of the
    experts that divides dp x cp (``dp_cp``)."""
    if not model.is_moe:
        return [1]
    if "ep" in forced:
        return [forced["ep"]]
    return [x for x in _divisors(model.n_experts) if dp_cp % x == 0]


def _interleaving_fits(v: int, p: int, m: int, n_layers: int, uneven: bool) -> bool:
    """Whether ``v`` virtual stages fit: v > 1 needs pp > 1, m divisible by pp and l >= pp v (and pp v
    dividing l unless ``uneven``)."""
    l = n_layers  # noqa: E741
    return not (v > 1 and (p == 1 or m % p or l < p * v or (not uneven and l % (p * v))))


_BEST_BY_KEYS = ("tp", "pp", "cp", "ep", "recompute")


@dataclass
class _Search:
    """Running state of one search: the ``top`` fastest on a heap, the rejections, the best per degree.

    ``smallest`` is the least memory need (and its layout) of the candidates that did not fit.
    """

    top: int
    heap: list[tuple[float, int, ParallelLayout]] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    best_by: dict[str, dict[object, tuple[float, ParallelLayout]]] = field(
        default_factory=lambda: {k: {} for k in _BEST_BY_KEYS}
    )
    evaluated: int = 0
    feasible: int = 0
    smallest: tuple[MemoryBreakdown, ParallelLayout] | None = None

    def in_scope(self, lay: ParallelLayout, scopes: tuple[OptionScope, ...]) -> bool:
        """Whether every option of ``scopes`` applies to ``lay``; the first that does not is counted as
        rejected."""
        outside = next((sc for sc in scopes if not sc.applies(lay)), None)
        if outside is not None:
            self.evaluated += 1
            self.rejected[f"{outside.flag} applies to {outside.scope} only"] += 1
        return outside is None

    def time_one(self, sm: StepModel, lay: ParallelLayout) -> None:
        """Time ``lay``; count it as rejected (and why) or keep its step time."""
        self.evaluated += 1
        try:
            step = sm.step_seconds(lay)
        except Infeasible as err:
            self.rejected["does not fit in memory"] += 1
            need = getattr(err, "memory", None)
            if need is not None and (
                self.smallest is None or need.total_bytes < self.smallest[0].total_bytes
            ):
                self.smallest = (need, lay)
            return
        except ConfigError as err:
            self.rejected[_reason(str(err))] += 1
            return
        if not math.isfinite(step):  # a NaN would sort anywhere, an inf last only by luck: never rank them
            self.rejected["no finite step time"] += 1
            return
        self.feasible += 1
        self._keep(step, lay)

    def _keep(self, step: float, lay: ParallelLayout) -> None:
        """Push a feasible layout onto the heap of the fastest and update the best step per degree."""
        item = (-step, self.feasible, lay)
        if len(self.heap) < self.top:
            heapq.heappush(self.heap, item)
        elif -step > self.heap[0][0]:
            heapq.heapreplace(self.heap, item)
        values = (lay.tp, lay.pp, lay.cp, lay.ep, lay.recompute.value)
        for key, val in zip(_BEST_BY_KEYS, values, strict=True):
            got = self.best_by[key].get(val)
            if got is None or step < got[0]:
                self.best_by[key][val] = (step, lay)

    def fastest(self) -> list[ParallelLayout]:
        """The kept layouts, fastest first (ties in the order they were found)."""
        return [lay for _, _, lay in sorted(self.heap, key=lambda x: (-x[0], x[1]))]


def _check_plan_args(global_batch_size: int, top: int) -> None:
    """Refuse a global batch or ``top`` that is not a positive integer."""
    if isinstance(global_batch_size, bool) or not isinstance(global_batch_size, int) or global_batch_size < 1:
        raise ConfigError(f"global_batch_size must be an integer >= 1, got {global_batch_size!r}")
    if top < 1:
        raise ConfigError(f"top must be >= 1, got {top!r}")


def _no_layout(
    search: _Search,
    model: ModelSpec,
    spec: ClusterSpec,
    global_batch_size: int,
    forced: dict[str, int],
    hbm_capacity_bytes: float,
) -> Infeasible:
    """The error of a search that kept no layout: what was tried, the top reasons, the least memory seen."""
    reasons = (
        "; ".join(f"{k}: {v}" for k, v in search.rejected.most_common(4)) or "no layout divides the GPUs"
    )
    what = ", ".join(f"{k}={v}" for k, v in forced.items())
    memory = ""
    if search.smallest is not None:
        need, lay = search.smallest
        memory = (
            f"; the smallest memory need seen is {need.total_bytes / 1e9:.1f} GB per GPU "
            f"({lay.describe()}), the GPU has {hbm_capacity_bytes / 1e9:.1f} GB of HBM"
        )
    return Infeasible(
        f"no feasible layout for {model.name} on {spec.n_gpus} GPUs of {spec.name} with global batch "
        f"{global_batch_size}{' and ' + what if what else ''} ({search.evaluated} tried; {reasons}){memory}"
    )


def plan(
    model: ModelSpec,
    spec: ClusterSpec,
    global_batch_size: int,
    *,
    options: StepOptions | None = None,
    top: int = 5,
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    cp: int | None = None,
    ep: int | None = None,
    microbatch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16),
    virtual_stages: tuple[int, ...] = (1, 2, 3, 4, 6, 8),
    recompute: tuple[str, ...] = ("none", "selective", "full"),
    zero_stages: tuple[int, ...] = (1, 2, 3),
    max_cp: int = 16,
    order: str = DEFAULT_ORDER,
    tiers: TierModel | None = None,
    step_model: StepModel | None = None,
    scopes: tuple[OptionScope, ...] = (),
) -> PlanResult:
    """Search the layouts of ``model`` on ``spec`` for ``global_batch_size`` sequences; fastest first.

    Enumerate, then rank: :func:`candidate_layouts` lists the layouts (arithmetic only), each is checked
    (validation, memory) and timed by the :class:`StepModel`, and a heap keeps the ``top`` fastest.

    Parameters
    ----------
    model : ModelSpec
    spec : ClusterSpec
        Every GPU is used: tp x cp x pp x dp = ``spec.n_gpus``.
    global_batch_size : int
        B, sequences per iteration.
    options : StepOptions, optional
        Software settings (flash attention, overlap ...); default :class:`StepOptions`.
    top : int, default 5
        Layouts returned with their full breakdown.
    tp, pp, dp, cp, ep : int, optional
        Force a degree (e.g. ``tp=16`` to see what TP across two nodes costs).
    microbatch_sizes, virtual_stages, recompute, zero_stages : tuple
        Values tried. Sequence parallelism is on whenever tp > 1 (same traffic as TP's all-reduces, less
        memory); ZeRO-1 (Megatron's distributed optimizer) dominates ZeRO-0 and is the default lower stage;
        ZeRO-2 trades a reduce-scatter per microbatch for the gradient buffer (Llama 3's FSDP).
    max_cp : int, default 16
        Largest context-parallel degree tried (see also :data:`MIN_TOKENS_PER_CP_RANK`).
    order : str
        Rank placement of every layout (Megatron's default: TP innermost).
    tiers : TierModel, optional
    step_model : StepModel, optional
        Reuse one (and its caches) across searches.
    scopes : tuple of OptionScope
        Options given that apply to some layouts only: only the layouts every one applies to are timed.

    Returns
    -------
    PlanResult

    Raises
    ------
    ConfigError
        If ``global_batch_size`` or ``top`` is not positive, or a forced degree is impossible.
    Infeasible
        If no layout fits; the message counts the reasons.
    """
    _check_plan_args(global_batch_size, top)
    t0 = time.perf_counter()
    sm = step_model or StepModel(model, spec, options=options, tiers=tiers)
    forced = {k: v for k, v in (("tp", tp), ("pp", pp), ("dp", dp), ("cp", cp), ("ep", ep)) if v is not None}
    _check_forced(model, spec, forced)
    candidates = candidate_layouts(
        model,
        spec.n_gpus,
        global_batch_size,
        forced=forced,
        microbatch_sizes=microbatch_sizes,
        virtual_stages=virtual_stages,
        recompute=tuple(Recompute.parse(r) for r in recompute),
        zero_stages=zero_stages,
        max_cp=max_cp,
        order=order,
        uneven=sm.options.uneven_stages,
    )
    search = _Search(top)
    for lay in candidates:
        if search.in_scope(lay, scopes):
            search.time_one(sm, lay)
    if not search.heap:
        raise _no_layout(search, model, spec, global_batch_size, forced, sm.hbm_capacity_bytes)
    return PlanResult(
        model=model.name,
        cluster=spec.name,
        n_gpus=spec.n_gpus,
        global_batch_size=global_batch_size,
        ranked=tuple(sm.evaluate(lay) for lay in search.fastest()),
        n_evaluated=search.evaluated,
        n_feasible=search.feasible,
        rejected=dict(search.rejected),
        elapsed_s=time.perf_counter() - t0,
        best_by=search.best_by,
        constraints=forced,
        scopes=tuple(sc.label for sc in scopes),
    )
