"""``aifabric scale-across``: an all-reduce over sites kilometres apart and the DP step cost of distance."""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated

import typer

from aifabric.cli.common import (
    CatalogOption,
    ClusterOpt,
    cluster_argument,
    console,
    emit_json,
    handle_errors,
    literal,
    one_cluster,
    options_as_typed,
    use_catalog,
)
from aifabric.cli.sizing import sized_cluster
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.scale_across import MAX_INNER_STEPS, cross_site_all_reduce, local_sgd_sync
from aifabric.errors import ConfigError
from aifabric.units import format_time, one_size

__all__ = ["scale_across"]

#: The cluster when neither the CLUSTER argument nor -c/--cluster names one.
_CLUSTER = "dgx-h100-superpod"


class Dtype(str, Enum):
    """Element types a gradient or pseudo-gradient is sent in."""

    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    fp4 = "fp4"


#: Bytes per element of each type. fp4 packs two 4-bit elements a byte: Streaming DiLoCo sends its outer
#: gradients as 4-bit floats (E3M0) "without loss of performance" (Douillard et al. 2025, arXiv:2501.18512).
_DTYPE_BYTES = {Dtype.fp32: 4, Dtype.bf16: 2, Dtype.fp16: 2, Dtype.fp8: 1, Dtype.int8: 1, Dtype.fp4: 0.5}


