"""The error hierarchy of aifabric.

Bad arguments to a function raise :class:`ValueError` naming the value. Modelling failures raise a
subclass of :class:`AifabricError`, chained ``from err`` where they wrap another exception. The CLI turns
every ``AifabricError`` and ``ValueError`` into one line on stderr and exit code 2.
"""

from __future__ import annotations

__all__ = ["AifabricError", "ConfigError", "Infeasible", "NoRoute", "ParseError", "UnitError"]


class AifabricError(Exception):
    """Base class of every modelling failure aifabric raises on purpose."""


class ConfigError(AifabricError, ValueError):
    """A cluster, model or layout description is invalid; the message names the field and the value."""


class UnitError(ConfigError):
    """A quantity string cannot be read, or its unit is implausible for the field (bits vs bytes)."""


class NoRoute(AifabricError):
    """Two endpoints that must talk have no path between them (e.g. after failures)."""


class Infeasible(AifabricError):
    """A layout or plan cannot run: it does not fit in memory, or its degrees do not divide."""


class ParseError(AifabricError, ValueError):
    """A text input (topology matrix, XML, nccl-tests log, YAML) cannot be read.

    Parameters
    ----------
    message : str
        What is wrong.
    line : int, optional
        1-based line number in the input where the problem was found.
    source : str, optional
        File name or description of the input.
    """

    def __init__(self, message: str, *, line: int | None = None, source: str | None = None) -> None:
        where = ""
        if source:
            where += f"{source}"
        if line is not None:
            where += f"{':' if where else 'line '}{line}"
        super().__init__(f"{where}: {message}" if where else message)
        self.line = line
        self.source = source
