"""Design-space grids: a base cluster, fields to vary, and the collectives to time at every point.

A sweep file (YAML)::

    cluster: dgx-h100-superpod          # preset or cluster YAML
    vary:                               # dotted ClusterSpec fields -> values; the grid is their product
      nodes: [16, 64, 256]
      scale_out.nic: [connectx-7, connectx-8]
      scale_out.oversubscription: [[1], [2]]
    collectives:
      - {op: all_reduce, sizes: ["1 MiB", "1 GiB"]}
      - {op: all_to_all, sizes: ["64 MiB"]}

Every point gets a stable key (its parameters as sorted JSON), so a sweep can resume where it stopped.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aifabric.cluster.spec import check_field_path
from aifabric.collectives.ops import Collective
from aifabric.errors import ConfigError
from aifabric.inputs import load_yaml_mapping
from aifabric.units import one_size

__all__ = ["SweepPoint", "SweepSpec", "load_sweep"]


@dataclass(frozen=True)
class SweepPoint:
    """One cluster variant and one collective size to time there."""

    cluster: str
    changes: tuple[tuple[str, Any], ...]
    op: str
    message_bytes: float

    @property
    def key(self) -> str:
        """Stable identity of the point (sorted JSON of its parameters)."""
        return json.dumps(
            {"cluster": self.cluster, **dict(self.changes), "op": self.op, "bytes": self.message_bytes},
            sort_keys=True,
        )


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: the base cluster, the grid of changes and the collectives."""

    cluster: str
    vary: tuple[tuple[str, tuple[Any, ...]], ...]
    collectives: tuple[tuple[str, tuple[float, ...]], ...]

    def points(self) -> list[SweepPoint]:
        """Every (grid point, collective, size), grid-major."""
        names = [k for k, _ in self.vary]
        out: list[SweepPoint] = []
        for values in itertools.product(*(v for _, v in self.vary)) if self.vary else [()]:
            changes = tuple(zip(names, values, strict=True))
            for op, sizes in self.collectives:
                out.extend(SweepPoint(self.cluster, changes, op, s) for s in sizes)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "sweep") -> SweepSpec:
        """Validate a mapping; raises ConfigError naming the field and the value."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping at the top level")
        unknown = sorted(set(data) - {"cluster", "vary", "collectives"})
        if unknown:
            raise ConfigError(
                f"{source}: unknown field(s) {', '.join(unknown)}; known: cluster, vary, collectives"
            )
        cluster = data.get("cluster")
        if not isinstance(cluster, str) or not cluster:
            raise ConfigError(f"{source}: cluster: give a preset name or a cluster YAML path")
        vary_raw = data.get("vary") or {}
        if not isinstance(vary_raw, dict):
            raise ConfigError(f"{source}: vary: expected a mapping of field -> list of values")
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
            vary.append((field, tuple(_value(v, f"{source}: vary.{field}") for v in values)))
        colls_raw = data.get("collectives") or [{"op": "all_reduce", "sizes": ["1 GiB"]}]
        if not isinstance(colls_raw, list):
            raise ConfigError(f"{source}: collectives: expected a list of {{op, sizes}}")
        colls = []
        for i, c in enumerate(colls_raw):
            if not isinstance(c, dict) or not isinstance(c.get("op"), str):
                raise ConfigError(f"{source}: collectives[{i}]: expected {{op: <name>, sizes: [...]}}")
            op = Collective.parse(c["op"]).value
            sizes = c.get("sizes") or ["1 GiB"]
            if not isinstance(sizes, list) or not all(_scalar(x) and x is not None for x in sizes):
                raise ConfigError(
                    f"{source}: collectives[{i}].sizes: expected a list of sizes, got {sizes!r}"
                )
            colls.append((op, tuple(one_size(str(s), f"collectives[{i}].sizes") for s in sizes)))
        return cls(cluster, tuple(vary), tuple(colls))


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def _value(v: Any, where: str) -> Any:
    """A vary value: a scalar, or a list of scalars (a tuple field such as oversubscription) as a tuple."""
    if _scalar(v):
        return v
    if isinstance(v, list) and all(_scalar(x) for x in v):
        return tuple(v)
    raise ConfigError(f"{where}: {v!r} is not a value (a number, a string, or a list of them)")


def load_sweep(path: str | Path) -> SweepSpec:
    """Read a sweep YAML file. Raises ParseError/ConfigError naming the file."""
    p = Path(path)
    return SweepSpec.from_dict(load_yaml_mapping(p), source=str(p))
