"""``aifabric sweep``: a grid of cluster designs x collectives / training layouts into a SQLite result
store (WAL, typed columns, resumable after kill -9), on local processes or Ray; exports to Parquet and CSV,
a Pareto plot, an HTML report.

Exit codes: 0 done; 2 bad input (sweep file, executor, shard, output paths), one line on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from aifabric.cli.common import console, err_console, handle_errors
from aifabric.report.paths import check_distinct_paths, check_output_path, check_plot_path
from aifabric.sweep.db import ResultDB
from aifabric.sweep.grid import SweepSpec, load_sweep
from aifabric.sweep.parallel import (
    EXECUTORS,
    MAX_POINTS,
    check_grid_size,
    columns_for,
    point_hashes,
    run_into_db,
)

__all__ = ["sweep"]


@handle_errors
def sweep(
    file: Annotated[
        Path,
        typer.Argument(
            help="Sweep YAML: cluster (a preset, or a cluster YAML path read beside this file), vary (dotted "
            "fields -> lists), collectives, train"
        ),
    ],
    db: Annotated[
        Path, typer.Option("--db", help="SQLite result store; points already there are skipped (resume)")
    ] = Path("sweep.db"),
    workers: Annotated[
        int, typer.Option(help="Worker processes (local) or CPUs (local Ray)", min=1, max=256)
    ] = 1,
    executor: Annotated[str, typer.Option(help=f"Executor: {', '.join(EXECUTORS)}")] = "local",
    batch: Annotated[int, typer.Option(help="Points per task and per committed transaction", min=1)] = 256,
    address: Annotated[
        str | None, typer.Option(help="--executor ray only: Ray cluster address (auto, ray://host:10001)")
    ] = None,
    shard: Annotated[int, typer.Option(help="This machine's shard (0-based) of --shards", min=0)] = 0,
    shards: Annotated[int, typer.Option(help="Split the grid over this many machines", min=1)] = 1,
    parquet: Annotated[
        Path | None, typer.Option(help="Also export the rows of this sweep to this Parquet file (.parquet)")
    ] = None,
    csv: Annotated[
        Path | None, typer.Option("--csv", help="Also export the rows of this sweep to this CSV file")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML report of the store (.html)")
    ] = None,
    pareto: Annotated[
        Path | None,
        typer.Option(help="Plot network watts against time, Pareto front per (op, size) (.png/.svg)"),
    ] = None,
    max_points: Annotated[
        int,
        typer.Option(help="Refuse a grid (this shard's share) of more points (counted first)", min=1),
    ] = MAX_POINTS,
) -> None:
    """Evaluate every (cluster variant x collective x size) of a sweep file with the formula engine, and
    every (cluster variant x model x layout) of its train section with the step model, into a SQLite
    store: one row per point keyed by a hash of the point, typed columns (SI units: s, bytes, bytes/s per
    direction, W). Killed at any moment, rerun the same command to resume: finished batches
    are kept, none is stored twice. A vary value its field refuses (an unknown part, an impossible ratio)
    stops the sweep before any point runs; a variant of valid values that cannot be built is stored with
    its error, and the summary line counts those points."""
    _check_outputs(db, parquet=parquet, csv=csv, pareto=pareto, html=html)
    spec = load_sweep(file)
    if shard >= shards:
        raise ValueError(f"--shard: {shard} of {shards} is not a valid shard")
    total = check_grid_size(spec, max_points, shard=shard, n_shards=shards)
    run = dict(workers=workers, executor=executor, batch=batch, address=address, shard=shard, n_shards=shards)
    ran, skipped = _run_with_bar(spec, db, total, max_points=max_points, **run)
    failed = _count_errors(spec, db)
    console.print(
        f"{ran} point(s) evaluated, {skipped} already in {db} (resumed), {failed} stored with an error "
        f"(see the error column); store: {db}",
        markup=False,
    )
    if any(p is not None for p in (parquet, csv, pareto, html)):
        _exports(spec, db, file, parquet=parquet, csv=csv, pareto=pareto, html=html)


def _check_outputs(
    db: Path, *, parquet: Path | None, csv: Path | None, pareto: Path | None, html: Path | None
) -> None:
    """Every output path checked before any work: the store, the exports, the plot and the report, each
    on its own file (an export over the store would destroy the results it exports)."""
    check_output_path(db, "--db")
    check_distinct_paths({"--db": db, "--parquet": parquet, "--csv": csv, "--pareto": pareto, "--html": html})
    if parquet is not None:
        _check_suffix(parquet, "--parquet", ".parquet")
    for path, option in ((parquet, "--parquet"), (csv, "--csv")):
        if path is not None:
            check_output_path(path, option)
    if pareto is not None:
        check_plot_path(pareto, "--pareto")
    if html is not None:
        from aifabric.report.html import check_html_path

        check_html_path(html)


def _check_suffix(path: Path, option: str, suffix: str) -> None:
    """Raise ValueError naming ``option`` unless ``path`` ends in ``suffix`` (a file's name says its
    format: Parquet bytes in a .csv are garbage to whatever opens it by its name)."""
    if path.suffix.lower() != suffix:
        raise ValueError(f"{option}: {str(path)!r} must end in {suffix}")


def _count_errors(spec: SweepSpec, db: Path) -> int:
    """Points of the store ``db`` stored with an error instead of a result."""
    store = ResultDB(db, columns_for(spec))
    try:
        return store.count_errors()
    finally:
        store.close()


def _run_with_bar(spec: SweepSpec, db: Path, total: int, **run: Any) -> tuple[int, int]:
    """Run the grid into the store (``run``: :func:`run_into_db`'s options) behind a progress bar with the
    points/s rate on an interactive stderr; (points evaluated, points already stored)."""
    with Progress(
        TextColumn("sweep"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_interactive,
    ) as bar:
        task = bar.add_task("sweep", total=total, rate="")

        def advance(n: int) -> None:
            bar.advance(task, n)
            speed = bar.tasks[0].speed
            bar.update(task, rate=f"{speed:,.0f} points/s" if speed else "")

        ran, skipped = run_into_db(spec, db, on_batch=advance, **run)
        bar.advance(task, skipped)
    return ran, skipped


def _exports(
    spec: SweepSpec,
    db: Path,
    file: Path,
    *,
    parquet: Path | None,
    csv: Path | None,
    pareto: Path | None,
    html: Path | None,
) -> None:
    """Write the asked exports of the store ``db``, the rows of this sweep's points, and print where each
    went."""
    store = ResultDB(db, columns_for(spec))
    only = point_hashes(spec)
    try:
        if parquet is not None:
            console.print(f"parquet: {store.to_parquet(parquet, only)}", markup=False, highlight=False)
        if csv is not None:
            console.print(f"csv: {store.to_csv(csv, only)}", markup=False, highlight=False)
        if pareto is not None:
            from aifabric.sweep.pareto import pareto_plot

            console.print(f"pareto plot: {pareto_plot(store.to_pandas(only), pareto)}", markup=False)
        if html is not None:
            from aifabric.cluster.resolve import resolve_cluster
            from aifabric.report.html import sweep_report, write_html
            from aifabric.sweep.runner import swept_design

            design = swept_design(spec) or resolve_cluster(spec.source)
            report = sweep_report(store.to_pandas(only), design, store=str(db), file=file)
            console.print(f"report: {write_html(report, html)}", markup=False, highlight=False)
    finally:
        store.close()
