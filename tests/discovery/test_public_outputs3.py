"""Public outputs, fourth set (``fixtures/public3/README.md`` names each source; each file's first line too):
what the readers make of them.

Logs: the rows, first and last size with the out-of-place busbw as printed (GB/s), collective, ranks, hosts,
GPU and NCCL release, and where a log without a table stops. NCCL INFO excerpts: what the communicator,
network and graph lines say. Topologies: GPUs, NICs, NVLink pairs and link count, the nearest NIC of a GPU,
the NUMA nodes. Inputs the readers cannot use: one line, exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.discovery.test_public_logs import Read  # what one table must read as
from tests.discovery.test_public_outputs2 import (  # the checks the third set makes
    TopologyRead,
    assert_log_reads,
    assert_no_table,
    assert_refused,
    assert_topology_reads,
)
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.ib_ports import nic_port_rate, port_rates_in_text
from aifabric.discovery.instances import instances_in_text
from aifabric.discovery.nccl_info import parse_nccl_info
from aifabric.discovery.node import NodeInspection, inspect_node_text
from aifabric.discovery.nvsmi import TopoMatrix
from aifabric.discovery.paste import parse_pasted
from aifabric.errors import ParseError

FIXTURES = Path(__file__).parent / "fixtures" / "public3"

LOGS: dict[str, Read] = {
    # a "..." line where the publisher left rows out: one table of 3 rows (before: two tables, 1 + 2 rows)
    "h100_bond_dots_row_wrong_counts_cut.log": Read(3, (8, 0.0), (524288, 0.79), None, None, None),
    # rows of nccl-tests before 2.13 ("error" 0e+00, no redop/root), without header (before: refused)
    # (all_gather or hypercube, which print these columns, both print size = n x count x 4 B: 65536 /
    # (8192 x 4) = 2 ranks; busbw = algbw is hypercube's factor 1, not all_gather's 1/2; 2 either way)
    "nccl264_old_rows_then_broadcast_header_cut.log": Read(
        12, (65536, 1.98), (134217728, 20.34), None, 2, None
    ),
    # busbw/algbw = 7.70/4.40 = 1.75 = 2(n-1)/n: n = 8; the 65536-byte row is cut inside its in-place half
    "mscclpp_nvls_allreduce9_cut.log": Read(6, (1024, 0.33), (32768, 7.70), "all_reduce", 8, None),
    # "128 GPU" is prose; busbw/algbw printed to 2 decimals (2.15/1.08) cannot tell 128 from 100 or 200
    "sharp_128gpu_error_column_no_root_cut.log": Read(
        6, (4096, 0.09), (131072, 2.15), "all_reduce", None, None
    ),
    # pre-2.13 rows of one width, the last cut to 3 fields: not a row wrapped onto the next line (before,
    # with this layout's header supplied: "row has 14 fields, the header has 11 columns")
    # 65536 / (2048 x 4 B) = 8 ranks for either binary of the layout; busbw/algbw 7.32/8.37 = 7/8 agrees
    "old_allgather_rows_headerless_mpirun_cut.log": Read(13, (65536, 1.10), (268435456, 7.32), None, 8, None),
    # busbw 0.00 beside algbw 212-637 GB/s: 2(n-1)/n = 0, n = 1 (sendrecv's busbw is its algbw); sizes
    # repeat out of order: the rows of several one-rank processes (mpirun of a binary built without MPI)
    "one_rank_processes_rows_interleaved_busbw0_cut.log": Read(
        5, (134217728, 0.0), (268435456, 0.0), "all_reduce", 1, None
    ),
}

#: Logs without a result table, and where the reader says the run stopped.
NO_TABLE = {
    # before: "the run failed at line 13: ... NCCL WARN Failed to open libibverbs.so", a WARN NCCL carries
    # on after (the next line: NET/Socket : Using [0]eth0); the run hung after init
    "gtx1080ti_nccl248_info_after_ranks_hang.log": "the text stops after the run's header (line 9)",
    # before: "stops after the run's header (line 7)"; the socket WARN is followed by NCCL's error trace
    "a6000_lo_socket_info_after_rank_hang.log": (
        "the run failed at line 18: 'NAME :70918:70927 [0] misc/socket.cc:50 NCCL WARN socketProgress"
    ),
    "h800_roce_p2p_disabled_info_hang_cut.log": "the text stops after the run's header (line 10)",
    "v100_2018_mpi_warning_dashes_header_cut.log": "the text stops after the run's header (line 18)",
    "rccl_aks_mpirun_plus_prefix_ssh_lines_header_cut.log": "the text stops after the run's header (line 6)",
    # rccl's "RCCL version : 2.28.3-gfx1151" block after the rank line
    "rccl_gfx1151_version_lines_after_rank_cut.log": "the text stops after the run's header (line 8)",
    # the copy stops in the table's "out-of-place  in-place" line; the MSCCL++ WARN that rccl carries on
    # after (Init COMPLETE below it) is no failure, and nothing else says why
    "rccl_mi50_init_complete_localsize_header_cut.log": "(expected a '#  size  count  type ...' header)",
}

#: NCCL INFO excerpts: (ranks, nodes, local ranks, network, NVLS available, trees printed).
INFO: dict[str, tuple[int | None, int | None, int | None, str | None, bool | None, bool]] = {
    # NVLS Head lines are printed only when the NVLS graph found channels (before: NVLS unknown)
    "info_h100_2node_pattern_nvls_heads_cut.log": (16, 2, 8, None, True, False),
    "info_hw14_8r_one_node_trees_cut.log": (8, 1, 8, None, None, True),
    # NCCL 2.9-era "rank 15 nranks 32 ... Init COMPLETE": no node count printed
    "info_32r_old_comm_lines_init_complete_cut.log": (32, None, None, None, None, False),
    "info_socket_4nic_pattern_speed_2node.log": (None, None, None, None, None, False),
    "info_p4d_ofi_leading_blank_libfabric_cut.log": (None, None, None, "AWS Libfabric", None, False),
    # rccl 2.2x "rank 1 nranks 4 ... localSize 348 used 37806224 bytes on core 19 - Init COMPLETE"
    "rccl_mi50_init_complete_localsize_header_cut.log": (4, None, None, None, None, False),
}

#: Topologies: GPUs read, NICs, (NVLink pairs, links per pair), GPU -> (nearest NIC, path), NUMA nodes.
TOPOLOGIES: dict[str, TopologyRead] = {
    # no NUMA column (2017 driver): CPU affinity only
    "topo_k8s_mlx4_old_pix_phb_trailing_blanks_cut.txt": (5, 1, (0, 0), {"GPU4": ("mlx4_0", "SYS")}, set()),
    "topo_a100_nv12_18mlx5_cut.txt": (4, 18, (6, 12), {"GPU2": ("mlx5_0", "PXB")}, {0}),
    "topo_4090_8gpu_sys_two_nics_phb_tabs.txt": (8, 2, (0, 0), {"GPU6": ("NIC0", "PHB")}, {0, 1}),
    # before: "row NIC3 has 1 cells" (a last NIC row cut, refused when the file ends with a newline)
    "topo_slurm_2gpu_nv12_10nic_cut.txt": (2, 10, (1, 12), {"GPU1": ("NIC1", "PXB")}, {3}),
    "topo_h100_nv18_8nic_pxb_roce_lag_cut.txt": (6, 8, (15, 18), {"GPU5": ("NIC5", "PXB")}, {0, 1}),
    "topo_h200_26nic_tabs_cut.txt": (6, 26, (15, 18), {"GPU1": ("NIC21", "PIX")}, {0, 1}),
    # before: "row GPU0 has 4 values for the 3 columns" (header label NIC8NIC9 glued by the paste)
    "topo_h100_12nic_glued_header_and_cells_cut.txt": (
        8,
        12,
        (28, 18),
        {"GPU5": ("NIC9", "PXB"), "GPU7": ("NIC11", "PXB")},
        {0, 1},
    ),
    "topo_2x3090_sys_gpu0_numa_na_tabs.txt": (2, 0, (0, 0), {}, {1}),
    "topo_a100_nv12_18nic_four_numa_uneven_spacing_cut.txt": (
        4,
        18,
        (6, 12),
        {"GPU2": ("NIC1", "PXB")},
        {1, 3},
    ),
    # before: NUMA unknown for every GPU (the last row, cut in its GPU NUMA ID, dropped all affinity)
    "topo_h100_nv18_10nic_pix_cut.txt": (6, 10, (15, 18), {"GPU3": ("NIC0", "PIX")}, {0, 1}),
    # ibstat above the matrix; the last row GPU3 stops inside its CPU Affinity ("0-31,"): before, the NUMA
    # node of every GPU was unknown
    "topo_ibstat_400_then_h100_6nic_cut.txt": (
        4,
        6,
        (6, 18),
        {"GPU0": ("NIC0", "PIX"), "GPU2": ("NIC1", "PIX")},
        {0},
    ),
    "topo_3gpu_nv4_pair_phb_nics_legend.txt": (3, 2, (1, 4), {"GPU2": ("NIC0", "PHB")}, {1}),
    # lsmod output above the prompt; the row GPU3 stops after its first NIC cell: GPUs 0-2 read
    "topo_lsmod_prompt_h100_6nic_cut.txt": (3, 6, (3, 18), {"GPU2": ("NIC1", "PIX")}, {0}),
}

#: Inputs the readers cannot use, the command, and its one line.
REFUSED = {
    "xml_ndv2_review_diff_cpu_affinity.xml": ("inspect", "3: <system> is never closed by </system>"),
    # before: "unknown column '|' in the header"
    "rccl_two_runs_side_by_side_pipe_cut.log": ("compare", "3: two tables side by side ('|' between them)"),
    "rccl_mi50_pod_prompt_dots_header_cut.log": ("compare", "15: the column header has no result rows"),
    # CPU and NUMA affinity glued by the paste ("168-2231" is 168-223 and NUMA 1): no header to tell them
    "topo_rows_without_header_cpu_numa_glued_cut.txt": (
        "inspect",
        "2: the matrix starts at row GPU0 without its header line",
    ),
}


def test_every_fixture_is_covered_and_names_its_source() -> None:
    covered = set(LOGS) | set(NO_TABLE) | set(INFO) | set(TOPOLOGIES) | set(REFUSED)
    assert_fixtures_covered(FIXTURES, covered, 20)


def assert_fixtures_covered(folder: Path, covered: set[str], at_least: int) -> None:
    """The files of ``folder`` are ``covered`` (``at_least`` of them); each names its source on line 1, and
    the folder's README lists it."""
    names = {p.name for p in folder.iterdir() if p.name != "README.md"}
    assert names == covered and len(names) >= at_least
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for name in names:
        first = (folder / name).read_text(encoding="utf-8").splitlines()[0]
        assert "source: https://" in first and f"`{name}`" in readme


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_reads_as_published(name: str) -> None:
    assert_log_reads(FIXTURES / name, LOGS[name])


