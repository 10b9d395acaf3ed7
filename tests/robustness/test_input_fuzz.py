"""Fuzz every input kind: damaged real files give a result or the project's clean error, nothing else.

For each kind (cluster YAML, calibration YAML, sweep YAML, ``nvidia-smi topo -m``, NCCL topology XML,
nccl-tests logs) hypothesis damages the real files in ``data/`` the way files get damaged or attacked
(cut, a token or line dropped or doubled, an edge token swapped in, garbage text or bytes inserted, a line
repeated thousands of times, an alias bomb or deep nesting prepended) and feeds them to the front door
the CLI uses. An :class:`~aifabric.errors.AifabricError` is the clean error (the CLI prints it as one line,
exit 2); any other exception fails the test. Examples are derandomised (tests/conftest.py), so CI sees the
same few hundred cases per kind on every run. The long version (10,000+ cases, through the CLI, with time
and memory limits) is ``benchmarks/fuzz_files.py``.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.damage import token_spans

from aifabric.cluster.spec import ClusterSpec
from aifabric.discovery.calibrate import load_calibration
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.nccl_tests import parse_nccl_tests
from aifabric.discovery.node import inspect_node_text
from aifabric.errors import AifabricError
from aifabric.inputs import load_yaml_mapping_text
from aifabric.sweep.grid import SweepSpec

DATA = Path(__file__).parent / "data"
EXAMPLES = 250
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

# Tokens at the edges of what the readers accept: YAML syntax and tags, non-finite and huge numbers,
# markup and escape sequences, nvidia-smi codes, XML fragments, nccl-tests fields.
EDGE_TOKENS = (
    "&a", "*a", "&a [*a]", "? [k]", "{a: 1}:", "<<: *a", "!!python/object/apply:os.system", "!!binary",
    ".nan", ".inf", "-.inf", "nan", "1e999", "9" * 40, "-1", "0", "~", "null", "[", "]", "{", "}", "'", '"',
    "|", ">", "- ", ": ", "\t", "[/]", "[bold]", "\x1b[31m", "\x07", "\x00", "\ufeff", "X", "NV99999", "SYS",
    "N/A", "0-65535", "9-1", "GPU0", "NIC0:", "<system>", "</pci>", "<!DOCTYPE x>", "&b;", '<pci busid="q">',
    'speed="1e999"', "hypercube_perf", "foo_perf", "NCCL_ALGO=Ring" * 3, "# Ranks 0-99999 on h",
    "#  Rank  0 Group  0 Pid  1 on h device  0 [0x1b] ", "# Avg bus bandwidth : nan",
)  # fmt: skip
BOMB = "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcde", "bcdef", strict=True))


@st.composite
def damaged(draw: st.DrawFn, texts: tuple[str, ...]) -> str | bytes:
    """One real text damaged once (or twice: a damaged text damaged again)."""
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 2))):
        text = _damage(draw, text)
        if isinstance(text, bytes):
            return text
    return text


def _damage(draw: st.DrawFn, text: str) -> str | bytes:
    kind = draw(
        st.sampled_from(
            ["truncate", "drop_token", "swap_token", "drop_line", "double_line", "repeat_line", "garbage",
             "bytes", "prefix"]
        )
    )  # fmt: skip
    lines = text.split("\n")
    if kind == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    if kind in ("drop_token", "swap_token"):
        spans = token_spans(text) or [(0, 0)]
        start, end = draw(st.sampled_from(spans))
        new = "" if kind == "drop_token" else draw(st.sampled_from(EDGE_TOKENS))
        return text[:start] + new + text[end:]
    at = draw(st.integers(0, len(lines) - 1))
    if kind == "drop_line":
        return "\n".join(lines[:at] + lines[at + 1 :])
    if kind == "double_line":
        return "\n".join(lines[: at + 1] + lines[at:])
    if kind == "repeat_line":  # a long run of one line: quadratic scans show here
        return "\n".join(lines[:at] + [lines[at]] * draw(st.sampled_from([100, 1000])) + lines[at:])
    if kind == "garbage":
        position = draw(st.integers(0, len(text)))
        return text[:position] + draw(st.text(min_size=1, max_size=16)) + text[position:]
    if kind == "prefix":  # an alias bomb, deep nesting or a long line in front of the real text
        head = draw(st.sampled_from([f"a: &a [x, x, x, x, x, x, x, x, x]\n{BOMB}", "z: " + "[" * 200 + "\n",
                                     "x" * 20_000 + "\n", "<pci>" * 200 + "\n", "\x1b[2J\n"]))  # fmt: skip
        return head + text
    raw = text.encode()
    position = draw(st.integers(0, len(raw)))
    return raw[:position] + draw(st.binary(min_size=1, max_size=8)) + raw[position:]


def _text(data: str | bytes) -> str:
    """YAML front doors read files: undecodable bytes are refused before the loader (tested elsewhere)."""
    return data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data


def _read(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple((DATA / name).read_text(encoding="utf-8") for name in names)


def _cluster(data: str | bytes) -> object:
    spec = ClusterSpec.from_dict(load_yaml_mapping_text(_text(data), "fuzz.yaml"), source="fuzz.yaml")
    return spec.n_gpus


def _sweep(data: str | bytes) -> object:
    spec = SweepSpec.from_dict(load_yaml_mapping_text(_text(data), "fuzz.yaml"), source="fuzz.yaml")
    return sum(1 for _ in zip(range(100), spec.points(), strict=False))


def _calibration(data: str | bytes) -> object:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cal.yaml"
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", errors="surrogatepass"))
        cal = load_calibration(path)
    numbers = (cal.intra_scale, cal.inter_scale, cal.latency_scale, cal.extra_inter_latency_s)
    assert all(math.isfinite(x) for x in numbers), cal  # a result holds numbers, never NaN
    return cal


def _topo(data: str | bytes) -> object:
    return inspect_node_text(data, source="fuzz", fmt="nvidia-smi")


def _xml(data: str | bytes) -> object:
    return inspect_node_text(data, source="fuzz", fmt="nccl-xml")


def _log(data: str | bytes) -> object:
    return parse_nccl_tests(data, source="fuzz")


def _compare(data: str | bytes) -> object:
    return compare_nccl_tests(data, source="fuzz")


TOPO = (
    "case_08_b200_gke_a4_topo_and_2node_allgather.txt",
    "case_26_a30_pcie_two_nics_phb_no_pcie_switch.txt",
)
XML = ("case_17_azure_ndv4_ndv5_topology_xml.txt", "case_21_aws_p4d_p5_nccl_topology_xml.txt")
LOGS = ("case_01_dgx_h100_allreduce_single_node.txt", "case_13_v100_pcie_4gpu_no_nvlink.txt")
KINDS: dict[str, tuple[Callable[[str | bytes], object], tuple[str, ...]]] = {
    "cluster_yaml": (_cluster, ("cluster_dgx_h100_superpod.yaml", "cluster_example_roce.yaml")),
    "sweep_yaml": (_sweep, ("sweep_example.yaml",)),
    "calibration_yaml": (_calibration, ("calibration_case_03.yaml",)),
    "topo_m": (_topo, TOPO),
    "nccl_xml": (_xml, XML),
    "nccl_tests_log": (_log, LOGS),
    "nccl_tests_compare": (_compare, LOGS[:1]),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_real_files_are_read(kind: str) -> None:
    """The undamaged files give a result: the fuzz starts from inputs the readers accept."""
    front_door, names = KINDS[kind]
    for text in _read(names):
        assert front_door(text) is not None


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_damaged_files_give_a_result_or_a_clean_error(kind: str) -> None:
    front_door, names = KINDS[kind]

    @SETTINGS
    @given(data=damaged(_read(names)))
    def run(data: str | bytes) -> None:
        with contextlib.suppress(AifabricError):  # the clean error: one line, exit 2 in the CLI
            front_door(data)

    run()
