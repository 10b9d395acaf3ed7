"""``aifabric train`` (time one layout) and ``aifabric plan`` (search the layouts) of a training job.

Exit codes: 0 success; 2 bad input (unknown model or cluster, a degree that does not divide, a batch that
does not split into microbatches, a layout that does not fit in memory), one line on stderr.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from aifabric.cli.chakra import ChakraOpt, written
from aifabric.cli.common import (
    CommandClusterOpt,
    HtmlOpt,
    TraceOpt,
    check_outputs,
    console,
    devices,
    emit_json,
    err_console,
    handle_errors,
    literal,
)
from aifabric.cli.sizing import job_cluster
from aifabric.cluster.placement import PLACEMENTS, RANDOM_PLACEMENTS
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.routing import MAX_SEED, POLICIES, POLICY_OPTIONS
from aifabric.errors import ConfigError, Infeasible
from aifabric.report.html import plan_report, step_report, write_html
from aifabric.report.step_plot import plot_step_breakdown
from aifabric.report.trace import step_trace, write_trace
from aifabric.training.fabric_step import FabricStep, fabric_step
from aifabric.training.layout import DEFAULT_ORDER, ParallelLayout, Recompute, data_parallel_degree
from aifabric.training.models import ModelSpec, load_model
from aifabric.training.planner import Comparison, OptionScope, PlanResult, compare
from aifabric.training.planner import plan as plan_layouts
from aifabric.training.step import PARTS, StepModel, StepOptions, StepTime
from aifabric.units import format_bytes

__all__ = ["plan", "train"]


class RecomputeChoice(str, Enum):
    none = "none"
    selective = "selective"
    full = "full"


class FrameworkChoice(str, Enum):
    """The training frameworks of :data:`aifabric.training.memory.FRAMEWORKS`."""

    megatron = "megatron"
    torchtitan = "torchtitan"
    torchtitan_2025_06 = "torchtitan-2025-06"


class DispatcherChoice(str, Enum):
    """The MoE token dispatchers of :data:`aifabric.training.elementwise.MOE_DISPATCHERS`."""

    alltoall = "alltoall"
    alltoall_fused = "alltoall-fused"
    flex = "flex"
    einsum = "einsum"


class EpScheduleChoice(str, Enum):
    """The schedules of :data:`aifabric.training.ep_overlap.EP_OVERLAP_SCHEDULES`."""

    dualpipe = "dualpipe"
    combined_1f1b = "combined-1f1b"


class ElementwiseChoice(str, Enum):
    """The kernel sets of :data:`aifabric.training.elementwise.ELEMENTWISE_KERNELS`."""

    fused = "fused"
    llama_eager = "llama-eager"
    megatron_unfused_ce = "megatron-unfused-ce"


ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        help="Model preset (training/presets/models.yaml, e.g. gpt3-175b), a model YAML file, or a "
        "Hugging Face config.json",
    ),
]
SeqOpt = Annotated[
    int | None,
    typer.Option("--seq-len", help="Training sequence length, tokens (default: the model's)", min=1),
]
TpOverlapOpt = Annotated[
    bool,
    typer.Option(
        "--tp-comm-overlap/--no-tp-comm-overlap",
        help="Overlap the sequence-parallel TP collectives with their GEMMs (Megatron --tp-comm-overlap)",
    ),
]
EpOverlapOpt = Annotated[
    bool,
    typer.Option(
        "--ep-comm-overlap/--no-ep-comm-overlap",
        help="Hide the expert all-to-alls behind another microbatch's compute (DeepSeek-V3's DualPipe, "
        "Megatron-Core --overlap-moe-expert-parallel-comm)",
    ),
]
EpScheduleOpt = Annotated[
    EpScheduleChoice | None,
    typer.Option(
        "--ep-overlap-schedule",
        help="How --ep-comm-overlap pairs the microbatches: dualpipe (every microbatch paired, the default) "
        "or combined-1f1b (Megatron-Core --overlap-moe-expert-parallel-comm --delay-wgrad-compute, "
        "Megatron-Bridge moe_a2a_overlap: its stream schedule, warm-up and cool-down alone; needs "
        "--virtual-stages > 1 with --pp > 1, no full recompute)",
    ),
]
OffloadOpt = Annotated[
    int,
    typer.Option(
        "--offload-layers",
        help="Activations of the first N layers offloaded to the CPU's memory (Megatron-LM "
        "--cpu-offloading-num-layers: NVLink-C2C on Grace parts, PCIe otherwise; pp 1, --recompute none, "
        "N below the model's layers)",
    ),
]
PrefetchOpt = Annotated[
    int | None,
    typer.Option(
        "--zero3-prefetch",
        help="ZeRO-3/FSDP: layers gathered ahead of the one computing (0: no overlap)",
        min=0,
    ),
]
Fp8Opt = Annotated[
    bool,
    typer.Option(
        "--fp8/--bf16",
        help="Linear GEMMs at the GPU's FP8 peak (Transformer Engine); attention and logits in BF16",
    ),
]
GemmShapesOpt = Annotated[
    bool | None,
    typer.Option(
        "--gemm-shapes/--no-gemm-shapes",
        help="Time each GEMM by its shape from the GPU's measured table (default: where one exists, "
        "H100/H200; --no-gemm-shapes: one measured efficiency for every GEMM)",
    ),
]
ElementwiseOpt = Annotated[
    ElementwiseChoice,
    typer.Option(
        help="Kernels of the memory-bound work: fused (Megatron-LM, Transformer Engine, torch.compile), "
        "llama-eager (Meta's Llama code in eager PyTorch, one kernel per operator, as torchtitan without "
        "torch.compile) or megatron-unfused-ce (fused, with Megatron-Core's cross-entropy run without "
        "--cross-entropy-loss-fusion)"
    ),
]
DispatcherOpt = Annotated[
    DispatcherChoice | None,
    typer.Option(
        help="MoE token dispatcher whose permutation kernels the step charges: alltoall (Megatron-Core's, "
        "eager; the default), alltoall-fused (--moe-permute-fusion), flex (DeepEP, HybridEP) or einsum "
        "(GShard's one-hot dispatch and combine matrix products, MaxText's dropping path; needs "
        "--capacity-factor, and the only one a TPU torus takes); MoE models only"
    ),
]
FrameworkOpt = Annotated[
    FrameworkChoice,
    typer.Option(
        help="Training framework: megatron (Korthikanti's selective recomputation, fp32 logits) or "
        "torchtitan (op-level selective checkpointing: every second matmul of a layer recomputed, "
        "cross-entropy on upcast logits); torchtitan-2025-06 as torchtitan, its mid-2025 releases also "
        "recomputing the attention on Blackwell (cuDNN attention missing from the save list)"
    ),
]
EmbeddingChunksOpt = Annotated[
    bool,
    typer.Option(
        "--embedding-chunks/--no-embedding-chunks",
        help="The embedding and the output layer each take one layer's place in the pipeline (Llama 3: "
        "126 layers + 2 = 16 ranks x 8 one-layer chunks)",
    ),
]
CapacityOpt = Annotated[
    float | None,
    typer.Option(
        "--capacity-factor",
        help="MoE expert capacity factor, caps the EP load imbalance and pads every expert to its capacity; "
        "n_experts / top_k or more drops no token, every expert padded to all the tokens (default: dropless)",
    ),
]
NodesOpt = Annotated[int | None, typer.Option(help="Resize the cluster to this many nodes", min=1)]
#: The largest global batch taken, sequences per step: 2**24, over 1,000 times the largest published
#: (DeepSeek-V3 ramps to 15,360 sequences, arXiv 2412.19437 Sec. 4.2; Llama 3 405B runs 2,048 of 8,192
#: tokens, Dubey et al. 2024 Sec. 3.4). At 8,192 tokens it is 1.4e11 tokens in one step, ~1% of Llama 3's
#: whole 15.6T-token pre-training (Dubey et al. 2024): a larger batch is a typo, not a run.
MAX_GLOBAL_BATCH = 2**24


def _batch_within_bound(value: int) -> int:
    """``value`` of ``-B/--global-batch``; typer.BadParameter naming it above :data:`MAX_GLOBAL_BATCH`."""
    if value > MAX_GLOBAL_BATCH:
        raise typer.BadParameter(
            f"{value} sequences per step is above {MAX_GLOBAL_BATCH:,} (2**24), over 1,000 times the "
            "largest published global batch (DeepSeek-V3: 15,360)"
        )
    return value


BatchOpt = Annotated[
    int,
    typer.Option(
        "--global-batch",
        "-B",
        help="Global batch, sequences per step (of each job with --jobs)",
        min=1,
        callback=_batch_within_bound,
    ),
]
FlashOpt = Annotated[
    bool,
    typer.Option(
        "--flash-attention/--no-flash-attention",
        help="Attention scores stay on chip (off: Megatron 2021 fused softmax through HBM)",
    ),
]
OverlapOpt = Annotated[
    bool,
    typer.Option(
        "--overlap-grad-reduce/--no-overlap-grad-reduce",
        help="Hide the DP gradient reduction behind the last backward pass",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output")]
SliceOpt = Annotated[
    str | None,
    typer.Option(
        "--slice",
        help="TPU pods: the slice the job runs on, chips per axis (4x4x8 on v5p, 8x16 on v5e); default: "
        "the slice of --nodes hosts, else the pod (its largest slice when one slice cannot hold it)",
    ),
]

#: What the options that only GPU software runs do, for their refusal on a TPU torus (XLA).
_GPU_ONLY = {
    "--tp-comm-overlap": "Transformer Engine's userbuffers overlap TP collectives over NVLink",
    "--ep-comm-overlap": "the expert all-to-all overlap of Megatron-Core's GPU dispatchers",
    "--moe-dispatcher": "Megatron-Core's GPU token dispatchers (DeepEP, NCCL all-to-all; einsum is XLA's)",
    "--engine": "the flow and links engines route GPU traffic over NVLink switches and NICs",
}
#: Options that apply to some layouts only, each refused by ``train`` outside its scope
#: (:func:`_refuse_unused`, :func:`_refuse_ep_overlap`, :func:`_refuse_single_stage`); ``plan`` given one
#: searches only inside it.
_SCOPES = {
    "zero3_prefetch": OptionScope("--zero3-prefetch", "ZeRO-3", lambda lay: lay.zero_stage == 3),
    "embedding_chunks": OptionScope("--embedding-chunks", "pp > 1", lambda lay: lay.pp > 1),
    "tp_comm_overlap": OptionScope("--tp-comm-overlap", "tp > 1", lambda lay: lay.tp > 1),
    "ep_comm_overlap": OptionScope("--ep-comm-overlap", "ep > 1", lambda lay: lay.ep > 1),
}
PlotOpt = Annotated[
    Path | None,
    typer.Option(
        "--plot",
        help="Write a stacked-bar chart of the step-time breakdown (.png, .pdf or .svg; parent folders are "
        "created)",
    ),
]


def _options(
    flash: bool,
    overlap: bool,
    tp_overlap: bool,
    prefetch: int | None,
    capacity: float | None,
    fp8: bool,
    gemm_shapes: bool | None = None,
    *,
    elementwise: ElementwiseChoice = ElementwiseChoice.fused,
    embedding_chunks: bool = False,
    ep_overlap: bool = False,
    framework: FrameworkChoice = FrameworkChoice.megatron,
    offload_layers: int = 0,
    dispatcher: DispatcherChoice | None = None,
    ep_schedule: EpScheduleChoice | None = None,
) -> StepOptions:
    with _named_as_options():  # a kernel set of another framework's code names both options
        return StepOptions(
            flash_attention=flash,
            overlap_grad_reduce=overlap,
            tp_comm_overlap=tp_overlap,
            zero3_prefetch_layers=1 if prefetch is None else prefetch,
            capacity_factor=capacity,
            fp8=fp8,
            gemm_shapes=gemm_shapes,
            elementwise=elementwise.value,
            embedding_chunks=embedding_chunks,
            ep_comm_overlap=ep_overlap,
            ep_overlap_schedule=(ep_schedule or EpScheduleChoice.dualpipe).value,
            framework=framework.value,
            offload_layers=offload_layers,
            moe_dispatcher=(dispatcher or DispatcherChoice.alltoall).value,
        )


class EngineChoice(str, Enum):
    formula = "formula"
    flow = "flow"
    links = "links"


#: The flow/links engines' placement and routing when --placement / --routing are not given.
_FABRIC_PLACEMENT = "packed"
_FABRIC_ROUTING = "ecmp"


def _refuse_fabric_options(
    engine: EngineChoice, placement: str | None, routing: str | None, jobs: int | None, seed: int | None
) -> None:
    """Placement, routing, jobs and seed are flow/links options: the formula engine refuses them; a seed
    is refused where nothing draws on it (a routing that hashes nothing and a placement that is not
    random)."""
    options = (("placement", placement), ("routing", routing), ("jobs", jobs), ("seed", seed))
    given = [name for name, value in options if value is not None]
    if engine is EngineChoice.formula and given:
        raise ConfigError(
            f"--{given[0]}: the formula engine does not take this option (use --engine flow or links)"
        )
    route, place = routing or _FABRIC_ROUTING, placement or _FABRIC_PLACEMENT
    if seed is not None and route not in POLICY_OPTIONS["--seed"] and place not in RANDOM_PLACEMENTS:
        raise ConfigError(
            f"--seed: nothing in this step is random (--routing {route}, --placement {place}); it applies "
            f"to --routing {' or '.join(POLICY_OPTIONS['--seed'])} or --placement "
            f"{' or '.join(RANDOM_PLACEMENTS)}"
        )


def _fabric_dict(fs: FabricStep) -> dict[str, object]:
    return {
        "engine": fs.engine,
        "placement": fs.placement,
        "routing": fs.routing,
        "slowdowns": [dict(x) for x in fs.slowdowns],
        "formula_s": dict(fs.formula_s),
        "job_step_s": [st.step_s for st in fs.steps],
        "formula_step_s": fs.formula.step_s,
        "fabric_efficiency": {dim: res.efficiency for dim, res in fs.fabric.items()},
    }


def _refuse_unused(
    model: ModelSpec,
    capacity: float | None,
    prefetch: int | None,
    zero: int | None,
    *,
    tp: int | None = None,
    tp_overlap: bool = False,
) -> None:
    """Options the chosen model or layout would not use are refused, not dropped; ``zero`` and ``tp`` are
    None where the planner chooses them."""
    if capacity is not None and not model.is_moe:
        raise ConfigError(f"--capacity-factor: model {model.name!r} has no experts")
    if capacity is not None and not 1.0 <= capacity < math.inf:
        raise ConfigError(
            f"--capacity-factor: must be >= 1 and finite (omit it for dropless routing), got {capacity}"
        )
    if prefetch is not None and zero is not None and zero != 3:
        raise ConfigError(f"--zero3-prefetch: applies to ZeRO-3 only, got --zero {zero}")
    if prefetch is not None and prefetch > model.n_layers:
        raise ConfigError(
            f"--zero3-prefetch: {prefetch} layers ahead, but model {model.name!r} has {model.n_layers} layers"
        )
    if tp_overlap and tp == 1:
        raise ConfigError("--tp-comm-overlap: overlaps TP collectives, and --tp 1 has none")


def _refuse_ep_overlap(
    model: ModelSpec,
    ep: int | None,
    ep_overlap: bool,
    dispatcher: DispatcherChoice | None = None,
    schedule: EpScheduleChoice | None = None,
) -> None:
    """--ep-comm-overlap without an expert all-to-all to hide (a dense model, or --ep 1; ``ep`` is None
    where the planner chooses it), --moe-dispatcher on a dense model and --ep-overlap-schedule on a dense
    model or without --ep-comm-overlap are refused, not dropped. ``train`` and ``plan`` share this rule;
    where the planner chooses EP, its EP = 1 candidates have no expert all-to-all, and the overlap hides
    nothing there (a combined-1f1b schedule still needs interleaving with pp > 1, as for any EP)."""
    for flag, value in (("--moe-dispatcher", dispatcher), ("--ep-overlap-schedule", schedule)):
        if value is not None and not model.is_moe:
            raise ConfigError(f"{flag}: model {model.name!r} has no experts")
    if schedule is not None and not ep_overlap:
        raise ConfigError(
            f"--ep-overlap-schedule {schedule.value}: schedules --ep-comm-overlap, which is off"
        )
    if ep_overlap and not model.is_moe:
        raise ConfigError(f"--ep-comm-overlap: model {model.name!r} has no experts")
    if ep_overlap and ep == 1:
        raise ConfigError("--ep-comm-overlap: overlaps the expert all-to-alls, and --ep 1 has none")


def _say_note(note: str | None) -> None:
    """The job's note (:func:`~aifabric.cli.sizing.job_cluster`: it runs on a slice nobody asked for), on
    stderr once the step is timed: a refusal before that stays the only line printed."""
    if note is not None:
        err_console.print(f"note: {note}", markup=False, highlight=False)


def _refuse_on_tpu(
    spec: ClusterSpec, tp_overlap: bool, ep_overlap: bool, dispatcher: object, engine: EngineChoice
) -> None:
    """The options only GPU software runs (:data:`_GPU_ONLY`) are refused on a TPU torus, not dropped."""
    given = {
        "--tp-comm-overlap": tp_overlap,
        "--ep-comm-overlap": ep_overlap,
        "--moe-dispatcher": dispatcher not in (None, DispatcherChoice.einsum),
        "--engine": engine is not EngineChoice.formula,
    }
    named = [flag for flag, on in given.items() if on]
    if spec.scale_up.kind == "torus" and named:
        raise ConfigError(
            f"{named[0]}: {_GPU_ONLY[named[0]]}; a TPU torus ({spec.name}) runs XLA, so it does not apply"
        )


def _n_jobs(spec: ClusterSpec, jobs: int | None) -> int:
    """The jobs sharing the cluster (1 by default); refused where they do not divide its GPUs."""
    n_jobs = jobs or 1
    if spec.n_gpus % n_jobs:
        raise ConfigError(f"--jobs {n_jobs} does not divide the {spec.n_gpus} GPUs of the cluster")
    return n_jobs


def _refuse_single_stage(pp: int, embedding_chunks: bool) -> None:
    """``--embedding-chunks`` is refused with ``--pp 1``, a single stage it would leave as it is."""
    if embedding_chunks and pp == 1:
        raise ConfigError(
            "--embedding-chunks: places the embedding and output layer among pipeline stages, and --pp 1 "
            "has one stage"
        )


@handle_errors
def train(
    model: ModelOpt = "gpt3-175b",
    cluster: CommandClusterOpt = "dgx-h100-superpod",
    nodes: NodesOpt = None,
    slice_: SliceOpt = None,
    tp: Annotated[int, typer.Option(help="Tensor-parallel degree", min=1)] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline-parallel degree", min=1)] = 1,
    dp: Annotated[
        int | None, typer.Option(help="Data-parallel degree (default: GPUs / (tp x pp x cp))", min=1)
    ] = None,
    cp: Annotated[int, typer.Option(help="Context-parallel degree", min=1)] = 1,
    ep: Annotated[int, typer.Option(help="Expert-parallel degree (MoE models)", min=1)] = 1,
    expert_tp: Annotated[
        int | None,
        typer.Option(
            help="Experts' tensor-parallel degree (Megatron's --expert-tensor-parallel-size; default tp). 1 "
            "folds EP over TP x DP: ep x expert-tp must divide tp x cp x dp",
            min=1,
        ),
    ] = None,
    vp: Annotated[
        int, typer.Option("--virtual-stages", help="Interleaved model chunks per pipeline rank", min=1)
    ] = 1,
    microbatch: Annotated[
        int, typer.Option("--microbatch", "-b", help="Sequences per microbatch", min=1)
    ] = 1,
    global_batch: BatchOpt = 1536,
    recompute: Annotated[
        RecomputeChoice, typer.Option(help="Activation recomputation")
    ] = RecomputeChoice.selective,
    zero: Annotated[
        int, typer.Option(help="ZeRO stage (1 = Megatron's distributed optimizer)", min=0, max=3)
    ] = 1,
    sequence_parallel: Annotated[
        bool, typer.Option("--sp/--no-sp", help="Sequence parallelism (with tp > 1)")
    ] = True,
    order: Annotated[str, typer.Option(help="Rank placement, innermost first")] = DEFAULT_ORDER,
    flash_attention: FlashOpt = True,
    overlap_grad_reduce: OverlapOpt = True,
    seq_len: SeqOpt = None,
    tp_comm_overlap: TpOverlapOpt = False,
    ep_comm_overlap: EpOverlapOpt = False,
    ep_overlap_schedule: EpScheduleOpt = None,
    zero3_prefetch: PrefetchOpt = None,
    capacity_factor: CapacityOpt = None,
    fp8: Fp8Opt = False,
    gemm_shapes: GemmShapesOpt = None,
    elementwise: ElementwiseOpt = ElementwiseChoice.fused,
    embedding_chunks: EmbeddingChunksOpt = False,
    framework: FrameworkOpt = FrameworkChoice.megatron,
    offload_layers: OffloadOpt = 0,
    moe_dispatcher: DispatcherOpt = None,
    engine: Annotated[
        EngineChoice,
        typer.Option(
            help="formula: closed form; flow/links: the DP, PP and EP traffic of the step on the placed "
            "fabric"
        ),
    ] = EngineChoice.formula,
    placement: Annotated[
        str | None,
        typer.Option(help=f"Node placement of each job ({', '.join(PLACEMENTS)}); flow/links only"),
    ] = None,
    routing: Annotated[
        str | None,
        typer.Option(help=f"Scale-out load balancing ({', '.join(POLICIES)}); flow/links only"),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(help="Identical jobs sharing the cluster, each on GPUs / jobs; flow/links only", min=1),
    ] = None,
    seed: Annotated[
        int | None,
        # the routing hashes' bound: larger seeds overflow their 64-bit arithmetic
        typer.Option(help="Seed of placement and hashing; flow/links only", min=0, max=MAX_SEED),
    ] = None,
    plot: PlotOpt = None,
    trace: TraceOpt = None,
    html: HtmlOpt = None,
    chakra: ChakraOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Time one training step of a layout: compute, each network's exposed and hidden time, bubble, MFU.

    Every communication is timed by the formula engine on the cluster, with
    ranks placed on GPUs in order (--order decides which ranks form each group).
    The layout is checked with the same rules as `aifabric plan`: uneven
    pipeline stages are allowed (the busiest stage holds the extra layers).

    Comparing with Megatron-LM's paper (Narayanan et al., SC'21, Table 1): its
    teraFLOP/s per GPU count the FLOPs of full recomputation, measured with
    2021 software. Run with the paper's --tp/--pp/--microbatch/--global-batch
    on -c megatron-a100 --nodes N and with
    --recompute full --zero 0 --no-flash-attention --no-sp
    (plus --no-overlap-grad-reduce from the 39.1B row up), then read
    "TFLOP/s per GPU", not MFU.
    """
    spec, note = job_cluster(cluster, nodes=nodes, slice_=slice_)
    _refuse_on_tpu(spec, tp_comm_overlap, ep_comm_overlap, moe_dispatcher, engine)
    spec_model = load_model(model, seq_len=seq_len)
    _refuse_unused(spec_model, capacity_factor, zero3_prefetch, zero, tp=tp, tp_overlap=tp_comm_overlap)
    _refuse_ep_overlap(spec_model, ep, ep_comm_overlap, moe_dispatcher, ep_overlap_schedule)
    _refuse_single_stage(pp, embedding_chunks)
    _refuse_fabric_options(engine, placement, routing, jobs, seed)
    check_outputs(plot=plot, trace=trace, html=html, chakra=chakra)
    opts = _options(
        flash_attention,
        overlap_grad_reduce,
        tp_comm_overlap,
        zero3_prefetch,
        capacity_factor,
        fp8,
        gemm_shapes,
        elementwise=elementwise,
        embedding_chunks=embedding_chunks,
        ep_overlap=ep_comm_overlap,
        framework=framework,
        offload_layers=offload_layers,
        dispatcher=moe_dispatcher,
        ep_schedule=ep_overlap_schedule,
    )
    n_jobs = _n_jobs(spec, jobs)
    if dp is None:
        dp = data_parallel_degree(spec_model, spec.n_gpus // n_jobs, tp=tp, pp=pp, cp=cp, of="a job")
    layout = ParallelLayout(
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=ep,
        expert_tp=expert_tp,
        virtual_pipeline_stages=vp,
        microbatch_size=microbatch,
        global_batch_size=global_batch,
        recompute=Recompute.parse(recompute.value),
        zero_stage=zero,
        sequence_parallel=sequence_parallel and tp > 1,
        order=order,
    )
    st, fs = _run_step(
        spec_model, spec, opts, layout, engine, jobs=n_jobs, placement=placement, routing=routing, seed=seed
    )
    _say_note(note)
    _write_step_files(st, plot=plot, trace=trace, chakra=chakra)
    if html is not None:
        write_html(
            step_report(st, spec, model=model, cluster=cluster, nodes=nodes, layout=layout.describe()), html
        )
        err_console.print(f"report written to {html}", markup=False, highlight=False)
    seq_from = "--seq-len" if seq_len is not None else spec_model.seq_len_source or "the model's seq_len"
    if json_out:
        emit_json(_step_dict(st, seq_from, fs))
        return
    _print_step(st, seq_from, fs, noun=spec.accelerator_spec.device_noun)
    if plot is not None:
        console.print(f"plot: {plot}", markup=False, highlight=False)


def _run_step(
    model: ModelSpec,
    spec: ClusterSpec,
    opts: StepOptions,
    layout: ParallelLayout,
    engine: EngineChoice,
    *,
    jobs: int,
    placement: str | None,
    routing: str | None,
    seed: int | None,
) -> tuple[StepTime, FabricStep | None]:
    """The step of the layout, by the formula engine or on the placed fabric (then its first job's step
    and the :class:`FabricStep`); a refusal names the options, not the layout's fields."""
    with _named_as_options():
        if engine is EngineChoice.formula:
            return _evaluate(StepModel(model, spec, options=opts), layout), None
        fs = fabric_step(
            model,
            layout,
            spec,
            jobs=jobs,
            placement=placement or _FABRIC_PLACEMENT,
            routing=routing or _FABRIC_ROUTING,
            engine=engine.value,
            seed=seed or 0,
            options=opts,
        )
    return fs.steps[0], fs


#: Layout fields whose command-line option has another name, as a refusal of ``train`` names them.
_OPTION_OF = {
    "global_batch_size": "-B/--global-batch",
    "microbatch_size": "-b/--microbatch",
    "virtual_pipeline_stages": "--virtual-stages",
    "n_gpus": "the GPUs of --nodes",
    "elementwise": "--elementwise",
    "framework": "--framework",
    "offload_layers": "--offload-layers",
}
#: A quoted name (a model's, left alone) or one of the fields above, as a whole word.
_FIELD = re.compile(r"'[^']*'|\b(" + "|".join(_OPTION_OF) + r")\b")


@contextmanager
def _named_as_options() -> Iterator[None]:
    """A layout refusal (or a layout that does not fit) raised inside is re-raised, of its own type, with
    each field replaced by the option that sets it (``global_batch_size=1`` -> ``-B/--global-batch=1``);
    quoted names are left as they are.

    >>> with _named_as_options():
    ...     raise ConfigError("global_batch_size=1 is not divisible by microbatch_size x dp = 1 x 8 = 8")
    Traceback (most recent call last):
    ...
    aifabric.errors.ConfigError: -B/--global-batch=1 is not divisible by -b/--microbatch x dp = 1 x 8 = 8
    """
    try:
        yield
    except (ConfigError, Infeasible) as err:
        text = _FIELD.sub(lambda m: _OPTION_OF[m[1]] if m[1] else m[0], str(err))
        if text == str(err):
            raise
        raise type(err)(text) from err


def _write_step_files(st: StepTime, *, plot: Path | None, trace: Path | None, chakra: Path | None) -> None:
    """Write the --plot, --trace and --chakra files asked for (the trace announced on stderr)."""
    if plot is not None:
        plot_step_breakdown([st], plot, option="--plot")
    if trace is not None:
        write_trace(step_trace(st), trace)
        err_console.print(f"trace written to {trace}", markup=False, highlight=False)
    if chakra is not None:
        from aifabric.interop.chakra import export_ranks, step_nodes

        written(export_ranks(step_nodes(st), st.n_gpus, chakra))


def _step_dict(st: StepTime, seq_from: str, fs: FabricStep | None) -> dict[str, object]:
    """The ``--json`` document of a step: the step's figures, where its sequence length came from, and the
    fabric's figures when a fabric engine ran."""
    out = st.to_dict()
    out["seq_len_source"] = seq_from
    if fs is not None:
        out["fabric"] = _fabric_dict(fs)
    return out


def _evaluate(sm: StepModel, layout: ParallelLayout) -> StepTime:
    """Time the layout; a layout that does not fit names the published setting that makes it fit."""
    try:
        return sm.evaluate(layout)
    except Infeasible as err:
        remedy = sm.memory_remedy(layout)
        if remedy is None:
            raise
        raise Infeasible(f"{err}; fits with {remedy.option} ({remedy.source})") from None


def _mfu_text(st: StepTime) -> str:
    """The MFU, labelled with the peak it is against: the BF16 peak, and on an FP8 run the FP8 peak too.
    NVIDIA's Megatron Bridge performance summary (docs.nvidia.com/nemo/megatron-bridge, "Performance
    Metrics") quotes FP8 and BF16 runs alike as "Model TFLOP/sec/GPU", no peak named, so a percentage
    read from it depends on the peak chosen: on Hopper the FP8 peak is twice the BF16 (H100 datasheet,
    1,979 vs 989 TFLOPS dense), the same step's MFU half as high against it."""
    text = f"MFU {st.mfu:.1%} of the BF16 peak"
    if st.mfu_fp8 is not None:
        text += f" ({st.mfu_fp8:.1%} of the FP8 peak)"
    return text


def _print_step(st: StepTime, seq_from: str, fs: FabricStep | None = None, *, noun: str = "GPU") -> None:
    """The step's headline, its critical path, its communications, its compute and memory notes, and the
    placed fabric's summary when a fabric engine ran; each part of the cluster called ``noun``
    (:func:`~aifabric.cli.common.devices`: "chip" on a TPU)."""
    console.print(
        f"[bold]{literal(st.model)}[/] on {st.n_gpus} {noun}s of {literal(st.cluster)}: "
        f"{literal(st.layout.describe())}",
        markup=True,
    )
    console.print(f"sequence length {st.seq_len:,} tokens (from {seq_from})", markup=False, highlight=False)
    console.print(
        f"step {st.step_s:.3f} s, {st.tokens_per_s:,.0f} tokens/s, {st.achieved_flops_per_gpu / 1e12:.1f} "
        f"TFLOP/s per {noun} (hardware FLOPs), {_mfu_text(st)}, {st.n_microbatches} microbatches, bubble "
        f"{st.bubble_share:.1%} of the step"
    )
    t = Table(title="Critical path per step", show_edge=False)
    for col in ("part", "seconds", "share"):
        t.add_column(col, justify="right" if col != "part" else "left")
    for part in PARTS:
        sec = st.breakdown_s[part]
        if sec > 0:
            t.add_row(part, f"{sec:.4f}", f"{sec / st.step_s:.1%}")
    console.print(t)
    console.print(_comms_table(st, fs))
    nets = ", ".join(
        f"{k}: {v['exposed']:.3f} s exposed, {v['hidden']:.3f} s hidden" for k, v in st.network_s.items()
    )
    console.print(f"networks per step: {nets}")
    _print_compute(st, noun)
    if fs is not None:
        console.print(fs.summary(), markup=False, highlight=False)


def _comms_table(st: StepTime, fs: FabricStep | None) -> Table:
    """One row per communication of the step: size, calls, time per call, algorithm, exposed and hidden."""
    engine = (
        "formula engine" if fs is None else f"{fs.engine} engine: DP, PP and EP slowed by the placed fabric"
    )
    c = Table(title=f"Communication per step ({engine}; exposed = on the critical path)", show_edge=False)
    for col in (
        "dim",
        "op",
        "size",
        "calls",
        "per call",
        "algorithm",
        "ranks/domains",
        "network",
        "exposed s",
        "hidden s",
    ):
        c.add_column(col, justify="left" if col in ("dim", "op", "algorithm", "network") else "right")
    for item in st.comms:
        nets = "+".join(k for k, v in item.network_time_s.items() if v > 0) or "-"
        c.add_row(
            item.dim,
            item.op,
            format_bytes(item.message_bytes),
            f"{item.count:g}",
            f"{item.time_s * 1e3:.3f} ms",
            item.algorithm,
            f"{item.n_ranks}/{item.n_domains}",
            nets,
            f"{item.exposed_s:.4f}",
            f"{item.hidden_s:.4f}",
        )
    return c


def _print_compute(st: StepTime, noun: str) -> None:
    """Memory (per ``noun``), the compute profile with its source and caution, and the step's notes."""
    console.print(f"memory: {devices(st.memory.summary(), noun)}")
    console.print(
        f"{st.compute.summary()}; memory-bound work at {st.compute.hbm_efficiency:.1%} of HBM bandwidth",
        markup=False,
        highlight=False,
    )
    console.print(f"  source: {st.compute.source}", markup=False, highlight=False)
    caution = st.compute.caution()
    if caution:
        console.print(f"[yellow]caution[/]: {literal(caution)}", highlight=False, markup=True)
    for note in st.notes:
        console.print(f"note: {note}")


@handle_errors
def plan(
    model: ModelOpt = "gpt3-175b",
    cluster: CommandClusterOpt = "dgx-h100-superpod",
    nodes: NodesOpt = None,
    global_batch: BatchOpt = 1536,
    top: Annotated[int, typer.Option(help="Layouts to show", min=1)] = 5,
    tp: Annotated[int | None, typer.Option(help="Force the TP degree", min=1)] = None,
    pp: Annotated[int | None, typer.Option(help="Force the PP degree", min=1)] = None,
    dp: Annotated[int | None, typer.Option(help="Force the DP degree", min=1)] = None,
    cp: Annotated[int | None, typer.Option(help="Force the CP degree", min=1)] = None,
    ep: Annotated[int | None, typer.Option(help="Force the EP degree", min=1)] = None,
    flash_attention: FlashOpt = True,
    overlap_grad_reduce: OverlapOpt = True,
    seq_len: SeqOpt = None,
    tp_comm_overlap: TpOverlapOpt = False,
    ep_comm_overlap: EpOverlapOpt = False,
    ep_overlap_schedule: EpScheduleOpt = None,
    zero3_prefetch: PrefetchOpt = None,
    capacity_factor: CapacityOpt = None,
    fp8: Fp8Opt = False,
    gemm_shapes: GemmShapesOpt = None,
    elementwise: ElementwiseOpt = ElementwiseChoice.fused,
    embedding_chunks: EmbeddingChunksOpt = False,
    framework: FrameworkOpt = FrameworkChoice.megatron,
    moe_dispatcher: DispatcherOpt = None,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Search every feasible layout (TP, CP, PP, DP, EP, microbatch, interleaving, recompute, ZeRO) and rank
    them by throughput; show the top ones with their breakdown and why the winner wins.

    With a forced degree (--tp 16 ...), the best such layout is compared with the unconstrained winner and
    the report names the network that makes the difference.
    """
    spec, note = job_cluster(cluster, nodes=nodes)
    _refuse_on_tpu(spec, tp_comm_overlap, ep_comm_overlap, moe_dispatcher, EngineChoice.formula)
    spec_model = load_model(model, seq_len=seq_len)
    _refuse_unused(spec_model, capacity_factor, zero3_prefetch, None, tp=tp, tp_overlap=tp_comm_overlap)
    _refuse_ep_overlap(spec_model, ep, ep_comm_overlap, moe_dispatcher, ep_overlap_schedule)
    _refuse_single_stage(pp or 0, embedding_chunks)  # pp None: the planner picks pp (> 1 to place them)
    check_outputs(plot=plot, html=html)
    sm = StepModel(
        spec_model,
        spec,
        options=_options(
            flash_attention,
            overlap_grad_reduce,
            tp_comm_overlap,
            zero3_prefetch,
            capacity_factor,
            fp8,
            gemm_shapes,
            elementwise=elementwise,
            embedding_chunks=embedding_chunks,
            ep_overlap=ep_comm_overlap,
            framework=framework,
            dispatcher=moe_dispatcher,
            ep_schedule=ep_overlap_schedule,
        ),
    )
    forced = {k: v for k, v in (("tp", tp), ("pp", pp), ("dp", dp), ("cp", cp), ("ep", ep)) if v is not None}
    given = {"zero3_prefetch": zero3_prefetch is not None, "embedding_chunks": embedding_chunks}
    given |= {"tp_comm_overlap": tp_comm_overlap, "ep_comm_overlap": ep_comm_overlap}
    scopes = tuple(_SCOPES[name] for name, on in given.items() if on)
    res, comparison = _search(sm, global_batch, top, forced, scopes)
    _say_note(note)
    why = res.why(sm)
    seq_from = "--seq-len" if seq_len is not None else spec_model.seq_len_source or "the model's seq_len"
    if plot is not None:
        plot_step_breakdown(list(res.ranked), plot, option="--plot")
    if html is not None:
        inputs = dict(model=model, cluster=cluster, nodes=nodes, global_batch=global_batch, **forced)
        write_html(plan_report(res, why, spec, **inputs), html)
        err_console.print(f"report written to {html}", markup=False, highlight=False)
    if json_out:
        seq = {"seq_len": spec_model.seq_len, "seq_len_source": seq_from}
        emit_json({**_plan_dict(res, why, comparison), **seq})
        return
    noun = spec.accelerator_spec.device_noun
    _print_plan(res, noun)
    console.print(
        f"sequence length {spec_model.seq_len:,} tokens (from {seq_from})", markup=False, highlight=False
    )
    console.print(devices(why, noun))
    _print_comparison(forced, comparison)
    if plot is not None:
        console.print(f"plot: {plot}", markup=False, highlight=False)


def _search(
    sm: StepModel, global_batch: int, top: int, forced: dict[str, int], scopes: tuple[OptionScope, ...]
) -> tuple[PlanResult, Comparison | None]:
    """The ``top`` fastest layouts with the ``forced`` degrees inside the ``scopes`` of the options given,
    and, when some are forced, the comparison of the unconstrained winner with the best forced layout."""
    tp, pp, dp, cp, ep = (forced.get(k) for k in ("tp", "pp", "dp", "cp", "ep"))
    res = plan_layouts(
        sm.model,
        sm.spec,
        global_batch,
        top=top,
        step_model=sm,
        tp=tp,
        pp=pp,
        dp=dp,
        cp=cp,
        ep=ep,
        scopes=scopes,
    )
    if not forced:
        return res, None
    free = plan_layouts(sm.model, sm.spec, global_batch, top=1, step_model=sm, scopes=scopes)
    return res, compare(free.best, res.best)


def _print_comparison(forced: dict[str, int], comparison: Comparison | None) -> None:
    """The forced degrees against the unconstrained winner, and the network that makes the difference."""
    if comparison is not None:
        console.print(
            f"[bold]forced {literal(', '.join(f'{k}={v}' for k, v in forced.items()))}[/]: "
            f"{literal(comparison.text)}",
            markup=True,
        )


def _plan_dict(res: PlanResult, why: str, comparison) -> dict:
    out = {
        "model": res.model,
        "cluster": res.cluster,
        "n_gpus": res.n_gpus,
        "global_batch_size": res.global_batch_size,
        "n_evaluated": res.n_evaluated,
        "n_feasible": res.n_feasible,
        "rejected": res.rejected,
        "elapsed_s": res.elapsed_s,
        "layouts_per_s": res.layouts_per_s,
        "ranked": [st.to_dict() for st in res.ranked],
        "why": why,
    }
    if comparison is not None:
        out["comparison"] = {
            "faster": comparison.faster.layout.describe(),
            "slower": comparison.slower.layout.describe(),
            "slower_by_s": comparison.slower_by_s,
            "parts_delta_s": comparison.parts_delta_s,
            "network_delta_s": comparison.network_delta_s,
            "blamed_network": comparison.blamed_network,
            "text": comparison.text,
        }
    return out


def _print_plan(res: PlanResult, noun: str) -> None:
    """The search's headline, its refusals counted, and the fastest layouts, each part called ``noun``."""
    console.print(
        f"[bold]{literal(res.model)}[/] on {res.n_gpus} {noun}s of {literal(res.cluster)}, "
        f"global batch {res.global_batch_size}: "
        f"{res.n_evaluated} layouts tried, {res.n_feasible} feasible, in {res.elapsed_s:.2f} s "
        f"({res.layouts_per_s:,.0f} layouts/s)",
        markup=True,
    )
    if res.rejected:
        console.print(
            "rejected: "
            + "; ".join(f"{k}: {v}" for k, v in sorted(res.rejected.items(), key=lambda x: -x[1]))
        )
    t = Table(title="Fastest layouts (seconds per step on the critical path)", show_edge=False)
    for col in ("#", "layout", "step s", "tokens/s", f"TFLOP/s/{noun}", "MFU", *PARTS, "mem GB"):
        t.add_column(col, justify="left" if col == "layout" else "right")
    for i, st in enumerate(res.ranked, 1):
        t.add_row(
            str(i),
            st.layout.describe(),
            f"{st.step_s:.3f}",
            f"{st.tokens_per_s:,.0f}",
            f"{st.achieved_flops_per_gpu / 1e12:.0f}",
            f"{st.mfu:.1%}",
            *(f"{st.breakdown_s[p]:.3f}" for p in PARTS),
            f"{st.memory.total_bytes / 1e9:.0f}",
        )
    console.print(t)
