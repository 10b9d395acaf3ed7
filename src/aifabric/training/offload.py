"""CPU activation offload: the activations of the first N layers leave GPU memory for the CPU's.

Megatron-LM's ``--cpu-offloading --cpu-offloading-num-layers N`` (``TransformerConfig
.cpu_offloading_num_layers``, passed by ``megatron/core/transformer/transformer_block.py`` to Transformer
Engine's ``get_cpu_offload_context``) runs Transformer Engine's ``AsyncDoubleBufferGroupOffloadHandler``
(``transformer_engine/pytorch/cpu_offload.py`` v2.7-v2.9; from v2.10 in ``cpu_offload_v1.py``, beside a
new default scheduler): the tensors the first N layers save for backward are copied to pinned host memory
on a device-to-host stream and reloaded on a host-to-device stream, each copy overlapping the compute of a
window of layers:

- the L layers are cut into N windows (``layer_window_map``: window i ends at layer
  (L // N)(i + 1) - 1, the first L mod N windows one layer longer each), :func:`offload_windows`;
- forward: layer 0's copy starts when its forward ends; at the end of window i's last layer both streams
  wait for each other (``synchronize_on_group_commit_forward``: ``d2h_stream.wait_stream(current)``,
  ``current.wait_stream(d2h_stream)``), layer i's GPU copy is freed and layer i + 1's copy starts, so each
  copy runs beside the forward of the layers of one window and what it does not hide is exposed;
- backward, mirrored (``on_group_commit_backward``): layer i's reload starts at the backward of window
  i's last layer and is waited for at the next window's, beside the backward of one window's layers.

A copy moves one layer's saved activations of one microbatch over the GPU's link to its CPU in one
direction (out in forward, back in backward) at that link's rate (:func:`host_link_bytes_per_s`). The
copies run on the GPU's copy engines, not its SMs, so the compute beside them keeps its speed; the HBM
bandwidth they take from memory-bound kernels is not modelled (TE's documentation: "unlikely to affect
compute-bound operations like GEMMs"). Megatron-LM refuses the offload with pipeline parallelism and with
activation recomputation, and N >= L (``transformer_config.py``: "CPU offloading can be done only for
layers less than num_layers"; "no support for Pipeline parallelism with CPU offloading"; "does not work
when activation recomputation is enabled"): :func:`check_offload`. What leaves the GPU must fit in the CPU
memory behind it (the catalogue's ``host_memory`` of the host over the ``host_memory_gpus`` sharing it: a
Grace's 480 GB of LPDDR5X serves the two GPUs of a GB200 superchip, 240 GB each; a DGX H100's 2 TB its
eight, 250 GB each): :func:`check_offload_fits`.

MaxText's host offload on a TPU (``remat_policy: custom`` with tensors named ``offload``, run with
``HOST_OFFLOAD_FLAGS``, AI-Hypercomputer/maxtext ``benchmarks/xla_flags_library.py``) is another schedule:
the named tensors of every layer (:data:`MAXTEXT_SAVED`, :func:`host_offload_bytes`) go to host memory
in the forward pass and come back in the backward over the chip's link to its host, and XLA's
latency-hiding scheduler keeps up to 24 host transfers in flight
(``--xla_tpu_host_transfer_overlap_limit=24``), so the copies of a pass overlap the compute of the whole
pass rather than of one window: what they take beyond it is exposed (:func:`offload_exposed_s` with one
window).
"""

from __future__ import annotations

from collections.abc import Callable

from aifabric.catalog.loader import AcceleratorSpec, scaleup
from aifabric.errors import ConfigError, Infeasible
from aifabric.training.layout import ParallelLayout, Recompute
from aifabric.training.models import ModelSpec
from aifabric.units import format_bytes

__all__ = [
    "MAXTEXT_SAVED",
    "check_host_offload",
    "check_offload",
    "check_offload_fits",
    "host_link_bytes_per_s",
    "host_offload_bytes",
    "offload_exposed_s",
    "offload_windows",
]


def host_link_bytes_per_s(acc: AcceleratorSpec) -> float | None:
    """Bytes per second one direction of the GPU's link to its CPU's memory carries, or None without one.

    NVLink-C2C (``host_link_bidirectional``, Grace parts): half the vendor's bidirectional figure,
    900 / 2 = 450 GB/s. Otherwise the x16 link of the GPU's ``pcie`` generation: half its bidirectional
    rate times the share of the line a bulk DMA carries as data (``dma_payload_efficiency``): Gen5
    64 GB/s x 0.9002 = 57.6 GB/s.
    """
    if acc.host_link_bidirectional_bytes_per_s is not None:
        return acc.host_link_bidirectional_bytes_per_s / 2
    if acc.pcie is None:
        return None
    link = scaleup(f"pcie-{acc.pcie}")
    return link.per_gpu_bidirectional_bytes_per_s / 2 * link.dma_payload_efficiency


def check_offload(offload_layers: int, layout: ParallelLayout, n_layers: int) -> None:
    """Refuse an offload Megatron-LM refuses: N >= the model's layers, pipeline parallelism, recomputation.

    Raises
    ------
    ConfigError
        Naming ``offload_layers`` and the value.
    """
    if not offload_layers:
        return
    if offload_layers >= n_layers:
        raise ConfigError(
            f"offload_layers={offload_layers}: at most {n_layers - 1}, fewer than the model's {n_layers} "
            "layers (Megatron-LM: 'CPU offloading can be done only for layers less than num_layers')"
        )
    if layout.pp > 1:
        raise ConfigError(
            f"offload_layers={offload_layers} with pp={layout.pp}: Megatron-LM offloads activations without "
            "pipeline parallelism only"
        )
    if layout.recompute is not Recompute.NONE:
        raise ConfigError(
            f"offload_layers={offload_layers} with recompute={layout.recompute.value}: Megatron-LM offloads "
            "activations without recomputation only"
        )


