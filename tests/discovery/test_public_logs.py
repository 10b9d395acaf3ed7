"""Public nccl-tests and rccl-tests outputs of many shapes (``data/public/README.md`` names each source).

Each test asserts what the parser reads from one published log: the tables, their row counts, the first and
last sizes with the out-of-place busbw copied from the log (GB/s), and the collective, ranks, nodes, GPU and
NCCL release the log tells; where the log cannot tell, the one line that says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.nccl_tests import PerfTable
from aifabric.discovery.paste import parse_pasted
from aifabric.errors import ParseError

PUBLIC = Path(__file__).parent / "data" / "public"


@dataclass(frozen=True)
class Read:
    """What one table of a public log must read as (busbw in GB/s, as printed)."""

    rows: int
    first: tuple[int, float]
    last: tuple[int, float]
    collective: str | None
    ranks: int | None
    nodes: int | None
    gpu: str | None = None
    nccl: str | None = None


EXPECTED: dict[str, tuple[Read, ...]] = {
    "sb_alltoall_a100_old_format.log": (
        Read(34, (0, 0.0), (8589934592, 224.31), None, 8, 1, "A100-SXM4-40GB"),
    ),
    "sb_broadcast_a100_info_in_table.log": (
        Read(34, (0, 0.0), (8589934592, 232.81), "broadcast", 8, 1, "A100-SXM4-40GB"),
    ),
    "sb_reduce_a100_redop_root.log": (
        Read(34, (0, 0.0), (8589934592, 228.38), "reduce", 8, 1, "A100-SXM4-40GB"),
    ),
    "gcp_a3mega_h100_16r_markdown.log": (
        Read(31, (8, 0.0), (8589934592, 338.82), "all_reduce", 16, 2, "NVIDIA H100 80GB HBM3"),
    ),
    # one rank line (71) of 72: the ranks come from busbw / algbw = 2 (n - 1) / n, the hosts stay unknown
    "nvl72_gb200_one_rank_line.log": (
        Read(5, (536870912, 586.06), (8589934592, 834.57), "all_reduce", 72, None, "NVIDIA Graphics Device"),
    ),
    "gb10_spark_version_header_cut.log": (
        Read(4, (8192, 0.23), (65536, 0.96), "all_reduce", 2, 2, "NVIDIA GB10", "2.31.2"),
    ),
    # no reduction, root -1, size = 16 x count x 4 and the in-place #wrong N/A beside a counted out-of-place
    # one: alltoall (all_gather checks its in-place half, nccl-tests src/alltoall.cu reportErrors), 16 ranks
    "efa_mpi_prefix_none_op_cut.log": (Read(9, (2048, 0.02), (524288, 2.31), "alltoall", 16, None),),
    "efa_mpi_prefix_allreduce_header.log": (Read(6, (8, 0.0), (256, 0.0), None, None, None),),
    "slurm_label_mi250x_allgather.log": (Read(5, (65536, 0.59), (1048576, 0.70), "all_gather", 32, 4),),
    # The second table's blank redop fits every gathering binary, and each prints size = n x count x 4 B:
    # 268435456 / (1048576 x 4) = 64 ranks whichever it was (busbw/algbw 0.51/0.52 = 0.98 ~ 63/64 agrees,
    # as the all_reduce table's 4.33/2.20 = 1.97 ~ 2 x 63/64 does)
    "old_allreduce_alltoall_two_tables_v100.log": (
        Read(2, (268435456, 4.33), (536870912, 4.32), "all_reduce", None, None),
        Read(2, (268435456, 0.51), (536870912, 0.51), None, 64, None),
    ),
    "old_allreduce_256gpu_nocheck_cut.log": (
        Read(6, (33554432, 45.65), (1073741824, 71.55), "all_reduce", 256, 16, None, "2.8.4"),
    ),
    "sendrecv_uint8_gtx1080_two_runs.log": (
        Read(1, (37748744, 3.22), (37748744, 3.22), "sendrecv", 2, 1),
        Read(0, (0, 0.0), (0, 0.0), "sendrecv", 2, 1, "NVIDIA GeForce GTX 1080"),
    ),
    "allreduce_op_max_min_rows.log": (Read(11, (199680, 2.98), (200704, 2.99), "all_reduce", None, None),),
    "rccl_alltoall_concluded_then_scatter.log": (
        Read(10, (262144, 3.05), (134217728, 6.34), "alltoall", 2, None),
    ),
    "rccl_mi300x_version_line_one_row.log": (
        Read(1, (8388608, 161.14), (8388608, 161.14), "all_reduce", 8, 1, "AMD Instinct MI300X"),
    ),
    "aks_mpijob_info_interleaved_factor4.log": (Read(5, (8, 0.0), (2048, 0.09), None, None, None),),
    "allgather_one_rank_rtx4090.log": (
        Read(1, (33554432, 0.0), (33554432, 0.0), "all_gather", 1, 1, "NVIDIA GeForce RTX 4090"),
    ),
    "reduce_scatter_zero_rows_cut.log": (Read(7, (0, 0.0), (256, 0.01), "reduce_scatter", 8, None),),
    "bfloat16_rows_headerless_cut.log": (Read(11, (1024, 0.34), (1048576, 184.34), "all_reduce", 8, None),),
    # rccl-tests 2.17.9 -g 8 in one container: two runs, rccl-library=22707 read as the release 2.27.7
    "rccl_g8_radeon_allreduce_alltoall.log": (
        Read(29, (4, 0.0), (1073741824, 402.55), "all_reduce", 8, 1, "AMD Radeon Graphics", "2.27.7"),
        Read(25, (0, 0.0), (134217728, 322.22), "alltoall", 8, 1, "AMD Radeon Graphics", "2.27.7"),
    ),
    # mpirun -np 2 --ngpus 8 --datatype all: 12 types x 3 sizes, 16 rank lines on 2 hosts, UCX WARN above
    "h200_2x8_datatype_all_fp8_rows.log": (
        Read(36, (10737418240, 389.40), (42949672960, 363.85), "all_reduce", 16, 2, "NVIDIA H200", "2.30.4"),
    ),
    # two processes of a build without MPI=1 printing into one terminal: their rows interleave (256 then 8)
    "two_processes_rows_interleaved_cut.log": (Read(10, (8, 0.0), (1024, 0.02), None, None, None),),
    "two_processes_tails_interleaved.log": (
        Read(3, (134217728, 4.51), (268435456, 4.86), None, None, None),
        Read(1, (268435456, 4.52), (268435456, 4.52), None, None, None),
    ),
    # mpirun.mpich -np 16 ... -g 1: the ranks from -np, the nodes not said (no hosts, no per-node count)
    "rccl_mi250x_16r_mpich_error_column_cut.log": (Read(8, (8, 0.0), (1024, 0.06), "all_reduce", 16, None),),
    "tree_2node_hostfile_no_rank_lines_cut.log": (
        Read(5, (2097152, 18.53), (33554432, 41.31), "all_reduce", 2, None),
    ),
    "rtx4090_g8_one_process_first_row_cut.log": (
        Read(0, (0, 0.0), (0, 0.0), "all_reduce", 8, 1, "NVIDIA GeForce RTX 4090"),
    ),
    # -c 0 (validation: 0): N/A errors; NCCL WARN lines and the NCCL version between rank lines and header
    "broadcast_c0_socket_v100_warn_lines_cut.log": (
        Read(1, (8, 0.0), (8, 0.0), "broadcast", 2, 2, "Tesla V100-PCIE-16GB", "2.9.6"),
    ),
    # "`# Using devices": a markdown backtick glued to the first line; rank lines without Group
    "backtick_v100_sxm3_g4_old_layout_cut.log": (
        Read(4, (8, 0.0), (64, 0.0), "all_reduce", 4, 1, "Tesla V100-SXM3-32GB"),
    ),
    # a markdown page took every leading '#': header, rank line and column header read without it
    "hash_stripped_blocking_one_rank_a10g_cut.log": (
        Read(0, (0, 0.0), (0, 0.0), "all_reduce", 1, 1, "NVIDIA A10G"),
    ),
}

#: Logs without a result table and the reason the error gives.
NO_TABLE = {
    "b200_2node_version_header.log": "stops after the run's header (line 13)",
    "rccl_mi300x_enroot_header_only.log": "stops after the run's header (line 14)",
    "v100_efa_nccl246_info_header.log": "stops after the run's header (line 6)",
    "hypercube_cuda_failure_5090.log": 'failed at line 8: "localhost: Test CUDA failure common.cu:986',
    "two_processes_headers_interleaved_cut.log": "stops after the run's header (line 10)",
    "a100_pcie_g8_blank_host_header_cut.log": "stops after the run's header (line 12)",
}

#: Logs whose table cannot be read, and the one line that says why.
UNREADABLE = {
    # '#'-less column header whose units line was cut: nothing below it
    "hash_stripped_old_layout_8r_header_cut.log": "15: the column header has no result rows below it",
    # mpirun -np 2 of a build without MPI=1: each process printed its own header, both as rank 0
    "two_runs_rank0_on_two_hosts_v100_cut.log": (
        "9: rank 0 appears twice, at lines 8 and 9, with other values, on two hosts: each process ran a job "
        r"of its own \(an nccl-tests build without MPI=1"
    ),
}


def _parsed(name: str) -> list[PerfTable]:
    return parse_pasted((PUBLIC / name).read_bytes(), name)


def _busbw(table: PerfTable, index: int) -> tuple[int, float]:
    if not table.rows:
        return 0, 0.0
    row = table.rows[index]
    assert row.out_of_place is not None
    return row.size_bytes, row.out_of_place.busbw_bytes_per_s / 1e9


def test_every_public_log_is_covered() -> None:
    assert {p.name for p in PUBLIC.glob("*.log")} == set(EXPECTED) | set(NO_TABLE) | set(UNREADABLE)


@pytest.mark.parametrize(("name", "reason"), sorted(UNREADABLE.items()))
def test_unreadable_log_says_why_in_one_line(name: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        _parsed(name)
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(PUBLIC / name)])
    assert result.exit_code == 2 and "Traceback" not in result.output


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_public_log_reads_as_published(name: str) -> None:
    tables = _parsed(name)
    assert len(tables) == len(EXPECTED[name])
    for table, want in zip(tables, EXPECTED[name], strict=True):
        assert len(table.rows) == want.rows
        assert _busbw(table, 0) == pytest.approx(want.first, abs=1e-9)
        assert _busbw(table, -1) == pytest.approx(want.last, abs=1e-9)
        got = (table.collective, table.n_ranks, table.n_nodes, table.gpu_name, table.nccl_version)
        assert got == (want.collective, want.ranks, want.nodes, want.gpu, want.nccl)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_crlf_copy_reads_the_same(name: str) -> None:
    text = (PUBLIC / name).read_text(encoding="utf-8")
    assert parse_pasted(text.replace("\n", "\r\n"), name) == parse_pasted(text, name)


@pytest.mark.parametrize(("name", "reason"), sorted(NO_TABLE.items()))
def test_log_without_table_says_why(name: str, reason: str) -> None:
    with pytest.raises(ParseError, match="no nccl-tests result table found") as info:
        _parsed(name)
    assert reason in str(info.value)


def test_cut_rows_and_headerless_rows_are_noted() -> None:
    (efa,) = _parsed("efa_mpi_prefix_none_op_cut.log")
    assert efa.header_supplied and efa.cut_line == 10
    assert efa.notes[0].startswith("line 1: rows without their column header")
    (_, second) = _parsed("sendrecv_uint8_gtx1080_two_runs.log")
    assert second.cut_line == 17 and not second.rows
    (nvl72,) = _parsed("nvl72_gb200_one_rank_line.log")
    assert nvl72.notes[0].startswith("the rank lines list rank(s) 71 only")


def test_old_layout_blank_operation_and_dtypes() -> None:
    (alltoall,) = _parsed("sb_alltoall_a100_old_format.log")
    assert {row.redop for row in alltoall.rows} == {None}
    assert alltoall.rows[-1].out_of_place is not None and alltoall.rows[-1].out_of_place.error is None
    (sendrecv, _) = _parsed("sendrecv_uint8_gtx1080_two_runs.log")
    assert sendrecv.rows[0].dtype == "uint8" and sendrecv.rows[0].in_place is not None
    (maxmin,) = _parsed("allreduce_op_max_min_rows.log")
    assert [row.redop for row in maxmin.rows].count("min") == 5
    (bf16,) = _parsed("bfloat16_rows_headerless_cut.log")
    assert {row.dtype for row in bf16.rows} == {"bfloat16"}


@pytest.mark.parametrize(
    ("name", "fits"),
    [
        ("aks_mpijob_info_interleaved_factor4.log", "its columns fit all_reduce and sendrecv"),
        (
            "sb_alltoall_a100_old_format.log",
            "its columns fit all_gather, alltoall, gather, hypercube and scatter",
        ),
    ],
)
def test_unknown_collective_names_the_candidates(name: str, fits: str) -> None:
    with pytest.raises(ParseError, match="cannot tell the collective") as info:
        compare_nccl_tests((PUBLIC / name).read_text(encoding="utf-8"), source=name)
    assert fits in str(info.value)


def test_zero_byte_rows_are_left_out_not_fatal() -> None:
    # Before: "size: message size must be > 0 bytes, got 0" for superbenchmark's reduce log.
    (table,) = compare_nccl_tests(
        (PUBLIC / "sb_reduce_a100_redop_root.log").read_text(encoding="utf-8")
    ).tables
    assert [size for size, _ in table.dropped] == [0, 0]
    assert [line for _, line in table.dropped] == [17, 18]
    assert table.spec.accelerator == "a100-sxm-40gb"  # rank lines: A100-SXM4-40GB


def test_cli_one_rank_and_cut_only_table() -> None:
    runner = CliRunner()
    one = runner.invoke(app, ["nccl-tests", "compare", str(PUBLIC / "allgather_one_rank_rtx4090.log")])
    assert one.exit_code == 2
    assert "one rank: nothing crosses a link" in one.output and "Traceback" not in one.output
    two = runner.invoke(app, ["nccl-tests", "compare", str(PUBLIC / "sendrecv_uint8_gtx1080_two_runs.log")])
    assert two.exit_code == 0
    assert "Table 2 (line 15) skipped: no rows (its only row was cut mid-line at line 17)" in two.output
