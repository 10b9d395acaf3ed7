"""Topologies from every cloud and from VMs, and partial matrices (issue 9, item 4).

Real inputs: case 08 (GKE A4, 8 x B200, ``nvidia-smi topo -m``), case 17 (Azure NDv4/NDv5 topology files),
case 21 (AWS p5 and p4d topology files from aws-ofi-nccl, no NVLink elements), case 26 (an A30 box without a
PCIe switch: PHB/SYS everywhere on bare metal). Hand-made variants of them stand for the clouds without a
shared case (p5e, p6, ND GB200, GCP A3) and for the damage pasted matrices suffer (cut NIC rows, columns cut
at a fixed width, lines wrapped by a terminal) and for a VM's flattened PCIe tree.
"""

from __future__ import annotations

import re

import pytest

from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.node import NodeInspection, inspect_node_text
from aifabric.discovery.nvsmi import AFFINITY_CUT, TopoMatrix
from aifabric.errors import ParseError

from .conftest import CASE_08, CASE_17, read_case

CASE_20 = "case_20_azure_benchmarking_guide_single_node_busbw.txt"
CASE_21 = "case_21_aws_p4d_p5_nccl_topology_xml.txt"
CASE_24 = "case_24_h100_roce_2_vs_4_nodes_nvls.txt"
CASE_26 = "case_26_a30_pcie_two_nics_phb_no_pcie_switch.txt"
CASE_28 = "case_28_alltoall_busbw_expectations.txt"


def _matrix_lines(case: str) -> list[str]:
    """The matrix of a case: header, device rows (no legend)."""
    lines = read_case(case).split("\n")
    start = next(i for i, line in enumerate(lines) if re.match(r"^\s+GPU0\s", line))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].strip())
    return lines[start:end]


def _codes(node: NodeInspection) -> set[str]:
    return {w.code for w in node.warnings}


# -- partial and wrapped matrices ----------------------------------------------------------------------------


def test_nic_rows_cut_are_scored_on_the_gpu_rows() -> None:
    lines = _matrix_lines(CASE_08)
    whole = TopoMatrix.from_text("\n".join(lines))
    cut = TopoMatrix.from_text("\n".join(lines[:9]))  # header + 8 GPU rows
    assert cut.nics == whole.nics
    assert all(cut.path_type(g, n) == whole.path_type(g, n) for g in whole.gpus for n in whole.nics)
    assert (
        cut.missing and "rows NIC0, NIC1" in cut.missing[0] and "NIC-to-NIC paths unknown" in cut.missing[0]
    )
    (node,) = inspect_node_text("\n".join(lines[:9]), gpu="b200")
    assert node.pairing["GPU3"].nic == "NIC3" and node.pairing["GPU3"].gdr  # case 08: PIX NIC per GPU
    assert any(a.startswith("partial input: rows NIC0") for a in node.assumptions)


@pytest.mark.parametrize("width", [100, 120, 131])
def test_columns_cut_at_a_fixed_width_keep_the_nics_every_gpu_row_reaches(width: int) -> None:
    lines = [line.expandtabs()[:width] for line in _matrix_lines(CASE_08)[:9]]
    m = TopoMatrix.from_text("\n".join(lines))
    assert m.gpus == tuple(f"GPU{i}" for i in range(8))
    assert 0 < len(m.nics) < 8
    assert m.path_type("GPU0", "NIC0") == "PIX" and m.path_type("GPU0", "NIC2") in ("NODE", "PIX")
    assert any("cut" in note for note in m.missing)
    assert AFFINITY_CUT in m.missing
    (node,) = inspect_node_text("\n".join(lines), gpu="b200")
    assert "no_affinity" not in _codes(node) and "vm" not in _codes(node)  # a cut paste is not a VM


@pytest.mark.parametrize("width", [40, 60, 80])
def test_lines_wrapped_by_a_terminal_give_the_whole_matrix(width: int) -> None:
    lines = _matrix_lines(CASE_08)
    whole = TopoMatrix.from_text("\n".join(lines))
    wrapped = []
    for line in lines:
        text = line.expandtabs()
        wrapped += [text[i : i + width] for i in range(0, max(1, len(text)), width)]
    m = TopoMatrix.from_text("\n".join(wrapped))
    assert (m.gpus, m.nics, m.missing) == (whole.gpus, whole.nics, ())
    assert m.links == whole.links and m.numa_affinity == whole.numa_affinity


