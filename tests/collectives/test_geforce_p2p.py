"""GeForce cards have no GPU peer-to-peer: NCCL runs SHM through host memory inside a node
(accelerators.yaml ``peer_to_peer``; collectives/nccl_env.py, catalog/transport.py resolve_transport)."""

import pytest

from aifabric import catalog
from aifabric.catalog.transport import NcclEnv, resolve_transport
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.api import collective_time
from aifabric.engines.formula import formula_collective
from aifabric.errors import ConfigError

GIB = 2**30


def _box(accelerator: str, gpus: int) -> ClusterSpec:
    """One workstation or server of ``gpus`` PCIe cards."""
    return ClusterSpec.from_dict(
        {"accelerator": accelerator, "gpus_per_node": gpus, "nodes": 1, "scale_up": {"kind": "pcie"}}
    )


def test_geforce_cards_have_no_peer_to_peer_and_workstation_cards_do():
    # 'GeForce cards do not support P2P' (NCCL maintainer, NVIDIA/nccl-tests #287); the RTX 6000 Ada and
    # RTX PRO 6000 are professional cards with peer access
    assert not catalog.accelerator("rtx-4090").peer_to_peer
    assert not catalog.accelerator("rtx-5090").peer_to_peer
    for key in ("rtx-6000-ada", "rtx-pro-6000-blackwell", "l40s", "h100-pcie", "h100-sxm"):
        assert catalog.accelerator(key).peer_to_peer


def test_resolve_transport_without_peer_access_is_shm():
    # p2p.cc p2pCanConnect: cudaDeviceCanAccessPeer = 0 -> P2P cannot connect; transport.cc tries SHM next
    choice = resolve_transport(NcclEnv(), same_node=True, gpu_path="PXB", peer_access=False)
    assert choice.transport.key == "shm" and "no peer access" in choice.reason
    off = NcclEnv(shm_disable=True)
    assert resolve_transport(off, same_node=True, gpu_path="PXB", peer_access=False).transport.scope == "net"
    assert resolve_transport(NcclEnv(), same_node=True, gpu_path="PXB").transport.key == "p2p-pcie"


@pytest.mark.parametrize(("accelerator", "shm_gbps"), [("rtx-4090", 19.2), ("rtx-5090", 38.4)])
def test_geforce_node_runs_shm_and_p2p_disable_changes_nothing(accelerator: str, shm_gbps: float):
    # SHM: each GPU's bytes cross host memory over its own PCIe x16 link: Gen4 32 GB/s (Gen5 64) per
    # direction x 0.6 (transports.yaml shm) = 19.2 (38.4) GB/s; a 1 GiB ring over 4 ranks is bandwidth
    # bound (latency ~40 us of ~84 ms at 19.2), so busbw ~ the SHM rate. NCCL_P2P_DISABLE=1 is the same run.
    spec = _box(accelerator, 4)
    default = formula_collective("all_reduce", GIB, spec)
    disabled = formula_collective("all_reduce", GIB, spec, env={"NCCL_P2P_DISABLE": "1"})
    assert default.busbw_bytes_per_s / 1e9 == pytest.approx(shm_gbps, rel=0.01)
    assert default.time_s == disabled.time_s
    assert "no GPU peer-to-peer" in default.explanation and "SHM" in default.explanation


def test_a_workstation_card_with_peer_access_keeps_p2p():
    # RTX 6000 Ada: P2P over PCIe Gen4 at NCCL's 24 GB/s (topo.cc width x speed / 80); NCCL_P2P_DISABLE=1
    # drops it to SHM's 19.2
    spec = _box("rtx-6000-ada", 4)
    p2p = formula_collective("all_reduce", GIB, spec)
    shm = formula_collective("all_reduce", GIB, spec, env={"NCCL_P2P_DISABLE": "1"})
    assert p2p.busbw_bytes_per_s / 1e9 == pytest.approx(24.0, rel=0.01)
    assert shm.busbw_bytes_per_s / 1e9 == pytest.approx(19.2, rel=0.01)
    assert "peer-to-peer" not in p2p.explanation


