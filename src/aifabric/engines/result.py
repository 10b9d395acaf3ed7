"""CollectiveResult: what a user asks of a collective's timing, whatever engine produced it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, TypeVar

__all__ = ["Candidate", "CollectiveResult", "assemble", "bottleneck"]

_D = TypeVar("_D")
_new = object.__new__
_set = object.__setattr__


def assemble(cls: type[_D], values: dict[str, Any]) -> _D:
    """``cls(**values)`` for a frozen dataclass of this module, ``values`` naming every field.

    Optimisation for the formula engine, which builds a result and its ~10 candidates on every call: the
    instance's dict is set at once instead of by the generated ``__init__``'s ``object.__setattr__`` per
    field (a fifth of the time for a :class:`CollectiveResult`). ``values`` becomes the instance's
    ``__dict__`` (the caller hands it over) and no default applies, so it must hold every field.

    Raises
    ------
    TypeError
        If ``values`` does not name exactly the fields of ``cls``.
    """
    if values.keys() != _FIELDS[cls]:
        raise TypeError(f"{cls.__name__}: fields {sorted(values)} given, {sorted(_FIELDS[cls])} expected")
    return _frozen_new(cls, values)


def bottleneck(network: str, latency_s: float, time_s: float) -> str:
    """What sets a collective's time: ``"latency"`` when its size-independent latency ``latency_s`` is at
    least half of ``time_s`` (seconds both), else ``network``, the network (or link tier) that binds.

    The larger of the two parts names the bottleneck: at or above half, the latency outweighs every byte
    term, and no link is loaded enough to set the time (an 8-byte all_reduce: 131.6 us of NCCL's ring
    latency, 0.0 us of bandwidth). Every engine names its bottleneck with this one rule.

    >>> bottleneck("scale-out", 131.6e-6, 131.6e-6), bottleneck("scale-out", 20e-6, 4.2e-3)
    ('latency', 'scale-out')
    """
    return "latency" if latency_s >= 0.5 * time_s and latency_s > 0 else network


def _frozen_new(cls: type[_D], values: dict[str, Any]) -> _D:
    obj = _new(cls)
    _set(obj, "__dict__", values)
    return obj


@dataclass(frozen=True)
class Candidate:
    """One (algorithm, protocol) the engine considered, with its time in seconds; ``nccl_runs``: whether
    NCCL runs the algorithm (False for aifabric's hierarchical and flat_ring, only forced with ``--algo``)."""

    algorithm: str
    protocol: str
    time_s: float
    nccl_runs: bool = True

    @classmethod
    def of(cls, algorithm: str, protocol: str, time_s: float, nccl_runs: bool = True) -> Candidate:
        """``Candidate(algorithm, protocol, time_s, nccl_runs)``, built as :func:`assemble` builds (the
        formula engine makes ~10 per call)."""
        return _frozen_new(
            cls, {"algorithm": algorithm, "protocol": protocol, "time_s": time_s, "nccl_runs": nccl_runs}
        )


@dataclass(frozen=True)
class CollectiveResult:
    """Timing of one collective.

    Attributes
    ----------
    op : str
        Collective name (``all_reduce`` ...).
    message_bytes : float
        Size as nccl-tests counts it (see :mod:`aifabric.collectives.ops`).
    n_ranks : int
    algorithm, protocol : str
        The chosen algorithm (``ring``, ``tree``, ``nvls``, ``nvls_tree``, ``hierarchical``, ``flat_ring``,
        ``direct``, ``chain``, ``p2p``) and protocol (``LL``, ``LL128``, ``Simple``).
    time_s : float
        Completion time, seconds.
    latency_s : float
        The size-independent part of ``time_s``.
    algbw_bytes_per_s, busbw_bytes_per_s : float
        nccl-tests definitions.
    network_time_s : dict[str, float]
        Exposed seconds per network (``scale-up``, ``scale-out``); sums to ``time_s``.
    bottleneck : str
        The network (or ``latency``) that sets the time.
    explanation : str
        Why this algorithm, why this time, in one paragraph.
    candidates : tuple[Candidate, ...]
        Every (algorithm, protocol) considered, fastest first.
    convention : str
        How bandwidths were read (``per_direction`` or ``bidirectional``) and which efficiency (``nccl`` or
        ``line_rate``).
    engine : str
        ``formula``, ``links`` or ``flow``.
    """

    op: str
    message_bytes: float
    n_ranks: int
    algorithm: str
    protocol: str
    time_s: float
    latency_s: float
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    network_time_s: dict[str, float]
    bottleneck: str
    explanation: str
    candidates: tuple[Candidate, ...] = ()
    convention: str = "per_direction/nccl"
    engine: str = "formula"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-ready), SI units. Engine internals in ``extra`` are summarised, not dumped."""
        out = asdict(replace(self, extra={}))
        fabric = self.extra.get("fabric")
        if fabric is not None:
            out["extra"] = {
                "ideal_time_s": float(fabric.ideal_time_s),
                "efficiency": float(fabric.efficiency),
                "routing": fabric.routing,
                "seed": fabric.seed,
                "top_links": [
                    {
                        "label": lr.label,
                        "tier": lr.tier,
                        "utilisation": lr.utilisation,
                        "bytes": lr.bytes_,
                        "n_flows": lr.n_flows,
                        "flows": list(lr.flows),
                    }
                    for lr in fabric.top_links
                ],
            }
            if "transport" in fabric.meta:  # the fluid model's figures (transport.wire.TransportRun)
                out["extra"]["transport"] = fabric.meta["transport"].to_dict()
        return out


#: The field names of the classes :func:`assemble` builds.
_FIELDS: dict[type, frozenset[str]] = {
    cls: frozenset(f.name for f in fields(cls)) for cls in (Candidate, CollectiveResult)
}
