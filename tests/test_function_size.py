"""No function in src/ is longer than 60 lines (the working rules: one job per function, <= 60 lines).

A function's length is the lines of its code: from its first statement after the docstring to its last
line, blank lines and comments inside included; the signature and the docstring (the documentation of
parameters, units and sources) are not counted. Nested functions and methods are measured on their own.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
LIMIT = 60


def _code_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the function's last line (0 for a function
    that is only a docstring)."""
    body = fn.body
    if ast.get_docstring(fn, clean=False) is not None:
        body = body[1:]
    if not body:
        return 0
    assert fn.end_lineno is not None
    return fn.end_lineno - body[0].lineno + 1


def _long_functions(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _code_lines(node)
                if n > LIMIT:
                    out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_in_src_is_longer_than_60_lines():
    assert _long_functions(SRC) == []


def _parse_fn(text: str) -> ast.FunctionDef:
    fn = ast.parse(text).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return fn


@pytest.mark.parametrize(
    "text,lines",
    [
        # signature (2 lines) and a 3-line docstring not counted; 4 lines of code, a blank one included
        ('def f(\n    x,\n):\n    """Doc.\n\n    More."""\n    a = x\n\n    b = a\n    return b\n', 4),
        ("def g():\n    return 1\n", 1),  # no docstring: the body is the code
        ('def h():\n    """Only a docstring."""\n', 0),
    ],
)
def test_the_measure_counts_code_lines_only(text, lines):
    assert _code_lines(_parse_fn(text)) == lines


def test_the_measure_sees_a_61_line_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(60))
    (tmp_path / "m.py").write_text(f'def long():\n    """Doc."""\n{body}    return x0\n')
    assert _long_functions(tmp_path) == ["m.py:1 long (61 lines)"]
