"""Cluster presets: ClusterSpecs for the systems named in our sources, shipped as YAML data."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError

__all__ = ["list_presets", "preset"]


def list_presets() -> list[str]:
    """Names of the built-in presets."""
    files = resources.files("aifabric.cluster.presets").iterdir()
    return sorted(f.name.removesuffix(".yaml") for f in files if f.name.endswith(".yaml"))


def preset(name: str, *, nodes: int | None = None, gpus: int | None = None, **changes: Any) -> ClusterSpec:
    """The preset ``name``, optionally resized to ``nodes`` or ``gpus``, with dotted ``changes``.

    Raises
    ------
    ConfigError
        If ``name`` is not a preset (the message lists them) or the resized cluster is invalid.

    Examples
    --------
    >>> preset("dgx-h100-superpod", nodes=128).n_gpus
    1024
    """
    names = list_presets()
    if name not in names:
        raise ConfigError(f"preset: unknown preset {name!r}; known: {', '.join(names)}")
    text = resources.files("aifabric.cluster.presets").joinpath(f"{name}.yaml").read_text()
    data = yaml.safe_load(text)
    if nodes is not None or gpus is not None:
        data.pop("nodes", None)
        data.pop("gpus", None)
        if nodes is not None:
            data["nodes"] = nodes
        if gpus is not None:
            data["gpus"] = gpus
    spec = ClusterSpec.from_dict(data, source=f"preset {name}")
    return spec.with_changes(**changes) if changes else spec
