"""How much of the expert all-to-alls Megatron-Core's combined 1F1B schedule leaves exposed.

With ``--overlap-moe-expert-parallel-comm --delay-wgrad-compute`` (Megatron-Bridge's ``moe_a2a_overlap``,
``scripts/performance/utils/helpers.py`` ``set_moe_a2a_overlap_overrides``, v0.2.0) Megatron-Core runs the
forward pass of one microbatch and the backward pass of another layer by layer, one on a compute stream and
the all-to-alls of both on a communication stream (``megatron/core/models/common/
model_chunk_schedule_plan.py``, ``TransformerLayerSchedulePlan.run``):

    comm stream: combine_bwd       | dispatch_fwd -> dispatch_bwd          | combine_fwd
    comp stream: pre_dispatch_fwd  | mlp_bwd -> mlp_bwd_dw -> mlp_fwd     | pre_dispatch_bwd

Each operation waits for the one of its own microbatch before it: the backward's expert MLP for its combine
all-to-all, its dispatch all-to-all for the expert MLP's input gradient, its attention for that dispatch; the
forward's dispatch for its attention, its expert MLP for the dispatch, its combine for the expert MLP.
:func:`merged_layer_s` runs that graph on the two streams. The first forwards of a step (the pipeline's
warm-up, plus the one extra microbatch the schedule runs ahead, ``megatron/core/pipeline_parallel/
schedules.py`` ``get_pp_rank_microbatches``) and the last backwards (cool-down) have no partner and run
their all-to-alls alone (:func:`unpaired_fraction`).
"""

from __future__ import annotations

from typing import NamedTuple

from aifabric.errors import ConfigError

__all__ = [
    "EP_OVERLAP_SCHEDULES",
    "LayerPasses",
    "check_combined_1f1b",
    "merged_layer_s",
    "unpaired_fraction",
]

#: The schedules that hide the expert all-to-alls (``StepOptions.ep_overlap_schedule``).
EP_OVERLAP_SCHEDULES: dict[str, str] = {
    "dualpipe": "DeepSeek-V3's DualPipe (arXiv:2412.19437 Sec. 3.2.1): every microbatch paired, each MoE "
    "layer's all-to-alls beside one whole layer of compute",
    "combined-1f1b": "Megatron-Core's --overlap-moe-expert-parallel-comm --delay-wgrad-compute: the "
    "stream schedule of merged_layer_s, the warm-up and cool-down passes alone (unpaired_fraction)",
}


class LayerPasses(NamedTuple):
    """Seconds of one MoE layer's compute, split where the combined 1F1B schedule splits it.

    ``attn_fwd``: everything before the dispatch (attention, router, permutation); ``mlp_fwd``: the experts;
    ``mlp_dgrad`` and ``mlp_wgrad``: the experts' backward, input and weight gradients (the weight
    gradient delayed, ``--delay-wgrad-compute``); ``attn_bwd``: the backward of the attention side."""

    attn_fwd: float
    mlp_fwd: float
    mlp_dgrad: float
    mlp_wgrad: float
    attn_bwd: float


_A2A_OPS = ("combine_bwd", "dispatch_fwd", "dispatch_bwd", "combine_fwd")
#: Megatron-Core's issue order of one merged layer (``TransformerLayerSchedulePlan.run``): (name, stream,
#: the operations it waits for besides the one before it on its stream). "a2a" is the communication stream.
_MERGED_LAYER: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("combine_bwd", "a2a", ()),
    ("attn_fwd", "comp", ()),
    ("mlp_dgrad", "comp", ("combine_bwd",)),
    ("dispatch_fwd", "a2a", ("attn_fwd",)),
    ("mlp_wgrad", "comp", ()),
    ("dispatch_bwd", "a2a", ("mlp_dgrad",)),
    ("mlp_fwd", "comp", ("dispatch_fwd",)),
    ("combine_fwd", "a2a", ("mlp_fwd",)),
    ("attn_bwd", "comp", ("dispatch_bwd",)),
)


