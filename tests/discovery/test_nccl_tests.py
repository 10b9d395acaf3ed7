"""Golden and error tests of :mod:`aifabric.discovery.nccl_tests`.

Golden files (``data/``), each citing its public source in its header:
case 01 DGX H100 all_reduce (NVIDIA/nccl-tests #290); case 03 H100 2-8 nodes, seven tables
(NVIDIA/nccl-tests #309); case 08 B200 all_gather on 2 nodes (kubernetes-sigs/dranet); case 13 V100 PCIe,
old nccl-tests layout (University of Sheffield HPC docs).
"""

from __future__ import annotations

import pytest

from aifabric.discovery.nccl_tests import COLLECTIVES, PerfRow, PerfTable, parse_nccl_tests
from aifabric.errors import ParseError

CASE_01 = "case_01_dgx_h100_allreduce_single_node.txt"
CASE_03 = "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt"
CASE_08 = "case_08_b200_gke_a4_topo_and_2node_allgather.txt"
CASE_13 = "case_13_v100_pcie_4gpu_no_nvlink.txt"
CASE_17 = "case_17_azure_ndv4_ndv5_topology_xml.txt"
TABLE_CASES = (CASE_01, CASE_03, CASE_08, CASE_13)

HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong"
)


def _tables(case_text: dict[str, str], name: str) -> list[PerfTable]:
    return parse_nccl_tests(case_text[name], source=name)


def _bus_factor(collective: str, n: int) -> float:
    """busbw / algbw of nccl-tests (doc/PERFORMANCE.md)."""
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


# -- every table of every case file --------------------------------------------------------------------------


@pytest.mark.parametrize("name", TABLE_CASES)
def test_every_row_matches_the_printed_figures(case_text: dict[str, str], name: str) -> None:
    """Each parsed field equals the printed token x its unit, read back from the row's own line."""
    lines = case_text[name].split("\n")
    tables = _tables(case_text, name)
    assert sum(len(t.rows) for t in tables) > 0
    for table in tables:
        for row in table.rows:
            tokens = lines[row.line - 1].split()
            assert int(tokens[0]) == row.size_bytes and int(tokens[1]) == row.count
            first = len(table.columns) - 8  # the two result groups are the last 8 columns
            for place, offset in ((row.out_of_place, first), (row.in_place, first + 4)):
                assert place is not None
                assert place.time_s == pytest.approx(float(tokens[offset].strip("()")) * 1e-6, rel=1e-15)
                assert place.algbw_bytes_per_s == pytest.approx(float(tokens[offset + 1]) * 1e9, rel=1e-15)
                assert place.busbw_bytes_per_s == pytest.approx(float(tokens[offset + 2]) * 1e9, rel=1e-15)


@pytest.mark.parametrize("name", TABLE_CASES)
def test_busbw_is_algbw_times_the_factor(case_text: dict[str, str], name: str) -> None:
    """busbw = algbw x factor(collective, n_ranks) within printing precision: checks collective and
    n_ranks."""
    for table in _tables(case_text, name):
        if not table.rows:
            continue
        assert table.collective is not None and table.n_ranks is not None, table.title
        factor = _bus_factor(table.collective, table.n_ranks)
        for row in table.rows:
            for result in (row.out_of_place, row.in_place):
                assert result is not None
                expected = result.algbw_bytes_per_s * factor
                assert abs(result.busbw_bytes_per_s - expected) <= 0.005e9 + factor * 0.005e9, (
                    table.title,
                    row,
                )


@pytest.mark.parametrize("name", TABLE_CASES)
def test_algbw_is_size_over_time(case_text: dict[str, str], name: str) -> None:
    """algbw = size / time (nccl-tests definition) for rows large enough to print 3 digits of each."""
    for table in _tables(case_text, name):
        for row in table.rows:
            for result in (row.out_of_place, row.in_place):
                assert result is not None
                if result.algbw_bytes_per_s < 1e9:
                    continue
                assert row.size_bytes / result.time_s == pytest.approx(
                    result.algbw_bytes_per_s, rel=5e-3, abs=0.01e9
                )


# -- case by case --------------------------------------------------------------------------------------------


