"""``aifabric checkpoint``: checkpoint size, write/restore time and bottleneck, async overlap, Young/Daly."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any, NamedTuple

import typer

from aifabric import catalog
from aifabric.cli.common import (
    ClusterOpt,
    HtmlOpt,
    check_outputs,
    cluster_argument,
    console,
    emit_json,
    err_console,
    handle_errors,
    literal,
    non_finite_at,
    one_cluster,
)
from aifabric.cli.sizing import sized_cluster
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError
from aifabric.storage.checkpoint import (
    CheckpointResult,
    CheckpointSize,
    check_state_fits,
    checkpoint_size,
    checkpoint_time,
)
from aifabric.storage.dataload import data_loading
from aifabric.storage.interval import (
    goodput_lost_fraction,
    series_mtbf_s,
    young_daly_interval_s,
    young_daly_outside,
)
from aifabric.storage.paths import aggregates_above_ports
from aifabric.units import format_bytes, format_time, parse_bytes, parse_time

__all__ = ["checkpoint"]

#: Longest --mtbf or --step-time read, seconds: a century (100 x 365.25 days). A job's MTBF is at most one
#: component's: Llama 3 405B's 16,384 GPUs saw 466 job interruptions in 54 days (Dubey et al. 2024, Sec.
#: 3.3.4), one per 16,384 x 54 / 466 = 1,899 GPU-days = 5.2 GPU-years; a century is 19 times that and longer
#: than any machine serves. A duration above it describes no run (1e300 h is 1e286 times the age of the
#: universe, 4.35e17 s, Planck 2018), and the Young/Daly interval it gives no time a checkpoint waits.
MAX_DURATION_S = 100 * 365.25 * 86400.0

#: Longest --gpu-mtbf or --node-mtbf read, seconds: 1e9 hours, a failure rate of 1 FIT (one failure in 1e9
#: device-hours, the unit JEDEC JESD85 states failure rates in), 114,000 years. A part's MTBF may exceed a
#: century (a ToR switch: 300,000 h; a transceiver: 1e6 h), but a whole GPU or node, many such components
#: in series, at under 1 FIT would be 1,000 times a transceiver's figure and serve 114,000 years between
#: failures: a value above it is a typo, not a part (1e30 h put the job's MTBF at 2.8e31 s).
MAX_PART_MTBF_S = 1e9 * 3600.0


class _Cap(NamedTuple):
    """The longest duration an option reads, seconds, and why no longer one describes anything."""

    seconds: float
    why: str


#: --mtbf and --step-time (a run's durations), and a part's MTBF (--gpu-mtbf, --node-mtbf).
_RUN_CAP = _Cap(
    MAX_DURATION_S,
    f"is longer than a century ({MAX_DURATION_S:.4g} s), longer than any machine serves (one GPU's MTBF in "
    "Llama 3's run: 5.2 years); no run has it",
)
_PART_CAP = _Cap(
    MAX_PART_MTBF_S,
    f"is longer than 1e9 h ({MAX_PART_MTBF_S:.4g} s, a rate of 1 FIT, one failure in 114,000 years); no "
    "GPU or node is that reliable",
)

#: The cluster when neither the CLUSTER argument nor -c/--cluster names one.
_CLUSTER = "dgx-h100-superpod"


def _n_params(model: str | None, params: float | None) -> float:
    if (model is None) == (params is None):
        raise ConfigError(
            "give exactly one of --model (a preset or model file) or --params (a count, e.g. 70e9)"
        )
    if params is not None:
        if not (math.isfinite(params) and params > 0):
            raise ConfigError(f"--params must be a finite count > 0, got {params!r}")
        return params
    from aifabric.training.flops import param_count
    from aifabric.training.models import load_model  # train's reader: presets, model YAML, config.json

    return float(param_count(load_model(str(model))))


def _signed(text: str, parse: Callable[..., float], option: str) -> float:
    """``parse(text, field=option)`` with a leading minus read as the sign (the unit parsers refuse one), so
    the caller's one rule, ``> 0``, refuses ``-1`` and ``0`` alike."""
    raw = text.strip()
    negative = raw.startswith("-")
    return parse(raw[1:] if negative else raw, field=option) * (-1.0 if negative else 1.0)


