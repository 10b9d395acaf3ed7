"""Design-space grids: a base cluster, fields to vary, and the collectives to time at every point.

A sweep file (YAML)::

    cluster: dgx-h100-superpod          # preset or cluster YAML (a relative path: beside this file)
    vary:                               # dotted ClusterSpec fields -> values; the grid is their product
      nodes: [16, 64, 256]
      scale_out.nic: [connectx-7, connectx-8]
      scale_out.oversubscription: [[1], [2]]
    collectives:
      - {op: all_reduce, sizes: ["1 MiB", "1 GiB"]}
      - {op: all_to_all, sizes: ["64 MiB"]}
    train:                              # optional: training steps at every grid point
      models: [megatron-gpt-39.1b]
      layouts: [{tp: 8, pp: 2, microbatch: 4}, {tp: 4, pp: 4, microbatch: 2}]
      global_batch: 1536                # sequences per step (default 1536)

A file needs ``collectives`` or ``train`` (or both), and every collective a non-empty ``sizes`` list; a
size listed twice is timed once. The cluster must resolve and every vary value must have its field's type
and bounds and pass the field's own validation (``nodes: ["abc"]``, ``nodes: [0]``, an unknown part name
``scale_out.nic: [connectx-8x]`` and ``scale_out.oversubscription: [[-2]]`` are refused before any
evaluation); a variant of valid values that cannot be built is stored with its error. A training point's
``op`` is ``train:<model>`` and its ``message_bytes`` 0. Every point gets a stable key (its parameters as
sorted JSON, a cluster file's content hash among them), so a sweep can resume where it stopped and an
edited cluster file is evaluated anew. The grid is counted (:attr:`SweepSpec.n_points`) without being
expanded; :meth:`SweepSpec.iter_points` yields lazily.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel, TypeAdapter, ValidationError

from aifabric.cluster.presets import list_presets
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.spec import ClusterSpec, check_field_path
from aifabric.collectives.ops import Collective
from aifabric.errors import AifabricError, ConfigError
from aifabric.inputs import load_yaml_mapping
from aifabric.training.models import get_model
from aifabric.units import one_size

__all__ = ["LAYOUT_KEYS", "SweepPoint", "SweepSpec", "load_sweep"]


@dataclass(frozen=True)
class SweepPoint:
    """One cluster variant and one collective size to time there."""

    cluster: str
    changes: tuple[tuple[str, Any], ...]
    op: str
    message_bytes: float
    train: tuple[tuple[str, Any], ...] = ()
    cluster_sha256: str = ""
    cluster_path: str = ""

    @property
    def source(self) -> str:
        """What builds the cluster: the preset name, or the cluster file's path from here (``cluster`` as
        the sweep file wrote it is the point's key and column; ``cluster_path`` found it beside the file)."""
        return self.cluster_path or self.cluster

    @property
    def params(self) -> dict[str, Any]:
        """The point's parameters (a training point's model and layout under ``train``; a cluster file's
        content hash under ``cluster_sha256``, so an edited file is a new design, not a resumed one)."""
        out = {"cluster": self.cluster, **dict(self.changes), "op": self.op, "bytes": self.message_bytes}
        if self.train:
            out["train"] = dict(self.train)
        if self.cluster_sha256:
            out["cluster_sha256"] = self.cluster_sha256
        return out

    @property
    def key(self) -> str:
        """Stable identity of the point (sorted JSON of its parameters)."""
        return json.dumps(self.params, sort_keys=True)


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: the base cluster, the grid of changes and the collectives."""

    cluster: str
    vary: tuple[tuple[str, tuple[Any, ...]], ...]
    collectives: tuple[tuple[str, tuple[float, ...]], ...]
    train: tuple[tuple[tuple[str, Any], ...], ...] = ()
    cluster_sha256: str = ""
    cluster_path: str = ""

    @property
    def source(self) -> str:
        """The preset name, or the cluster file's path from here (:attr:`SweepPoint.source`)."""
        return self.cluster_path or self.cluster

    @property
    def n_points(self) -> int:
        """Points of the grid, counted without expanding it: the product of the vary lists' lengths times
        (the collectives' sizes + the training jobs)."""
        per_variant = sum(len(sizes) for _, sizes in self.collectives) + len(self.train)
        return math.prod(len(v) for _, v in self.vary) * per_variant

    def points(self) -> list[SweepPoint]:
        """Every point of :meth:`iter_points` in a list (count them first: :attr:`n_points`)."""
        return list(self.iter_points())

    def iter_points(self) -> Iterator[SweepPoint]:
        """Every (grid point, collective, size), then every (grid point, model, layout), grid-major; lazily,
        one point at a time (:attr:`n_points` of them)."""
        names = [k for k, _ in self.vary]
        c, digest, path = self.cluster, self.cluster_sha256, self.cluster_path
        for values in itertools.product(*(v for _, v in self.vary)):
            changes = tuple(zip(names, values, strict=True))
            for op, sizes in self.collectives:
                yield from (SweepPoint(c, changes, op, s, (), digest, path) for s in sizes)
            yield from (
                SweepPoint(c, changes, f"train:{dict(t)['model']}", 0.0, t, digest, path) for t in self.train
            )

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, source: str = "sweep", folder: Path | None = None
    ) -> SweepSpec:
        """Validate a mapping; raises ConfigError naming the field and the value. A relative cluster file
        path is read from ``folder`` (the sweep file's), where given."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping at the top level")
        unknown = sorted(set(data) - {"cluster", "vary", "collectives", "train"})
        if unknown:
            raise ConfigError(
                f"{source}: unknown field(s) {', '.join(unknown)}; known: cluster, vary, collectives, train"
            )
        cluster = data.get("cluster")
        if not isinstance(cluster, str) or not cluster:
            raise ConfigError(f"{source}: cluster: give a preset name or a cluster YAML path")
        vary_raw = data.get("vary") or {}
        if not isinstance(vary_raw, dict):
            raise ConfigError(f"{source}: vary: expected a mapping of field -> list of values")
        path = _beside(cluster, folder)
        base = _base_cluster(path, f"{source}: cluster: {cluster!r}")
        vary = []
        for field, values in vary_raw.items():
            if not isinstance(field, str) or not field:
                raise ConfigError(f"{source}: vary: {field!r} is not a field name (e.g. scale_out.nic)")
            try:
                check_field_path(field)
            except ConfigError as err:
                raise ConfigError(f"{source}: vary.{err}") from None
            if not isinstance(values, list) or not values:
                raise ConfigError(
                    f"{source}: vary.{field}: expected a non-empty list of values, got {values!r}"
                )
            checked = tuple(_value(v, f"{source}: vary.{field}") for v in values)
            for j, v in enumerate(checked):
                _check_type(field, v, f"{source}: vary.{field}[{j}]")
                _check_alone(base, field, v, f"{source}: vary.{field}[{j}]")
            vary.append((field, tuple(dict.fromkeys(checked))))  # a value listed twice runs once
        train = _train(data.get("train"), source)
        if data.get("collectives") is None and not train:
            raise ConfigError(f"{source}: give collectives or train (or both); neither is in the file")
        colls_raw = data.get("collectives", [])
        if not isinstance(colls_raw, list) or (not colls_raw and not train):
            raise ConfigError(f"{source}: collectives: expected a non-empty list of {{op, sizes}}")
        colls: dict[str, dict[float, None]] = {}  # op -> its sizes, in order, each once
        for i, c in enumerate(colls_raw):
            where = f"{source}: collectives[{i}]"
            if not isinstance(c, dict) or not isinstance(c.get("op"), str):
                raise ConfigError(f"{where}: expected {{op: <name>, sizes: [...]}}")
            unknown = sorted(map(str, set(c) - {"op", "sizes"}))
            if unknown:
                raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}; known: op, sizes")
            op = Collective.parse(c["op"]).value
            sizes = c.get("sizes")
            if not isinstance(sizes, list) or not sizes:
                raise ConfigError(f"{where}.sizes: expected a non-empty list of sizes, got {sizes!r}")
            if not all(_scalar(x) and x is not None for x in sizes):
                raise ConfigError(f"{where}.sizes: expected a list of sizes, got {sizes!r}")
            for s in sizes:
                colls.setdefault(op, {})[one_size(str(s), f"collectives[{i}].sizes")] = None
        coll_sizes = tuple((op, tuple(s)) for op, s in colls.items())
        return cls(
            cluster, tuple(vary), coll_sizes, train, _file_sha256(path), "" if path == cluster else path
        )


def _beside(cluster: str, folder: Path | None) -> str:
    """``cluster`` as a path from here: a relative cluster file path read from ``folder`` (the sweep
    file's), so that one sweep file names one cluster wherever it runs; a preset name, an absolute path or
    a name that is no file there stays as written."""
    if folder is None or cluster in list_presets() or Path(cluster).is_absolute():
        return cluster
    beside = folder / cluster
    looks_like_a_file = Path(cluster).suffix in (".yaml", ".yml") or beside.exists()
    return str(beside) if looks_like_a_file else cluster


def _base_cluster(path: str, where: str) -> ClusterSpec:
    """The sweep's base cluster; ConfigError prefixed with ``where`` when it does not resolve."""
    try:
        return resolve_cluster(path)
    except (AifabricError, ValueError) as err:
        raise ConfigError(f"{where}: {err}") from None


def _file_sha256(cluster: str) -> str:
    """SHA-256 of a cluster YAML file's bytes ("" for a preset name): the points of an edited file get new
    keys, so a rerun evaluates the new design instead of resuming the old one's results."""
    if cluster in list_presets():
        return ""
    path = Path(cluster)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


#: Layout keys of a sweep's ``train.layouts`` entries (each an integer >= 1): the degrees and microbatch.
LAYOUT_KEYS = ("tp", "pp", "dp", "cp", "ep", "microbatch")


def _train(raw: Any, source: str) -> tuple[tuple[tuple[str, Any], ...], ...]:
    """The training jobs of ``train:`` (model x layout), each as sorted ``(key, value)`` pairs."""
    if raw is None:
        return ()
    where = f"{source}: train"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping with models, layouts, global_batch")
    unknown = sorted(set(raw) - {"models", "layouts", "global_batch"})
    if unknown:
        raise ConfigError(
            f"{where}: unknown field(s) {', '.join(map(str, unknown))}; known: models, layouts, global_batch"
        )
    models = raw.get("models")
    if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
        raise ConfigError(f"{where}.models: expected a non-empty list of model names, got {models!r}")
    for i, m in enumerate(models):
        try:
            get_model(m)
        except (AifabricError, ValueError, KeyError) as err:
            raise ConfigError(f"{where}.models[{i}]: {err}") from None
    batch = raw.get("global_batch", 1536)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"{where}.global_batch: expected an integer >= 1, got {batch!r}")
    layouts = raw.get("layouts") or [{}]
    if not isinstance(layouts, list):
        raise ConfigError(f"{where}.layouts: expected a list of {{tp, pp, dp, cp, ep, microbatch}}")
    checked = []
    for i, lay in enumerate(layouts):
        if not isinstance(lay, dict) or set(lay) - set(LAYOUT_KEYS):
            raise ConfigError(
                f"{where}.layouts[{i}]: expected a mapping of {', '.join(LAYOUT_KEYS)}, got {lay!r}"
            )
        for k, v in lay.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"{where}.layouts[{i}].{k}: expected an integer >= 1, got {v!r}")
        checked.append(lay)
    return tuple(
        tuple(sorted({"model": m, "global_batch": batch, **lay}.items())) for m in models for lay in checked
    )


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def _value(v: Any, where: str) -> Any:
    """A vary value: a scalar, or a list of scalars (a tuple field such as oversubscription) as a tuple."""
    if _scalar(v):
        return v
    if isinstance(v, list) and all(_scalar(x) for x in v):
        return tuple(v)
    raise ConfigError(f"{where}: {v!r} is not a value (a number, a string, or a list of them)")


