"""Public outputs, third set (``fixtures/README.md`` names each source): what the readers make of them.

Logs: the rows, first and last size with the out-of-place busbw as printed (GB/s), collective, ranks, hosts,
GPU and NCCL release. Topologies: GPUs, NICs, NVLink pairs and link count, the nearest NIC of a GPU, the
NUMA nodes. Inputs the readers cannot use: one line, exit 2. The nccl-tests 2.19 layouts (``-I 1``,
``-S 1``, ``-J``) are written from nccl-tests' source, as the README says, with hand-derived numbers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.discovery.test_public_logs import Read  # what one table must read as
from tests.trial.test_trial_s10b_inputs import _all_reduce_report  # a 3-row nccl-tests -J report
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.resolve import resolve_cluster
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.inference import infer_cluster
from aifabric.discovery.node import inspect_node_text
from aifabric.discovery.nvsmi import PCI_ONLY, TopoMatrix
from aifabric.discovery.paste import parse_pasted
from aifabric.discovery.perf_json import json_log_text
from aifabric.errors import ParseError

FIXTURES = Path(__file__).parent / "fixtures"


_H100 = "NVIDIA H100 80GB HBM3"
LOGS: dict[str, Read] = {
    # busbw/algbw = 300.51/171.72 = 1.750 = 2(n-1)/n: n = 8 (nccl-tests doc/PERFORMANCE.md)
    "allreduce_rows_headerless_8r_cut.log": Read(
        11, (32768, 3.07), (33554432, 300.51), "all_reduce", 8, None
    ),
    # in-place #wrong N/A with the out-of-place one counted: sendrecv (all_reduce checks both halves)
    "sendrecv_a40_2nodes_na_inplace_cut.log": Read(
        5, (256, 0.01), (4096, 0.13), "sendrecv", 2, 2, "NVIDIA A40"
    ),
    "p5_tag_output_trailing_blanks_cut.log": Read(3, (8, 0.0), (32, 0.0), None, None, None),
    # 8 ranks: 1 MiB in 40 us = 26.21 GB/s algbw, x 2 x 7/8 = 45.88 busbw; 8 MiB in 120 us: 122.33
    "v2196_per_iteration_columns.log": Read(
        4, (1048576, 45.88), (8388608, 122.33), "all_reduce", 8, 1, _H100, "2.29.7"
    ),
    "v2196_timestamp_column.log": Read(
        4, (1048576, 45.88), (8388608, 122.33), "all_reduce", 8, 1, _H100, "2.29.7"
    ),
    "v2196_per_iteration_and_timestamp.log": Read(
        4, (1048576, 45.88), (8388608, 122.33), "all_reduce", 8, 1, _H100, "2.29.7"
    ),
    # 16 ranks: 1 MiB in 40 us = 26.2144 GB/s algbw, x 2 x 15/16 = 49.152; nccl_version 22807 = 2.28.7
    "v2196_report_2x8.json": Read(
        2, (1048576, 49.152), (8388608, 131.072), "all_reduce", 16, 2, _H100, "2.28.7"
    ),
}

#: Logs without a result table, and where the parser says it stopped.
NO_TABLE = {
    "v100_16r_old_rank_lines_cut.log": "stops after the run's header (line 13)",
    "a6000_info_after_rank_lines_cut.log": "stops after the run's header (line 5)",
    "h20_two_processes_8r_headers_cut.log": "stops after the run's header (line 19)",
}

#: What a topology must read as: GPUs read, NICs, (NVLink pairs, links per pair), GPU -> (nearest NIC,
#: path), NUMA nodes.
TopologyRead = tuple[int, int, tuple[int, int], dict[str, tuple[str, str]], set[int]]
TOPOLOGIES: dict[str, TopologyRead] = {
    "topo_nv8_9nic_cut.txt": (7, 9, (21, 8), {"GPU0": ("NIC2", "PIX"), "GPU4": ("NIC1", "PIX")}, {0, 1}),
    "topo_nv18_18nic_shifted_column_cut.txt": (4, 18, (6, 18), {"GPU2": ("NIC6", "PXB")}, {0}),
    "topo_sys_only_10nic_cut.txt": (6, 10, (0, 0), {"GPU5": ("NIC5", "PIX")}, {0, 1}),
    "topo_nv18_9nic_three_numa_cut.txt": (6, 9, (15, 18), {"GPU3": ("NIC4", "PIX")}, {0, 1, 2}),
    "topo_nv18_6nic_gpus_without_nic_cut.txt": (7, 6, (21, 18), {"GPU6": ("NIC3", "PIX")}, {0, 1}),
    "topo_nv6_4gpu_cpu_lists.txt": (4, 4, (6, 6), {"GPU2": ("NIC2", "PIX")}, {1, 3, 5, 7}),
    "topo_5gpu_phb_pairs_two_numa.txt": (5, 0, (0, 0), {}, {0, 1}),
    "topo_indented_then_p2p_matrix.txt": (2, 0, (0, 0), {}, {0}),
    "topo_tabs_then_p2p_matrix.txt": (2, 0, (0, 0), {}, {0}),
    "topo_mp_pci_only_14nic_cut.txt": (4, 14, (0, 0), {"GPU3": ("NIC7", "PIX")}, {0}),
}

#: Inputs ``inspect`` cannot use, and its one line.
REFUSED = {
    "topo_p2p_matrix_only.txt": "2: this is nvidia-smi topo -p2p output (peer-access status such as 'GNS')",
    # before: "expected a header line starting with GPU0", though line 1 starts with GPU0 (a row)
    "topo_b200_rows_without_header.txt": "1: the matrix starts at row GPU0 without its header line",
    "topo_mthreads_pipe_table_cut.txt": "no nvidia-smi topo -m matrix (a line starting with GPU0)",
    "rocm_smi_showtopo_pcie_4gpu.txt": "1: this is rocm-smi output",
    "rocm_smi_showtoponuma_8gpu.txt": "3: this is rocm-smi output",
    "xml_hand_written_pci_only.xml": (
        "1: the topology lists no GPU (a topology file that gives only the PCI tree"
    ),
    "xml_dgx1_v100_cut.xml": "1: <system> is never closed by </system>",
    "xml_rccl_dcu_cut.xml": "1: <system> is never closed by </system>",
    "xml_h100_mid_document_cut.xml": "or NCCL topology XML (<system>) found in 19 lines",
}


def test_every_fixture_is_covered() -> None:
    # public3/ is read by test_public_outputs3.py
    names = {p.name for p in FIXTURES.iterdir() if p.is_file() and p.name != "README.md"}
    assert names == set(LOGS) | set(NO_TABLE) | set(TOPOLOGIES) | set(REFUSED)


@pytest.mark.parametrize("name", sorted(LOGS))
def test_log_reads_as_published(name: str) -> None:
    assert_log_reads(FIXTURES / name, LOGS[name])


def assert_log_reads(path: Path, want: Read) -> None:
    """The one table of the log at ``path`` reads as ``want``, with Windows line ends too."""
    name = path.name
    (table,) = parse_pasted(path.read_bytes(), name)
    assert len(table.rows) == want.rows
    for row, (size, busbw) in ((table.rows[0], want.first), (table.rows[-1], want.last)):
        assert row.out_of_place is not None
        assert (row.size_bytes, row.out_of_place.busbw_bytes_per_s / 1e9) == pytest.approx(
            (size, busbw), abs=1e-9
        )
    got = (table.collective, table.n_ranks, table.n_nodes, table.gpu_name, table.nccl_version)
    assert got == (want.collective, want.ranks, want.nodes, want.gpu, want.nccl)
    text = path.read_text(encoding="utf-8")
    assert parse_pasted(text.replace("\n", "\r\n"), name)[0].rows == table.rows  # Windows line ends


@pytest.mark.parametrize(("name", "reason"), sorted(NO_TABLE.items()))
def test_log_without_table_says_where_it_stops(name: str, reason: str) -> None:
    assert_no_table(FIXTURES / name, reason)


def assert_no_table(path: Path, reason: str) -> None:
    """The log at ``path`` has no table, says ``reason``, and ``compare`` exits 2 on it."""
    with pytest.raises(ParseError, match="no nccl-tests result table found") as info:
        parse_pasted(path.read_bytes(), path.name)
    assert reason in str(info.value)
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_per_iteration_columns_are_read_not_taken_for_a_group() -> None:
    # Before: "unknown column 'i_min' in the header" (-I 1) and "column 'timestamp' is not followed by algbw
    # busbw" (-S 1). The in-place half is the second time/algbw/busbw, after the four i_* columns.
    for name in ("v2196_per_iteration_columns.log", "v2196_per_iteration_and_timestamp.log"):
        (table,) = parse_pasted((FIXTURES / name).read_bytes(), name)
        last = table.rows[-1]
        assert last.in_place is not None and last.in_place.time_s == pytest.approx(120e-6)
        assert last.in_place.wrong == 0 and table.avg_busbw_bytes_per_s == pytest.approx(123.456e9)
        assert table.columns[8:13] == ("#wrong", "i_min", "i_max", "i_p99", "i_cv%")


def test_json_report_reads_as_its_text() -> None:
    # Before: "no nccl-tests result table found". The report's NCCL_ALGO=Ring (env) steers the prediction.
    path = FIXTURES / "v2196_report_2x8.json"
    text = json_log_text(path.read_text(encoding="utf-8"), path.name)
    assert "export NCCL_ALGO=Ring" in text and "#  Rank 15 Group 0 Pid 108 on node-b device 7" in text
    (compared,) = compare_nccl_tests(path.read_text(encoding="utf-8"), source=path.name).tables
    assert compared.rows[-1].predicted.algorithm == "ring"
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(path)])
    assert result.exit_code == 0 and "16 ranks on 2 node(s)" in result.output


def _half(time_us: object, bw: object, wrong: object = 0) -> dict[str, object]:
    return {"time": time_us, "alg_bw": bw, "bus_bw": bw, "nwrong": wrong}


def _nan_report() -> str:
    """A 2-rank report whose cells nccl-tests wrote as "nan" (``src/util.cu`` ``jsonDouble``: a NaN is
    written as the string "nan"): the 8-byte row's out-of-place time, the 1 MiB row's in-place bandwidths,
    the 1 GiB row's data check, and the average busbw."""
    devices = [
        {"rank": r, "group": 0, "pid": 7, "hostname": "h", "device": r, "device_hex": "0000:18:00",
         "device_info": "NVIDIA H100 80GB HBM3"}
        for r in range(2)
    ]  # fmt: skip
    rows = [
        (8, _half("nan", 0.0), _half(10.0, 0.0)),
        (1 << 20, _half(20.5, 51.15), _half(20.1, "nan")),
        (1 << 30, _half(2600.0, 412.98), _half(2590.0, 414.57, "nan")),
    ]
    results = [
        {"size": size, "count": size // 4, "type": "float", "redop": "sum", "root": "-1",
         "out_of_place": out, "in_place": inp}
        for size, out, inp in rows
    ]  # fmt: skip
    report = {
        "version": 3,
        "args": ["./all_reduce_perf"],
        "config": {"nthreads": 1, "ngpus": 1, "devices": devices},
        "results": results,
        "average_bus_bandwidth": {"bandwidth": "nan", "okay": "unchecked"},
    }
    return json.dumps(report)


