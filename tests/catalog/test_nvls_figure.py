"""A release whose tuner records no NVLS figure has no NVLS: never priced at 0 GB/s.

NCCL's NVLS algorithm entered tuning.cc in 2.17.1 (NVIDIA/nccl v2.17.1-1 src/include/devcomm.h:
``NCCL_ALGO_NVLS 4``; v2.16.5-1 has 4 algorithms, Tree/Ring/CollNet*), priced there by a ratio
(v2.18.1-1 tuning.cc:187 ``ratio = .75``) and from 2.28.3 by ``nvlsEfficiency[compCapIndex]``. A release
that records neither has no NVLS price in its tuner, so NVLS does not apply to it.
"""

import pytest

from aifabric.catalog.nccl import nccl_release, nvls_support, nvls_tuner_algbw, nvls_tuner_figure
from aifabric.errors import ConfigError


def _without_nvls_figures():
    return nccl_release("2.20.3").model_copy(update={"nvls_tuner_ratio": None, "nvls_efficiency": None})


def test_recorded_releases_price_nvls_with_their_own_figure():
    # v2.18.1-1 tuning.cc:187 ratio .75; v2.29.2 nvlsEfficiency Hopper .85: 8 x 40 x .85 x 7/8 x 8/7 = 272
    assert nvls_tuner_figure(nccl_release("2.18.1"), "hopper") == 0.75
    assert nvls_tuner_algbw(nccl_release("2.29.2"), "hopper", gpu_gbps=370.8, local_gpus=8) == pytest.approx(
        272.0
    )


def test_a_release_without_a_figure_has_no_nvls_rather_than_a_zero_price():
    release = _without_nvls_figures()
    assert nvls_tuner_figure(release, "hopper") is None
    support = nvls_support(release, "hopper", nnodes=1, local_gpus=8)
    assert (support.nvls, support.nvls_tree) == (False, False)
    assert "no NVLS bandwidth figure" in support.reason
    with pytest.raises(ConfigError, match=r"^nccl version 2\.20\.3: no NVLS bandwidth figure for hopper"):
        nvls_tuner_algbw(release, "hopper", gpu_gbps=370.8, local_gpus=8)
