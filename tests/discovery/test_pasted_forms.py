"""Rank/node counts from every form a log gives (issue 9 item 2) and the layouts people paste (item 3).

The rows are the 4 GB all_reduce row of one DGX H100 (NVIDIA/nccl-tests #290: 15870 us, 270.63 GB/s algbw,
473.60 busbw = 270.63 x 2 x 7 / 8) or hand-derived rows for other rank counts (busbw = algbw x 2(n-1)/n).
"""

from __future__ import annotations

import pytest

from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.counts import resolve_counts
from aifabric.discovery.nccl_info import parse_nccl_info
from aifabric.discovery.paste import clean_line, parse_pasted
from aifabric.errors import ParseError

HEADER = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
    "   busbw #wrong"
)
ROW_8 = "  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0    15773  272.30  476.53      0"  # noqa: E501
# 72 ranks: algbw 186.74 GB/s, busbw = 186.74 x 2 x 71 / 72 = 368.29
ROW_72 = "  4294967296    1073741824     float     sum      -1  23000.0  186.74  368.29      0  23000.0  186.74  368.29      0"  # noqa: E501
# 32 ranks: busbw = 186.74 x 2 x 31 / 32 = 361.81
ROW_32 = "  4294967296    1073741824     float     sum      -1  23000.0  186.74  361.81      0  23000.0  186.74  361.81      0"  # noqa: E501
# 16 ranks: busbw = 186.74 x 2 x 15 / 16 = 350.14
ROW_16 = "  4294967296    1073741824     float     sum      -1  23000.0  186.74  350.14      0  23000.0  186.74  350.14      0"  # noqa: E501
PARAMS = (
    "# nThread 1 nGpus 1 minBytes 4294967296 maxBytes 4294967296 step: 2(factor) warmup iters: 5 iters: 20"
)


def _counts(lines: list[str], **overrides: int) -> tuple[int, int | None]:
    text = "\n".join(lines) + "\n"
    table = parse_pasted(text)[0]
    info = parse_nccl_info(lines)
    c = resolve_counts(table, lines, info, **overrides)
    return c.n_ranks, c.n_nodes


def _rank(r: int, host: str) -> str:
    return f"#  Rank {r:2d} Group  0 Pid {r + 100} on {host} device {r % 8} [0x18] NVIDIA H100 80GB HBM3"


FORMS = [
    ("rank lines with hosts", [*(_rank(r, f"host-{'ab'[r // 8]}") for r in range(16)), HEADER, ROW_16],
     (16, 2)),
    ("rank ranges on hosts", ["#  Ranks 0-7 on host-a devices 0-7", "#  Ranks 8-15 on host-b devices 0-7",
                              HEADER, ROW_16], (16, 2)),
    ("Rank 71 alone: the numbers", [PARAMS, _rank(71, "node-9"), HEADER, ROW_72], (72, None)),
    ("NCCL nRanks/nNodes", ["h:1:1 [0] NCCL INFO comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0",
                            HEADER, ROW_16], (16, 2)),
    ("mpirun -np with hosts", ["$ mpirun -np 16 -H a:8,b:8 ./build/all_reduce_perf -b 4G -e 4G -g 1",
                               HEADER, ROW_16], (16, 2)),
    ("srun -N --ntasks-per-node", ["srun -N 4 --ntasks-per-node=8 ./all_reduce_perf -b 4G -e 4G",
                                   HEADER, ROW_32], (32, 4)),
    ("mpirun -np -N", ["mpirun -np 16 -N 8 ./all_reduce_perf -b 4G", HEADER, ROW_16], (16, 2)),
    ("mpirun --npernode", ["mpirun -np 16 --npernode 8 ./all_reduce_perf -b 4G", HEADER, ROW_16], (16, 2)),
    ("mpirun --map-by ppr", ["mpirun -np 16 --map-by ppr:8:node ./all_reduce_perf", HEADER, ROW_16], (16, 2)),
    ("srun -n --ntasks-per-node", ["srun -n 16 --ntasks-per-node=8 ./all_reduce_perf", HEADER, ROW_16],
     (16, 2)),
    ("mpirun -H a:8,b:8", ["mpirun -H a:8,b:8 ./all_reduce_perf -b 4G", HEADER, ROW_16], (16, 2)),
    ("torchrun", ["torchrun --nnodes=2 --nproc_per_node=8 all_reduce_perf -b 4G", HEADER, ROW_16], (16, 2)),
    # one process (no launcher) drives every rank: its -t x -g or nThread x nGpus = the ranks -> one node
    ("-t 2 -g 4 command options", ["./all_reduce_perf -b 4G -e 4G -t 2 -g 4", HEADER, ROW_8], (8, 1)),
    ("-g 8 header option", ["./all_reduce_perf -b 4G -e 4G -g 8",
                            "# nThread 1 nGpus 8 minBytes 4294967296 maxBytes 4294967296 step: 2(factor)",
                            HEADER, ROW_8], (8, 1)),
    ("mpirun -np, nothing per node", ["mpirun -np 16 ./all_reduce_perf -b 4G", HEADER, ROW_16], (16, None)),
]  # fmt: skip


