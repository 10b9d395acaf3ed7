"""NCCL INFO lines read into evidence (golden input -> expected object).

The lines follow NCCL's format strings (NVIDIA/nccl master: init.cc, transport/net.cc, transport/p2p.cc,
transport/shm.cc, transport/nvls.cc, transport/generic.cc, graph/topo.cc, net_ib/init.cc, net_socket.cc);
host names are placeholders.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aifabric.discovery.nccl_info import MAX_LINE_CHARS, Evidence, NcclInfo, parse_nccl_info

IB_2_NODES = """\
node-a:101:101 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node-a:101:101 [0] NCCL INFO NCCL version 2.19.3+cuda12.2
node-a:101:130 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>
node-a:101:130 [0] NCCL INFO Using network IB
node-a:101:130 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0
node-a:101:130 [0] NCCL INFO NVLS multicast support is not available on dev 0
node-a:101:130 [0] NCCL INFO Channel 00/32 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15
node-a:101:130 [0] NCCL INFO Trees [0] 1/8/-1->0->-1 [1] 1/-1/-1->0->8
node-a:101:130 [0] NCCL INFO 32 coll channels, 32 collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer
node-a:101:130 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
node-a:101:130 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct
node-a:101:130 [7] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/1/GDRDMA
node-a:101:130 [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/IB/0/GDRDMA
node-a:101:130 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1
"""  # noqa: E501  (NCCL's lines verbatim)


def test_golden_ib_two_nodes() -> None:
    info = parse_nccl_info(IB_2_NODES.splitlines())
    assert info.version == "2.19.3"
    assert info.network == "IB"
    assert info.net_devices == ("mlx5_0:1", "mlx5_1:1")
    assert info.link_layers == ("RoCE",)
    assert (info.n_ranks, info.n_nodes, info.local_ranks) == (16, 2, 8)
    assert info.nvls_available is False
    assert (info.coll_channels, info.collnet_channels, info.nvls_channels) == (32, 32, 0)
    assert info.n_rings == 1 and info.trees
    assert info.intra_transports == ("P2P/CUMEM", "SHM/direct")
    assert (info.net_connections, info.gdr_connections, info.net_devices_used) == (2, 2, (0, 1))
    assert info.gdr is True
    assert info.pxn is False  # "use ring PXN 0"
    assert info.lines("nvls") == (Evidence(6, "NVLS multicast support is not available on dev 0"),)
    assert info.lines("version")[0].line == 2


def test_socket_pxn_gdr_and_env() -> None:
    text = [
        "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>",
        "h:1:1 [0] NCCL INFO Using network Socket",
        "h:1:1 [0] NCCL INFO NCCL_PXN_DISABLE set by environment to 1.",
        "h:1:1 [1] NCCL INFO Channel 01/0 : 1[1] -> 9[1] [send] via NET/Socket/1",
    ]
    info = parse_nccl_info(text)
    assert info.network == "Socket"
    assert info.net_devices == ("eth0", "eth1")
    assert info.gdr is False
    assert info.pxn is False
    assert info.env == {"NCCL_PXN_DISABLE": "1"}


def test_pxn_proxy_and_plugins() -> None:
    text = [
        "h:1:1 [0] NCCL INFO Using network AWS Libfabric",
        "h:1:1 [3] NCCL INFO Channel 02/0 : 3[3] -> 11[3] [send] via NET/AWS Libfabric/2(2)/GDRDMA",
        "h:1:1 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'",
    ]
    info = parse_nccl_info(text)
    assert info.network == "AWS Libfabric"
    assert info.pxn is True
    assert info.gdr is True  # every network connection printed /GDRDMA
    assert info.gdr_disabled_hcas == (0,)


def test_old_comm_line_and_nvls_available() -> None:
    info = parse_nccl_info([
        "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 32 cudaDev 0 busId 18000 - Init COMPLETE",
        "h:1:1 [0] NCCL INFO NVLS multicast support is available on dev 0",
    ])  # fmt: skip
    assert info.n_ranks == 32 and info.n_nodes is None
    assert info.nvls_available is True


def test_no_info_lines_is_empty() -> None:
    info = parse_nccl_info(["#  size count type", "NCCL version 2.19.3 (banner of nccl-tests, not INFO)"])
    assert info.empty and info == NcclInfo()


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(IB_2_NODES.splitlines()), max_size=30), st.text(max_size=200))
def test_mutated_lines_never_raise(lines: list[str], noise: str) -> None:
    """Shuffled real lines with noise appended give a result, never an exception."""
    info = parse_nccl_info([line + noise for line in lines] + [noise])
    assert info.net_connections >= info.gdr_connections >= 0


def test_overlong_line_is_cut() -> None:
    line = "h:1:1 [0] NCCL INFO Channel 00/32 :" + " 1" * (4 * MAX_LINE_CHARS)
    info = parse_nccl_info([line])
    assert info.n_rings == 1  # read up to the cut, in bounded time
    assert len(info.lines("rings")[0].text) <= 200


def test_acs_hint_is_evidence() -> None:
    from aifabric.discovery.evidence import evidence_causes

    info = parse_nccl_info([
        "h:1:1 [0] NCCL INFO HINT: In many cases this error occurs when ACS is enabled which would break GPU "
        "Direct RDMA protocol.",
    ])  # fmt: skip
    assert [key for key, _ in evidence_causes(info, 2)] == ["acs_iommu"]
    assert evidence_causes(info, 1) == ()  # one node: no network, no GPU-NIC RDMA path


def test_shared_memory_of_nccl_2_5_to_2_11_is_shm_direct() -> None:
    """2.5-2.11 print shared memory as ``"Channel %02d : %d[%lx] -> %d[%lx] via direct shared memory"``
    (``Ring %02d`` in 2.5-2.6; NVIDIA/nccl ``src/transport/shm.cc`` of v2.6.4-1 and v2.11.4-1, the bus id in
    hex): the transport 2.12+ name ``SHM/direct``."""
    info = parse_nccl_info([
        "h:1:1 [0] NCCL INFO Ring 01 : 0[1a000] -> 1[1b000] via direct shared memory",
        "h:1:1 [0] NCCL INFO Channel 00 : 2[3d000] -> 3[3e000] via direct shared memory",
    ])  # fmt: skip
    assert info.intra_transports == ("SHM/direct",)
    assert len(info.lines("intra")) == 2


def test_gb200_mnnvl_lines_give_the_nvlink_fabric_clique() -> None:
    # NVIDIA/nccl #1769 (GB200): each GPU prints 'MNNVL busId ... fabric UUID ... cliqueId 0x7ffe state 3'
    # (init.cc: NVML fabric info; state 3 = NVML_GPU_FABRIC_STATE_COMPLETED). That says the GPUs are in an
    # NVLink fabric clique, not that the communicator used it: no 'MNNVL 1' line in this cut.
    path = Path(__file__).parent / "fixtures" / "public8" / "info_gb200_mnnvl_clique_nvls_enable_cut.log"
    info = parse_nccl_info(path.read_text(encoding="utf-8").splitlines())
    assert (info.mnnvl, info.mnnvl_clique, info.mnnvl_fabric_state) == (None, "0x7ffe", 3)
    assert [e.line for e in info.lines("mnnvl")] == [5, 6]
    note = info.nvlink_domain_note
    assert note is not None and note.startswith("the GPUs are in NVLink fabric clique 0x7ffe (registered")


def test_the_mnnvl_enable_lines_say_the_run_spanned_an_nvlink_domain() -> None:
    # v2.26.2-1 mnnvl.cc:78 'MNNVL %d cliqueId %x cliqueSize %d cliqueRank %d' and init.cc:988's communicator
    # line ending 'MNNVL %d': 16 ranks on 4 GB200 trays of one clique ran multi-node NVLink
    info = parse_nccl_info([
        "n1:7:9 [0] NCCL INFO comm 0x55d3 rank 0 nRanks 16 nNodes 4 localRanks 4 localRank 0 MNNVL 1",
        "n1:7:9 [0] NCCL INFO MNNVL 1 cliqueId 7ffe cliqueSize 16 cliqueRank 0",
    ])  # fmt: skip
    assert (info.mnnvl, info.mnnvl_clique, info.mnnvl_clique_size, info.n_ranks) == (True, "0x7ffe", 16, 16)
    assert info.nvlink_domain_note == (
        "the run spanned an NVLink domain across trays: multi-node NVLink on, clique 0x7ffe of 16 ranks "
        "(line 1, line 2)"
    )
    # an H100 pair of nodes prints 'MNNVL 0' (public3 NVLS heads log): no NVLink between its nodes
    off = parse_nccl_info(
        ["h:1:2 [0] NCCL INFO comm 0x55 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0"]
    )
    assert off.mnnvl is False and off.mnnvl_clique is None
    assert parse_nccl_info(["h:1:2 [0] NCCL INFO NVLS multicast support is available on dev 0"]).mnnvl is None