def test_a_nan_cell_is_read_as_missing_for_its_row_and_said(tmp_path: Path) -> None:
    text = json_log_text(_nan_report(), "r.json")
    assert '# nccl-tests JSON: out_of_place of the 8-byte row is "nan" (not measured), left out' in text
    assert '# nccl-tests JSON: in_place of the 1048576-byte row is "nan" (not measured), left out' in text
    (table,) = parse_pasted(_nan_report(), "r.json")
    assert [r.size_bytes for r in table.rows] == [1 << 20, 1 << 30]  # no out-of-place time: no row
    mid, big = table.rows
    assert mid.in_place is None and mid.out_of_place is not None
    assert mid.out_of_place.busbw_bytes_per_s == pytest.approx(51.15e9)
    assert big.in_place is not None and big.in_place.wrong is None  # a "nan" count: no data check
    assert table.avg_busbw_bytes_per_s is None
    assert any('in_place of the 1048576-byte row is "nan"' in note for note in table.notes)
    path = tmp_path / "r.json"
    path.write_text(_nan_report(), encoding="utf-8")
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(path), "--json"])
    assert result.exit_code == 0, result.output[-400:]
    (compared,) = json.loads(result.stdout)["tables"]
    assert any("out_of_place of the 8-byte row" in a for a in compared["assumptions"])


