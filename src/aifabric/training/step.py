"""Step time of one training iteration: compute, the network of every parallel dimension, the bubble.

The model follows one microbatch through the busiest pipeline stage, then the pipeline schedule, then the
data-parallel reduction and the optimizer (symbols of the formula note: b microbatch, s sequence, h hidden,
t/p/d/c/e the TP/PP/DP/CP/EP degrees, v interleaved chunks, m = B / (b d) microbatches):

- **Compute.** Matrix-multiply FLOPs (Megatron-LM's count:
  :func:`~aifabric.training.flops.layer_forward_flops_per_token`, backward = 2 x forward, full recomputation
  adds a forward, selective adds the attention core) run at ``peak x gemm_efficiency``, or, where the GPU
  has a measured GEMM table, each weight GEMM at the throughput of its (m, n, k) shape relative to the
  table's best (:mod:`aifabric.training.gemm`, ``StepOptions.gemm_shapes``); the attention core runs at the
  GPU's measured FlashAttention-2 rate where one is recorded
  (:attr:`~aifabric.training.efficiency.ComputeProfile.attention_core_efficiency`); every 16-bit rate
  measured in a short run is scaled down to what the board's power limit sustains on random data
  (:attr:`~aifabric.training.efficiency.ComputeProfile.power_limit_ratio`: 0.919 on the H100); memory-bound
  element-wise work (norms, residual adds, dropout, activation functions, softmax over the attention scores
  unless flash attention keeps them on chip) moves its bytes at ``hbm_bandwidth x hbm_efficiency``, as many
  bytes as the code's kernels move (``StepOptions.elementwise``: fused, or eager PyTorch's one kernel per
  operator, :mod:`aifabric.training.elementwise`). All
  are measured constants of the GPU (:mod:`aifabric.training.efficiency`), the same for every model.
- **TP** (Megatron): per layer and microbatch 2 all-reduces forward and 2 backward on b s h / c elements, or,
  with sequence parallelism, 2 all-gathers + 2 reduce-scatters each way; full recomputation repeats the
  forward ones. On the critical path, unless ``tp_comm_overlap`` (Megatron's userbuffers) hides them behind
  the GEMMs they feed; those GEMMs then run in Transformer Engine's chunks, smaller and slower on the
  measured table (:func:`~aifabric.training.gemm.userbuffer_gemms`). At expert TP = TP the MLP pair of an
  MoE layer gathers the top_k routed copies of the tokens (Megatron-Core's alltoall dispatcher), top_k
  times the bytes, outside the userbuffers.
- **CP**: all-gather of K, V forward, reduce-scatter of dK, dV backward, hidden behind the attention core as
  far as its time allows.
- **EP**: all-to-all dispatch + combine per MoE layer, forward and backward (again when recomputed), each a
  rank's tokens x top_k x h x 2 bytes (the flex dispatcher, DeepEP / Hybrid-EP, sends a token once per
  destination rank: :func:`~aifabric.training.elementwise.expected_destinations` copies, not top_k), timed
  at the busiest rank's load (:func:`ep_load_imbalance`: the balls-into-bins maximum of uniform top-k
  routing, capped by the capacity factor). On the critical path, unless ``ep_comm_overlap`` (DualPipe,
  Megatron-Core's EP overlap) hides them behind another microbatch.
- **PP**: b s h / c elements (/ t with scatter-gather or sequence parallelism) to the next stage forward and
  back, v times per microbatch (interleaving). On the critical path.
- **Pipeline**: (m + (p - 1) / v) microbatch times of the slowest stage; the bubble is (p - 1) / (v m).
  With ``embedding_chunks`` the embedding and output layer take one layer's place each (Llama 3).
- **DP**: gradients reduced in ``BytesPerParam.grads`` bytes (fp32 by default, as Megatron-LM), parameters
  all-gathered in ``BytesPerParam.gathered`` bytes, the mixed-precision parameter dtype (bf16; FSDP2
  gathers bf16 from fp32 shards). ZeRO 0-2: in buckets (Megatron's 40 M parameters or 1 M x dp)
  that overlap only the rest of the backward pass, the last bucket exposed (:func:`bucketed_exposed_s`);
  once after the last microbatch (ZeRO 0/1: full gradient buffer) or after every microbatch (ZeRO-2: a
  gradient shard only). ZeRO-3/FSDP: each layer's parameters gathered before its forward and its backward
  and its gradients reduce-scattered after, every microbatch, prefetched one layer ahead
  (``zero3_prefetch_layers``); the first gather and the last reduce-scatter are exposed. Each gather of
  16-bit weights under FP8 is cast again, and FSDP2 (``framework``) copies every gathered buffer out into
  the parameters and every gradient into its reduce-scatter buffer, memory-bound passes over the
  parameters at HBM speed (:meth:`StepModel.weight_pass_bytes`), as is Megatron's gradient copy without
  ``gradient_accumulation_fusion``.
- **Overlap is not free**: while a collective overlaps compute, its NCCL kernel holds ``comm_sms`` of the
  GPU's SMs (``presets/compute.yaml``), so the compute runs that share slower (:func:`overlapped_s`).
- **CPU offload** (``offload_layers``, :mod:`aifabric.training.offload`): the first N layers' activations
  leave GPU memory and cross the GPU's link to its CPU out in the forward pass and back in the backward,
  each copy beside the compute of a window of layers (Transformer Engine's ``layer_window_map``); what it
  does not hide is exposed.
- **Optimizer**: Adam reads and writes 30 bytes per parameter of its shard (fp32 master, two moments,
  gradient; bf16 copy) at HBM speed.

Each of these is one method of :class:`StepModel` (``compute_term``, ``tp_term``, ``cp_term``, ``ep_term``,
``pp_term``, ``dp_term``, ``optimizer_term``, ``bubble_term``); ``_terms`` adds them up.

Every communication time comes from the formula engine (:func:`aifabric.engines.formula.formula_collective`)
on the real cluster, with the group of rank 0 placed on GPUs by the layout's ``order``.

Not modelled: the TP collectives of the embedding and logit layers; GEMM shapes on GPUs without a measured
table (A100, Blackwell: small per-GPU GEMMs run as fast as large ones there); an attention-core efficiency by
kernel, head dimension and sequence (one FlashAttention-2 figure per GPU, at d = 128 and s = 8,192, stands for
every run: Transformer Engine's cuDNN kernel on Hopper is faster); learned-router imbalance beyond the uniform
bound and DeepSeek's node-limited routing; groups of different dimensions sharing a node's NICs at the same
time (one dimension's groups do: ``StepModel._all_groups_at_once``); the
pipeline send/recv overlapping compute; the HBM bandwidth CPU-offload copies take from memory-bound kernels;
stragglers, data loading and checkpoints.

References
----------
.. [1] Narayanan et al., SC'21, https://doi.org/10.1145/3458817.3476209, Sec. 2-3 (PTD-P, bubble,
   scatter/gather).
.. [2] Korthikanti et al., MLSys 2023, arXiv:2205.05198, Sec. 4 (sequence parallelism, recomputation).
.. [3] Megatron-LM ``docs/user-guide/features/dist_optimizer.md``, ``context_parallel.md``,
   ``megatron/core/transformer/moe/README.md`` (formula note, sec. 3);
   ``megatron/core/distributed/distributed_data_parallel.py`` (gradient bucket size).
.. [4] Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel", VLDB 2023,
   arXiv:2304.11277, Sec. 3.3 (per-unit all-gather, backward prefetch, reduce-scatter in backward).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.engines.formula import TierModel, formula_collective, tier_model
from aifabric.engines.result import CollectiveResult
from aifabric.errors import ConfigError, Infeasible
from aifabric.training.efficiency import ComputeProfile, compute_profile
from aifabric.training.elementwise import (
    MOE_WIRE_BYTES,
    check_kernels_fit,
    check_kernels_framework,
    elementwise_kernels,
    ep_wire_bytes,
    layer_forward_bytes,
    moe_dispatcher,
    moe_wire_dtype,
)
from aifabric.training.ep_overlap import (
    EP_OVERLAP_SCHEDULES,
    LayerPasses,
    check_combined_1f1b,
    merged_layer_s,
    unpaired_fraction,
)
from aifabric.training.flops import (
    attention_core_forward_flops_per_token,
    einsum_dispatch_forward_flops_per_token,
    layer_forward_flops_per_token,
    op_sac_recompute_forward_flops_per_token,
    training_flops_per_iteration,
)
from aifabric.training.gemm import (
    Gemm,
    GemmTable,
    backward_gemms,
    layer_gemms,
    pass_flops_per_s,
    userbuffer_gemms,
)
from aifabric.training.layout import ParallelLayout, Recompute
from aifabric.training.memory import (
    MEMORY_REMEDIES,
    MemoryBreakdown,
    MemoryRemedy,
    check_fits,
    get_framework,
    memory_breakdown,
)
from aifabric.training.models import ModelSpec
from aifabric.training.offload import (
    check_host_offload,
    check_offload_fits,
    host_link_bytes_per_s,
    host_offload_bytes,
    offload_exposed_s,
    offload_windows,
)

__all__ = [
    "NETWORKS",
    "CommItem",
    "ComputeTimes",
    "GemmRates",
    "PassTimes",
    "StageView",
    "StepModel",
    "StepOptions",
    "StepTime",
    "bucketed_exposed_s",
    "ep_load_imbalance",
    "overlapped_s",
    "step_time",
]

#: The two networks every communication time is split over.
NETWORKS = ("scale-up", "scale-out")
#: Dimensions whose collectives a fabric slowdown may stretch (:class:`StepModel`'s ``slowdown``).
_SLOWED = ("dp", "ep", "pp")
#: Critical-path parts of a step, in the order they are reported and plotted.
PARTS = ("compute", "memory-bound", "tp", "cp", "ep", "pp", "offload", "bubble", "dp", "optimizer")
_ACT_BYTES = 2  # 16-bit activations
_EMBEDDING_NOTE = " and the embedding and output layer, one layer's place each,"
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
    tp_comm_overlap : bool, default False
        Megatron-LM ``--tp-comm-overlap`` (Transformer Engine userbuffers): the sequence-parallel all-gathers
        and reduce-scatters are split into chunks that overlap the GEMMs they feed, and those GEMMs run as
        chunks of T / t or T / 4 rows (:func:`~aifabric.training.gemm.userbuffer_gemms`, timed by shape
        where the GPU has a GEMM table). Needs sequence parallelism. False: TP collectives are on the
        critical path.
    zero3_prefetch_layers : int, default 1
        ZeRO-3/FSDP: layers whose parameters are all-gathered ahead of the one computing (FSDP
        ``forward_prefetch`` / ``BackwardPrefetch.BACKWARD_PRE``: 1; DeepSpeed ``stage3_prefetch_bucket_size``
        covers about one layer of a large model). 0: every gather waits for the layer that needs it.
    zero3_no_sync : bool, default False
        ZeRO-3/FSDP with gradient sync off on all but the last microbatch of a step (FSDP2
        ``set_requires_gradient_sync(False)``, FSDP1 ``no_sync()``; KempnerForge's ``maybe_no_sync``):
        the per-layer reduce-scatters run on the last microbatch only, and every earlier microbatch's
        gradients accumulate unsharded in the reduce dtype, ``grads`` bytes per parameter of the stage in
        the memory check (:func:`~aifabric.training.memory.memory_breakdown`). The gathers still run
        every microbatch, forward and backward. False: every microbatch reduce-scatters (torchtitan,
        DeepSpeed stage 3, Megatron-FSDP). A layout below ZeRO-3 is refused with it
        (:func:`~aifabric.training.memory.check_zero3_no_sync`): its gradients reduce once per step already.
    ddp_bucket_params : int, optional
        Parameters per gradient bucket; default Megatron-LM's ``max(40,000,000, 1,000,000 x dp)``
        (``megatron/core/distributed/distributed_data_parallel.py``).
    ep_comm_overlap : bool, default False
        Hide the expert all-to-alls of one microbatch behind the compute of another, as DeepSeek-V3's
        DualPipe ("both all-to-all and PP communication can be fully hidden", arXiv:2412.19437 Sec. 3.2.1)
        and Megatron-Core's ``--overlap-moe-expert-parallel-comm`` (the forward of one microbatch beside the
        backward of the next) do; the all-to-all still takes its SM share (:func:`overlapped_s`). False:
        the all-to-alls are on the critical path.
    ep_overlap_schedule : str, default "dualpipe"
        How ``ep_comm_overlap`` pairs the microbatches
        (:data:`~aifabric.training.ep_overlap.EP_OVERLAP_SCHEDULES`):
        ``"dualpipe"`` (every microbatch paired, its all-to-alls beside a whole layer of compute) or
        ``"combined-1f1b"`` (Megatron-Core's, Megatron-Bridge's ``moe_a2a_overlap``: each all-to-all beside
        the part of the other microbatch's layer that Megatron-Core's stream schedule puts beside it, the
        warm-up and cool-down passes alone; :mod:`aifabric.training.ep_overlap`). Refused, as Megatron-Core
        refuses it, with pp > 1 and no virtual pipeline, and with full recomputation.
    capacity_factor : float, optional
        MoE expert capacity (tokens an expert takes, over its fair share); None: dropless routing. Caps the
        load-imbalance factor of the EP all-to-all (:func:`ep_load_imbalance`) and pads every expert to its
        capacity, at most all the tokens (:func:`padded_capacity_factor`).
    fp8 : bool, default False
        Transformer Engine FP8: the layers' linear GEMMs run at the catalogue's dense FP8 peak x
        ``ComputeProfile.fp8_gemm_efficiency`` (measured; ``gemm_efficiency`` where none is recorded), and
        Transformer Engine's cast kernels move their bytes (:meth:`StepModel._fp8_cast_bytes`); the
        attention core and the output layer stay in BF16, as in Megatron-LM with ``--fp8-format``. Memory
        counts Transformer Engine's FP8 weight copies and its one-byte saved linear inputs
        (:func:`~aifabric.training.memory.memory_breakdown`). MFU stays against the BF16 peak (Llama 3's
        "BF16 MFU").
    embedding_chunks : bool, default False
        Llama 3's pipeline (Dubey et al. 2024, arXiv:2407.21783, Sec. 3.3.2: "we reduce one Transformer layer
        each from the first and the last stages ... the first model chunk on the first stage has only the
        embedding, and the last model chunk on the last stage has only output projection and loss
        calculation"): the embedding and the output layer each take one Transformer layer's place, so the
        stages are cut as if the model had n_layers + 2 layers (126 + 2 = 128 = 16 ranks x 8 one-layer
        chunks for the 405B), and the busiest stage is a middle one, without the output layer (unless the
        output layer costs more than a Transformer layer, when the last stage is the busiest). Only with
        pp > 1. False: every stage holds n_layers / (p v) layers and the busiest also runs the output layer.
    elementwise : str, default "fused"
        The kernels of the memory-bound work (:data:`~aifabric.training.elementwise.ELEMENTWISE_KERNELS`):
        ``"fused"`` (Megatron-LM / Transformer Engine, torch.compile), ``"llama-eager"`` (Meta's Llama
        code in eager PyTorch, one kernel per operator, as torchtitan runs it without torch.compile) or
        ``"megatron-unfused-ce"`` (fused, but Megatron-Core's cross-entropy without
        ``--cross-entropy-loss-fusion``).
    gemm_shapes : bool, optional
        Time each weight GEMM from its (m, n, k) shape on the GPU's measured GEMM table
        (``ComputeProfile.gemm_table``, :mod:`aifabric.training.gemm`): small hidden sizes, narrow TP
        slices and the logit layer then run slower than a large square product. None (default): when the
        accelerator has a table (H100, H200, B200, GB200); True: required (refused without a table); False:
        every GEMM at ``gemm_efficiency``. The attention core keeps its own rate (``attention_flops_per_s``).
    framework : str, default "megatron"
        The training framework (:data:`~aifabric.training.memory.FRAMEWORKS`): what ``selective``
        recomputation saves and repeats, and the loss's logits in the memory check. ``"torchtitan"``: its
        op-level policy repeats every second matmul of a layer (wk, wo, w3) and the element-wise operators,
        not the attention core (:func:`~aifabric.training.flops.op_sac_recompute_forward_flops_per_token`);
        ``"torchtitan-2025-06"`` (the releases of mid-2025) repeats the attention core too on Blackwell,
        whose cuDNN attention kernel its save list lacks. Under ZeRO-3 the framework also says whether
        parameters and gradients are copied in and out of the collectives' buffers (FSDP2,
        :meth:`StepModel.weight_pass_bytes`).
    gradient_accumulation_fusion : bool, default True
        Megatron-LM's wgrad GEMM accumulates straight into the main gradient buffer. False (``--no-gradient-
        accumulation-fusion``; NeMo 25.04's and Megatron-Bridge's Megatron-FSDP recipes turn it off) the
        16-bit weight gradient is then copied into the main gradient, ``grads`` bytes (and added to it
        where gradients accumulate over microbatches, ZeRO 0-2): a memory-bound pass over every parameter
        each microbatch (Megatron-LM ``docs/user-guide/features/megatron_fsdp.md``, "Weight Gradient
        Accumulation Fusion": "to avoid COPY-ing the gradient to Megatron-FSDP communication buffers").
    moe_dispatcher : str, default "alltoall"
        The MoE token dispatcher whose kernels move the tokens in and out of the experts
        (:data:`~aifabric.training.elementwise.MOE_DISPATCHERS`): ``"alltoall"`` (Megatron-Core's, eager
        permutation), ``"alltoall-fused"`` (``--moe-permute-fusion``), ``"flex"`` (DeepEP, HybridEP:
        the first permutation inside the dispatch kernel, no sort by local expert) or ``"einsum"``
        (GShard's one-hot dispatch and combine einsums, MaxText with a capacity factor and megablox off;
        needs ``capacity_factor``). Their bytes are element-wise work
        (:func:`~aifabric.training.elementwise.layer_forward_bytes`); the einsums are matrix products
        (:func:`~aifabric.training.flops.einsum_dispatch_forward_flops_per_token`), timed at the experts'
        GEMM rate.
    moe_dispatch_fwd_dtype, moe_combine_bwd_dtype : str, default "bf16"
        Megatron-LM's wire dtypes of the forward dispatch and the backward combine, ``"bf16"`` or
        ``"mxfp8"`` (:data:`~aifabric.training.elementwise.MOE_WIRE_BYTES`); only with the flex
        dispatcher (Megatron-LM: its 'ncclep' backend).
    offload_layers : int, default 0
        Megatron-LM's ``cpu_offloading_num_layers`` (Transformer Engine's CPU offload,
        :mod:`aifabric.training.offload`): the activations of the first N layers leave GPU memory for the
        CPU's, each copied out in the forward pass and back in the backward over the GPU's link to its CPU
        (NVLink-C2C on Grace parts, the x16 PCIe link otherwise), beside the compute of a window of L / N
        layers; what a copy does not hide is exposed (the ``offload`` part of the step). Refused on a GPU
        with no CPU link in the catalogue, with pp > 1, with recomputation and for N >= L.
    host_offload : tuple of str, default ()
        MaxText's host offload (``remat_policy: custom``, the tensors set to ``offload``;
        :data:`~aifabric.training.offload.MAXTEXT_SAVED`): those tensors of every layer go to host memory in
        the forward pass and come back in the backward over the chip's host link, beside the compute of
        the whole pass (XLA keeps up to 24 host transfers in flight); what they take beyond it is exposed
        (the ``offload`` part). The recompute option still says what the backward re-runs. Refused on an
        accelerator with no host link in the catalogue and beside ``offload_layers``.
    """

    flash_attention: bool = True
    overlap_grad_reduce: bool = True
    overlap_param_gather: bool = True
    scatter_gather: bool = True
    uneven_stages: bool = True
    check_memory: bool = True
    hbm_reserve_bytes: float = 0.0
    compute: ComputeProfile | None = None
    tp_comm_overlap: bool = False
    zero3_prefetch_layers: int = 1
    zero3_no_sync: bool = False
    ddp_bucket_params: int | None = None
    ep_comm_overlap: bool = False
    ep_overlap_schedule: str = "dualpipe"
    capacity_factor: float | None = None
    fp8: bool = False
    gemm_shapes: bool | None = None
    embedding_chunks: bool = False
    elementwise: str = "fused"
    framework: str = "megatron"
    gradient_accumulation_fusion: bool = True
    offload_layers: int = 0
    host_offload: tuple[str, ...] = ()
    moe_dispatcher: str = "alltoall"
    moe_dispatch_fwd_dtype: str = "bf16"
    moe_combine_bwd_dtype: str = "bf16"

    def __post_init__(self) -> None:
        get_framework(self.framework)  # a ConfigError naming the field for an unknown framework
        if isinstance(self.offload_layers, bool) or self.offload_layers < 0:
            raise ConfigError(f"offload_layers must be an integer >= 0, got {self.offload_layers!r}")
        check_host_offload(tuple(self.host_offload), self.offload_layers)
        if isinstance(self.zero3_prefetch_layers, bool) or self.zero3_prefetch_layers < 0:
            raise ConfigError(
                f"zero3_prefetch_layers must be an integer >= 0, got {self.zero3_prefetch_layers!r}"
            )
        if self.ddp_bucket_params is not None and self.ddp_bucket_params < 1:
            raise ConfigError(f"ddp_bucket_params must be >= 1, got {self.ddp_bucket_params!r}")
        # a ConfigError naming the field for an unknown set, or one of another framework's code
        check_kernels_framework(elementwise_kernels(self.elementwise), self.framework)
        moe_dispatcher(self.moe_dispatcher)  # a ConfigError naming the field for an unknown dispatcher
        self._check_wire_dtypes()
        if self.ep_overlap_schedule not in EP_OVERLAP_SCHEDULES:
            raise ConfigError(
                f"ep_overlap_schedule must be one of {', '.join(EP_OVERLAP_SCHEDULES)}, "
                f"got {self.ep_overlap_schedule!r}"
            )
        if self.capacity_factor is not None and not 1.0 <= self.capacity_factor < math.inf:
            raise ConfigError(
                f"capacity_factor must be >= 1 and finite (or None: dropless), got {self.capacity_factor!r}"
            )
        if moe_dispatcher(self.moe_dispatcher).einsum and self.capacity_factor is None:
            raise ConfigError(
                f"moe_dispatcher {self.moe_dispatcher!r} fills capacity slots: give a capacity_factor "
                "(MaxText runs its einsum dispatch only with capacity_factor > 0)"
            )

    def _check_wire_dtypes(self) -> None:
        """A ConfigError naming the field for an unknown wire dtype, or a quantized one on a dispatcher
        that sends bf16 only (Megatron-LM refuses them off its flex dispatcher)."""
        quantizes = moe_dispatcher(self.moe_dispatcher).quantized_wire
        for name in ("moe_dispatch_fwd_dtype", "moe_combine_bwd_dtype"):
            value = getattr(self, name)
            bf16 = moe_wire_dtype(name, value) == MOE_WIRE_BYTES["bf16"]
            if not bf16 and not quantizes:
                raise ConfigError(
                    f"{name} {value!r} needs a dispatcher that quantizes its payload (flex), "
                    f"got moe_dispatcher {self.moe_dispatcher!r}"
                )


