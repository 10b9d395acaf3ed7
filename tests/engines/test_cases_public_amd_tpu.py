"""The formula engine against public TPU v5e / v6e pod figures and MI350X two-node rccl-tests rows (blind).

TPU: Google's Cloud TPU v5e and v6e pages state, per 256-chip pod (16x16 2D torus, 4 ICI ports a chip), an
"All-reduce bandwidth per Pod" and a "Bisection bandwidth per Pod". Both are the ICI line rate: v5e 51.2
TB/s = 256 chips x 4 links x 50 GB/s, 50 GB/s being Google's own "Bidirectional ICI bandwidth 400 GBps" per
chip / 2 directions / 4 ports; v6e 102.4 TB/s = 256 x 4 x 100 GB/s (800 GBps per chip). The catalogue runs
the ICI at the rate collectives reach, the JAX scaling book's one-way 4.5e10 (v5e) and 9e10 (v6e) B/s a
link, 0.9 of the line rate (scaleup.yaml). So what is asserted is the geometry by hand: the pod all-reduce
at the book's rate is Google's figure x 0.9 (a ring on each of the 2 axes in both directions, 4 links a
chip), and the all-reduce-to-bisection ratio, which no link rate enters, is Google's 32 (2 x 16 for a
16x16 torus with wraparound). Google's figures themselves, 10 % above the model, are in ``MISSED``.

AMD: ROCm/rocm-systems #9406 gives six 2-node x 8 MI350X all_reduce rows at 32-128 MiB with the algorithm,
protocol and channel count of each; the PR does not name the NIC, so they are in ``MISSED`` with the
prediction on 8 x 400 Gb/s Pollara 400 (AMD's own MI350 NIC) said as the assumption it is.
Tolerance: the blind check's bar, 10 % on busbw at >= 64 MiB.
"""

from __future__ import annotations

from typing import Any

import pytest

from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.formula import formula_collective

MiB = 2**20
GiB = 2**30
CHIPS = 256

V5E = "https://docs.cloud.google.com/tpu/docs/v5e"
V6E = "https://docs.cloud.google.com/tpu/docs/v6e"
R9406 = "https://github.com/ROCm/rocm-systems/pull/9406"

#: accelerator: (page, "All-reduce bandwidth per Pod" B/s, "Bisection bandwidth per Pod" B/s)
GOOGLE = {
    "tpu-v5e": (V5E, 51.2e12, 1.6e12),
    "tpu-v6e": (V6E, 102.4e12, 3.2e12),
}
#: the book's one-way ICI rate a link over the line rate Google's per-chip figure gives: 45/50, 90/100
BOOK_OVER_LINE = 0.9


def tpu_pod(accelerator: str) -> ClusterSpec:
    """A whole 256-chip pod of ``accelerator``: 16x16 2D torus, 8 chips a host (Cloud TPU v5e/v6e pages)."""
    spec: dict[str, Any] = {"name": f"{accelerator}-pod", "accelerator": accelerator, "gpus_per_node": 8}
    spec |= {"gpus": CHIPS, "scale_out": None}
    spec["scale_up"] = {"kind": "torus", "gpus": CHIPS, "torus_dims": [16, 16, 1]}
    return ClusterSpec.from_dict(spec, source="test")


def _pod_all_reduce(accelerator: str) -> float:
    """The model's pod all-reduce bandwidth, Google's way: busbw a chip x chips, at 1 GiB."""
    return formula_collective("all_reduce", GiB, tpu_pod(accelerator)).busbw_bytes_per_s * CHIPS


def _pod_bisection(accelerator: str) -> float:
    """The one-way bisection the model's all-to-all of 1 GiB a chip runs at: half of each chip's bytes
    cross the middle cut, 128 chips x 1 GiB / 2 each way (as the v4 pod check in test_tpu_pod_figures)."""
    r = formula_collective("all_to_all", GiB, tpu_pod(accelerator))
    return CHIPS // 2 * GiB / 2 / r.time_s


