"""The typer floor the package declares holds every private module its CLI imports from typer."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import aifabric.cli.common as common

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _typer_floor() -> tuple[int, ...]:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    (spec,) = [d for d in deps if re.match(r"typer\b", d)]
    found = re.search(r">=\s*([\d.]+)", spec)
    assert found is not None, spec
    return tuple(int(x) for x in found.group(1).split("."))


def test_the_declared_typer_floor_vendors_the_click_parser_the_cli_subclasses():
    # typer 0.26.0 release notes (fastapi/typer#1774): "Typer no longer depends on Click ... it vendors"
    # it, as typer._click; before 0.26 there is no typer._click and `import aifabric.cli.common` fails
    assert common._ValueWordsParser.__mro__[1].__module__ == "typer._click.parser"
    assert _typer_floor() >= (0, 26)
