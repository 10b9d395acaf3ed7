"""Inspect-level tests of :mod:`aifabric.discovery.node`: GDR verdicts, warnings, the node ClusterSpec.

Golden inputs: case 08 (``nvidia-smi topo -m`` of a GKE A4 node, 8 x B200 and 8 NICs; kubernetes-sigs/dranet)
and case 17 (Azure's hand-written NCCL topology files for NDv4 and NDv5; Azure/azhpc-images). The matrices
that trigger warnings are derived from case 08's by the helpers below (a NIC removed, a path changed); each
test says how.
"""

from __future__ import annotations

import pytest

from aifabric.discovery.node import NodeInspection, detect_format, inspect_node_text
from aifabric.discovery.node_paths import GDR_PATHS, NO_GDR_FACTOR, gdr_verdict
from aifabric.discovery.nvsmi import TopoMatrix
from aifabric.errors import ParseError

CASE_01 = "case_01_dgx_h100_allreduce_single_node.txt"
CASE_08 = "case_08_b200_gke_a4_topo_and_2node_allgather.txt"
CASE_17 = "case_17_azure_ndv4_ndv5_topology_xml.txt"


def _render(m: TopoMatrix, *, nics: tuple[str, ...] | None = None, change: dict | None = None) -> str:
    """Print ``m`` back as ``nvidia-smi topo -m`` text, keeping ``nics`` and overriding cells in
    ``change``."""
    nics = m.nics if nics is None else nics
    change = change or {}
    devices = m.gpus + nics

    def cell(a: str, b: str) -> str:
        return change.get((a, b)) or change.get((b, a)) or m.link(a, b)

    lines = ["\t" + "\t".join(devices) + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for d in devices:
        row = [d, *(cell(d, e) for e in devices)]
        if d in m.gpus:
            cpus = sorted(m.cpu_affinity[d] or [])
            numa = sorted(m.numa_affinity[d] or [])
            row += [f"{cpus[0]}-{cpus[-1]}" if cpus else "N/A", ",".join(map(str, numa)) or "N/A", "N/A"]
        lines.append("\t".join(row))
    lines += ["", "NIC Legend:", ""] + [f"  {n}: {m.nic_name(n)}" for n in nics]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def b200_text(case_text: dict[str, str]) -> str:
    return case_text[CASE_08]


@pytest.fixture(scope="module")
def b200(b200_text: str) -> NodeInspection:
    (node,) = inspect_node_text(b200_text, source=CASE_08, gpu="b200")
    return node


@pytest.fixture(scope="module")
def b200_matrix(b200_text: str) -> TopoMatrix:
    return TopoMatrix.from_text(b200_text, source=CASE_08)


# -- case 08, as printed -------------------------------------------------------------------------------------


def test_b200_nvlink_all_28_pairs_nv18(b200: NodeInspection) -> None:
    assert b200.layout.kind == "nvidia-smi"
    (group,) = b200.nvlink_groups
    assert group.gpus == tuple(f"GPU{i}" for i in range(8))
    assert group.full_mesh and group.link_counts == (18,)
    assert len(b200.nvlink_pairs) == 28 and {k for _, _, k in b200.nvlink_pairs} == {18}


def test_b200_nearest_nics_and_gdr_verdicts(b200: NodeInspection) -> None:
    for gpu in ("GPU0", "GPU1"):
        assert [(p.nic, p.path) for p in b200.nearest[gpu]] == [("NIC0", "PIX"), ("NIC1", "PIX")]
        assert all(p.gdr for p in b200.nearest[gpu])
    assert b200.pairing["GPU0"].nic == "NIC0" and b200.pairing["GPU1"].nic == "NIC1"
    assert {g: p.nic for g, p in b200.pairing.items()} == {f"GPU{i}": f"NIC{i}" for i in range(8)}
    far = b200.path("GPU0", "NIC4")
    assert far.path == "SYS" and not far.gdr and "inter-socket" in far.reason
    node_path = b200.path("GPU0", "NIC2")
    assert node_path.path == "NODE" and not node_path.gdr
    assert b200.path("GPU0", "NIC0").nic_name == "mlx5_0"
    # every pair has a verdict: PIX good, NODE/SYS degraded
    assert len(b200.paths) == 64
    assert all(p.gdr == (p.path in GDR_PATHS) for p in b200.paths)
    assert sum(p.gdr for p in b200.paths) == 16


def test_b200_numa_layout(b200: NodeInspection) -> None:
    assert [(n.node, n.gpus, n.nics) for n in b200.numa] == [
        (0, ("GPU0", "GPU1", "GPU2", "GPU3"), ("NIC0", "NIC1", "NIC2", "NIC3")),
        (1, ("GPU4", "GPU5", "GPU6", "GPU7"), ("NIC4", "NIC5", "NIC6", "NIC7")),
    ]


def test_b200_node_cluster_spec_and_expected_busbw(b200: NodeInspection) -> None:
    spec = b200.spec
    assert spec.accelerator == "b200" and spec.gpus_per_node == 8 and spec.n_nodes == 1
    assert spec.scale_up.kind == "nvswitch"
    assert spec.scale_out.nic == "connectx-7" and spec.scale_out.nic_speed_bytes_per_s == pytest.approx(50e9)
    assert b200.network_factor == 1.0
    assert b200.warnings == ()  # a rail-per-GPU node with PIX NICs: nothing to warn about
    expected = {e.label: e for e in b200.expected}
    one = expected["one node, NCCL default"]
    ring = expected["one node, NCCL_ALGO=Ring"]
    fabric = expected["2 nodes, NCCL_ALGO=Ring (the fabric's figure)"]
    assert one.algorithm == "nvls" and ring.algorithm == "ring"
    # NCCL's B200 ring figure is 18 x 40.1 = 721.8 GB/s (reference sec. 3.1); across nodes 8 x 400G NICs.
    assert ring.busbw_bytes_per_s == pytest.approx(721.8e9, rel=0.02)
    assert fabric.busbw_bytes_per_s == pytest.approx(8 * 50e9 * 0.983, rel=0.02)
    # the GPU is given; the NIC speed is not in the matrix, but the text names the instance (case 08 line 8,
    # "GCP a4-highgpu-8g"): 8 x 400 Gb/s CX-7 RoCE per A4 VM (catalog/data/cloud_instances.yaml gcp-a4)
    assert not any("GPU model" in a for a in b200.assumptions)
    assert not b200.nic_speed_assumed and b200.nic_speed_instance == "a4-highgpu-8g"
    assert any("400 Gb/s per NIC from 'a4-highgpu-8g'" in a for a in b200.assumptions)


def test_b200_without_gpu_option_says_what_it_assumed(b200_text: str, b200_matrix: TopoMatrix) -> None:
    # The matrix alone names no GPU: NV18 is read as an H100-class board, and said so.
    (node,) = inspect_node_text(_render(b200_matrix), source=CASE_08)
    assert node.accelerator == "h100-sxm" and node.accelerator_source == "the layout"
    assert any("NV18" in a and "--gpu" in a for a in node.assumptions)


def test_gpu_named_anywhere_in_the_file_is_used(b200_text: str) -> None:
    # Case 08's nccl-tests rank lines (and its header) name "NVIDIA B200": the node is a B200, from the file.
    (node,) = inspect_node_text(b200_text, source=CASE_08)
    assert node.accelerator == "b200" and node.spec.accelerator == "b200"
    assert node.accelerator_source == "the file"
    (note,) = [a for a in node.assumptions if "GPU model" in a]
    assert "from the file" in note and "'B200'" in note and "line 8" in note
    # NCCL's B200 ring figure, 18 x 40.1 GB/s, not the H100 one
    ring = {e.label: e for e in node.expected}["one node, NCCL_ALGO=Ring"]
    assert ring.busbw_bytes_per_s == pytest.approx(721.8e9, rel=0.02)
    # --gpu still wins
    (forced,) = inspect_node_text(b200_text, source=CASE_08, gpu="h100-sxm")
    assert forced.accelerator == "h100-sxm" and forced.accelerator_source == "--gpu"
    # a name that contradicts the layout (A100 has 12 NVLinks, the matrix shows NV18) does not override it
    # (the header's instance type, a4-highgpu-8g, is a B200 too: removed with it)
    odd_text = b200_text.replace("B200", "A100").replace("a4-highgpu-8g", "a4")
    (odd,) = inspect_node_text(odd_text, source=CASE_08)
    assert odd.accelerator == "h100-sxm" and any("does not fit the layout" in a for a in odd.assumptions)


# -- warnings, on matrices derived from case 08 --------------------------------------------------------------


def test_nics_behind_the_cpu_warn_and_degrade_the_network(
    b200_matrix: TopoMatrix, b200: NodeInspection
) -> None:
    # Case 08 with every PIX GPU-NIC cell turned into NODE: the NICs hang off the root complex.
    change = {
        (g, n): "NODE" for g in b200_matrix.gpus for n in b200_matrix.nics if b200_matrix.link(g, n) == "PIX"
    }
    (node,) = inspect_node_text(_render(b200_matrix, change=change), gpu="b200")
    codes = [w.code for w in node.warnings]
    assert codes == ["nic_behind_cpu"]
    assert "GPU0" in node.warnings[0].message and "NCCL_NET_GDR_LEVEL" in node.warnings[0].message
    assert not any(p.gdr for p in node.paths)
    assert node.network_factor == pytest.approx(NO_GDR_FACTOR)
    fabric = {e.label: e for e in node.expected}["2 nodes, NCCL_ALGO=Ring (the fabric's figure)"]
    good = {e.label: e for e in b200.expected}["2 nodes, NCCL_ALGO=Ring (the fabric's figure)"]
    assert fabric.busbw_bytes_per_s == pytest.approx(good.busbw_bytes_per_s * NO_GDR_FACTOR, rel=0.01)


def test_a_nic_shared_by_two_gpus_warns_and_halves_the_network(
    b200_matrix: TopoMatrix, b200: NodeInspection
) -> None:
    # Case 08 with NIC1, NIC3, NIC5, NIC7 removed: 4 NICs for 8 GPUs, each still PIX to its GPU pair.
    (node,) = inspect_node_text(_render(b200_matrix, nics=("NIC0", "NIC2", "NIC4", "NIC6")), gpu="b200")
    shared = [w for w in node.warnings if w.code == "shared_nic"]
    assert len(shared) == 4 and all(w.code != "nic_behind_cpu" for w in node.warnings)
    assert "GPU0, GPU1" in shared[0].message and "200 Gb/s each" in shared[0].message
    assert node.pairing["GPU0"].nic == node.pairing["GPU1"].nic == "NIC0"
    # the sharing is in the spec (4 NICs of 2 GPUs each), so the layout costs nothing more on top of it
    assert node.spec.scale_out is not None and node.spec.scale_out.gpus_per_nic == 2
    assert node.spec.nics_per_node == 4 and node.network_factor == pytest.approx(1.0)
    fabric = {e.label: e for e in node.expected}["2 nodes, NCCL_ALGO=Ring (the fabric's figure)"]
    good = {e.label: e for e in b200.expected}["2 nodes, NCCL_ALGO=Ring (the fabric's figure)"]
    assert fabric.busbw_bytes_per_s == pytest.approx(good.busbw_bytes_per_s / 2, rel=0.01)


def test_a_gpu_paired_with_a_far_nic_warns(b200_matrix: TopoMatrix) -> None:
    # Case 08 with NIC1 moved to the other socket (SYS to GPU0-3): GPU0 and GPU1 compete for NIC0, one NIC
    # each is left, and one of them gets a NODE NIC instead of a PIX one.
    change = {
        (g, "NIC1"): ("SYS" if g in ("GPU0", "GPU1", "GPU2", "GPU3") else "NODE") for g in b200_matrix.gpus
    }
    (node,) = inspect_node_text(_render(b200_matrix, change=change), gpu="b200")
    far = [w for w in node.warnings if w.code == "far_nic"]
    assert far, node.warnings
    loser = next(g for g in ("GPU0", "GPU1") if node.pairing[g].nic != "NIC0")
    assert loser in far[0].message and not node.pairing[loser].gdr


def test_no_nvlink_is_modelled_as_pcie_through_the_cpu(b200_matrix: TopoMatrix) -> None:
    # Case 08 with every NV18 replaced by PHB: a PCIe-only node whose peer traffic crosses the CPU.
    change = {(a, b): "PHB" for a in b200_matrix.gpus for b in b200_matrix.gpus if a != b}
    (node,) = inspect_node_text(_render(b200_matrix, change=change), gpu="h100-sxm")
    assert node.nvlink_groups == ()
    assert node.spec.scale_up.kind == "pcie" and node.spec.scale_up.p2p_through_cpu
    assert any(w.code == "pcie_p2p_cpu" for w in node.warnings)
    one = node.expected[0]
    # 8 GPUs through an Intel CPU (path PHB) are beyond NCCL's default P2P level PXB (paths.cc
    # ncclTopoCheckP2p, v2.9.6-1 on): SHM, Gen5 x16 64 GB/s x 0.6 (P2P through the CPU, NCCL_P2P_LEVEL=SYS:
    # 48 / 1.2 = 40)
    assert one.busbw_bytes_per_s == pytest.approx(64e9 * 0.6, rel=0.02)


def test_gdr_verdict_codes() -> None:
    assert [gdr_verdict(c)[0] for c in ("PIX", "PXB", "PHB", "NODE", "SYS", "SOC")] == [
        True, True, False, False, False, False,
    ]  # fmt: skip


# -- NCCL topology XML (case 17) -----------------------------------------------------------------------------


def test_azure_xml_ndv4_and_ndv5(case_text: dict[str, str]) -> None:
    ndv4, ndv5 = inspect_node_text(case_text[CASE_17], source=CASE_17)
    assert ndv4.layout.kind == ndv5.layout.kind == "nccl-xml"
    # NDv4: 4 NUMA nodes, one Gen4 switch each with 2 GPUs and 2 IB NICs (PIX to both)
    assert [len(n.gpus) for n in ndv4.numa] == [2, 2, 2, 2] and [n.node for n in ndv4.numa] == [0, 1, 2, 3]
    assert [p.nic for p in ndv4.nearest["GPU0"]] == ["NIC0", "NIC1"] and ndv4.path(
        "GPU0", "NIC2"
    ).path == "SYS"
    assert ndv4.spec.cpu_vendor == "amd" and ndv4.spec.scale_out.fabric == "infiniband"
    # NDv5: 2 NUMA nodes, one PIX NIC per GPU
    assert [len(n.gpus) for n in ndv5.numa] == [4, 4]
    assert all(len(ndv5.nearest[g]) == 1 and ndv5.nearest[g][0].path == "PIX" for g in ndv5.layout.gpus)
    assert ndv5.path("GPU0", "NIC1").path == "PHB" and not ndv5.path("GPU0", "NIC1").gdr
    assert ndv5.warnings == ()
    assert any("hand-written" in a for a in ndv5.assumptions)


def test_azure_ndv4_expected_busbw_matches_azure_and_nvidia_figures(case_text: dict[str, str]) -> None:
    # NDv4 = 8 x A100 + 8 x HDR 200G. Azure's health check fails a node below 230 GB/s in one node (case 17);
    # the NCCL maintainer quotes 192 GB/s for DGX A100 with 8 x HDR across nodes (NVIDIA/nccl #812).
    ndv4, _ = inspect_node_text(case_text[CASE_17], gpu="a100-sxm-80gb", nic_speed="200 Gb/s")
    expected = {e.label: e for e in ndv4.expected}
    assert 230e9 <= expected["one node, NCCL default"].busbw_bytes_per_s <= 250e9
    assert expected["2 nodes, NCCL_ALGO=Ring (the fabric's figure)"].busbw_bytes_per_s == pytest.approx(
        192e9, rel=0.05
    )


# -- detection and errors ------------------------------------------------------------------------------------


def test_detect_format(case_text: dict[str, str]) -> None:
    assert detect_format(case_text[CASE_08]) == "nvidia-smi"
    assert detect_format(case_text[CASE_17]) == "nccl-xml"
    assert detect_format("# nThread 1 nGpus 8\n") == "unknown"


def test_an_nccl_tests_log_is_not_a_topology(case_text: dict[str, str]) -> None:
    text = case_text[CASE_01]
    with pytest.raises(ParseError, match="nccl-tests compare") as info:
        inspect_node_text(text, source="log")
    assert info.value.line == text.count("\n") + (0 if text.endswith("\n") else 1)


def test_empty_and_bad_options() -> None:
    with pytest.raises(ParseError, match="empty") as info:
        inspect_node_text(b"")
    assert info.value.line == 1
    with pytest.raises(ValueError, match="--format"):
        inspect_node_text("GPU0\n", fmt="csv")


# -- GPU identity, CPU vendor and PCIe caps read from the file (new-user trial) ------------------------------


def test_azure_xml_gpu_cpu_and_pcie_from_the_file(case_text: dict[str, str]) -> None:
    # Case 17 names A100 (NDv4) and H100/H200 (NDv5) in its text; the XMLs say AMD (NDv4) / Intel (NDv5) CPUs
    # and PCIe 16 GT/s x16 (NDv4) / 32 GT/s x16 (NDv5) links. NCCL: Gen4 x16 = 16 x 120 / 80 = 24 GB/s, Gen5
    # x16 = 48.
    # NDv4 = ND96asr_v4, 8 x A100 40GB SXM (case 17 header; catalog/data/cloud_instances.yaml)
    ndv4, ndv5 = inspect_node_text(case_text[CASE_17], source=CASE_17)
    assert ndv4.accelerator == "a100-sxm-40gb" and ndv4.accelerator_source == "the file"
    assert ndv5.accelerator == "h100-sxm" and ndv5.accelerator_source == "the file"
    assert any("from the file" in a and "'ndv4'" in a for a in ndv4.assumptions)
    assert ndv4.spec.cpu_vendor == "amd" and ndv5.spec.cpu_vendor == "intel"
    assert ndv4.layout.gpu_nic_pcie[("GPU0", "NIC0")] == (pytest.approx(24e9), "Gen4 x16")
    assert ndv5.layout.gpu_nic_pcie[("GPU0", "NIC0")] == (pytest.approx(48e9), "Gen5 x16")
    # a 400 Gb/s NIC on NDv4's Gen4 x16 path: it carries 28.8 GB/s a rail (32 GB/s x 128/130 x 256 / (256 +
    # 24), catalogue pcie-gen4), below such a NIC; NCCL's 24 GB/s is the score of its graph search, not a rate
    # (a Gen5 x16 path, scored 48, carried 391.39 GB/s over 8 NICs, NVIDIA/nccl-tests #309 T7)
    wide = inspect_node_text(case_text[CASE_17], nic_speed="400 Gb/s")[0]
    assert wide.rail_cap_bytes_per_s == pytest.approx(28.8064e9) and wide.rail_cap_link == "Gen4 x16"
    wide_fabric = {e.label: e for e in wide.expected}["2 nodes, NCCL_ALGO=Ring (the fabric's figure)"]
    assert wide_fabric.busbw_bytes_per_s <= 8 * 28.8064e9
    # NDv5's document is headed by its file name (ndv5-topo.xml): ND H100 v5 has 8 x 400 Gb/s NDR (Azure ND
    # H100 v5 page, cloud_instances.yaml azure-ndv5); the Gen5 x16 path, 57.6 GB/s, carries such a NIC
    assert not ndv5.nic_speed_assumed and ndv5.nic_speed_bytes_per_s == 400e9 / 8
    assert ndv5.rail_cap_bytes_per_s is None
    # NDv4's own NICs are 8 x HDR 200 Gb/s (Azure ND A100 v4 page): DGX A100 with 8 x HDR moves 192 GB/s
    # across nodes (NCCL maintainer, NVIDIA/nccl #812); case 17 says ~190. Given, or read off the instance
    # the file names (NDv4, catalog/data/cloud_instances.yaml azure-ndv4) when not given.
    hdr = inspect_node_text(case_text[CASE_17], nic_speed="200 Gb/s")[0]
    for node in (hdr, ndv4):
        node_fabric = {e.label: e for e in node.expected}["2 nodes, NCCL_ALGO=Ring (the fabric's figure)"]
        assert not node.nic_speed_assumed and node.rail_cap_bytes_per_s is None
        assert node_fabric.busbw_bytes_per_s == pytest.approx(192e9, rel=0.03)
    assert any("200 Gb/s per NIC from 'ndv4'" in a for a in ndv4.assumptions)
    one = {e.label: e for e in ndv4.expected}["one node, NCCL default"]
    assert 230e9 <= one.busbw_bytes_per_s <= 250e9  # Azure's NDv4 health check: > 230 GB/s in one VM


def test_pcie_cap_only_where_the_input_gives_link_speeds(b200: NodeInspection) -> None:
    # nvidia-smi topo -m has no PCIe speeds: nothing is capped, the NIC figure stands
    assert b200.layout.gpu_nic_pcie == {} and b200.rail_cap_bytes_per_s is None
    assert b200.network_factor == 1.0


CASE_21 = "case_21_aws_p4d_p5_nccl_topology_xml.txt"


def test_p5_four_efa_nics_per_gpu_aggregate(case_text: dict[str, str]) -> None:
    """AWS p5 (case 21 [S1]): 4 x 100 Gb/s EFA NICs under each H100's PCIe switch are one GPU's 400 Gb/s.

    Hand derivation: a 2-node ring's busbw is bounded by g x the per-GPU network rate; per GPU
    4 x 100 Gb/s x 0.96 (ConnectX-6-class payload efficiency, catalogue) = 48 GB/s, x 8 GPUs = 384 GB/s,
    the same 3.2 Tb/s per node as Azure NDv5 (8 x 400 Gb/s x 0.983 = 393 GB/s); the
    formula engine gives NDv5 389.69 GB/s (nccl-tests #309 T7 measured 391.39 on 8 x H100 with 8 x ConnectX-7
    400G on Gen5), so p5 must land within a few % of it, not at 1 NIC's ~96 GB/s.
    """
    p5 = inspect_node_text(case_text[CASE_21], source=CASE_21)[0]
    _, ndv5 = inspect_node_text(case_text[CASE_17], source=CASE_17)
    assert p5.spec.scale_out is not None and p5.spec.scale_out.nics_per_gpu == 4
    assert p5.spec.scale_out.nic_speed_bytes_per_s == pytest.approx(100e9 / 8)
    assert p5.spec.nic_line_rate_bytes_per_s == pytest.approx(400e9 / 8)
    assert p5.network_factor == pytest.approx(1.0)  # Gen4 x8 path per NIC (12 GB/s) carries one 100G NIC
    two = {e.n_nodes: e.busbw_bytes_per_s for e in p5.expected if "Ring" in e.label and e.n_nodes == 2}[2]
    ref = {e.n_nodes: e.busbw_bytes_per_s for e in ndv5.expected if "Ring" in e.label and e.n_nodes == 2}[2]
    assert ref == pytest.approx(389.69e9, rel=1e-3)  # 380.66 when NCCL's Gen5 score (48 GB/s) capped it
    assert two == pytest.approx(ref, rel=0.03)
    assert two <= 8 * 4 * (100e9 / 8) * 0.96 * 1.0001  # g x 4 NICs x 12.5 GB/s x 0.96 = 384 GB/s


def test_shared_nic_is_not_counted_twice(case_text: dict[str, str]) -> None:
    """p4d (case 21 [S2]): 2 GPUs share 1 NIC under one PCIe switch; 4 NICs / 8 GPUs -> 1 NIC per GPU."""
    p4d = inspect_node_text(case_text[CASE_21], source=CASE_21)[1]
    assert p4d.spec.scale_out is not None and p4d.spec.scale_out.nics_per_gpu == 1
    assert p4d.spec.scale_out.gpus_per_nic == 2 and p4d.spec.nics_per_node == 4  # the new field
    assert any("4 NICs for 8 GPUs" in a for a in p4d.assumptions)
    _, ndv5 = inspect_node_text(case_text[CASE_17], source=CASE_17)
    assert ndv5.spec.scale_out is not None and ndv5.spec.scale_out.nics_per_gpu == 1


def test_geforce_node_says_it_has_no_peer_to_peer() -> None:
    # Four GPUs on PCIe behind one switch (PXB), no NICs, named RTX 4090: GeForce has no peer access
    # ('GeForce cards do not support P2P', NVIDIA/nccl-tests #287), so the node runs SHM through host
    # memory: Gen4 32 GB/s x 0.6 = 19.2 GB/s per GPU (transports.yaml shm), and inspect says why.
    four = [f"GPU{i}" for i in range(4)]
    rows = ["\t".join([a, *("X" if a == b else "PXB" for b in four)]) for a in four]
    text = "\n".join(["\t" + "\t".join(four), *rows]) + "\n"
    (node,) = inspect_node_text(text, gpu="rtx-4090")
    assert any(w.code == "no_peer_to_peer" for w in node.warnings)
    assert node.expected[0].busbw_bytes_per_s == pytest.approx(19.2e9, rel=0.02)
    (pro,) = inspect_node_text(text, gpu="rtx-6000-ada")
    assert not any(w.code == "no_peer_to_peer" for w in pro.warnings)
