"""The seed lesson's worked example ("Networking: the Other Half") and its "Try it" variants.

Gradient all-reduce of a 70B-parameter model in BF16 (140 GB). The lesson uses NVLink 900 GB/s per GPU and
a NIC of 100 GB/s (800 Gb/s) per GPU, no latency, and the ring formula 2(n-1)/n x S / B. Its 900 GB/s is
NVLink's bidirectional total; a ring sends and receives at once, so each direction carries 450 GB/s and
the NVLink terms double under the physically right per-direction convention. A third column shows what a
real machine reaches with NCCL's effective bandwidths and latencies.
"""

from __future__ import annotations

from dataclasses import dataclass

from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.algorithms import Algorithm
from aifabric.engines.formula import formula_collective

__all__ = ["LESSON_BYTES", "LessonRow", "lesson_rows", "try1_nic_rates"]

#: 70e9 parameters x 2 bytes (BF16).
LESSON_BYTES = 140e9


@dataclass(frozen=True)
class LessonRow:
    """One scenario: seconds under the lesson's convention, per direction, and with NCCL efficiency.

    ``parts_*`` split the hierarchical time into (NVLink, NIC) seconds; empty for one-network scenarios.
    """

    scenario: str
    expected_s: float | None
    lesson_s: float
    per_direction_s: float
    nccl_s: float
    parts_lesson: tuple[float, ...] = ()
    parts_per_direction: tuple[float, ...] = ()


def _time(
    spec: ClusterSpec, algorithm: str, convention: str, efficiency: str
) -> tuple[float, tuple[float, ...]]:
    r = formula_collective(  # the lesson's whole 140 GB gradient as one logical message: no HBM check
        "all_reduce",
        LESSON_BYTES,
        spec,
        algorithm=algorithm,
        convention=convention,
        efficiency=efficiency,
        hbm_check=False,
    )
    parts: tuple[float, ...] = ()
    if Algorithm.parse(algorithm) is Algorithm.HIERARCHICAL:
        parts = (r.network_time_s.get("scale-up", 0.0), r.network_time_s.get("scale-out", 0.0))
    return r.time_s, parts


def _row(
    name: str, expected: float | None, lesson: ClusterSpec, real: ClusterSpec, algorithm: str
) -> LessonRow:
    lesson_s, pl = _time(lesson, algorithm, "bidirectional", "line_rate")
    perdir, pp = _time(real, algorithm, "per_direction", "line_rate")
    nccl, _ = _time(real, algorithm, "per_direction", "nccl")
    return LessonRow(name, expected, lesson_s, perdir, nccl, pl, pp)


def _with_connectx9(base: ClusterSpec) -> ClusterSpec:
    """The lesson's cluster with Try 1's 1.6 Tb/s NIC (ConnectX-9 on Quantum-X800 switches)."""
    return base.with_changes(
        **{
            "scale_out.nic": "connectx-9",
            "scale_out.switch": "quantum-x800-q3400",
            "scale_out.fabric": "infiniband",
            "scale_out.radix": 64,
            # a 1.6 Tb/s NIC on the Q3400's 800 Gb/s ports is two ports on two planes (a link runs at the
            # slower end's rate: ClusterSpec.nic_speed_bytes_per_s)
            "scale_out.planes": 2,
        }
    )


def try1_nic_rates() -> tuple[float, float, float]:
    """Try 1's per-GPU NIC payload rates, bytes/s per direction, before and after (800 Gb/s, then 1.6 Tb/s),
    and the GPU's PCIe link to its NIC that caps both
    (:attr:`aifabric.cluster.spec.ClusterSpec.nic_effective_bytes_per_s`): a faster NIC behind the same
    link gives a real machine nothing."""
    base = preset("lesson")
    cx9 = _with_connectx9(base)
    return base.nic_payload_bytes_per_s, cx9.nic_payload_bytes_per_s, cx9.nic_host_link_bytes_per_s


def lesson_rows() -> list[LessonRow]:
    """The lesson's four scenarios and its first two "Try it" answers (expected figures from the lesson).

    The lesson column uses the lesson's own figures (900 GB/s for every NVLink, including the NVL72's);
    the per-direction and NCCL columns use the real hardware: HGX H100 (NVLink 4, 450 GB/s per direction)
    for the 8-GPU nodes and GB200 NVL72 (NVLink 5, 900 GB/s per direction) for the NVL72 rows.

    >>> [round(r.lesson_s, 2) for r in lesson_rows()[:4]]
    [0.27, 0.31, 2.8, 0.62]
    """
    base = preset("lesson")
    nvl72 = base.with_changes(gpus_per_node=72, nodes=1, **{"scale_out.rails": 8})
    cx9 = _with_connectx9(base)
    racks = base.with_changes(gpus_per_node=72, nodes=14, **{"scale_out.rails": 8})
    gb200 = preset("gb200-nvl72", gpus=72)
    gb200_racks = preset("gb200-nvl72", gpus=1008)
    one = base.with_changes(nodes=1)
    return [
        _row("8 GPUs, NVLink only (ring)", 0.27, one, one, "ring"),
        _row("72 GPUs, one NVL72 (ring)", 0.31, nvl72, gb200, "ring"),
        _row("1,024 GPUs, flat ring on NICs", 2.80, base, base, "flat_ring"),
        _row("1,024 GPUs, hierarchical (128 x 8)", 0.62, base, base, "hierarchical"),
        _row("Try 1: NIC 1.6 Tb/s, hierarchical", 0.45, cx9, cx9, "hierarchical"),
        _row("Try 1: NIC 1.6 Tb/s, flat ring", 1.40, cx9, cx9, "flat_ring"),
        _row("Try 2: 14 NVL72 racks = 1,008 GPUs, hierarchical", 0.34, racks, gb200_racks, "hierarchical"),
    ]
