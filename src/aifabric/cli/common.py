"""Shared CLI plumbing: one-line errors with exit code 2, cluster options, console objects.

Exit codes: 0 success; 1 an unexpected internal error (a bug: please report it); 2 bad input (unknown
preset, wrong unit, malformed file, infeasible layout), with one line on stderr naming the field and value.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console

from aifabric.errors import AifabricError

__all__ = ["console", "emit_json", "err_console", "handle_errors"]

# Wide tables when piped (files, CI logs); prose is never hard-wrapped.
console = Console(width=None if sys.stdout.isatty() else 180, soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)
F = TypeVar("F", bound=Callable[..., Any])


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