@handle_errors
def scale_across(
    cluster_arg: Annotated[str | None, cluster_argument(_CLUSTER)] = None,
    cluster_opt: ClusterOpt = None,
    nodes: Annotated[int | None, typer.Option(help="Resize to this many nodes (all sites)", min=1)] = None,
    sites: Annotated[
        int | None, typer.Option(help="Sites the GPUs are split over (default 2)", min=2)
    ] = None,
    distance: Annotated[
        str | None,
        typer.Option(help="Fibre distance between sites: '50 km', '800 m' or a number of km (default 50 km)"),
    ] = None,
    dci: Annotated[
        str | None, typer.Option(help="DCI bandwidth per site, one direction (default '100 Tb/s')")
    ] = None,
    transport: Annotated[
        str | None, typer.Option(help="DCI transport (catalogue dci; default spectrum-xgs)")
    ] = None,
    message: Annotated[str, typer.Option(help="All-reduce size per GPU, e.g. '140 GB' (gradients)")] = "1 GB",
    inner_steps: Annotated[
        int | None,
        typer.Option(
            help="Local SGD (DiLoCo): sites sync every this many steps instead of every step", min=1
        ),
    ] = None,
    sync_dtype: Annotated[
        Dtype | None, typer.Option(help="Type local SGD sends the pseudo-gradient in (default: --grad-dtype)")
    ] = None,
    grad_dtype: Annotated[
        Dtype | None, typer.Option(help="Type of the gradient --message holds (default fp32)")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    catalog_files: CatalogOption = None,
) -> None:
    """Hierarchical all-reduce across sites (in-site reduce-scatter, cross-site ring over the DCI with
    5 us/km of fibre, in-site all-gather) and the extra step time of putting DP across the sites; with
    --inner-steps, local SGD's outer all-reduce instead (DiLoCo: the sites sync their pseudo-gradient, in
    --sync-dtype, every that many steps)."""
    cluster = one_cluster(cluster_arg, cluster_opt, _CLUSTER)
    use_catalog(catalog_files)
    spec = sized_cluster(cluster, nodes=nodes)
    st = spec.sites
    distance_km = _distance_km(distance) if distance is not None else None
    given = {"count": sites, "distance_km": distance_km, "dci_bandwidth": dci, "transport": transport}
    base = (
        {
            "count": st.count,
            "distance_km": st.distance_km,
            "dci_bandwidth": f"{st.dci_bandwidth_bytes_per_s!r} B/s",
            "transport": st.transport,
        }
        if st is not None
        else {"count": 2, "distance_km": 50.0, "dci_bandwidth": "100 Tb/s", "transport": "spectrum-xgs"}
    )
    base.update({k: v for k, v in given.items() if v is not None})
    # the count is --sites, a name unlike the field's; the other fields keep theirs (sites.distance_km)
    with options_as_typed({} if sites is None else {"sites.count": "--sites"}):
        spec = spec.with_changes(sites=base)
    st = spec.sites
    assert st is not None
    message_bytes = one_size(message, "--message")  # > 0 and at most 1 TiB, as every per-rank --size
    ratio = _sync_ratio(inner_steps, sync_dtype, grad_dtype)
    r = cross_site_all_reduce(spec, message_bytes)
    out = {**r.__dict__, "total_s": r.total_s, "dp_step_cost_s": r.dp_step_cost_s}
    if inner_steps is not None:
        out["local_sgd"] = _local_sgd(spec, message_bytes, inner_steps, ratio)
    if json_out:
        emit_json(out)
        return
    console.print(
        f"{spec.n_gpus} GPUs over {st.count} sites {st.distance_km:g} km apart "
        f"({literal(st.transport)}); DCI "
        f"{st.dci_bandwidth_bytes_per_s * 8 / 1e12:g} Tb/s per site = "
        f"{r.dci_oversubscription:.3g}:1 against the site's NICs ({_subscription(r.dci_oversubscription)})"
    )
    console.print(
        f"all-reduce {literal(message)}: {format_time(r.total_s)} = in-site {format_time(r.in_site_s)} "
        "+ cross-site "
        f"{format_time(r.cross_s)} (latency {format_time(r.cross_latency_s)} of fibre + "
        f"{format_time(r.cross_network_latency_s)} of NIC and switch steps, "
        f"{r.cross_bytes_per_s / 1e9:.3g} GB/s per GPU across)"
    )
    console.print(
        f"in one site it would take {format_time(r.single_site_s)} ({_SCHEDULES[r.single_site_schedule]}): "
        f"DP across the sites costs {format_time(r.dp_step_cost_s)} per step"
    )
    if inner_steps is not None:
        sync = out["local_sgd"]
        console.print(
            f"local SGD, sync every {inner_steps} steps at {ratio:g} B per gradient byte: outer all-reduce "
            f"{format_time(sync['outer_all_reduce_s'])} ({format_time(sync['outer_single_site_s'])} in one "
            f"site): the sites add {format_time(sync['step_cost_s'])} per step on DP's basis; "
            f"1/{1 / sync['cross_site_bytes_ratio']:.4g} of DP's bytes over the DCI"
        )


def _sync_ratio(inner_steps: int | None, sync_dtype: Dtype | None, grad_dtype: Dtype | None) -> float:
    """Bytes local SGD sends per byte of gradient; --sync-dtype and --grad-dtype need --inner-steps (only
    local SGD reads them), and the pseudo-gradient no wider type than the gradient (fp32 by default). A
    gradient in fp4 is refused: no published run all-reduces one (Streaming DiLoCo's 4-bit E3M0 is its
    outer pseudo-gradient, arXiv:2501.18512)."""
    if grad_dtype is Dtype.fp4:
        raise ConfigError(
            "--grad-dtype: fp4 has no published gradient all-reduce to price (fp4 is a pseudo-gradient type, "
            "--sync-dtype fp4: Streaming DiLoCo); give fp32, bf16, fp16, fp8 or int8"
        )
    for option, given in (("--sync-dtype", sync_dtype), ("--grad-dtype", grad_dtype)):
        if given is not None and inner_steps is None:
            raise ConfigError(f"{option}: only local SGD reads it; give --inner-steps too")
    if sync_dtype is None:
        return 1.0
    grad_dtype = grad_dtype or Dtype.fp32
    ratio = _DTYPE_BYTES[sync_dtype] / _DTYPE_BYTES[grad_dtype]
    if ratio > 1:
        raise ConfigError(
            f"--sync-dtype: {sync_dtype.value} is wider than the gradient's {grad_dtype.value} (--grad-dtype)"
        )
    return ratio


def _local_sgd(spec: ClusterSpec, message_bytes: float, inner_steps: int, ratio: float) -> dict[str, float]:
    """The JSON fields of local SGD's outer all-reduce (``local_sgd_sync``); ConfigError naming
    --inner-steps above ``MAX_INNER_STEPS`` (its docstring: ten whole pre-training runs between syncs)."""
    if inner_steps > MAX_INNER_STEPS:
        raise ConfigError(
            f"--inner-steps {inner_steps}: more than {MAX_INNER_STEPS:,} steps between syncs, ten whole "
            "pre-training runs (Llama 3 405B: about 1.15e6 steps; DiLoCo syncs every 500): the sites would "
            "never sync"
        )
    sync = local_sgd_sync(spec, message_bytes, inner_steps=inner_steps, sync_bytes_ratio=ratio)
    return {
        "inner_steps": inner_steps,
        "sync_bytes_ratio": ratio,
        "outer_all_reduce_s": sync.outer.total_s,
        "outer_single_site_s": sync.outer.single_site_s,
        "step_cost_s": sync.step_cost_s,
        "cross_site_bytes_ratio": sync.cross_site_bytes_ratio,
    }


#: How the one site all-reduces (``CrossSiteAllReduce.single_site_schedule``).
_SCHEDULES = {
    "nccl": "NCCL's all-reduce over all its GPUs",
    "grouped": "the same site-by-site stages on its own fabric, faster than NCCL's over all its GPUs",
}


def _subscription(ratio: float) -> str:
    """NICs : DCI in words: above 1 the DCI is the narrower side (oversubscribed), below 1 it has room."""
    if ratio > 1:
        return "oversubscribed"
    return "not oversubscribed: the DCI carries more than the NICs send" if ratio < 1 else "1:1"


_DISTANCE = re.compile(r"\s*(?P<num>[-+0-9.eE]+|inf|nan)\s*(?P<unit>km|m)?\s*", re.IGNORECASE)
_METRES_PER = {"km": 1e3, "m": 1.0}


def _distance_km(text: str) -> float:
    """``'50 km'``, ``'800 m'`` or ``'50'`` (km, as the help says) -> km; range checked by the spec."""
    m = _DISTANCE.fullmatch(text)
    try:
        value = float(m["num"]) if m else None
    except ValueError:
        value = None
    if m is None or value is None:
        raise ConfigError(f"--distance: cannot read {text!r}; give e.g. '50 km' or '800 m'")
    return value * _METRES_PER[(m["unit"] or "km").lower()] / 1e3