#: Field types whose values :func:`_check_type` checks in the file (other fields, e.g. sizes with units and
#: ratio tuples, go through their model's own parsing when the variant is built).
_PLAIN = (int, str, bool)


def _field_info(field: str) -> Any:
    """The pydantic FieldInfo of dotted ClusterSpec ``field`` (YAML names), or None for a field with an
    alias."""
    model: Any = ClusterSpec
    info = None
    for part in field.split("."):
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        info = model.model_fields.get(part)
        if info is None:
            return None  # an aliased field (a size with a unit): checked when the variant is built
        args = [a for a in typing.get_args(info.annotation) or (info.annotation,) if a is not type(None)]
        model = next((a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), None)
    return info


@functools.lru_cache(maxsize=256)
def _adapter(field: str) -> TypeAdapter[Any] | None:
    """A validator of the type and bounds (``nodes >= 1``) of the plain (int, str, bool, literal) ``field``;
    None for other fields."""
    info = _field_info(field)
    if info is None:
        return None
    ann = info.annotation
    union = isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union
    kinds = [a for a in (typing.get_args(ann) if union else (ann,)) if a is not type(None)]
    kinds = [typing.get_args(k)[0] if typing.get_origin(k) is typing.Annotated else k for k in kinds]  # Int
    if not all(k in _PLAIN or typing.get_origin(k) is typing.Literal for k in kinds):
        return None
    bounds = [m for m in info.metadata if isinstance(m, annotated_types.BaseMetadata)]  # ge=1, not validators
    return TypeAdapter(typing.Annotated[(ann, *bounds)] if bounds else ann)


