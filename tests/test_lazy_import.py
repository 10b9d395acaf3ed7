"""lazy_module: the module object at once, its code on first attribute access."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aifabric.lazy_import import lazy_module


def test_the_code_runs_on_first_attribute_access(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = tmp_path / "ran"
    (tmp_path / "lazymod_probe.py").write_text(
        f"from pathlib import Path\nPath({str(ran)!r}).touch()\nX = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazymod_probe", raising=False)
    mod = lazy_module("lazymod_probe")
    assert sys.modules["lazymod_probe"] is mod
    assert not ran.exists()
    assert mod.X == 42
    assert ran.exists()
    assert lazy_module("lazymod_probe") is mod
    monkeypatch.delitem(sys.modules, "lazymod_probe")


def test_an_imported_module_is_returned_as_it_is() -> None:
    assert lazy_module("json") is __import__("json")


def test_a_missing_module_is_refused() -> None:
    with pytest.raises(ModuleNotFoundError, match="no_such_module_xyz"):
        lazy_module("no_such_module_xyz")
