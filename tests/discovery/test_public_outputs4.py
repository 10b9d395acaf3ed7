"""Public outputs, sixth set (``fixtures/public5/README.md`` names each source; each file's first line too):
what the readers make of them.

Logs: rows, first and last size with the out-of-place busbw as printed (GB/s), and where a log without a
table stops. NCCL INFO excerpts: the release, the network NCCL used and its devices. ``ibstat``: the port
rates. Topologies: GPUs, NICs, NVLink, NUMA nodes. Inputs the readers have no reader for: one line, exit 2.
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

FIXTURES = Path(__file__).parent / "fixtures" / "public5"

LOGS: dict[str, Read] = {
    # 12 rows printed; the 12th stops after its out-of-place busbw (143.29) and before #wrong: the last field
    # of a cut line may itself be cut, so 11 rows. busbw/algbw = 138.48/276.96 = 0.5 = (n-1)/n: 2 ranks of
    # all_gather or alltoall (both print redop "none", root -1 and the same factor): the log cannot tell
    # which, but both print size = n x count x 2 B (771751936 / (192937984 x 2) = 2): 2 ranks either way
    "allgather_bf16_none_rows_headerless_cut.log": Read(
        11, (771751936, 138.48), (939524096, 142.89), None, 2, None
    ),
}

#: Logs without a result table, and where the reader says the run stopped.
NO_TABLE = {
    # srun, 16 ranks on worker-1 and worker-0, the copy cut inside rank 12's host name
    "h100_srun_2node_16r_header_cut.log": "the text stops after the run's header (line 20)",
    # the mpirun line, then the header without its "#" line; cut after "#  Rank  7 Group"
    "h100_mpirun_line_then_header_no_hash_gap_cut.log": "the text stops after the run's header (line 14)",
    # "Could not find a path for pattern 4, falling back to simple order": a WARN NCCL carries on after
    "gtx1050ti_950_nccl2165_info_warn_path_cut.log": "the text stops after the run's header (line 11)",
}

#: NCCL INFO excerpts: (release, network, devices NCCL lists for it, link layers, trees printed).
INFO: dict[str, tuple[str | None, str | None, tuple[str, ...], tuple[str, ...], bool]] = {
    # before: release None; "NCCL version 2.16.5+cuda11.8" is printed alone (init.cc showVersion's printf)
    "gtx1050ti_950_nccl2165_info_warn_path_cut.log": ("2.16.5", "Socket", ("eth0", "virbr0"), (), False),
    # before: release None, network "Socket", devices ib0 and mlx5_0:1 -- 2.4.7 starts sockets for the
    # bootstrap and then uses IB, which listed mlx5_0:1/IB (init.cc initNet of v2.4.7-1)
    "info_nccl247_bare_version_socket_ib0_cut.log": ("2.4.7", "IB", ("mlx5_0:1",), ("IB",), False),
    # before: network None; "CUDA Dev 0[0], IB NIC distance :  PIX" names ncclNetName() (2.4 transport/net)
    "info_nccl24_ib_nic_distance_pix_cut.log": (None, "IB", (), (), False),
    # libibverbs missing: sockets over the four IPoIB interfaces ibp5s0 ... ibp212s0
    "info_hgx_a100_socket_ibp_no_ibverbs_system_tree_cut.log": (
        None,
        "Socket",
        ("ibp5s0", "ibp70s0", "ibp140s0", "ibp212s0"),
        (),
        False,
    ),
    # every line behind an mpirun "[155] " prefix; four IB ports and one RoCE
    "info_mpi_rank_prefix_ib_roce_mixed_cut.log": (
        None,
        "IB",
        ("mlx5_1:1", "mlx5_3:1", "mlx5_0:1", "mlx5_2:1", "mlx5_4:1"),
        ("IB", "RoCE"),
        True,
    ),
    # mpirun --tag-output "[1,9]<stdout>:" behind 8 blanks on "Destroy COMPLETE" lines: no network named
    "info_tag_output_indented_destroy_16r_cut.log": (None, None, (), (), False),
    # the RDMA plugin's "IBext_v8" over eight RoCE ports, the list ending "[RO]; OOB eth0"
    "info_roce_ro_ibext_v8_8nic_cut.log": (
        None,
        "IBext_v8",
        tuple(f"mlx5_{i}:1" for i in range(8)),
        ("RoCE",),
        False,
    ),
}

#: ``ibstat`` (and one cut ``ibstat``): (device, port, active, Gb/s) of each port with a rate.
PORTS = {
    # mlx5_10 is Down and cut before its Rate line
    "ibstat_mt4129_200_ethernet_down_cut.txt": [("mlx5_0", 1, True, 200.0), ("mlx5_1", 1, True, 200.0)],
    "ibstat_mt4125_100_ethernet_two_ports.txt": [("mlx5_0", 1, True, 100.0), ("mlx5_1", 1, True, 100.0)],
    # tab-indented, "..." above, an ibpanic line below
    "ibstat_tabs_elided_then_ibpanic.txt": [("mlx5_7", 1, True, 200.0)],
}

#: Topologies: GPUs read, NICs, (NVLink pairs, links per pair), GPU -> (nearest NIC, path), NUMA nodes.
TOPOLOGIES: dict[str, checks.TopologyRead] = {
    "topo_2x5090_tabs_phb_then_p2p_rw.txt": (2, 0, (0, 0), {}, {0}),
}

#: Inputs the readers cannot use, and the one line ``inspect`` says.
REFUSED = {
    # before: "no nvidia-smi topo -m matrix (a line starting with GPU0) ...", for rows GPU5-GPU7 and NIC0-NIC4
    "topo_nv18_rows_gpu5_nic_rows_without_header_cut.txt": (
        "2: the matrix starts at row GPU5 without its header line"
    ),
    # iblinkinfo and nvidia-smi nvlink -s: no reader reads them (noted in the fixtures' README)
    "iblinkinfo_v100_roce_4x_25g_cut.txt": "no nvidia-smi topo -m matrix",
    "nvlink_status_gb200_18links_dots.txt": "no nvidia-smi topo -m matrix",
}


def test_every_fixture_is_covered_and_names_its_source() -> None:
    covered = set(LOGS) | set(NO_TABLE) | set(INFO) | set(PORTS) | set(TOPOLOGIES) | set(REFUSED)
    assert_fixtures_covered(FIXTURES, covered, 15)


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_reads_as_published(name: str) -> None:
    checks.assert_log_reads(FIXTURES / name, LOGS[name])


def test_two_rank_all_gather_and_alltoall_rows_are_not_guessed() -> None:
    path = FIXTURES / "allgather_bf16_none_rows_headerless_cut.log"
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(path)])
    assert result.exit_code == 2 and "its columns fit all_gather and alltoall" in result.output


@pytest.mark.parametrize(("name", "reason"), sorted(NO_TABLE.items()))
def test_log_without_table_says_where_it_stops(name: str, reason: str) -> None:
    checks.assert_no_table(FIXTURES / name, reason)


@pytest.mark.parametrize("name", sorted(INFO))
def test_info_lines_read_as_printed(name: str) -> None:
    info = parse_nccl_info((FIXTURES / name).read_text(encoding="utf-8").splitlines())
    got = (info.version, info.network, info.net_devices, info.link_layers, info.trees)
    assert got == INFO[name]


def test_the_rdma_plugins_verbs_on_roce_is_priced_as_roce() -> None:
    # before: None (NCCL's NET/IB on InfiniBand) for "Using network IBext_v8" over eight /RoCE ports
    text = (FIXTURES / "info_roce_ro_ibext_v8_8nic_cut.log").read_text(encoding="utf-8")
    roce = net_transport(parse_nccl_info(text.splitlines()))
    assert roce is not None and roce.key == "roce-v2"
    assert net_transport(parse_nccl_info(text.replace("/RoCE", "/IB").splitlines())) is None
    other = parse_nccl_info(["h:1:1 [0] NCCL INFO Using network IBextra"])  # not the plugin's name
    assert net_transport(other) is None and other.network == "IBextra"


def test_a_socket_list_printed_first_does_not_hide_ib() -> None:
    # NET/Socket (bootstrap) then NET/IB, in either order, and no "Using network": IB, with IB's devices
    sock = "h:1:1 [0] NCCL INFO NET/Socket : Using [0]ib0:192.168.11.1<0>"
    ib = "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>"
    for lines in ([sock, ib], [ib, sock]):
        info = parse_nccl_info(lines)
        assert (info.network, info.net_devices) == ("IB", ("mlx5_0:1",))
    said = parse_nccl_info([sock, ib, "h:1:1 [0] NCCL INFO Using network Socket"])
    assert (said.network, said.net_devices) == ("Socket", ("ib0",))
    assert parse_nccl_info(["  NCCL version 2.4.7+cuda10.0"]).version == "2.4.7"
    assert parse_nccl_info(["see NCCL version 2.4.7+cuda10.0"]).version is None  # prose, not the banner


def test_destroy_lines_behind_tag_output_give_the_ranks() -> None:
    # "rank 9 nranks 16 cudaDev 1 busId 64000 - Destroy COMPLETE" on worker-1 and worker-0
    text = (FIXTURES / "info_tag_output_indented_destroy_16r_cut.log").read_text(encoding="utf-8")
    assert parse_nccl_info(text.splitlines()).n_ranks == 16


@pytest.mark.parametrize("name", sorted(PORTS))
def test_ibstat_rates_read_as_printed(name: str) -> None:
    ports = port_rates_in_text((FIXTURES / name).read_text(encoding="utf-8"))
    assert [(p.device, p.port, p.active, p.gbps) for p in ports] == PORTS[name]


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_topology_reads_as_published(name: str) -> None:
    checks.assert_topology_reads(FIXTURES / name, TOPOLOGIES[name])


@pytest.mark.parametrize(("name", "reason"), sorted(REFUSED.items()))
def test_unusable_input_says_what_it_is(name: str, reason: str) -> None:
    checks.assert_refused(["inspect", str(FIXTURES / name)], reason)