def _check_type(field: str, value: Any, where: str) -> None:
    """Raise ConfigError when ``value`` has not the type of the plain (int, str, bool, literal) ``field``
    or is outside its bounds (strict: no "16" for an integer, no True for a count, no 0 nodes; None where
    the field is optional).

    Only the field itself: a well-typed value in bounds that makes an infeasible cluster is the sweep's
    result for that point.
    """
    adapter = _adapter(field)
    if adapter is None:
        return
    try:
        adapter.validate_python(value, strict=True)
    except ValidationError as err:
        reason = err.errors()[0]["msg"]
        raise ConfigError(f"{where}: {value!r} is not valid for {field} ({reason})") from None


def _check_alone(base: ClusterSpec, field: str, value: Any, where: str) -> None:
    """Raise ConfigError when ``value`` is refused by ``field``'s own validation, as in a cluster file
    (an unknown part name such as ``scale_out.nic: connectx-8x``, an impossible ratio such as
    ``scale_out.oversubscription: [-2]``), tried as the one change to the ``base`` cluster.

    Only errors located at the field itself: a value that the field accepts but that makes the base
    cluster infeasible (nine GB200 trays fill no NVL72 rack) may build with the grid's other values, and
    is otherwise the sweep's result for that point.
    """
    as_written = list(value) if isinstance(value, tuple) else value
    try:
        base.with_changes(**{field: as_written})
    except ConfigError as err:
        cause = err.__cause__
        if not isinstance(cause, ValidationError):
            return
        own = [e for e in cause.errors() if tuple(map(str, e["loc"])) == tuple(field.split("."))]
        if own:
            reason = own[0]["msg"].removeprefix("Value error, ")
            reason = reason.removeprefix(f"{field.rsplit('.', 1)[-1]}: ")  # the field is named once
            raise ConfigError(f"{where}: {as_written!r} is not valid for {field} ({reason})") from None


def load_sweep(path: str | Path) -> SweepSpec:
    """Read a sweep YAML file. Raises ParseError/ConfigError naming the file."""
    p = Path(path)
    return SweepSpec.from_dict(load_yaml_mapping(p), source=str(p), folder=p.parent)
