"""The package's own YAML (catalogue, presets) is read with libyaml and a parse cache for start-up speed
(:mod:`aifabric.package_data`); every shipped file must also pass the limited loader user files go through
(no duplicate key, no non-finite number, no alias bomb) and give the same values, and the cache must never
change a value or fail a run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from aifabric import package_data
from aifabric.errors import ParseError
from aifabric.inputs import load_yaml_text
from aifabric.package_data import CACHE_DIR_ENV, cache_dir, load_package_yaml

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
    assert load_package_yaml(package, resource) == strict  # parsed, or from the user's cache
    assert load_package_yaml(package, resource) == strict  # from the cache


def test_libyaml_is_used_where_pyyaml_has_it() -> None:
    expected = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader
    assert expected is package_data._LOADER


def test_a_broken_package_file_names_the_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.yaml").write_text("a: 1\nb: [1, 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    with pytest.raises(ParseError, match=r"^fakepkg/bad\.yaml:3: malformed YAML: .*expected ',' or ']'"):
        load_package_yaml("fakepkg", "bad.yaml")


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package ``cachepkg`` with ``a.yaml``, and the cache in ``tmp_path/cache``."""
    pkg = tmp_path / "cachepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.yaml").write_text("x: 1\ny: [1.5, 2]\nz: {k: v}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "cachepkg", raising=False)  # another test's package of that name
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    return pkg


def test_the_cache_returns_the_parsed_value_without_parsing(
    fake_package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_package_yaml("cachepkg", "a.yaml")
    assert first == {"x": 1, "y": [1.5, 2], "z": {"k": "v"}}
    assert len(list((fake_package.parent / "cache").glob("*.json"))) == 1

    def no_parse(*_: object, **__: object) -> None:
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(yaml, "load", no_parse)
    again = load_package_yaml("cachepkg", "a.yaml")
    assert again == first
    assert type(again["y"][0]) is float and type(again["x"]) is int


def test_an_edited_file_is_parsed_again_and_its_entry_replaced(fake_package: Path) -> None:
    load_package_yaml("cachepkg", "a.yaml")
    (fake_package / "a.yaml").write_text("x: 2\n")
    assert load_package_yaml("cachepkg", "a.yaml") == {"x": 2}
    assert len(list((fake_package.parent / "cache").glob("*.json"))) == 1  # one entry per file
    assert load_package_yaml("cachepkg", "a.yaml") == {"x": 2}


def test_a_broken_cache_entry_is_ignored_and_replaced(fake_package: Path) -> None:
    load_package_yaml("cachepkg", "a.yaml")
    (entry,) = (fake_package.parent / "cache").glob("*.json")
    entry.write_text('{"stamp": "')  # cut short
    assert load_package_yaml("cachepkg", "a.yaml") == {"x": 1, "y": [1.5, 2], "z": {"k": "v"}}
    assert load_package_yaml("cachepkg", "a.yaml")["z"] == {"k": "v"}


def test_what_json_cannot_hold_is_not_cached(fake_package: Path) -> None:
    (fake_package / "b.yaml").write_text("1: one\nwhen: 2024-01-02\n")  # an int key, a date
    value = load_package_yaml("cachepkg", "b.yaml")
    assert value[1] == "one"
    assert load_package_yaml("cachepkg", "b.yaml") == value
    assert list((fake_package.parent / "cache").glob("*.json")) == []


def test_an_unwritable_cache_folder_only_costs_speed(
    fake_package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_DIR_ENV, str(blocker / "cache"))  # below a file: mkdir fails
    assert load_package_yaml("cachepkg", "a.yaml")["x"] == 1


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, "")
    assert cache_dir() is None
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "aifabric" / "yaml"


def test_no_cache_when_turned_off(fake_package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, "")
    assert load_package_yaml("cachepkg", "a.yaml")["x"] == 1
    assert not (fake_package.parent / "cache").exists()
