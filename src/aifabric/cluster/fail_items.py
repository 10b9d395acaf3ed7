"""The one reading of ``--fail``: items ``KIND:ARG``, comma-separated, in one value or several (a repeated
option), for the back-end fabric (:func:`aifabric.engines.failures.parse_failures`: ``spine:3``,
``fabric:5%``, ``link:120``) and the management network
(:func:`aifabric.cluster.management.management_reachability`: ``mgmt-rack:0``, ``leaf:*``).

Each reader says which kinds it knows and reads ``ARG`` itself; the splitting, and the refusal of an empty
value, an empty item, an item without ``:`` or an unknown kind, happen here, once, with the same words.
"""

from __future__ import annotations

from collections.abc import Iterable

from aifabric.errors import ConfigError

__all__ = ["fail_items"]


def fail_items(values: str | Iterable[str] | None, kinds: Iterable[str]) -> list[tuple[str, str]]:
    """``(KIND, ARG)`` of every item of ``values``, in order; None (or no value) is no failure.

    Parameters
    ----------
    values : str or iterable of str or None
        One ``--fail`` value, or the values of a repeated ``--fail``; each holds comma-separated items.
    kinds : iterable of str
        The kinds the reader knows; another kind is refused, naming them.

    Raises
    ------
    ConfigError
        Naming ``--fail`` and the value: an empty value or item, an item without ``KIND:ARG``, an unknown
        kind.

    Examples
    --------
    >>> fail_items("spine:3, fabric:5%", ("spine", "fabric"))
    [('spine', '3'), ('fabric', '5%')]
    >>> fail_items(["leaf:0", "leaf:*"], ("leaf",))
    [('leaf', '0'), ('leaf', '*')]
    >>> fail_items("", ("leaf",))
    Traceback (most recent call last):
    ...
    aifabric.errors.ConfigError: --fail: empty value ''; give KIND:ARG items (KIND: leaf), e.g. 'leaf:0'
    """
    known = tuple(kinds)
    out: list[tuple[str, str]] = []
    for value in [values] if isinstance(values, str) else values or ():
        if not value.strip():
            raise ConfigError(
                f"--fail: empty value {value!r}; give KIND:ARG items (KIND: {', '.join(known)}), "
                f"e.g. '{known[0]}:0'"
            )
        out.extend(_item(item.strip(), value, known) for item in value.split(","))
    return out


def _item(item: str, value: str, known: tuple[str, ...]) -> tuple[str, str]:
    """``(KIND, ARG)`` of one item of ``value``."""
    kind, colon, arg = item.partition(":")
    kind, arg = kind.strip(), arg.strip()
    if not item:
        raise ConfigError(f"--fail: empty item in {value!r}; items are comma-separated KIND:ARG")
    if kind not in known:
        raise ConfigError(f"--fail: unknown failure kind {kind!r} in {item!r}; use {', '.join(known)}")
    if not colon or not arg:
        raise ConfigError(f"--fail: cannot read {item!r}; write it KIND:ARG, e.g. '{kind}:0'")
    return kind, arg
