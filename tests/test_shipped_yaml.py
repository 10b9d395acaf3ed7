"""The package's own YAML (catalogue, presets) is read with libyaml for start-up speed
(:func:`aifabric.inputs.load_package_yaml`); every shipped file must also pass the limited loader user files
go through (no duplicate key, no non-finite number, no alias bomb) and give the same values."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aifabric import inputs
from aifabric.errors import ParseError
from aifabric.inputs import load_package_yaml, load_yaml_text

SRC = Path(__file__).resolve().parents[1] / "src"
SHIPPED = sorted(SRC.joinpath("aifabric").rglob("*.yaml"))


def _package_and_resource(path: Path) -> tuple[str, str]:
    """``src/aifabric/catalog/data/nics.yaml`` -> (``aifabric.catalog``, ``data/nics.yaml``): the nearest
    folder above the file that is a package."""
    folder = path.parent
    while not (folder / "__init__.py").exists():
        folder = folder.parent
    package = ".".join(folder.relative_to(SRC).parts)
    return package, path.relative_to(folder).as_posix()


def test_there_are_shipped_files() -> None:
    names = {p.name for p in SHIPPED}
    assert {"nccl_releases.yaml", "accelerators.yaml", "dgx-h100-superpod.yaml", "models.yaml"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=[p.relative_to(SRC).as_posix() for p in SHIPPED])
def test_shipped_file_passes_the_user_file_limits_with_the_same_values(path: Path) -> None:
    package, resource = _package_and_resource(path)
    strict = load_yaml_text(path.read_text(encoding="utf-8"), str(path))
    assert load_package_yaml(package, resource) == strict


def test_libyaml_is_used_where_pyyaml_has_it() -> None:
    expected = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    assert expected is inputs._PACKAGE_LOADER


def test_a_broken_package_file_names_the_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.yaml").write_text("a: 1\nb: [1, 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ParseError, match=r"^fakepkg/bad\.yaml:3: malformed YAML: .*expected ',' or ']'"):
        load_package_yaml("fakepkg", "bad.yaml")
