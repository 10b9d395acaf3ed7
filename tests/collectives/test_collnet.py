"""CollNet Direct all_gather / reduce_scatter (NCCL >= 2.20.3) with NCCL's tuner model, refused before.

Cluster: 16 nodes of 8 H100 (``h100-ib-2node``), one 400G ConnectX-7 per GPU on Quantum-2 (SHARP):
``B_o = 49.15`` GB/s per GPU (400 Gb/s x 0.983), ``B_i = 370.8`` GB/s (18 x 20.6, NCCL's NVLink figure).
"""

import pytest

from aifabric.cluster.presets import preset
from aifabric.collectives.algorithms import Algorithm, applicable
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.nccl_env import env_tiers
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import tier_model
from aifabric.engines.formula import formula_collective

BIG = preset("h100-ib-2node", nodes=16)
ONE_PER_NODE = Communicator.from_gpus(BIG, list(range(0, 128, 8)))
COLLNET = {"NCCL_COLLNET_ENABLE": "1"}
GIB = 2**30
B_O, B_I = 49.15e9, 370.8e9


def _run(op, size, comm=None, version=None, **kw):
    return formula_collective(op, size, BIG, comm, env=COLLNET, nccl_version=version, **kw)


@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter"])
def test_newest_nccl_model(op):
    # tuning.cc 2.27.3+: busBw = ppn x min(bwIntra, 0.9 bwInter), taken as the algbw (no bus conversion for
    # these collectives): 8 x min(370.8, 0.9 x 49.15) = 353.9 GB/s. Latency (nccl_releases.yaml 2.30.3):
    # base 0 + 2 (min(1, 7) x 3.7 + 0.4 x 7) + 31 = 44.0 us. 1 GiB: 44.0 + 1073.7 MB / 353.9 GB/s = 3078 us.
    r = _run(op, GIB, algorithm="collnet_direct")
    assert r.latency_s * 1e6 == pytest.approx(44.0, abs=0.01)
    assert (r.time_s - r.latency_s) * 1e6 == pytest.approx(GIB / (8 * 0.9 * B_O) * 1e6, rel=1e-3)
    assert r.time_s * 1e6 == pytest.approx(3078, rel=2e-3)
    # NCCL's tuner picks it over the ring at 1 GiB (ring: 3232 us) and the ring at 8 GiB, where the ring's
    # 8 x 49.15 x 128/120 = 419 GB/s algbw ceiling beats SHARP's 353.9
    assert _run(op, GIB).algorithm == "collnet_direct"
    assert _run(op, 8 * GIB).algorithm == "ring"


def test_nccl_2_20_to_2_26_model():
    # tuning.cc 2.20.3 .. 2.26: busBw = ppn x bw x (w 0.85 + (1 - w) 0.95), w = (ppn - 1)/7 (NCCL's
    # "measured corrective ratio needed at 1 ppn and 8 ppn"); bw the GPU's NIC path = 49.15 GB/s here.
    # 8 ppn: 8 x 49.15 x 0.85 = 334.2 GB/s; 1 ppn: 49.15 x 0.95 = 46.7 GB/s.
    eight = _run("all_gather", 8 * GIB, version="2.21", algorithm="collnet_direct")
    one = _run("all_gather", 8 * GIB, ONE_PER_NODE, version="2.21", algorithm="collnet_direct")
    assert (8 * GIB) / (eight.time_s - eight.latency_s) == pytest.approx(8 * B_O * 0.85, rel=1e-3)
    assert (8 * GIB) / (one.time_s - one.latency_s) == pytest.approx(B_O * 0.95, rel=1e-3)


def test_refused_before_nccl_2_20_and_for_collnet_chain():
    # src/device/all_gather.h has no NCCL_ALGO_COLLNET_DIRECT kernel before v2.20.3 ("2.19": its newest
    # recorded release, 2.19.3)
    with pytest.raises(ValueError, match=r"NCCL 2\.19\.3 has no collnet_direct all_gather .*from 2\.20\.3"):
        _run("all_gather", GIB, version="2.19", algorithm="collnet_direct")
    assert "collnet_direct" not in {
        c.algorithm for c in _run("reduce_scatter", GIB, version="2.19").candidates
    }
    # tuning.cc costs only PAT, ring, NVLS and CollNet Direct for all_gather / reduce_scatter
    with pytest.raises(ValueError, match="'collnet_chain' does not apply to all_gather"):
        _run("all_gather", GIB, algorithm="collnet_chain")
    # and nothing without NCCL_COLLNET_ENABLE=1 (NCCL's default 0)
    comm = Communicator.contiguous(BIG)
    tm = tier_model(BIG)
    assert Algorithm.COLLNET_DIRECT not in {a.algorithm for a in applicable(Collective.ALL_GATHER, comm, tm)}
    on = env_tiers(COLLNET, BIG, tm).tiers
    assert Algorithm.COLLNET_DIRECT in {a.algorithm for a in applicable(Collective.ALL_GATHER, comm, on)}


