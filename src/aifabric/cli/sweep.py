"""``aifabric sweep``: time collectives over a grid of cluster designs, writing results as they finish."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

from aifabric.cli.common import console, handle_errors
from aifabric.report.paths import check_output_path
from aifabric.sweep import load_sweep, run_sweep

__all__ = ["sweep"]


@handle_errors
def sweep(
    file: Annotated[
        Path, typer.Argument(help="Sweep YAML: cluster, vary (dotted fields -> lists), collectives")
    ],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="CSV of results; rows already there are skipped (resume)")
    ] = Path("sweep.csv"),
    workers: Annotated[int, typer.Option(help="Local worker processes", min=1, max=256)] = 1,
    shard: Annotated[int, typer.Option(help="This machine's shard (0-based) of --shards", min=0)] = 0,
    shards: Annotated[int, typer.Option(help="Split the grid over this many machines", min=1)] = 1,
) -> None:
    """Evaluate every (cluster variant x collective x size) of a sweep file with the formula engine.

    Each result row (time in s, algbw/busbw in bytes/s per direction, algorithm, bottleneck, scale-out
    switches, transceivers, network watts, bisection in bytes/s) is appended and flushed as soon as it is
    computed: stop at any time and run the same command again to resume. A variant that cannot be built is
    recorded with its error and the sweep goes on.
    """
    check_output_path(out, "--out")
    spec = load_sweep(file)
    total = sum(1 for i, _ in enumerate(spec.points()) if i % shards == shard)
    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("sweep", total=total)
        errors = 0

        def tick(row: dict) -> None:
            nonlocal errors
            errors += bool(row.get("error"))
            bar.advance(task)

        from aifabric.sweep.store import done_keys

        bar.advance(task, len(done_keys(out) & {p.key for p in spec.points()}))
        ran, skipped = run_sweep(spec, out, workers=workers, shard=shard, n_shards=shards, on_result=tick)
    console.print(
        f"{ran} point(s) evaluated, {skipped} already in {out} (resumed); {errors} with errors; results in "
        f"{out}"
    )