def test_elided_rows_keep_one_table_and_its_wrong_counts() -> None:
    # "..." (line 6) between the 8-byte and 262144-byte rows; the 524288-byte row's data check failed:
    # #wrong 237858 out-of-place, 238038 in-place, as printed
    name = "h100_bond_dots_row_wrong_counts_cut.log"
    (table,) = parse_pasted((FIXTURES / name).read_bytes(), name)
    assert [r.size_bytes for r in table.rows] == [8, 262144, 524288]
    bad = table.rows[-1]
    assert bad.out_of_place is not None and bad.in_place is not None
    assert (bad.out_of_place.wrong, bad.in_place.wrong) == (237858, 238038)
    assert table.elided_lines == (6,) and table.cut_line == 9
    assert "line 6: rows left out of the copy ('...'): one table" in table.notes
    # sendrecv prints the same columns, and busbw = algbw fits 2-rank all_reduce as well: the log cannot tell
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(FIXTURES / name)])
    assert result.exit_code == 2 and "fit all_reduce and sendrecv" in result.output


def test_rows_of_the_old_layout_get_its_header() -> None:
    # nccl-tests v2.11.0 src/common.cu prints "%5.0le" errors; the footer's average is read (6.6972 GB/s)
    name = "nccl264_old_rows_then_broadcast_header_cut.log"
    (table,) = parse_pasted((FIXTURES / name).read_bytes(), name)
    assert table.columns[:4] == ("size", "count", "type", "time") and table.header_supplied
    assert table.avg_busbw_bytes_per_s == pytest.approx(6.6972e9)
    assert table.rows[4].in_place is not None and table.rows[4].in_place.busbw_bytes_per_s == 11.19e9
    with_op = " 1048576 262144 float sum 47.38 11.06 11.06 0e+00 46.84 11.19 11.19 0e+00\n"
    assert parse_pasted(with_op)[0].columns[3] == "redop"
    with_root = " 1048576 262144 float 0 47.38 22.13 22.13 0e+00 46.84 22.39 22.39 0e+00\n"
    assert parse_pasted(with_root)[0].columns[3] == "root"