@pytest.mark.parametrize("accelerator", list(GOOGLE))
def test_pod_all_reduce_is_googles_figure_at_the_books_link_rate(accelerator: str) -> None:
    # v5e: 4 links x 45 GB/s = 180 GB/s busbw a chip x 256 = 46.08 TB/s = 51.2 x 0.9, less the hop
    # latencies at 1 GiB: model 45.96 (-0.3 %); v6e: 4 x 90 x 256 = 92.16 TB/s, model 91.67 (-0.5 %)
    _, figure, _ = GOOGLE[accelerator]
    assert _pod_all_reduce(accelerator) == pytest.approx(figure * BOOK_OVER_LINE, rel=0.01)


@pytest.mark.parametrize("accelerator", list(GOOGLE))
def test_pod_all_reduce_over_bisection_is_googles_ratio(accelerator: str) -> None:
    # No link rate enters: all-reduce 256 chips x 4 links x b over bisection 16 rows x 2 (wraparound) x b
    # = 32, Google's 51.2 / 1.6 and 102.4 / 3.2. Model: v5e 45.96 / 1.440 = 31.9, v6e 91.67 / 2.878 = 31.9
    _, all_reduce, bisection = GOOGLE[accelerator]
    ratio = _pod_all_reduce(accelerator) / _pod_bisection(accelerator)
    assert ratio == pytest.approx(all_reduce / bisection, rel=0.02)


@pytest.mark.parametrize("accelerator", list(GOOGLE))
def test_pod_figures_stay_under_googles_line_rate(accelerator: str) -> None:
    # A model cannot beat the wire: Google's figures are the line rate of every link at once
    _, all_reduce, bisection = GOOGLE[accelerator]
    assert _pod_all_reduce(accelerator) < all_reduce
    assert _pod_bisection(accelerator) < bisection


def test_every_missed_figure_names_measured_and_predicted() -> None:
    # MISSED is the module's record below; each entry gives both figures, "measured vs predicted"
    assert all(" vs " in why for why in MISSED.values())


#: Public figures the model misses (measured, predicted, what is missing); not asserted.
MISSED = {
    "Cloud TPU v5e page, 'All-reduce bandwidth per Pod 51.2 TB/s', 'Bisection bandwidth per Pod 1.6 TB/s'": (
        "51.2 vs 45.96 TB/s (-10.2 %) and 1.6 vs 1.44 TB/s (-10.0 %): Google's figures are the line rate "
        "(4 ports x 50 GB/s a chip, from its own 400 GBps bidirectional); the catalogue runs the book's "
        "4.5e10 B/s a link that collectives reach. The v4 page's 1.1 PB/s is stated at that reached rate "
        "(6 x 45 GB/s x 4,096, test_tpu_pod_figures), so Google's pages do not share one basis"
    ),
    "Cloud TPU v6e page, 'All-reduce bandwidth per Pod 102.4 TB/s', 'Bisection bandwidth per Pod 3.2 TB/s'": (
        "102.4 vs 91.67 TB/s (-10.5 %) and 3.2 vs 2.88 TB/s (-10.1 %): line rate 4 x 100 GB/s a chip "
        "(800 GBps bidirectional) against the book's 9e10 B/s a link, as v5e"
    ),
    "ROCm/rocm-systems #9406, 2 x 8 MI350X all_reduce 32-128 MiB, RCCL 2.30 (NIC not stated)": (
        "busbw 127.38 (tree/LL128, 64 ch) / 155.58 (ring/LL128) / 229.74 (ring/Simple, 64 ch) at 32/64/128 "
        "MiB and 156.35 (ring/LL128) / 190.33 (tree/Simple) / 249.40 (ring/Simple, 48 ch) after the PR's "
        "tuning vs 208.0 / 291.7 / 299.7 and 248.4 / 210.1 / 299.7 forced alike on mi355x with 8 x "
        "Pollara 400 (+20 to +87 %): the NIC is an assumption, RCCL 2.30's tables (gfx950 LL128 rate, "
        "channel count) are not recorded (rccl_releases.yaml stops at 2.26.6, whose LL128 is off on "
        "the 8 x gfx942/gfx950 models) and the run's 48-channel ring beating its 64-channel one by 8.6 % "
        "at 128 MiB is a CU effect the NIC-bound model has no term for"
    ),
}
