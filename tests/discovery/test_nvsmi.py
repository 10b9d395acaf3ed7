"""Golden and error tests of :mod:`aifabric.discovery.nvsmi`.

The golden matrix is case 08: ``nvidia-smi topo -m`` of a GKE A4 node (8 x B200, 8 NICs), from
kubernetes-sigs/dranet ``site/content/docs/user/gke-rdma.md`` (see ``data/case_08_*.txt``).
"""

from __future__ import annotations

import pytest

from aifabric.discovery.nvsmi import PATH_ORDER, TopoMatrix, normalize_path_code, parse_cpulist
from aifabric.errors import ParseError

CASE_08 = "case_08_b200_gke_a4_topo_and_2node_allgather.txt"
HEADER_LINE_08 = 34  # 1-based line of the "GPU0 GPU1 ..." header in the case file


@pytest.fixture(scope="module")
def b200(case_text: dict[str, str]) -> TopoMatrix:
    return TopoMatrix.from_text(case_text[CASE_08], source=CASE_08)


def test_b200_devices_and_legend(b200: TopoMatrix) -> None:
    assert b200.gpus == tuple(f"GPU{i}" for i in range(8))
    assert b200.nics == tuple(f"NIC{i}" for i in range(8))
    assert b200.nic_names == {f"NIC{i}": f"mlx5_{i}" for i in range(8)}
    assert b200.nic_name("NIC3") == "mlx5_3"
    assert b200.line == HEADER_LINE_08
    assert b200.source == CASE_08


def test_b200_all_28_gpu_pairs_are_nv18(b200: TopoMatrix) -> None:
    pairs = b200.nvlink_pairs()
    assert len(pairs) == 28
    assert {n for _, _, n in pairs} == {18}
    assert pairs[0] == ("GPU0", "GPU1", 18)
    assert all(b200.link(a, b) == b200.link(b, a) == "NV18" for a, b, _ in pairs)