@pytest.mark.parametrize(("name", "reason"), sorted(NO_TABLE.items()))
def test_log_without_table_says_where_it_stops(name: str, reason: str) -> None:
    assert_no_table(FIXTURES / name, reason)


def test_a_warn_nccl_carries_on_after_is_no_failure() -> None:
    header = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor)\n"
    ok = "h:1:1 [0] ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\nh:1:1 [0] NCCL INFO NET/Socket"
    failed = "h:1:2 [0] socket.cc:50 NCCL WARN socketProgress: closed\nh:1:2 [0] NCCL INFO socket.cc:752 -> 6"
    cut = "h:1:3 [0] transport.cc:9 NCCL WARN connect failed"  # the copy ends at a WARN that says it failed
    said = {
        ok: "the text stops after the run's header (line 1)",
        failed: "the run failed at line 2: 'h:1:2",
        cut: "the run failed at line 2: 'h:1:3",
    }
    for text, reason in said.items():
        with pytest.raises(ParseError) as info:
            parse_pasted(header + text + "\n")
        assert reason in str(info.value)


@pytest.mark.parametrize("name", sorted(INFO))
def test_info_lines_read_as_printed(name: str) -> None:
    ranks, nodes, local, network, nvls, trees = INFO[name]
    info = parse_nccl_info((FIXTURES / name).read_text(encoding="utf-8").splitlines())
    got = (info.n_ranks, info.n_nodes, info.local_ranks, info.network, info.nvls_available, info.trees)
    assert got == (ranks, nodes, local, network, nvls, trees)
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(FIXTURES / name)])
    assert result.exit_code == 2 and "no nccl-tests result table found" in result.output


