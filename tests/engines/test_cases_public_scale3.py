"""The formula engine against public collectives at scale (>= 16 nodes), third round (blind).

Rounds one and two are ``test_cases_public_scale`` and ``test_cases_public_scale2``. This round searched the
stored public issue threads, repositories, documentation and pages for collectives measured on 16 nodes or
more that no earlier check used (NVIDIA/nccl and nccl-tests threads, cloud vendors' cluster guides, the
SC24 and arXiv characterisations of Alps, Leonardo, Perlmutter and Frontier, the PAT paper, NVIDIA's NCCL
release blogs). Every at-scale log with printed rows it found is already used (CoreWeave's 2- and 20-rack
GB200 logs, OCI's GB300 and GB200 guides, nccl-tests #322, #283, nccl #1218, #1221, #1229, #652); the PAT
paper (arXiv 2506.20252) and NCCL 2.23 blog give no measured table, nccl-tests #367 (64 x 8 H20 on RoCE)
and nccl #1211 (512+ H100) give their figures as images only. What is left are three new figures at scale,
none a full log: one absolute busbw on 300 nodes, and two figures relative to an unnamed baseline. The model
misses or cannot place all three; they are in ``MISSED`` with measured vs predicted and what is missing,
none asserted. Tolerance, were a row asserted: the blind check's bar, busbw 10 % at >= 64 MiB, 15 % at mid
sizes and on time at small sizes.
"""

from __future__ import annotations

from tests.engines.test_cases_public_multi3 import _nodes  # the same node shape as the other blind checks

from aifabric.cluster.spec import ClusterSpec

N1454 = "https://github.com/NVIDIA/nccl/issues/1454"
OFI19 = "https://github.com/aws/aws-ofi-nccl/issues/19"
DESENSI = "https://arxiv.org/abs/2408.14090"


def xe9680_4ib(nodes: int) -> ClusterSpec:
    """Dell XE9680, 8 x H100 a node and four InfiniBand HCAs, two GPUs a NIC (NVIDIA/nccl #1454: "300node 8GPU
    4 IB", "The node is Dell XE9680. The GPU is H100 x 8EA per node"). The thread names no link rate:
    ConnectX-7 NDR 400 Gb/s on a Quantum-2 fabric stands for it (assumed), three tiers for 1200 NICs."""
    scale_out = {"nic": "connectx-7", "gpus_per_nic": 2, "switch": "quantum-2-qm9700", "tiers": 3}
    return _nodes("h100-sxm", nodes, scale_out)


#: Public figures at scale the model misses or cannot place (measured, predicted, what is missing); not
#: asserted. Predictions: ``formula_collective`` with the newest tables unless said.
MISSED = {
    f"{N1454}: all_reduce_perf on 300 x 8 H100 (XE9680, 4 IB HCAs a node), -g 8, 512 B-8 GiB": (
        "busbw 'only 14GB/s' at its maximum (no row, size or release printed; 'mpirun -np 300 -N 1 ... "
        "all_reduce_perf -b 512 -e 8G -f 2 -g 8') vs 172.2 at 512 MiB (tree/Simple) and 181.1 at 8 GiB "
        "(NVLS-tree/Simple) on xe9680_4ib(300), the same with gpus_per_thread=8 (-13x). The reporter sets "
        "no NCCL_IB_HCA and bootstraps over bond0; the maintainer asked for the topology and INFO log and "
        "the thread closes without either, so what cut the rate (a fallback to sockets, a NIC/GPU "
        "mismatch) is not public; no mechanism of the model is meant to reproduce a mis-configured run"
    ),
    f"{OFI19}: all_reduce_perf on 16 x p3dn.24xlarge (128 V100, EFA 100 Gb/s), NCCL 2.4.7": (
        "throughput '60%' of on-prem InfiniBand at 16 machines and '70%' at 8 ('TLDR; 8 machines throughput "
        "is 70% of on-prem infiniband, 16 machines is 60%'; the 32-machine log is on an external page) vs "
        "no prediction: the figure is a ratio to an unnamed InfiniBand cluster, and the run's NCCL 2.4.7 "
        "with the 2019 aws-ofi-nccl patch predates the catalogue's first release (2.18.1)"
    ),
    f"{DESENSI}: Leonardo (4 x A100 a node, HDR Dragonfly+) all-reduce at 1,024 GPUs under production load": (
        "goodput 'up to 50%' lower than on a quiet network, partly recovered on a non-default InfiniBand "
        "service level (SC24, De Sensi et al.; the figure as the paper's public summary at rajatbisht.net "
        "quotes it, the paper's plots not being readable here) vs no change in the model: it prices each "
        "job alone on its fabric, with no cross-job contention term, and the loss is a ratio, not a busbw "
        "to place against the model's noise-free figure"
    ),
}


def test_every_missed_point_names_measured_and_predicted() -> None:
    assert all(" vs " in why for why in MISSED.values())


def test_the_300_node_shape_builds_with_three_tiers() -> None:
    """The assumed shape of #1454's cluster is a valid spec: 300 nodes, 1200 NICs, three tiers."""
    spec = xe9680_4ib(300)
    assert spec.nics_per_node == 4 and spec.nodes == 300
