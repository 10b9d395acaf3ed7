"""``aifabric sweep-db``: a sweep into a SQLite result store (WAL, typed columns, resumable after kill -9).

Exit codes: 0 done; 2 bad input (sweep file, executor, store path), one line on stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
from aifabric.sweep.grid import load_sweep
from aifabric.sweep.parallel import EXECUTORS, run_into_db

__all__ = ["sweep_db"]


@handle_errors
def sweep_db(
    file: Annotated[
        Path, typer.Argument(help="Sweep YAML: cluster, vary (dotted fields -> lists), collectives")
    ],
    db: Annotated[
        Path, typer.Option("--db", help="SQLite result store; points already there are skipped")
    ] = Path("sweep.db"),
    workers: Annotated[int, typer.Option(help="Local worker processes", min=1, max=256)] = 1,
    executor: Annotated[str, typer.Option(help=f"Executor: {', '.join(EXECUTORS)}")] = "process",
    batch: Annotated[int, typer.Option(help="Points per task and per committed transaction", min=1)] = 256,
    address: Annotated[
        str | None, typer.Option(help="--executor ray only: Ray cluster address (auto, ray://host:10001)")
    ] = None,
    parquet: Annotated[Path | None, typer.Option(help="Also export every row to this Parquet file")] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write a self-contained HTML report of the store (.html)")
    ] = None,
    pareto: Annotated[
        Path | None,
        typer.Option(help="Plot network watts against time, Pareto front per (op, size) (.png/.svg)"),
    ] = None,
) -> None:
    """Evaluate every (cluster variant x collective x size) of a sweep file with the formula engine into a
    SQLite store: one row per point keyed by a hash of the point, typed columns (SI units: s, bytes,
    bytes/s per direction, W). Killed at any moment, rerun the same command to resume: finished batches
    are kept, none is stored twice."""
    from aifabric.report.paths import check_output_path, check_plot_path

    check_output_path(db, "--db")
    if parquet is not None:
        check_output_path(parquet, "--parquet")
    if pareto is not None:
        check_plot_path(pareto, "--pareto")
    if html is not None:
        from aifabric.report.html import check_html_path

        check_html_path(html)
    spec = load_sweep(file)
    total = len(spec.points())
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

        ran, skipped = run_into_db(
            spec, db, workers=workers, executor=executor, batch=batch, address=address, on_batch=advance
        )
        bar.advance(task, skipped)
    console.print(f"{ran} point(s) evaluated, {skipped} already in {db} (resumed); store: {db}")
    if parquet is not None or pareto is not None or html is not None:
        from aifabric.sweep.db import ResultDB
        from aifabric.sweep.parallel import columns_for

        store = ResultDB(db, columns_for(spec))
        try:
            if parquet is not None:
                console.print(f"parquet: {store.to_parquet(parquet)}", markup=False, highlight=False)
            if pareto is not None:
                from aifabric.sweep.pareto import pareto_plot

                console.print(f"pareto plot: {pareto_plot(store.to_pandas(), pareto)}", markup=False)
            if html is not None:
                from aifabric.cluster.resolve import resolve_cluster
                from aifabric.report.html import sweep_report, write_html

                report = sweep_report(
                    store.to_pandas(), resolve_cluster(spec.cluster), store=str(db), file=file
                )
                console.print(f"report: {write_html(report, html)}", markup=False, highlight=False)
        finally:
            store.close()
