"""Data loading: bytes each training step reads against what the front-end and storage deliver.

need  = bytes per step / step time                          (bytes/s, whole job)
have  = nodes x min(stage rates of one node reading)        (:func:`aifabric.storage.paths.node_path`)
share = need / have    (> 1: the loader cannot keep up and the step waits)

A share above 1 makes the step asked for impossible: each step then lasts at least the time to read its data,
``bytes per step / have = share x step time`` (:attr:`DataLoading.loaded_step_s`), and whatever counts steps
(the async drain's overlap) must count in those.
"""

from __future__ import annotations

from dataclasses import dataclass

from aifabric.cluster.spec import ClusterSpec
from aifabric.storage.paths import node_path

__all__ = ["DataLoading", "data_loading"]


@dataclass(frozen=True)
class DataLoading:
    """Read bandwidth a job needs and has, bytes/s; ``share`` = need / have; ``bottleneck``: the stage;
    ``step_time_s``: the step asked for, seconds."""

    need_bytes_per_s: float
    have_bytes_per_s: float
    bottleneck: str
    step_time_s: float

    @property
    def share(self) -> float:
        """Fraction of the deliverable read bandwidth the loader uses."""
        return self.need_bytes_per_s / self.have_bytes_per_s

    @property
    def keeps_up(self) -> bool:
        """Whether the loader delivers a step's data within the step (``share <= 1``)."""
        return self.share <= 1

    @property
    def loaded_step_s(self) -> float:
        """The step data loading allows, seconds: the step asked for, or the time to read one step's data
        when that is longer (``share x step time``)."""
        return self.step_time_s * max(1.0, self.share)


def data_loading(
    spec: ClusterSpec, bytes_per_step: float, step_time_s: float, *, nodes: int | None = None
) -> DataLoading:
    """Need vs capacity of data loading for ``nodes`` (default all) reading at once.

    Raises
    ------
    ValueError
        If ``bytes_per_step`` < 0, ``step_time_s`` <= 0 or ``nodes`` out of range.
    ConfigError
        No front-end NICs or storage (see :func:`aifabric.storage.paths.node_path`).

    Examples
    --------
    Llama-3-style text, 16M tokens per step at 4 bytes per token, one step per 5 s: 13.4 MB/s, a speck.

    >>> from aifabric.cluster.presets import preset
    >>> spec = preset("dgx-h100-superpod", **{"storage": {"system": "ddn-ai400x2-turbo", "units": 4}})
    >>> d = data_loading(spec, 16 * 2**20 * 4, 5.0)
    >>> round(d.need_bytes_per_s / 1e6, 1), d.share < 1e-3, d.keeps_up
    (13.4, True, True)

    10 TB per 1 ms step of 16 nodes over 4 appliances (4 x 80 GB/s = 320 GB/s): each step waits 31.25 s.

    >>> d = data_loading(preset("dgx-h100-superpod", nodes=16, storage={"system": "ddn-ai400x2-turbo",
    ...                                                                    "units": 4}), 10e12, 1e-3)
    >>> d.keeps_up, round(d.loaded_step_s, 2)
    (False, 31.25)
    """
    if bytes_per_step < 0 or not step_time_s > 0:
        raise ValueError(
            f"need bytes_per_step >= 0 and step_time_s > 0, got {bytes_per_step!r}, {step_time_s!r}"
        )
    n = spec.n_nodes if nodes is None else nodes
    if not 1 <= n <= spec.n_nodes:
        raise ValueError(f"nodes must be in 1..{spec.n_nodes}, got {n!r}")
    path = node_path(spec, direction="read", active_nodes=n)
    return DataLoading(bytes_per_step / step_time_s, n * path.rate_bytes_per_s, path.bottleneck, step_time_s)