def test_rtx_5090_four_gpus_against_the_published_figure():
    # NVIDIA/nccl #1639: 4 x RTX 5090 (dual Xeon 8480+, PCIe Gen5, driver 570), all_reduce_perf 1-8 GiB:
    # "4GPU max performance: bwbus 35GB/s". SHM model 64 x 0.6 = 38.4 GB/s (+9.7 %); the former P2P model
    # gave 48 (+37 %). 8 GPUs measured 28 (the maintainer: bound by what CPU and memory deliver, 8 flows in
    # both directions), not modelled: 38.3 (+37 %).
    r = formula_collective("all_reduce", 8 * GIB, _box("rtx-5090", 4))
    assert r.busbw_bytes_per_s == pytest.approx(35e9, rel=0.10)


@pytest.mark.parametrize("engine", ["links", "flow"])
def test_every_engine_times_a_geforce_node_on_shm(engine: str):
    # ClusterSpec.scaleup_effective_bytes_per_s carries the SHM rate (19.2 GB/s on Gen4), so the links and
    # flow engines' scale-up links agree with the formula engine (ring, one node, bandwidth bound)
    spec = _box("rtx-4090", 4)
    assert spec.scaleup_effective_bytes_per_s == pytest.approx(19.2e9)
    formula = collective_time("all_reduce", GIB, spec, engine="formula")
    other = collective_time("all_reduce", GIB, spec, engine=engine)
    assert other.busbw_bytes_per_s == pytest.approx(formula.busbw_bytes_per_s, rel=0.02)


def _switched(gpus: int, per_switch: int) -> ClusterSpec:
    """``gpus`` RTX 2080 Ti (PCIe Gen3, no peer-to-peer), ``per_switch`` of them behind each PCIe switch."""
    su = {"kind": "pcie", "link": "pcie-gen3", "gpus_per_switch": per_switch}
    return ClusterSpec.from_dict(
        {"accelerator": "rtx-2080-ti", "gpus_per_node": gpus, "nodes": 1, "scale_up": su}
    )


def test_gpus_behind_one_switch_share_its_uplink_when_all_of_them_send():
    # SHM through host memory crosses the switch's uplink (paths.cc: traffic diverted through the CPU): a
    # ring of two GPUs behind one switch sends from both at once, each at half of 16 x 0.6 = 9.6 GB/s; a
    # chain of two (broadcast) sends from one, at all of it; a root port per GPU (the default) shares nothing
    shared, own = _switched(2, 2), _switched(2, 1)
    ring = formula_collective("all_reduce", GIB, shared).busbw_bytes_per_s / 1e9
    chain = formula_collective("broadcast", GIB, shared).busbw_bytes_per_s / 1e9
    alone = formula_collective("all_reduce", GIB, own).busbw_bytes_per_s / 1e9
    assert ring == pytest.approx(4.8, rel=0.01) and chain == pytest.approx(9.6, rel=0.01)
    assert alone == pytest.approx(9.6, rel=0.01)


@pytest.mark.parametrize(
    ("scale_up", "gpus", "field"),
    [
        ({"kind": "nvswitch", "gpus_per_switch": 2}, 8, "kind: pcie"),
        ({"kind": "pcie", "gpus_per_switch": 4}, 2, "gpus_per_node=2"),
        ({"kind": "pcie", "gpus_per_switch": 0}, 2, "gpus_per_switch"),
    ],
)
def test_gpus_per_switch_is_refused_off_pcie_and_beyond_the_node(scale_up: dict, gpus: int, field: str):
    data = {"accelerator": "h100-sxm", "gpus_per_node": gpus, "nodes": 1, "scale_up": scale_up}
    with pytest.raises(ConfigError, match="gpus_per_switch") as err:
        ClusterSpec.from_dict(data)
    assert field in str(err.value) and "\n" not in str(err.value)
