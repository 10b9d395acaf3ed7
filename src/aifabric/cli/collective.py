"""``aifabric collective``: time one collective, or a sweep of sizes as an nccl-tests-like table."""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import Enum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from aifabric.catalog.nccl import check_release_has_arch, nccl_release
from aifabric.cli.chakra import ChakraOpt, written
from aifabric.cli.common import (
    CommandClusterOpt,
    HtmlOpt,
    TraceOpt,
    check_outputs,
    console,
    emit_json,
    err_console,
    handle_errors,
    literal,
    named_option,
    options_as_typed,
    progress_bar,
)
from aifabric.cli.sizing import sized_cluster
from aifabric.cluster.tpu_slice import (
    TpuSlice,
    check_torus_options,
    default_run,
    refuse_nccl_options,
    spec_slice,
    with_slice,
    with_twist,
)
from aifabric.collectives.algorithms import ALGORITHMS, Algorithm, plan_algorithms
from aifabric.collectives.buffers import sizes_split_by_ranks, sizes_within_hbm
from aifabric.collectives.communicator import resolve_communicator
from aifabric.collectives.tiers import Protocol, line_rate_caps
from aifabric.discovery.calibrate import Calibration, load_calibration
from aifabric.engines.api import ENGINE_OPTIONS, collective_time
from aifabric.engines.host_launch import MAX_LAUNCH_S_PER_GPU
from aifabric.errors import ConfigError
from aifabric.units import format_bytes, one_size

if TYPE_CHECKING:
    from aifabric.cluster.spec import ClusterSpec
    from aifabric.collectives.communicator import Communicator
    from aifabric.engines.result import CollectiveResult

__all__ = ["collective"]


class Engine(str, Enum):
    formula = "formula"
    links = "links"
    flow = "flow"


#: --algo choices: every algorithm of the registry.
AlgoChoice = Enum("AlgoChoice", {a.value: a.value for a in ALGORITHMS}, type=str)  # type: ignore[misc]
#: --proto choices: NCCL's protocols.
ProtoChoice = Enum("ProtoChoice", {p.value: p.value for p in Protocol}, type=str)  # type: ignore[misc]


MAX_SWEEP_ROWS = 64

#: The command-line flag of each engine option.
FLAGS = {
    "algorithm": "--algo",
    "protocol": "--proto",
    "exclude": "--no-nvls",
    "convention": "--convention",
    "efficiency": "--efficiency",
    "calibration": "--calibration",
    "nccl_version": "--nccl-version",
    "env": "--env",
    "routing": "--routing",
    "seed": "--seed",
    "transport": "--transport",
    "gpus_per_thread": "--gpus-per-thread",
    "launch_s_per_gpu": "--launch-us",
}


def _refuse_unused(engine: str, options: dict[str, Any]) -> None:
    """ValueError naming the first option the engine does not take by its flag, and the flags it takes;
    then the option conflicts of :func:`_refuse_conflicts`."""
    unknown = sorted(FLAGS[o] for o in set(options) - ENGINE_OPTIONS[engine])
    if unknown:
        takes = ", ".join(sorted(FLAGS[o] for o in ENGINE_OPTIONS[engine] if o in FLAGS))
        raise ValueError(f"{unknown[0]}: the {engine} engine does not take this option (it takes {takes})")
    _refuse_conflicts(engine, options)


def _refuse_conflicts(engine: str, options: dict[str, Any]) -> None:
    """ValueError naming both options when one contradicts another: ``--algo`` NVLS or NVLS-tree with
    ``--no-nvls``; an ``--algo`` without a transfer plan on the links and flow engines; ``--seed`` under a
    routing policy that makes no random choice (:data:`aifabric.engines.routing.POLICY_OPTIONS`; the
    default routing of the collective command is ``spray``)."""
    algo = options.get("algorithm")
    if algo is not None and algo in (options.get("exclude") or ()):
        raise ValueError(f"--algo {algo.value} conflicts with --no-nvls (which disables it)")
    if algo is not None and engine != "formula" and ALGORITHMS[algo].plan is None:
        known = ", ".join(a.value for a in plan_algorithms())
        raise ValueError(
            f"--algo {algo.value}: no transfer-level plan; the {engine} engine runs {known} "
            "(use --engine formula)"
        )
    if engine != "formula" and "seed" in options:
        from aifabric.engines.routing import (  # lazy: scipy.sparse, for start-up time
            DEFAULT_POLICY,
            refuse_unused_options,
        )

        routing = options.get("routing")
        refuse_unused_options(routing or DEFAULT_POLICY, ["--seed"], defaulted=routing is None)