# ------------------------------------------------------------------------------------ overlap formulas
def overlapped_s(comm_s: float, compute_s: float, contention: float) -> float:
    """Exposed seconds of a collective of ``comm_s`` run beside ``compute_s`` of compute-bound work.

    While the collective runs it holds a share f of the SMs (``contention``), so the compute advances at
    1 - f of its speed; the pair takes max(x, c + f x), and what the collective adds to the compute is

        exposed = max(x - c, f x)

    Parameters
    ----------
    comm_s : float
        x, seconds of the collective alone.
    compute_s : float
        c, seconds of the compute alone.
    contention : float
        f in [0, 1): :attr:`~aifabric.training.efficiency.ComputeProfile.overlap_contention`.

    Returns
    -------
    float
        Seconds.

    Notes
    -----
    The SM share is a lower bound on the slowdown: a GEMM whose grid is one wave of SMs needs a second
    wave when a collective holds some SMs (the forum measurement behind ``comm_sms`` saw a GEMM go from
    80 % to 47 % of peak), and memory-bound kernels also share HBM bandwidth with the copy engines.

    Examples
    --------
    A 10 ms gather beside 30 ms of GEMMs on an H100 (24 of 132 SMs): hidden, but 1.8 ms slower.

    >>> round(overlapped_s(0.010, 0.030, 24 / 132) * 1e3, 2)
    1.82
    """
    return max(comm_s - compute_s, contention * comm_s)


