"""LL128's default by compute capability, release by release (NCCL's tuning.cc ncclTopoTuneModel).

While ``pEnable == 2`` (NCCL_PROTO unset) NCCL turns LL128 on by a ``switch (minCompCap)``: v2.18.1-1 to
v2.24.3-1 list ``case 70``, ``case 80`` and ``case 90``; v2.25.1-1 and v2.26.x add ``case 100`` and ``case
120``; any other capability is ``default: pEnable &= 0``. From v2.27.3-1 the switch is gone
(``!(minCompCap < 70 || ...)``): every capability from 7.0. B300 and GB300 report 10.3
(developer.nvidia.com/cuda-gpus: "10.3 NVIDIA GB300 NVIDIA B300"), so before 2.27 their rings run LL and
Simple only, and before 2.25 no Blackwell runs LL128 by default.
"""

import pytest
from tests.clusters import nvswitch_node

from aifabric.catalog import accelerator
from aifabric.collectives.tiers import compute_capability, tier_model
from aifabric.engines.formula import formula_collective

MIB = 2**20


@pytest.mark.parametrize(
    ("gpu", "cc"),
    [("h100-sxm", 90), ("b200", 100), ("b300", 103), ("gb300", 103), ("rtx-2080-ti", 75)],
)
def test_the_compute_capability_is_the_parts_or_its_architectures(gpu: str, cc: int) -> None:
    assert compute_capability(nvswitch_node(gpu, 4)) == cc


@pytest.mark.parametrize(
    ("gpu", "version", "on"),
    [
        ("h100-sxm", "2.21.5", True),
        ("b200", "2.24.3", False),  # case 70/80/90 only
        ("b200", "2.25.1", True),  # case 100
        ("b300", "2.25.1", False),  # 103: default
        ("b300", "2.26.2", False),  # 2.26.x keeps 2.25.1's switch (v2.26.6-1 tuning.cc)
        ("b300", "2.27.3", True),  # minCompCap >= 70
        ("gb300", "2.29.7", True),
        # RTX 2080 Ti (NVLink-bridged pairs): Turing is 7.5 (developer.nvidia.com/cuda-gpus), no case
        # of the switch before 2.27, so LL128 stays off there; from 2.27.3 every capability from 7.0
        ("rtx-2080-ti", "2.26.2", False),
        ("rtx-2080-ti", "2.27.3", True),
    ],
)
def test_ll128_default_follows_the_releases_switch(gpu: str, version: str, on: bool) -> None:
    assert tier_model(nvswitch_node(gpu, 4), nccl_version=version).ll128_default is on


@pytest.mark.parametrize(
    ("gpu", "cc"),
    [("a40", 86), ("a30", None), ("gb10", 121), ("rtx-5090", 120), ("rtx-pro-6000-blackwell", 120)],
)
def test_parts_whose_capability_is_not_their_architectures_carry_their_own(gpu: str, cc: int | None) -> None:
    # developer.nvidia.com/cuda-gpus: A40 8.6 (GA102; the ampere entry's 8.0 is GA100's, as the A30's),
    # GB10 12.1, RTX 5090 and RTX PRO 6000 Blackwell 12.0 (the blackwell entry's 10.0 is B200's)
    assert accelerator(gpu).compute_capability == cc


def test_a_b300_ring_on_2_25_runs_simple_where_2_27_runs_ll128() -> None:
    # 4 x B300, 8 MiB all_reduce: ring/LL128 on 2.27.3 (as on a B200 under 2.25.1); with LL128 off the
    # tuner's next choice is ring/Simple, 8.4 + 6 x 3.4 = 28.8 us of latency (tuning.cc Ring Simple rows)
    spec = nvswitch_node("b300", 4)
    before = formula_collective("all_reduce", 8 * MIB, spec, nccl_version="2.25.1")
    after = formula_collective("all_reduce", 8 * MIB, spec, nccl_version="2.27.3")
    b200 = formula_collective("all_reduce", 8 * MIB, nvswitch_node("b200", 4), nccl_version="2.25.1")
    assert (before.algorithm, before.protocol) == ("ring", "Simple")
    assert after.protocol == b200.protocol == "LL128"
    stated = formula_collective(
        "all_reduce", 8 * MIB, spec, nccl_version="2.25.1", env={"NCCL_PROTO": "LL128"}
    )
    assert stated.protocol == "LL128"  # NCCL_PROTO states it: pEnable is 1, not 2