def test_case_01_dgx_h100(case_text: dict[str, str]) -> None:
    (table,) = _tables(case_text, CASE_01)
    assert table.collective == "all_reduce"  # "all_reduce_perf" in the case header
    assert (table.n_ranks, table.n_nodes) == (8, 1)
    assert table.gpu_name == "NVIDIA H100 80GB HBM3"
    assert table.nccl_version is None  # not printed in this log
    assert table.title == "RAW DATA (numbers verbatim from the issue)"
    assert len(table.rows) == 6 and not table.is_old_layout
    row = table.row(4294967296)
    assert row.out_of_place is not None and row.in_place is not None
    assert row.out_of_place.busbw_bytes_per_s == 473.60e9
    assert row.out_of_place.time_s == 15870e-6
    assert row.out_of_place.algbw_bytes_per_s == 270.63e9
    assert row.in_place.busbw_bytes_per_s == 476.53e9
    assert (row.count, row.dtype, row.redop, row.root, row.out_of_place.wrong) == (
        1073741824,
        "float",
        "sum",
        -1,
        0,
    )
    assert table.avg_busbw_bytes_per_s == 439.369e9
    assert table.out_of_bounds == 0
    assert table.parameters is not None
    assert (table.parameters.n_threads, table.parameters.n_gpus, table.parameters.iters) == (1, 8, 2)
    assert (table.parameters.min_bytes, table.parameters.max_bytes, table.parameters.step_factor) == (
        134217728,
        4294967296,
        2,
    )
    assert (
        table.ranks[0].bus_id == "0x18" and table.ranks[0].host == "<host-A>" and table.ranks[0].pid == 295203
    )
    assert PerfTable.from_text(case_text[CASE_01]).rows == table.rows


def test_case_03_seven_tables(case_text: dict[str, str]) -> None:
    tables = _tables(case_text, CASE_03)
    assert [t.title.split(":")[0] for t in tables if t.title] == [f"T{i}" for i in range(1, 8)]
    assert {t.collective for t in tables} == {"all_reduce"}
    # Ranks and nodes as the text gives them: T1 condensed rank lines, T2 mpirun, T3-T5 titles,
    # T6/T7 node counts in the titles and ranks from busbw/algbw = 2 (n - 1) / n.
    assert [(t.n_ranks, t.n_nodes) for t in tables] == [
        (16, 2),
        (32, 4),
        (64, 8),
        (16, 2),
        (32, 4),
        (64, 8),
        (16, 2),
    ]
    assert [len(t.rows) for t in tables] == [32, 32, 14, 14, 9, 14, 14]
    assert [t.nccl_version for t in tables[:3]] == ["2.26.2", "2.26.2", None]
    assert tables[0].cuda_version == "12.8"
    t1 = tables[0]
    assert [r.host for r in t1.ranks] == ["<host-A>"] * 8 + ["<host-B>"] * 8
    assert t1.ranks[9].device == 1 and t1.ranks[9].bus_id == "0000:3b:00"
    assert t1.row(17179869184).out_of_place.busbw_bytes_per_s == 469.21e9  # type: ignore[union-attr]
    t5 = tables[4]
    first = t5.rows[0].out_of_place
    assert first is not None and first.time_reconstructed and first.time_s == 413.7e-6
    assert t5.rows[0].in_place is not None and not t5.rows[0].in_place.time_reconstructed
    assert tables[6].row(8589934592).out_of_place.busbw_bytes_per_s == 392.69e9  # type: ignore[union-attr]
    assert [t.avg_busbw_bytes_per_s for t in tables] == [
        139.56e9,
        107.51e9,
        183.055e9,
        276.999e9,
        191.212e9,
        192.573e9,
        248.186e9,
    ]
    with pytest.raises(ParseError, match="found 7"):
        PerfTable.from_text(case_text[CASE_03])


def test_case_08_all_gather_and_fragments(case_text: dict[str, str]) -> None:
    table, cut_a, cut_b = _tables(case_text, CASE_08)
    assert table.collective == "all_gather"
    assert (table.n_ranks, table.n_nodes) == (16, 2)
    assert (table.gpu_name, table.nccl_version) == ("NVIDIA B200", "2.26.6")
    assert {r.redop for r in table.rows} == {"none"}
    row = table.row(8589934592)
    assert row.out_of_place is not None
    assert row.out_of_place.time_s == 30970e-6 and row.out_of_place.busbw_bytes_per_s == 260.03e9
    assert table.avg_busbw_bytes_per_s == 59.3638e9
    # RAW DATA 3 and 4 kept only their footers.
    assert (cut_a.rows, cut_b.rows) == ((), ())
    assert (cut_a.avg_busbw_bytes_per_s, cut_b.avg_busbw_bytes_per_s) == (22.2173e9, 11.2291e9)
    assert cut_a.collective == cut_b.collective == "all_gather"
    assert cut_a.n_nodes == 2  # "4 workers x 4 GPUs on the same 2 nodes"