def _env(items: list[str]) -> dict[str, str]:
    """``["NCCL_ALGO=Ring", ...]`` as a mapping; ValueError naming an item that is not NAME=VALUE or a
    variable given twice."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--env: expected NAME=VALUE, got {item!r}")
        if name.strip() in out:
            raise ValueError(f"--env: {name.strip()} given twice")
        out[name.strip()] = value.strip()
    return out


def _sizes(size: str | None, min_size: str | None, max_size: str | None, factor: int | None) -> list[float]:
    if size is not None:
        if min_size is not None or max_size is not None:
            raise ValueError("--size: give one size, or a sweep with --min/--max, not both")
        if factor is not None:
            raise ValueError(f"--factor: {factor} is for sweeps (--min/--max), not with --size")
        return [one_size(size, "--size")]
    factor = 2 if factor is None else factor
    lo = one_size(min_size or "8 B", "--min")
    hi = one_size(max_size or "16 GiB", "--max")
    if hi < lo and max_size is None:
        raise ValueError(f"--min: {min_size!r} is above the sweep's default top, 16 GiB; give --max")
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


def _sweep(
    sizes: list[float], run: Callable[[float], CollectiveResult], transport: str | None, field: str
) -> list[CollectiveResult]:
    """``run`` of every size; under a transport, the fluid work of the whole sweep is estimated first (each
    size probed, :func:`~aifabric.transport.wire.probe_fluid_work`, largest first so that a sweep over the
    limit stops probing early) and refused above ``MAX_FLUID_WORK`` before any size runs."""
    if transport is None:
        return [run(s) for s in sizes]
    from aifabric.transport.wire import MAX_FLUID_WORK, probe_fluid_work  # lazy: start-up time

    done: dict[int, CollectiveResult] = {}
    total = 0.0
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        work, result = probe_fluid_work(partial(run, sizes[i]))
        total += work
        if result is not None:
            done[i] = result
        if total > MAX_FLUID_WORK:
            raise ValueError(
                f"{field}: the {transport} fluid model would take more than {total:.3g} step x (flow, hop) "
                f"updates over the sweep's {len(sizes)} size(s) (limit {MAX_FLUID_WORK:.3g}, about half a "
                "minute); sweep fewer or smaller sizes (--min, --max, --factor, or one --size) or drop "
                "--transport"
            )
    return [done[i] if i in done else run(s) for i, s in enumerate(sizes)]


@handle_errors
def collective(
    op: Annotated[
        str,
        typer.Argument(
            help="all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, reduce, send_recv"
        ),
    ] = "all_reduce",
    cluster: CommandClusterOpt = "dgx-h100-superpod",
    nodes: Annotated[
        int | None,
        typer.Option(
            help="Resize the cluster to this many nodes (servers of gpus_per_node GPUs; on an NVL72 rack a "
            "node is a compute tray of 4 GPUs and 18 trays make a rack)",
            min=1,
        ),
    ] = None,
    ranks: Annotated[
        int | None, typer.Option(help="Ranks (first GPUs in order); default all GPUs", min=1)
    ] = None,
    slice_: Annotated[
        str | None,
        typer.Option(
            "--slice",
            help="TPU clusters: the slice the ranks run on, chips per axis (4x4x8 on v5p, 8x16 on v5e); "
            "default: scale_up.slice, else the whole pod (the largest slice if the pod is bigger), "
            "else the most cube-like slice of --ranks",
        ),
    ] = None,
    twisted: Annotated[
        bool,
        typer.Option(
            "--twisted",
            help="TPU v4/v5p: wire the slice as a twisted torus (scale_up.twisted; shapes k x k x 2k and "
            "k x 2k x 2k, k a multiple of 4: 4x4x8, 4x8x8, ...)",
        ),
    ] = False,
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
    factor: Annotated[
        int | None, typer.Option("--factor", "-f", help="Sweep multiplication factor (default 2)")
    ] = None,
    algo: Annotated[
        AlgoChoice | None,
        typer.Option("--algo", help="Force an algorithm (links/flow engines: those with a transfer plan)"),
    ] = None,
    proto: Annotated[
        ProtoChoice | None, typer.Option("--proto", help="formula engine: force a protocol")
    ] = None,
    no_nvls: Annotated[
        bool, typer.Option("--no-nvls", help="formula engine: disable NVLink SHARP (NCCL_NVLS_ENABLE=0)")
    ] = False,
    convention: Annotated[
        str | None,
        typer.Option(
            help="formula engine: per_direction (default) or bidirectional (vendor's NVLink figure as a "
            "per-GPU rate)"
        ),
    ] = None,
    efficiency: Annotated[
        str | None, typer.Option(help="nccl (effective bandwidths, latencies; default) or line_rate (ideal)")
    ] = None,
    engine: Annotated[Engine, typer.Option(help="formula, links or flow")] = Engine.formula,
    routing: Annotated[
        str | None,
        typer.Option(
            help="links/flow engines only: ecmp, pinning, qp, spray (default, the even split), adaptive, "
            "spray-blind (64 entropy values hashed), reps (recycled entropy values)"
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="links/flow engines: seed of random choices (ECMP hashes)")
    ] = None,
    transport: Annotated[
        str | None,
        typer.Option(
            help="flow engine only: run a transport's fluid queue model over the links (ib, roce-pfc, "
            "roce-dcqcn, receiver-driven, uet-lossy, uet-rccc, ...; see 'aifabric transport --help')"
        ),
    ] = None,
    calibration: Annotated[
        Path | None, typer.Option(help="formula engine: calibration profile YAML from 'aifabric calibrate'")
    ] = None,
    nccl_version: Annotated[
        str | None,
        typer.Option(
            "--nccl-version",
            help="formula engine: the NCCL release whose tuning tables apply, e.g. 2.21.5 (default: newest)",
        ),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            help="formula engine: an NCCL variable as NAME=VALUE (NCCL_ALGO=Ring), repeatable; NAME is "
            "NCCL_ and one of: ALGO, PROTO, NVLS_ENABLE, COLLNET_ENABLE, P2P_DISABLE, P2P_LEVEL, "
            "SHM_DISABLE, NET_GDR_LEVEL, MIN_NCHANNELS, MAX_NCHANNELS, IB_QPS_PER_CONNECTION",
        ),
    ] = None,
    gpus_per_thread: Annotated[
        int | None,
        typer.Option(
            "--gpus-per-thread",
            min=1,
            help="formula engine: GPUs one host thread drives (nccl-tests -g N), its ranks in one process; "
            "with --launch-us the time is at least GPUs x launch, as NCCL >= 2.9 launches each GPU's kernel "
            "in turn (without it no host floor is priced)",
        ),
    ] = None,
    launch_us: Annotated[
        float | None,
        typer.Option(
            "--launch-us",
            help="formula engine: the host's cost of one GPU's enqueue and kernel launch, microseconds "
            "(a host figure, no default; nccl-tests #123's DGX A100 host: 4.21)",
        ),
    ] = None,
    trace: TraceOpt = None,
    html: HtmlOpt = None,
    chakra: ChakraOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Time a collective on a cluster: one size (--size) or an nccl-tests-like sweep (--min/--max/--factor).

    Bandwidths are GB/s = 1e9 bytes/s. algbw = size / time and busbw = algbw x factor, as nccl-tests
    defines them; both are per rank and per direction under the default convention.
    """
    with options_as_typed(_typed_fields(ranks, twisted)):  # engine, cluster, ranks: the options typed
        check_outputs(trace=trace, html=html, chakra=chakra)
        spec = sized_cluster(cluster, nodes=nodes)  # a Clos too big for --nodes names --nodes
        nccl_only = {"--no-nvls": no_nvls, "--nccl-version": nccl_version is not None}
        host = {"--gpus-per-thread": gpus_per_thread is not None, "--launch-us": launch_us is not None}
        refuse_nccl_options(spec, {**nccl_only, "--calibration": calibration is not None, **host})
        note = None
        if twisted:
            spec = with_twist(spec)
        if slice_ is not None:
            spec, ranks = with_slice(spec, slice_, ranks)
        elif ranks is None:
            spec, ranks, note = default_run(spec, pair=op == "send_recv")
        comm = resolve_communicator(spec, ranks)
        tpu = spec_slice(spec, comm.n_ranks, pair=op == "send_recv") if comm.n_domains == 1 else None
        sizes = _sizes(size, min_size, max_size, factor)
        if tpu is not None:  # refused here, before any run
            check_torus_options(None if proto is None else proto.value, convention)
        field = "--size" if size else "--max" if max_size else None
        sizes = sizes_within_hbm(op, sizes, comm.n_ranks, spec, field)
        sizes = sizes_split_by_ranks(op, sizes, comm.n_ranks, field)
        given: dict[str, Any] = {
            "algorithm": None if algo is None else Algorithm(algo.value),
            "protocol": None if proto is None else Protocol(proto.value),
            "exclude": (Algorithm.NVLS, Algorithm.NVLS_TREE) if no_nvls else None,
            "convention": convention,
            "efficiency": efficiency,
            "calibration": calibration,
            "nccl_version": nccl_version,
            "env": env,
            "routing": routing,
            "seed": seed,
            "transport": transport,
            **_host_launch(gpus_per_thread, launch_us),
        }
        opts = _engine_options(engine.value, given)
        if nccl_version is not None:
            arch = spec.accelerator_spec.arch
            with options_as_typed({"nccl version": "--nccl-version"}):
                release = nccl_release(nccl_version)
            check_release_has_arch(nccl_version, release, arch, spec.accelerator, field="--nccl-version")
        with options_as_typed(FLAGS):
            results = _run(op, sizes, spec, comm, engine.value, opts)
        html_inputs = dict(
            op=op, cluster=cluster, nodes=nodes, ranks=ranks, engine=engine.value, algo=algo, proto=proto
        )
        _write_files(results, op, comm, spec, trace=trace, chakra=chakra, html=html, html_inputs=html_inputs)
        if json_out:
            echo = (
                {}
                if tpu is None
                else {"slice": tpu.label, "slice_wraparound": list(tpu.wrap), "slice_twisted": tpu.twisted}
            )
            emit_json([{**r.to_dict(), **echo} for r in results])
            return
        _print_preamble(tpu, note, opts)
        _print_results(results, spec, comm, opts.get("calibration"))


