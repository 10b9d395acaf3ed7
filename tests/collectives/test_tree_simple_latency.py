"""The tree/Simple step latency: NCCL's tuner picks with its release's table, the steps take the measured one.

tuning.cc of v2.18.1-1 and v2.19.1-1 to v2.22.3-1 gives tree/Simple ``hwLat`` 28 us on NVLink, PCI and NET
(base 0), a penalty by its own comment ("De-penalize Tree/Simple latency on Power systems to favor Tree than
Ring"); v2.18.3-1 has 4 / 6 / 14 and v2.23.4-1 on 4.0 / 4.0 / 14 with a base of 8.4
(catalog.nccl.tree_simple_latency_release).
"""

from __future__ import annotations

import pytest

from aifabric.catalog.nccl import nccl_release, tree_simple_latency_release
from aifabric.cluster.presets import preset
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import Protocol, tier_model
from aifabric.collectives.tree import tree_cost

MiB = 2**20
H100_2 = preset("h100-ib-2node")  # 2 x 8 H100 over InfiniBand: no rendezvous the tuner does not see
COMM = Communicator.from_gpus(H100_2, list(range(16)))


@pytest.mark.parametrize(
    ("version", "priced"), [("2.18.1", "2.23.4"), ("2.19.3", "2.23.4"), ("2.21.5", "2.23.4")]
)
def test_penalised_releases_price_the_step_at_2_23_4(version: str, priced: str) -> None:
    assert tree_simple_latency_release(nccl_release(version)).version == priced


@pytest.mark.parametrize("version", ["2.18.3", "2.23.4", "2.30.3"])
def test_releases_without_the_penalty_price_their_own(version: str) -> None:
    release = nccl_release(version)
    assert tree_simple_latency_release(release) is release


def test_the_tuner_sees_the_penalty_and_the_run_does_not() -> None:
    # hand derivation, 2 x 8 GPUs (g = 8, N = 2): 2.20.5's tuner charges 0 + 2 (7 x 28 + 1 x (28 + x)) us,
    # 2.23.4's 8.4 + 2 (7 x 4.0 + 1 x (14 + x)) us, x the same network extra: 355.6 us more; the run is
    # 2.23.4's on either release (92.4 us of latency)
    old = tree_cost(
        Collective.ALL_REDUCE, Protocol.SIMPLE, 64 * MiB, COMM, tier_model(H100_2, nccl_version="2.20.5")
    )
    new = tree_cost(
        Collective.ALL_REDUCE, Protocol.SIMPLE, 64 * MiB, COMM, tier_model(H100_2, nccl_version="2.23.4")
    )
    assert old is not None and new is not None
    assert old.tuner_time_s - old.time_s == pytest.approx(355.6e-6, rel=1e-9)
    assert old.latency_s == pytest.approx(new.latency_s, rel=1e-12)
    assert new.tuner_time_s == pytest.approx(new.time_s, rel=1e-12)


def test_ll_keeps_the_release_table() -> None:
    # only Simple's tree steps carry the penalty: LL's run is what its tuner sees
    ll = tree_cost(Collective.ALL_REDUCE, Protocol.LL, MiB, COMM, tier_model(H100_2, nccl_version="2.20.5"))
    assert ll is not None
    assert ll.tuner_time_s == pytest.approx(ll.time_s, rel=1e-12)