def test_a_report_of_one_process_driving_100000_gpus_is_read_in_one_pass(tmp_path: Path) -> None:
    # one devices entry of ngpus 100,000 stands for 100,000 rank lines; each is checked against the earlier
    # ones in constant work (before, against every earlier line: 5e9 comparisons, > 100 s), and the report
    # is refused for what it says: 100,000 ranks, but busbw/algbw of its row say 2
    report = json.loads(_nan_report())
    report["config"]["ngpus"] = 100_000
    report["config"]["devices"] = report["config"]["devices"][:1]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(path)])
    assert result.exit_code == 2 and "100000 ranks" in result.output, result.output[-400:]


@pytest.mark.parametrize(
    ("report", "reason"),
    [
        ('{"results": [{"size": 8}]', "not JSON"),
        ('{"results": 3}', "JSON without an nccl-tests 'results' list"),
        ('{"results": [{"size": -8, "count": 2}]}', "JSON field 'size' is -8, not a count"),
        (  # "nan" is nccl-tests' NaN (a missing cell, test below); any other string is no number
            '{"results": [{"size": 8, "count": 2, "out_of_place": {"time": 1.0, "alg_bw": "fast"}}]}',
            "JSON field 'out_of_place.alg_bw' is 'fast', not a number",
        ),
        (
            '{"results": [{"size": 8, "count": 2, "out_of_place": null}]}',
            "has no out-of-place half (trace replay)",
        ),
        (  # no out_of_place key: its in-place numbers would be read as the out-of-place half
            '{"results": [{"size": 8, "count": 2, '
            '"in_place": {"time": 1.0, "alg_bw": 0.01, "bus_bw": 0.01}}]}',
            "has no out-of-place half (trace replay)",
        ),
        (
            '{"config": {"devices": [{"device": 0}]}, "results": []}',
            "JSON field 'config.devices[].rank' is None, not a count",
        ),
    ],
)
def test_bad_json_report_is_refused_in_one_line(report: str, reason: str, tmp_path: Path) -> None:
    with pytest.raises(ParseError, match=re.escape(reason)):
        parse_pasted(report, "r.json")
    path = tmp_path / "r.json"
    path.write_text(report, encoding="utf-8")
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(path)])
    assert (
        result.exit_code == 2
        and "Traceback" not in result.output
        and reason in " ".join(result.output.split())
    )


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_topology_reads_as_published(name: str) -> None:
    assert_topology_reads(FIXTURES / name, TOPOLOGIES[name])


