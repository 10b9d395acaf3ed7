"""NVIDIA GPU architectures: compute capability and the first CUDA toolkit that compiles for each.

``data/gpu_architectures.yaml``, keyed by the accelerators' ``arch`` (volta, ampere, ada, hopper,
blackwell): what lets a log's CUDA version (``NCCL version 2.14.3+cuda11.7``) rule an architecture out
without a field the log does not print (an ``sm=`` appears only in NCCL's topology dump).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from aifabric.catalog.nccl import version_tuple
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml

__all__ = ["GpuArchitecture", "cuda_compiles_for", "gpu_architecture"]

_WHERE = "catalog/data/gpu_architectures.yaml"


@dataclass(frozen=True)
class GpuArchitecture:
    """One architecture: its compute capability ``sm`` (90 = 9.0), the first CUDA targeting it."""

    name: str
    sm: int
    min_cuda: tuple[int, ...]
    source: str


@cache
def _architectures() -> dict[str, GpuArchitecture]:
    raw: Any = load_package_yaml("aifabric.catalog", "data/gpu_architectures.yaml")
    if not isinstance(raw, dict):
        raise ConfigError(f"{_WHERE}: expected a mapping of architectures")
    out = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict) or not {"sm", "min_cuda", "source"} <= set(entry):
            raise ConfigError(f"{_WHERE}: {name}: needs sm, min_cuda and source")
        out[str(name)] = GpuArchitecture(
            str(name), int(entry["sm"]), version_tuple(str(entry["min_cuda"])), str(entry["source"])
        )
    return out


def gpu_architecture(arch: str) -> GpuArchitecture | None:
    """The recorded architecture ``arch`` (an accelerator's ``arch``), or None (TPU, AMD CDNA, unrecorded)."""
    return _architectures().get(arch.lower())


def cuda_compiles_for(arch: str, cuda_version: str) -> bool | None:
    """Whether CUDA ``cuda_version`` compiles for ``arch``: ``cuda >= min_cuda``; None when ``arch`` is not
    recorded (not a CUDA GPU, or no figure) or ``cuda_version`` is not a version.

    >>> [cuda_compiles_for(a, c) for a, c in (("hopper", "11.7"), ("hopper", "11.8"), ("tpu", "12"))]
    [False, True, None]
    """
    found = gpu_architecture(arch)
    if found is None:
        return None
    try:
        have = version_tuple(cuda_version)
    except ConfigError:
        return None
    return have >= found.min_cuda
