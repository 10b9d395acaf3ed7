"""Transports as catalogue data, the NCCL environment and the transport a connection resolves to."""

import pytest

from aifabric.catalog.nccl import Algorithm, Protocol
from aifabric.catalog.transport import NcclEnv, PathType, resolve_transport, transport, transport_names
from aifabric.errors import ConfigError

EXPECTED = {
    "ib-verbs", "roce-v2", "efa-srd", "gcp-tcpx", "gcp-tcpxo", "gcp-gib", "tcp-socket", "slingshot-cxi",
    "p2p-nvlink", "p2p-pcie", "pcie-through-cpu", "shm", "host-staging",
}  # fmt: skip


def test_every_transport_loads_with_a_source_and_sane_figures():
    assert set(transport_names()) == EXPECTED
    for key in transport_names():
        t = transport(key)
        assert len(t.source) > 40
        assert 0 < t.per_stream_efficiency <= 1 and 0 < t.aggregate_efficiency <= 1
        assert 0 < t.latency_s < 1e-4


def test_transport_figures_against_their_sources():
    # NCCL v2.30.7 tuning.cc hwLat NET Tree LL 5.0 us; nccl-tests #309: 392.7 GB/s over 8 x 50 GB/s
    assert transport("ib-verbs").latency_s == pytest.approx(5.0e-6)
    assert transport("ib-verbs").aggregate_efficiency == pytest.approx(392.7 / 400, abs=1e-3)
    # TCPXO: 123 us 8 B AllReduce on 2 x 8 H100 -> (123 - 6.8 - 8.4) / 2 = 53.9 us per hop (Tree/LL formula)
    assert transport("gcp-tcpxo").latency_s == pytest.approx((123 - 6.8 - 8.4) / 2 * 1e-6)
    # plugins and TCP are an order of magnitude slower than IB at small sizes (issue 8)
    assert transport("tcp-socket").latency_s > 5 * transport("ib-verbs").latency_s
    assert transport("tcp-socket").gdr == "none" and transport("gcp-tcpxo").gdr == "required"
    # topo.h SM90_NVLINK_BW 20.6 of 25 GB/s per link
    assert transport("p2p-nvlink").aggregate_efficiency == pytest.approx(20.6 / 25)
    # GDR off (NVIDIA/nccl #412): ~16 GB/s of HDR's ~24 with GDR; a host copy at each end,
    # 2 x hwLat PCI 1.0 us
    staging = transport("host-staging")
    assert staging.aggregate_efficiency == pytest.approx(16 / 24, abs=1e-3)
    assert staging.latency_s == pytest.approx(2.0e-6) and staging.gdr == "none"


def test_cxi_rendezvous_against_its_sources():
    # libfabric prov/cxi cxip_msg_hpc.c: max_eager_size = rdzv_threshold + rdzv_get_min; cxip.h / cxip_info.c
    # defaults 2048 + 2049 through v2.1.x, 16384 + 2049 from v2.2.0 (commit 6cb6e048d)
    rdzv = transport("slingshot-cxi").rendezvous
    assert rdzv is not None
    assert rdzv.eager_max_at("1.22.0") == 2048 + 2049 == rdzv.eager_max_at("2.1.1")
    assert rdzv.eager_max_at("2.2.0") == 16384 + 2049 == rdzv.eager_max_at(None)
    assert rdzv.eager_max_at("1.15.2") == 4097  # HPE's own build, before the first upstream release
    # cscs-docs image-ompi.md osu_latency on two Alps nodes: 4.89 us at 4096 B (eager), 8.31 at 8192 B
    # (rendezvous), less 4096 B at the osu_bw plateau 23.98 GB/s
    assert rdzv.round_trip_s == pytest.approx((8.31 - 4.89) * 1e-6 - 4096 / 23.98e9, abs=0.01e-6)
    # no other transport has one: IB verbs, EFA's SRD and sockets carry no provider rendezvous in the model
    assert [k for k in transport_names() if transport(k).rendezvous is not None] == ["slingshot-cxi"]


def test_unknown_transport_lists_known():
    with pytest.raises(ConfigError, match="unknown transport 'omnipath'.*efa-srd"):
        transport("omnipath")