def assert_topology_reads(path: Path, want: TopologyRead) -> None:
    """The matrix at ``path`` reads as ``want``, with Windows line ends too."""
    name = path.name
    gpus, nics, (pairs, links), nearest, numa = want
    m = TopoMatrix.from_text(path.read_bytes(), name)
    assert (len(m.gpus), len(m.nics), m.numa_nodes()) == (gpus, nics, numa)
    assert len(m.nvlink_pairs()) == pairs and {n for *_, n in m.nvlink_pairs()} == (
        {links} if pairs else set()
    )
    (node,) = inspect_node_text(path.read_text(encoding="utf-8"), source=name)
    for gpu, path_to in nearest.items():
        pairing = node.pairing[gpu]
        assert pairing is not None and (pairing.nic, pairing.path) == path_to
    crlf = TopoMatrix.from_text(path.read_text(encoding="utf-8").replace("\n", "\r\n"), name)
    assert crlf.links == m.links


def test_cpu_affinity_lists_and_nic_rows() -> None:
    m = TopoMatrix.from_text((FIXTURES / "topo_nv6_4gpu_cpu_lists.txt").read_bytes())
    assert m.cpu_affinity["GPU0"] == frozenset({6, 14, 22, 30}) and m.numa_affinity["GPU2"] == frozenset({7})
    assert m.link("NIC1", "GPU1") == "PIX" and m.link("NIC3", "NIC0") == "SYS"


