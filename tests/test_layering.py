"""Package layering (DESIGN.md "One data flow", "Front doors sit on top"): no package imports one above it,
and no module hides an import inside a function to dodge a cycle.

The order, lowest first (a package may import its own layer and every layer below)::

    units, errors, inputs, package_data, lazy_import, catalog  <  cluster  <  collectives  <  engines
        <  training  <  discovery, report, sweep  <  cli  <  the package root (aifabric/__init__, __main__)

``collectives`` holds the algorithm registry (cost functions and CommPlans); ``engines`` times CommPlans
and holds the front door :func:`aifabric.engines.api.collective_time`, which is why it sits above the
registry. Imports under ``if TYPE_CHECKING:`` are annotations only and are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "aifabric"

LAYERS: dict[str, int] = {
    "version": 0,
    "units": 0,
    "errors": 0,
    "inputs": 0,
    "package_data": 0,
    "lazy_import": 0,
    "budget": 0,
    "catalog": 0,
    "cluster": 1,
    "collectives": 2,
    "storage": 2,
    "transport": 2,
    "engines": 3,
    "training": 4,
    "discovery": 5,
    "report": 5,
    "sweep": 5,
    "interop": 5,
    "cli": 6,
    "__init__": 7,
    "front": 7,
    "__main__": 7,
}

#: In-function imports that are there for start-up time, not to dodge a cycle: (module, imported) pairs.
#: The CLI imports every command's heavy dependencies lazily (``aifabric collective`` starts in < 0.5 s);
#: the front door imports the topology engines (scipy.sparse) only when one is asked for.
LAZY_FOR_STARTUP: set[tuple[str, str]] = {("engines.api", "aifabric.engines.fabric")}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"] or ["__init__"]
        out.append((".".join(parts), path))
    return out


def _package(module: str) -> str:
    return module.split(".")[0]


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> list[tuple[str, bool, int]]:
    """(imported aifabric module, inside a function, line) for every import outside TYPE_CHECKING blocks."""
    found: list[tuple[str, bool, int]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for sub in child.orelse:
                    visit(sub, in_function)
                continue
            if (
                isinstance(child, ast.ImportFrom)
                and child.level == 0
                and (child.module or "").startswith("aifabric")
            ):
                mod = child.module or ""
                names = [mod] if mod != "aifabric" else [f"aifabric.{a.name}" for a in child.names]
                found.extend((m, in_function, child.lineno) for m in names)
            elif isinstance(child, ast.Import):
                found.extend(
                    (a.name, in_function, child.lineno) for a in child.names if a.name.startswith("aifabric")
                )
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, inner)

    visit(tree, False)
    return found


def _layer_of_import(name: str) -> int | None:
    parts = name.split(".")
    if len(parts) < 2:
        return LAYERS["__init__"]
    return LAYERS.get(parts[1])


MODULES = _modules()


def test_every_package_has_a_layer() -> None:
    assert {_package(m) for m, _ in MODULES} <= set(LAYERS)


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_no_package_imports_one_above_it(module: str, path: Path) -> None:
    own = LAYERS[_package(module)]
    tree = ast.parse(path.read_text())
    upward = [
        f"line {line}: {name}"
        for name, _, line in _imports(tree)
        if (layer := _layer_of_import(name)) is not None and layer > own
    ]
    assert not upward, f"{module} (layer {own}) imports a higher layer: {upward}"


@pytest.mark.parametrize("module,path", MODULES, ids=[m for m, _ in MODULES])
def test_no_import_hidden_in_a_function(module: str, path: Path) -> None:
    if _package(module) == "cli":
        return  # the CLI imports lazily for start-up time (see LAZY_FOR_STARTUP's comment)
    tree = ast.parse(path.read_text())
    hidden = [
        f"line {line}: {name}"
        for name, in_function, line in _imports(tree)
        if in_function and (module, name) not in LAZY_FOR_STARTUP
    ]
    assert not hidden, f"{module} imports inside a function: {hidden}"


def test_the_walker_sees_a_hidden_upward_import() -> None:
    tree = ast.parse("def f():\n    from aifabric.engines.formula import formula_collective\n")
    assert _imports(tree) == [("aifabric.engines.formula", True, 2)]