def test_nccl_env_parses_and_resolves_algo_proto():
    env = NcclEnv.from_mapping(
        {
            "NCCL_ALGO": "Ring,Tree;allgather:^Ring",
            "NCCL_PROTO": "^LL128",
            "NCCL_NVLS_ENABLE": "0",
            "NCCL_MIN_NCHANNELS": "16",
            "NCCL_MAX_NCHANNELS": "32",
            "NCCL_IB_QPS_PER_CONNECTION": "2",
            "NCCL_NET_GDR_LEVEL": "2",  # paths.cc levelsOldToNew: 2 -> PXB
            "NCCL_DEBUG": "INFO",  # not ours: ignored
        }
    )
    assert env.algorithms("all_reduce") == {Algorithm.RING, Algorithm.TREE}
    assert Algorithm.RING not in env.algorithms("all_gather")
    assert Algorithm.NVLS not in env.algorithms("all_gather")  # NCCL_NVLS_ENABLE=0
    assert env.protocols("all_reduce") == {Protocol.LL, Protocol.SIMPLE}
    assert (env.min_nchannels, env.max_nchannels, env.ib_qps_per_connection) == (16, 32, 2)
    assert env.net_gdr_level is PathType.PXB
    # CollNet is off unless NCCL_COLLNET_ENABLE=1 (NCCL's default 0; tuning.cc: off when collnetEnable 0)
    collnet = {Algorithm.COLLNET_DIRECT, Algorithm.COLLNET_CHAIN}
    assert NcclEnv.from_mapping({}).algorithms("all_reduce") == frozenset(Algorithm) - collnet
    assert NcclEnv.from_mapping({"NCCL_COLLNET_ENABLE": "1"}).algorithms("all_reduce") == frozenset(Algorithm)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"NCCL_P2P_DISABLE": "yes"}, "NCCL_P2P_DISABLE: expected 0 or 1, got 'yes'"),
        ({"NCCL_SHM_DISABLE": "2"}, "NCCL_SHM_DISABLE: expected 0 or 1"),
        ({"NCCL_ALGO": "Ring,Butterfly"}, "NCCL_ALGO: unknown name 'Butterfly'"),
        ({"NCCL_ALGO": "ring;tree"}, "NCCL_ALGO: every entry but the first needs"),
        ({"NCCL_PROTO": "allreduce2:LL"}, "NCCL_PROTO: unknown prefix 'allreduce2'"),
        ({"NCCL_NVLS_ENABLE": "on"}, "NCCL_NVLS_ENABLE: expected an integer in 0..2"),
        ({"NCCL_MAX_NCHANNELS": "0"}, "NCCL_MAX_NCHANNELS: expected an integer in 1..64"),
        ({"NCCL_MIN_NCHANNELS": "32", "NCCL_MAX_NCHANNELS": "8"}, "NCCL_MIN_NCHANNELS: 32 is above"),
        ({"NCCL_NET_GDR_LEVEL": "FAR"}, "NCCL_NET_GDR_LEVEL: unknown path type 'FAR'"),
        ({"NCCL_IB_QPS_PER_CONNECTION": "0"}, "NCCL_IB_QPS_PER_CONNECTION: expected an integer"),
    ],
)
def test_bad_values_give_one_line_naming_the_variable(env, message):
    with pytest.raises(ConfigError) as err:
        NcclEnv.from_mapping(env)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_resolve_intra_node():
    default = NcclEnv()
    assert resolve_transport(default, same_node=True, gpu_path="NVL").transport.key == "p2p-nvlink"
    assert resolve_transport(default, same_node=True, gpu_path="PIX").transport.key == "p2p-pcie"
    # paths.cc: P2P up to PXB by default; PHB falls to SHM unless NCCL_P2P_LEVEL allows it
    assert resolve_transport(default, same_node=True, gpu_path="PHB").transport.key == "shm"
    sys_p2p = NcclEnv.from_mapping({"NCCL_P2P_LEVEL": "SYS"})
    assert resolve_transport(sys_p2p, same_node=True, gpu_path="SYS").transport.key == "pcie-through-cpu"
    no_p2p = NcclEnv.from_mapping({"NCCL_P2P_DISABLE": "1"})
    assert resolve_transport(no_p2p, same_node=True, gpu_path="NVL").transport.key == "shm"
    neither = NcclEnv.from_mapping({"NCCL_P2P_DISABLE": "1", "NCCL_SHM_DISABLE": "1"})
    assert resolve_transport(neither, same_node=True, gpu_path="NVL").transport.key == "ib-verbs"


def test_resolve_network_and_gdr():
    default = NcclEnv()
    ib = resolve_transport(default, same_node=False, nic_path="PIX")
    assert (ib.transport.key, ib.gdr) == ("ib-verbs", True)
    assert resolve_transport(default, same_node=False, fabric="ethernet").transport.key == "roce-v2"
    # NIC behind the CPU (PHB): GDR off by default (paths.cc netGdrLevel PXB), on with NCCL_NET_GDR_LEVEL=PHB
    assert not resolve_transport(default, same_node=False, nic_path="PHB").gdr
    phb = NcclEnv.from_mapping({"NCCL_NET_GDR_LEVEL": "PHB"})
    assert resolve_transport(phb, same_node=False, nic_path="PHB").gdr
    assert resolve_transport(default, same_node=False, net_plugin="aws-ofi-nccl").transport.key == "efa-srd"
    sock = resolve_transport(NcclEnv.from_mapping({"NCCL_NET": "Socket"}), same_node=False, nic_path="PIX")
    assert (sock.transport.key, sock.gdr) == ("tcp-socket", False)
    with pytest.raises(ConfigError, match="needs GPUDirect RDMA"):
        resolve_transport(default, same_node=False, nic_path="SYS", net_plugin="tcpxo")
    with pytest.raises(ConfigError, match="net plugin: unknown 'carrier-pigeon'"):
        resolve_transport(default, same_node=False, net_plugin="carrier-pigeon")