def check_offload_fits(offload_layers: int, offloaded_bytes: float, acc: AcceleratorSpec) -> None:
    """Refuse an offload of more activation bytes per GPU than the CPU memory behind that GPU holds
    (``acc.host_memory_bytes``: the host's memory over the GPUs sharing it; not checked where the catalogue
    has none). The bound is the GPU's whole share: the OS, the pinned staging buffers and the rest of the
    job's host state take from it too, so an offload just under it may still not fit.

    Raises
    ------
    Infeasible
        Naming ``offload_layers``, the bytes offloaded and the host memory per GPU.
    """
    host = acc.host_memory_bytes
    if host is None or not offload_layers or offloaded_bytes <= host:
        return
    raise Infeasible(
        f"offload_layers={offload_layers}: {format_bytes(offloaded_bytes)} of activations per GPU offloaded "
        f"to the CPU is more than the {format_bytes(host)} of host memory behind each {acc.name} "
        f"({_shared(acc)}); offload fewer layers or shrink the microbatch"
    )


def _shared(acc: AcceleratorSpec) -> str:
    """How the host's memory is split: ``480 GB shared by 2 GPUs``, or the host's whole for one GPU."""
    if acc.host_memory_gpus == 1:
        return "its host's whole memory"
    return f"{format_bytes(acc.host_system_memory_bytes or 0.0)} shared by {acc.host_memory_gpus} GPUs"


def offload_windows(n_layers: int, offload_layers: int) -> tuple[int, ...]:
    """Layers whose compute each offloaded layer's copy runs beside (Transformer Engine's
    ``layer_window_map``): window i ends at w_i = (L // N)(i + 1) - 1 (+ i + 1 for the first L mod N
    windows, + L mod N after them); copy 0 runs beside layers 1 .. w_0, copy i beside w_(i-1) + 1 .. w_i.

    >>> offload_windows(80, 40)[:3], sum(offload_windows(80, 40))
    ((1, 2, 2), 79)
    >>> offload_windows(126, 95)[:3], offload_windows(126, 95)[-2:]
    ((1, 2, 2), (1, 1))
    """
    per, rest = divmod(n_layers, offload_layers)
    ends = []
    extra = 0
    for i in range(offload_layers):
        end = per * (i + 1) - 1
        if i < rest:
            extra = i + 1
        ends.append(end + extra)
    return tuple(b - a for a, b in zip([0, *ends[:-1]], ends, strict=True))


def offload_exposed_s(copy_s: float, layer_s: float, windows: tuple[int, ...]) -> float:
    """Seconds the copies add to one pass: each copy of ``copy_s`` beside its window of layers of
    ``layer_s`` each, the rest of it exposed (both streams wait for each other at the window's end)."""
    return sum(max(0.0, copy_s - k * layer_s) for k in windows)


#: MaxText's checkpoint names of a decoder layer's tensors that ``remat_policy: custom`` can offload
#: (AI-Hypercomputer/maxtext ``layers/llama2.py`` and ``layers/attentions.py``, ``checkpoint_name``), each
#: to its elements per token: the layer's input, the query, key and value projections and the output of
#: the attention's out projection.
MAXTEXT_SAVED: dict[str, Callable[[ModelSpec], int]] = {
    "decoder_layer_input": lambda m: m.hidden_size,
    "query_proj": lambda m: m.n_heads * m.head_size,
    "key_proj": lambda m: m.kv_heads * m.head_size,
    "value_proj": lambda m: m.kv_heads * m.head_size,
    "out_proj": lambda m: m.hidden_size,
}

#: Bytes per element of the offloaded activations: bf16, the recipes' ``dtype``.
_ACTIVATION_BYTES = 2


def check_host_offload(names: tuple[str, ...], offload_layers: int) -> None:
    """Refuse an unknown MaxText tensor name, or MaxText's offload beside Megatron-LM's ``offload_layers``.

    Raises
    ------
    ConfigError
        Naming ``host_offload`` and the value.
    """
    unknown = [n for n in names if n not in MAXTEXT_SAVED]
    if unknown:
        raise ConfigError(
            f"host_offload: {unknown[0]!r} is no MaxText tensor name ({', '.join(MAXTEXT_SAVED)})"
        )
    if names and offload_layers:
        raise ConfigError(
            f"host_offload={','.join(names)} with offload_layers={offload_layers}: MaxText's host offload "
            "and Megatron-LM's CPU offload are two frameworks' schedules; choose one"
        )


def host_offload_bytes(model: ModelSpec, names: tuple[str, ...], tokens: float) -> float:
    """Bytes of one layer's tensors ``names`` over ``tokens`` tokens, in bf16.

    >>> from aifabric.training.models import get_model
    >>> host_offload_bytes(get_model("llama3-8b"), tuple(MAXTEXT_SAVED), 1)  # 4096 x 3 + 1024 x 2 elements
    28672.0
    """
    return float(sum(MAXTEXT_SAVED[n](model) for n in names) * tokens * _ACTIVATION_BYTES)
