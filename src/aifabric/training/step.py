"""Step time of one training iteration: compute, the network of every parallel dimension, the bubble.

The model follows one microbatch through the busiest pipeline stage, then the pipeline schedule, then the
data-parallel reduction and the optimizer (symbols of the formula note: b microbatch, s sequence, h hidden,
t/p/d/c/e the TP/PP/DP/CP/EP degrees, v interleaved chunks, m = B / (b d) microbatches):

- **Compute.** Matrix-multiply FLOPs (Megatron-LM's count:
  :func:`~aifabric.training.flops.layer_forward_flops_per_token`, backward = 2 x forward, full recomputation
  adds a forward, selective adds the attention core) run at ``peak x gemm_efficiency``; memory-bound
  element-wise work (norms, residual adds, dropout, activation functions, softmax over the attention scores
  unless flash attention keeps them on chip) moves its bytes at ``hbm_bandwidth x hbm_efficiency``. Both
  efficiencies are measured constants of the GPU (:mod:`aifabric.training.efficiency`), the same for every
  model.
- **TP** (Megatron): per layer and microbatch 2 all-reduces forward and 2 backward on b s h / c elements, or,
  with sequence parallelism, 2 all-gathers + 2 reduce-scatters each way; full recomputation repeats the
  forward ones. On the critical path.
- **CP**: all-gather of K, V forward, reduce-scatter of dK, dV backward, hidden behind the attention core as
  far as its time allows.
- **EP**: all-to-all dispatch + combine per MoE layer, forward and backward (again when recomputed), each a
  rank's tokens x top_k x h x 2 bytes. On the critical path.
- **PP**: b s h / c elements (/ t with scatter-gather or sequence parallelism) to the next stage forward and
  back, v times per microbatch (interleaving). On the critical path.
- **Pipeline**: (m + (p - 1) / v) microbatch times of the slowest stage; the bubble is (p - 1) / (v m).
- **DP**: gradients reduced in ``BytesPerParam.grads`` bytes (fp32 by default, as Megatron-LM), parameters
  all-gathered in ``weights`` bytes (bf16) under ZeRO-1/2; an all-reduce under ZeRO-0; ZeRO-3 gathers the
  parameters before every microbatch's forward and backward. Overlap model: the gradient reduction hides
  behind the backward pass of the last microbatch on the first stage (the last to finish), the parameter
  gather behind the first forward of the next iteration, ZeRO-3's gathers behind the microbatch they serve;
  what does not fit is exposed.
- **Optimizer**: Adam reads and writes 30 bytes per parameter of its shard (fp32 master, two moments,
  gradient; bf16 copy) at HBM speed.

Every communication time comes from the formula engine (:func:`aifabric.engines.formula.formula_collective`)
on the real cluster, with the group of rank 0 placed on GPUs by the layout's ``order``.

Not modelled: the TP collectives of the embedding and logit layers; a GEMM efficiency that depends on the
matrix shape (small per-GPU GEMMs run as fast as large ones); MoE routing imbalance and DeepSeek's
node-limited routing; several groups sharing a node's NICs at the same time; the pipeline send/recv
overlapping compute; stragglers, data loading and checkpoints.

References
----------
.. [1] Narayanan et al., SC'21, https://doi.org/10.1145/3458817.3476209, Sec. 2-3 (PTD-P, bubble,
   scatter/gather).
.. [2] Korthikanti et al., MLSys 2023, arXiv:2205.05198, Sec. 4 (sequence parallelism, recomputation).
.. [3] Megatron-LM ``docs/user-guide/features/dist_optimizer.md``, ``context_parallel.md``,
   ``megatron/core/transformer/moe/README.md`` (formula note, sec. 3).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import TierModel, formula_collective, tier_model
from aifabric.engines.result import CollectiveResult
from aifabric.errors import ConfigError
from aifabric.training.efficiency import ComputeProfile, compute_profile
from aifabric.training.flops import (
    attention_core_forward_flops_per_token,
    layer_forward_flops_per_token,
    training_flops_per_iteration,
)
from aifabric.training.layout import ParallelLayout, Recompute
from aifabric.training.memory import MemoryBreakdown, check_fits, memory_breakdown
from aifabric.training.models import ModelSpec

__all__ = ["NETWORKS", "CommItem", "StepModel", "StepOptions", "StepTime", "step_time"]

#: The two networks every communication time is split over.
NETWORKS = ("scale-up", "scale-out")
#: Critical-path parts of a step, in the order they are reported and plotted.
PARTS = ("compute", "memory-bound", "tp", "cp", "ep", "pp", "bubble", "dp", "optimizer")
_ACT_BYTES = 2  # 16-bit activations
_ADAM_BYTES_PER_PARAM = 30  # read grad 4 + master 4 + m 4 + v 4, write master 4 + m 4 + v 4 + bf16 weight 2


@dataclass(frozen=True, slots=True)
class StepOptions:
    """How the training software runs (what a layout does not say).

    Parameters
    ----------
    flash_attention : bool, default True
        Attention scores stay on chip (FlashAttention); False: they go through HBM (softmax, dropout), as in
        Megatron-LM 2021.
    overlap_grad_reduce : bool, default True
        Overlap the data-parallel gradient reduction with the last backward pass (Megatron-LM
        ``--overlap-grad-reduce``, PyTorch DDP). False: it runs after the backward pass (Megatron's 2021
        ``--DDP-impl local``).
    overlap_param_gather : bool, default True
        Overlap ZeRO's parameter all-gather with the next forward pass (``--overlap-param-gather``).
    scatter_gather : bool, default True
        Pipeline sends split over the TP ranks, then all-gathered over NVLink (Narayanan et al. Sec. 4.1).
    uneven_stages : bool, default True
        Allow n_layers not divisible by pp x v: the busiest stage holds ceil(l / (p v)) layers per chunk
        (memory is checked as if every stage held that many). False: :meth:`ParallelLayout.validate`'s
        strict check.
    check_memory : bool, default True
        Raise :class:`~aifabric.errors.Infeasible` when the layout does not fit in the GPU's HBM.
    hbm_reserve_bytes : float, default 0
        HBM kept back from the memory check (CUDA context, allocator fragmentation).
    compute : ComputeProfile, optional
        GEMM/HBM efficiencies; default: the accelerator's entry in ``presets/compute.yaml``.
    """

    flash_attention: bool = True
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = True
    scatter_gather: bool = True
    uneven_stages: bool = True
    check_memory: bool = True
    hbm_reserve_bytes: float = 0.0
    compute: ComputeProfile | None = None


@dataclass(frozen=True, slots=True)
class CommItem:
    """One kind of collective of a step, on one GPU.

    Attributes
    ----------
    dim : str
        ``tp``, ``cp``, ``ep``, ``pp``, ``dp`` (dense weights, dp x cp ranks) or ``expert_dp``.
    op : str
        Collective (``all_gather`` ...), nccl-tests size convention.
    message_bytes : float
        Size of one call.
    count : float
        Calls per iteration on this GPU.
    time_s : float
        One call, seconds (formula engine).
    network_time_s : dict
        One call's seconds per network (``scale-up`` / ``scale-out``).
    algorithm : str
        Algorithm the engine chose.
    n_ranks, n_domains : int
        The group and the scale-up domains it spans.
    exposed_s, hidden_s : float
        Seconds per iteration on the critical path / overlapped with compute (steady state; the pipeline
        bubble is reported on its own).
    explanation : str
        The engine's explanation of one call.
    """

    dim: str
    op: str
    message_bytes: float
    count: float
    time_s: float
    network_time_s: dict[str, float]
    algorithm: str
    n_ranks: int
    n_domains: int
    exposed_s: float
    hidden_s: float
    explanation: str

    @property
    def total_s(self) -> float:
        """Seconds per iteration, exposed + hidden."""
        return self.count * self.time_s

    def network_split_s(self) -> dict[str, tuple[float, float]]:
        """``{network: (exposed_s, hidden_s)}`` per iteration, in proportion to each network's share."""
        total = sum(self.network_time_s.values())
        if total <= 0:
            return {}
        return {
            net: (self.exposed_s * sec / total, self.hidden_s * sec / total)
            for net, sec in self.network_time_s.items()
        }