def test_info_banner_and_instance() -> None:
    # the NCCL INFO version line (2.26.5, RoCE NIC mlx5_1), the p4d.24xlarge the OFI plugin names
    info = parse_nccl_info((FIXTURES / "h800_roce_p2p_disabled_info_hang_cut.log").read_text().splitlines())
    assert (info.version, info.network, info.net_devices, info.link_layers) == (
        "2.26.5",
        "IB",
        ("mlx5_1:1",),
        ("RoCE",),
    )
    (p4d,) = instances_in_text((FIXTURES / "info_p4d_ofi_leading_blank_libfabric_cut.log").read_text())
    assert (p4d.written, p4d.instance.nics, p4d.line) == ("p4d.24xlarge", 4, 2)


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_topology_reads_as_published(name: str) -> None:
    assert_topology_reads(FIXTURES / name, TOPOLOGIES[name])
    result = CliRunner().invoke(app, ["inspect", str(FIXTURES / name)])
    assert result.exit_code == 0, result.output[-300:]


def test_cut_rows_keep_what_they_hold() -> None:
    # the last NIC row cut to one cell: the same read with or without the file's last newline
    text = (FIXTURES / "topo_slurm_2gpu_nv12_10nic_cut.txt").read_text(encoding="utf-8")
    assert TopoMatrix.from_text(text).links == TopoMatrix.from_text(text.rstrip("\n")).links
    # GPU5's row stops after its NUMA Affinity: it alone has no affinity read, the rows above keep theirs
    m = TopoMatrix.from_text((FIXTURES / "topo_h100_nv18_10nic_pix_cut.txt").read_bytes())
    assert m.numa_affinity["GPU3"] == frozenset({0}) and m.numa_affinity["GPU4"] == frozenset({1})
    assert m.numa_affinity["GPU5"] is None and m.cpu_affinity["GPU4"] == frozenset(
        {*range(56, 112), *range(168, 224)}
    )
    assert "row GPU5 cut in its affinity columns: its CPU/NUMA affinity unknown" in m.missing
    # a header with glued labels, its rows with glued cells: NIC8 and NIC9 are two columns
    glued = TopoMatrix.from_text((FIXTURES / "topo_h100_12nic_glued_header_and_cells_cut.txt").read_bytes())
    assert glued.link("GPU5", "NIC8") == "NODE" and glued.link("GPU5", "NIC9") == "PXB"


def test_old_and_partial_affinity_columns() -> None:
    k8s = TopoMatrix.from_text((FIXTURES / "topo_k8s_mlx4_old_pix_phb_trailing_blanks_cut.txt").read_bytes())
    assert (
        k8s.cpu_affinity["GPU4"] == frozenset({*range(10, 20), *range(30, 40)})
        and k8s.link("GPU0", "GPU1") == "PIX"
    )
    rig = TopoMatrix.from_text((FIXTURES / "topo_2x3090_sys_gpu0_numa_na_tabs.txt").read_bytes())
    assert rig.numa_affinity == {"GPU0": None, "GPU1": frozenset({1})} and rig.link("GPU0", "GPU1") == "SYS"


@pytest.mark.parametrize(("name", "want"), sorted(REFUSED.items()))
def test_unusable_input_says_what_it_is(name: str, want: tuple[str, str]) -> None:
    command, reason = want
    args = ["inspect"] if command == "inspect" else ["nccl-tests", "compare"]
    assert_refused([*args, str(FIXTURES / name)], reason)


def _numa(name: str) -> dict[str, frozenset[int] | None]:
    return TopoMatrix.from_text((FIXTURES / name).read_bytes()).numa_affinity


