"""Training workloads: model specs, parallelism layouts, FLOPs and memory.

The front door of ``aifabric.training``:

- :mod:`~aifabric.training.models`: :class:`ModelSpec`, the presets (:func:`get_model`, :func:`list_models`),
  :func:`load_model` (a preset, a YAML file or a Hugging Face ``config.json``);
- :mod:`~aifabric.training.flops`: parameter counts (Megatron-LM Eq. 2 and general), training FLOPs (Eq. 3
  and general), training time (Eq. 4);
- :mod:`~aifabric.training.layout`: :class:`ParallelLayout` (validation, rank groups);
- :mod:`~aifabric.training.memory`: :func:`memory_breakdown`, :func:`check_fits`;
- :mod:`~aifabric.training.efficiency`: measured GEMM/HBM efficiencies per GPU (:func:`compute_profile`);
- :mod:`~aifabric.training.step`: the step time of a layout on a cluster (:func:`step_time`,
  :class:`StepModel`);
- :mod:`~aifabric.training.planner`: the layout search (:func:`plan`: enumerate, then rank) and
  :func:`compare`;
- :mod:`~aifabric.training.fabric_step`: a step's DP, EP and PP traffic on the flow/links engine with
  placement and routing (:func:`~aifabric.training.fabric_step.fabric_step`; imported on demand);
- :mod:`~aifabric.report.step_plot`: stacked bars of step-time breakdowns (matplotlib; imported on demand).

Examples
--------
>>> from aifabric.training import ParallelLayout, check_fits, get_model
>>> model = get_model("megatron-gpt-39.1b")
>>> layout = ParallelLayout(tp=8, pp=2, dp=32, microbatch_size=4, global_batch_size=1536, recompute="full")
>>> layout.validate(model, n_gpus=512)
>>> check_fits(model, layout, 80e9).summary()
'52.6 GB per GPU: weights 4.9 GB, grads 9.9 GB, optimizer 29.7 GB, activations 8.1 GB'
"""

from aifabric.training.efficiency import ComputeProfile, compute_profile, list_compute_profiles
from aifabric.training.flops import (
    active_param_count,
    attention_core_forward_flops_per_token,
    forward_flops_per_token,
    layer_forward_flops_per_token,
    logit_forward_flops_per_token,
    megatron_gpt_flops_per_iteration,
    megatron_gpt_params,
    megatron_training_time_s,
    param_count,
    training_flops_per_iteration,
    training_flops_per_token,
)
from aifabric.training.layout import DEFAULT_ORDER, DIMENSIONS, ParallelLayout, RankGroups, Recompute
from aifabric.training.memory import (
    MemoryBreakdown,
    activation_bytes_per_layer,
    check_fits,
    in_flight_layer_microbatches,
    memory_breakdown,
)
from aifabric.training.models import BytesPerParam, ModelSpec, get_model, list_models, load_model
from aifabric.training.planner import Comparison, PlanResult, compare, plan
from aifabric.training.step import CommItem, StepModel, StepOptions, StepTime, step_time

__all__ = [
    "DEFAULT_ORDER",
    "DIMENSIONS",
    "BytesPerParam",
    "CommItem",
    "Comparison",
    "ComputeProfile",
    "MemoryBreakdown",
    "ModelSpec",
    "ParallelLayout",
    "PlanResult",
    "RankGroups",
    "Recompute",
    "StepModel",
    "StepOptions",
    "StepTime",
    "activation_bytes_per_layer",
    "active_param_count",
    "attention_core_forward_flops_per_token",
    "check_fits",
    "compare",
    "compute_profile",
    "forward_flops_per_token",
    "get_model",
    "load_model",
    "in_flight_layer_microbatches",
    "layer_forward_flops_per_token",
    "list_compute_profiles",
    "list_models",
    "logit_forward_flops_per_token",
    "megatron_gpt_flops_per_iteration",
    "megatron_gpt_params",
    "megatron_training_time_s",
    "memory_breakdown",
    "param_count",
    "plan",
    "step_time",
    "training_flops_per_iteration",
    "training_flops_per_token",
]
