"""What a stated NCCL environment leaves the formula engine to choose from.

``NCCL_ALGO``, ``NCCL_PROTO`` and ``NCCL_NVLS_ENABLE`` (parsed and validated by
:class:`aifabric.catalog.transport.NcclEnv`, NCCL's ``parseList`` grammar) restrict the algorithms and
protocols the tuner compares, as NCCL's ``src/graph/tuning.cc`` does: the default prediction is NCCL's
default choice, a stated ``NCCL_ALGO`` gives the tuned one. The other ``NCCL_*`` variables NcclEnv reads
(channels, P2P/SHM, GPUDirect level, QPs, plugin) change transports and channel counts that the formula
engine does not model per variable yet; they are refused, not dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aifabric.catalog import nccl
from aifabric.catalog.transport import NcclEnv
from aifabric.collectives.cost import Algorithm
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import Protocol
from aifabric.errors import ConfigError

__all__ = ["MODELLED_VARIABLES", "EnvChoice", "env_choice"]

#: The variables the formula engine models.
MODELLED_VARIABLES = ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE")

#: NCCL's name of each registry algorithm NCCL_ALGO governs (broadcast/reduce: NCCL's ring, as a chain).
_NCCL_NAME = {
    Algorithm.RING: nccl.Algorithm.RING,
    Algorithm.CHAIN: nccl.Algorithm.RING,
    Algorithm.TREE: nccl.Algorithm.TREE,
    Algorithm.NVLS: nccl.Algorithm.NVLS,
    Algorithm.NVLS_TREE: nccl.Algorithm.NVLS_TREE,
    Algorithm.PAT: nccl.Algorithm.PAT,
}


@dataclass(frozen=True)
class EnvChoice:
    """The registry algorithms a stated environment disables, and the protocols it leaves (None: all)."""

    disabled: frozenset[Algorithm]
    protocols: frozenset[Protocol] | None


def env_choice(env: Mapping[str, str], op: Collective) -> EnvChoice:
    """The choice ``env`` (``{"NCCL_ALGO": "Ring", ...}``) leaves for ``op``.

    Algorithms NCCL does not name (direct all_to_all, p2p, the textbook ones) are never disabled;
    ``NCCL_ALGO`` / ``NCCL_PROTO`` do not apply to all_to_all and send_recv (NCCL runs them as p2p).

    Raises
    ------
    ConfigError
        A variable the formula engine does not model (named, with those it takes), or a bad value
        (:meth:`NcclEnv.from_mapping`'s one-line errors).
    """
    for name in env:
        if name not in MODELLED_VARIABLES:
            raise ConfigError(
                f"{name}: the formula engine does not model this variable (it takes "
                f"{', '.join(MODELLED_VARIABLES)})"
            )
    parsed = NcclEnv.from_mapping(env)
    try:
        coll = nccl.Collective(op.value)
    except ValueError:  # all_to_all, send_recv: not NCCL_ALGO/NCCL_PROTO collectives
        return EnvChoice(frozenset(), None)
    enabled = parsed.algorithms(coll)
    disabled = frozenset(a for a, name in _NCCL_NAME.items() if name not in enabled)
    protocols = None if parsed.proto is None else frozenset(Protocol(p.value) for p in parsed.protocols(coll))
    return EnvChoice(disabled, protocols)
