"""Public outputs, seventh set (``fixtures/public6/README.md`` names each source; each file's first line too):
what the readers make of them.

Logs: rows, first and last size with the out-of-place busbw as printed (GB/s), collective and ranks, and
where a log without a table stops. NCCL INFO excerpts: the release, the network and its devices, link
layers, the transports inside a node, the ranks, whether trees were printed. Topologies: GPUs, NICs,
NVLink, the nearest NIC, NUMA nodes. Inputs the readers have no reader for: one line, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.discovery import test_public_outputs2 as checks  # the checks the third set makes
from tests.discovery.test_public_logs import Read  # what one table must read as
from tests.discovery.test_public_outputs3 import assert_fixtures_covered
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.evidence import net_transport
from aifabric.discovery.ib_ports import port_rates_in_text
from aifabric.discovery.nccl_info import parse_nccl_info
from aifabric.discovery.node import inspect_node_text
from aifabric.discovery.paste import parse_pasted

FIXTURES = Path(__file__).parent / "fixtures" / "public6"

LOGS: dict[str, Read] = {
    # 10 whole rows (the 11th stops after its algbw); redop sum, root -1, size = count x 4 and busbw =
    # algbw: all_reduce of 2 ranks or sendrecv, which the readers leave open (``compare`` asks)
    "allreduce_units_line_then_rows_2r_cut.log": Read(10, (8, 0.0), (4096, 0.18), None, None, None),
    # NCCL 1's own test: busbw = algbw x 2(n-1)/n printed 0.00 beside 157 GB/s algbw: one GPU
    # (test/single/all_reduce_test.cu of NVIDIA/nccl v1.3.4-1); the 11th row is cut in its in-place half
    # before: collective None ("no binary named"). The old layout (redop, no root, error column): of the
    # tests of 2021, only all_reduce and reduce_scatter print a reduction without a root, and size = count
    # x 4 on 4 ranks is not reduce_scatter's (nccl-tests src/*.cu print_header at 9dae3d3)
    "allreduce_old_error_column_4x2080ti_cut.log": Read(
        3, (8, 0.0), (32, 0.0), "all_reduce", 4, 1, "NVIDIA GeForce RTX 2080 Ti"
    ),
    "nccl1_single_all_reduce_ops_types_bytes_res_cut.log": Read(
        10, (10000000, 0.0), (10000000, 0.0), "all_reduce", 1, None
    ),
}

#: Logs without a result table, and where the reader says the run stopped.
NO_TABLE = {
    # 16 ranks on swat1-04 and swat1-05, cut inside rank 11's bus ID
    "allgather_half_mpirun_16r_2node_header_cut.log": "the text stops after the run's header (line 19)",
    "alltoall_mpirun_bond_4r_2node_header_cut.log": "the text stops after the run's header (line 13)",
    "tinygrad_4090_p2p_header_then_info_v2234_cut.log": "the text stops after the run's header (line 10)",
}

#: INFO excerpts: (release, network, its devices, link layers, transports inside a node, ranks, trees).
InfoRead = tuple[str | None, str | None, tuple[str, ...], tuple[str, ...], tuple[str, ...], int | None, bool]
INFO: dict[str, InfoRead] = {
    # before: devices (), link layers (): NCCL 2.20 prints two ports merged into device 0 as "[0]={[0]
    # mlx5_7:1/RoCE, [1] mlx5_6:1/RoCE}" (src/transport/net_ib.cc of v2.20.5-1)
    "info_vllm_roce_fused_braces_v2205_cut.log": (
        "2.20.5",
        "IB",
        ("mlx5_7:1", "mlx5_6:1"),
        ("RoCE",),
        (),
        2,
        False,
    ),
    # before: network "S", from the last line, cut where the copy stops; "Using network Socket" above it
    "tinygrad_4090_p2p_header_then_info_v2234_cut.log": (
        "2.23.4",
        "Socket",
        ("enp100s0",),
        (),
        (),
        None,
        False,
    ),
    "info_torchrun_warnings_eno1_v2205_cut.log": ("2.20.5", None, (), (), (), None, False),
    "info_ray_worker_prefix_rdma_plugin_sharp_cut.log": (None, None, (), (), (), None, False),
    "info_l20_shm_2r_nnodes_localranks_cut.log": (None, None, (), (), ("SHM/direct",), 2, True),
    "info_ibext_channels_2node_send_receive_cut.log": (None, "IBext", (), (), ("P2P/IPC",), None, False),
    # before: no transport inside the node: peers named by bus ID in hex ("9[8000] -> 10[d000]", %lx of
    # busId in NCCL 2.7-2.12 src/transport/*.cc)
    "info_ibext_gdrdma_busid_shm_16r_cut.log": (None, "IBext", (), (), ("SHM/direct", "P2P/IPC"), None, True),
    "info_busid_channels_p2p_ipc_read_8r_cut.log": (None, None, (), (), ("P2P/IPC",), None, False),
    # before: none: NCCL 2.5's "Ring 00 : 3[b0] -> 0[80] via direct shared memory" (transport/shm.cc)
    "info_nccl256_ring_direct_shm_trees_pipe_cut.log": (None, None, (), (), ("SHM/direct",), None, True),
    # before: ranks None: rank 0 prints each ring's nRanks ranks (graph/rings.cc dumpLine), here 0 to 15
    "info_pdsh_ip_prefix_16r_rings_trees_cut.log": (None, None, (), (), (), 16, True),
    # NCCL's search (Pattern lines) and path lines: nothing the reader keeps
    "info_indented_pattern_lines_2gpu_phb_cut.log": (None, None, (), (), (), None, False),
    "info_path_lines_nvb_nvl_indented_cut.log": (None, None, (), (), (), None, False),
    "info_pdsh_host_prefix_ib_alloc_latency_cut.log": (None, None, (), (), (), None, False),
    "info_init_complete_8r_async_event_warns.log": (None, None, (), (), (), 8, False),
    "info_python_logging_timestamp_channels_8r_cut.log": (None, None, (), (), ("P2P/IPC",), None, False),
    "info_cluster_name_socket_channels_16r_cut.log": (None, "Socket", (), (), ("P2P/IPC",), None, False),
}

#: Topologies: GPUs read, NICs, (NVLink pairs, links per pair), GPU -> (nearest NIC, path), NUMA nodes.
TOPOLOGIES: dict[str, checks.TopologyRead] = {
    # only row GPU0 of 8; its NUMA Affinity "0" is the last value before the cut, so it may itself be cut
    "topo_b200_sglang_env_16nic_gpu0_cut.txt": (1, 16, (0, 0), {"GPU0": ("NIC4", "PXB")}, set()),
}

#: Inputs ``inspect`` cannot use, and its one line.
REFUSED = {
    "topo_h20_nic_rows_only_38nic_cut.txt": "2: the matrix starts at row NIC30 without its header line",
    # before: "no nvidia-smi topo -m matrix ... found in 25 lines", nothing on what the text is
    "nvlink_remote_h100_18links_cut.txt": "(it looks like nvidia-smi nvlink output: the links of each GPU",
    "ibv_devinfo_roce_mt4129_ethernet_cut.txt": "(it looks like ibv_devinfo output: NIC ports",
    "nvsmi_q_quadro_p2000_header_cut.txt": "(it looks like nvidia-smi -q output: properties of each GPU",
    # before: no hint: the run's "# nThread" header without its table
    "tinygrad_4090_p2p_header_then_info_v2234_cut.log": "(it looks like an nccl-tests log: use 'aifabric",
}


def test_every_fixture_is_covered_and_names_its_source() -> None:
    covered = set(LOGS) | set(NO_TABLE) | set(INFO) | set(TOPOLOGIES) | set(REFUSED)
    assert_fixtures_covered(FIXTURES, covered, 15)


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_reads_as_published(name: str) -> None:
    checks.assert_log_reads(FIXTURES / name, LOGS[name])


def test_nccl1_tests_print_milliseconds() -> None:
    # before: 0.064 read as microseconds (6.4e-8 s). NCCL 1's tests print elapsedSec * 1.0E3 under "time":
    # 10,000,000 B in 0.064 ms is 156 GB/s, the 157.38 printed (0.064 is rounded to 1 us)
    path = FIXTURES / "nccl1_single_all_reduce_ops_types_bytes_res_cut.log"
    (table,) = parse_pasted(path.read_bytes(), path.name)
    first = table.rows[0]
    assert first.out_of_place is not None and first.out_of_place.time_s == pytest.approx(64e-6)
    assert first.size_bytes / first.out_of_place.time_s == pytest.approx(157.38e9, rel=0.01)
    assert [r.redop for r in table.rows[:4]] == ["sum", "prod", "max", "min"]
    assert not table.header_supplied and {r.dtype for r in table.rows} == {"char", "int", "half"}


def test_rows_that_fit_two_collectives_are_not_guessed() -> None:
    args = ["nccl-tests", "compare", str(FIXTURES / "allreduce_units_line_then_rows_2r_cut.log")]
    checks.assert_refused(
        args, "cannot tell the collective of this table from the log (its columns fit all_reduce"
    )


@pytest.mark.parametrize("name", sorted(INFO))
def test_info_lines_read_as_printed(name: str) -> None:
    assert info_read(FIXTURES / name) == INFO[name]


def info_read(path: Path) -> InfoRead:
    """What the INFO lines of ``path`` read as, in the order of :data:`InfoRead`."""
    info = parse_nccl_info(path.read_text(encoding="utf-8").splitlines())
    return (
        info.version,
        info.network,
        info.net_devices,
        info.link_layers,
        info.intra_transports,
        info.n_ranks,
        info.trees,
    )


@pytest.mark.parametrize(("name", "reason"), sorted(NO_TABLE.items()))
def test_a_header_without_its_table_says_where_it_stops(name: str, reason: str) -> None:
    checks.assert_no_table(FIXTURES / name, reason)


def test_merged_roce_ports_are_priced_as_roce() -> None:
    text = (FIXTURES / "info_vllm_roce_fused_braces_v2205_cut.log").read_text(encoding="utf-8")
    roce = net_transport(parse_nccl_info(text.splitlines()))
    assert roce is not None and roce.key == "roce-v2"


def test_old_coll_plugin_line_names_sharp() -> None:
    # before: collnet plugin None; 2.12-2.2x print "NET/Plugin: Loaded coll plugin SHARP (v5)" (src/net.cc)
    text = (FIXTURES / "info_ray_worker_prefix_rdma_plugin_sharp_cut.log").read_text(encoding="utf-8")
    info = parse_nccl_info(text.splitlines())
    assert (info.plugin, info.collnet_plugin) == ("NCCL RDMA Plugin", "SHARP")


def test_ring_lines_give_the_ranks_only_when_whole() -> None:
    ring = "h:1:1 [0] NCCL INFO Channel 00/02 :    0   1   2   3"
    other = "h:1:1 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1"
    assert parse_nccl_info([ring, other]).n_ranks == 4
    assert parse_nccl_info([other, ring]).n_ranks is None  # the last line: the copy may stop inside it
    twenty = "h:1:1 [0] NCCL INFO Channel 00/02 :" + "".join(f" {r:3d}" for r in range(20))
    assert parse_nccl_info([twenty, other]).n_ranks is None  # up to 2.18 a ring line stops at 20 ranks
    comm = "h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0"
    assert parse_nccl_info([ring, comm, other]).n_ranks == 8  # the communicator line says it


def test_channel_lines_of_each_release_name_their_transport() -> None:
    lines = [
        "h:1:1 [0] NCCL INFO Ring 00 : 15 -> 0 [send] via NET/Socket/0",  # 2.4
        "h:1:1 [1] NCCL INFO Ring 00 : 1[90] -> 2[c0] via P2P/IPC",  # 2.5: bus IDs in hex
        "h:1:1 [2] NCCL INFO Channel 00 : 9[8000] -> 10[d000] via direct shared memory",  # 2.7
    ]
    info = parse_nccl_info(lines)
    assert (info.network, info.net_connections, info.intra_transports) == (
        "Socket",
        1,
        ("P2P/IPC", "SHM/direct"),
    )


def test_ibv_devinfo_gives_the_mtu_but_no_rate() -> None:
    text = (FIXTURES / "ibv_devinfo_roce_mt4129_ethernet_cut.txt").read_text(encoding="utf-8")
    assert not port_rates_in_text(text) and parse_nccl_info(text.splitlines()).mtu_bytes == 4096


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_topology_reads_as_published(name: str) -> None:
    checks.assert_topology_reads(FIXTURES / name, TOPOLOGIES[name])


def test_a_row_cut_in_its_affinity_is_no_vm_and_its_nvlink_is_said() -> None:
    # before: "no CPU or NUMA affinity reported (typical of a VM)" and "NVLink: none in the input", for a
    # GPU0 row that prints "0-55,112-167  0" and NV18 to GPU1-GPU7 before the copy stops
    path = FIXTURES / "topo_b200_sglang_env_16nic_gpu0_cut.txt"
    (node,) = inspect_node_text(path.read_text(encoding="utf-8"), source=path.name)
    assert "no_affinity" not in {w.code for w in node.warnings}
    assert node.layout.nvlinks_to_cut_gpus == tuple(("GPU0", f"GPU{g}", 18) for g in range(1, 8))
    result = CliRunner().invoke(app, ["inspect", str(path)])
    said = " ".join(result.output.split())
    assert result.exit_code == 0 and "the rows read show GPU0-GPU1 NV18" in said
    assert "NVLink: none in the input" not in said


@pytest.mark.parametrize(("name", "reason"), sorted(REFUSED.items()))
def test_unusable_input_says_what_it_is(name: str, reason: str) -> None:
    checks.assert_refused(["inspect", str(FIXTURES / name)], reason)
