"""``aifabric collective``: time one collective, or a sweep of sizes as an nccl-tests-like table."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from aifabric.cli.common import console, emit_json, handle_errors
from aifabric.collectives.api import collective_time, resolve_cluster, resolve_communicator
from aifabric.engines.routing import POLICIES
from aifabric.units import format_bytes, one_size

__all__ = ["collective"]


class Engine(str, Enum):
    formula = "formula"
    links = "links"
    flow = "flow"


MAX_SWEEP_ROWS = 64


def _sizes(size: str | None, min_size: str | None, max_size: str | None, factor: int) -> list[float]:
    if size is not None:
        if min_size is not None or max_size is not None:
            raise ValueError("--size: give one size, or a sweep with --min/--max, not both")
        return [one_size(size, "--size")]
    lo = one_size(min_size or "8 B", "--min")
    hi = one_size(max_size or "16 GiB", "--max")
    if hi < lo:
        raise ValueError(f"--max: {max_size!r} is below --min {min_size!r}")
    if factor < 2:
        raise ValueError(f"--factor: must be >= 2, got {factor}")
    out, s = [], lo
    while s <= hi * (1 + 1e-9):
        out.append(s)
        s *= factor
        if len(out) > MAX_SWEEP_ROWS:
            raise ValueError(
                f"--max: the sweep from {min_size} to {max_size} by x{factor} has more than "
                f"{MAX_SWEEP_ROWS} sizes"
            )
    return out


@handle_errors
def collective(
    op: Annotated[
        str,
        typer.Argument(
            help="all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, reduce, send_recv"
        ),
    ] = "all_reduce",
    cluster: Annotated[
        str, typer.Option("--cluster", "-c", help="Preset name or cluster YAML file")
    ] = "dgx-h100-superpod",
    nodes: Annotated[int | None, typer.Option(help="Resize the cluster to this many nodes", min=1)] = None,
    ranks: Annotated[
        int | None, typer.Option(help="Ranks (first GPUs in order); default all GPUs", min=1)
    ] = None,
    size: Annotated[
        str | None,
        typer.Option("--size", "-s", help="One message size, e.g. '1 GB', '4GiB' (nccl-tests convention)"),
    ] = None,
    min_size: Annotated[
        str | None, typer.Option("--min", "-b", help="Sweep start size (default 8 B)")
    ] = None,
    max_size: Annotated[
        str | None, typer.Option("--max", "-e", help="Sweep end size (default 16 GiB)")
    ] = None,
    factor: Annotated[int, typer.Option("--factor", "-f", help="Sweep multiplication factor")] = 2,
    algo: Annotated[
        str | None,
        typer.Option(
            "--algo",
            help="Force an algorithm (ring, tree, nvls, nvls_tree, hierarchical, flat_ring, direct, chain, "
            "p2p)",
        ),
    ] = None,
    proto: Annotated[str | None, typer.Option("--proto", help="Force a protocol (LL, LL128, Simple)")] = None,
    no_nvls: Annotated[
        bool, typer.Option("--no-nvls", help="Disable NVLink SHARP (NCCL_NVLS_ENABLE=0)")
    ] = False,
    convention: Annotated[
        str,
        typer.Option(
            help="per_direction (default) or bidirectional (vendor's NVLink figure as a per-GPU rate)"
        ),
    ] = "per_direction",
    efficiency: Annotated[
        str, typer.Option(help="nccl (effective bandwidths, latencies) or line_rate (ideal)")
    ] = "nccl",
    engine: Annotated[Engine, typer.Option(help="formula, links or flow")] = Engine.formula,
    routing: Annotated[
        str | None, typer.Option(help="links/flow engines only: ecmp, pinning, qp, spray, adaptive")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of random choices (ECMP hashes)")] = 0,
    calibration: Annotated[
        Path | None, typer.Option(help="Calibration profile YAML from 'aifabric calibrate'")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Time a collective on a cluster: one size (--size) or an nccl-tests-like sweep (--min/--max/--factor).

    Bandwidths are GB/s = 1e9 bytes/s. algbw = size / time and busbw = algbw x factor, as nccl-tests
    defines them; both are per rank and per direction under the default convention.
    """
    spec = resolve_cluster(cluster, nodes=nodes)
    comm = resolve_communicator(spec, ranks)
    sizes = _sizes(size, min_size, max_size, factor)
    opts: dict = {}
    if routing is not None and routing not in POLICIES:
        raise ValueError(f"--routing: unknown routing policy {routing!r}; known: {', '.join(POLICIES)}")
    if engine is Engine.formula and routing is not None:
        raise ValueError(
            "--routing: the formula engine assumes ideal routing; use --engine links or flow to choose one"
        )
    if engine is Engine.formula:
        from aifabric.discovery.calibrate import load_calibration

        opts = dict(
            algorithm=algo,
            protocol=proto,
            exclude=("nvls", "nvls_tree") if no_nvls else (),
            convention=convention,
            efficiency=efficiency,
            calibration=load_calibration(calibration) if calibration else None,
        )
    else:
        opts = dict(routing=routing or "spray", seed=seed, algorithm=algo)
    results = [collective_time(op, s, spec, ranks=comm, engine=engine.value, **opts) for s in sizes]
    cal = opts.get("calibration")
    if json_out:
        emit_json([r.to_dict() for r in results])
        return
    r0 = results[0]
    conv, eff = r0.convention.split("/")
    conv_text = (
        "bandwidths per direction"
        if conv == "per_direction"
        else "vendor scale-up figures used as per-GPU rates (both directions added)"
    )
    console.print(
        f"[bold]{r0.op}[/] on {spec.name}: {comm.n_ranks} ranks, {comm.n_domains} scale-up domain(s) of up "
        f"to {comm.ranks_per_domain}; engine {r0.engine}; {conv_text}; "
        + (
            "ICI links at the documented rate, one hop latency per ring step"
            if spec.scale_up.kind == "torus"
            else ("NCCL-effective bandwidths and latencies" if eff == "nccl" else "line rates, no latency")
        )
    )
    if cal is not None:
        console.print(
            f"calibration {cal.name!r} applied: scale-up x{cal.intra_scale:.3f}, scale-out "
            f"x{cal.inter_scale:.3f}, latency x{cal.latency_scale:.3f}, "
            f"+{cal.extra_inter_latency_s * 1e6:.2f} us per network hop"
        )
    if len(results) == 1:
        r = r0
        console.print(
            f"size {format_bytes(r.message_bytes)}: time {r.time_s * 1e6:.2f} us, algbw "
            f"{r.algbw_bytes_per_s / 1e9:.2f} GB/s, busbw {r.busbw_bytes_per_s / 1e9:.2f} GB/s "
            f"({r.algorithm}/{r.protocol})"
        )
        shares = (
            ", ".join(f"{k} {v * 1e6:.1f} us ({v / r.time_s:.0%})" for k, v in r.network_time_s.items())
            if r.time_s
            else "-"
        )
        console.print(f"time attributed to the limiting network: {shares or '-'}; bottleneck: {r.bottleneck}")
        console.print(f"why: {r.explanation}")
        return
    table = Table(title=None, show_edge=False)
    for col in (
        "size (B)",
        "time (us)",
        "algbw (GB/s)",
        "busbw (GB/s)",
        "algo/proto",
        "scale-up share",
        "scale-out share",
    ):
        table.add_column(col, justify="right")
    for r in results:
        up = r.network_time_s.get("scale-up", 0.0) / r.time_s if r.time_s else 0
        out = r.network_time_s.get("scale-out", 0.0) / r.time_s if r.time_s else 0
        table.add_row(
            f"{int(r.message_bytes)}",
            f"{r.time_s * 1e6:.2f}",
            f"{r.algbw_bytes_per_s / 1e9:.2f}",
            f"{r.busbw_bytes_per_s / 1e9:.2f}",
            f"{r.algorithm}/{r.protocol}",
            f"{up:.0%}",
            f"{out:.0%}",
        )
    console.print(table)
    console.print(f"largest size: {results[-1].explanation}")