def _print_preamble(tpu: TpuSlice | None, note: str | None, opts: dict[str, Any]) -> None:
    """The lines before the results: the TPU slice and its default-run note, and what
    ``--gpus-per-thread`` alone leaves out (:func:`_host_launch_note`)."""
    if tpu is not None:
        console.print(f"TPU slice {tpu.describe()}", markup=False, highlight=False)
        if note:
            console.print(f"Note: {note}", markup=False, highlight=False)
    if launch_note := _host_launch_note(opts):
        console.print(f"Note: {launch_note}", markup=False, highlight=False)


def _host_launch(gpus_per_thread: int | None, launch_us: float | None) -> dict[str, Any]:
    """``--gpus-per-thread`` and ``--launch-us`` as engine options (``launch_s_per_gpu`` in seconds); None
    where not given (checked with the engine's other options, :func:`_check_host_launch`).

    Raises ConfigError naming ``--launch-us`` and its value when it is no number of microseconds (NaN,
    infinite), negative, or above :data:`MAX_LAUNCH_S_PER_GPU` (1 s): public hosts take 3.2 to 6.1 us,
    and g x a larger cost overflows the time printed in microseconds."""
    if launch_us is not None and not math.isfinite(launch_us):
        raise ConfigError(f"--launch-us: {launch_us!r} is not a finite number of microseconds")
    if launch_us is not None and launch_us < 0:
        raise ConfigError(f"--launch-us: {launch_us:g} us is negative; a launch costs the host >= 0 us")
    if launch_us is not None and launch_us * 1e-6 > MAX_LAUNCH_S_PER_GPU:
        raise ConfigError(
            f"--launch-us: {launch_us:g} us is above {MAX_LAUNCH_S_PER_GPU * 1e6:g} us (1 s) per GPU launch; "
            "public hosts take 3.2 to 6.1 us"
        )
    return {
        "gpus_per_thread": gpus_per_thread,
        "launch_s_per_gpu": None if launch_us is None else launch_us * 1e-6,
    }