def bucketed_exposed_s(comm_s: float, compute_s: float, n_buckets: int, contention: float) -> float:
    """Exposed seconds of a bucketed gradient reduction that overlaps the rest of the backward pass.

    The gradients of a backward pass of ``compute_s`` seconds are reduced in n equal buckets, bucket j
    ready after j/n of the pass (Megatron-LM ``--overlap-grad-reduce``, PyTorch DDP). The first n - 1
    buckets overlap the remaining (n - 1)/n of the pass (:func:`overlapped_s`); the last is ready only
    when the pass ends and is fully exposed:

        exposed = x / n + max(x (n - 1)/n - c (n - 1)/n, f x (n - 1)/n)

    Parameters
    ----------
    comm_s : float
        x, seconds of the whole reduction.
    compute_s : float
        c, seconds of the backward pass it overlaps.
    n_buckets : int
        n >= 1.
    contention : float
        f, see :func:`overlapped_s`.

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ValueError
        If ``n_buckets < 1``.

    Examples
    --------
    1 s of reduction in 10 buckets behind 2 s of backward, no contention: only the last bucket shows.

    >>> round(bucketed_exposed_s(1.0, 2.0, 10, 0.0), 3)
    0.1
    """
    if n_buckets < 1:
        raise ValueError(f"n_buckets must be >= 1, got {n_buckets}")
    rest = (n_buckets - 1) / n_buckets
    return comm_s / n_buckets + overlapped_s(comm_s * rest, compute_s * rest, contention)


def padded_capacity_factor(capacity_factor: float | None, n_experts: int, top_k: int) -> float | None:
    """The capacity factor each expert is padded to, or None where routing is dropless.

    An expert's capacity is ``c x tokens x top_k / n_experts`` slots (GShard, arXiv:2006.16668 Sec. 2.2;
    Switch Transformer, arXiv:2101.03961 Sec. 2.2), computed in full whether filled or not. A token visits
    an expert at most once, so no expert ever receives more than all the tokens: the capacity is capped at
    the tokens, ``min(tokens, c x tokens x top_k / n_experts)`` (AWS neuronx-distributed,
    ``modules/moe/expert_mlps.py`` ``forward_capacity_factor``), i.e. the factor at ``n_experts / top_k``.
    There every expert computes every token and drops none; the same file runs that "full capacity" as
    ``forward_all_experts``, every token through every expert: ``n_experts / top_k`` x the routed FLOPs,
    never the dropless routed FLOPs. So the padded work is continuous and non-decreasing in ``c``.

    >>> padded_capacity_factor(1.25, 8, 2), padded_capacity_factor(100.0, 8, 2)
    (1.25, 4.0)
    """
    if capacity_factor is None:
        return None
    return min(capacity_factor, n_experts / top_k)


def ep_load_imbalance(assignments: float, ep: int, capacity_factor: float | None = None) -> float:
    """Load of the busiest EP rank over the mean, for ``assignments`` token-to-expert routes per microbatch.

    Routing spreads n = tokens x top_k assignments over ep ranks; if routes are independent and uniform
    (a balanced router), rank loads are binomial with mean mu = n / ep, and the most loaded rank carries
    about mu + sqrt(2 mu ln ep) (the balls-into-bins maximum, Raab and Steger 1998), so

        imbalance = 1 + sqrt(2 ln(ep) / mu),   capped at the capacity factor when tokens are dropped.

    A learned router is less even than this; the factor is a lower bound.

    Parameters
    ----------
    assignments : float
        n, routed token-expert pairs leaving the microbatch of one EP group member (> 0).
    ep : int
        Expert-parallel ranks.
    capacity_factor : float, optional
        Expert capacity over the fair share (GShard/Switch); None: dropless.

    Returns
    -------
    float
        >= 1; exactly 1 for ep = 1.

    References
    ----------
    .. [1] Raab and Steger, "Balls into Bins - A Simple and Tight Analysis", RANDOM 1998,
       https://doi.org/10.1007/3-540-49543-6_13.
    .. [2] Fedus et al., "Switch Transformers", JMLR 2022, Sec. 2.2 (expert capacity).

    Examples
    --------
    4,096 tokens x top-8 over 8 ranks: 3 % above the mean; with capacity factor 1.01, 1 %.

    >>> round(ep_load_imbalance(4096 * 8, 8), 3), ep_load_imbalance(4096 * 8, 8, 1.01)
    (1.032, 1.01)
    """
    if ep <= 1 or assignments <= 0:
        return 1.0
    factor = 1.0 + math.sqrt(2.0 * math.log(ep) * ep / assignments)
    return factor if capacity_factor is None else min(factor, capacity_factor)


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
        The BF16 dense tensor peak MFU and HFU are against.
    fp8_peak_flops : float or None
        The FP8 dense tensor peak, on an ``--fp8`` run (:attr:`mfu_fp8`).
    n_microbatches : int
    bubble_fraction : float
        (p - 1) / (v m): the bubble's time over the bubble-free pipeline time (Narayanan et al. SC'21
        Sec. 2.2.1), above 1 when p - 1 > v m; not a share of the step (:attr:`bubble_share` is).
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
    seq_len: int = 0
    fp8_peak_flops: float | None = None

    @property
    def bubble_share(self) -> float:
        """The bubble's share of the step, ``breakdown_s["bubble"] / step_s``: (p - 1) / (v m + p - 1) for
        1F1B when nothing else is on the critical path (7 / 11 = 63.6 % at p = 8, m = 4); what the step
        line and the critical-path table print."""
        return self.breakdown_s.get("bubble", 0.0) / self.step_s if self.step_s > 0 else 0.0

    @property
    def mfu_fp8(self) -> float | None:
        """MFU against the FP8 peak where the linear GEMMs ran in FP8 (``--fp8``), else None; :attr:`mfu`
        stays against the BF16 peak, as Megatron-LM and Transformer Engine report it."""
        if self.fp8_peak_flops is None:
            return None
        return self.mfu * self.peak_flops / self.fp8_peak_flops

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
            "seq_len": self.seq_len,
            "n_microbatches": self.n_microbatches,
            "bubble_fraction": self.bubble_fraction,
            "bubble_share": self.bubble_share,
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
                "power_limit_ratio": self.compute.power_limit_ratio,
                "attention_core_efficiency": self.compute.attention_core_efficiency,
                "hbm_efficiency": self.compute.hbm_efficiency,
                "source": self.compute.source,
                "summary": self.compute.summary(),
                "upper_bound": self.compute.upper_bound,
                "gemm_table": self.compute.gemm_table.name if self.compute.gemm_table else None,
                "fp8_gemm_table": self.compute.fp8_gemm_table.name if self.compute.fp8_gemm_table else None,
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


class PassTimes(NamedTuple):
    """Seconds a term adds to one microbatch's forward and backward pass on the busiest stage."""

    fwd_s: float
    bwd_s: float


class GemmRates(NamedTuple):
    """FLOP/s of the weight GEMMs of one microbatch on one GPU (:meth:`StepModel.gemm_rates`)."""

    dense_fwd: float
    dense_bwd: float
    moe_fwd: float
    moe_bwd: float
    logit_fwd: float
    logit_bwd: float


class ComputeTimes(NamedTuple):
    """Seconds of one microbatch's GEMMs and memory-bound work on the busiest stage, forward and backward."""

    gemm_fwd: float
    gemm_bwd: float
    mem_fwd: float
    mem_bwd: float

    @property
    def total_s(self) -> float:
        """Forward + backward, GEMMs + memory-bound work, seconds."""
        return self.gemm_fwd + self.gemm_bwd + self.mem_fwd + self.mem_bwd


@dataclass(frozen=True, slots=True)
class StageView:
    """One layout seen from its busiest pipeline stage: what every term of the step needs."""

    layout: ParallelLayout
    layers: int  # layers on the stage
    n_moe: int  # of which MoE layers
    n_dense: int
    tokens: float  # tokens of one microbatch on one GPU: b s / cp
    n_mb: int  # microbatches per iteration, m = B / (b dp)
    sp: bool  # sequence parallelism in effect (tp > 1)
    acc: _Acc  # collects the comm items when recording
    logit: bool = True  # the output layer runs on the busiest stage


def _full_recomputes(layout: ParallelLayout) -> int:
    """Extra forward passes a layer's backward re-runs under full recompute (Korthikanti et al.
    arXiv:2205.05198: the whole layer's forward once more), 0 otherwise; each re-run repeats its
    collectives."""
    return 1 if layout.recompute is Recompute.FULL else 0


