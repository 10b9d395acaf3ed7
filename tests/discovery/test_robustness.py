"""Property tests: damaged real inputs give a result or a ParseError, never another exception.

Each example takes a golden case file (``data/``), damages it the way logs get damaged (cut at a random
point, a token deleted, a line deleted or doubled, garbage text or bytes inserted, emptied) and feeds it to
every parser. A ParseError must carry a line number inside the input when it names one.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.damage import token_spans
from tests.discovery.conftest import CASE_08, read_case
from tests.discovery.test_last_layouts import HEADER_LINE_08, QEMU_PORT, VM_XML

from aifabric.discovery.nccl_tests import parse_nccl_tests
from aifabric.discovery.nccl_xml import NcclTopology, extract_xml_documents, parse_nccl_topologies
from aifabric.discovery.nvsmi import TopoMatrix
from aifabric.errors import ParseError

CASES = (
    "case_01_dgx_h100_allreduce_single_node.txt",
    "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt",
    "case_08_b200_gke_a4_topo_and_2node_allgather.txt",
    "case_13_v100_pcie_4gpu_no_nvlink.txt",
    "case_17_azure_ndv4_ndv5_topology_xml.txt",
    "case_21_aws_p4d_p5_nccl_topology_xml.txt",
    "case_26_a30_pcie_two_nics_phb_no_pcie_switch.txt",
)
# Hand-written forms of test_last_layouts.py: an NCCL dump of a VM (flattened root, a QEMU port) and a topo -m
# matrix of case 08 cut after its GPU3 row.
SEEDS = {
    "vm_xml": VM_XML.replace("  </cpu>", QEMU_PORT + "  </cpu>"),
    "cut_matrix": "\n".join(read_case(CASE_08).split("\n")[: HEADER_LINE_08 + 4]),
}
PARSERS: dict[str, Callable[[str | bytes], object]] = {
    "nvsmi": lambda text: TopoMatrix.from_text(text, source="fuzz"),
    "nccl_xml": lambda text: parse_nccl_topologies(text, source="fuzz"),
    "nccl_xml_one": lambda text: NcclTopology.from_text(text, source="fuzz"),
    "nccl_tests": lambda text: parse_nccl_tests(text, source="fuzz"),
}
# Tokens that sit at the edges of what the parsers accept, swapped into the structured lines.
EDGE_TOKENS = (
    "X", "NV0", "NV99999", "SOC", "PSB", "N/A", "0-5,7", "9-1", "GPU8", "NIC0:", "CPU",
    "(1.0", "1.0)", "(413.7)", "nan", "-inf", "1e999", "-1", "-3", "99999999999999999999999", "none", "",
    'class="0x03"', 'count="-1"', "&amp;", "&#0;", "<!--", "/>", "</pci>", '<pci busid="q">',
    "hypercube_perf", "foo_perf", "Ranks 0-3 on h devices 0-3 [a]; ranks 4-7 on g, same",
)  # fmt: skip
SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _check(parser: str, damaged: str | bytes) -> None:
    try:
        PARSERS[parser](damaged)
    except ParseError as err:
        if err.line is not None:
            n_lines = (damaged.count(b"\n") if isinstance(damaged, bytes) else damaged.count("\n")) + 1
            assert 1 <= err.line <= n_lines, err


@st.composite
def damaged_case(draw: st.DrawFn, texts: dict[str, str]) -> str | bytes:
    texts = {**texts, **SEEDS}
    text = texts[draw(st.sampled_from((*CASES, *SEEDS)))]
    kinds = ["truncate", "drop_token", "swap_token", "drop_line", "double_line", "garbage", "bytes"]
    kind = draw(st.sampled_from(kinds))
    if kind == "truncate":
        return text[: draw(st.integers(0, len(text)))]
    if kind == "drop_token":
        tokens = list(token_spans(text))
        start, end = tokens[draw(st.integers(0, len(tokens) - 1))]
        return text[:start] + text[end:]
    lines = text.split("\n")
    if kind == "swap_token":  # inside a data line: a matrix row, a result row, an XML element, a header
        data = [i for i, line in enumerate(lines) if line.strip()[:1] in ("<", "#", "G", "N", *"0123456789")]
        at = draw(st.sampled_from(data))
        tokens = lines[at].split()
        if tokens:
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(st.sampled_from(EDGE_TOKENS))
        lines[at] = "\t".join(tokens)
        return "\n".join(lines)
    at = draw(st.integers(0, len(lines) - 1))
    if kind == "drop_line":
        return "\n".join(lines[:at] + lines[at + 1 :])
    if kind == "double_line":
        return "\n".join(lines[: at + 1] + lines[at:])
    if kind == "garbage":
        position = draw(st.integers(0, len(text)))
        return text[:position] + draw(st.text(min_size=1, max_size=12)) + text[position:]
    raw = text.encode()
    position = draw(st.integers(0, len(raw)))
    return raw[:position] + draw(st.binary(min_size=1, max_size=8)) + raw[position:]


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_empty_inputs(parser: str) -> None:
    for empty in ("", b"", "\n\n", "   "):
        with pytest.raises(ParseError):
            PARSERS[parser](empty)


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_damaged_inputs(parser: str, case_text: dict[str, str]) -> None:
    @SETTINGS
    @given(damaged=damaged_case(case_text))
    def run(damaged: str | bytes) -> None:
        _check(parser, damaged)

    run()


@SETTINGS
@given(st.text(max_size=200))
def test_arbitrary_text(text: str) -> None:
    for parser in PARSERS:
        _check(parser, text)


def test_extract_is_stable_on_damaged_xml(case_text: dict[str, str]) -> None:
    @SETTINGS
    @given(cut=st.integers(0, len(case_text["case_17_azure_ndv4_ndv5_topology_xml.txt"])))
    def run(cut: int) -> None:
        try:
            documents = extract_xml_documents(case_text["case_17_azure_ndv4_ndv5_topology_xml.txt"][:cut])
        except ParseError:
            return
        assert all(d.lstrip().startswith("<system") for d in documents)

    run()


# -- every field of one real line x every edge token (deterministic) -----------------------------------------


def _swap_every_field(text: str, line_start: str) -> list[str]:
    """Variants of ``text`` with each token of the first line starting with ``line_start`` replaced."""
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(line_start))
    variants = []
    tokens = lines[at].split()
    for position in range(len(tokens)):
        for edge in EDGE_TOKENS:
            swapped = tokens[:position] + [edge] + tokens[position + 1 :]
            variants.append("\n".join([*lines[:at], "  ".join(swapped), *lines[at + 1 :]]))
    return variants


@pytest.mark.parametrize(
    ("parser", "case", "line_start"),
    [
        ("nccl_tests", "case_01_dgx_h100_allreduce_single_node.txt", "4294967296"),
        ("nccl_tests", "case_01_dgx_h100_allreduce_single_node.txt", "#       size"),
        ("nccl_tests", "case_13_v100_pcie_4gpu_no_nvlink.txt", "134217728"),
        ("nccl_tests", "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt", "#  Ranks"),
        ("nvsmi", "case_08_b200_gke_a4_topo_and_2node_allgather.txt", "GPU4"),
        ("nvsmi", "case_08_b200_gke_a4_topo_and_2node_allgather.txt", "GPU0    GPU1"),
        ("nccl_xml", "case_17_azure_ndv4_ndv5_topology_xml.txt", '<cpu numaid="1"'),
        ("nccl_xml", "case_17_azure_ndv4_ndv5_topology_xml.txt", '<pci busid="ffff:ff:05.0"'),
    ],
)
def test_edge_tokens_in_every_field(
    case_text: dict[str, str], parser: str, case: str, line_start: str
) -> None:
    text = case_text[case]
    text = text[: text.find("=== T2")] if "=== T2" in text else text  # case 03: T1 holds the rank line
    for variant in _swap_every_field(text, line_start):
        _check(parser, variant)
