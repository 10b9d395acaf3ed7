"""A ClusterSpec from whatever a user names: a spec, a preset name or a YAML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aifabric.cluster.presets import enough_tiers, list_presets, preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.errors import ConfigError

__all__ = ["resolve_cluster"]


def resolve_cluster(
    cluster: ClusterSpec | str | Path,
    *,
    nodes: int | None = None,
    gpus: int | None = None,
    **changes: Any,
) -> ClusterSpec:
    """A ClusterSpec from a spec, a preset name or a YAML file path, optionally resized, with dotted
    ``changes`` (``{"scale_out.oversubscription": ["7:1"]}``) applied together with the resize, so that a
    preset grown to three tiers is grown at the asked ratios, not its own.

    A YAML file that names no ``scale_out.tiers`` gets as many as its size needs: two, or three when two
    cannot connect it (the DGX SuperPOD B200 RA's component table adds the core tier at 16 SUs, exactly
    where 128 leaves outgrow 64-port spines); a file that names its tiers, or ``changes`` that do, is
    built as asked.

    Raises ConfigError for an unknown preset or a file that does not exist.
    """
    if isinstance(cluster, ClusterSpec):
        spec = cluster
        if gpus is not None:
            changes = {"gpus": gpus, "nodes": None, **changes}
        elif nodes is not None:
            changes = {"nodes": nodes, "gpus": None, **changes}
        return spec.with_changes(**changes) if changes else spec
    name = str(cluster)
    if name in list_presets():
        return preset(name, nodes=nodes, gpus=gpus, **changes)
    path = Path(name)
    try:
        exists = path.exists()
    except OSError as err:  # a name too long for the file system
        raise ConfigError(f"cluster: {err.strerror}: {name[:80]!r}...") from err
    if path.suffix in (".yaml", ".yml") or exists:
        if not exists:
            raise ConfigError(f"cluster: file {name!r} does not exist")
        spec = ClusterSpec.from_yaml(path)
        sized = resolve_cluster(spec, nodes=nodes, gpus=gpus, **changes)
        return _unnamed_tiers(spec, sized, changes)
    raise ConfigError(f"cluster: {name!r} is neither a preset ({', '.join(list_presets())}) nor a YAML file")


def _unnamed_tiers(file_spec: ClusterSpec, spec: ClusterSpec, changes: dict[str, Any]) -> ClusterSpec:
    """``spec`` with enough tiers when its file and ``changes`` leave ``scale_out.tiers`` unnamed; any
    other fault is left for the build to report, as before."""
    so = file_spec.scale_out
    if so is None or "tiers" in so.model_fields_set or "scale_out.tiers" in changes:
        return spec
    try:
        return enough_tiers(spec)
    except ConfigError:
        return spec