def test_b200_nearest_nics(b200: TopoMatrix) -> None:
    # GPU pairs (0,1), (2,3), ... share a PCIe switch with two NICs (case 08 commentary).
    for gpu in ("GPU0", "GPU1"):
        ranked = b200.nearest_nics(gpu)
        assert ranked[:2] == [("NIC0", "PIX"), ("NIC1", "PIX")]
        assert [code for _, code in ranked] == ["PIX", "PIX", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"]
    assert b200.nearest_nics("GPU7")[:2] == [("NIC6", "PIX"), ("NIC7", "PIX")]
    assert b200.link("GPU0", "NIC4") == "SYS"
    assert b200.link("NIC4", "GPU0") == "SYS"
    assert b200.link("GPU0", "GPU0") == "X"


def test_b200_numa_and_affinity(b200: TopoMatrix) -> None:
    assert b200.numa_nodes() == {0, 1}
    assert all(b200.numa_affinity[f"GPU{i}"] == frozenset({0}) for i in range(4))
    assert all(b200.numa_affinity[f"GPU{i}"] == frozenset({1}) for i in range(4, 8))
    assert b200.cpu_affinity["GPU0"] == frozenset(range(0, 56)) | frozenset(range(112, 168))
    assert b200.cpu_affinity["GPU7"] == frozenset(range(56, 112)) | frozenset(range(168, 224))
    assert set(b200.gpu_numa_id.values()) == {None}  # "N/A" on this x86 node


def test_matrix_is_found_without_surrounding_text(case_text: dict[str, str]) -> None:
    lines = case_text[CASE_08].split("\n")
    bare = "\n".join(lines[HEADER_LINE_08 - 1 : HEADER_LINE_08 + 16])
    matrix = TopoMatrix.from_text(bare)
    assert matrix.nvlink_pairs() == TopoMatrix.from_text(case_text[CASE_08]).nvlink_pairs()
    assert matrix.nic_names == {}  # no legend in the bare matrix


def test_tabs_ansi_and_single_gpu() -> None:
    # Tesla P4 in a VM, tab-separated as the driver prints it (Project-HAMi/HAMi pull request 99);
    # the underline escape is what the driver adds on a terminal.
    text = "\x1b[4m\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\nGPU0\t X \t0-7\t\tN/A\t\tN/A\n"
    matrix = TopoMatrix.from_text(text.encode())
    assert matrix.gpus == ("GPU0",) and matrix.nics == ()
    assert matrix.cpu_affinity["GPU0"] == frozenset(range(8))
    assert matrix.numa_affinity["GPU0"] is None
    assert matrix.numa_nodes() == set()
    assert matrix.nvlink_pairs() == []


def test_older_driver_codes_and_columns() -> None:
    # Drivers before the NIC legend named HCAs directly, printed SOC for SYS and had only CPU Affinity.
    text = (
        "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"
        "GPU0\t X \tSOC\tPHB\t0-9\n"
        "GPU1\tSOC\t X \tSOC\t10-19\n"
        "mlx5_0\tPHB\tSOC\t X \t\n"
    )
    matrix = TopoMatrix.from_text(text)
    assert matrix.nics == ("mlx5_0",)
    assert matrix.link("GPU0", "GPU1") == "SOC"
    assert matrix.path_type("GPU0", "GPU1") == "SYS"
    assert matrix.nearest_nics("GPU1") == [("mlx5_0", "SOC")]
    assert matrix.numa_affinity == {"GPU0": None, "GPU1": None}
    assert matrix.gpu_numa_id == {"GPU0": None, "GPU1": None}


def test_nearest_nics_order_follows_the_legend() -> None:
    codes = ["SYS", "NODE", "PHB", "PXB", "PIX"]
    nics = [f"NIC{i}" for i in range(5)]
    header = "\tGPU0\t" + "\t".join(nics)
    gpu_row = "GPU0\t X \t" + "\t".join(codes)
    nic_rows = []
    for i, nic in enumerate(nics):
        cells = [codes[i]] + ["X" if j == i else "SYS" for j in range(5)]
        nic_rows.append(nic + "\t" + "\t".join(cells))
    matrix = TopoMatrix.from_text("\n".join([header, gpu_row, *nic_rows]))
    assert [code for _, code in matrix.nearest_nics("GPU0")] == list(PATH_ORDER)
    with pytest.raises(KeyError):
        matrix.nearest_nics("NIC0")


def test_a100_nv12_pairs() -> None:
    text = (
        "        GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NV12    NV12    0-31    0\n"
        "GPU1    NV12     X      NV4     0-31    0\n"
        "GPU2    NV12    NV4      X      32-63   1\n"
    )
    matrix = TopoMatrix.from_text(text)
    assert matrix.nvlink_pairs() == [("GPU0", "GPU1", 12), ("GPU0", "GPU2", 12), ("GPU1", "GPU2", 4)]
    assert matrix.numa_nodes() == {0, 1}


def test_helpers() -> None:
    assert normalize_path_code("SOC") == "SYS"
    assert normalize_path_code("PIX") == "PIX"
    assert normalize_path_code("NV8") == "NV8"
    assert parse_cpulist("N/A") is None
    assert parse_cpulist("3,1-2") == frozenset({1, 2, 3})
    for bad in ("", "1-", "5-2", "0-99999999", "a"):
        with pytest.raises(ValueError):
            parse_cpulist(bad)


# -- errors --------------------------------------------------------------------------------------------------


def _case_lines(case_text: dict[str, str]) -> list[str]:
    return case_text[CASE_08].split("\n")


def test_missing_cell_names_the_line(case_text: dict[str, str]) -> None:
    lines = _case_lines(case_text)
    row = HEADER_LINE_08 + 3  # GPU2's row
    tokens = lines[row - 1].split()
    del tokens[5]  # one NV18 cell less
    lines[row - 1] = "    ".join(tokens)
    with pytest.raises(ParseError) as info:
        TopoMatrix.from_text("\n".join(lines), source="cut")
    assert info.value.line == row
    assert info.value.source == "cut"


def test_missing_column_in_header(case_text: dict[str, str]) -> None:
    lines = _case_lines(case_text)
    lines[HEADER_LINE_08 - 1] = lines[HEADER_LINE_08 - 1].replace("NIC7", "")
    with pytest.raises(ParseError) as info:
        TopoMatrix.from_text("\n".join(lines))
    assert info.value.line is not None and info.value.line > HEADER_LINE_08


def test_matrix_cut_after_some_nic_rows_is_read_and_says_so(case_text: dict[str, str]) -> None:
    """Issue 9 item 4: a partial matrix is scored on what is there (the GPU rows give every GPU-NIC path)."""
    lines = _case_lines(case_text)
    text = "\n".join(lines[: HEADER_LINE_08 + 10])  # header, 8 GPU rows, NIC0, NIC1
    m = TopoMatrix.from_text(text)
    assert m.nics == tuple(f"NIC{i}" for i in range(8))
    assert m.path_type("NIC5", "GPU5") == "PIX" and m.path_type("GPU5", "NIC5") == "PIX"  # case 08 matrix
    assert m.missing == (
        "rows NIC2, NIC3, NIC4, NIC5, NIC6, NIC7 cut: GPU-NIC paths read from the GPU rows, NIC-to-NIC "
        "paths unknown",
    )
    assert m.numa_affinity["GPU4"] == frozenset({1})  # the GPU rows kept their affinity columns


def test_truncated_row_names_the_line(case_text: dict[str, str]) -> None:
    lines = _case_lines(case_text)
    row = HEADER_LINE_08 + 1
    lines[row - 1] = lines[row - 1][:60]
    with pytest.raises(ParseError) as info:
        TopoMatrix.from_text("\n".join(lines))
    assert info.value.line == row


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no nvidia-smi"),
        ("Legend:\n  X = Self\n", "no nvidia-smi"),
        ("\tGPU0\tGPU1\nGPU0\t X \tFOO\nGPU1\tFOO\t X \n", "unknown path code"),
        ("\tGPU0\tGPU1\nGPU0\tNV4\tNV4\nGPU1\tNV4\t X \n", "diagonal"),
        ("\tGPU0\tGPU1\nGPU1\t X \tNV4\nGPU0\tNV4\t X \n", "expected the row of GPU0"),
        ("\tGPU0\tCPU Affinity\nGPU0\t X \t0-x\n", "cpulist"),
        ("\tGPU0\tGPU0\nGPU0\t X \t X\n", "twice"),
        ("\tGPU0\tCPU Affinity\tColour\nGPU0\t X \t0\tred\n", "unknown column"),
    ],
)
def test_malformed_inputs(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        TopoMatrix.from_text(text)


def test_bytes_that_are_not_utf8() -> None:
    with pytest.raises(ParseError) as info:
        TopoMatrix.from_text(b"\tGPU0\nGPU0\t X\n\xff\xfe")
    assert info.value.line == 3


def test_header_word_that_begins_a_column_is_that_column_when_the_rows_hold_it() -> None:
    """A header ending ``CPU Affinity  NUMA`` (a DGX H100 guide, ``fixtures/public7``): each row holds
    one value under ``NUMA``, so the column is NUMA affinity; where the rows hold one value more than the
    header names (the copy stopped in ``NUMA Affinity   GPU NUMA ID``), the affinity stays unknown."""
    short = "\tGPU0\tGPU1\tCPU Affinity\tNUMA\nGPU0\t X \tNV18\t0-51\t0\nGPU1\tNV18\t X \t52-103\t1\n"
    m = TopoMatrix.from_text(short)
    assert m.numa_affinity == {"GPU0": frozenset({0}), "GPU1": frozenset({1})}
    assert m.missing == ()
    cut = "\tGPU0\tGPU1\tCPU Affinity\tNUMA\nGPU0\t X \tNV18\t0-51\t0\tN/A\nGPU1\tNV18\t X \t52-103\t1\tN/A\n"
    assert TopoMatrix.from_text(cut).numa_affinity == {"GPU0": None, "GPU1": None}