@dataclass(frozen=True)
class StepTime:
    """Time of one training iteration of a layout, and where it goes.

    Attributes
    ----------
    model, cluster : str
        Names.
    layout : ParallelLayout
    n_gpus : int
    step_s : float
        Seconds per iteration.
    breakdown_s : dict
        Critical-path seconds per part (:data:`PARTS`): compute, memory-bound, tp, cp, ep, pp, bubble, dp,
        optimizer; they add up to ``step_s``.
    comms : tuple of CommItem
        Every collective, with exposed and hidden seconds.
    network_s : dict
        ``{"scale-up": {"exposed": s, "hidden": s}, "scale-out": {...}}`` per iteration (bubble excluded).
    tokens_per_s : float
    flops_per_iteration : float
        Hardware FLOPs (with recomputation), Megatron-LM's count.
    model_flops_per_iteration : float
        Model FLOPs (no recomputation): the MFU numerator.
    achieved_flops_per_gpu : float
        ``flops_per_iteration / (n_gpus x step_s)``: what Megatron-LM reports as teraFLOP/s per GPU.
    mfu, hfu : float
        Model / hardware FLOPs utilisation of the datasheet peak.
    peak_flops : float
    n_microbatches : int
    bubble_fraction : float
        (p - 1) / (v m).
    memory : MemoryBreakdown
    compute : ComputeProfile
    layers_per_stage : int
        Layers on the busiest stage.
    """

    model: str
    cluster: str
    layout: ParallelLayout
    n_gpus: int
    step_s: float
    breakdown_s: dict[str, float]
    comms: tuple[CommItem, ...]
    network_s: dict[str, dict[str, float]]
    tokens_per_s: float
    flops_per_iteration: float
    model_flops_per_iteration: float
    achieved_flops_per_gpu: float
    mfu: float
    hfu: float
    peak_flops: float
    n_microbatches: int
    bubble_fraction: float
    memory: MemoryBreakdown
    compute: ComputeProfile
    layers_per_stage: int
    notes: tuple[str, ...] = field(default=())

    def comm_s(self, dim: str, network: str | None = None, *, exposed_only: bool = False) -> float:
        """Seconds per iteration of ``dim``'s collectives (all, or on one network; exposed or in total)."""
        total = 0.0
        for item in self.comms:
            if item.dim != dim:
                continue
            if network is None:
                total += item.exposed_s if exposed_only else item.total_s
            else:
                exp, hid = item.network_split_s().get(network, (0.0, 0.0))
                total += exp if exposed_only else exp + hid
        return total

    def summary(self) -> str:
        """One line: step time, throughput, TFLOP/s per GPU, MFU."""
        return (
            f"{self.layout.describe()}: {self.step_s:.3f} s/step, {self.tokens_per_s:,.0f} tokens/s, "
            f"{self.achieved_flops_per_gpu / 1e12:.1f} TFLOP/s per GPU, MFU {self.mfu:.1%}"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready), SI units."""
        lay = self.layout
        return {
            "model": self.model,
            "cluster": self.cluster,
            "n_gpus": self.n_gpus,
            "layout": {
                "tp": lay.tp,
                "pp": lay.pp,
                "dp": lay.dp,
                "cp": lay.cp,
                "ep": lay.ep,
                "virtual_pipeline_stages": lay.virtual_pipeline_stages,
                "sequence_parallel": lay.sequence_parallel,
                "zero_stage": lay.zero_stage,
                "microbatch_size": lay.microbatch_size,
                "global_batch_size": lay.global_batch_size,
                "recompute": lay.recompute.value,
                "order": lay.order,
            },
            "step_s": self.step_s,
            "tokens_per_s": self.tokens_per_s,
            "achieved_flops_per_gpu": self.achieved_flops_per_gpu,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "breakdown_s": dict(self.breakdown_s),
            "network_s": {k: dict(v) for k, v in self.network_s.items()},
            "n_microbatches": self.n_microbatches,
            "bubble_fraction": self.bubble_fraction,
            "memory_bytes_per_gpu": self.memory.total_bytes,
            "comms": [
                {
                    "dim": c.dim,
                    "op": c.op,
                    "message_bytes": c.message_bytes,
                    "count": c.count,
                    "time_s": c.time_s,
                    "algorithm": c.algorithm,
                    "n_ranks": c.n_ranks,
                    "n_domains": c.n_domains,
                    "network_time_s": dict(c.network_time_s),
                    "exposed_s": c.exposed_s,
                    "hidden_s": c.hidden_s,
                }
                for c in self.comms
            ],
            "compute_profile": {
                "gemm_efficiency": self.compute.gemm_efficiency,
                "hbm_efficiency": self.compute.hbm_efficiency,
                "source": self.compute.source,
                "summary": self.compute.summary(),
                "upper_bound": self.compute.upper_bound,
            },
            "notes": list(self.notes),
        }


class _Acc:
    """Collects comm items (or only their totals, in the planner's fast path)."""

    __slots__ = ("items", "record")

    def __init__(self, record: bool) -> None:
        self.record = record
        self.items: list[CommItem] = []

    def add(
        self,
        dim: str,
        op: str,
        size: float,
        count: float,
        res: CollectiveResult,
        comm: Communicator,
        exposed_s: float,
    ) -> None:
        if not self.record or count <= 0:
            return
        total = count * res.time_s
        self.items.append(
            CommItem(
                dim,
                op,
                size,
                count,
                res.time_s,
                dict(res.network_time_s),
                res.algorithm,
                comm.n_ranks,
                comm.n_domains,
                exposed_s,
                max(0.0, total - exposed_s),
                res.explanation,
            )
        )


class StepModel:
    """Step-time model of one model on one cluster; evaluates many layouts, caching collective times.

    Parameters
    ----------
    model : ModelSpec
    spec : ClusterSpec
    options : StepOptions, optional
    tiers : TierModel, optional
        The formula engine's tier model of ``spec`` (built here if not given).

    Raises
    ------
    ConfigError
        If the accelerator has no compute profile and none is given.

    Notes
    -----
    Collective results are cached per (op, size, communicator summary): two groups with the same summary
    (ranks, ranks per domain, domains ...) cost the same on the formula engine. A group is represented by
    the one that holds rank 0; groups of other ranks are translates of it.
    """

    def __init__(
        self,
        model: ModelSpec,
        spec: ClusterSpec,
        *,
        options: StepOptions | None = None,
        tiers: TierModel | None = None,
    ) -> None:
        self.model = model
        self.spec = spec
        self.options = options or StepOptions()
        self.tiers = tiers or tier_model(spec)
        acc = spec.accelerator_spec
        self.compute = self.options.compute or compute_profile(spec.accelerator)
        self.peak_flops = acc.peak_bf16_flops
        self.gemm_flops_per_s = acc.peak_bf16_flops * self.compute.gemm_efficiency
        self.hbm_bytes_per_s = acc.hbm_bandwidth_bytes_per_s * self.compute.hbm_efficiency
        self.hbm_capacity_bytes = acc.hbm_capacity_bytes - self.options.hbm_reserve_bytes
        self.n_gpus = spec.n_gpus
        m = model
        self._f_dense = layer_forward_flops_per_token(m)
        self._f_moe = layer_forward_flops_per_token(m, moe=True) if m.is_moe else 0.0
        self._f_core = attention_core_forward_flops_per_token(m)
        self._coll: dict[tuple, CollectiveResult] = {}
        self._comms: dict[tuple, Communicator] = {}
        self._padded: dict[int, ModelSpec] = {}
        self._flops: dict[tuple, float] = {}

    # ------------------------------------------------------------------------------------ networking
    def collective(self, op: str, message_bytes: float, comm: Communicator) -> CollectiveResult:
        """Formula-engine time of one collective, cached per (op, size, communicator summary)."""
        key = (op, message_bytes, comm)
        res = self._coll.get(key)
        if res is None:
            res = formula_collective(op, message_bytes, self.spec, comm, tiers=self.tiers)
            self._coll[key] = res
        return res

    def group(self, layout: ParallelLayout, dim: str) -> Communicator:
        """Communicator of the ``dim`` group holding rank 0 (GPU i runs rank i)."""
        key = (dim, layout.tp, layout.cp, layout.ep, layout.dp, layout.pp, layout.order)
        comm = self._comms.get(key)
        if comm is None:
            comm = self._build_group(layout, dim)
            self._comms[key] = comm
        return comm

    def _build_group(self, layout: ParallelLayout, dim: str) -> Communicator:
        order = layout.order.split("-")
        expert = dim in ("ep", "expert_dp")
        if expert:
            sizes = {"tp": layout.tp, "cp": 1, "ep": layout.ep, "dp": layout.expert_dp, "pp": layout.pp}
        else:
            sizes = {"tp": layout.tp, "cp": layout.cp, "ep": 1, "dp": layout.dp, "pp": layout.pp}
        dims = ("cp", "dp") if dim == "dp_cp" else ("dp",) if dim == "expert_dp" else (dim,)
        n = math.prod(sizes[d] for d in dims)
        live = [i for i, d in enumerate(order) if d in dims and sizes[d] > 1]
        if not live:
            return Communicator.contiguous(self.spec, 1)
        lo, hi = live[0], live[-1]
        if all(sizes[order[i]] == 1 or order[i] in dims for i in range(lo, hi + 1)):
            stride = math.prod(sizes[order[i]] for i in range(lo))
            return Communicator.contiguous(self.spec, n, stride=stride)
        return Communicator.from_gpus(self.spec, layout.group_of(dim, 0))  # pragma: no cover - exotic orders

    def _pp_pair(self, layout: ParallelLayout) -> Communicator:
        """Two neighbouring stages; across a domain boundary if any boundary crosses one."""
        key = ("pp-pair", layout.tp, layout.cp, layout.ep, layout.dp, layout.pp, layout.order)
        comm = self._comms.get(key)
        if comm is None:
            pp = self.group(layout, "pp")
            g = self.spec.domain_gpus
            stride = self._stride(layout, "pp")
            if stride >= g or layout.pp * stride <= g or pp.n_domains == 1:
                comm = Communicator.contiguous(self.spec, 2, stride=stride)
            else:
                comm = Communicator.from_gpus(self.spec, [g - stride, g])
            self._comms[key] = comm
        return comm

    @staticmethod
    def _stride(layout: ParallelLayout, dim: str) -> int:
        sizes = {"tp": layout.tp, "cp": layout.cp, "ep": 1, "dp": layout.dp, "pp": layout.pp}
        order = layout.order.split("-")
        return math.prod(sizes[d] for d in order[: order.index(dim)])

    # -------------------------------------------------------------------------------------- checks
    def padded_model(self, layout: ParallelLayout) -> ModelSpec:
        """The model with n_layers rounded up to a multiple of pp x v (uneven stages), else the model."""
        chunks = layout.pp * layout.virtual_pipeline_stages
        l = self.model.n_layers  # noqa: E741
        if l % chunks == 0 or not self.options.uneven_stages:
            return self.model
        if l < chunks:
            raise ConfigError(
                f"n_layers={l} of model {self.model.name!r} is fewer than pp x virtual_pipeline_stages = "
                f"{layout.pp} x {layout.virtual_pipeline_stages} = {chunks}: a stage would have no layer"
            )
        padded_layers = -(-l // chunks) * chunks
        spec = self._padded.get(padded_layers)
        if spec is None:
            spec = dataclasses.replace(self.model, n_layers=padded_layers)
            self._padded[padded_layers] = spec
        return spec

    def check(self, layout: ParallelLayout) -> tuple[ModelSpec, MemoryBreakdown]:
        """Validate the layout against the model and cluster, and its memory; return (model used, memory).

        Raises
        ------
        ConfigError
            A degree that does not divide, a product that is not the GPU count, a batch that does not
            split into microbatches (:meth:`ParallelLayout.validate`).
        Infeasible
            If ``options.check_memory`` and the layout does not fit in HBM.
        """
        padded = self.padded_model(layout)
        layout.validate(padded, self.n_gpus)
        if self.options.check_memory:
            return padded, check_fits(padded, layout, self.hbm_capacity_bytes)
        return padded, memory_breakdown(padded, layout, self.hbm_capacity_bytes)

    # ------------------------------------------------------------------------------------- the model
    def evaluate(self, layout: ParallelLayout) -> StepTime:
        """Validate, check memory and time one iteration of ``layout``.

        Raises
        ------
        ConfigError, Infeasible
            See :meth:`check`.
        """
        padded, mem = self.check(layout)
        return self._time(layout, padded, mem, record=True)

    def step_seconds(self, layout: ParallelLayout) -> float:
        """Seconds per iteration only (the planner's fast path); same checks as :meth:`evaluate`."""
        padded, mem = self.check(layout)
        return self._time(layout, padded, mem, record=False)

    def _hw_flops(self, recompute: Recompute, global_batch: int) -> tuple[float, float]:
        key = (recompute, global_batch)
        got = self._flops.get(key)
        if got is None:
            hw = training_flops_per_iteration(self.model, global_batch, recompute=recompute)
            mf = training_flops_per_iteration(self.model, global_batch, recompute=Recompute.NONE)
            got = self._flops[key] = (hw, mf)  # type: ignore[assignment]
        return got  # type: ignore[return-value]

    def _elementwise_bytes(self, layout: ParallelLayout, moe: bool) -> tuple[float, float]:
        """Forward HBM bytes per token of one layer's memory-bound work on one GPU, and the scores' part.

        Norms (read + write 2 x 4h), residual adds with bias and dropout fused (read 4h, write 2h, mask h
        each), the activation function (GeLU: read + write 4f; SwiGLU: read 4f, write 2f), MoE token
        permutation (read + write 4 k h), and without flash attention the attention scores (a/t x s per
        token: written by QK^T, softmax read + write, dropout read + write + mask, read by the product with
        V: 13 bytes, 8 without dropout). Element-wise work on h-sized tensors is split over TP only with
        sequence parallelism.
        """
        m = self.model
        h, t = m.hidden_size, layout.tp
        t_sp = t if layout.sequence_parallel else 1
        hidden = (8 + 12 + (4 if m.dropout else 0)) * h / t_sp
        per_width = 6 if m.gated_mlp else 4
        if moe:
            mlp = (m.top_k + m.n_shared_experts) * per_width * m.expert_ffn_size / t
            mlp += 4 * m.top_k * h * _ACT_BYTES / t_sp
        else:
            mlp = per_width * m.ffn_size / t
        scores = 0.0
        if not self.options.flash_attention:
            scores = (13 if m.dropout else 8) * m.n_heads / t * m.seq_len
        return hidden + mlp + scores, scores

    def _two_per_layer(
        self,
        acc: _Acc,
        dim: str,
        op: str,
        size: float,
        comm: Communicator,
        layers: int,
        n_rec: int,
        n_mb: int,
    ) -> tuple[float, float]:
        """Forward and backward seconds per microbatch of a blocking ``op`` run twice in each layer's forward
        and twice in its backward, plus twice more per recomputed forward (``n_rec``); recorded as exposed."""
        res = self.collective(op, size, comm)
        fwd = layers * 2 * res.time_s
        bwd = layers * 2 * res.time_s * (1 + n_rec)
        k = layers * 2 * (2 + n_rec) * n_mb
        acc.add(dim, op, size, k, res, comm, k * res.time_s)
        return fwd, bwd

    @overload
    def _time(
        self, layout: ParallelLayout, padded: ModelSpec, mem: MemoryBreakdown, *, record: Literal[True]
    ) -> StepTime: ...

    @overload
    def _time(
        self, layout: ParallelLayout, padded: ModelSpec, mem: MemoryBreakdown, *, record: Literal[False]
    ) -> float: ...

    def _time(
        self, layout: ParallelLayout, padded: ModelSpec, mem: MemoryBreakdown, *, record: bool
    ) -> StepTime | float:
        m, opt = self.model, self.options
        t, p, d, c, e, v = (
            layout.tp,
            layout.pp,
            layout.dp,
            layout.cp,
            layout.ep,
            layout.virtual_pipeline_stages,
        )
        b, gbs = layout.microbatch_size, layout.global_batch
        n_mb = gbs // (b * d)
        s, h = m.seq_len, m.hidden_size
        rec = layout.recompute
        sp = layout.sequence_parallel and t > 1
        acc = _Acc(record)

        # ---- layers on the busiest stage
        layers = padded.n_layers // p
        n_moe = min(layers, math.ceil(m.n_moe_layers * layers / m.n_layers)) if m.is_moe else 0
        n_dense = layers - n_moe
        tokens = b * s / c  # tokens of one microbatch on one GPU (TP splits work, CP splits tokens)

        # ---- compute: GEMM FLOPs and memory-bound bytes of one microbatch on the busiest stage
        fwd_flops = (n_dense * self._f_dense + n_moe * self._f_moe) * tokens / t
        core_flops = layers * self._f_core * tokens / t
        extra = fwd_flops if rec is Recompute.FULL else core_flops if rec is Recompute.SELECTIVE else 0.0
        logit_fwd = 2.0 * m.vocab_size * h * tokens / t  # last stage only; never recomputed
        gemm_fwd = (fwd_flops + logit_fwd) / self.gemm_flops_per_s
        gemm_bwd = (2 * fwd_flops + extra + 2 * logit_fwd) / self.gemm_flops_per_s
        ew_dense, scores = self._elementwise_bytes(layout, False)
        ew_fwd = n_dense * ew_dense
        if n_moe:
            ew_moe, _ = self._elementwise_bytes(layout, True)
            ew_fwd += n_moe * ew_moe
        ew_extra = ew_fwd if rec is Recompute.FULL else layers * scores if rec is Recompute.SELECTIVE else 0.0
        logit_bytes = 8.0 * m.vocab_size / t  # fused cross-entropy over fp32 logits, forward; x2 backward
        mem_fwd = (ew_fwd + logit_bytes) * tokens / self.hbm_bytes_per_s
        mem_bwd = (2 * ew_fwd + ew_extra + 2 * logit_bytes) * tokens / self.hbm_bytes_per_s

        # ---- TP: per layer per microbatch
        tp_fwd = tp_bwd = 0.0
        if t > 1:
            comm = self.group(layout, "tp")
            size = tokens * h * _ACT_BYTES
            passes_fwd, passes_rec = 1, (1 if rec is Recompute.FULL else 0)
            if sp:
                ag, rs = (
                    self.collective("all_gather", size, comm),
                    self.collective("reduce_scatter", size, comm),
                )
                one = 2 * (ag.time_s + rs.time_s)
                tp_fwd = layers * one * passes_fwd
                tp_bwd = layers * one * (1 + passes_rec)
                k = layers * 2 * (2 + passes_rec) * n_mb
                acc.add("tp", "all_gather", size, k, ag, comm, k * ag.time_s)
                acc.add("tp", "reduce_scatter", size, k, rs, comm, k * rs.time_s)
            else:
                tp_fwd, tp_bwd = self._two_per_layer(
                    acc, "tp", "all_reduce", size, comm, layers, passes_rec, n_mb
                )

        # ---- CP: K, V all-gather forward, dK, dV reduce-scatter backward, behind the attention core
        cp_fwd = cp_bwd = 0.0
        if c > 1:
            comm = self.group(layout, "cp")
            kv_bytes = 2 * tokens * (m.kv_heads * m.head_size / t) * _ACT_BYTES * c  # all ranks' K and V
            ag, rs = (
                self.collective("all_gather", kv_bytes, comm),
                self.collective("reduce_scatter", kv_bytes, comm),
            )
            core_fwd = self._f_core * tokens / t / self.gemm_flops_per_s
            n_ag_bwd = 1 if rec in (Recompute.FULL, Recompute.SELECTIVE) else 0
            cp_fwd = layers * max(0.0, ag.time_s - core_fwd)
            cp_bwd = layers * max(0.0, rs.time_s + n_ag_bwd * ag.time_s - (2 + n_ag_bwd) * core_fwd)
            if record:
                k_ag, k_rs = layers * (1 + n_ag_bwd) * n_mb, layers * n_mb
                exp = (cp_fwd + cp_bwd) * n_mb
                tot = k_ag * ag.time_s + k_rs * rs.time_s
                share = exp / tot if tot > 0 else 0.0
                acc.add("cp", "all_gather", kv_bytes, k_ag, ag, comm, share * k_ag * ag.time_s)
                acc.add("cp", "reduce_scatter", kv_bytes, k_rs, rs, comm, share * k_rs * rs.time_s)

        # ---- EP: all-to-all dispatch + combine per MoE layer
        ep_fwd = ep_bwd = 0.0
        if n_moe and e > 1:
            comm = self.group(layout, "ep")
            tok_rank = tokens / t if (sp or t == 1) else tokens
            size = tok_rank * m.top_k * h * _ACT_BYTES
            n_rec = 1 if rec is Recompute.FULL else 0
            ep_fwd, ep_bwd = self._two_per_layer(acc, "ep", "all_to_all", size, comm, n_moe, n_rec, n_mb)

        # ---- PP: activations forward, gradients backward, v times per microbatch
        pp_fwd = pp_bwd = 0.0
        if p > 1:
            comm = self._pp_pair(layout)
            split = t if (sp or (opt.scatter_gather and t > 1)) else 1
            size = tokens * h * _ACT_BYTES / split
            p2p = self.collective("send_recv", size, comm)
            pp_fwd = pp_bwd = v * p2p.time_s
            k = 2 * v * n_mb
            acc.add("pp", "send_recv", size, k, p2p, comm, k * p2p.time_s)
            if opt.scatter_gather and t > 1 and not sp:
                tp_comm = self.group(layout, "tp")
                full = tokens * h * _ACT_BYTES
                ag = self.collective("all_gather", full, tp_comm)
                pp_fwd += v * ag.time_s
                pp_bwd += v * ag.time_s
                acc.add("pp", "all_gather", full, k, ag, tp_comm, k * ag.time_s)

        # ---- DP: gradients and parameters of the busiest stage
        dense_params, expert_params = self._stage_params(layout, padded, n_dense, n_moe)
        bpp = m.bytes_per_param
        dp_terms: list[
            tuple[str, str, float, CollectiveResult, Communicator, str]
        ] = []  # (dim, op, size, res, comm, when)
        for dim, params in (("dp", dense_params), ("expert_dp", expert_params)):
            ranks = d * c if dim == "dp" else layout.expert_dp
            if ranks <= 1 or params <= 0:
                continue
            comm = self.group(layout, "dp_cp" if dim == "dp" else "expert_dp")
            grad_bytes, weight_bytes = params * bpp.grads, params * bpp.weights
            if layout.zero_stage == 0:
                dp_terms.append(
                    (
                        dim,
                        "all_reduce",
                        grad_bytes,
                        self.collective("all_reduce", grad_bytes, comm),
                        comm,
                        "grad",
                    )
                )
            else:
                dp_terms.append(
                    (
                        dim,
                        "reduce_scatter",
                        grad_bytes,
                        self.collective("reduce_scatter", grad_bytes, comm),
                        comm,
                        "grad",
                    )
                )
                dp_terms.append(
                    (
                        dim,
                        "all_gather",
                        weight_bytes,
                        self.collective("all_gather", weight_bytes, comm),
                        comm,
                        "param",
                    )
                )

        fwd_compute = gemm_fwd + mem_fwd
        bwd_compute = gemm_bwd + mem_bwd
        z3_fwd = z3_bwd = 0.0
        dp_end = 0.0
        if dp_terms:
            if layout.zero_stage >= 3:
                ag_s = sum(r.time_s for *_, r, _, w in dp_terms if w == "param")
                rs_s = sum(r.time_s for *_, r, _, w in dp_terms if w == "grad")
                z3_fwd = max(0.0, ag_s - fwd_compute)
                z3_bwd = max(0.0, ag_s + rs_s - bwd_compute)
                if record:
                    tot = n_mb * (2 * ag_s + rs_s)
                    share = n_mb * (z3_fwd + z3_bwd) / tot if tot > 0 else 0.0
                    for dim, op, size, res, comm, w in dp_terms:
                        k = n_mb * (2 if w == "param" else 1)
                        acc.add(dim, op, size, k, res, comm, share * k * res.time_s)
            else:
                grad_s = sum(r.time_s for *_, r, _, w in dp_terms if w == "grad")
                param_s = sum(r.time_s for *_, r, _, w in dp_terms if w == "param")
                grad_exp = max(0.0, grad_s - bwd_compute) if opt.overlap_grad_reduce else grad_s
                param_exp = max(0.0, param_s - fwd_compute) if opt.overlap_param_gather else param_s
                dp_end = grad_exp + param_exp
                if record:
                    for dim, op, size, res, comm, w in dp_terms:
                        tot, exp = (grad_s, grad_exp) if w == "grad" else (param_s, param_exp)
                        acc.add(dim, op, size, 1, res, comm, exp * res.time_s / tot if tot > 0 else 0.0)

        # ---- pipeline schedule
        t_fwd = fwd_compute + tp_fwd + cp_fwd + ep_fwd + pp_fwd + z3_fwd
        t_bwd = bwd_compute + tp_bwd + cp_bwd + ep_bwd + pp_bwd + z3_bwd
        t_mb = t_fwd + t_bwd
        bubble = (p - 1) / v * t_mb
        if layout.zero_stage == 0:
            opt_params = dense_params + expert_params
        else:  # the distributed optimizer updates its shard only
            opt_params = dense_params / (d * c) + expert_params / max(1, layout.expert_dp)
        optimizer = opt_params * _ADAM_BYTES_PER_PARAM / self.hbm_bytes_per_s
        step = n_mb * t_mb + bubble + dp_end + optimizer
        if not record:
            return step

        breakdown = {
            "compute": n_mb * (gemm_fwd + gemm_bwd),
            "memory-bound": n_mb * (mem_fwd + mem_bwd),
            "tp": n_mb * (tp_fwd + tp_bwd),
            "cp": n_mb * (cp_fwd + cp_bwd),
            "ep": n_mb * (ep_fwd + ep_bwd),
            "pp": n_mb * (pp_fwd + pp_bwd),
            "bubble": bubble,
            "dp": n_mb * (z3_fwd + z3_bwd) + dp_end,
            "optimizer": optimizer,
        }
        network: dict[str, dict[str, float]] = {net: {"exposed": 0.0, "hidden": 0.0} for net in NETWORKS}
        for item in acc.items:
            for net, (exp, hid) in item.network_split_s().items():
                slot = network.setdefault(net, {"exposed": 0.0, "hidden": 0.0})
                slot["exposed"] += exp
                slot["hidden"] += hid
        hw, mf = self._hw_flops(rec, gbs)
        n = self.n_gpus
        notes = []
        if padded is not self.model:
            notes.append(
                f"uneven stages: {m.n_layers} layers over pp x v = {p} x {v}; the busiest stage holds "
                f"{layers} (memory checked as if every stage did)"
            )
        return StepTime(
            model=m.name,
            cluster=self.spec.name,
            layout=layout,
            n_gpus=n,
            step_s=step,
            breakdown_s=breakdown,
            comms=tuple(acc.items),
            network_s=network,
            tokens_per_s=gbs * s / step,
            flops_per_iteration=hw,
            model_flops_per_iteration=mf,
            achieved_flops_per_gpu=hw / (n * step),
            mfu=mf / (n * step * self.peak_flops),
            hfu=hw / (n * step * self.peak_flops),
            peak_flops=self.peak_flops,
            n_microbatches=n_mb,
            bubble_fraction=(p - 1) / (v * n_mb),
            memory=mem,
            compute=self.compute,
            layers_per_stage=layers,
            notes=tuple(notes),
        )

    def _stage_params(
        self, layout: ParallelLayout, padded: ModelSpec, n_dense: int, n_moe: int
    ) -> tuple[float, float]:
        """(dense, expert) parameters of the busiest stage on one GPU, after TP/EP splitting.

        Includes the embedding (or output layer) of the first (last) stage: that stage's data-parallel
        reduction is the one that ends the iteration.
        """
        m, t = self.model, layout.tp
        norms = 2 * m.norm_params
        dense = n_dense * ((m.attention_params + m.dense_mlp_params) / t + norms)
        expert = 0.0
        if n_moe:
            shared = m.n_shared_experts * m.expert_params
            dense += n_moe * ((m.attention_params + shared) / t + norms + m.router_params)
            expert = n_moe * m.n_experts * m.expert_params / (t * layout.ep)
        dense += m.vocab_size * m.hidden_size / t
        return dense, expert


def step_time(
    model: ModelSpec,
    layout: ParallelLayout,
    spec: ClusterSpec,
    *,
    options: StepOptions | None = None,
    tiers: TierModel | None = None,
) -> StepTime:
    """Time one training iteration of ``model`` with ``layout`` on the cluster ``spec``.

    See the module docstring for the model. For many layouts, build one :class:`StepModel` and call its
    :meth:`~StepModel.evaluate`: it caches collective times.

    Parameters
    ----------
    model : ModelSpec
    layout : ParallelLayout
        Its product tp x pp x dp x cp must equal ``spec.n_gpus``.
    spec : ClusterSpec
    options : StepOptions, optional
    tiers : TierModel, optional

    Returns
    -------
    StepTime

    Raises
    ------
    ConfigError
        If the layout does not suit the model or the cluster (the message names the field and values).
    Infeasible
        If it does not fit in the GPU's memory.

    Notes
    -----
    Narayanan et al. (SC'21) Table 1, on the paper's cluster with its own layouts (run_table_1.sh), 2021
    software (no flash attention; DDP=local from 39B up): the model gives 135.0, 133.1 and 165.4 teraFLOP/s
    per GPU for the 1.7B, 39.1B and 1T rows, published 137, 138 and 163 (-1.5 %, -3.6 %, +1.5 %).

    Examples
    --------
    The 39.1B row of Table 1: 512 A100s, t = 8, p = 2, b = 4, full recomputation (published: 138):

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.training.models import get_model
    >>> lay = ParallelLayout(tp=8, pp=2, dp=32, microbatch_size=4, global_batch_size=1536, recompute="full")
    >>> opts = StepOptions(flash_attention=False, overlap_grad_reduce=False)
    >>> st = step_time(get_model("megatron-gpt-39.1b"), lay, preset("megatron-a100", gpus=512), options=opts)
    >>> round(st.achieved_flops_per_gpu / 1e12, 1)  # TFLOP/s per GPU
    133.1

    GPT-3 175B on 1,024 H100s (128 DGX nodes), TP inside the node, PP and DP across:

    >>> lay = ParallelLayout(tp=8, pp=8, dp=16, sequence_parallel=True, zero_stage=1,
    ...                      microbatch_size=1, global_batch_size=1536, recompute="selective")
    >>> st = step_time(get_model("gpt3-175b"), lay, preset("dgx-h100-superpod", nodes=128))
    >>> st.comms[0].dim, st.comms[0].n_domains   # the TP group stays in one NVLink domain
    ('tp', 1)
    """
    return StepModel(model, spec, options=options, tiers=tiers).evaluate(layout)