@pytest.mark.parametrize("version", ["2.21", "2.30"])
@pytest.mark.parametrize("comm", [None, ONE_PER_NODE], ids=["8ppn", "1ppn"])
def test_bounded_by_the_nics(version, comm):
    # each node receives (N - 1)/N S through its g NICs: algbw <= g B_o N / (N - 1), N = 16 nodes
    r = _run("all_gather", 8 * GIB, comm, version=version, algorithm="collnet_direct")
    g = 8 if comm is None else 1
    assert r.algbw_bytes_per_s <= g * B_O * 16 / 15


# --- NVLS + CollNet across NVL72 racks ------------------------------------------------------------------

#: 4 GB200 NVL72 racks (18 trays of 4 GPUs), one 400G ConnectX-7 per GPU (49.15 GB/s), Quantum-2 (SHARP);
#: NVLink 5: B_i = 18 x 40.1 = 721.8 GB/s, nvlsEfficiency 0.74 (scaleup.yaml nvlink5)
RACKS = preset("gb200-nvl72", gpus=4 * 72)


def _racks(version, env=COLLNET, **kw):
    return formula_collective("all_reduce", 16 * GIB, RACKS, env=env, nccl_version=version, **kw)


def test_nvls_with_sharp_across_nvl72_racks():
    # NCCL counts an NVL72 rack as one node (init.cc: nodes = distinct first ranks of the ring graphs, which
    # span the NVLink clique), so with CollNet it runs flat NVLS across racks (tuning.cc). 2.30: each rack's
    # h = min(NCCL_MAX_NVLS_ARITY 32, 72 GPUs, 72 NICs) = 32 heads carry S each way through their NICs,
    # 32 x 49.15 = 1572.8 GB/s, so NVLS in the rack binds: algbw = 721.8 x 0.74 x 31/32 = 517.4 GB/s (the
    # one-node NVLS graph has h = 32 channels, one head each: search.cc; tuning.cc (h - 1)/h); latency
    # hwLat[NVLink][NVLS] 25 + hwLat[NET][NVLS] 18 = 43 us (nccl_releases.yaml 2.30.3).
    r = _racks("2.30")
    assert r.algorithm == "nvls" and r.bottleneck == "scale-up"
    assert r.latency_s * 1e6 == pytest.approx(43.0, abs=0.01)
    assert 16 * GIB / (r.time_s - r.latency_s) == pytest.approx(721.8e9 * 0.74 * 31 / 32, rel=1e-3)
    assert "nvls" not in {c.algorithm for c in formula_collective("all_reduce", 16 * GIB, RACKS).candidates}
    assert "collnet_direct" not in {c.algorithm for c in r.candidates}  # > 8 local ranks (device.h arity 7)


def test_nvls_with_sharp_on_nvl72_is_bounded_by_the_heads_nics_before_nccl_2_21():
    # NCCL 2.20 (device.h NCCL_MAX_NVLS_ARITY 8): 8 heads per rack, so only 8 NICs carry SHARP traffic:
    # algbw = 8 x 49.15 = 393.2 GB/s < NVLS's 721.8 x 0.74 x 7/8 = 467.4 (8 heads). NVLS-tree crosses racks
    # on the same 8 heads' NICs
    # (connect.cc connectNvls: tree peers only for head ranks; tuning.cc 2.20.3 l.176-177: both read the NVLS
    # graph's bwInter over its 8 channels), so it is no wider, and NVLS with SHARP keeps the pick (this test
    # asserted nvls_tree while the model gave NVLS-tree all 72 NICs: fix10a item 1).
    # The rack's CX-7s sit behind Grace (nic_path P2C), a PHB path to NCCL 2.26: GPUDirect RDMA needs
    # NCCL_NET_GDR_LEVEL=PHB there (paths.cc), which these NICs' figures assume
    gdr = {**COLLNET, "NCCL_NET_GDR_LEVEL": "PHB"}
    forced = _racks("2.20", gdr, algorithm="nvls")
    assert forced.bottleneck == "scale-out"
    assert 16 * GIB / (forced.time_s - forced.latency_s) == pytest.approx(8 * B_O, rel=1e-3)
    tree = _racks("2.20", gdr, algorithm="nvls_tree")
    assert 16 * GIB / (tree.time_s - tree.latency_s) <= 8 * B_O * (1 + 1e-9)
    assert _racks("2.20", gdr).algorithm == "nvls"
