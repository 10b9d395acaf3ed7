"""Header-less rows behind any launcher prefix, interleaved launcher streams (issue 9, trial 9 items 8, 9).

The rows are those of shared case 01 (NVIDIA/nccl-tests #290, one DGX H100, all_reduce 128 MB .. 4 GB). Pasted
without their header behind a ``pdsh`` host (``node001: ``, ``10.0.0.1: ``), a ``kubectl logs --prefix`` tag
with or without a timestamp after it, or an Open MPI tag, they must read as the plain rows do; before the fix
the host and kubectl+timestamp forms were refused with "a result row outside any table". Another pod's lines
printed between the rows of a table (``kubectl logs --all-containers --prefix``) must not split it.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.discovery.conftest import CASE_01, read_case

from aifabric.discovery._text import demultiplexed
from aifabric.discovery.nccl_tests import PerfTable
from aifabric.discovery.paste import parse_pasted

ROWS = [
    line for line in read_case(CASE_01).splitlines() if len(line.split()) == 13 and line.split()[0].isdigit()
]

_NAME = st.from_regex(r"[a-z][a-z0-9-]{0,12}[0-9]", fullmatch=True)
_IP = st.tuples(*[st.integers(0, 255)] * 4).map(lambda parts: ".".join(map(str, parts)))
_STAMP = st.sampled_from(["2026-12-02T05:00:00Z ", "2026-12-02T05:00:00.123456789Z ", "[10:00:01] "])
_PREFIX = st.one_of(
    _NAME.map(lambda host: f"{host}: "),
    _IP.map(lambda ip: f"{ip}: "),
    st.tuples(_NAME, _NAME).map(lambda pc: f"[pod/{pc[0]}/{pc[1]}] "),
    st.tuples(_NAME, _NAME, _STAMP).map(lambda pcs: f"[pod/{pcs[0]}/{pcs[1]}] {pcs[2]}"),
    st.tuples(_STAMP, _NAME).map(lambda sh: f"{sh[0]}[pod/{sh[1]}/c] "),
    st.integers(0, 63).map(lambda rank: f"[1,{rank}]<stdout>:"),
)


def _values(tables: list[PerfTable]) -> list[PerfTable]:
    """The tables without their line numbers (interleaved lines move them)."""
    return [
        dataclasses.replace(t, line=0, rows=tuple(dataclasses.replace(r, line=0) for r in t.rows))
        for t in tables
    ]


def test_case_01_has_its_six_rows() -> None:
    assert len(ROWS) == 6  # 128 MB .. 4 GB, factor 2 (case 01)


@settings(max_examples=40, deadline=None)
@given(prefix=_PREFIX)
def test_any_prefix_on_headerless_rows_gives_the_plain_tables(prefix: str) -> None:
    plain = parse_pasted("\n".join(ROWS), collective="all_reduce")
    assert parse_pasted("\n".join(prefix + row for row in ROWS), collective="all_reduce") == plain


def test_pdsh_ip_prefix_reads_the_4gb_row() -> None:
    # Trial 9, nh_pdsh_ip.log: refused before the fix.
    (table,) = parse_pasted("\n".join("10.0.0.1: " + row for row in ROWS))
    assert table.collective == "all_reduce" and table.n_ranks == 8  # busbw/algbw = 2 x 7/8 (case 01)
    assert table.row(4294967296).out_of_place.busbw_bytes_per_s == 473.60e9  # case 01, 4 GB row


@settings(max_examples=30, deadline=None)
@given(where=st.lists(st.integers(0, len(ROWS)), min_size=1, max_size=8))
def test_another_pods_lines_do_not_split_the_table(where: list[int]) -> None:
    # Trial 9, kube_noise.log: a worker's lines between the launcher's rows gave "cannot tell the collective".
    launcher = "[pod/nccl-job-launcher-abc12/launcher] "
    lines = [launcher + row for row in ROWS]
    for at in sorted(where, reverse=True):
        lines.insert(at, "[pod/nccl-job-worker-0/worker] some noise 123 456 789")
    tables = parse_pasted("\n".join(lines))
    assert _values(tables) == _values(parse_pasted("\n".join(ROWS)))


def test_rows_keep_their_pasted_line_numbers() -> None:
    noise = "[pod/w/worker] some noise 123 456 789"
    lines = ["[pod/l/launcher] " + ROWS[0], noise, noise, "[pod/l/launcher] " + ROWS[1]]
    (table,) = parse_pasted("\n".join(lines), collective="all_reduce")
    assert [row.line for row in table.rows] == [1, 4]


def test_demultiplexed_keeps_untagged_lines_with_the_stream_above() -> None:
    assert demultiplexed(["[0] a", "[1] x", "[0] b", "c", "[1] y"]) == [0, 2, 3, 1, 4]
    assert demultiplexed(["a", "b", "c"]) == [0, 1, 2]
