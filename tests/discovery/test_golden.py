"""Golden-file tests of the discovery parsers: each real case file in ``data/`` -> the object it parses to.

The expected objects are stored as JSON in ``golden/<parser>/<case>.json`` (dataclasses as objects of their
fields, tuples as lists, tuple keys joined with ``" ~ "``, floats as Python's shortest repr, so a value
that moves by one ulp shows). A mismatch fails with a unified diff of the two JSON texts; nothing is
rewritten unless asked: ``AIFABRIC_REGENERATE_GOLDEN=1 python -m pytest tests/discovery/test_golden.py``
writes the files and still fails, so that the new goldens are reviewed (``git diff``) before they pass.

The inputs are verbatim public logs (see ``data/README.md`` and each file's header); the expected objects
were checked by hand against them when first written: ranks, nodes, collective and NCCL version against
the rank lines and headers, rows against the printed tables, paths against the printed matrices.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aifabric.discovery.nccl_tests import parse_nccl_tests
from aifabric.discovery.nccl_xml import parse_nccl_topologies
from aifabric.discovery.node import inspect_node_text
from aifabric.discovery.nvsmi import TopoMatrix

from .conftest import CASE_01, CASE_03, CASE_08, CASE_13, CASE_17, CASE_31, DATA

CASE_21 = "case_21_aws_p4d_p5_nccl_topology_xml.txt"
CASE_26 = "case_26_a30_pcie_two_nics_phb_no_pcie_switch.txt"

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("AIFABRIC_REGENERATE_GOLDEN") == "1"


def _plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclasses by field, tuples and sets as lists, enums by value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, dict):
        return {_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (frozenset, set)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _key(key: Any) -> str:
    return " ~ ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def _tables(text: str, source: str) -> Any:
    return parse_nccl_tests(text, source)


def _xml(text: str, source: str) -> Any:
    return parse_nccl_topologies(text, source)


def _nvsmi(text: str, source: str) -> Any:
    return TopoMatrix.from_text(text, source)


def _layouts(text: str, source: str) -> Any:
    return [inspection.layout for inspection in inspect_node_text(text, source=source)]


#: Parser -> (function, the case files it reads). Each pair has a golden file. No case file holds
#: ``NCCL INFO`` lines, so :func:`~aifabric.discovery.nccl_info.parse_nccl_info` has no golden here
#: (its hand-written logs are in test_nccl_info.py).
PARSERS: dict[str, tuple[Callable[[str, str], Any], tuple[str, ...]]] = {
    "nccl_tests": (_tables, (CASE_01, CASE_03, CASE_08, CASE_13, CASE_31)),
    "nccl_xml": (_xml, (CASE_17, CASE_21)),
    "nvsmi": (_nvsmi, (CASE_08, CASE_26)),
    "node_layout": (_layouts, (CASE_08, CASE_17, CASE_21, CASE_26)),
}
CASES = [(parser, case) for parser, (_, cases) in PARSERS.items() for case in cases]


def _golden_path(parser: str, case: str) -> Path:
    return GOLDEN / parser / (Path(case).stem + ".json")


def _render(value: Any) -> str:
    return json.dumps(_plain(value), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize(("parser", "case"), CASES, ids=[f"{p}-{c[:7]}" for p, c in CASES])
def test_parser_matches_golden(parser: str, case: str) -> None:
    function, _ = PARSERS[parser]
    actual = _render(function((DATA / case).read_text(encoding="utf-8"), case))
    path = _golden_path(parser, case)
    if REGENERATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        pytest.fail(f"regenerated {path.relative_to(GOLDEN.parent)}: review it with git diff, then rerun")
    assert path.exists(), f"no golden file {path} (AIFABRIC_REGENERATE_GOLDEN=1 writes it)"
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = difflib.unified_diff(
            expected.splitlines(), actual.splitlines(), f"golden/{parser}/{path.name}", "parsed", lineterm=""
        )
        pytest.fail("the parser's output differs from its golden file:\n" + "\n".join(list(diff)[:80]))


def test_every_golden_file_has_a_case() -> None:
    """A golden file no test reads is stale: it would pass silently whatever the parser does."""
    expected = {_golden_path(parser, case) for parser, case in CASES}
    stored = set(GOLDEN.rglob("*.json"))
    assert stored == expected
