"""Shared CLI plumbing: one-line errors with exit code 2, cluster options, console objects.

Exit codes: 0 success; 1 an unexpected internal error (a bug: please report it); 2 bad input (unknown
preset, wrong unit, malformed file, infeasible layout), with one line on stderr naming the field and value.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from aifabric import catalog
from aifabric.errors import AifabricError

__all__ = [
    "CatalogOption",
    "HtmlOpt",
    "TraceOpt",
    "console",
    "emit_json",
    "err_console",
    "handle_errors",
    "use_catalog",
]

# Wide tables when piped (files, CI logs); prose is never hard-wrapped.
console = Console(width=None if sys.stdout.isatty() else 180, soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)
F = TypeVar("F", bound=Callable[..., Any])
#: ``--html FILE``: a self-contained HTML report (aifabric.report.html).
HtmlOpt = Annotated[
    Path | None,
    typer.Option("--html", help="Write a self-contained HTML report (.html; no network needed to view it)"),
]
#: ``--trace FILE``: Chrome/Perfetto trace JSON (aifabric.report.trace).
TraceOpt = Annotated[
    Path | None,
    typer.Option(
        "--trace", help="Write a Chrome/Perfetto trace (.json; open in ui.perfetto.dev), times in us"
    ),
]


def handle_errors(fn: F) -> F:
    """Turn AifabricError / ValueError into ``error: <message>`` on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (AifabricError, ValueError) as err:
            msg = str(err).replace("\n", " ")
            print(f"error: {msg}", file=sys.stderr)
            raise typer.Exit(code=2) from None

    return wrapper  # type: ignore[return-value]


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (for machines)."""
    print(json.dumps(data, indent=2, default=float))


#: ``--catalog FILE`` (repeatable): user catalogue files merged over the shipped parts (see
#: :mod:`aifabric.catalog.loader`); the ``AIFABRIC_CATALOG`` path list and ``~/.config/aifabric/catalog``
#: are read as well.
CatalogOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--catalog",
        metavar="FILE",
        help="User catalogue YAML (accelerators, nics, switches...) merged over the shipped parts; "
        "repeatable",
    ),
]


def use_catalog(files: list[Path] | None) -> None:
    """Merge ``--catalog`` files over the catalogue and read every user source now, so that a bad part
    is one line before any command runs; raises ConfigError (exit 2 via handle_errors)."""
    if files:
        catalog.use_catalog_files(files)
    catalog.catalog_names("accelerator")