@pytest.mark.parametrize(("form", "lines", "expected"), FORMS, ids=[f[0] for f in FORMS])
def test_rank_and_node_forms(form: str, lines: list[str], expected: tuple[int, int | None]) -> None:
    assert _counts(lines) == expected, form


def test_rank_71_alone_is_never_one_rank() -> None:
    row = ROW_16.replace("350.14", "350.00")  # a ratio that pins no integer >= 72
    with pytest.raises(ParseError, match=r"list 1 of at least 72 ranks; give --ranks"):
        _counts([_rank(71, "node-9"), HEADER, row])


def test_overrides_win() -> None:
    lines = [_rank(71, "node-9"), HEADER, ROW_72]
    assert _counts(lines, ranks=72, gpus_per_node=8) == (72, 9)
    assert _counts(lines, ranks=72, nodes=9) == (72, 9)
    with pytest.raises(ParseError, match="do not fill 5 nodes evenly"):
        _counts(lines, ranks=72, nodes=5)


def test_undeterminable_asks_for_the_option() -> None:
    # broadcast: busbw = algbw whatever the ranks, and nothing else in the log says
    row = "1048576 262144 float none 0 100.0 10.49 10.49 0 100.0 10.49 10.49 0"
    with pytest.raises(ParseError, match="give --ranks"):
        compare_nccl_tests("\n".join(["broadcast_perf -b 1M", HEADER, row]) + "\n")


# -- layouts -------------------------------------------------------------------------------------------------

PLAIN = [PARAMS.replace("nGpus 1", "nGpus 8"), HEADER, ROW_8, "# Out of bounds values : 0 OK",
         "# Avg bus bandwidth    : 473.6 "]  # fmt: skip


@pytest.mark.parametrize(
    ("layout", "transform"),
    [
        ("Open MPI --tag-output", lambda ls: [f"[1,0]<stdout>:{x}" for x in ls]),
        ("MPICH -prepend-rank", lambda ls: [f"[0] {x}" for x in ls]),
        ("srun -l", lambda ls: [f"0: {x}" for x in ls]),
        ("ISO timestamps", lambda ls: [f"2024-03-01T10:00:00.123Z {x}" for x in ls]),
        ("syslog-like time and tag", lambda ls: [f"[10:00:01] [1,0]<stdout>:{x}" for x in ls]),
        ("CRLF", lambda ls: [f"{x}\r" for x in ls]),
        ("no header", lambda ls: [x for x in ls if not x.startswith("#       size")]),
        ("wrapped at 60 columns", lambda ls: _wrap(ls, 60)),
        ("wrapped at 80 columns, tagged", lambda ls: _wrap([f"[1,0]<stdout>:{x}" for x in ls], 80)),
    ],
)
def test_layouts(layout: str, transform) -> None:  # noqa: ANN001
    lines = transform(PLAIN)
    tables = parse_pasted("\n".join(lines) + "\n", "paste.txt", collective="all_reduce")
    assert len(tables) == 1, layout
    t = tables[0]
    assert t.n_ranks == 8 and len(t.rows) == 1
    assert t.rows[0].out_of_place is not None and t.rows[0].out_of_place.time_s == pytest.approx(15870e-6)
    assert t.rows[0].line == 1 + next(i for i, x in enumerate(lines) if "4294967296    " in x)
    assert t.avg_busbw_bytes_per_s == pytest.approx(473.6e9)
    # the verdict of every layout: one DGX H100 at 473.6 GB/s is healthy (NVIDIA/nccl-tests #290); the same
    # row at half the time's busbw (2x the time) is not, and its cause is a scale-up one
    command = "./all_reduce_perf -b 4G -e 4G -g 8"
    assert compare_nccl_tests("\n".join([command, *lines]) + "\n").tables[0].verdict == "healthy", layout
    slow = transform([x.replace("15870", "31740").replace("15773", "31546") for x in PLAIN])
    verdict = compare_nccl_tests("\n".join([command, *slow]) + "\n").tables[0].verdict
    assert verdict in ("nvls_off", "nvlink_degraded"), layout


