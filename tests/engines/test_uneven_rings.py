"""Rings over scale-up domains the communicator fills unevenly (4 + 2 of 2 x 4 GH200, 8 + 4 of 2 x 8 H100).

NCCL runs the same number of ring channels over every rank, the fewest any node's search found
(``init.cc``: ``graphs[a]->nChannels = std::min`` over the gathered graphs), each channel entering and
leaving every node on a NIC (``connect.cc``: node ``i``'s ring send joins node ``i + 1``'s ring recv). The
sparsest domain's ranks set the channels, one per NIC there, so its NICs bound the ring: the formula
engine's ``domain_nic_bytes_per_s``. The links engine's plan (``plan._uneven_ring_stage``) agrees within
2 % wherever the ring closes on its rails (README, "Where the engines agree, and where they differ", for
the places it does not: ranks per sparsest domain coprime with the domains, and on a full mesh an odd
number of domains or of ranks in the sparsest one).
"""

from collections import Counter

import numpy as np
import pytest
from tests.clusters import mi300x_nodes

from aifabric.cluster.presets import preset
from aifabric.collectives.algorithms import build_plan
from aifabric.collectives.ops import Collective
from aifabric.engines.api import collective_time

GIB = 2**30

#: (cluster, rank counts or GPU lists) whose sparsest domain's rank count divides evenly round the ring
CASES = {
    "gh200-quad": (lambda: preset("gh200-quad", nodes=2), [5, 6, 7]),
    "dgx-h100": (lambda: preset("dgx-h100-superpod", nodes=2), [9, 10, 12, 14]),
    "dgx-h100-3": (
        lambda: preset("dgx-h100-superpod", nodes=3),
        [18, 20, [0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 19]],
    ),
    "mi300x": (lambda: mi300x_nodes(2), [9, 10, 12, 14, [0, 1, 3, 4, 6, 7, *range(8, 16)]]),
    "mi300x-4": (lambda: mi300x_nodes(4), [26, 28]),
}


def _cases():
    for name, (_, rank_sets) in CASES.items():
        for ranks in rank_sets:
            yield pytest.param(name, ranks, id=f"{name}-{ranks if isinstance(ranks, int) else len(ranks)}")


@pytest.mark.parametrize("cluster,ranks", list(_cases()))
def test_links_engine_agrees_with_the_formula_on_uneven_domains(cluster, ranks):
    spec = CASES[cluster][0]()
    for op, algo in (("all_gather", "ring"), ("all_reduce", "ring"), ("broadcast", "chain")):
        for size in (2**20, GIB):
            f = collective_time(op, size, spec, ranks=ranks, algorithm=algo)
            links = collective_time(op, size, spec, ranks=ranks, algorithm=algo, engine="links")
            assert links.time_s == pytest.approx(f.time_s, rel=0.02), (cluster, ranks, op, size)


def _busbw(r, n: int) -> float:
    """all_gather bus bandwidth without the latency: (n - 1)/n S / (t - latency)."""
    return (n - 1) / n * GIB / (r.time_s - r.latency_s)


def test_two_ranks_in_the_sparsest_domain_run_at_two_nics():
    # 2 x 4 GH200, one Slingshot-11 NIC per GPU: 4 + 2 ranks run 2 channels, one per NIC of the 2-rank
    # node, twice the bus bandwidth of 4 + 1 (one channel, one NIC). Before: 4 + 2 ran one channel,
    # 24.2 GB/s, the same as 4 + 1, where the formula engine gives 48.4.
    spec = preset("gh200-quad", nodes=2)
    one = collective_time("all_gather", GIB, spec, ranks=5, algorithm="ring", engine="links")
    two = collective_time("all_gather", GIB, spec, ranks=6, algorithm="ring", engine="links")
    assert _busbw(two, 6) == pytest.approx(2 * _busbw(one, 5), rel=1e-3)


def test_every_channel_crosses_nodes_on_its_own_rail():
    # 8 + 4 H100: 4 channels; each leaves and enters every node on one rail (local GPU id), and each NIC
    # of the 4-rank node carries exactly one channel out and one in
    spec = preset("dgx-h100-superpod", nodes=2)
    gpus = np.arange(12)
    (stage,) = build_plan(Collective.ALL_GATHER, GIB, spec, gpus, algorithm="ring").stages
    cross = stage.src // 8 != stage.dst // 8
    assert np.unique(stage.group).size == 4
    assert (stage.src[cross] % 8 == stage.dst[cross] % 8).all()
    assert Counter((stage.src[cross] // 8).tolist()) == {0: 4, 1: 4}
    assert sorted(stage.src[cross & (stage.src >= 8)].tolist()) == [8, 9, 10, 11]


def test_a_full_mesh_carries_one_channel_per_link():
    # 8 + 6 MI300X on their xGMI mesh (48 GB/s usable per link): 6 channels through the 8-GPU node cross
    # 6 x 7 = 42 of its 56 links, each at most once; through the 6-GPU node every one of its 30 links once
    # (Walecki's zigzag), so no link carries two channels' chunks
    spec = mi300x_nodes(2)
    (stage,) = build_plan(Collective.ALL_GATHER, GIB, spec, np.arange(14), algorithm="ring").stages
    inside = stage.src // 8 == stage.dst // 8
    pairs = Counter(zip(stage.src[inside].tolist(), stage.dst[inside].tolist(), strict=True))
    assert max(pairs.values()) == 1
    assert sum(1 for s, _ in pairs if s >= 8) == 30