def _duration(text: str, option: str, cap: _Cap = _RUN_CAP) -> float:
    """Seconds > 0 from ``'2.8 h'``; a bare number is refused (seconds or hours?), as spec fields do.

    One rule for a duration that cannot be an interval: ``-1s`` and ``0s`` are both refused as not > 0;
    one above ``cap`` (default :data:`MAX_DURATION_S`, a century) is refused as no run's. A part's MTBF is
    capped at :data:`MAX_PART_MTBF_S` (1e9 h) instead: one part fails rarely, its job often (a ToR switch:
    300,000 h, 34 years).
    """
    try:
        bare = float(text)
    except ValueError:
        seconds = _signed(text, parse_time, option)
        if not seconds > 0:
            raise ConfigError(f"{option} must be > 0, got {text!r}") from None
        if seconds > cap.seconds:
            raise ConfigError(f"{option}: {text!r} {cap.why}") from None
        return seconds
    if not math.isfinite(bare):  # no unit makes nan or inf a duration: hint at none
        raise ConfigError(f"{option} must be a finite duration with a unit (e.g. '2.8 h'), got {text!r}")
    raise ConfigError(f"{option}: {text!r} has no unit; write it with one, e.g. '{text} h' or '{text} s'")


def _data_bytes(text: str) -> float:
    """Bytes > 0 read per training step from ``'64 MB'``; one rule, ``> 0``, for ``-1 MB``, ``0`` and
    ``nan``, each refused naming --data-per-step and the value (a step that reads nothing loads no data)."""
    value = _signed(text, parse_bytes, "--data-per-step")
    if not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"--data-per-step must be a finite size > 0 bytes per step, got {text!r}")
    return value


def _offload_bytes(text: str | None) -> float:
    """Host bytes per node holding offloaded state from ``'2 TB'`` (0 without the option); one rule, a finite
    size > 0, for ``-1 TB``, ``0`` and ``nan``, each refused naming --offload-memory and the value."""
    if text is None:
        return 0.0
    value = _signed(text, parse_bytes, "--offload-memory")
    if not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"--offload-memory must be a finite size > 0 bytes per node, got {text!r}")
    return value


def _check_bytes_per_param(weight_bytes: float, optimizer_bytes: float) -> None:
    """Finite byte figures >= 0 whose sum is finite and > 0 (a checkpoint of 0 B is no checkpoint)."""
    for option, v in (("--weight-bytes", weight_bytes), ("--optimizer-bytes", optimizer_bytes)):
        if not math.isfinite(v):
            raise ConfigError(f"{option} must be a finite number of bytes per parameter, got {v!r}")
        if v < 0:
            raise ConfigError(f"{option} must be >= 0 bytes per parameter, got {v!r}")
    total = weight_bytes + optimizer_bytes
    if not math.isfinite(total):
        raise ConfigError(
            f"--weight-bytes {weight_bytes:g} + --optimizer-bytes {optimizer_bytes:g} is not a finite number "
            "of bytes per parameter"
        )
    if not total > 0:
        raise ConfigError("--weight-bytes + --optimizer-bytes must be > 0 (nothing would be saved)")


#: The inputs each derived figure comes from, by the first part of its key (default: the size's inputs).
_INPUTS_OF = {
    "async_drain_steps": "--step-time",
    "interval": "--mtbf and --step-time",
    "goodput": "--mtbf",
    "data_loading": "--data-per-step and --step-time",
}


