"""The NIC catalogue's ``latency`` counts: a network step takes at least the NIC's own latency."""

import pytest

from aifabric import catalog
from aifabric.catalog.transport import transport
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.api import collective_time

CLUSTER = """
name: two-h100
accelerator: h100-sxm
gpus_per_node: 8
nodes: 2
scale_up: {kind: nvswitch}
scale_out: {nic: mynic}
"""


def _parts(latency: str) -> str:
    # an invented user NIC: ConnectX-7's rate and efficiency, its own latency
    return (
        "nics:\n  mynic: {name: n, speed: 400 Gb/s, ports: 1, power: 25 W, payload_efficiency: 0.98, "
        f'latency: {latency}, source: "test part"}}\n'
    )


@pytest.fixture
def two_nodes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)

    def load(latency: str) -> ClusterSpec:
        parts = tmp_path / f"parts-{latency.replace(' ', '')}.yaml"
        parts.write_text(_parts(latency))
        monkeypatch.setenv("AIFABRIC_CATALOG", str(parts))
        catalog.reload_catalog()
        return ClusterSpec.from_yaml(cluster)

    yield load
    monkeypatch.delenv("AIFABRIC_CATALOG")
    catalog.reload_catalog()


def test_a_slow_nic_raises_the_8_byte_all_reduce_by_its_latency(two_nodes):
    # 8 B all_reduce on 2 x 8 H100 is tree/LL: 6.8 + 2 x ((8 - 1) x 0.6 + L_net) us (NCCL tuning.cc,
    # tests/catalog/test_nccl_releases.py). L_net = max(ib-verbs 5.0 us, NIC) = 500 us for the slow NIC,
    # so it costs 2 x (500 - 5.0) = 990 us more: 25.2 -> 1015.2 us.
    base = collective_time("all_reduce", 8, two_nodes("0 us"))
    slow = collective_time("all_reduce", 8, two_nodes("500 us"))
    assert base.latency_s == pytest.approx(25.2e-6, rel=1e-6)
    assert slow.time_s - base.time_s == pytest.approx(990e-6, rel=1e-6)


def test_a_nic_faster_than_its_transport_changes_nothing(two_nodes):
    # 0 us and ConnectX-7's 2.7 us both sit below the 5.0 us ib-verbs hop: the transport's latency rules
    zero = collective_time("all_reduce", 8, two_nodes("0 us"))
    cx7 = collective_time("all_reduce", 8, two_nodes("2.7 us"))
    assert zero.time_s == cx7.time_s


def test_shipped_nics_are_no_slower_than_their_native_transport():
    # so the NIC term moves no shipped figure but EFA's: every catalogued scale-out NIC (not the BMC port)
    # has a latency at or below NET/IB's 5.0 us, or is an EFA part whose clusters name the efa-srd
    # transport. That transport's 17.7 us is the newest EFA's step (p6-b200, modelled as efa-v3); the
    # older generations' own step (p5: 27.0 us, aws-k8s-tester #585) is the NIC's, above it
    ib = transport("ib-verbs").latency_s
    efa = transport("efa-srd").latency_s
    for key in catalog.catalog_names("nic"):
        nic = catalog.nic(key)
        if key.startswith("efa-"):
            assert nic.latency_s >= efa, key
        elif key != "bmc-1g":
            assert nic.latency_s <= ib, key
    assert catalog.nic("efa-v3").latency_s == efa
    assert catalog.nic("efa-v1").latency_s == catalog.nic("efa-v2").latency_s == pytest.approx(27.0e-6)