def _check_host_launch(opts: dict[str, Any]) -> None:
    """ValueError naming ``--launch-us`` given without ``--gpus-per-thread``: a launch cost is priced only
    as the floor of GPUs per thread x launch (:mod:`aifabric.engines.host_launch`). ``--gpus-per-thread``
    alone is a run of its own: the ranks share processes (RCCL's MSCCL needs one), no host floor priced
    (:func:`_host_launch_note`)."""
    if "launch_s_per_gpu" in opts and "gpus_per_thread" not in opts:
        raise ValueError(
            "--launch-us: needs --gpus-per-thread too (the host launch floor is GPUs per thread x launch)"
        )


def _host_launch_note(opts: dict[str, Any]) -> str | None:
    """What the run leaves out when ``--gpus-per-thread`` comes without ``--launch-us``; None otherwise."""
    if "gpus_per_thread" not in opts or "launch_s_per_gpu" in opts:
        return None
    return (
        f"--gpus-per-thread {opts['gpus_per_thread']} without --launch-us: the ranks share processes "
        "(RCCL's MSCCL needs one per rank), and no host launch floor is priced (give --launch-us for it)"
    )


def _typed_fields(ranks: int | None, twisted: bool) -> dict[str, str]:
    """The fields errors name (``cluster:``, ``engine:``, ``ranks:``, ``scale_up.twisted:``) mapped to
    the options the user typed; ``ranks`` and ``scale_up.twisted`` only when the option was given (else
    they are the default run's or the cluster file's)."""
    typed = {"cluster": "--cluster", "engine": "--engine"}
    if ranks is not None:
        typed["ranks"] = "--ranks"
    if twisted:
        typed["scale_up.twisted"] = "--twisted"
    return typed


