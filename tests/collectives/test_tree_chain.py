"""The tree's intra-domain chain: what NVLink a GPU spends on it (collectives.tree.chain_relief)."""

from __future__ import annotations

from typing import Any

import pytest

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import Protocol, tier_model
from aifabric.collectives.tree import chain_relief, tree_cost

GiB = 2**30
ROCE = {"fabric": "ethernet", "switch": "spectrum-4-sn5600-400g"}


def _a100(scale_out: dict[str, Any]) -> ClusterSpec:
    spec = {"accelerator": "a100-sxm-40gb", "gpus_per_node": 8, "nodes": 2, "name": "a100"}
    return ClusterSpec.model_validate(spec | {"scale_up": {"kind": "nvswitch"}, "scale_out": scale_out})


#: OCI BM.GPU.B4.8: 16 x 100 Gb/s per node, two per GPU (every GPU heads one tree channel).
OWN_NICS = _a100({"nic": "connectx-5", "nics_per_gpu": 2, "planes": 2, **ROCE})
#: AWS p4d-like: one NIC per GPU pair (4 heads: GPUs 1, 3, 5, 7 are no chain's head).
SHARED_NICS = _a100({"nic": "connectx-6", "gpus_per_nic": 2, **ROCE})


def test_every_gpu_heading_a_chain_relieves_it_by_g_over_g_minus_1() -> None:
    # By hand: per channel an inner GPU of the chain sends 2 S_c over NVLink, the head and the tail S_c;
    # each of the 8 GPUs heads one channel and is the tail of the channel its next GPU heads, so a GPU sends
    # (6 x 2 + 2) / 8 = 1.75 S: 8 / 7 more than 2 S allows.
    tm = tier_model(OWN_NICS)
    assert chain_relief(tm, 8, Protocol.SIMPLE) == pytest.approx(8 / 7)
    assert chain_relief(tm, 8, Protocol.LL128) == 1.0  # per-channel pace: the inner GPU's 2 S_c
    assert chain_relief(tier_model(SHARED_NICS), 8, Protocol.SIMPLE) == 1.0


def test_the_relieved_chain_bounds_the_two_node_tree() -> None:
    # 2 x 8 A100 on 16 x 100 Gb/s: the NICs carry S per direction on two domains (16 x 12.5 x 0.968 = 193.6
    # GB/s algbw), the chain 240 x 8 / 14 = 137.1 (NCCL's 12 x 20 GB/s for sm80), x 0.92 (tuning.cc tree
    # factor) = 126.2 GB/s: the 126.90 measured at 8 GiB on 2 x OCI BM.GPU.B4.8 lies on it, above the 2 S
    # bound 110.4.
    comm = Communicator.from_gpus(OWN_NICS, list(range(16)))
    c = tree_cost(Collective.ALL_REDUCE, Protocol.SIMPLE, 8 * GiB, comm, tier_model(OWN_NICS))
    assert c is not None
    algbw = 8 * GiB / c.time_s
    assert 120e9 < algbw <= 240e9 * 8 / 14 * 0.92
    assert algbw == pytest.approx(126.9e9, rel=0.02)
    assert c.tuner_time_s > c.time_s  # NCCL's tuner sees 2 S per GPU: it picks on the slower time
