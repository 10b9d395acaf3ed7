"""The package's own YAML files (catalogue, presets, training tables), read fast at every start-up.

These files ship with aifabric; they are not user input (user files go through :mod:`aifabric.inputs`, with
its limits). Two things keep them off the start-up bill:

- libyaml: PyYAML's ``CSafeLoader`` where PyYAML was built with it, about 8x faster than the pure-Python
  loader (``nccl_releases.yaml``, 80 kB, took 0.2 s with the limited pure-Python loader; 32 ms with libyaml).
- a parse cache: the parsed value of each file is kept as JSON in :func:`cache_dir`, one entry per file
  of each installed copy of the package (so the folder does not grow with edits or upgrades), stamped
  with the SHA-256 of the file's text, the loader and PyYAML's version: an edited file (or a new PyYAML)
  is parsed afresh and its entry replaced; an unchanged one costs one small ``json.loads`` (about 1 ms for
  ``nccl_releases.yaml``). A value JSON cannot hold exactly (non-string keys, dates, NaN) is never cached.
  The cache is only a speed-up: a folder that cannot be read or written, or an unreadable entry, means
  the file is parsed as before.

Every shipped file also passes the limited loader of :mod:`aifabric.inputs` with the same values
(tests/test_shipped_yaml.py), so a shipped file cannot carry what a user file may not.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from aifabric.errors import ParseError

__all__ = ["CACHE_DIR_ENV", "cache_dir", "load_package_yaml"]

#: Environment variable naming the parse cache's folder; set to an empty string to turn the cache off.
CACHE_DIR_ENV = "AIFABRIC_CACHE_DIR"
#: Largest cache entry read, bytes (the biggest, ``nccl_releases.yaml``'s, is about 60 kB).
_MAX_ENTRY_BYTES = 16 * 2**20
#: libyaml's safe loader if PyYAML has it, else the pure-Python one (same values, ``yaml.safe_load``).
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def cache_dir() -> Path | None:
    """The parse cache's folder: ``$AIFABRIC_CACHE_DIR``, else ``$XDG_CACHE_HOME/aifabric/yaml``, else
    ``~/.cache/aifabric/yaml``; None (no cache) when ``$AIFABRIC_CACHE_DIR`` is set empty or there is no
    home folder."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit is not None:
        return Path(explicit) if explicit.strip() else None
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no home folder to be found: no cache
            return None
    return Path(base) / "aifabric" / "yaml"


def load_package_yaml(package: str, resource: str) -> Any:
    """The parsed value of the shipped YAML file ``resource`` of ``package``.

    Parameters
    ----------
    package : str
        The package holding the file, ``"aifabric.catalog"``.
    resource : str
        Its path inside the package, ``"data/nics.yaml"``.

    Returns
    -------
    Any
        What ``yaml.safe_load`` returns for the file (from the parse cache when it has it).

    Raises
    ------
    ParseError
        If the file is not YAML (a broken package), naming the file and the line.
    """
    path = resources.files(package).joinpath(resource)
    text = path.read_text(encoding="utf-8")
    stamp = hashlib.sha256(f"{yaml.__version__}\0{_LOADER.__name__}\0{text}".encode()).hexdigest()
    entry = _entry(str(path))
    cached = _read(entry, stamp)
    if cached is not None:
        return cached
    source = f"{package.removeprefix('aifabric.').replace('.', '/')}/{resource}"
    try:
        data = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ParseError(f"malformed YAML: {problem}", line=line, source=source) from err
    _write(entry, stamp, data)
    return data


def _entry(location: str) -> Path | None:
    """The cache entry of the file at ``location``, or None without a cache."""
    folder = cache_dir()
    if folder is None:
        return None
    return folder / f"{hashlib.sha256(location.encode()).hexdigest()[:32]}.json"


def _read(entry: Path | None, stamp: str) -> Any:
    """The cached value if the entry carries ``stamp``; None when there is none, it is stale or it cannot
    be read (the file is then parsed again)."""
    if entry is None:
        return None
    try:
        with entry.open("rb") as fh:
            raw = fh.read(_MAX_ENTRY_BYTES + 1)
        if len(raw) > _MAX_ENTRY_BYTES:
            return None
        cached = json.loads(raw)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(cached, dict) or cached.get("stamp") != stamp or "value" not in cached:
        return None
    return cached["value"]


def _write(entry: Path | None, stamp: str, data: Any) -> None:
    """Cache ``data`` as JSON if JSON gives it back exactly; written to a temporary file, then renamed into
    place, so that a concurrent reader sees a whole entry or none. Any failure leaves the entry as it was."""
    if entry is None:
        return
    try:
        value = json.dumps(data, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError):  # a date, a NaN: not JSON
        return
    if json.loads(value) != data:  # non-string keys would come back as strings
        return
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(f'{{"stamp":"{stamp}","value":{value}}}')
            os.replace(tmp, entry)
        except OSError:
            os.unlink(tmp)
            raise
    except OSError:
        return