def test_gpu_rows_cut_are_named_not_read_silently() -> None:
    # Issue 9 (layout9 item 4): a matrix that stops after a GPU row is scored on the rows read, and says so
    lines = _matrix_lines(CASE_08)
    m = TopoMatrix.from_text("\n".join(lines[:6]))  # header + GPU0..GPU4
    assert m.gpus == tuple(f"GPU{i}" for i in range(5)) and m.cut_gpus == ("GPU5", "GPU6", "GPU7")
    assert m.missing[0].startswith("rows GPU5, GPU6, GPU7 cut (the matrix stops after GPU4)")


def test_one_row_cut_while_the_others_are_whole_is_an_error() -> None:
    lines = _matrix_lines(CASE_08)
    lines[3] = lines[3].expandtabs()[:90]  # GPU2's row only
    with pytest.raises(ParseError, match="row GPU2") as info:
        TopoMatrix.from_text("\n".join(lines))
    assert info.value.line == 4


# -- VMs -----------------------------------------------------------------------------------------------------


def _flat_vm(n: int = 8, numa: str = "N/A", cpus: str = "N/A") -> str:
    """A hypervisor's view of an 8-GPU, 8-NIC node: every device on its own virtual root port (PHB)."""
    devices = [f"GPU{i}" for i in range(n)] + [f"NIC{i}" for i in range(n)]
    lines = ["\t" + "\t".join(devices) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for d in devices:
        cells = [" X " if e == d else "PHB" for e in devices]
        tail = [cpus, numa, "N/A"] if d.startswith("GPU") else []
        lines.append("\t".join([d, *cells, *tail]))
    return "\n".join(lines) + "\n"


def test_flattened_pcie_without_numa_is_named_a_vm() -> None:
    (node,) = inspect_node_text(_flat_vm(), gpu="h100-sxm")
    (vm,) = [w for w in node.warnings if w.code == "vm"]
    assert "flattened PCIe tree" in vm.message and "no CPU or NUMA affinity" in vm.message
    assert "NCCL_TOPO_FILE" in vm.message and "nccl-tests #256" in vm.message
    assert "no_affinity" not in _codes(node)  # named once, as a VM


def test_eight_gpus_on_one_host_bridge_are_a_vm_even_with_numa() -> None:
    (node,) = inspect_node_text(_flat_vm(numa="0", cpus="0-95"), gpu="h100-sxm")
    assert "vm" in _codes(node)
    assert any("all 8 GPUs behind one host bridge" in w.message for w in node.warnings)


@pytest.mark.parametrize("case", [CASE_26, CASE_08])
def test_bare_metal_is_not_called_a_vm(case: str) -> None:
    # Case 26 (NVIDIA/nccl #1084): SYS between all GPUs and PHB/SYS to the NICs, but two NUMA nodes with their
    # CPU lists: a bare-metal box without a PCIe switch, not a VM.
    (node,) = inspect_node_text(read_case(case), source=case)
    assert "vm" not in _codes(node)


def test_two_gpu_workstation_on_one_host_bridge_is_not_a_vm() -> None:
    (node,) = inspect_node_text(_flat_vm(n=2, numa="0", cpus="0-47"), gpu="h100-pcie")
    assert "vm" not in _codes(node)


# -- clouds: the GPU model tells NVSwitch where the file lists no NVLink ------------------------------------


def test_aws_p5_and_p4d_files_are_nvswitch_nodes() -> None:
    # Case 21: p5.48xlarge (8 x H100, 32 x 100 Gb/s EFA) and p4d.24xlarge (8 x A100 40GB, 4 NICs, 2 GPUs per
    # PCIe switch); neither file lists NVLink (aws-ofi-nccl topology/*.xml).
    p5, p4d = inspect_node_text(read_case(CASE_21), source=CASE_21)
    assert (p5.accelerator, len(p5.layout.nics), p5.nic_speed_bytes_per_s) == ("h100-sxm", 32, 100e9 / 8)
    assert p5.spec.scale_up.kind == "nvswitch" and "pcie_p2p_cpu" not in _codes(p5)
    assert any("NVLink not in the file" in a for a in p5.assumptions)
    assert all(p5.pairing[g].gdr for g in p5.layout.gpus)  # every GPU has PIX/PXB NICs (GDR usable)
    assert p4d.accelerator == "a100-sxm-40gb" and p4d.spec.scale_up.kind == "nvswitch"
    assert any("'p4d.24xlarge'" in a for a in p4d.assumptions)  # named in the file's own comment
    # NIC speed not in the file: the p4d.24xlarge its comment names has 4 x 100 Gb/s EFA (AWS EC2 P4 page,
    # cloud_instances.yaml p4d), so 2 GPUs share each 12.5 GB/s NIC: at most 4 x 12.5 = 50 GB/s per node
    assert len(p4d.layout.nics) == 4 and not p4d.nic_speed_assumed
    assert p4d.nic_speed_bytes_per_s == 100e9 / 8 and p4d.nic_speed_instance == "p4d.24xlarge"
    p4d_fabric = {e.label: e for e in p4d.expected}["2 nodes, NCCL_ALGO=Ring (the fabric's figure)"]
    assert 0.9 * 50e9 <= p4d_fabric.busbw_bytes_per_s <= 50e9
    # one node: NCCL's ring over NVSwitch, not 40 GB/s of PCIe (the bug the issue reports)
    one = {e.label: e for e in p5.expected}["one node, NCCL_ALGO=Ring"]
    assert one.busbw_bytes_per_s > 300e9


def test_azure_ndv4_ndv5_files_are_their_gpus() -> None:
    # Case 17: NDv4 = ND96asr_v4 (8 x A100 40GB SXM), NDv5 = ND H100 v5 (8 x H100 SXM)
    ndv4, ndv5 = inspect_node_text(read_case(CASE_17), source=CASE_17)
    assert (ndv4.accelerator, ndv5.accelerator) == ("a100-sxm-40gb", "h100-sxm")
    assert ndv4.spec.scale_up.kind == ndv5.spec.scale_up.kind == "nvswitch"
    assert "vm" not in _codes(ndv4) | _codes(ndv5)  # Azure's file restores the layout (PIX GPU-NIC pairs)


def _p5_document() -> str:
    text = read_case(CASE_21)
    start = re.search(r"^<system", text, re.MULTILINE)
    assert start is not None
    return text[start.start() : text.index("</system>") + len("</system>")]


@pytest.mark.parametrize(
    ("comment", "gpu"),
    [
        ("Static topology for p5e.48xlarge", "h200-sxm"),
        ("Static topology for p5en.48xlarge", "h200-sxm"),
        ("Static topology for p6-b200.48xlarge", "b200"),
        ("Azure ND96isr_H200_v5", "h200-sxm"),
        ("GCP a3-megagpu-8g", "h100-sxm"),
        ("GCP a3-ultragpu-8g", "h200-sxm"),
    ],
)
def test_instance_type_in_a_comment_tells_the_gpu(comment: str, gpu: str) -> None:
    # Hand-made: the p5 file's PCIe tree under a comment naming another instance type (catalog/data/
    # cloud_instances.yaml: p5e/p5en H200, p6-b200 B200, ND H200 v5 H200, A3 Mega H100, A3 Ultra H200).
    # Blackwell has sm=100, so the p6 variant's GPUs say so.
    body = _p5_document()
    if gpu == "b200":
        body = body.replace('sm="90"', 'sm="100"')
    (node,) = inspect_node_text(f"<!-- {comment} -->\n{body}\n", source="variant")
    assert node.accelerator == gpu and node.spec.scale_up.kind == "nvswitch"


def test_gb200_tray_file_is_four_gpus_on_nvswitch() -> None:
    # Hand-made ND GB200 v6 variant (4 GPUs per VM, a compute tray of an NVL72): the first four GPU bridges
    # of the p5 tree, sm=100, under an "ND GB200 v6" comment.
    body = _p5_document().replace('sm="90"', 'sm="100"')
    blocks = re.split(r'(?=\n    <pci busid="[0-9a-f:.]+" class="0x060400")', body)
    head, bridges = blocks[0], blocks[1:]
    last = bridges[-1]
    tail = last[last.index("\n  </cpu>") :]
    text = (
        "<!-- Azure ND GB200 v6 -->\n"
        + head
        + "".join(bridges[:3])
        + bridges[3].split("\n  </cpu>")[0]
        + tail
    )
    (node,) = inspect_node_text(text, source="variant")
    assert len(node.layout.gpus) == 4
    assert node.accelerator == "gb200" and node.spec.scale_up.kind == "nvswitch"


def test_gcp_a3_topo_m_reads_as_an_h100_node() -> None:
    # Hand-made GCP A3 variant of case 08's matrix: the header names a3-highgpu-8g, the B200 mention removed.
    lines = _matrix_lines(CASE_08)
    (node,) = inspect_node_text("GCP a3-highgpu-8g\n" + "\n".join(lines), source="variant")
    assert node.accelerator == "h100-sxm" and node.spec.scale_up.kind == "nvswitch"


# -- every shared case that has no nccl-tests table: what the tools say -------------------------------------

#: (case, what compare says, source of the verdict)
NO_TABLE = [
    (CASE_17, "no nccl-tests result table", "case 17: topology files and thresholds only"),
    (
        CASE_20,
        "no nccl-tests result table",
        "case 20: busbw per size in markdown tables, not nccl-tests rows",
    ),
    (CASE_21, "no nccl-tests result table", "case 21: topology files only"),
    (CASE_24, "no nccl-tests result table", "case 24: figures in prose (NVIDIA/nccl #1221, #1031)"),
    (CASE_26, "no nccl-tests result table", "case 26: the table was cut after its first number"),
    (CASE_28, "no nccl-tests result table", "case 28: maintainer statements, no tables"),
]


@pytest.mark.parametrize(("case", "message", "source"), NO_TABLE)
def test_cases_without_a_table_are_refused_in_one_line(case: str, message: str, source: str) -> None:
    text = read_case(case)
    with pytest.raises(ParseError, match=message) as info:
        compare_nccl_tests(text, source=case)
    assert "\n" not in str(info.value), source
    assert info.value.line == text.count("\n") + (0 if text.endswith("\n") else 1)


# -- damaged matrices: a result or one ParseError inside the input, never another exception ------------------


def _damage_matrix(lines: list[str], kind: str, at: int, width: int) -> str:
    if kind == "cut_rows":
        return "\n".join(lines[: max(1, at)])
    if kind == "cut_columns":
        return "\n".join(line.expandtabs()[:width] for line in lines)
    if kind == "wrap":
        out = []
        for line in lines:
            text = line.expandtabs()
            out += [text[i : i + width] for i in range(0, max(1, len(text)), width)]
        return "\n".join(out)
    cut = lines[at % len(lines)].expandtabs()
    return "\n".join([*lines[: at % len(lines)], cut[:width], *lines[at % len(lines) + 1 :]])


def test_damaged_matrices_are_read_or_refused_in_one_line() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    texts = [_matrix_lines(CASE_08), _matrix_lines(CASE_26)]

    @settings(max_examples=400, deadline=None, derandomize=True)
    @given(
        st.sampled_from(range(len(texts))),
        st.sampled_from(["cut_rows", "cut_columns", "wrap", "cut_one"]),
        st.integers(0, 20),
        st.integers(1, 220),
    )
    def run(which: int, kind: str, at: int, width: int) -> None:
        text = _damage_matrix(texts[which], kind, at, width)
        try:
            nodes = inspect_node_text(text, source="fuzz", gpu="b200")
        except ParseError as err:
            assert "\n" not in str(err)
            assert err.line is None or 1 <= err.line <= text.count("\n") + 1
            return
        for node in nodes:
            assert set(node.layout.nics) <= {f"NIC{i}" for i in range(8)}
            # both matrices have 8 GPUs: never fewer read silently (the rows cut are named)
            gpus, cut = node.layout.gpus, node.layout.cut_gpus
            assert len(gpus) + len(cut) == 8 and len(gpus) >= 1
            assert not cut or any(m.startswith(f"rows {', '.join(cut)} cut") for m in node.layout.missing)

    run()


def test_inspect_cli_scores_a_cut_matrix_and_says_what_is_missing(tmp_path) -> None:  # noqa: ANN001
    import json

    from typer.testing import CliRunner

    from aifabric.cli.app import app

    path = tmp_path / "cut.txt"
    path.write_text("\n".join(_matrix_lines(CASE_08)[:9]) + "\n")  # the NIC rows cut
    runner = CliRunner()
    text = runner.invoke(app, ["inspect", str(path), "--gpu", "b200"])
    assert text.exit_code == 0, text.output
    assert "partial input: rows NIC0" in " ".join(text.output.split())
    data = json.loads(runner.invoke(app, ["inspect", str(path), "--gpu", "b200", "--json"]).stdout)
    assert data[0]["missing"] and data[0]["missing"][0].startswith("rows NIC0")