def _wrap(lines: list[str], width: int) -> list[str]:
    """``lines`` as a terminal ``width`` columns wide prints them (long lines cut into pieces)."""
    out = []
    for line in lines:
        out += [line[i : i + width] for i in range(0, max(1, len(line)), width)]
    return out


# Each collective's table, rows built at the model's own time (healthy) and at 2x it (flagged): one node of
# 8 H100 for every collective nccl-tests prints (issue 9 item 3).
@pytest.mark.parametrize(
    ("binary", "op", "redop", "root", "count_div"),
    [
        ("all_gather_perf", "all_gather", "none", -1, 32),
        ("reduce_scatter_perf", "reduce_scatter", "sum", -1, 32),
        ("alltoall_perf", "all_to_all", "none", -1, 4),
        ("broadcast_perf", "broadcast", "none", 0, 4),
        ("sendrecv_perf", "send_recv", "sum", -1, 4),
    ],
)
def test_every_collective_table_gets_a_verdict(
    binary: str, op: str, redop: str, root: int, count_div: int
) -> None:
    size = 1 << 30
    lines = [f"$ ./{binary} -b 1G -e 1G -g 8", *(_rank(r, "host-a") for r in range(8)), HEADER]

    # busbw = algbw x the collective's factor of 8 ranks (nccl-tests doc/PERFORMANCE.md): 7/8 for all_gather,
    # reduce_scatter and alltoall, 1 for broadcast and sendrecv
    busbw = "1.00" if count_div == 4 and op != "all_to_all" else "0.88"

    def log(time_us: float) -> str:
        row = (f"  {size}  {size // count_div}  float  {redop}  {root}  {time_us:.1f}  1.00  {busbw}  0  "
               f"{time_us:.1f}  1.00  {busbw}  0")  # fmt: skip
        return "\n".join([*lines, row]) + "\n"

    probe = compare_nccl_tests(log(1000.0)).tables[0]
    assert probe.op == op and probe.table.n_ranks == 8 and probe.n_nodes == 1
    model_us = probe.rows[0].predicted.time_s * 1e6
    assert compare_nccl_tests(log(model_us)).tables[0].verdict == "healthy"
    slow = compare_nccl_tests(log(2 * model_us)).tables[0]
    assert slow.rows[0].flagged and slow.verdict != "healthy"


def test_several_tables_and_missing_in_place_half() -> None:
    half = "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    row = "  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0"
    text = "\n".join(["all_reduce_perf -g 8", half, row, "", "all_reduce_perf -g 8", row]) + "\n"
    tables = parse_pasted(text)
    assert [len(t.rows) for t in tables] == [1, 1]
    assert [t.rows[0].line for t in tables] == [3, 6]
    assert tables[1].rows[0].in_place is None


def test_a_row_nccl_tests_never_prints_names_its_line() -> None:
    with pytest.raises(ParseError, match=r"paste.txt:2: a result row outside any table"):
        parse_pasted("all_reduce_perf\n 1024 256 float sum -1 10.0 0.1\n", "paste.txt")


def test_clean_line_keeps_info_lines() -> None:
    line = "node-a:1:1 [0] NCCL INFO NVLS multicast support is not available on dev 0"
    assert clean_line(line) == line


def test_headerless_gather_or_scatter_rows_give_their_ranks() -> None:
    # Rows without a header, redop 'none' and root 0: gather_perf or scatter_perf (nccl-tests src/gather.cu,
    # src/scatter.cu), which the rows cannot tell apart. Both print size = n x count x typesize and busbw =
    # algbw x (n - 1)/n: 4 ranks here (1048576 / (65536 x 4 B) = 4; 15.73 / 20.97 = 0.75 = 3/4), whichever.
    cells = "0    50.00   20.97   15.73      0    48.00   21.85   16.38      0"
    rows = f"   1048576         65536     float    none       {cells}\n"
    rows += f"   2097152        131072     float    none       {cells}\n"
    (table,) = parse_pasted(rows)
    assert table.header_supplied and table.collective is None and table.n_ranks == 4
    # a sum with root 0 is reduce, whose size = count x 4 B says nothing of n: ranks stay unset
    one = "1048576 262144 float sum 0 50.00 20.97 20.97 0 48.00 21.85 21.85 0"
    assert parse_pasted(one)[0].collective == "reduce" and parse_pasted(one)[0].n_ranks is None