def _inspected(text: str, name: str = "topo.txt") -> NodeInspection:
    (node,) = inspect_node_text(text, source=name)
    return node


def test_ibstat_rate_is_the_nic_speed() -> None:
    # before: "NIC speed not in the input: 400 Gb/s assumed", with ibstat's "Rate: 400" (Gb/s) above it
    name = "topo_ibstat_400_then_h100_6nic_cut.txt"
    text = (FIXTURES / name).read_text(encoding="utf-8")
    node = _inspected(text, name)
    assert node.nic_speed_bytes_per_s == 400e9 / 8 and not node.nic_speed_assumed
    note = "NIC speed from the port rate ibstat prints: 400 Gb/s (mlx5_5 port 1, line 14)"
    assert any(note in a for a in node.assumptions)
    assert _inspected(text.replace("Rate: 400", "Rate: 200")).nic_speed_bytes_per_s == 200e9 / 8
    down = _inspected(text.replace("State: Active", "State: Down"))  # a port that is down tells nothing
    assert down.nic_speed_assumed and down.nic_speed_bytes_per_s == 400e9 / 8
    assert _numa(name) == {
        "GPU0": frozenset({0}),
        "GPU1": frozenset({0}),
        "GPU2": frozenset({0}),
        "GPU3": None,
    }


def test_ibstatus_rates_and_ports_that_disagree() -> None:
    # ibstatus as NVIDIA/nccl#1866 prints it: "rate: 100 Gb/sec (4X EDR)" under "state: 4: ACTIVE"
    block = (
        "Infiniband device '{dev}' port 1 status:\n"
        "        default gid:     fe80:0000:0000:0000:8ae9:a4ff:fe9c:7f1a\n"
        "        state:           4: ACTIVE\n        phys state:      5: LinkUp\n"
        "        rate:            {rate} Gb/sec (4X EDR)\n        link_layer:      Ethernet\n\n"
    )
    text = block.format(dev="mlx5_0", rate=100) + block.format(dev="mlx5_1", rate=100)
    ports = port_rates_in_text(text)
    assert [(p.device, p.port, p.active, p.gbps, p.line) for p in ports] == [
        ("mlx5_0", 1, True, 100.0, 5),
        ("mlx5_1", 1, True, 100.0, 12),
    ]
    assert nic_port_rate(ports, {"mlx5_1"}) == (100.0, ports[1:])
    mixed = port_rates_in_text(text.replace("100 Gb/sec", "25 Gb/sec", 1))
    assert nic_port_rate(mixed, {"mlx5_7"}) == (0.0, ())  # none of the GPUs' NICs, and the rest disagree
    assert nic_port_rate(mixed, {"mlx5_1"})[0] == 100.0  # the GPUs' NIC decides


def test_a_two_gpu_nvlink_bridge_is_no_nvswitch() -> None:
    # before: "NVLink group GPU0+GPU1: 1 pairs, NV4; full mesh (NVSwitch)", for two GPUs on a 4-link bridge
    # beside a third on PCIe (the node is modelled as PCIe)
    result = CliRunner().invoke(app, ["inspect", str(FIXTURES / "topo_3gpu_nv4_pair_phb_nics_legend.txt")])
    assert "NVLink group GPU0+GPU1: 1 pairs, NV4; full mesh\n" in result.output
    slurm = CliRunner().invoke(app, ["inspect", str(FIXTURES / "topo_slurm_2gpu_nv12_10nic_cut.txt")])
    assert "1 pairs, NV12; full mesh (NVSwitch)" in slurm.output  # modelled as the DGX A100 it is part of


def test_a_zero_busbw_at_hundreds_of_gb_per_s_is_one_rank() -> None:
    # before: "cannot tell the collective ... (its columns fit all_reduce and sendrecv); give --collective"
    path = FIXTURES / "one_rank_processes_rows_interleaved_busbw0_cut.log"
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(path)])
    assert result.exit_code == 2 and "one rank: nothing crosses a link" in result.output


def test_old_layout_tables_fit_only_the_binaries_that_printed_it() -> None:
    # before: "its columns fit all_gather, alltoall, gather, hypercube, reduce_scatter and scatter"; in
    # nccl-tests v2.11.0 only all_gather, hypercube and sendrecv print no redop and no root, and size =
    # 8 x count x 4 bytes rules out sendrecv (busbw/algbw = 7.32/8.37 = 0.875 = 7/8: 8 ranks)
    path = FIXTURES / "old_allgather_rows_headerless_mpirun_cut.log"
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(path)])
    assert result.exit_code == 2 and "its columns fit all_gather and hypercube)" in result.output