def test_topo_mp_says_nvlink_is_not_shown() -> None:
    # Before: "NVLink: none in the input", GPU pairs through the CPU (pcie_p2p_cpu) and a PCIe node of
    # 38 GB/s busbw, for an 8-GPU NVLink node whose paste says "nvidia-smi topo -mp" (PCIe paths only).
    name = "topo_mp_pci_only_14nic_cut.txt"
    m = TopoMatrix.from_text((FIXTURES / name).read_bytes(), name)
    assert m.pci_only and PCI_ONLY in m.missing
    (node,) = inspect_node_text((FIXTURES / name).read_text(encoding="utf-8"), source=name)
    assert node.spec_data["scale_up"] == {"kind": "nvswitch"}
    assert "pcie_p2p_cpu" not in {w.code for w in node.warnings}
    result = CliRunner().invoke(app, ["inspect", str(FIXTURES / name)])
    assert result.exit_code == 0
    assert "NVLink: not shown (nvidia-smi topo -mp prints PCIe paths only)" in result.output


def test_topo_m_after_p2p_and_pci_matrices_is_not_pci_only() -> None:
    # the option of the last nvidia-smi topo command above the header decides (-m after -mp: NVLink shown)
    text = (FIXTURES / "topo_mp_pci_only_14nic_cut.txt").read_text(encoding="utf-8")
    again = text.replace("nvidia-smi topo -mp", "nvidia-smi topo -mp\n$ nvidia-smi topo -m")
    assert not TopoMatrix.from_text(again).pci_only


def test_a_matrix_with_nvlink_cells_under_a_topo_mp_line_is_not_pci_only() -> None:
    # topo -mp never prints NV# (PCIe paths only): NV18 cells say the matrix is topo -m output, so the
    # reader keeps its NVLink and says nothing of NVLink being hidden (before: both, contradicting)
    text = "$ nvidia-smi topo -mp\n\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n"
    m = TopoMatrix.from_text(text)
    assert not m.pci_only and PCI_ONLY not in m.missing and m.nvlink_pairs() == [("GPU0", "GPU1", 18)]


@pytest.mark.parametrize(("name", "reason"), sorted(REFUSED.items()))
def test_unusable_input_says_what_it_is(name: str, reason: str) -> None:
    assert_refused(["inspect", str(FIXTURES / name)], reason)


def assert_refused(args: list[str], reason: str) -> None:
    """The command ``args`` exits 2 with one line that says ``reason``."""
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    output = " ".join(result.output.split())
    assert reason in output and len(result.output.strip().splitlines()) == 1


def test_unchecked_halves_tell_alltoall_from_all_gather() -> None:
    # nccl-tests checks alltoall's out-of-place half only (src/alltoall.cu: reportErrors = in_place ? 0 : 1):
    # "0 ... N/A" rows are alltoall; with -c 0 both halves print N/A and all_gather fits as well.
    path = Path(__file__).parent / "data" / "public" / "efa_mpi_prefix_none_op_cut.log"
    (table,) = parse_pasted(path.read_bytes(), path.name)
    assert (table.collective, table.n_ranks) == ("alltoall", 16)
    unchecked = re.sub(r"(\d)\s+0(\s+\S+\s+\S+\s+\S+\s+N/A)$", r"\1    N/A\2", path.read_text(), flags=re.M)
    assert unchecked.count("N/A") == 2 * 9
    with pytest.raises(ParseError, match="its columns fit all_gather and alltoall"):
        compare_nccl_tests(unchecked, source=path.name)


def test_a_log_of_512_nodes_is_sized_as_collective_sizes_the_cluster() -> None:
    # 4,096 H100s need 128 radix-64 leaves, more than two tiers connect (64 leaves): `collective -c
    # dgx-h100-superpod --nodes 512` grows the preset to three tiers, and compare -c builds that very spec
    (table,) = parse_pasted(json.dumps(_all_reduce_report(4096)), "ar4096.json")
    spec, _ = infer_cluster(table, cluster="dgx-h100-superpod")
    assert spec == resolve_cluster("dgx-h100-superpod", nodes=512) and spec.scale_out.tiers == 3
    inferred, notes = infer_cluster(table)  # no --cluster: the same rule, said
    assert inferred.scale_out.tiers == 3 and any("three-tier Clos" in n for n in notes)