def test_case_13_old_layout(case_text: dict[str, str]) -> None:
    tables = _tables(case_text, CASE_13)
    assert len(tables) == 3
    for table in tables:
        assert table.is_old_layout
        assert "root" not in table.columns and "#wrong" not in table.columns
        assert table.collective == "all_reduce"
        assert (table.n_ranks, table.n_nodes, table.gpu_name) == (4, 1, "Tesla V100-PCIE-32GB")
        assert len(table.rows) == 25
        assert {r.root for r in table.rows} == {None}
    first = tables[0].rows[0]
    assert first.out_of_place is not None and first.in_place is not None
    assert (first.out_of_place.error, first.in_place.error, first.out_of_place.wrong) == (1e-07, 0.0, None)
    assert tables[0].ranks[3].bus_id == "0x40" and tables[0].ranks[3].group is None
    assert tables[0].row(134217728).out_of_place.busbw_bytes_per_s == 9.40e9  # type: ignore[union-attr]
    assert tables[2].row(134217728).out_of_place.busbw_bytes_per_s == 11.18e9  # type: ignore[union-attr]
    assert tables[2].row(16).out_of_place.time_s == 183.5e-6  # type: ignore[union-attr]


def test_case_17_has_no_table(case_text: dict[str, str]) -> None:
    with pytest.raises(ParseError, match="no nccl-tests result table"):
        parse_nccl_tests(case_text[CASE_17])


# -- layouts and inference on small logs ---------------------------------------------------------------------


def _log(*rows: str, above: str = "", header: str = HEADER) -> str:
    return "\n".join([*filter(None, above.split("\n")), header, *rows, "# Avg bus bandwidth    : 1.0"])


ROW_AR = (
    "  1073741824     268435456     float     sum      -1   4038.8  265.85  465.25      0"
    "   4043.6  265.54  464.70      0"
)


def test_binary_name_from_command_or_banner() -> None:
    (table,) = parse_nccl_tests(_log(ROW_AR, above="$ ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 8"))
    assert table.collective == "all_reduce" and table.n_ranks == 8
    rows = (
        "        1024            16     float    none      -1    280.4    0.00    0.00      0"
        "    233.9    0.00    0.00      0"
    )
    (table,) = parse_nccl_tests(_log(rows, above="# Collective test starting: alltoall_perf"))
    assert table.collective == "alltoall"


def test_unknown_binary_is_an_error() -> None:
    with pytest.raises(ParseError, match="foo_perf") as info:
        parse_nccl_tests(_log(ROW_AR, above="first line\nmpirun -np 8 ./foo_perf -b 8"))
    assert info.value.line == 2


def test_name_that_contradicts_the_columns() -> None:
    with pytest.raises(ParseError, match="all_gather_perf"):
        parse_nccl_tests(_log(ROW_AR, above="./all_gather_perf -g 8"))


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        # broadcast: no operation, root 0, size = count x 4
        (
            "   1048576   262144  float    none       0   50.00   20.97   20.97      0   50.00   20.97   "
            "20.97      0",
            "broadcast",
        ),
        # reduce: an operation and root 0
        (
            "   1048576   262144  float     sum       0   50.00   20.97   20.97      0   50.00   20.97   "
            "20.97      0",
            "reduce",
        ),
        # reduce_scatter on 8 ranks: size = 8 x count x 4
        (
            "   1048576    32768  float     sum      -1   50.00   20.97   18.35      0   50.00   20.97   "
            "18.35      0",
            "reduce_scatter",
        ),
        # all_gather or alltoall: the columns cannot tell
        (
            "   1048576    32768  float    none      -1   50.00   20.97   18.35      0   50.00   20.97   "
            "18.35      0",
            None,
        ),
    ],
)
def test_collective_from_columns(row: str, expected: str | None) -> None:
    (table,) = parse_nccl_tests(_log(row))
    assert table.collective == expected
    if expected == "reduce_scatter":
        assert table.n_ranks == 8  # size = n x count x typesize


def test_caller_names_the_collective() -> None:
    row = (
        "   1048576    32768  float    none      -1   50.00   20.97   18.35      0"
        "   50.00   20.97   18.35      0"
    )
    (table,) = parse_nccl_tests(_log(row), collective="alltoall_perf")
    assert table.collective == "alltoall" and table.n_ranks == 8
    assert parse_nccl_tests(_log(row), collective="AllGather")[0].collective == "all_gather"
    with pytest.raises(ValueError, match="unknown collective"):
        parse_nccl_tests(_log(row), collective="foo")


def test_hypercube_blank_operation_and_na_check() -> None:
    row = (
        "     1048576         32768     float              -1    80.00   13.11   13.11    N/A"
        "    80.00   13.11   13.11    N/A"
    )
    (table,) = parse_nccl_tests(_log(row, above="# Collective test starting: hypercube_perf"))
    assert table.collective == "hypercube"
    (parsed,) = table.rows
    assert parsed.redop is None and parsed.root == -1
    assert parsed.out_of_place is not None and parsed.out_of_place.wrong is None
    assert table.n_ranks == 8
    with pytest.raises(ParseError, match="12 fields"):
        parse_nccl_tests(_log(row))  # without the name, a missing field is an error