def _check_finite(out: dict[str, Any]) -> None:
    """ConfigError naming the inputs when a derived figure (size, a time, an interval) is not finite:
    each input was finite, their product, sum or quotient was not."""
    where = non_finite_at(out)
    if where is not None:
        size = (
            f"--params/--model x (--weight-bytes + --optimizer-bytes) = {out['params']:g} parameters x "
            f"{out['bytes_per_param']:g} B/param, over the storage's bandwidth"
        )
        inputs = next((v for k, v in _INPUTS_OF.items() if where.startswith(k)), size)
        raise ConfigError(f"checkpoint: {where} is not a finite number; it comes from {inputs}")


def _one_resize(nodes: int | None, gpus: int | None) -> None:
    """--nodes and --gpus both resize the cluster: one of them, not both."""
    if nodes is not None and gpus is not None:
        raise ConfigError(f"--nodes {nodes} and --gpus {gpus} both resize the cluster; give only one of them")


@handle_errors
def checkpoint(
    cluster_arg: Annotated[str | None, cluster_argument(_CLUSTER)] = None,
    cluster_opt: ClusterOpt = None,
    nodes: Annotated[int | None, typer.Option(help="Resize to this many nodes", min=1)] = None,
    gpus: Annotated[int | None, typer.Option(help="Resize to this many GPUs", min=1)] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model preset (e.g. llama3-70b) or model file")
    ] = None,
    params: Annotated[
        float | None, typer.Option(help="Parameter count instead of --model, e.g. 70e9")
    ] = None,
    tp: Annotated[int, typer.Option(help="Tensor-parallel degree", min=1)] = 1,
    pp: Annotated[int, typer.Option(help="Pipeline-parallel degree", min=1)] = 1,
    dp: Annotated[
        int | None, typer.Option(help="Data-parallel degree (default: all GPUs / (tp pp))", min=1)
    ] = None,
    zero: Annotated[
        int, typer.Option(help="ZeRO stage (>= 1: distributed optimizer, all GPUs write)", min=0, max=3)
    ] = 1,
    weight_bytes: Annotated[
        float, typer.Option(help="Saved weight bytes per parameter (bf16: 2), >= 0")
    ] = 2.0,
    optimizer_bytes: Annotated[
        float, typer.Option(help="Saved optimizer bytes per parameter (fp32 master + Adam m, v: 12), >= 0")
    ] = 12.0,
    storage: Annotated[
        str | None, typer.Option(help="Storage system (catalogue key), overrides the spec's")
    ] = None,
    storage_units: Annotated[int | None, typer.Option(help="Storage appliances / servers", min=1)] = None,
    storage_read: Annotated[
        str | None, typer.Option(help="File-system aggregate read, e.g. '2 TB/s'")
    ] = None,
    storage_write: Annotated[
        str | None, typer.Option(help="File-system aggregate write, e.g. '1 TB/s'")
    ] = None,
    gds: Annotated[
        bool | None,
        typer.Option(
            "--gds/--no-gds",
            help="GPUDirect Storage (else host bounce buffer); default: the storage system's (catalogue gds)",
        ),
    ] = None,
    mtbf: Annotated[str | None, typer.Option(help="Job mean time between failures, e.g. '2.8 h'")] = None,
    gpu_mtbf: Annotated[
        str | None,
        typer.Option(help="One GPU's MTBF, e.g. '50000 h': the job's MTBF is its parts' in series"),
    ] = None,
    node_mtbf: Annotated[
        str | None,
        typer.Option(help="MTBF of the rest of one node (NICs, PSUs, host), e.g. '30000 h', in series"),
    ] = None,
    parallel_load: Annotated[
        bool,
        typer.Option(
            "--parallel-load",
            help="Restore with a fully parallel load (Megatron --ckpt-fully-parallel-load): replicated "
            "state is read once per DP group and exchanged among the peers",
        ),
    ] = False,
    step_time: Annotated[
        str | None, typer.Option(help="Training step time, e.g. '5 s' (async overlap)")
    ] = None,
    data_per_step: Annotated[
        str | None, typer.Option(help="Bytes read per training step for data loading, e.g. '64 MB'")
    ] = None,
    offload_memory: Annotated[
        str | None,
        typer.Option(
            help="Host memory per node holding offloaded state (ZeRO-Offload), e.g. '2 TB': the state may "
            "exceed the GPUs' HBM by that much per node"
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    html: HtmlOpt = None,
) -> None:
    """Checkpoint size from the model and optimizer, write and restore time with the bottleneck named
    (GPU<->host PCIe, bounce buffer, front-end NICs, front-end fabric, file system per client / aggregate,
    the storage servers' NICs a cluster file names),
    asynchronous checkpointing, the Young/Daly interval for --mtbf and data loading against the front-end.

    GB = 1e9 bytes; bandwidths per direction.
    """
    cluster = one_cluster(cluster_arg, cluster_opt, _CLUSTER)
    check_outputs(html=html)
    _one_resize(nodes, gpus)
    _check_bytes_per_param(weight_bytes, optimizer_bytes)
    step_s = _duration(step_time, "--step-time") if step_time is not None else None
    mtbf_s = _duration(mtbf, "--mtbf") if mtbf is not None else None
    part_mtbfs = _part_mtbfs(mtbf, gpu_mtbf, node_mtbf)
    spec = sized_cluster(cluster, nodes=nodes, gpus=gpus)
    spec = _with_storage(spec, storage, storage_units, storage_read, storage_write)
    n = _n_params(model, params)
    _check_degrees(spec, tp, pp, dp)
    size = checkpoint_size(
        n,
        tp=tp,
        pp=pp,
        dp=dp or spec.n_gpus // (tp * pp),
        zero_stage=zero,
        weight_bytes_per_param=weight_bytes,
        optimizer_bytes_per_param=optimizer_bytes,
    )
    check_state_fits(
        spec,
        size,
        "--params" if params is not None else f"--model {model}",
        host_bytes_per_node=_offload_bytes(offload_memory),
        host_field="--offload-memory",
    )
    typed = (storage, storage_units, storage_read, storage_write) != (None, None, None, None)
    res = _timed(spec, size, _gds(spec, gds), offload_memory is not None, typed, parallel_load)
    out = _checkpoint_dict(spec, n, size, res)
    if part_mtbfs:
        _check_part_floor(part_mtbfs, {"--gpu-mtbf": gpu_mtbf, "--node-mtbf": node_mtbf}, res)
        mtbf_s = out["job_mtbf_s"] = _job_mtbf(spec, size, part_mtbfs)
    if bounds := aggregates_above_ports(spec):
        out["storage_notes"] = list(bounds)
    out.update(_per_step(spec, res, step_s, mtbf_s, data_per_step))
    _check_finite(out)
    _parallel_load_note(size, parallel_load)  # once nothing above refused: a refusal is the only line
    if html is not None:
        from aifabric.report.html import checkpoint_report, write_html

        inputs = {"cluster": cluster, "model": model, "params": params, "tp": tp, "pp": pp, "zero": zero}
        written = write_html(checkpoint_report(out, spec, **inputs), html)
        err_console.print(f"report written to {written}", markup=False, highlight=False)
    if json_out:
        emit_json(out)
        return
    _render(out)


def _gds(spec: ClusterSpec, gds: bool | None) -> bool | None:
    """--gds/--no-gds as given (None: the storage system's own); --gds on a system whose client reads and
    writes host memory (catalogue ``gds: false``) is refused naming the system."""
    if gds and spec.storage is not None and not catalog.storage(spec.storage.system).gds:
        raise ConfigError(
            f"--gds: storage system {spec.storage.system!r} has no GPUDirect Storage path (catalogue gds: "
            "false, its client reads and writes host memory); drop --gds"
        )
    return gds


def _timed(
    spec: ClusterSpec,
    size: CheckpointSize,
    gds: bool | None,
    offloaded: bool,
    typed: bool,
    parallel_load: bool = False,
) -> CheckpointResult:
    """:func:`checkpoint_time`, its storage refusals naming the options that set each field when a storage
    option was typed."""
    try:
        return checkpoint_time(spec, size, gds=gds, offloaded=offloaded, parallel_load=parallel_load)
    except ConfigError as e:
        if not typed:
            raise
        raise ConfigError(_storage_in_options(str(e))) from None


def _part_mtbfs(mtbf: str | None, gpu_mtbf: str | None, node_mtbf: str | None) -> dict[str, float]:
    """Seconds of each part's MTBF given (--gpu-mtbf, --node-mtbf), each at most :data:`MAX_PART_MTBF_S`
    (a part fails rarely, its job often, so not a century's cap); --mtbf with a part's MTBF is refused: the
    job's MTBF is one or the other."""
    given = {o: t for o, t in (("--gpu-mtbf", gpu_mtbf), ("--node-mtbf", node_mtbf)) if t is not None}
    if mtbf is not None and given:
        raise ConfigError(
            f"--mtbf {mtbf!r} is the job's MTBF and {' and '.join(given)} "
            f"{'derive' if len(given) > 1 else 'derives'} it from its parts; give one or the other"
        )
    return {o: _duration(t, o, _PART_CAP) for o, t in given.items()}


def _check_part_floor(parts: dict[str, float], texts: dict[str, str | None], res: CheckpointResult) -> None:
    """Refuse a part's MTBF shorter than the quickest save of this checkpoint (the synchronous write or
    the asynchronous copy to host memory, whichever is shorter): such a part fails, on average, before one
    checkpoint is taken, so every save is lost and no Young/Daly interval exists (Daly 2006's first-order
    interval sqrt(2 C M) holds only for C much below M). The floor is this run's own cost, not a constant:
    "1e-300 h" put the interval at 1.3e-140 ns."""
    floor_s = min(s for s in (res.write.seconds, res.async_copy_s) if s > 0)
    for option, seconds in parts.items():
        if seconds < floor_s:
            raise ConfigError(
                f"{option}: {texts[option]!r} ({seconds:.3g} s) is shorter than this checkpoint's quickest "
                f"save ({floor_s:.3g} s): the part fails before one checkpoint is taken; no GPU or node "
                "fails that often"
            )


def _job_mtbf(spec: ClusterSpec, size: CheckpointSize, parts: dict[str, float]) -> float:
    """The job's MTBF, seconds: its GPUs (--gpu-mtbf each, the job's TP x PP x DP GPUs) and nodes
    (--node-mtbf each) in series (:func:`aifabric.storage.interval.series_mtbf_s`)."""
    counts = {"--gpu-mtbf": size.job_gpus, "--node-mtbf": math.ceil(size.job_gpus / spec.gpus_per_node)}
    job_s = series_mtbf_s((counts[o], seconds) for o, seconds in parts.items())
    if not job_s > 0:
        given = " and ".join(f"{o} {seconds:.3g} s" for o, seconds in parts.items())
        raise ConfigError(f"{given}: the job's MTBF rounds to 0 s; no part fails that often")
    return job_s


def _parallel_load_note(size: CheckpointSize, parallel_load: bool) -> None:
    """Say on stderr that --parallel-load changes nothing where no state is replicated (DP 1, ZeRO-3)."""
    if parallel_load and not size.replicated_bytes_per_gpu:
        err_console.print(
            f"note: --parallel-load changes nothing here: no state is replicated across the DP {size.dp} "
            "data-parallel ranks, so every GPU reads only its own, as in the plain load",
            markup=False,
            highlight=False,
        )


def _check_degrees(spec: ClusterSpec, tp: int, pp: int, dp: int | None) -> None:
    """ConfigError when tp x pp (x dp, if given) does not divide the cluster's GPUs."""
    if spec.n_gpus % (tp * pp):
        raise ConfigError(f"--tp {tp} x --pp {pp} does not divide the cluster's {spec.n_gpus} GPUs")
    if dp is not None and spec.n_gpus % (tp * pp * dp):
        raise ConfigError(
            f"--dp {dp}: --tp {tp} x --pp {pp} x --dp {dp} = {tp * pp * dp} does not divide the cluster's "
            f"{spec.n_gpus} GPUs"
        )


def _checkpoint_dict(
    spec: ClusterSpec, n: float, size: CheckpointSize, res: CheckpointResult
) -> dict[str, Any]:
    """Size, writers, write, restore and asynchronous copy/drain of the checkpoint (bytes, seconds)."""
    return {
        "cluster": spec.name,
        "gpus": spec.n_gpus,
        "params": n,
        "bytes_per_param": size.bytes_per_param,
        "checkpoint_bytes": size.total_bytes,
        "writer_gpus": size.writer_gpus,
        "writer_nodes": res.writer_nodes,
        "write": res.write.__dict__,
        "restore": res.restore.__dict__,
        "restore_exchange_s": res.restore_exchange_s,
        "async_copy_s": res.async_copy_s,
        "async_drain": res.async_drain.__dict__,
    }


def _per_step(
    spec: ClusterSpec,
    res: CheckpointResult,
    step_s: float | None,
    mtbf_s: float | None,
    data_per_step: str | None,
) -> dict[str, Any]:
    """Data loading, the async drain's overlap in steps and the Young/Daly intervals. Steps are those data
    loading allows: a step whose data takes longer to read than the step asked for lasts that long."""
    out: dict[str, Any] = {}
    if data_per_step is not None:
        if step_s is None:
            raise ConfigError("--data-per-step needs --step-time")
        d = data_loading(spec, _data_bytes(data_per_step), step_s)
        out["data_loading"] = {
            **d.__dict__,
            "share": d.share,
            "keeps_up": d.keeps_up,
            "loaded_step_s": d.loaded_step_s,
        }
        step_s = d.loaded_step_s
    if step_s is not None:
        out["async_drain_steps"] = res.drain_steps(step_s)
    if mtbf_s is not None:
        out.update(_intervals(res, mtbf_s, step_s))
    return out


def _intervals(res: CheckpointResult, mtbf_s: float, step_s: float | None) -> dict[str, Any]:
    """Young/Daly interval, whether it holds and the goodput lost, for synchronous and asynchronous saves.

    The cost is the write (sync) or the copy to host (async); an async interval is at least the drain and
    one step. Without an interval (tau = 0) the loss is restore / MTBF.
    """
    out: dict[str, Any] = {}
    for mode, cost, floor in (
        ("sync", res.write.seconds, 0.0),
        (
            "async",
            res.async_copy_s,
            max(res.async_drain.seconds, step_s or 0.0),
        ),  # drain done, whole steps
    ):
        tau = max(young_daly_interval_s(cost, mtbf_s), floor)
        out[f"interval_{mode}_s"] = tau
        # Young/Daly is first order in cost/MTBF and interval/MTBF: the reason it does not hold, if any
        why = young_daly_outside(tau, cost, mtbf_s, res.restore_s)
        out[f"young_daly_holds_{mode}"] = why is None
        out[f"young_daly_outside_{mode}"] = why
        out[f"goodput_lost_{mode}"] = (
            goodput_lost_fraction(tau, cost, mtbf_s, res.restore_s) if tau > 0 else res.restore_s / mtbf_s
        )
    return out


def _with_storage(
    spec: ClusterSpec, system: str | None, units: int | None, read: str | None, write: str | None
) -> ClusterSpec:
    """``spec`` with its storage changed by the command-line options (unchanged when none is given).

    What the file says stays unless an option overrides it (servers, their NICs, aggregates); --storage
    naming another system starts from that system alone, as the file's servers are the other system's.
    """
    given = {"units": units, "aggregate_read": read, "aggregate_write": write}
    given = {k: v for k, v in given.items() if v is not None}
    if system is None and not given:
        return spec
    try:
        if spec.storage is not None and system in (None, spec.storage.system):
            return spec.with_changes(**{f"storage.{k}": v for k, v in given.items()})
        return spec.with_changes(storage={"system": system or "ddn-ai400x2-turbo", **given})
    except ConfigError as e:
        raise ConfigError(_storage_in_options(str(e))) from None


#: The storage fields the command line sets, by the option that sets each.
_STORAGE_OPTIONS = {
    "storage.units": "--storage-units",
    "storage.aggregate_read": "--storage-read",
    "storage.aggregate_write": "--storage-write",
}


def _storage_in_options(message: str) -> str:
    """A storage refusal in the words of the command line too: the option that sets each field it names.

    >>> _storage_in_options("storage.units: no per-unit figure; give storage.aggregate_write")
    'storage.units: no per-unit figure; give storage.aggregate_write (on the command line: storage.units is \
--storage-units, storage.aggregate_write is --storage-write)'
    """
    named = [f"{field} is {option}" for field, option in _STORAGE_OPTIONS.items() if field in message]
    return f"{message} (on the command line: {', '.join(named)})" if named else message


def _render(out: dict[str, Any]) -> None:
    console.print(
        f"[bold]{literal(out['cluster'])}[/]: {out['gpus']} GPUs; "
        f"checkpoint {format_bytes(out['checkpoint_bytes'])} "
        f"= {out['params'] / 1e9:.4g} B params x {out['bytes_per_param']:g} B/param, written by "
        f"{out['writer_gpus']} GPUs on {out['writer_nodes']} nodes",
        markup=True,
    )
    for label, key in (("write (sync)", "write"), ("restore", "restore"), ("async drain", "async_drain")):
        t = out[key]
        console.print(
            f"  {label:13s} {format_time(t['seconds']):>10s}  "
            f"{format_bytes(t['bytes_per_node'])} per node at "
            f"{t['rate_bytes_per_s'] / 1e9:.3g} GB/s; bottleneck: {t['bottleneck']}"
        )
    if out["restore_exchange_s"]:
        exchange = format_time(out["restore_exchange_s"])
        console.print(f"  then the exchange among peers (state read on other nodes): {exchange}")
    console.print(f"  async copy GPU->host (training stops): {format_time(out['async_copy_s'])}")
    if "job_mtbf_s" in out:
        console.print(f"  job MTBF (its GPUs and nodes in series): {format_time(out['job_mtbf_s'])}")
    for note in out.get("storage_notes", ()):
        err_console.print(f"warning: {note}", markup=False, highlight=False)
    if "async_drain_steps" in out:
        slow = out.get("data_loading", {}).get("keeps_up") is False
        of = f" of {format_time(out['data_loading']['loaded_step_s'])}, waiting on data" if slow else ""
        console.print(f"  the drain overlaps {out['async_drain_steps']:.2f} training steps{of}")
    if "interval_sync_s" in out:
        for mode in ("sync", "async"):
            console.print(
                f"  Young/Daly interval ({mode}): every {format_time(out[f'interval_{mode}_s'])}, "
                f"goodput lost {out[f'goodput_lost_{mode}'] * 100:.2f}% (checkpoints + rework + restore)"
            )
            if not out[f"young_daly_holds_{mode}"]:
                err_console.print(
                    f"warning: {mode}: {out[f'young_daly_outside_{mode}']}: Young/Daly assumes checkpoint, "
                    "interval and restart << MTBF, so this interval and goodput are outside the model"
                )
    if "data_loading" in out:
        d = out["data_loading"]
        console.print(
            f"  data loading: {d['need_bytes_per_s'] / 1e9:.3g} GB/s needed of "
            f"{d['have_bytes_per_s'] / 1e9:.4g} GB/s "
            f"({d['share'] * 100:.2f}%; limit: {d['bottleneck']})"
        )
        if not d["keeps_up"]:
            err_console.print(
                f"warning: data loading needs {d['share']:.3g}x what the {d['bottleneck']} delivers: reading "
                f"a step's data takes {format_time(d['loaded_step_s'])}, longer than --step-time "
                f"{format_time(d['step_time_s'])}, so every step waits on data"
            )
