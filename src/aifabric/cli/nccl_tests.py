"""``aifabric nccl-tests compare`` and ``aifabric calibrate``: nccl-tests logs in, the model against them
out.

Exit codes: 0 success; 2 bad input (unreadable or malformed file, unknown collective, bad option), with one
line on stderr naming the file and line; 1 an internal error.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import RenderableType
from rich.markup import escape
from rich.text import Text

from aifabric.cli.common import (
    HtmlOpt,
    check_outputs,
    console,
    emit_json,
    err_console,
    handle_errors,
    named_option,
)
from aifabric.cli.tables import fitted_table, gbps_text, size_text
from aifabric.discovery.compare import (
    CAUSES,
    NcclTestsComparison,
    TableComparison,
    compare_nccl_tests,
    describe_cause,
    read_log,
)
from aifabric.discovery.inference import gpu_unmodelled
from aifabric.report.paths import check_distinct_paths, check_output_path, make_parent
from aifabric.units import parse_bytes

__all__ = ["calibrate", "compare", "nccl_tests_app"]


class Algo(str, Enum):
    ring = "ring"
    tree = "tree"
    nvls = "nvls"
    nvls_tree = "nvls_tree"


class Proto(str, Enum):
    LL = "LL"
    LL128 = "LL128"
    Simple = "Simple"


class Place(str, Enum):
    out_of_place = "out-of-place"
    in_place = "in-place"


#: ``--nccl-version``: the release whose tuning tables price a log that carries none (as ``aifabric collective
#: --nccl-version`` states the tables a prediction uses).
NcclVersionOpt = Annotated[
    str | None,
    typer.Option(
        "--nccl-version",
        help="The NCCL (or RCCL) release whose tuning tables apply, e.g. 2.21.5, for a log that states none "
        "(must agree with the log's; default: the log's, else the newest recorded)",
    ),
]


@contextmanager
def _writing(option: str, path: Path) -> Iterator[None]:
    """Turn an ``OSError`` raised while writing ``path`` into a one-line ``--option: cannot write`` error."""
    try:
        yield
    except OSError as err:
        raise ValueError(f"{option}: cannot write {str(path)!r}: {err.strerror}") from err


nccl_tests_app = typer.Typer(
    help="Read nccl-tests logs (all_reduce_perf ...): compare them with the model.",
    no_args_is_help=True,
)


def _calibration(path: Path | None):  # noqa: ANN202
    if path is None:
        return None
    from aifabric.discovery.calibrate import load_calibration

    with named_option("--calibration", path):
        return load_calibration(path)


@nccl_tests_app.command("compare")
@handle_errors
def compare(
    log: Annotated[Path, typer.Argument(help="nccl-tests output (one or several runs, commentary allowed)")],
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            "-c",
            help="Preset or cluster YAML (resized to each table's nodes); default: inferred from the log",
        ),
    ] = None,
    gpu: Annotated[
        str | None,
        typer.Option(
            help="Accelerator catalogue key for the inferred cluster; default: from the log, else h100-sxm"
        ),
    ] = None,
    nic_speed: Annotated[
        str | None,
        typer.Option(
            "--nic-speed", help="NIC speed per GPU for the inferred cluster, e.g. '400 Gb/s' (default)"
        ),
    ] = None,
    table: Annotated[
        list[int] | None,
        typer.Option("--table", "-t", help="Compare only table N (1-based; repeatable)", min=1),
    ] = None,
    collective: Annotated[
        str | None,
        typer.Option(help="The collective, for logs that do not say (all_reduce, all_gather, alltoall ...)"),
    ] = None,
    algo: Annotated[
        Algo | None, typer.Option("--algo", help="Force an algorithm; default: from NCCL_ALGO in the log")
    ] = None,
    proto: Annotated[
        Proto | None, typer.Option("--proto", help="Force a protocol; default: from NCCL_PROTO in the log")
    ] = None,
    no_nvls: Annotated[
        bool, typer.Option("--no-nvls", help="Exclude NVLS/NVLSTree, as NCCL_NVLS_ENABLE=0")
    ] = False,
    calibration: Annotated[
        Path | None, typer.Option(help="Calibration profile YAML from 'aifabric calibrate'")
    ] = None,
    threshold: Annotated[
        float, typer.Option(help="Flag rows more than this fraction below the prediction", min=0.01, max=0.99)
    ] = 0.15,
    place: Annotated[Place, typer.Option(help="Which half of each row to compare")] = Place.out_of_place,
    plot: Annotated[
        Path | None, typer.Option(help="Write a PNG of busbw against size, measured and predicted")
    ] = None,
    ranks: Annotated[
        int | None, typer.Option(help="Ranks of the run (must agree with the log)", min=1)
    ] = None,
    nodes: Annotated[
        int | None, typer.Option(help="Nodes of the run (must agree with the log)", min=1)
    ] = None,
    gpus_per_node: Annotated[
        int | None, typer.Option(help="GPUs (ranks) per node, when the log does not say", min=1)
    ] = None,
    nccl_version: NcclVersionOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
    html: HtmlOpt = None,
) -> None:
    """Measured nccl-tests busbw against the model, row by row, with the likely causes of rows far below it.

    The collective, ranks, nodes and sizes come from the log; NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE in
    the title or launcher command steer the prediction (NCCL_ALGO=Ring -> ring). Deviation = measured busbw /
    predicted busbw - 1 (GB/s = 1e9 B/s). Exit codes: 0 ok, 2 bad input.
    """
    check_outputs(plot=plot, html=html)  # before any work
    text, source = read_log(log)
    result = compare_nccl_tests(
        text, source=source, cluster=cluster, gpu=gpu, nic_speed=nic_speed, tables=table,
        collective=collective, algorithm=algo.value if algo else None,
        protocol=proto.value if proto else None, no_nvls=no_nvls,
        calibration=_calibration(calibration), threshold=threshold, place=place.value.replace("-", "_"),
        ranks=ranks, nodes=nodes, gpus_per_node=gpus_per_node, nccl_version=nccl_version,
    )  # fmt: skip
    _write_comparison_files(result, plot=plot, html=html, log=log, cluster=cluster)
    if json_out:
        emit_json(result.to_dict())
        return
    _render_comparison(result)
    if plot is not None:
        console.print(f"plot: {escape(str(plot))}", markup=True)


def _write_comparison_files(
    result: NcclTestsComparison, *, plot: Path | None, html: Path | None, log: Path, cluster: str | None
) -> None:
    """Write the --plot (busbw against size) and --html report asked for."""
    if plot is not None:
        from aifabric.report.nccl_plot import plot_comparisons

        with _writing("--plot", plot):
            plot_comparisons(result.tables, plot)
    if html is not None:
        from aifabric.report.html import nccl_tests_report, write_html

        written = write_html(nccl_tests_report(result, log=log, cluster=cluster), html)
        err_console.print(f"report written to {written}", markup=False, highlight=False)


def _settings_text(comp: TableComparison) -> str:
    s = comp.settings
    shown = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE", "NCCL_MIN_CTAS", "NCCL_IB_QPS_PER_CONNECTION",
             "NCCL_NET_GDR_LEVEL", "NCCL_TOPO_FILE", "NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE",
             "NCCL_IB_DISABLE", "NCCL_IB_HCA")  # fmt: skip
    parts = [f"{k}={v}" for k, v in s.env.items() if k in shown]
    mapped = "; ".join(s.notes)
    return (", ".join(parts) or "NCCL defaults") + (f" ({mapped})" if mapped else "")


def _ranges(rows: Sequence) -> str:  # noqa: ANN001
    sizes = [size_text(r.size_bytes) for r in rows]
    return sizes[0] if len(sizes) == 1 else f"{len(sizes)} rows, {sizes[0]} .. {sizes[-1]}"


def _render_table(comp: TableComparison) -> None:
    """One compared table: what ran and the model used, the rows, the large-message summary, the rows not
    compared, the flagged rows with their causes, notes and the verdict."""
    t = comp.table
    head = f"[bold]Table {comp.index}[/] (line {t.line})" + (f": {escape(t.title)}" if t.title else "")
    console.print(head, highlight=False, markup=True)
    facts = [f"{comp.op}", f"{comp.n_ranks} ranks on {comp.n_nodes} node(s)"]
    if t.gpu_name:
        facts.append(t.gpu_name)
    if comp.nccl_version:
        facts.append(f"NCCL {comp.nccl_version}")
    calibration = f", calibration {escape(comp.calibration.name)}" if comp.calibration is not None else ""
    console.print(
        f"  {escape(', '.join(facts))}; model: {escape(comp.spec.name)}{calibration}",
        highlight=False,
        markup=True,
    )
    console.print(f"  settings: {escape(_settings_text(comp))}", highlight=False, markup=True)
    for a in comp.assumptions:
        console.print(f"  assumed: {escape(a)}", highlight=False, markup=True)
    for ev in comp.evidence:
        console.print(f"  NCCL said: {escape(str(ev))}", highlight=False, markup=True)
    console.print(_rows_table(comp))
    big = comp.large_rows
    console.print(
        f"  large messages ({_ranges(big)}): measured {gbps_text(big[-1].measured_busbw_bytes_per_s)} "
        f"vs predicted {gbps_text(big[-1].predicted_busbw_bytes_per_s)} GB/s at "
        f"{size_text(big[-1].size_bytes)}; "
        f"median deviation {comp.large_deviation:+.1%}",
        highlight=False,
    )
    _render_dropped(comp)
    _render_out_of_order(comp)
    _render_flagged(comp)
    notes: dict[str, list] = {}
    for r in comp.rows:
        for n in r.notes:
            notes.setdefault(n, []).append(r)
    for n, rows in notes.items():
        console.print(f"  note ({_ranges(rows)}): {escape(n)}", highlight=False, markup=True)
    _render_verdict(comp)


#: The columns of the row table: time (us), busbw (GB/s), deviation, NCCL's choice, the flag.
_ROW_HEADERS = ("size", "time meas (us)", "time pred (us)", "busbw meas", "busbw pred", "deviation",
                "algo/proto", "")  # fmt: skip


def _rows_table(comp: TableComparison) -> RenderableType:
    """Measured against predicted, row by row: time (us), busbw (GB/s), deviation, algorithm, flag."""
    rows = [
        [size_text(r.size_bytes), f"{r.measured_time_s * 1e6:.2f}", f"{r.predicted.time_s * 1e6:.2f}",
         gbps_text(r.measured_busbw_bytes_per_s), gbps_text(r.predicted_busbw_bytes_per_s),
         f"{r.deviation:+.1%}", f"{r.predicted.algorithm}/{r.predicted.protocol}",
         Text("FLAG", style="red") if r.flagged else ("note" if r.notes else "")]
        for r in comp.rows
    ]  # fmt: skip
    return fitted_table(console, _ROW_HEADERS, rows, justify="right")


def _render_dropped(comp: TableComparison) -> None:
    """The rows not compared: 0 bytes (nccl-tests' empty calls), or a time nccl-tests printed as 0."""
    empty = [(size, line) for size, line in comp.dropped if size == 0]
    timeless = [(size, line) for size, line in comp.dropped if size != 0]
    for dropped, why in (
        (empty, "of 0 bytes: nccl-tests calls the collective with nothing to move"),
        (timeless, f"with time 0: nccl-tests printed no usable {comp.place.replace('_', '-')} time for them"),
    ):
        if not dropped:
            continue
        sizes = [size_text(size) for size, _ in dropped]
        lines = [line for _, line in dropped]
        which = sizes[0] if len(sizes) == 1 else f"{sizes[0]} .. {sizes[-1]}"
        where = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"
        head, tail = why.split(":", 1)
        console.print(
            f"  [yellow]not compared[/]: {len(sizes)} row(s) {head} ({which}, {where}):{tail}",
            highlight=False,
            markup=True,
        )


def _render_out_of_order(comp: TableComparison) -> None:
    """The rows not larger than the row before them: a second run or a repeated line, compared as printed."""
    for row, before, first in comp.out_of_order:
        repeat = f" and repeats the size of line {first.line}" if first is not None else ""
        console.print(
            f"  [yellow]out of order[/] (line {row.line}): {size_text(row.size_bytes)} comes after "
            f"{size_text(before.size_bytes)} (line {before.line}){repeat}: nccl-tests prints one run's sizes "
            "in increasing order, so this is a second run or a repeated line; compared as printed",
            highlight=False,
            markup=True,
        )


def _render_flagged(comp: TableComparison) -> None:
    """The flagged rows grouped by their likeliest cause, then the alternatives in the order the rows rank
    them."""
    by_cause: dict[str, list] = {}
    for r in comp.flagged_rows:
        by_cause.setdefault(r.causes[0], []).append(r)
    for key, rows in by_cause.items():
        rank: dict[str, tuple[int, int]] = {}  # the alternatives in the order the rows rank them
        for r in rows:
            for pos, c in enumerate(r.causes[1:]):
                rank[c] = min(rank.get(c, (pos, list(CAUSES).index(c))), (pos, list(CAUSES).index(c)))
        others = sorted(rank, key=rank.__getitem__)
        console.print(f"  [red]flagged[/] {_ranges(rows)} ({min(r.deviation for r in rows):+.0%} at worst): "
                      f"{escape(describe_cause(key, comp))}", highlight=False, markup=True)  # fmt: skip
        for other in others:
            console.print(f"    or: {escape(describe_cause(other, comp))}", highlight=False, markup=True)


def _render_verdict(comp: TableComparison) -> None:
    """The table's verdict: healthy, or its findings by bandwidth explained, each with NCCL's own lines."""
    if comp.verdict == "inconclusive" and not comp.gpu_unmodelled:
        console.print(
            "  [yellow]verdict: inconclusive[/]: latency is so much of every row's time that even half the "
            "network's bandwidth would keep each row within the threshold of the model: the table says "
            "nothing of the network; measure up to 1 GiB or more (nccl-tests -e 1G) for a verdict",
            highlight=False,
            markup=True,
        )
        return
    if comp.verdict == "inconclusive":
        why = "; ".join(n for n in comp.assumptions if gpu_unmodelled([n]))
        console.print(
            f"  [yellow]verdict: inconclusive[/]: modelled on {escape(comp.spec.accelerator)}, not known to "
            f"be the machine the log ran on ({escape(why)}); a fault verdict needs it (give --gpu or "
            "--cluster)",
            highlight=False,
            markup=True,
        )
        return
    if not comp.findings:
        console.print(
            "  [green]verdict: healthy[/] (no large-message shortfall)", highlight=False, markup=True
        )
        return
    console.print(f"  [red]verdict: {escape(comp.verdict)}[/]", highlight=False, markup=True)
    for f in comp.findings:
        if f.cause == "wrong_results":
            console.print(
                f"    {escape(f.cause)}: {escape(describe_cause(f.cause))}", highlight=False, markup=True
            )
        else:
            gap = gbps_text(f.gap_bytes_per_s)
            rows = "row(s)" if f.cause == "above_links" else "large row(s)"
            console.print(f"    {escape(f.cause)}: {gap} GB/s {f.side} {f.reference} on average over "
                          f"{f.rows} {rows}", highlight=False, markup=True)  # fmt: skip
        if f.cause in ("log_contradiction", "above_links"):
            console.print(f"      {escape(describe_cause(f.cause, comp))}", highlight=False, markup=True)
        for ev in f.evidence:
            console.print(f"      evidence {escape(str(ev))}", highlight=False, markup=True)


def _render_comparison(result: NcclTestsComparison) -> None:
    for k, comp in enumerate(result.tables):
        if k:
            console.print()
        _render_table(comp)
    for index, line, why in result.skipped:
        console.print(f"Table {index} (line {line}) skipped: {escape(why)}", markup=True)


# -- calibrate -----------------------------------------------------------------------------------------------


@handle_errors
def calibrate(
    logs: Annotated[list[Path], typer.Argument(help="nccl-tests logs to fit")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the profile here (YAML); default: print it")
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            "-c",
            help="Preset or cluster YAML (resized to each table's nodes); default: inferred from each log",
        ),
    ] = None,
    gpu: Annotated[
        str | None, typer.Option(help="Accelerator catalogue key for the inferred cluster")
    ] = None,
    nic_speed: Annotated[
        str | None,
        typer.Option("--nic-speed", help="NIC speed per GPU for the inferred cluster, e.g. '400 Gb/s'"),
    ] = None,
    table: Annotated[
        list[int] | None,
        typer.Option("--table", "-t", help="Fit only table N of each log (1-based; repeatable)", min=1),
    ] = None,
    collective: Annotated[str | None, typer.Option(help="The collective, for logs that do not say")] = None,
    min_size: Annotated[
        str | None,
        typer.Option(
            "--min-size",
            help="Fit only rows of at least this size, e.g. '1 GiB'; the others are held out and reported",
        ),
    ] = None,
    max_size: Annotated[
        str | None, typer.Option("--max-size", help="Fit only rows of at most this size, e.g. '1 MiB'")
    ] = None,
    place: Annotated[Place, typer.Option(help="Which half of each row to fit")] = Place.out_of_place,
    name: Annotated[str | None, typer.Option(help="Name of the profile")] = None,
    ranks: Annotated[int | None, typer.Option(help="Ranks (must agree with the logs)", min=1)] = None,
    nodes: Annotated[int | None, typer.Option(help="Nodes (must agree with the logs)", min=1)] = None,
    gpus_per_node: Annotated[
        int | None, typer.Option(help="GPUs (ranks) per node, when the logs do not say", min=1)
    ] = None,
    nccl_version: NcclVersionOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Fit a calibration profile (bandwidth scales per tier, latency scale, extra network latency) to
    nccl-tests logs.

    Each knob on the rows it governs: scale-up on single-node plateau rows (>= 64 MiB, within 5 % of the
    peak), scale-out on multi-node plateau rows, latency on small-message rows (> 90 % latency); mid-size
    ramp rows and one-off outliers fit nothing, and the worst row >= 64 MiB may not end worse than with NCCL's
    constants. Bounded least squares on the log of the time ratio (scipy least_squares). The profile is
    YAML for `aifabric collective --calibration FILE` and `aifabric nccl-tests compare --calibration FILE`.
    Residuals are ln(model/measured). Exit codes: 0 ok, 2 bad input.
    """
    from aifabric.discovery.calibrate import save_calibration
    from aifabric.discovery.fitting import fit_calibration

    if output is not None:
        check_output_path(output, "--output")
        check_distinct_paths(_calibrate_files(logs, cluster, output))
    lo = parse_bytes(min_size, field="--min-size") if min_size else None
    hi = parse_bytes(max_size, field="--max-size") if max_size else None
    if name is not None and not name.strip():
        raise ValueError(f"--name: {name!r} is empty; give the profile a name or leave --name out")
    comparisons = _compare_logs(logs, cluster=cluster, gpu=gpu, nic_speed=nic_speed, tables=table,
                                collective=collective, place=place.value.replace("-", "_"), ranks=ranks,
                                nodes=nodes, gpus_per_node=gpus_per_node,
                                nccl_version=nccl_version)  # fmt: skip
    fit = fit_calibration(
        comparisons, min_size_bytes=lo, max_size_bytes=hi, name=name or _default_name(comparisons)
    )
    if output is not None:
        with _writing("--output", output):
            make_parent(output, "--output")  # as every output: its missing folders are created
            save_calibration(fit.calibration, output)
    if json_out:
        emit_json(fit.to_dict())
        return
    _render_fit(fit, output)


def _calibrate_files(logs: list[Path], cluster: str | None, output: Path) -> dict[str, Path | None]:
    """The files calibrate reads (its logs, a cluster file: not a preset's name), then the one it writes."""
    files: dict[str, Path | None] = {f"the log {str(log)!r}": log for log in logs}
    on_disk = cluster is not None and Path(cluster).is_file()
    files["--cluster"] = Path(cluster) if on_disk and cluster is not None else None
    return {**files, "--output": output}


def _compare_logs(logs: list[Path], **options: Any) -> list[TableComparison]:
    """Every table of the logs compared with the model (``options`` as :func:`compare_nccl_tests` takes
    them); a file given twice is read once."""
    comparisons: list[TableComparison] = []
    for log in {log.resolve(): log for log in logs}.values():
        text, source = read_log(log)
        comparisons.extend(compare_nccl_tests(text, source=source, **options).tables)
    return comparisons


def _render_fit(fit, output: Path | None) -> None:  # noqa: ANN001  (a CalibrationFit, imported lazily)
    """The fitted profile in words: each knob with its error and rows, warnings, every row, the YAML."""
    from aifabric.discovery.calibrate import Calibration
    from aifabric.discovery.fitting import PARAMETERS

    cal = fit.calibration
    console.print(
        f"[bold]calibration[/] {escape(cal.name)}: fitted on {escape(cal.source)}",
        highlight=False,
        markup=True,
    )
    console.print("  " + ", ".join(_knob_text(fit, k) for k in PARAMETERS), highlight=False)
    paths = ", ".join(f"{path} ({n} rows)" for path, n in fit.paths.items())
    console.print(f"  fitted on rows run as: {paths}", highlight=False, markup=False)
    for key in fit.at_bound:
        console.print(
            f"  warning: {key} ended at a bound of the fit: the rows wanted it further, so the model "
            "(not the fabric) is the suspect; check the cluster and the log's settings",
            highlight=False,
            markup=False,
        )
    held = fit.rms_held_out
    console.print(
        f"  residual RMS ln(model/measured): {fit.rms_fit:.3f} over {sum(r.used for r in fit.rows)} fitted "
        "rows"
        + (
            f", {held:.3f} over {sum(r.reason == 'held out' for r in fit.rows)} held-out rows"
            if held is not None
            else ""
        )
        + ("" if fit.success else f" (optimiser: {fit.message})")
    )
    headers = ("table", "size", "measured (us)", "NCCL model (us)", "calibrated (us)", "residual", "used")
    rows = [
        [str(r.table_index), size_text(r.size_bytes), f"{r.measured_time_s * 1e6:.2f}",
         f"{r.before_time_s * 1e6:.2f}", f"{r.after_time_s * 1e6:.2f}", f"{r.residual:+.3f}",
         "yes" if r.used else (r.reason or "no")]
        for r in fit.rows
    ]  # fmt: skip
    console.print(fitted_table(console, headers, rows, justify="right"))
    if output is not None:
        console.print(f"wrote {escape(str(output))}", markup=True)
    else:
        data = {k: getattr(cal, k) for k in Calibration.__dataclass_fields__}
        console.print(yaml.safe_dump(data, sort_keys=False).rstrip(), markup=False, highlight=False)


def _knob_text(fit, key: str) -> str:  # noqa: ANN001  (a CalibrationFit; the module is imported lazily)
    from aifabric.discovery.fitting import MIN_ROWS, NEUTRAL

    value = getattr(fit.calibration, key)
    if not fit.determined.get(key, True):
        kept = f"{NEUTRAL[key]:.1f}" if key.endswith("_scale") else f"{NEUTRAL[key] * 1e6:g} us"
        few = fit.few_rows.get(key)
        why = f"; {few} row(s) of its regime, needs {MIN_ROWS}" if few else ""
        return f"{key} not determined (kept at {kept}{why})"
    # at a bound the rows wanted the knob further: a standard error about the bound means nothing
    error = None if key in fit.at_bound else fit.uncertainty.get(key)
    if key == "extra_inter_latency_s":
        plus = f" +/- {error * 1e6:.2f}" if error is not None else ""
        text = f"extra_inter_latency {value * 1e6:.2f}{plus} us"
    else:
        text = f"{key} {value:.4f}" + (f" +/- {error:.4f}" if error is not None else "")
    if key in fit.at_bound:
        text += " (at bound)"
    sizes = fit.fitted_on.get(key, ())
    if sizes:
        span = size_text(sizes[0]) if len(sizes) == 1 else f"{size_text(sizes[0])} .. {size_text(sizes[-1])}"
        text += f" (on {len(sizes)} size(s), {span}, {'+'.join(fit.knob_paths.get(key, ()))})"
    if key in fit.limited:
        text += f" [limited to {fit.limited[key]:.0%} of its fit: more would worsen the rows >= 64 MiB]"
    return text


def _default_name(comparisons: Sequence[TableComparison]) -> str:
    """``h100-sxm x16 from case_03.txt table 7``; every log and table when there are several."""
    by_log: dict[str, list[int]] = {}
    for c in comparisons:
        by_log.setdefault(Path(c.table.source or "log").name, []).append(c.index)
    gpus = sorted({c.spec.accelerator for c in comparisons})
    ranks = sorted({c.n_ranks for c in comparisons})
    what = f"{'+'.join(gpus)} x{'/'.join(map(str, ranks))}"
    logs = "; ".join(
        f"{log} table{'s' if len(ix) > 1 else ''} {', '.join(map(str, ix))}" for log, ix in by_log.items()
    )
    if len(by_log) > 1:
        return f"{what} from {len(by_log)} logs ({logs})"
    return f"{what} from {logs}"