def test_interleaved_debug_lines_and_mpi_prefixes() -> None:
    text = "\n".join(
        [
            "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup "
            "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
            "[1,0]<stdout>:#  Rank  0 Group  0 Pid   1111 on node-a device  0 [0x18] NVIDIA H100 80GB HBM3",
            "[1,0]<stdout>:#  Rank  1 Group  0 Pid   2222 on node-b device  0 [0x18] NVIDIA H100 80GB HBM3",
            "[1,0]<stdout>:NCCL version 2.21.5+cuda12.4",
            "[1,0]<stdout>:" + HEADER,
            "node-a:1111:1200 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0",
            "[1,0]<stdout>:" + ROW_AR.replace("465.25", "265.85").replace("464.70", "265.54"),
            "[1,0]<stdout>:# Out of bounds values : 0 OK",
            "[1,0]<stdout>:# Avg bus bandwidth    : 265.85",
        ]
    )
    (table,) = parse_nccl_tests(text)
    assert (table.n_ranks, table.n_nodes, table.nccl_version, table.cuda_version) == (2, 2, "2.21.5", "12.4")
    assert table.collective is None  # 2-rank all_reduce and sendrecv print the same columns
    assert len(table.rows) == 1


def test_srun_launcher() -> None:
    (table,) = parse_nccl_tests(
        _log(ROW_AR, above="srun -N 4 --ntasks-per-node=8 ./all_reduce_perf -b 8 -e 1G -g 1")
    )
    assert (table.n_nodes, table.n_ranks) == (4, 32)


def test_one_result_group() -> None:
    header = "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    row = "  1073741824     268435456     float     sum      -1   4038.8  265.85  465.25      0"
    (table,) = parse_nccl_tests(_log(row, header=header, above="#  out-of-place"))
    (parsed,) = table.rows
    assert parsed.in_place is None and parsed.out_of_place is not None


def test_collectives_constant() -> None:
    assert {
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "alltoall",
        "broadcast",
        "reduce",
        "sendrecv",
    } <= COLLECTIVES


# -- errors --------------------------------------------------------------------------------------------------


def test_truncated_row_names_its_line(case_text: dict[str, str]) -> None:
    lines = case_text[CASE_01].split("\n")
    target = next(i for i, line in enumerate(lines) if line.lstrip().startswith("4294967296"))
    lines[target] = lines[target][:70]
    with pytest.raises(ParseError, match="fields") as info:
        parse_nccl_tests("\n".join(lines), source="cut.txt")
    assert info.value.line == target + 1
    assert str(info.value).startswith(f"cut.txt:{target + 1}:")


def test_deleted_column_token_names_its_line(case_text: dict[str, str]) -> None:
    lines = case_text[CASE_13].split("\n")
    target = next(i for i, line in enumerate(lines) if line.strip().startswith("2048 "))
    tokens = lines[target].split()
    del tokens[6]
    lines[target] = "  ".join(tokens)
    with pytest.raises(ParseError) as info:
        parse_nccl_tests("\n".join(lines))
    assert info.value.line == target + 1


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("", None, "no nccl-tests result table"),
        (b"\x00\x01garbage\xff\xfe", 1, "UTF-8"),
        ("\x00\x01garbage\u20ac", None, "no nccl-tests result table"),
        (HEADER + "\n", 1, "no result rows"),
        ("comment\n" + ROW_AR, 2, "outside any table"),
        (_log(ROW_AR.replace("4038.8", "4O38.8")), 2, "time"),
        (_log(ROW_AR.replace("float", "fl-oat")), 2, "type"),
        (_log(ROW_AR.replace("465.25", "465,25")), 2, "busbw"),
        (_log(ROW_AR.replace("     0   4043.6", "    -3   4043.6")), 2, "#wrong"),
        (_log(ROW_AR.replace("4038.8", "(4038.8")), 2, "time"),
        (
            _log(ROW_AR, header=HEADER.replace("busbw #wrong     time", "busbw #wrong  color time")),
            1,
            "color",
        ),
        (_log(ROW_AR).replace("1.0", "many"), 3, "average"),
    ],
)
def test_malformed_logs(text: str | bytes, line: int | None, message: str) -> None:
    with pytest.raises(ParseError, match=message) as info:
        parse_nccl_tests(text)
    assert info.value.line == line


def test_row_lookup_errors() -> None:
    (table,) = parse_nccl_tests(_log(ROW_AR))
    assert isinstance(table.row(1073741824, "float"), PerfRow)
    with pytest.raises(KeyError):
        table.row(8)
