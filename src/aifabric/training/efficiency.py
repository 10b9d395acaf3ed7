"""How fast a GPU computes in practice: measured GEMM and HBM efficiencies, one documented source each.

The step-time model (:mod:`aifabric.training.step`) runs every matrix-multiply FLOP at
``peak_bf16_flops x gemm_efficiency`` and every byte of memory-bound element-wise work at
``hbm_bandwidth x hbm_efficiency``. Both constants come from microbenchmarks recorded in
``presets/compute.yaml`` with their source; they are the same for every model and layout and are never
fitted to a training run. The catalogue's datasheet figures (:mod:`aifabric.catalog`) supply the peaks.

Notes
-----
Why the A100 figure is a fixed-shape measurement (230 TFLOP/s, n = 8192 square) and not the maximum over
shapes of the MAMF table (271.2 TFLOP/s, 86.9 %): a training step multiplies the shapes its model has, not
the best one a search finds; and Table 1 of Narayanan et al. ran 2021 software. With the MAMF figure (and
datasheet HBM) the three Table 1 rows of the shared case file come out +19 %, +11 % and +19 % high; with
the fixed-shape one, -1.5 %, -3.6 % and +1.5 %. Hopper and Blackwell entries use the MAMF table for want of
a fixed-shape measurement, so they are optimistic by the same kind of margin.

Examples
--------
>>> p = compute_profile("a100-sxm-80gb")
>>> round(p.gemm_efficiency * 312)  # TFLOP/s: the measured 230
230
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from aifabric.errors import ConfigError

__all__ = ["ComputeProfile", "compute_profile", "list_compute_profiles"]


@dataclass(frozen=True, slots=True)
class ComputeProfile:
    """Measured efficiencies of one accelerator.

    Parameters
    ----------
    gemm_efficiency : float
        Dense 16-bit matrix-multiply throughput as a fraction of the datasheet peak, in (0, 1].
    hbm_efficiency : float, default 1.0
        Streaming memory bandwidth as a fraction of the datasheet HBM bandwidth, in (0, 1].
    source : str, default ""
        Where the figures come from.
    accelerator : str, default ""
        Catalogue key of the accelerator.

    Raises
    ------
    ConfigError
        If an efficiency is not in (0, 1].
    """

    gemm_efficiency: float
    hbm_efficiency: float = 1.0
    source: str = ""
    accelerator: str = ""

    def __post_init__(self) -> None:
        for name in ("gemm_efficiency", "hbm_efficiency"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
                raise ConfigError(f"{name} must be in (0, 1], got {value!r}")


@cache
def _profiles() -> dict[str, ComputeProfile]:
    text = resources.files("aifabric.training").joinpath("presets/compute.yaml").read_text()
    data = yaml.safe_load(text)
    return {
        key: ComputeProfile(
            gemm_efficiency=float(entry["gemm_efficiency"]),
            hbm_efficiency=float(entry.get("hbm_efficiency", 1.0)),
            source=" ".join(str(entry["source"]).split()),
            accelerator=key,
        )
        for key, entry in data.items()
    }


def list_compute_profiles() -> list[str]:
    """Accelerators with a recorded profile.

    >>> "h100-sxm" in list_compute_profiles()
    True
    """
    return list(_profiles())


def compute_profile(accelerator: str) -> ComputeProfile:
    """The recorded :class:`ComputeProfile` of a catalogue accelerator.

    Parameters
    ----------
    accelerator : str
        Catalogue key (``ClusterSpec.accelerator``), e.g. ``"h100-sxm"``.

    Raises
    ------
    ConfigError
        If no measurement is recorded for it; the message lists those that are.
    """
    profiles = _profiles()
    if accelerator not in profiles:
        raise ConfigError(
            f"accelerator: no measured compute efficiency for {accelerator!r} in training/presets/compute.yaml "
            f"(known: {', '.join(profiles)}); pass StepOptions(compute=ComputeProfile(gemm_efficiency=...))"
        )
    return profiles[accelerator]
