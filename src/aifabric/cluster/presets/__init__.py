"""Cluster presets: ClusterSpecs for the systems named in our sources, shipped as YAML data."""

from __future__ import annotations

from importlib import resources
from typing import Any

from aifabric.cluster.clos import clos_shape
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml

__all__ = ["enough_tiers", "list_presets", "preset"]


def list_presets() -> list[str]:
    """Names of the built-in presets."""
    files = resources.files("aifabric.cluster.presets").iterdir()
    return sorted(f.name.removesuffix(".yaml") for f in files if f.name.endswith(".yaml"))


def preset(name: str, /, *, nodes: int | None = None, gpus: int | None = None, **changes: Any) -> ClusterSpec:
    """The preset ``name``, optionally resized to ``nodes`` or ``gpus``, with dotted ``changes``.

    ``name`` is positional-only, so ``changes`` may rename the cluster (``**{"name": "x"}``).

    A resized preset that two tiers cannot connect is built with three (unless ``scale_out.tiers`` is
    given in ``changes``).

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
    data = load_package_yaml("aifabric.cluster.presets", f"{name}.yaml")
    if nodes is not None or gpus is not None:
        data.pop("nodes", None)
        data.pop("gpus", None)
        if nodes is not None:
            data["nodes"] = nodes
        if gpus is not None:
            data["gpus"] = gpus
    spec = ClusterSpec.from_dict(data, source=f"preset {name}")
    if changes:
        spec = spec.with_changes(**changes)
    if (nodes is not None or gpus is not None) and "scale_out.tiers" not in changes:
        spec = enough_tiers(spec)
    return spec


def enough_tiers(spec: ClusterSpec) -> ClusterSpec:
    """``spec`` grown from two to three tiers when two cannot connect it (as the reference architectures
    do: DGX SuperPOD is two-tier up to 8 scalable units, three-tier beyond): a resized preset, and a
    cluster inferred from a log of more GPUs than a two-tier Clos connects.

    Raises
    ------
    ConfigError
        If even three tiers cannot build it, or two cannot for another reason than their size (a ratio).
    """
    so = spec.scale_out
    if so is None or so.tiers >= 3 or so.topology != "clos":
        return spec
    try:
        clos_shape(spec)
    except ConfigError as err:
        if not str(err).startswith("scale_out.tiers"):
            raise  # a ratio two tiers cannot realise is not fixed by a third
        grown = spec.with_changes(**{"scale_out.tiers": 3})
        clos_shape(grown)  # raises with its own message if even three tiers cannot
        return grown
    return spec