def _engine_options(engine: str, given: dict[str, Any]) -> dict[str, Any]:
    """The engine options given (None dropped), checked and loaded.

    ``given["env"]`` is the raw ``--env`` list and ``given["calibration"]`` a path; the result holds the
    mapping and the loaded :class:`Calibration`. ValueError naming the flag of an unknown routing policy,
    a malformed ``--env`` item or an option the engine does not take, checked before any file is read.
    """
    routing = given["routing"]
    if routing is not None:
        from aifabric.engines.routing import POLICIES  # lazy: scipy.sparse, for start-up time

        if routing not in POLICIES:
            raise ValueError(f"--routing: unknown routing policy {routing!r}; known: {', '.join(POLICIES)}")
    given = {**given, "env": _env(given["env"]) if given["env"] else None}
    opts: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    _refuse_unused(engine, opts)  # before reading any file: what the engine does not use
    _check_host_launch(opts)
    if given["transport"] is not None:
        from aifabric.transport.fluidnet import transport as known_transport  # lazy: start-up time

        with options_as_typed({"transport": "--transport"}):
            known_transport(given["transport"])
    if given["calibration"] is not None:
        with named_option("--calibration", given["calibration"]):
            opts["calibration"] = load_calibration(given["calibration"])
    return opts


def _run(
    op: str, sizes: list[float], spec: ClusterSpec, comm: Communicator, engine: str, opts: dict[str, Any]
) -> list[CollectiveResult]:
    """Time ``op`` at each size; long flow-engine (and transport) runs show a bar on a terminal."""
    with progress_bar() as progress:
        run_opts = dict(opts)
        if progress is not None and engine != "formula":
            run_opts["progress"] = progress
        return _sweep(
            sizes,
            lambda s: collective_time(op, s, spec, ranks=comm, engine=engine, **run_opts),
            opts.get("transport"),
            "--size" if len(sizes) == 1 else "--max",
        )


