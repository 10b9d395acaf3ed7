"""Property tests for the pasted-log reader, the NCCL INFO reader and compare end to end.

Real case files and the hand-written INFO logs of test_evidence_compare.py, damaged the way pasted logs get
damaged (launcher tags on some lines, lines cut, dropped, doubled or wrapped, garbage inserted, CRLF), give a
result or one ParseError/ValueError whose line lies inside the input -- never another exception.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.discovery.test_evidence_compare import NVLS_OFF, _info, _log
from tests.discovery.test_known_causes import BANNER_2193, DEVINFO_1024, QP_2048
from tests.discovery.test_last_layouts import (
    COLLNET_ON,
    COMM,
    COMMAND,
    HEADER,
    OUT_ONLY_4G,
    P2P_OFF,
    ROW_2G,
    ROW_4G,
)

from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.nccl_info import parse_nccl_info
from aifabric.discovery.paste import parse_pasted
from aifabric.errors import ParseError

CASES = (
    "case_01_dgx_h100_allreduce_single_node.txt",
    "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt",
    "case_13_v100_pcie_4gpu_no_nvlink.txt",
    "case_31_mi300x_single_node_rccl.txt",
)


def _split(row: str, after: int) -> list[str]:
    """``row`` wrapped onto two lines at the space after field ``after``."""
    fields = row.split()
    return ["  ".join(fields[:after]), "  ".join(fields[after:])]


HAND = (
    _log(_info(NVLS_OFF), 330.0),
    _log(_info(NVLS_OFF, gdr=False), 120.0),
    _log(_info(NVLS_OFF, network="Socket", gdr=False, nodes=4), 8.0, n_ranks=32, n_nodes=4),
    # MTU 2048 on the QPs with GDR off (test_known_causes.py), and NCCL 2.19.3 on 8 nodes (NVIDIA/nccl #1112)
    _log(_info(NVLS_OFF, QP_2048, DEVINFO_1024, gdr=False), 120.0),
    _log([BANNER_2193], 104.0, n_ranks=64, n_nodes=8),
    # the last layouts (test_last_layouts.py): the env echo passed to the engine, an impossible count, rows
    # with only the out-of-place group, a row wrapped onto two lines, a last row cut mid-line
    _log(_info(NVLS_OFF, P2P_OFF, COLLNET_ON), 330.0),
    _log(_info(NVLS_OFF, COMM.format(r=0, n=2, lr=8)), 330.0),
    "\n".join([COMMAND, HEADER, OUT_ONLY_4G, *_split(ROW_4G, 6), ROW_2G, ROW_4G[:70]]),
)


TAGS = ("[1,0]<stdout>:", "[0] ", "0: ", "2024-03-01T10:00:00Z ", "[10:00:01] ", "[default0]:")


def _settings(n: int) -> settings:
    return settings(
        max_examples=n, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
    )


@st.composite
def damaged(draw: st.DrawFn, texts: tuple[str, ...]) -> str:
    lines = draw(st.sampled_from(texts)).split("\n")
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["tag", "cut", "drop", "double", "wrap", "garbage", "crlf"]))
        at = draw(st.integers(0, len(lines) - 1))
        line = lines[at]
        if kind == "tag":
            lines[at] = draw(st.sampled_from(TAGS)) + line
        elif kind == "cut":
            lines[at] = line[: draw(st.integers(0, len(line)))]
        elif kind == "drop":
            del lines[at]
        elif kind == "double":
            lines.insert(at, line)
        elif kind == "wrap":
            cut = draw(st.integers(0, len(line)))
            lines[at : at + 1] = [line[:cut], line[cut:]]
        elif kind == "garbage":
            pos = draw(st.integers(0, len(line)))
            lines[at] = line[:pos] + draw(st.text(min_size=1, max_size=8)) + line[pos:]
        else:
            lines[at] = line + "\r"
        if not lines:
            lines = [""]
    return "\n".join(lines)


def _lines(text: str) -> int:
    return text.count("\n") + 1


def _check_error(err: ValueError, text: str) -> None:
    assert "\n" not in str(err)
    if isinstance(err, ParseError) and err.line is not None:
        assert 1 <= err.line <= _lines(text), err


def test_pasted_reader_on_damaged_logs(all_case_text: dict[str, str]) -> None:
    texts = tuple(all_case_text[c] for c in CASES) + HAND

    @_settings(900)
    @given(damaged(texts))
    def run(text: str) -> None:
        try:
            tables = parse_pasted(text, "fuzz")
        except ParseError as err:
            _check_error(err, text)
            return
        for t in tables:
            assert 1 <= t.line <= _lines(text)
            assert all(1 <= r.line <= _lines(text) for r in t.rows)

    run()


@_settings(900)
@given(damaged(HAND))
def test_info_reader_on_damaged_logs(text: str) -> None:
    info = parse_nccl_info(text.split("\n"))
    assert all(1 <= e.line <= _lines(text) for e in info.lines())
    assert info.gdr_connections <= info.net_connections


@_settings(250)
@given(damaged(HAND))
def test_compare_on_damaged_info_logs(text: str) -> None:
    try:
        result = compare_nccl_tests(text, source="fuzz")
    except ValueError as err:  # ParseError and ConfigError are ValueErrors: one line each
        _check_error(err, text)
        return
    for t in result.tables:
        assert t.verdict in ("healthy", *(f.cause for f in t.findings))
