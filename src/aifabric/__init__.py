"""aifabric: model, simulate and plan the networks of AI clusters.

The front door (:mod:`aifabric.front`) is loaded on first use, so that ``import aifabric`` (and the CLI's
start-up) stays cheap:

>>> import aifabric as af
>>> af.collective_time("all_reduce", "1 GiB", "dgx-h100-superpod", ranks=8).algorithm
'nvls'

``af.cluster`` and ``af.sweep`` share their names with the subpackages :mod:`aifabric.cluster` and
:mod:`aifabric.sweep`; Python binds a subpackage to its parent's attribute when it is imported, so those two
subpackages are made callable: ``af.cluster(...)`` calls :func:`aifabric.front.cluster` and
``af.cluster.spec`` is still the module.

>>> af.cluster("dgx-h100-superpod", nodes=4).n_gpus
32
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from aifabric.version import __version__

__all__ = ["__version__", "cluster", "collective_time", "fabric", "inspect", "plan", "sweep", "train"]

#: Front-door names that are also subpackages.
_SUBPACKAGES = frozenset({"cluster", "sweep"})

if TYPE_CHECKING:
    from aifabric.front import cluster, collective_time, fabric, inspect, plan, sweep, train


class _CallableSubpackage(types.ModuleType):
    """A subpackage whose call is the front-door function of the same name."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        front = importlib.import_module("aifabric.front")
        return getattr(front, self.__name__.rpartition(".")[2])(*args, **kwargs)


class _Package(types.ModuleType):
    """The ``aifabric`` module: makes ``cluster`` and ``sweep`` callable as Python binds them."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SUBPACKAGES and type(value) is types.ModuleType:
            value.__class__ = _CallableSubpackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
for _name in _SUBPACKAGES:  # a subpackage imported before this line ran
    if f"{__name__}.{_name}" in sys.modules:
        setattr(sys.modules[__name__], _name, sys.modules[f"{__name__}.{_name}"])


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")  # binds it callable (see _Package)
    if name in __all__:
        value = getattr(importlib.import_module("aifabric.front"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'aifabric' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
