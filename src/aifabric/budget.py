"""Memory budget: refuse, before allocating, work that this machine cannot hold.

Builders and engines estimate the bytes they will allocate from counts alone (no allocation) and call
:func:`check_memory`; above the limit it raises :class:`~aifabric.errors.ConfigError` with the figure and
the way to raise the limit, instead of a ``MemoryError`` or the kernel's out-of-memory killer.

The limit, first found wins:

1. :func:`set_memory_limit` (the CLI's ``aifabric --max-memory 8GiB ...``);
2. the environment variable ``AIFABRIC_MAX_MEMORY`` (``"8GiB"``, ``"500 MB"``, bytes);
3. half of what the process may use: the smaller of physical memory (``sysconf``) and the address-space
   limit (``RLIMIT_AS``) when one is set. Half, because estimates are of the main arrays, not of every
   temporary, and the interpreter, libraries and the caller's own data need room too.
"""

from __future__ import annotations

import os
import resource

from aifabric.errors import ConfigError
from aifabric.units import format_bytes, parse_bytes

__all__ = ["ENV_VAR", "check_memory", "default_memory_limit", "memory_limit_bytes", "set_memory_limit"]

ENV_VAR = "AIFABRIC_MAX_MEMORY"
_explicit: float | None = None


def default_memory_limit() -> float:
    """Half of the memory this process may use (see the module docstring), bytes."""
    phys = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft > 0:
        phys = min(phys, float(soft))
    return phys / 2


def _parse_limit(value: str | float, field: str) -> float:
    out = parse_bytes(value, field=field)
    if not (0 < out < float("inf")):
        raise ConfigError(f"{field}: the memory limit must be a finite size > 0, got {value!r}")
    return out


def set_memory_limit(value: str | float | None) -> None:
    """Set (or with None, clear) the limit for this process. Raises ConfigError naming ``--max-memory``."""
    global _explicit
    _explicit = None if value is None else _parse_limit(value, "--max-memory")


def memory_limit_bytes() -> float:
    """The limit in force, bytes (see the module docstring). Raises ConfigError for a bad env value."""
    if _explicit is not None:
        return _explicit
    env = os.environ.get(ENV_VAR)
    if env:
        return _parse_limit(env, ENV_VAR)
    return default_memory_limit()


def check_memory(what: str, need_bytes: float, field: str) -> None:
    """Raise ConfigError if ``what`` needs more than the limit.

    Parameters
    ----------
    what : str
        What would be allocated ("the topology of 'x'", "routing the all_to_all").
    need_bytes : float
        The estimate, bytes.
    field : str
        The input that sets the size (``gpus``, ``--ranks``), named first in the message.
    """
    limit = memory_limit_bytes()
    if need_bytes > limit:
        raise ConfigError(
            f"{field}: {what} needs about {format_bytes(need_bytes)} of memory, above the limit of "
            f"{format_bytes(limit)}; shrink it, or raise the limit with --max-memory (e.g. "
            f"'aifabric --max-memory 64GiB ...') or {ENV_VAR}"
        )
