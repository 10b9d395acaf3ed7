"""Modules loaded on first use, for start-up time.

numpy costs 70-100 ms to import, a fifth of ``aifabric collective``'s whole run, and the formula engine
and the log parsers never call it; the collectives modules that build transfer plans (numpy arrays) bind
``np`` to :func:`lazy_module` ``("numpy")`` so that numpy loads only when a plan is built.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["lazy_module"]


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, executed when one of its attributes is first read.

    The module object is put in ``sys.modules`` at once (a later ``import name`` gets the same object);
    :class:`importlib.util.LazyLoader` runs its code on the first attribute access. A module already
    imported is returned as it is.

    Raises
    ------
    ModuleNotFoundError
        If there is no module ``name``.
    """
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
