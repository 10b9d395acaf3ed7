"""A whole TPU v4 pod against Google's published pod figures (Cloud TPU v4 docs, "Key specifications v4 Pod
values": 4,096 chips in a 3D torus, "All-reduce bandwidth per Pod 1.1 PB/s", "Bisection bandwidth per Pod
24 TB/s"; https://cloud.google.com/tpu/docs/v4)."""

import pytest

from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import formula_collective

GiB = 2**30
V4_POD = ClusterSpec.from_dict(
    {
        "name": "v4-pod",
        "accelerator": "tpu-v4",
        "gpus_per_node": 4,
        "gpus": 4096,
        "scale_up": {"kind": "torus", "gpus": 4096, "torus_dims": [16, 16, 16]},
        "scale_out": None,
    },
    source="test",
)


def test_v4_pod_all_reduce_bandwidth_is_googles_1_1_pb_s() -> None:
    # busbw per chip on the 16x16x16 torus: a ring on each of the 3 axes at once, each direction of each of
    # the 6 links at the catalogue's 45 GB/s (JAX scaling book): 6 x 45 = 270 GB/s per chip, less the
    # 48 hop latencies at 1 GiB; x 4,096 chips = 1.10 PB/s, Google's "All-reduce bandwidth per Pod 1.1 PB/s".
    r = formula_collective("all_reduce", GiB, V4_POD)
    assert r.busbw_bytes_per_s * 4096 == pytest.approx(1.1e15, rel=0.02)


def test_v4_pod_all_to_all_is_bounded_by_its_bisection() -> None:
    # An all-to-all of S per chip sends half of each chip's data across the middle cut: 2,048 x S/2 each
    # way over 16 x 16 x 2 (wraparound) links x 45 GB/s = 23.0 TB/s one way (Google: "Bisection bandwidth
    # per Pod 24 TB/s", within 4 %): T = 2048 x 2^29 / 23.04e12 = 47.7 ms at S = 1 GiB.
    r = formula_collective("all_to_all", GiB, V4_POD)
    bisection = 16 * 16 * 2 * 45e9
    assert r.time_s == pytest.approx(2048 * GiB / 2 / bisection, rel=0.01)
    assert bisection == pytest.approx(24e12, rel=0.05)