def merged_layer_s(passes: LayerPasses, a2a_s: float, contention: float) -> float:
    """Seconds of one layer's forward (one microbatch) merged with its backward (another).

    The operations of ``_MERGED_LAYER`` start in issue order on their stream, each when its stream is
    free and what it waits for has finished; the layer ends with the last of them (the next layer's
    attention waits for this one's forward combine, its backward combine for this one's attention
    backward, so layers do not overlap each other). While an all-to-all runs it holds a share f of the SMs
    (``contention``): the compute beside it advances at 1 - f of its speed, as in
    :func:`~aifabric.training.step.overlapped_s` (one all-to-all of x beside compute of c: max(x, c + f x)).

    >>> merged_layer_s(LayerPasses(1.0, 1.0, 1.0, 1.0, 1.0), 0.5, 0.0)  # every all-to-all hidden
    5.0
    >>> merged_layer_s(LayerPasses(1.0, 1.0, 1.0, 1.0, 1.0), 2.0, 0.0)  # 3 s of the 8 s exposed
    8.0
    >>> merged_layer_s(LayerPasses(1.0, 1.0, 1.0, 1.0, 1.0), 0.5, 0.2)  # hidden, 4 x 0.5 s at 1 - f
    5.4
    """
    if a2a_s < 0 or min(passes) < 0 or not 0 <= contention < 1:
        raise ValueError(
            f"passes {passes}, a2a_s {a2a_s}, contention {contention}: negative or f outside [0, 1)"
        )
    left = {**passes._asdict(), **dict.fromkeys(_A2A_OPS, a2a_s)}
    queues = {s: [n for n, stream, _ in _MERGED_LAYER if stream == s] for s in ("a2a", "comp")}
    waits = {n: w for n, _, w in _MERGED_LAYER}
    done: set[str] = set()
    now = 0.0
    while queues["a2a"] or queues["comp"]:
        running = {s: q[0] for s, q in queues.items() if q and all(w in done for w in waits[q[0]])}
        rate = {"a2a": 1.0, "comp": 1.0 - contention if "a2a" in running else 1.0}
        step = min(left[n] / rate[s] for s, n in running.items())
        now += step
        for s, n in running.items():
            left[n] -= step * rate[s]
            if left[n] <= 1e-12 * (1.0 + now):
                done.add(n)
                queues[s].pop(0)
    return round(now, 12)


def unpaired_fraction(pp: int, vp: int, microbatches: int) -> float:
    """Share of the first pipeline stage's forward (and backward) model-chunk passes that run alone.

    Interleaved 1F1B (``get_pp_rank_microbatches``, rank 0): 2 (p - 1) + (v - 1) x p warm-up forwards
    (``microbatch_group_size_per_vp_stage`` = p, Megatron-Core's default), one more with the all-to-all
    overlap, of m v; as many backwards in the cool-down. Without pipelining
    (``combined_1f1b_schedule_for_no_pipelining``) the first forward and the last backward: 1 of m.

    >>> unpaired_fraction(8, 4, 128)  # Qwen3-235B on 256 H100: 2 x 7 + 3 x 8 + 1 = 39 of 512
    0.076171875
    >>> unpaired_fraction(1, 1, 16)
    0.0625
    """
    if min(pp, vp, microbatches) < 1:
        raise ValueError(f"pp, vp and microbatches must be >= 1, got {pp}, {vp}, {microbatches}")
    warmup = 1 if pp == 1 else 2 * (pp - 1) + (vp - 1) * pp + 1
    return min(1.0, warmup / (microbatches * vp))


def check_combined_1f1b(pp: int, vp: int, full_recompute: bool) -> None:
    """Refuse what Megatron-Core refuses with ``overlap_moe_expert_parallel_comm``
    (``megatron/core/transformer/transformer_config.py``): pp > 1 without a virtual pipeline, full
    recomputation.

    Raises
    ------
    ConfigError
        Naming the field and its value.
    """
    if pp > 1 and vp == 1:
        raise ConfigError(
            f"ep_overlap_schedule='combined-1f1b' with pp={pp} needs virtual_pipeline_stages > 1 "
            "(Megatron-Core)"
        )
    if full_recompute:
        raise ConfigError(
            "ep_overlap_schedule='combined-1f1b' runs without full recomputation (Megatron-Core)"
        )