class StepModel:
    """Step-time model of one model on one cluster; evaluates many layouts, caching collective times.

    Parameters
    ----------
    model : ModelSpec
    spec : ClusterSpec
    options : StepOptions, optional
    tiers : TierModel, optional
        The formula engine's tier model of ``spec`` (built here if not given).
    slowdown : mapping, optional
        ``{"dp": k, "ep": k, "pp": k}``: that dimension's collectives take k times their formula-engine time,
        the contention the fabric adds when all groups of every job communicate at once
        (:func:`aifabric.training.fabric_step.fabric_step`).

    Raises
    ------
    ConfigError
        If the accelerator has no compute profile and none is given, or a slowdown is < 1 or names another
        dimension.

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
        slowdown: Mapping[str, float] | None = None,
    ) -> None:
        self.slowdown = dict(slowdown or {})
        for dim, k in self.slowdown.items():
            if dim not in _SLOWED or not k >= 1.0:
                raise ConfigError(f"slowdown: {dim}={k!r}; give dp, ep or pp, each >= 1")
        self.model = model
        self.spec = spec
        self.options = options or StepOptions()
        self.tiers = tiers or tier_model(spec)
        acc = spec.accelerator_spec
        self.compute = self.options.compute or compute_profile(spec.accelerator)
        self.peak_flops = acc.peak_bf16_flops
        limit = self.compute.power_limit_ratio  # short-run 16-bit rates -> what the power limit sustains
        self.short_run_gemm_flops_per_s = acc.peak_bf16_flops * self.compute.gemm_efficiency
        self.gemm_flops_per_s = self.short_run_gemm_flops_per_s * limit
        self.linear_flops_per_s = self.gemm_flops_per_s  # the layers' linear GEMMs: BF16, or FP8 below
        self.attention_flops_per_s = acc.peak_bf16_flops * self.compute.attention_core_efficiency * limit
        if self.options.fp8:
            if acc.peak_fp8_flops is None:
                raise ConfigError(
                    f"fp8: the {spec.accelerator} has no FP8 tensor cores (no peak_fp8_flops in the "
                    "catalogue)"
                )
            fp8_eff = self.compute.fp8_gemm_efficiency or self.compute.gemm_efficiency * limit
            self.linear_flops_per_s = acc.peak_fp8_flops * fp8_eff  # Azure's FP8 figure is sustained
        self.hbm_bytes_per_s = acc.hbm_bandwidth_bytes_per_s * self.compute.hbm_efficiency
        self.host_bytes_per_s = self._host_link(spec.accelerator)
        self.kernels = elementwise_kernels(self.options.elementwise)
        self.dispatcher = moe_dispatcher(self.options.moe_dispatcher)
        check_kernels_fit(self.model, self.kernels)
        self.gemm_table = self._gemm_table(spec.accelerator)
        self.linear_gemm_table = self._linear_gemm_table()
        if self.linear_gemm_table is not self.compute.fp8_gemm_table:  # what ran is what is reported
            self.compute = dataclasses.replace(self.compute, fp8_gemm_table=None)
        if self.gemm_table is None and self.compute.gemm_table is not None:
            self.compute = dataclasses.replace(self.compute, gemm_table=None)
        self.hbm_capacity_bytes = acc.hbm_capacity_bytes - self.options.hbm_reserve_bytes
        self.n_gpus = spec.n_gpus
        m = model
        self._f_dense = layer_forward_flops_per_token(m)
        self._f_moe = layer_forward_flops_per_token(m, moe=True) if m.is_moe else 0.0
        self._f_core = attention_core_forward_flops_per_token(m)
        self.framework = get_framework(self.options.framework).on_architecture(acc.arch)
        self._op_sac = self.framework.op_level_selective
        self._f_op_sac = op_sac_recompute_forward_flops_per_token(m) if self._op_sac else 0.0
        self._sac_core = self._op_sac and not self.framework.keeps_attention  # the core runs again too
        self.contention = self.compute.overlap_contention
        self._ep_schedules = {"dualpipe": self._ep_hidden, "combined-1f1b": self._ep_combined_1f1b}
        self._coll: dict[tuple, CollectiveResult] = {}
        self._comms: dict[tuple, Communicator] = {}
        self._padded: dict[int, ModelSpec] = {}
        self.capacity_factor = (
            padded_capacity_factor(self.options.capacity_factor, m.n_experts, m.top_k) if m.is_moe else None
        )
        self._flops: dict[tuple, float] = {}
        self._rates: dict[tuple, GemmRates] = {}

    def _host_link(self, accelerator: str) -> float:
        """Bytes/s one direction of the GPU's link to its CPU (:func:`host_link_bytes_per_s`); refuses
        ``offload_layers`` on a GPU without one in the catalogue (0.0 where nothing is offloaded)."""
        rate = host_link_bytes_per_s(self.spec.accelerator_spec)
        opt = self.options
        if rate is None and (opt.offload_layers or opt.host_offload):
            what = f"offload_layers={opt.offload_layers}" if opt.offload_layers else "host_offload"
            raise ConfigError(
                f"{what}: the {accelerator} has no link to a CPU in the catalogue "
                "(no host_link_bidirectional, no pcie)"
            )
        return rate or 0.0

    def _gemm_table(self, accelerator: str) -> GemmTable | None:
        """The measured GEMM table the step uses (``options.gemm_shapes``), or None."""
        wanted, table = self.options.gemm_shapes, self.compute.gemm_table
        if wanted and table is None:
            raise ConfigError(
                f"gemm_shapes: no measured GEMM table for {accelerator!r} (compute profile "
                f"{self.compute.short_source!r}); GEMMs by shape need one (training/presets/gemm_*.csv)"
            )
        return None if wanted is False else table

    def _linear_gemm_table(self) -> GemmTable | None:
        """The table that times the layers' products: the profile's FP8 table under ``options.fp8`` where one
        is recorded and products are timed by shape, else :attr:`gemm_table` (BF16 shapes, or None)."""
        fp8_table = self.compute.fp8_gemm_table
        if self.options.fp8 and self.gemm_table is not None and fp8_table is not None:
            return fp8_table
        return self.gemm_table

    # ------------------------------------------------------------------------------------ networking
    def collective(self, op: str, message_bytes: float, comm: Communicator) -> CollectiveResult:
        """Formula-engine time of one collective, cached per (op, size, communicator summary)."""
        key = (op, message_bytes, comm)
        res = self._coll.get(key)
        if res is None:
            res = formula_collective(  # memory is this model's own check (options.check_memory)
                op, message_bytes, self.spec, comm, tiers=self.tiers, hbm_check=False
            )
            self._coll[key] = res
        return res

    def dim_collective(self, dim: str, op: str, message_bytes: float, comm: Communicator) -> CollectiveResult:
        """:meth:`collective` of a ``dim`` group, slowed by ``slowdown[dim]`` (the fabric's contention)."""
        res = self.collective(op, message_bytes, comm)
        k = self.slowdown.get(dim, 1.0)
        if k == 1.0:
            return res
        return dataclasses.replace(
            res, time_s=res.time_s * k, network_time_s={n: t * k for n, t in res.network_time_s.items()}
        )

    def group(self, layout: ParallelLayout, dim: str) -> Communicator:
        """Communicator of the ``dim`` group holding rank 0 (GPU i runs rank i)."""
        key = (dim, layout.tp, layout.cp, layout.ep, layout.etp, layout.dp, layout.pp, layout.order)
        comm = self._comms.get(key)
        if comm is None:
            comm = self._all_groups_at_once(self._build_group(layout, dim))
            self._comms[key] = comm
        return comm

    @staticmethod
    def _all_groups_at_once(comm: Communicator) -> Communicator:
        """``comm`` as one of the step's groups of its kind, which all run the same collective at once.

        Every GPU of a node is then busy in a group of its own, so a rank crosses the network through its own
        share of a NIC that ``gpus_per_nic`` GPUs share, not through its idle neighbour's as a lone
        communicator does (``Communicator.min_nic_gpus_per_domain``): on a node of 8 GPUs and 4 shared NICs
        a DP group with 2 ranks on different NICs reaches 2 whole NICs alone, but the node's 4 DP groups (one
        per TP rank) reduce together and each gets 1 NIC. Unchanged where every GPU has a NIC of its own.
        """
        return dataclasses.replace(comm, min_nic_gpus_per_domain=comm.min_ranks_per_domain)

    def _build_group(self, layout: ParallelLayout, dim: str) -> Communicator:
        order = layout.order.split("-")
        sizes = layout.grid_sizes(dim in ("ep", "expert_dp"))
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
            comm = self._all_groups_at_once(comm)
            self._comms[key] = comm
        return comm

    @staticmethod
    def _stride(layout: ParallelLayout, dim: str) -> int:
        sizes = layout.grid_sizes(False)
        order = layout.order.split("-")
        return math.prod(sizes[d] for d in order[: order.index(dim)])

    # -------------------------------------------------------------------------------------- checks
    def padded_model(self, layout: ParallelLayout) -> ModelSpec:
        """The model with n_layers rounded up to a multiple of pp x v (uneven stages), else the model.

        With ``options.embedding_chunks`` (and pp > 1) the embedding and the output layer count as one layer
        each (Megatron-LM's ``account_for_embedding_in_pipeline_split`` /
        ``account_for_loss_in_pipeline_split``): n_layers + 2 layer places are cut into pp stages, and the
        model returned has that many layers (FLOPs and MFU stay those of the real model). Where the places
        divide into pp stages, a stage's v chunks may differ by one place (Megatron-LM's
        ``--pipeline-model-parallel-layout`` takes any number of layers per virtual stage: NVIDIA/Megatron-LM
        MR 2795, "flexible asymmetric VPP with custom PP layout"): Llama 3 8B, pp 2, v 2: 34 places, 17 a
        stage, the last one 16 layers and the output layer, not 36 padded places.
        """
        chunks = layout.pp * layout.virtual_pipeline_stages
        extra = 2 if self._embedding_chunks(layout) else 0
        l = self.model.n_layers + extra  # noqa: E741
        if l % chunks == 0 or (extra and l % layout.pp == 0):
            return self._with_layers(l) if extra else self.model
        if not self.options.uneven_stages:
            return self.model  # validate() names n_layers and pp x v
        if l < chunks:
            raise ConfigError(
                f"n_layers={self.model.n_layers}{' + 2 (embedding_chunks)' if extra else ''} of model "
                f"{self.model.name!r} is fewer than pp x virtual_pipeline_stages = "
                f"{layout.pp} x {layout.virtual_pipeline_stages} = {chunks}: a stage would have no layer"
            )
        return self._with_layers(-(-l // chunks) * chunks)

    def _stages_uneven(self, layout: ParallelLayout, padded: ModelSpec) -> bool:
        """Whether the cut was padded: the stages hold unequal layer places."""
        extra = 2 if self._embedding_chunks(layout) else 0
        return padded.n_layers != self.model.n_layers + extra

    def _chunked(self, layout: ParallelLayout, padded: ModelSpec) -> ModelSpec:
        """The model ``validate`` and the memory check take: the padded one, its layers rounded up to whole
        chunks where a stage's chunks differ by one layer (:meth:`padded_model`); the timed stages stay the
        padded ones."""
        chunks = layout.pp * layout.virtual_pipeline_stages
        if padded is self.model or padded.n_layers % chunks == 0:
            return padded
        return self._with_layers(-(-padded.n_layers // chunks) * chunks)

    def _with_layers(self, n_layers: int) -> ModelSpec:
        """The model with ``n_layers`` layers (cached)."""
        spec = self._padded.get(n_layers)
        if spec is None:
            spec = dataclasses.replace(self.model, n_layers=n_layers)
            self._padded[n_layers] = spec
        return spec

    def _output_on_busiest(self, layout: ParallelLayout) -> bool:
        """Whether the busiest stage runs the output layer: always without ``embedding_chunks``; with it, when
        the output layer (2 V h FLOPs per token) costs more than the Transformer layer it replaces, so that
        the last stage (one layer fewer, and the output layer) outweighs a middle one."""
        m = self.model
        return not self._embedding_chunks(layout) or 2.0 * m.vocab_size * m.hidden_size > self._f_dense

    def _embedding_chunks(self, layout: ParallelLayout) -> bool:
        """Whether the embedding and output layer take layer places of the pipeline (``embedding_chunks``)."""
        return self.options.embedding_chunks and layout.pp > 1

    def check(self, layout: ParallelLayout) -> tuple[ModelSpec, MemoryBreakdown]:
        """Validate the layout against the model and cluster, and its memory; return (model used, memory).

        Raises
        ------
        ConfigError
            A degree that does not divide, a product that is not the GPU count, a batch that does not
            split into microbatches (:meth:`ParallelLayout.validate`); experts folded at 1 < etp != tp,
            whose expert tensor-parallel all-gather of the dispatched tokens the step model does not time.
        Infeasible
            If ``options.check_memory`` and the layout does not fit in HBM.
        """
        padded = self.padded_model(layout)
        chunked = self._chunked(layout, padded)  # memory counts whole chunks: an upper bound
        layout.validate(chunked, self.n_gpus)
        if layout.folded and layout.etp > 1:
            raise ConfigError(
                f"expert_tp={layout.etp} with tp={layout.tp}: the step model times expert_tp = 1 or tp only "
                "(the expert tensor-parallel all-gather of the dispatched tokens is not modelled)"
            )
        opt = self.options
        if opt.ep_comm_overlap and opt.ep_overlap_schedule == "combined-1f1b":
            check_combined_1f1b(layout.pp, layout.virtual_pipeline_stages, layout.recompute is Recompute.FULL)
        fit = check_fits if opt.check_memory else memory_breakdown
        mem = fit(
            chunked,
            layout,
            self.hbm_capacity_bytes,
            flash_attention=opt.flash_attention,
            zero3_prefetch_layers=opt.zero3_prefetch_layers,
            fp8=opt.fp8,
            framework=self.framework,
            offload_layers=opt.offload_layers,
            zero3_no_sync=opt.zero3_no_sync,
        )
        if opt.check_memory:
            check_offload_fits(opt.offload_layers, mem.offloaded_activation_bytes, self.spec.accelerator_spec)
        return padded, mem

    def memory_remedy(self, layout: ParallelLayout) -> MemoryRemedy | None:
        """The first published setting of :data:`MEMORY_REMEDIES` with which ``layout`` fits, or None.

        Raises
        ------
        ConfigError
            If the layout does not suit the model or cluster (see :meth:`check`).
        """
        for remedy in MEMORY_REMEDIES:
            if not remedy.applies(layout):
                continue
            try:
                self.check(remedy.apply(layout))
            except (Infeasible, ConfigError):  # still too large, or refused beside offload_layers
                continue
            return remedy
        return None

    # ------------------------------------------------------------------------------------- the model
    def evaluate(self, layout: ParallelLayout) -> StepTime:
        """Validate, check memory and time one iteration of ``layout``.

        Raises
        ------
        ConfigError, Infeasible
            See :meth:`check`.
        """
        padded, mem = self.check(layout)
        step, st, parts = self._terms(layout, padded, mem, record=True)
        return self._step_record(st, padded, mem, step, parts)

    def step_seconds(self, layout: ParallelLayout) -> float:
        """Seconds per iteration only (the planner's fast path); same checks as :meth:`evaluate`."""
        padded, mem = self.check(layout)
        return self._terms(layout, padded, mem, record=False)[0]

    def _hw_flops(self, recompute: Recompute, global_batch: int) -> tuple[float, float]:
        """(hardware, model) FLOPs per iteration; torchtitan's op-level selective recompute repeats its
        matmuls (:func:`~aifabric.training.flops.op_sac_recompute_forward_flops_per_token`) per layer and
        token instead of the attention core."""
        key = (recompute, global_batch)
        got = self._flops.get(key)
        if got is None:
            mf = training_flops_per_iteration(self.model, global_batch, recompute=Recompute.NONE)
            if recompute is Recompute.SELECTIVE and self._op_sac:
                tokens = global_batch * self.model.seq_len
                per_token = self._f_op_sac + (self._f_core if self._sac_core else 0.0)
                hw = mf + tokens * self.model.n_layers * per_token
            else:
                hw = training_flops_per_iteration(self.model, global_batch, recompute=recompute)
            got = self._flops[key] = (hw, mf)  # type: ignore[assignment]
        return got  # type: ignore[return-value]

    def _elementwise_bytes(self, layout: ParallelLayout, moe: bool) -> tuple[float, float]:
        """Forward HBM bytes per token of one layer's memory-bound work on one GPU, and the scores' part.

        The kernels of ``options.elementwise`` (:func:`~aifabric.training.elementwise.layer_forward_bytes`:
        norms, residual adds, activation, rotary embedding and layout copies, MoE router and token
        permute and unpermute), and
        without flash attention the attention scores (a/t x s per token: written by QK^T, softmax read +
        write, dropout read + write + mask, read by the product with V: 13 bytes, 8 without dropout).
        """
        m = self.model
        ew = layer_forward_bytes(
            m,
            self.kernels,
            tp=layout.tp,
            sequence_parallel=layout.sequence_parallel,
            moe=moe,
            ep=layout.ep,
            etp=layout.etp,
            dispatcher=self.dispatcher,
        )
        scores = 0.0
        if not self.options.flash_attention:
            scores = (13 if m.dropout else 8) * m.n_heads / layout.tp * m.seq_len
        return ew + scores, scores

    def _fp8_cast_bytes(self, layout: ParallelLayout, moe: bool) -> tuple[float, float]:
        """Forward and backward HBM bytes per token of one layer's FP8 casts on one GPU (0 without FP8).

        Transformer Engine feeds every FP8 GEMM through ``nvte_cast_transpose``: it reads the 16-bit tensor
        (2 bytes an element), writes the FP8 cast (1) and its transpose (1, for the weight-gradient GEMM:
        Hopper's FP8 tensor cores take only the TN layout) and updates the amax in the same pass, 4 bytes
        an element; torchao's tensorwise scaling (torchtitan) reads it once more for the amax, 6
        (``TrainingFramework.fp8_cast_bytes``). Forward casts the four GEMM inputs: QKV and FC1 (h wide,
        on the sequence shard with sequence parallelism), the projection (a d_head / t) and FC2 (f / t).
        Backward casts the four output gradients: QKV ((a + 2 a_kv) d_head / t), FC1 (f / t, 2 f / t
        gated), projection and FC2 (h, on the shard with sequence parallelism). MoE layers cast FC1 and
        FC2 per routed slot (top-k + shared experts). Weight casts (once per step with Megatron-LM's
        ``is_first_microbatch``) and Transformer Engine's extra amax read of current scaling are not
        charged.

        References: NVIDIA/TransformerEngine ``transformer_engine/common/include/transformer_engine/
        transpose.h`` (``nvte_cast_transpose``: "casts the input and produces 2 results ... the cast ...
        the transposed result of the cast"), ``common/transpose/cast_transpose.cu`` (the amax in the
        same kernel); pytorch/ao ``torchao/testing/training/roofline_utils.py``
        ``get_tensor_memory_traffic_ovhd_s`` (torchao's kernels; :data:`~aifabric.training.memory.
        FRAMEWORKS`).
        """
        if not self.options.fp8:
            return 0.0, 0.0
        m, t = self.model, layout.tp
        t_sp = t if layout.sequence_parallel else 1
        width = m.n_heads * m.head_size
        f = m.expert_ffn_size if moe else m.ffn_size
        slots = (m.top_k + m.n_shared_experts) if moe else 1
        fc1_out = (2 if m.gated_mlp else 1) * f
        fwd = m.hidden_size / t_sp + width / t + slots * (m.hidden_size / t_sp + f / t)
        bwd = (width + 2 * m.kv_heads * m.head_size) / t + m.hidden_size / t_sp
        bwd += slots * (fc1_out / t + m.hidden_size / t_sp)
        cast = self.framework.fp8_cast_bytes
        return cast * fwd, cast * bwd

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
        *,
        load: float = 1.0,
    ) -> tuple[float, float]:
        """Forward and backward seconds per microbatch of a blocking ``op`` run twice in each layer's forward
        and twice in its backward, plus twice more per recomputed forward (``n_rec``); recorded as exposed.

        ``size`` is the mean buffer of a rank; the call is timed on ``load`` x ``size``, the busiest rank's
        (an all-to-all ends when its most loaded member does: :func:`ep_load_imbalance`)."""
        res = self.dim_collective(dim, op, size * load, comm)
        fwd = layers * 2 * res.time_s
        bwd = layers * 2 * res.time_s * (1 + n_rec)
        k = layers * 2 * (2 + n_rec) * n_mb
        acc.add(dim, op, size, k, res, comm, k * res.time_s)
        return fwd, bwd

    # ------------------------------------------------------------------------- the step, term by term
    def stage(self, layout: ParallelLayout, padded: ModelSpec, record: bool = False) -> StageView:
        """What every term needs: the busiest stage's layers, one microbatch's tokens on one GPU."""
        m, p = self.model, layout.pp
        logit = self._output_on_busiest(layout)
        # with embedding_chunks the output layer fills one of its stage's layer places
        layers = padded.n_layers // p - (1 if logit and self._embedding_chunks(layout) else 0)
        n_moe = min(layers, math.ceil(m.n_moe_layers * layers / m.n_layers)) if m.is_moe else 0
        return StageView(
            layout=layout,
            layers=layers,
            n_moe=n_moe,
            n_dense=layers - n_moe,
            tokens=layout.microbatch_size * m.seq_len / layout.cp,  # TP splits work, CP splits tokens
            n_mb=layout.global_batch // (layout.microbatch_size * layout.dp),
            sp=layout.sequence_parallel and layout.tp > 1,
            acc=_Acc(record),
            logit=logit,
        )

    def gemm_rates(self, layout: ParallelLayout, tokens: float) -> GemmRates:
        """FLOP/s of the weight GEMMs of one microbatch on one GPU, by layer kind and pass.

        With a measured table (:attr:`gemm_table`): the table's throughput of the products' shapes
        (:func:`~aifabric.training.gemm.layer_gemms`, :func:`~aifabric.training.gemm.backward_gemms`,
        combined by :func:`~aifabric.training.gemm.pass_flops_per_s`), read relative to the table's best
        shape and set to the profile's measured level there:

            X(S) = X_level x table(S) / table_best

        X_level is ``linear_flops_per_s`` (the sustained BF16 rate, or the measured FP8 one with
        ``options.fp8``) for the layers and ``gemm_flops_per_s`` for the logit layer, (T x h) by
        (h x V / t), always BF16. Those levels are measured on large products (8192^3, or the best shape of
        a search) where the table's best shape is the nearest it has; the table gives how much smaller
        products lose, measured on this GPU or on one of the same die (the GB200 reads the B200's table at
        its own, power-limited level). Without a table: the layers at ``linear_flops_per_s``, the logit
        layer at ``gemm_flops_per_s``.
        """
        table = self.gemm_table
        if table is None:
            lin, out = self.linear_flops_per_s, self.gemm_flops_per_s
            return GemmRates(lin, lin, lin, lin, out, out)
        key = (tokens, layout.tp, layout.ep, layout.etp)
        got = self._rates.get(key)
        if got is None:
            m, t, linear = self.model, layout.tp, self.linear_gemm_table or table
            scale = self.linear_flops_per_s / linear.best_flops_per_s  # the table gives the shape only
            logit_scale = self.gemm_flops_per_s / table.best_flops_per_s
            rates: list[float] = []
            for moe in (False, True) if m.is_moe else (False,):
                fwd, bwd = self._layer_passes(layout, tokens, moe)
                rates += [scale * pass_flops_per_s(linear, fwd), scale * pass_flops_per_s(linear, bwd)]
            if not m.is_moe:
                rates += rates
            logit = [Gemm(tokens, m.vocab_size / t, m.hidden_size)]
            rates += [logit_scale * pass_flops_per_s(table, g) for g in (logit, backward_gemms(logit))]
            got = self._rates[key] = GemmRates(*rates)
        return got

    def _layer_passes(
        self, layout: ParallelLayout, tokens: float, moe: bool
    ) -> tuple[list[Gemm], list[Gemm]]:
        """The forward and backward weight GEMMs of one layer on one GPU: :func:`layer_gemms` and
        :func:`backward_gemms`, split into Transformer Engine's userbuffer chunks with ``tp_comm_overlap``
        (:func:`userbuffer_gemms`: the four dense products, or the attention's two in an MoE layer)."""
        m, t = self.model, layout.tp
        fwd = layer_gemms(m, tokens, t, moe=moe, ep=layout.ep, etp=layout.etp)
        if self.options.tp_comm_overlap and t > 1:
            return userbuffer_gemms(fwd, t, 2 if moe else 4)
        return fwd, backward_gemms(fwd)

    def compute_term(self, st: StageView) -> ComputeTimes:
        """GEMM and memory-bound seconds of one microbatch's forward and backward on the busiest stage.

        GEMMs: each layer's weight-GEMM FLOPs ((layer - attention core) FLOPs x tokens / t) at the rate of
        its kind and pass (:meth:`gemm_rates`: by shape from the measured table, or ``peak x
        gemm_efficiency``, the FP8 peak with ``options.fp8``), backward 2 x forward FLOPs; the attention
        core at ``attention_flops_per_s`` (peak x ``attention_core_efficiency`` x ``power_limit_ratio``),
        backward 2 x forward; plus what recomputation repeats (:meth:`_recompute_extra`); the logit
        layer 2 V h per token forward, 4 V h backward. With a
        capacity factor c every expert computes its capacity, min(c, E / k) x tokens x k / E slots (at most
        all the tokens: :func:`padded_capacity_factor`), dropped tokens' slots padded (Fedus et al. 2022,
        Sec. 2.2): the routed experts' GEMMs are min(c, E / k) x 2 k P_expert per token instead of
        2 k P_expert (dropless).
        Memory-bound: :meth:`_elementwise_bytes` per token at ``hbm_bandwidth x hbm_efficiency``, and the
        cross-entropy over the logits (``logits`` V / t bytes per token forward, ``logits_backward_bytes``
        V / t backward: 8 and 16 fused over fp32 logits, 38 and 14 unfused).
        """
        m, lay = self.model, st.layout
        t, h, tokens = lay.tp, m.hidden_size, st.tokens
        rate = self.gemm_rates(lay, tokens)
        core_layer = self._f_core * tokens / t
        lin_dense = self._f_dense * tokens / t - core_layer  # weight-GEMM FLOPs of one layer
        lin_moe = self._f_moe * tokens / t - core_layer
        cf = self.capacity_factor
        if cf is not None:  # padded capacity slots are computed: (c - 1) x the routed experts' FLOPs more
            lin_moe += (cf - 1) * 2 * m.top_k * m.expert_matmul_params * tokens / t
        ein = st.n_moe * self._einsum_dispatch_flops(tokens / t)
        lin_s = st.n_dense * lin_dense / rate.dense_fwd + (st.n_moe * lin_moe + ein) / rate.moe_fwd
        lin_bwd_s = 2 * (st.n_dense * lin_dense / rate.dense_bwd + st.n_moe * lin_moe / rate.moe_bwd)
        lin_bwd_s += 1.5 * ein / rate.moe_bwd
        core_s = st.layers * core_layer / self.attention_flops_per_s
        logit_flops = 2.0 * m.vocab_size * h * tokens / t * st.logit  # last stage only; never recomputed
        logit_s, logit_bwd_s = logit_flops / rate.logit_fwd, 2 * logit_flops / rate.logit_bwd
        ew_dense, scores = self._elementwise_bytes(lay, False)
        ew_fwd = st.n_dense * ew_dense
        if st.n_moe:
            ew_fwd += st.n_moe * self._elementwise_bytes(lay, True)[0]
        extra_s, ew_extra = self._recompute_extra(st, lin_s + core_s, core_s, ew_fwd, scores, rate.dense_fwd)
        logit_bytes = self.kernels.logits * m.vocab_size / t * st.logit
        logit_bwd_bytes = self.kernels.logits_backward_bytes * m.vocab_size / t * st.logit
        cast_fwd, cast_bwd = self._stage_cast_bytes(st)
        cast_bwd += self._recompute_cast_bytes(st, cast_fwd)
        return ComputeTimes(
            gemm_fwd=lin_s + core_s + logit_s,
            gemm_bwd=lin_bwd_s + 2 * core_s + extra_s + logit_bwd_s,
            mem_fwd=(ew_fwd + cast_fwd + logit_bytes) * tokens / self.hbm_bytes_per_s,
            mem_bwd=(2 * ew_fwd + ew_extra + cast_bwd + logit_bwd_bytes) * tokens / self.hbm_bytes_per_s,
        )

    def _einsum_dispatch_flops(self, tokens: float) -> float:
        """Forward FLOPs of one MoE layer's dense dispatch and combine on ``tokens`` tokens of a rank, with
        an einsum dispatcher (:func:`~aifabric.training.flops.einsum_dispatch_forward_flops_per_token`); 0
        with the permutation dispatchers. Their backward is 1.5 x this (:meth:`compute_term`)."""
        if not self.dispatcher.einsum or self.capacity_factor is None:
            return 0.0
        return einsum_dispatch_forward_flops_per_token(self.model, self.capacity_factor) * tokens

    def _recompute_extra(
        self, st: StageView, fwd_s: float, core_s: float, ew_fwd: float, scores: float, dense_rate: float
    ) -> tuple[float, float]:
        """GEMM seconds and element-wise bytes per token that recomputation adds to a microbatch's backward.

        Full: the whole forward (``fwd_s``, ``ew_fwd``). Megatron-LM's selective: the attention core and,
        without FlashAttention, its scores. torchtitan's op-level selective (``framework``): the checkpointed
        layer is replayed with only the saved ops' outputs reused, so the recomputed matmuls
        (:func:`~aifabric.training.flops.op_sac_recompute_forward_flops_per_token`: wk, wo, w3) at the
        dense forward GEMM rate and every element-wise operator of the forward; the SDPA output is saved,
        the attention core is not repeated, except where the framework's save list lacks the kernel that
        ran (``TrainingFramework.keeps_attention`` False: torchtitan 2025-06's cuDNN attention on
        Blackwell).

        Raises
        ------
        ConfigError
            torchtitan's selective policy on a stage with MoE layers (not modelled, as in the memory check).
        """
        rec = st.layout.recompute
        if rec is Recompute.FULL:
            return fwd_s, ew_fwd
        if rec is not Recompute.SELECTIVE:
            return 0.0, 0.0
        if not self._op_sac:
            return core_s, st.layers * scores
        if st.n_moe:
            raise ConfigError(
                "framework 'torchtitan' selective recomputation is modelled for dense layers only"
            )
        gemm_s = st.n_dense * self._f_op_sac * st.tokens / st.layout.tp / dense_rate
        return gemm_s + (core_s if self._sac_core else 0.0), ew_fwd

    def _recompute_cast_bytes(self, st: StageView, cast_fwd: float) -> float:
        """FP8 cast bytes per token that recomputation repeats in the backward pass (0 without FP8).

        Full: every forward cast (``cast_fwd``). torchtitan's op-level selective: the casts that feed the
        recomputed matmuls. The policy sees each Float8 linear as ``aten.mm`` (torchao's
        ``matmul_with_hp_or_float8_args`` calls ``torch.mm`` on its Float8 tensors and the checkpoint's
        dispatch mode runs before the tensor subclass turns it into ``aten._scaled_mm``), so it recomputes
        wk, wo and w3 as in BF16 (:func:`~aifabric.training.flops.op_sac_recompute_forward_flops_per_token`);
        their inputs, the attention input, the attention output and the MLP input, are cast again. Only
        ``aten.max`` (the amax) is in the save list, and the kept w2 output needs no cast of its input: the
        forward casts less the down-projection input's (f / t per token). Megatron-LM's selective
        recomputes no GEMM and no cast.

        References: pytorch/torchtitan @e7c0cae (2025-06-11) ``torchtitan/models/llama3/
        parallelize_llama.py`` ``_save_list`` (aten.mm, the efficient and flash SDPA kernels,
        reduce_scatter_tensor, aten.max) and ``_custom_policy``; pytorch/ao @0afa4c1 (2025-06-13)
        ``torchao/float8/float8_linear.py`` ``matmul_with_hp_or_float8_args.forward`` and
        ``torchao/float8/float8_ops.py`` ``float8_mm`` (aten.mm on Float8 tensors -> torch._scaled_mm).
        """
        rec = st.layout.recompute
        if rec is Recompute.FULL or not cast_fwd:
            return cast_fwd
        if rec is not Recompute.SELECTIVE or not self._op_sac:
            return 0.0
        down_input = self.framework.fp8_cast_bytes * self.model.ffn_size / st.layout.tp
        return cast_fwd - st.n_dense * down_input

    def _stage_cast_bytes(self, st: StageView) -> tuple[float, float]:
        """Forward and backward FP8 cast bytes per token of the stage's layers (:meth:`_fp8_cast_bytes`)."""
        fwd, bwd = (st.n_dense * x for x in self._fp8_cast_bytes(st.layout, False))
        if st.n_moe:
            moe_fwd, moe_bwd = self._fp8_cast_bytes(st.layout, True)
            fwd, bwd = fwd + st.n_moe * moe_fwd, bwd + st.n_moe * moe_bwd
        return fwd, bwd

    def weight_pass_bytes(self, st: StageView, padded: ModelSpec) -> tuple[float, float]:
        """Forward and backward HBM bytes per microbatch of the memory-bound passes over the stage's
        parameters (not its tokens), on one GPU; g = ``BytesPerParam.gathered``, r = ``grads``:

        - **FP8 weight casts under ZeRO-3.** With ``fp8`` and parameters gathered in 16 bits (g >= 2: NeMo's
          and Megatron-Bridge's Megatron-FSDP recipes turn ``fp8_param_gather`` off), every gather brings a
          fresh 16-bit copy of the layer's linear weights, cast again before its FP8 GEMMs: Transformer
          Engine's cast_transpose (``TrainingFramework.fp8_weight_cast_bytes``: 4 per weight; torchao's
          tensorwise casts 8), once per forward gather and once per
          backward gather (Megatron-FSDP releases the transpose cache of quantized weights). Persistent
          weights (ZeRO 0-2) are cast once per step (``is_first_microbatch``): not charged.
        - **Copy-out** (``TrainingFramework.fsdp_copies``, FSDP2): every gathered buffer copied into the
          parameters, read and written in the gathered dtype, 2 g per parameter and gather, forward and
          backward.
        - **Gradient copy-in**: the 16-bit gradient read (2 bytes, whatever g: an FP8 gather still makes
          a 16-bit gradient) and written into the reduce buffer (r), 2 + r per parameter each backward,
          by FSDP2's chunk_cat for every parameter it reduce-scatters, and by
          Megatron without ``gradient_accumulation_fusion`` for every parameter (ZeRO 0-2 add it to the
          buffer they accumulate in: + r read; so does ZeRO-3 over a data-parallel group of one rank, where
          it shards nothing and runs ZeRO 0-2's step).

        References: NVIDIA/NeMo v2.3.0 (25.04) ``scripts/performance/utils.py`` (FSDP:
        ``gradient_accumulation_fusion = False``, ``keep_fp8_transpose_cache_when_using_custom_fsdp = False``,
        ``fp8_param_gather = False``); Megatron-LM ``docs/user-guide/features/megatron_fsdp.md`` (FSDP2
        "requires COPY operations to move parameters and gradients in and out of communication buffers",
        Megatron-FSDP assigns "sliced views of contiguous communication buffers").
        """
        lay, bpp, m, t = st.layout, self.model.bytes_per_param, self.model, st.layout.tp
        g, r = bpp.gathered_bytes, bpp.grads
        dense, expert = self.stage_params(lay, padded, st.n_dense, st.n_moe)
        groups = {dim: p for dim, p, _ in self._dp_groups(lay, dense, expert)} if lay.zero_stage >= 3 else {}
        gathered = sum(groups.values())
        linear = st.n_dense * (m.attention_params + m.dense_mlp_params) / t if "dp" in groups else 0.0
        if "dp" in groups and st.n_moe:
            linear += st.n_moe * (m.attention_params + m.n_shared_experts * m.expert_params) / t
        linear += groups.get("expert_dp", 0.0)
        fw = self.framework
        per_gather = (fw.fp8_weight_cast_bytes * linear if self.options.fp8 and g >= 2 else 0.0) + (
            2 * g * gathered if fw.fsdp_copies else 0.0
        )
        copied = gathered if fw.fsdp_copies else 0.0
        if not self.options.gradient_accumulation_fusion:
            copied = dense + expert
        accumulate = r if lay.zero_stage < 3 or lay.dp * lay.cp == 1 else 0.0
        return per_gather, per_gather + copied * (_ACT_BYTES + r + accumulate)

    def tp_term(self, st: StageView, comp: ComputeTimes) -> PassTimes:
        """TP seconds per microbatch: 2 all-reduces per layer each way on b s h / c elements (or, with
        sequence parallelism, 2 all-gathers + 2 reduce-scatters), repeated by a full recompute; on the
        critical path unless ``tp_comm_overlap`` hides them behind the layer's GEMMs
        (:func:`overlapped_s`). With the experts folded at etp = 1, an MoE layer without shared experts
        has no TP collective around its MLP; at etp = tp its MLP pair gathers the dispatched tokens, top_k
        times the layer's (:meth:`_tp_pairs`)."""
        lay, opt = st.layout, self.options
        t = lay.tp
        if t == 1:
            return PassTimes(0.0, 0.0)
        if opt.tp_comm_overlap and not st.sp:
            raise ConfigError(
                f"tp_comm_overlap needs sequence_parallel with tp={t} (Megatron-LM's userbuffer overlap "
                "splits the sequence-parallel all-gathers and reduce-scatters)"
            )
        comm = self.group(lay, "tp")
        size = st.tokens * self.model.hidden_size * _ACT_BYTES
        n_rec = _full_recomputes(lay)
        if not st.sp:
            return PassTimes(
                *self._two_per_layer(st.acc, "tp", "all_reduce", size, comm, st.layers, n_rec, st.n_mb)
            )
        pairs, routed = self._tp_pairs(st)
        fwd = self._tp_pair_s(st, comp, size, comm, pairs, opt.tp_comm_overlap)
        fwd += self._tp_pair_s(st, comp, size * self.model.top_k, comm, routed, False)
        return PassTimes(fwd, fwd * (1 + n_rec))

    def _tp_pair_s(
        self, st: StageView, comp: ComputeTimes, size: float, comm: Communicator, pairs: int, overlap: bool
    ) -> float:
        """Forward seconds per microbatch of ``pairs`` sequence-parallel all-gather + reduce-scatter pairs
        of ``size`` bytes, each hidden behind the GEMM it feeds when ``overlap`` (recorded each way)."""
        if pairs == 0:
            return 0.0
        ag, rs = self.collective("all_gather", size, comm), self.collective("reduce_scatter", size, comm)
        alone = 2 * (ag.time_s + rs.time_s)
        one = overlapped_s(alone, comp.gemm_fwd / st.layers, self.contention) if overlap else alone
        n_rec = _full_recomputes(st.layout)
        k = pairs * (2 + n_rec) * st.n_mb
        share = one / alone if alone > 0 else 0.0
        st.acc.add("tp", "all_gather", size, k, ag, comm, share * k * ag.time_s)
        st.acc.add("tp", "reduce_scatter", size, k, rs, comm, share * k * rs.time_s)
        return pairs / 2 * one

    def _tp_pairs(self, st: StageView) -> tuple[int, int]:
        """Sequence-parallel all-gather + reduce-scatter pairs per forward pass of the stage, (on the
        layer's T / t tokens, on the dispatched tokens): one around the attention and one around the MLP
        of each layer. At etp = tp the MLP pair of an MoE layer gathers what the expert all-to-all brought
        (Megatron-Core's MoEAlltoAllTokenDispatcher, core_v0.10.0 ``token_dispatcher.py``:
        ``gather_from_sequence_parallel_region`` over the TP group after the all-to-all,
        ``reduce_scatter_to_sequence_parallel_region`` before the combine), top_k x T / t tokens a rank
        under uniform routing, plain NCCL calls that Transformer Engine's userbuffers do not overlap;
        shared experts gather the layer's tokens in a pair of their own (``SharedExpertMLP``). Folded at
        etp = 1, each rank runs whole experts on the tokens it dispatched: no pair around the routed
        experts, unless shared experts need the gathered tokens. :meth:`check` refuses 1 < etp != tp."""
        lay, n_moe = st.layout, st.n_moe
        shared = 1 if self.model.n_shared_experts else 0
        if not n_moe:
            return 2 * st.layers, 0
        if lay.folded:
            return 2 * st.layers - (1 - shared) * n_moe, 0
        return 2 * st.layers - (1 - shared) * n_moe, n_moe

    def cp_term(self, st: StageView) -> PassTimes:
        """CP seconds per microbatch: all-gather of K, V forward (again when recomputed), reduce-scatter of
        dK, dV backward, each hidden behind the attention core of its layer (:func:`overlapped_s`)."""
        lay, m = st.layout, self.model
        c, t = lay.cp, lay.tp
        if c == 1:
            return PassTimes(0.0, 0.0)
        comm = self.group(lay, "cp")
        kv_bytes = 2 * st.tokens * (m.kv_heads * m.head_size / t) * _ACT_BYTES * c  # all ranks' K and V
        ag, rs = (
            self.collective("all_gather", kv_bytes, comm),
            self.collective("reduce_scatter", kv_bytes, comm),
        )
        core_fwd = self._f_core * st.tokens / t / self.attention_flops_per_s
        n_ag_bwd = 1 if lay.recompute in (Recompute.FULL, Recompute.SELECTIVE) else 0
        f = self.contention
        fwd = st.layers * overlapped_s(ag.time_s, core_fwd, f)
        bwd = st.layers * overlapped_s(rs.time_s + n_ag_bwd * ag.time_s, (2 + n_ag_bwd) * core_fwd, f)
        if st.acc.record:
            k_ag, k_rs = st.layers * (1 + n_ag_bwd) * st.n_mb, st.layers * st.n_mb
            tot = k_ag * ag.time_s + k_rs * rs.time_s
            share = (fwd + bwd) * st.n_mb / tot if tot > 0 else 0.0
            st.acc.add("cp", "all_gather", kv_bytes, k_ag, ag, comm, share * k_ag * ag.time_s)
            st.acc.add("cp", "reduce_scatter", kv_bytes, k_rs, rs, comm, share * k_rs * rs.time_s)
        return PassTimes(fwd, bwd)

    def ep_term(self, st: StageView, comp: ComputeTimes) -> PassTimes:
        """EP seconds per microbatch: dispatch + combine all-to-all per MoE layer each way (again when fully
        recomputed), a rank's tokens x c x h x w bytes, c the copies of a token the dispatcher sends
        (:meth:`MoeDispatcher.copies_per_token`: top_k, or once per destination rank), w the mean wire
        bytes per element of the layer's all-to-alls (:func:`ep_wire_bytes`, 2 in bf16), timed at the
        busiest rank's load (:func:`ep_load_imbalance`). On the critical path unless ``ep_comm_overlap``
        hides them behind the compute of the microbatch beside (:meth:`_ep_hidden`)."""
        lay, m = st.layout, self.model
        if not st.n_moe or lay.ep == 1:
            return PassTimes(0.0, 0.0)
        comm = self.group(lay, "ep")
        tok_rank = st.tokens / lay.tp if (st.sp or lay.tp == 1) else st.tokens
        imbalance = ep_load_imbalance(tok_rank * m.top_k, lay.ep, self.capacity_factor)
        copies = self.dispatcher.copies_per_token(m.n_experts, m.top_k, lay.ep)
        n_rec = _full_recomputes(lay)
        wire = ep_wire_bytes(self.options.moe_dispatch_fwd_dtype, self.options.moe_combine_bwd_dtype, n_rec)
        size = tok_rank * copies * m.hidden_size * wire
        if self.options.ep_comm_overlap:
            hide = self._ep_schedules[self.options.ep_overlap_schedule]
            return hide(st, comp, size * imbalance, comm, n_rec)
        return PassTimes(
            *self._two_per_layer(
                st.acc, "ep", "all_to_all", size, comm, st.n_moe, n_rec, st.n_mb, load=imbalance
            )
        )

    def _ep_hidden(
        self, st: StageView, comp: ComputeTimes, size: float, comm: Communicator, n_rec: int
    ) -> PassTimes:
        """Exposed EP seconds per microbatch when each MoE layer's all-to-alls (2 forward, 2 (1 + n_rec)
        backward, x seconds in all) run beside one layer's forward and backward compute of the microbatch
        paired with it (c = the stage's compute / its layers): :func:`overlapped_s` (x, c), split between
        the passes as the all-to-alls are. Every microbatch counts as paired, the p - 1 of the warm-up and
        cool-down too, which have no partner in a 1F1B schedule: optimistic by at most (p - 1) / m of the
        exposed part."""
        res = self.dim_collective("ep", "all_to_all", size, comm)
        per_pass = (2 * res.time_s, 2 * (1 + n_rec) * res.time_s)
        alone = sum(per_pass)
        exposed = overlapped_s(alone, comp.total_s / st.layers, self.contention)
        k = st.n_moe * 2 * (2 + n_rec) * st.n_mb
        st.acc.add("ep", "all_to_all", size, k, res, comm, k * res.time_s * exposed / alone)
        return PassTimes(*(st.n_moe * t * exposed / alone for t in per_pass))

    def _ep_combined_1f1b(
        self, st: StageView, comp: ComputeTimes, size: float, comm: Communicator, n_rec: int
    ) -> PassTimes:
        """Exposed EP seconds per microbatch under Megatron-Core's combined 1F1B schedule: a paired MoE layer
        shows what :func:`merged_layer_s` adds to its compute, half to each pass; the unpaired share u of
        the passes (:func:`unpaired_fraction`) shows its two all-to-alls whole. No full recomputation
        here (:meth:`check` refuses it): ``n_rec`` is 0."""
        lay = st.layout
        res = self.dim_collective("ep", "all_to_all", size, comm)
        x = res.time_s
        passes = self._moe_layer_passes(st, comp)
        paired = merged_layer_s(passes, x, self.contention) - sum(passes)
        u = unpaired_fraction(lay.pp, lay.virtual_pipeline_stages, st.n_mb)
        per_pass = u * 2 * x + (1 - u) * paired / 2
        k = st.n_moe * 4 * st.n_mb
        st.acc.add("ep", "all_to_all", size, k, res, comm, 2 * st.n_moe * st.n_mb * per_pass)
        return PassTimes(st.n_moe * per_pass, st.n_moe * per_pass)

    def _moe_layer_passes(self, st: StageView, comp: ComputeTimes) -> LayerPasses:
        """One MoE layer's compute (the stage's over its layers) split as the combined 1F1B schedule splits
        it, by FLOPs: the experts' share (routed slots at the padded capacity, shared experts) of the
        layer's forward FLOPs, the rest on the attention side; the experts' backward half input, half
        weight gradients (equal GEMMs)."""
        m, padding = self.model, self.capacity_factor or 1.0
        experts = 2 * (m.top_k * padding + m.n_shared_experts) * m.expert_matmul_params
        share = experts / (self._f_moe + 2 * m.top_k * (padding - 1) * m.expert_matmul_params)
        fwd = (comp.gemm_fwd + comp.mem_fwd) / st.layers
        bwd = (comp.gemm_bwd + comp.mem_bwd) / st.layers
        return LayerPasses(
            fwd * (1 - share), fwd * share, bwd * share / 2, bwd * share / 2, bwd * (1 - share)
        )

    def pp_term(self, st: StageView) -> PassTimes:
        """PP seconds per microbatch: b s h / c elements (/ t with scatter-gather or SP) to the next stage
        forward and back, v times (interleaving), plus the NVLink all-gather of scatter-gather without SP;
        on the critical path of the 1F1B / interleaved schedule."""
        lay, opt = st.layout, self.options
        t, v = lay.tp, lay.virtual_pipeline_stages
        if lay.pp == 1:
            return PassTimes(0.0, 0.0)
        comm = self._pp_pair(lay)
        full = st.tokens * self.model.hidden_size * _ACT_BYTES
        split = t if (st.sp or (opt.scatter_gather and t > 1)) else 1
        p2p = self.dim_collective("pp", "send_recv", full / split, comm)
        one = v * p2p.time_s
        k = 2 * v * st.n_mb
        st.acc.add("pp", "send_recv", full / split, k, p2p, comm, k * p2p.time_s)
        if opt.scatter_gather and t > 1 and not st.sp:
            tp_comm = self.group(lay, "tp")
            ag = self.collective("all_gather", full, tp_comm)
            one += v * ag.time_s
            st.acc.add("pp", "all_gather", full, k, ag, tp_comm, k * ag.time_s)
        return PassTimes(one, one)

    def offload_term(self, st: StageView, comp: ComputeTimes, mem: MemoryBreakdown) -> PassTimes:
        """CPU-offload seconds per microbatch (:mod:`aifabric.training.offload`): each of the N offloaded
        layers' activations (``mem.offloaded_activation_bytes`` / N) crosses the GPU's link to its CPU at
        ``host_bytes_per_s``, out beside the forward of its window of layers, back beside their backward;
        a layer's time is the stage's pass without the output layer (which no window covers) over its
        layers. What a copy does not hide is exposed (:func:`offload_exposed_s`). MaxText's host offload
        instead: :meth:`host_offload_term`."""
        if self.options.host_offload:
            return self.host_offload_term(st, comp)
        n = self.options.offload_layers
        if not n:
            return PassTimes(0.0, 0.0)
        bare = self.compute_term(dataclasses.replace(st, logit=False))
        logit_fwd = comp.gemm_fwd + comp.mem_fwd - bare.gemm_fwd - bare.mem_fwd
        logit_bwd = comp.gemm_bwd + comp.mem_bwd - bare.gemm_bwd - bare.mem_bwd
        layer_fwd = (comp.gemm_fwd + comp.mem_fwd - logit_fwd) / st.layers
        layer_bwd = (comp.gemm_bwd + comp.mem_bwd - logit_bwd) / st.layers
        copy_s = mem.offloaded_activation_bytes / n / self.host_bytes_per_s
        windows = offload_windows(self.model.n_layers, n)
        return PassTimes(
            offload_exposed_s(copy_s, layer_fwd, windows), offload_exposed_s(copy_s, layer_bwd, windows)
        )

    def host_offload_term(self, st: StageView, comp: ComputeTimes) -> PassTimes:
        """MaxText's host-offload seconds per microbatch (:mod:`aifabric.training.offload`): the named
        tensors of each of the stage's layers, over the microbatch's tokens on one chip (``st.tokens`` over
        ``tp``, which shards them), cross the host link out in the forward pass and back in the backward;
        XLA overlaps them with the compute of the whole pass, and what exceeds it is exposed."""
        tokens = st.tokens / st.layout.tp
        per_layer = host_offload_bytes(self.model, tuple(self.options.host_offload), tokens)
        copy_s = st.layers * per_layer / self.host_bytes_per_s
        return PassTimes(
            offload_exposed_s(copy_s, comp.gemm_fwd + comp.mem_fwd, (1,)),
            offload_exposed_s(copy_s, comp.gemm_bwd + comp.mem_bwd, (1,)),
        )

    def dp_term(self, st: StageView, comp: ComputeTimes, padded: ModelSpec) -> tuple[PassTimes, float]:
        """DP seconds: per microbatch (ZeRO-3's per-layer collectives, :meth:`_zero3_term`) and once per
        iteration (the bucketed reduction of ZeRO 0-2, :meth:`_dp_term`)."""
        lay = st.layout
        dense, expert = self.stage_params(lay, padded, st.n_dense, st.n_moe)
        fwd, bwd = comp.gemm_fwd + comp.mem_fwd, comp.gemm_bwd + comp.mem_bwd
        if lay.zero_stage >= 3:
            return PassTimes(*self._zero3_term(st.acc, lay, dense, expert, st.layers, st.n_mb, fwd, bwd)), 0.0
        return PassTimes(0.0, 0.0), self._dp_term(st.acc, lay, dense, expert, fwd, bwd)

    def optimizer_term(self, st: StageView, padded: ModelSpec) -> float:
        """Adam step seconds: 30 bytes per parameter of the GPU's shard (all of the stage under ZeRO-0) at
        HBM speed."""
        lay = st.layout
        dense, expert = self.stage_params(lay, padded, st.n_dense, st.n_moe)
        if lay.zero_stage:  # the distributed optimizer updates its shard only
            dense, expert = dense / (lay.dp * lay.cp), expert / max(1, lay.expert_dp)
        return (dense + expert) * _ADAM_BYTES_PER_PARAM / self.hbm_bytes_per_s

    @staticmethod
    def bubble_term(st: StageView, microbatch_s: float) -> float:
        """Pipeline bubble seconds: (p - 1) / v microbatch times (Narayanan et al. Sec. 2.2)."""
        return (st.layout.pp - 1) / st.layout.virtual_pipeline_stages * microbatch_s

    def _terms(
        self, layout: ParallelLayout, padded: ModelSpec, mem: MemoryBreakdown, *, record: bool
    ) -> tuple[float, StageView, dict[str, float]]:
        """The step as the sum of its terms: m microbatch times (compute and the exposed TP, CP, EP, PP,
        CPU-offload and ZeRO-3 seconds of each), the bubble, the once-per-iteration DP reduction and the
        optimizer step.

        Returns (step seconds, the stage, the breakdown by :data:`PARTS`; empty unless ``record``).
        """
        st = self.stage(layout, padded, record)
        comp = self.compute_term(st)
        w_fwd, w_bwd = (x / self.hbm_bytes_per_s for x in self.weight_pass_bytes(st, padded))
        comp = comp._replace(mem_fwd=comp.mem_fwd + w_fwd, mem_bwd=comp.mem_bwd + w_bwd)
        per_mb = {
            "tp": self.tp_term(st, comp),
            "cp": self.cp_term(st),
            "ep": self.ep_term(st, comp),
            "pp": self.pp_term(st),
            "offload": self.offload_term(st, comp, mem),
        }
        per_mb["dp"], dp_end = self.dp_term(st, comp, padded)
        t_mb = comp.total_s + sum(x.fwd_s + x.bwd_s for x in per_mb.values())
        bubble = self.bubble_term(st, t_mb)
        optimizer = self.optimizer_term(st, padded)
        step = st.n_mb * t_mb + bubble + dp_end + optimizer
        if not record:
            return step, st, {}
        n_mb = st.n_mb
        parts = {
            "compute": n_mb * (comp.gemm_fwd + comp.gemm_bwd),
            "memory-bound": n_mb * (comp.mem_fwd + comp.mem_bwd),
            **{dim: n_mb * (x.fwd_s + x.bwd_s) for dim, x in per_mb.items()},
            "bubble": bubble,
            "optimizer": optimizer,
        }
        parts["dp"] += dp_end
        return step, st, {k: parts[k] for k in PARTS}

    def _step_record(
        self, st: StageView, padded: ModelSpec, mem: MemoryBreakdown, step: float, breakdown: dict[str, float]
    ) -> StepTime:
        """The :class:`StepTime` of a timed layout: per-network totals, FLOPs, MFU, notes."""
        m, lay = self.model, st.layout
        network: dict[str, dict[str, float]] = {net: {"exposed": 0.0, "hidden": 0.0} for net in NETWORKS}
        for item in st.acc.items:
            for net, (exp, hid) in item.network_split_s().items():
                slot = network.setdefault(net, {"exposed": 0.0, "hidden": 0.0})
                slot["exposed"] += exp
                slot["hidden"] += hid
        gbs, p, v = lay.global_batch, lay.pp, lay.virtual_pipeline_stages
        hw, mf = self._hw_flops(lay.recompute, gbs)
        n = self.n_gpus
        notes = []
        if self._stages_uneven(lay, padded):
            notes.append(
                f"uneven stages: {m.n_layers} layers{_EMBEDDING_NOTE if self._embedding_chunks(lay) else ''} "
                f"over pp x v = {p} x {v}; the busiest stage holds {st.layers} (memory checked as if every "
                "stage did)"
            )
        notes.extend(self._layout_notes(lay))
        return StepTime(
            model=m.name,
            cluster=self.spec.name,
            layout=lay,
            n_gpus=n,
            step_s=step,
            breakdown_s=breakdown,
            comms=tuple(st.acc.items),
            network_s=network,
            tokens_per_s=gbs * m.seq_len / step,
            flops_per_iteration=hw,
            model_flops_per_iteration=mf,
            achieved_flops_per_gpu=hw / (n * step),
            mfu=mf / (n * step * self.peak_flops),
            hfu=hw / (n * step * self.peak_flops),
            peak_flops=self.peak_flops,
            fp8_peak_flops=self.spec.accelerator_spec.peak_fp8_flops if self.options.fp8 else None,
            n_microbatches=st.n_mb,
            bubble_fraction=(p - 1) / (v * st.n_mb),
            memory=mem,
            compute=self.compute,
            layers_per_stage=st.layers,
            notes=tuple(notes),
            seq_len=m.seq_len,
        )

    def _layout_notes(self, lay: ParallelLayout) -> list[str]:
        """What the reader must know about the model and options: approximations, conventions, and
        combinations a common framework refuses."""
        notes = [self.model.notes] if self.model.notes else []
        if self.options.fp8:
            measured = self.compute.fp8_gemm_efficiency
            rate = (
                f"{measured:.1%} of the FP8 peak (measured)"
                if measured
                else "the BF16 gemm_efficiency x the FP8 peak (no FP8 measurement: optimistic)"
            )
            notes.append(
                f"FP8: the linear GEMMs run at {rate}, Transformer Engine's casts at HBM speed; MFU is "
                f"against the BF16 peak ({self.peak_flops / 1e12:.0f} TFLOP/s), as Megatron-LM and "
                "Transformer Engine report it"
            )
        if lay.zero_stage >= 2 and lay.pp > 1:
            notes.append(
                f"ZeRO-{lay.zero_stage} with pp={lay.pp}: DeepSpeed refuses ZeRO-2/3 with pipeline "
                "parallelism (deepspeed/runtime/pipe/engine.py asserts ZeRO stage < 2); Megatron-LM's "
                "distributed optimizer is ZeRO-1; Llama 3's in-house FSDP did shard gradients with PP "
                "(Dubey et al. 2024, Sec. 3.3.2)"
            )
        return notes

    def _dp_groups(
        self, layout: ParallelLayout, dense_params: float, expert_params: float
    ) -> list[tuple[str, float, Communicator]]:
        """(dim, parameters, communicator) of the dense (dp x cp) and expert data-parallel reductions."""
        out = []
        for dim, params in (("dp", dense_params), ("expert_dp", expert_params)):
            ranks = layout.dp * layout.cp if dim == "dp" else layout.expert_dp
            if ranks > 1 and params > 0:
                out.append((dim, params, self.group(layout, "dp_cp" if dim == "dp" else "expert_dp")))
        return out

    def _dp_term(
        self,
        acc: _Acc,
        layout: ParallelLayout,
        dense_params: float,
        expert_params: float,
        fwd_compute: float,
        bwd_compute: float,
    ) -> float:
        """Exposed seconds of the data-parallel reduction under ZeRO 0-2, once per iteration.

        Gradients are reduced in buckets (:func:`bucketed_exposed_s`) behind a backward pass (all-reduce
        under ZeRO-0, reduce-scatter in ``grads`` bytes under ZeRO-1/2); ZeRO-1/2 then all-gather the
        updated ``weights`` in buckets behind the next iteration's first forward pass. ZeRO-0/1 keep a full
        gradient buffer and reduce once, after the last microbatch; ZeRO-2 keeps only its shard, so it
        reduce-scatters after every microbatch's backward (DeepSpeed stage 2, FSDP ``SHARD_GRAD_OP``), m
        times per iteration. With ``overlap_grad_reduce`` / ``overlap_param_gather`` off, each runs whole
        after its pass.
        """
        opt, bpp, f = self.options, self.model.bytes_per_param, self.contention
        bucket = opt.ddp_bucket_params or max(40_000_000, 1_000_000 * layout.dp * layout.cp)
        n_grad = layout.n_microbatches if layout.zero_stage == 2 else 1
        exposed = 0.0
        for dim, params, comm in self._dp_groups(layout, dense_params, expert_params):
            n_buckets = max(1, math.ceil(params / bucket))
            grad_op = "all_reduce" if layout.zero_stage == 0 else "reduce_scatter"
            steps = [(grad_op, params * bpp.grads, opt.overlap_grad_reduce, bwd_compute, n_grad)]
            if layout.zero_stage:
                gather = params * bpp.gathered_bytes
                steps.append(("all_gather", gather, opt.overlap_param_gather, fwd_compute, 1))
            for op, size, overlap, behind, count in steps:
                res = self.dim_collective("dp", op, size, comm)
                exp = count * (
                    bucketed_exposed_s(res.time_s, behind, n_buckets, f) if overlap else res.time_s
                )
                exposed += exp
                acc.add(dim, op, size, count, res, comm, min(exp, count * res.time_s))
        return exposed

    def _zero3_term(
        self,
        acc: _Acc,
        layout: ParallelLayout,
        dense_params: float,
        expert_params: float,
        layers: int,
        n_mb: int,
        fwd_compute: float,
        bwd_compute: float,
    ) -> tuple[float, float]:
        """Exposed forward and backward seconds per microbatch of ZeRO-3/FSDP's per-layer collectives.

        Each layer's parameters (the stage's ``gathered`` bytes, the bf16 compute copy, / layers) are
        all-gathered before its forward and again before its backward, and its gradients reduce-scattered
        after its backward, every microbatch (FSDP with one unit per transformer block; DeepSpeed stage 3).
        With prefetch
        (``options.zero3_prefetch_layers`` >= 1) layer i + 1's gather runs during layer i's compute
        (:func:`overlapped_s`):

            forward  = x_ag + (l - 1) overlapped(x_ag, c_f / l)
            backward = x_rs + (l - 1) overlapped(x_ag + x_rs, c_b / l)

        where the first gather and the last reduce-scatter have nothing to hide behind. Without prefetch
        every collective is exposed: l x_ag forward, l (x_ag + x_rs) backward. Per-layer messages are small,
        so the ring's (n - 1) latency steps grow with the data-parallel group: exposed time grows with dp.
        With ``options.zero3_no_sync`` only the last of m microbatches reduce-scatters: the backward
        returned is the mean of one such pass and m - 1 passes with x_rs = 0.
        """
        bpp = self.model.bytes_per_param
        x_ag = x_rs = 0.0
        per_layer: list[tuple[str, str, float, CollectiveResult, Communicator]] = []
        for dim, params, comm in self._dp_groups(layout, dense_params, expert_params):
            ag = self.dim_collective("dp", "all_gather", params * bpp.gathered_bytes / layers, comm)
            rs = self.dim_collective("dp", "reduce_scatter", params * bpp.grads / layers, comm)
            x_ag += ag.time_s
            x_rs += rs.time_s
            per_layer += [(dim, "all_gather", params * bpp.gathered_bytes / layers, ag, comm)]
            per_layer += [(dim, "reduce_scatter", params * bpp.grads / layers, rs, comm)]
        if not per_layer:
            return 0.0, 0.0
        fwd, bwd = self._zero3_pass_s(x_ag, x_rs, layers, fwd_compute, bwd_compute)
        n_rs = n_mb
        if self.options.zero3_no_sync and n_mb > 1:  # the last microbatch reduce-scatters, the others not
            unsynced = self._zero3_pass_s(x_ag, 0.0, layers, fwd_compute, bwd_compute)[1]
            bwd = (bwd + (n_mb - 1) * unsynced) / n_mb
            n_rs = 1
        if acc.record:
            total = layers * (2 * n_mb * x_ag + n_rs * x_rs)
            share = n_mb * (fwd + bwd) / total if total > 0 else 0.0
            for dim, op, size, res, comm in per_layer:
                k = layers * (2 * n_mb if op == "all_gather" else n_rs)
                acc.add(dim, op, size, k, res, comm, min(1.0, share) * k * res.time_s)
        return fwd, bwd

    def _zero3_pass_s(
        self, x_ag: float, x_rs: float, layers: int, fwd_compute: float, bwd_compute: float
    ) -> tuple[float, float]:
        """Exposed forward and backward seconds of one microbatch's per-layer gathers (``x_ag`` each) and
        reduce-scatters (``x_rs``, 0 on a microbatch that does not reduce), formulas of
        :meth:`_zero3_term`."""
        f = self.contention
        if self.options.zero3_prefetch_layers >= 1:
            fwd = x_ag + (layers - 1) * overlapped_s(x_ag, fwd_compute / layers, f)
            bwd = x_rs + (layers - 1) * overlapped_s(x_ag + x_rs, bwd_compute / layers, f)
            return fwd, bwd
        return layers * x_ag, layers * (x_ag + x_rs)

    def stage_params(
        self, layout: ParallelLayout, padded: ModelSpec, n_dense: int, n_moe: int
    ) -> tuple[float, float]:
        """(dense, expert) parameters of the busiest stage on one GPU, after TP/EP splitting.

        Includes the embedding (or output layer) of the first (last) stage: that stage's data-parallel
        reduction is the one that ends the iteration; with ``options.embedding_chunks`` only where the last
        stage is the busiest (:meth:`_output_on_busiest`), those stages holding one Transformer layer fewer.
        """
        m, t = self.model, layout.tp
        norms = 2 * m.norm_params
        dense = n_dense * ((m.attention_params + m.dense_mlp_params) / t + norms)
        expert = 0.0
        if n_moe:
            shared = m.n_shared_experts * m.expert_params
            dense += n_moe * ((m.attention_params + shared) / t + norms + m.router_params)
            expert = n_moe * m.n_experts * m.expert_params / (layout.etp * layout.ep)
        if self._output_on_busiest(layout):
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