def _write_files(
    results: list[CollectiveResult],
    op: str,
    comm: Communicator,
    spec: ClusterSpec,
    *,
    trace: Path | None,
    chakra: Path | None,
    html: Path | None,
    html_inputs: dict[str, Any],
) -> None:
    """Write the --trace, --chakra and --html files asked for, each announced on stderr."""
    if trace is not None:
        from aifabric.report.trace import collective_trace, write_trace  # lazy: start-up of `collective`

        write_trace(collective_trace(results), trace)
        err_console.print(f"trace written to {trace}", markup=False, highlight=False)
    if chakra is not None:
        from aifabric.interop.chakra import export_ranks, sweep_nodes  # lazy: protobuf, for start-up time

        calls = [(r.message_bytes, r.time_s) for r in results]
        written(export_ranks(sweep_nodes(op, calls, comm.n_ranks), comm.n_ranks, chakra))
    if html is not None:
        from aifabric.report.html import collective_report, write_html

        write_html(collective_report(results, spec, **html_inputs), html)
        err_console.print(f"report written to {html}", markup=False, highlight=False)


def _print_results(
    results: list[CollectiveResult], spec: ClusterSpec, comm: Communicator, cal: Calibration | None
) -> None:
    """The header, then one size's detail or the sweep's table."""
    _print_header(results[0], spec, comm, cal)
    r0 = results[0]
    if len(results) == 1:
        _print_one(r0)
    else:
        _print_sweep(results)


def _print_header(
    r0: CollectiveResult, spec: ClusterSpec, comm: Communicator, cal: Calibration | None
) -> None:
    """What ran on what, under which convention and efficiency, and the calibration applied if any."""
    conv, eff = r0.convention.split("/")
    conv_text = (
        "bandwidths per direction"
        if conv == "per_direction"
        else "vendor scale-up figures used as per-GPU rates (both directions added)"
    )
    console.print(
        f"[bold]{literal(r0.op)}[/] on {literal(spec.name)}: {comm.n_ranks} rank{'s' * (comm.n_ranks != 1)}, "
        f"{comm.n_domains} "
        f"scale-up domain(s) of up to {comm.ranks_per_domain}; engine {r0.engine}; {conv_text}; "
        + (
            "ICI links at the JAX scaling book's one-way rate per link, one hop latency per ring step"
            if spec.scale_up.kind == "torus"
            else ("NCCL-effective bandwidths and latencies" if eff == "nccl" else "line rates, no latency")
        ),
        markup=True,
    )
    if cal is not None:
        caps = line_rate_caps(spec, conv, eff)
        up, out = (
            _scale_text(s, cap) for s, cap in zip((cal.intra_scale, cal.inter_scale), caps, strict=True)
        )
        console.print(
            f"calibration {cal.name!r} applied: scale-up {up}, scale-out {out}, latency "
            f"x{cal.latency_scale:.3f}, +{cal.extra_inter_latency_s * 1e6:.2f} us per network hop"
        )


def _scale_text(scale: float, cap: float) -> str:
    """A profile's bandwidth scale, and the line-rate cap it was cut to where it is above it
    (:func:`~aifabric.collectives.tiers.line_rate_caps`)."""
    return f"x{scale:.3f}" + (f" (capped at line rate: x{cap:.3f})" if scale > cap else "")


def _print_one(r: CollectiveResult) -> None:
    """One size: time and bandwidths, the time attributed to each network, the bottleneck and why."""
    console.print(
        f"size {format_bytes(r.message_bytes)}: time {r.time_s * 1e6:.2f} us, algbw "
        f"{r.algbw_bytes_per_s / 1e9:.2f} GB/s, busbw {r.busbw_bytes_per_s / 1e9:.2f} GB/s "
        f"({'one rank: a copy in HBM' if r.n_ranks == 1 else f'{r.algorithm}/{r.protocol}'})"
    )
    shares = (
        ", ".join(f"{k} {v * 1e6:.1f} us ({v / r.time_s:.0%})" for k, v in r.network_time_s.items())
        if r.time_s
        else "-"
    )
    console.print(f"time attributed to the limiting network: {shares or '-'}; bottleneck: {r.bottleneck}")
    console.print(f"why: {r.explanation}")


def _print_sweep(results: list[CollectiveResult]) -> None:
    """The nccl-tests-like table of a sweep, one row per size, then why at the largest size."""
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
