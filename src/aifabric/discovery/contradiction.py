"""A log that contradicts itself: measured far above what its own settings and NCCL INFO lines allow.

Some facts a log states lower the prediction: ``NCCL_P2P_DISABLE=1`` (GPUs of a node through host memory),
``NCCL_NET_GDR_LEVEL=LOC`` (no GPUDirect RDMA), ``Using network Socket`` (TCP at ~0.55 of line rate),
``NVLS multicast support is not available`` (the ring figure instead of NVLS's). NCCL may not apply a
setting (a variable exported on the launching host only, a container that resets the environment) and a
pasted INFO line may come from another run, so a large-message plateau measured well above the prediction
those facts give is not healthy: the log contradicts itself. :func:`find_contradiction` removes each fact
in turn and keeps the one whose removal brings the large-message rows closest to the measurement -- the
line the measurement disproves -- when it does bring them back within the comparison's threshold.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aifabric.discovery.nccl_env import ENGINE_VARIABLES
from aifabric.discovery.nccl_info import Evidence

if TYPE_CHECKING:  # typing only: compare imports this module
    from aifabric.discovery.compare import TableComparison

__all__ = ["Contradiction", "find_contradiction"]

_NVLS = ("nvls", "nvls_tree")


@dataclass(frozen=True)
class Contradiction:
    """The fact of the log the measurement disproves.

    Attributes
    ----------
    fact : str
        The fact in words (``NCCL_P2P_DISABLE=1``, ``NET/Socket``, ``NVLS multicast not available``).
    evidence : tuple of Evidence
        The log lines that state it.
    measured_bytes_per_s, with_fact_bytes_per_s, without_fact_bytes_per_s : float
        Busbw of the largest row: measured, predicted with the fact, predicted without it (bytes/s).
    rows : int
        Large-message rows compared.
    """

    fact: str
    evidence: tuple[Evidence, ...]
    measured_bytes_per_s: float
    with_fact_bytes_per_s: float
    without_fact_bytes_per_s: float
    rows: int

    def describe(self) -> str:
        """The facts in words, busbw in GB/s."""
        where = ", ".join(f"line {e.line}" for e in self.evidence) or "the log"
        return (
            f"{self.fact} ({where}) allows {self.with_fact_bytes_per_s / 1e9:.0f} GB/s busbw but the run "
            f"measured {self.measured_bytes_per_s / 1e9:.0f}; without it the model gives "
            f"{self.without_fact_bytes_per_s / 1e9:.0f}"
        )


def _without_variable(name: str) -> Callable[[TableComparison], TableComparison]:
    def drop(comp: TableComparison) -> TableComparison:
        s = comp.settings
        env = {k: v for k, v in s.env.items() if k != name}
        return dataclasses.replace(comp, settings=dataclasses.replace(s, env=env, notes=()))

    return drop


def _with_nvls(comp: TableComparison) -> TableComparison:
    s = comp.settings
    exclude = tuple(a for a in s.exclude if a not in _NVLS)
    return dataclasses.replace(comp, settings=dataclasses.replace(s, exclude=exclude, notes=()))


def _without_transport(comp: TableComparison) -> TableComparison:
    return dataclasses.replace(comp, net=None)


def _facts(
    comp: TableComparison, sources: dict[str, Evidence]
) -> list[tuple[str, tuple[Evidence, ...], Callable[[TableComparison], TableComparison]]]:
    """The facts of the log that lower the prediction: (words, lines, the comparison without the fact)."""
    out: list[tuple[str, tuple[Evidence, ...], Callable[[TableComparison], TableComparison]]] = []
    for name, value in comp.settings.engine_env.items():
        if name in ENGINE_VARIABLES and name in sources:
            out.append((f"{name}={value}", (sources[name],), _without_variable(name)))
    nvls_lines = comp.info.lines("nvls") if comp.info.nvls_available is False else ()
    if "NCCL_NVLS_ENABLE" in sources and any(a in comp.settings.exclude for a in _NVLS):
        out.append((f"NCCL_NVLS_ENABLE={comp.settings.env['NCCL_NVLS_ENABLE']}",
                    (sources["NCCL_NVLS_ENABLE"],), _with_nvls))  # fmt: skip
    elif nvls_lines and any(a in comp.settings.exclude for a in _NVLS):
        out.append(("NVLS multicast not available", nvls_lines, _with_nvls))
    if comp.net is not None:
        out.append((comp.net.nccl_name, comp.info.lines("network"), _without_transport))
    return out


def _median_deviation(comp: TableComparison, rows: list[tuple[int, float]]) -> float:
    """Median of ``predicted time / measured time - 1`` over ``rows`` ((size, measured time))."""
    devs = sorted(comp.predict(size).time_s / measured - 1.0 for size, measured in rows)
    mid = len(devs) // 2
    return devs[mid] if len(devs) % 2 else 0.5 * (devs[mid - 1] + devs[mid])


def find_contradiction(comp: TableComparison, sources: dict[str, Evidence]) -> Contradiction | None:
    """The fact the measurement disproves, or None.

    A table contradicts its log when the median deviation of its large-message rows
    (:attr:`~aifabric.discovery.compare.TableComparison.large_deviation`) is above ``+threshold`` and
    removing one fact that lowers the prediction (:func:`_facts`) brings that median within
    ``+-threshold``; of several, the one that brings it closest.

    Parameters
    ----------
    comp : TableComparison
        The compared table.
    sources : dict
        Variable name -> the line it was read from (:func:`~aifabric.discovery.nccl_env.setting_lines`).
    """
    if comp.large_deviation <= comp.threshold:
        return None
    rows = [(r.size_bytes, r.measured_time_s) for r in comp.large_rows]
    best: tuple[float, str, tuple[Evidence, ...], TableComparison] | None = None
    for fact, lines, without in _facts(comp, sources):
        other = without(comp)
        deviation = abs(_median_deviation(other, rows))
        if deviation <= comp.threshold and (best is None or deviation < best[0]):
            best = (deviation, fact, lines, other)
    if best is None:
        return None
    _, fact, lines, other = best
    big = max(comp.large_rows, key=lambda r: r.size_bytes)
    return Contradiction(fact, lines, big.measured_busbw_bytes_per_s, big.predicted_busbw_bytes_per_s,
                         other.predict(big.size_bytes).busbw_bytes_per_s, len(rows))  # fmt: skip
