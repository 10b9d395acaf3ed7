"""``aifabric --help`` without importing the commands: each command's help read from its module's source.

Building the whole app imports every command's module (scipy, matplotlib, the training models: about a
second); the overview needs only each command's name and help, which are the command function's
docstring or its group's ``typer.Typer(help=...)``. They are read from the source with :mod:`ast`,
so the overview is the whole app's ``--help`` with nothing to keep in step (``tests/cli/test_overview.py``
renders both). Where a help cannot be read so (no source shipped, a help built at run time),
:func:`command_help` gives None and the caller builds the whole app.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

__all__ = ["command_help"]


def command_help(module: str, attr: str) -> str | None:
    """The help of the command ``attr`` of ``module`` as Typer reads it, without importing the module.

    A function's docstring (cleaned as :func:`inspect.getdoc` cleans it), or the ``help=`` string of a
    ``typer.Typer(...)`` assigned to ``attr``; None when neither is in the module's source.
    """
    tree = _source_tree(module)
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            return ast.get_docstring(node)
        if isinstance(node, ast.Assign) and _assigns(node, attr) and isinstance(node.value, ast.Call):
            return _help_keyword(node.value)
    return None


def _assigns(node: ast.Assign, name: str) -> bool:
    return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)


def _help_keyword(call: ast.Call) -> str | None:
    for keyword in call.keywords:
        if keyword.arg == "help" and isinstance(keyword.value, ast.Constant):
            value = keyword.value.value
            return value if isinstance(value, str) else None
    return None


@cache
def _source_tree(module: str) -> ast.Module | None:
    """The parsed source of ``module`` (found, not imported), or None without a ``.py`` source."""
    spec = importlib.util.find_spec(module)
    origin = spec.origin if spec is not None else None
    if origin is None or not origin.endswith(".py"):
        return None
    return ast.parse(Path(origin).read_text(encoding="utf-8"), filename=origin)
