"""Public outputs, ninth set (``fixtures/public8/README.md`` names each source; each file's first line too):
what the readers make of them.

Logs: rows, first and last size with the out-of-place busbw as printed (GB/s), collective and ranks; where a
text holds no nccl-tests table, why. NCCL INFO excerpts: the release, the network and its devices, link
layers, the transports inside a node, the ranks, whether trees were printed. Topologies: GPUs, NICs,
NVLink, the nearest NIC, NUMA nodes. ibstat: the ports and their rates. Inputs the readers have no reader
for: one line, exit 2, naming what the text is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.discovery import test_public_outputs2 as checks  # the checks the third set makes
from tests.discovery.test_public_logs import Read  # what one table must read as
from tests.discovery.test_public_outputs3 import assert_fixtures_covered
from tests.discovery.test_public_outputs5 import InfoRead, info_read
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.ib_ports import port_rates_in_text
from aifabric.discovery.nccl_info import NcclInfo, parse_nccl_info
from aifabric.discovery.nvsmi import TopoMatrix

FIXTURES = Path(__file__).parent / "fixtures" / "public8"

LOGS: dict[str, Read] = {
    # in-place #wrong N/A beside a checked out-of-place half: alltoall (nccl-tests src/alltoall.cu reports
    # in-place errors off); 8 rank lines, one Pid, one host; busbw/algbw = 15.78/18.04 = 0.875 = 7/8
    "alltoall_h20_8r_one_process_in_place_na_cut.log": Read(
        3, (1048576, 15.78), (4194304, 61.84), "alltoall", 8, 1, "NVIDIA H20-3e"
    ),
    # old layout (error column, blank redop): all_gather and alltoall both print it, so the collective
    # stays open; 7 whole rows, the 128 MiB one cut after its count. Both print size = n x count x 4 B:
    # 1048576 / (16384 x 4) = 16 ranks either way (busbw/algbw 2.13/2.27 = 0.94 ~ 15/16 agrees)
    "msccl_alltoall_old_layout_in_place_unchecked_16r_cut.log": Read(
        7, (1048576, 1.72), (67108864, 2.13), None, 16, None
    ),
    # no header: redop none with root 0 is the layout of gather and scatter (nccl-tests src/gather.cu),
    # busbw/algbw = 19.46/38.93 = 0.5 and size = 2 x count x 4: 2 ranks either way; the 12th row cut
    "rows_none_root0_half_busbw_headerless_cut.log": Read(
        11, (3892314112, 19.46), (5234491392, 18.57), None, 2, None
    ),
}

#: Texts without an nccl-tests table, and what the reader says of them.
NO_TABLE = {
    "alltoall_h20_2x2_header_then_info_cut.log": "the text stops after the run's header (line 8)",
    # before: "the text stops after the run's header (line 12), before its result table", for a text whose
    # line 18 is mscclpp-test's header (size count time algbw busbw #wrong, in-place half first) and line 20
    # its row: a table, of another tool's layout
    "mscclpp_allreduce_in_place_first_8r.log": "line 18 heads a table without nccl-tests' type and redop",
    # before: no reason at all
    "mscclpp_alltoall_out_of_place_only_tagged_2n.log": "line 6 heads a table without nccl-tests' type",
    "t4_2x2_g2_header_info_v2103_socket_cut.log": "the text stops after the run's header (line 10)",
    "a100_g2_header_sharp_plugin_socket_bridges_v2215_cut.log": "stops after the run's header (line 7)",
    # before: "the text stops after the run's header (line 3)"; nccl-tests v1.0.0's CUDACHECK prints
    # "Cuda failure %s:%d '%s'" (src/common.h), without v2's "Test"
    "nccl_tests_2017_no_hash_header_cuda_failure.log": (
        "the run failed at line 4: \"Cuda failure common.cu:891 'invalid device ordinal'\""
    ),
    # 16 processes each print "Rank  0": tests built without MPI, each a one-rank run; no table
    "rank0_sixteen_times_unmarked_no_mpi_cut.log": "the text stops after the run's header (line 17)",
}

#: INFO excerpts: (release, network, its devices, link layers, transports inside a node, ranks, trees).
INFO: dict[str, InfoRead] = {
    # NCCL 2.4: "NET/IB : No device found." then "NET/Socket : Using [0]ens3:..." on every host
    "info_nccl247_socket_ib_none_version_cut.log": ("2.4.7", "Socket", ("ens3",), (), (), None, False),
    # NCCL 2.4 connection lines without bus IDs; "comm ... rank 17 nranks 64" gives the ranks
    "info_nccl24_ring_send_receive_trees_64r_cut.log": (None, "Socket", (), (), (), 64, True),
    "info_h800_rank_line_then_roce_ib_hca_v2185_cut.log": (
        "2.18.5",
        "IB",
        ("mlx5_4:1",),
        ("RoCE",),
        (),
        None,
        False,
    ),
    # NCCL 2.19+ "Ring 02 : 2 -> 0 -> 1" (previous -> rank -> next) and "Tree 1 : 1 -> 3 -> 2/-1/-1" lines
    "info_ring_arrow_lines_tree_4r_2node_cut.log": (None, None, (), (), (), 4, True),
    # every ring line stops at 20 ranks (graph/rings.cc before 2.19) while ranks up to 31 show: no count
    "info_channel_lines_20_of_32_ranks_cut.log": (None, None, (), (), (), None, False),
    "info_k8s_indented_tag_prefix_socket_2r_cut.log": (None, "Socket", (), (), (), 2, True),
    "alltoall_h20_2x2_header_then_info_cut.log": (None, None, (), (), (), None, False),
    # before: ranks None; RCCL ends its lines with "comm 0x95cdeb0 nRanks 08" (ROCm/rccl src/transport/net.cc,
    # p2p.cc, init.cc: "comm %p nRanks %02d"), on every line of this excerpt
    "info_rccl_channel_lines_comm_nranks_suffix_8r_cut.log": (None, "Socket", (), (), ("P2P/IPC",), 8, False),
    "info_h800_direct_pointer_zero_nvls_channels_cut.log": (None, None, (), (), ("P2P/direct",), None, False),
    "info_gb200_mnnvl_clique_nvls_enable_cut.log": (None, None, (), (), (), None, False),
    "info_nvls_not_available_two_hosts_same_name_cut.log": (None, None, (), (), (), None, True),
    # "Channel 00/02 :    0   1   2   3" whole before the cut line: 4 ranks
    "t4_2x2_g2_header_info_v2103_socket_cut.log": ("2.10.3", "Socket", ("eth0",), (), (), 4, True),
    # before: devices also "br-811b", the fourth name cut where the copy stops ("[3]br-811b" ends the text;
    # NCCL prints each socket device as "[k]name:address<n>", src/transport/net_socket.cc)
    "a100_g2_header_sharp_plugin_socket_bridges_v2215_cut.log": (
        "2.21.5",
        "Socket",
        ("eno1", "br-30d1aa8d4e26", "br-55beb62cf491"),
        (),
        (),
        None,
        False,
    ),
}

#: Topologies: GPUs read, NICs, (NVLink pairs, links per pair), GPU -> (nearest NIC, path), NUMA nodes.
TOPOLOGIES: dict[str, checks.TopologyRead] = {
    # header "NIC7NIC8" and cell "SYSSYS" fused by the copy; only row GPU0 whole
    "topo_fused_nic7nic8_header_vllm_cut.txt": (1, 10, (0, 0), {"GPU0": ("NIC0", "PIX")}, {0}),
    "topo_a100_nv12_pairs_no_nic.txt": (8, 0, (4, 12), {}, {0, 1}),
    # "NIC11NIC12" fused: GPU0 PIX to NIC11, GPU1 to NIC10, ... GPU4 to NIC7
    "topo_b200_vllm_nic11nic12_fused_13nic_cut.txt": (
        5,
        13,
        (10, 18),
        {"GPU0": ("NIC11", "PIX"), "GPU3": ("NIC8", "PIX"), "GPU4": ("NIC7", "PIX")},
        {0},
    ),
    "topo_b200_unsloth_narrow_affinity_columns_cut.txt": (
        5,
        9,
        (10, 18),
        {"GPU0": ("NIC0", "PIX"), "GPU2": ("NIC2", "PIX"), "GPU4": ("NIC4", "PIX")},
        {0, 1, 2},
    ),
    "topo_b200_sglang_nic12_nic13_single_spaced_cut.txt": (1, 14, (0, 0), {"GPU0": ("NIC0", "PIX")}, {0}),
    # GPU0 PIX to NIC0 and NIC1; row GPU2 cut before its affinity
    "topo_vllm_two_pix_nics_gpu0_10nic_cut.txt": (
        3,
        10,
        (3, 18),
        {"GPU0": ("NIC0", "PIX"), "GPU1": ("NIC2", "PIX"), "GPU2": ("NIC3", "PIX")},
        {0},
    ),
    "topo_vllm_env_18nic_numa_0_2_cut.txt": (
        3,
        18,
        (3, 18),
        {"GPU0": ("NIC0", "PIX"), "GPU1": ("NIC1", "PIX"), "GPU2": ("NIC4", "PIX")},
        {0, 2},
    ),
}

#: ibstat: (device, port, active, Gb/s) of each port whose rate the text gives whole.
IB_PORTS = {
    # Ethernet ports Down at 40, the third device cut in its state
    "ibstat_ethernet_down_rate40_then_mt4129_cut.txt": [
        ("mlx5_0", 1, False, 40.0),
        ("mlx5_1", 1, False, 40.0),
    ],
    # a ConnectX-6 Dx trained at 2.5 (lshca's table above it prints 5)
    "ibstat_fractional_rate_after_lshca_table.txt": [("mlx5_2", 1, True, 2.5)],
    # ibwarn trace lines, tabs, one CA with two ports
    "ibstat_ibwarn_lines_mlx4_two_ports_tabs_cut.txt": [
        ("mlx4_0", 1, False, 10.0),
        ("mlx4_0", 2, True, 56.0),
    ],
}

#: Inputs ``inspect`` cannot use, and its one line.
REFUSED = {
    "nvsmi_a_k80_vm_bus_id_cut.txt": "(it looks like nvidia-smi -q output: properties of each GPU",
    # before: "no nvidia-smi topo -m matrix ... found in 44 lines", nothing on what the text is
    "ibstat_ethernet_down_rate40_then_mt4129_cut.txt": "(it looks like ibstat or ibstatus output: NIC ports",
    "ibstat_fractional_rate_after_lshca_table.txt": "(it looks like ibstat or ibstatus output: NIC ports",
    "ibstat_ibwarn_lines_mlx4_two_ports_tabs_cut.txt": "(it looks like ibstat or ibstatus output: NIC ports",
    # before: no hint for a grep of nvidia-smi -q (no NVSMI LOG banner): its keys name it
    "nvsmi_q_grep_fabric_clique_unhealthy.txt": "(it looks like nvidia-smi -q output: properties of each GPU",
    "nvsmi_q_fabric_block_insufficient_resources.txt": "(it looks like nvidia-smi -q output: properties",
    "nvlink_status_h100_18_links_26g_cut.txt": "(it looks like nvidia-smi nvlink output: the links",
}


def test_every_fixture_is_covered_and_names_its_source() -> None:
    covered = set(LOGS) | set(NO_TABLE) | set(INFO) | set(TOPOLOGIES) | set(IB_PORTS) | set(REFUSED)
    assert_fixtures_covered(FIXTURES, covered, 15)


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_reads_as_published(name: str) -> None:
    checks.assert_log_reads(FIXTURES / name, LOGS[name])


@pytest.mark.parametrize(("name", "reason"), sorted(NO_TABLE.items()))
def test_a_text_without_an_nccl_tests_table_says_why(name: str, reason: str) -> None:
    checks.assert_no_table(FIXTURES / name, reason)


@pytest.mark.parametrize("name", sorted(INFO))
def test_info_lines_read_as_printed(name: str) -> None:
    assert info_read(FIXTURES / name) == INFO[name]


def test_rows_of_gather_or_scatter_ask_for_the_collective() -> None:
    path = FIXTURES / "rows_none_root0_half_busbw_headerless_cut.log"
    checks.assert_refused(["nccl-tests", "compare", str(path)], "(its columns fit gather and scatter)")


def test_nccl_2_4_connection_lines_count_sends_and_receives() -> None:
    # 6 "[send] via NET/Socket/0" and 5 "[receive] via NET/Socket/0" lines, the 17th line cut after "INFO"
    text = (FIXTURES / "info_nccl24_ring_send_receive_trees_64r_cut.log").read_text(encoding="utf-8")
    info = parse_nccl_info(text.splitlines())
    assert (info.net_connections, info.gdr_connections) == (11, 0)


def test_nvls_and_channel_lines_read_as_printed() -> None:
    def info(name: str) -> NcclInfo:
        return parse_nccl_info((FIXTURES / name).read_text(encoding="utf-8").splitlines())

    # "NVLS multicast support is not available on dev 7" on each GPU of two hosts
    assert info("info_nvls_not_available_two_hosts_same_name_cut.log").nvls_available is False
    # "16 coll channels, 0 nvls channels, 16 p2p channels": NVLS built no channel on this H800 node
    h800 = info("info_h800_direct_pointer_zero_nvls_channels_cut.log")
    assert (h800.coll_channels, h800.nvls_channels) == (16, 0)
    assert h800.env["NCCL_ALGO"] == "Tree,Ring,,CollnetDirect,CollnetChain,NVLS"
    assert info("info_gb200_mnnvl_clique_nvls_enable_cut.log").env == {"NCCL_NVLS_ENABLE": "1"}


def test_rccl_line_suffix_gives_the_ranks_but_not_before_a_whole_communicator_line() -> None:
    line = "h:1:1 [0] NCCL INFO Channel 00/0 : 7[ce000] -> 5[c6000] via P2P/IPC comm 0xfb16e30 nRanks 08"
    assert parse_nccl_info([line]).n_ranks == 8
    comm = "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0"
    both = parse_nccl_info([comm, line])
    assert (both.n_ranks, both.n_nodes) == (8, 2)  # the communicator line's nodes are kept


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_topology_reads_as_published(name: str) -> None:
    checks.assert_topology_reads(FIXTURES / name, TOPOLOGIES[name])


def test_fused_header_and_cell_keep_every_nic_column() -> None:
    # "NIC7NIC8" in the header and "SYSSYS" in row GPU0: GPU0 reads PIX NODE NODE NODE NODE SYS SYS SYS SYS
    # NODE to NIC0-NIC9, as the row prints them
    m = TopoMatrix.from_text((FIXTURES / "topo_fused_nic7nic8_header_vllm_cut.txt").read_bytes())
    paths = [m.path_type("GPU0", f"NIC{k}") for k in range(10)]
    assert paths == ["PIX", "NODE", "NODE", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS", "NODE"]


def test_nvlink_between_gpu_pairs_only_is_pcie_cards_on_bridges() -> None:
    # before: "modelled as a100-sxm-80gb (guessed from the layout)": "NV12 between GPUs: an A100 SXM board",
    # for 8 GPUs joined in 4 NV12 pairs, each pair NODE/SYS to the others. An SXM board links each GPU to
    # several others (all seven through NVSwitch on HGX A100 8-GPU); an NVLink bridge joins two PCIe cards
    # (the catalogue's A100 PCIe and H100 PCIe entries): the GPUs are PCIe cards, their model unknown
    r = CliRunner().invoke(app, ["inspect", str(FIXTURES / "topo_a100_nv12_pairs_no_nic.txt"), "--json"])
    assert r.exit_code == 0, r.output
    node = json.loads(r.stdout)
    node = node[0] if isinstance(node, list) else node
    assert "sxm" not in node["accelerator"], node["accelerator"]
    said = " ".join(node["assumptions"])
    assert "NV12 between GPU pairs only" in said and "PCIe cards" in said


@pytest.mark.parametrize("name", sorted(IB_PORTS))
def test_ibstat_ports_read_as_printed(name: str) -> None:
    ports = port_rates_in_text((FIXTURES / name).read_text(encoding="utf-8"))
    assert [(p.device, p.port, p.active, p.gbps) for p in ports] == IB_PORTS[name]


@pytest.mark.parametrize(("name", "reason"), sorted(REFUSED.items()))
def test_unusable_input_says_what_it_is(name: str, reason: str) -> None:
    checks.assert_refused(["inspect", str(FIXTURES / name)], reason)


def test_ibstatus_is_named_too() -> None:
    path = FIXTURES.parent / "public7" / "ibstatus_hdr200_three_then_40_cut.txt"
    checks.assert_refused(["inspect", str(path)], "(it looks like ibstat or ibstatus output")


def test_a_half_that_failed_its_check_does_not_make_the_other_an_outlier() -> None:
    # before: every row "one-off outlier" against an in-place half of 0.17-0.51 us whose error column is 1e+00
    # (the check failed: nccl-tests counts error > DeltaMaxValue(float) x (ranks - 1) = 1e-5 x 15 wrong),
    # so nothing counted and the verdict read "healthy (no large-message shortfall)" for out-of-place rows
    # 97.6 % below the model; the out-of-place half is the measurement
    path = FIXTURES / "msccl_alltoall_old_layout_in_place_unchecked_16r_cut.log"
    args = ["nccl-tests", "compare", str(path), "--collective", "alltoall", "--ranks", "16", "--nodes", "2"]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    (table,) = json.loads(r.stdout)["tables"]
    assert table["verdict"] != "healthy"
    assert not any("outlier" in row["causes"] for row in table["rows"])
