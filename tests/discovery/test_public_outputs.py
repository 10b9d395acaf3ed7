"""Public nccl-tests/rccl-tests logs and ``nvidia-smi topo -m`` outputs: what ``compare`` and ``inspect`` say.

``data/public/README.md`` names each source. The logs' tables are read in ``test_public_logs.py``; here the
comparison (measured busbw as printed, GB/s = 1e9 B/s; the model's figure beside it) and the topologies
(NVLink pairs, nearest NIC, NUMA, the board guessed) are checked, and each input the readers cannot use gets
one clear line and exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.catalog.nccl import nccl_release
from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.collectives.nccl_env import parse_env, stages_in_host
from aifabric.discovery.compare import compare_nccl_tests
from aifabric.discovery.node import NodeInspection, inspect_node_text
from aifabric.discovery.node_paths import NO_GDR_FACTOR, c2c_gdr_verdict
from aifabric.discovery.nvsmi import TopoMatrix
from aifabric.errors import ParseError

PUBLIC = Path(__file__).parent / "data" / "public"

#: Topology outputs and what each must read as: GPUs, NICs, NVLink pairs (count, links), GPU -> nearest NIC.
TOPOLOGIES: dict[str, tuple[int, int, tuple[int, int], dict[str, tuple[str, str]]]] = {
    "topo_8gpu_12nic_glued_cells.txt": (8, 12, (28, 18), {"GPU5": ("NIC7", "PIX"), "GPU7": ("NIC11", "PIX")}),
    "topo_vllm_env_indented_one_sys_nic.txt": (8, 1, (28, 18), {"GPU0": ("NIC0", "SYS")}),
    "topo_h100_mlx5_named_columns.txt": (8, 10, (28, 18), {"GPU4": ("mlx5_4", "PIX")}),
    "topo_gb200_4gpu_numa_lists_cut.txt": (3, 6, (3, 18), {"GPU2": ("NIC2", "SYS")}),
    "topo_dgx_a100_nv12_12nic_cut.txt": (5, 12, (10, 12), {"GPU4": ("NIC6", "PXB")}),
    "topo_h100_9nic_nic_rows_cut.txt": (8, 9, (28, 18), {"GPU0": ("NIC8", "PIX"), "GPU7": ("NIC1", "PIX")}),
}
#: Outputs ``inspect`` does not read, and its one line.
NOT_TOPOLOGIES = {"rocm_smi_showtopo_mi300x_xgmi.txt": "2: this is rocm-smi output (AMD GPUs"}


def _node(name: str) -> NodeInspection:
    (node,) = inspect_node_text((PUBLIC / name).read_text(encoding="utf-8"), source=name)
    return node


def _codes(node: NodeInspection) -> set[str]:
    return {w.code for w in node.warnings}


def test_every_public_topology_is_covered() -> None:
    assert {p.name for p in PUBLIC.glob("*.txt")} == set(TOPOLOGIES) | set(NOT_TOPOLOGIES)


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_topology_reads_as_published(name: str) -> None:
    gpus, nics, (pairs, links), nearest = TOPOLOGIES[name]
    m = TopoMatrix.from_text((PUBLIC / name).read_bytes(), name)
    assert (len(m.gpus), len(m.nics)) == (gpus, nics)
    assert len(m.nvlink_pairs()) == pairs and {n for *_, n in m.nvlink_pairs()} == {links}
    node = _node(name)
    for gpu, (nic, path) in nearest.items():
        assert node.pairing[gpu] is not None
        assert (node.pairing[gpu].nic, node.pairing[gpu].path) == (nic, path)
    crlf = TopoMatrix.from_text((PUBLIC / name).read_text(encoding="utf-8").replace("\n", "\r\n"), name)
    assert crlf.links == m.links


@pytest.mark.parametrize(("name", "reason"), sorted(NOT_TOPOLOGIES.items()))
def test_other_tools_output_says_what_it_is(name: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason.split(": ", 1)[1].replace("(", r"\(")):
        _node(name)
    result = CliRunner().invoke(app, ["inspect", str(PUBLIC / name)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert reason in " ".join(result.output.split())


def test_glued_cells_are_split_where_the_paste_lost_the_tab() -> None:
    # Published B200 matrix: "...NODE\tPIXNODE\tNODE..." in row GPU5, " X NODE" in row NIC7.
    m = TopoMatrix.from_text((PUBLIC / "topo_8gpu_12nic_glued_cells.txt").read_bytes())
    assert m.link("GPU5", "NIC7") == "PIX" and m.link("GPU5", "NIC8") == "NODE"
    assert m.link("NIC7", "NIC8") == "NODE" and m.nic_name("NIC7") == "mlx5_7"
    assert m.link("NIC3", "NIC4") == "PIX"  # two ports of one card: PIX to each other, NODE to every GPU


def test_indented_env_report_and_mlx5_columns() -> None:
    vllm = _node("topo_vllm_env_indented_one_sys_nic.txt")
    assert [n.gpus for n in vllm.numa][:2] == [
        ("GPU0", "GPU1", "GPU2", "GPU3"),
        ("GPU4", "GPU5", "GPU6", "GPU7"),
    ]
    assert vllm.pairing["GPU0"] is not None and not vllm.pairing["GPU0"].gdr  # SYS on x86: no GPUDirect RDMA
    assert "nic_behind_cpu" in _codes(vllm)
    named = _node("topo_h100_mlx5_named_columns.txt")
    assert named.layout.nics[8] == "mlx5_8" and named.path("GPU0", "mlx5_8").path == "NODE"


def test_grace_board_reads_its_c2c_paths() -> None:
    # sgl-project/sglang #11208: 4 x GB200, every GPU-NIC cell SYS, NUMA affinity 0,3-9,11-17 and GPU NUMA
    # ID 2 for GPU0. NVLink-C2C is invisible to nvidia-smi; NCCL 2.27+ runs GPUDirect RDMA through it
    # (NCCL_NET_GDR_C2C default 1, src/graph/paths.cc).
    node = _node("topo_gb200_4gpu_numa_lists_cut.txt")
    assert node.layout.c2c and node.accelerator == "gb200" and node.layout.cpu_vendor == "arm"
    assert node.layout.gpu_numa == {"GPU0": 0, "GPU1": 0, "GPU2": 1}  # the Grace CPU, not the GPU memory node
    assert all(p.gdr for p in node.paths)
    assert not _codes(node) & {"nic_behind_cpu", "far_nic"}
    assert any(a.startswith("partial input: rows GPU3 cut") for a in node.assumptions)
    # The same cells on an x86 board (no GPU NUMA ID) stay SYS without GPUDirect RDMA.
    assert not _node("topo_vllm_env_indented_one_sys_nic.txt").layout.c2c


@pytest.mark.parametrize("version,gdr", [("2.26.2", False), ("2.27.3", True), ("2.30.3", True)])
def test_grace_board_gdr_follows_the_nccl_release(version: str, gdr: bool) -> None:
    # The same GB200 tray: NCCL reads NCCL_NET_GDR_C2C from 2.26.2 with default 0 (v2.26.2-1 paths.cc:381),
    # default 1 from 2.27.3 (v2.27.3-1 paths.cc:386, the P2C path compared as C2C), so its own Grace's NICs
    # carry GPUDirect RDMA from 2.27.3 and stage in host memory before. The verdict is the collective
    # model's for a gb200-nvl72 spec (nic_path P2C) under the same release: one rule.
    name = "topo_gb200_4gpu_numa_lists_cut.txt"
    text = (PUBLIC / name).read_text(encoding="utf-8")
    (node,) = inspect_node_text(text, source=name, nccl_version=version)
    assert all(p.gdr is gdr for p in node.paths)
    model = not stages_in_host(parse_env({}), preset("gb200-nvl72"), nccl_release(version))
    assert model is gdr
    assert ("nic_behind_cpu" in _codes(node)) is not gdr
    # staged: the across-node figure loses NCCL's host-staging factor (16 of 24 GB/s, NVIDIA/nccl #412)
    assert node.network_factor == pytest.approx(1.0 if gdr else NO_GDR_FACTOR)
    two = {e.n_nodes: e.busbw_bytes_per_s for e in node.expected}[2]
    (newest,) = inspect_node_text(text, source=name)
    ratio = two / {e.n_nodes: e.busbw_bytes_per_s for e in newest.expected}[2]
    assert ratio == pytest.approx(1.0 if gdr else NO_GDR_FACTOR, rel=0.01)


def test_c2c_verdict_names_the_release_whose_rule_it_used() -> None:
    # A version typed with a space is the recorded 2.27.3 (nccl_releases.yaml) and is printed once, as the
    # release; 2.26.2 is no recorded release (the newest at or below it is 2.25.1), which the verdict says.
    ok, reason = c2c_gdr_verdict(" 2.27.3")
    assert ok and "NCCL 2.27.3 compares as C2C" in reason and "NCCL  " not in reason
    ok, reason = c2c_gdr_verdict(" 2.26.2")
    assert not ok and "NCCL  " not in reason
    said = "NCCL 2.25.1 (2.26.2 is not a recorded release: the newest recorded at or below it sets the rule)"
    assert said in reason


def test_grace_board_names_the_release_it_judged() -> None:
    # Without --nccl-version the newest recorded release decides, and the assumptions say so; a version
    # that is not a release is one line naming the option, exit 2.
    node = _node("topo_gb200_4gpu_numa_lists_cut.txt")
    assert any("GPUDirect RDMA over NVLink-C2C judged for NCCL" in a for a in node.assumptions)
    assert not any("NVLink-C2C" in a for a in _node("topo_vllm_env_indented_one_sys_nic.txt").assumptions)
    path = str(PUBLIC / "topo_gb200_4gpu_numa_lists_cut.txt")
    r = CliRunner().invoke(app, ["inspect", path, "--nccl-version", "abc"])
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr.strip() == "error: --nccl-version: 'abc' is not a version like 2.21.5"
    r = CliRunner().invoke(app, ["inspect", path, "--nccl-version", "2.26.2", "--json"])
    assert r.exit_code == 0, r.stderr
    assert not any(p["gdr"] for p in json.loads(r.stdout)[0]["gdr"])


def test_dgx_a100_cut_inside_the_affinity_column() -> None:
    # NVIDIA/nccl #1505: the copy stops inside GPU4's CPU Affinity; NV12 names an A100 SXM board.
    node = _node("topo_dgx_a100_nv12_12nic_cut.txt")
    assert node.accelerator == "a100-sxm-80gb"
    assert [p.nic for p in node.nearest["GPU0"]] == ["NIC0", "NIC1"]
    assert node.pairing["GPU0"] is not None and node.pairing["GPU0"].gdr  # PXB


def test_datatype_all_sweeps_are_in_order_and_type_bound() -> None:
    # 2 x 8 H200, NCCL 2.30.4, --datatype all at 10-40 GiB: int8, uint8 and fp8 reach 389-390 GB/s busbw,
    # float 484.55 GB/s at 10 GiB (line 57), as printed.
    (table,) = compare_nccl_tests(
        (PUBLIC / "h200_2x8_datatype_all_fp8_rows.log").read_text(encoding="utf-8")
    ).tables
    assert table.out_of_order == ()  # each type's sweep restarts at 10 GiB (AllReduceRunTest loops types)
    by_line = {r.line: r for r in table.rows}
    assert by_line[36].measured_busbw_bytes_per_s / 1e9 == pytest.approx(389.40, abs=0.01)
    assert by_line[57].measured_busbw_bytes_per_s / 1e9 == pytest.approx(484.55, abs=0.01)
    assert by_line[36].predicted is by_line[57].predicted  # one model figure per size: no per-type cost
    bound = [r for r in table.rows if r.causes[:1] == ("type_bound",)]
    assert len(bound) == 12 and not any(r.flagged for r in table.rows)
    assert all(r.measured_busbw_bytes_per_s < by_line[57].measured_busbw_bytes_per_s for r in bound)
    assert table.findings == ()


def test_rccl_radeon_rows_against_an_mi300x_model() -> None:
    # The rank lines name "AMD Radeon Graphics": not in the catalogue; --gpu mi300x models 8 x MI300X.
    log = PUBLIC / "rccl_g8_radeon_allreduce_alltoall.log"
    guessed = CliRunner().invoke(app, ["nccl-tests", "compare", str(log)])
    assert guessed.exit_code == 0
    assert "GPU 'AMD Radeon Graphics' not in the catalogue: assumed h100-sxm (give --gpu)" in guessed.output
    assert "verdict: inconclusive" in guessed.output
    result = compare_nccl_tests(log.read_text(encoding="utf-8"), gpu="mi300x")
    allreduce, alltoall = result.tables
    assert allreduce.spec.accelerator == alltoall.spec.accelerator == "mi300x"
    assert allreduce.rows[-1].measured_busbw_bytes_per_s / 1e9 == pytest.approx(402.55, abs=0.01)
    assert alltoall.rows[-1].measured_busbw_bytes_per_s / 1e9 == pytest.approx(322.22, abs=0.01)
    assert [size for size, _ in alltoall.dropped] == [0, 0, 0, 0]
    assert allreduce.findings == () and alltoall.findings == ()


@pytest.mark.parametrize(
    ("name", "args", "said"),
    [
        ("rccl_mi250x_16r_mpich_error_column_cut.log", [], "does not say how many nodes ran its 16 ranks"),
        ("tree_2node_hostfile_no_rank_lines_cut.log", [], "does not say how many nodes ran its 2 ranks"),
        ("two_processes_rows_interleaved_cut.log", [], "its columns fit all_reduce and sendrecv"),
        (
            "hash_stripped_blocking_one_rank_a10g_cut.log",
            [],
            "no rows (its only row was cut mid-line at line 13)",
        ),
        ("rtx4090_g8_one_process_first_row_cut.log", [], "its only row was cut mid-line at line 17"),
    ],
)
def test_logs_compare_cannot_use_say_why_in_one_line(name: str, args: list[str], said: str) -> None:
    result = CliRunner().invoke(app, ["nccl-tests", "compare", str(PUBLIC / name), *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert said in " ".join(result.output.split())


def test_tree_two_nodes_once_the_node_count_is_given() -> None:
    # NVIDIA/nccl-tests #232: 2 nodes x 1 H100, NCCL_ALGO=Tree on the mpirun line; 41.31 GB/s at 32 MiB.
    result = compare_nccl_tests(
        (PUBLIC / "tree_2node_hostfile_no_rank_lines_cut.log").read_text(encoding="utf-8"), nodes=2
    )
    (table,) = result.tables
    assert (table.spec.n_nodes, table.spec.gpus_per_node) == (2, 1)
    assert table.settings.algorithm == "tree" and table.settings.env["NCCL_ALGO"] == "Tree"
    assert table.rows[-1].measured_busbw_bytes_per_s / 1e9 == pytest.approx(41.31, abs=0.01)


def test_socket_broadcast_row_names_the_socket_latency() -> None:
    # NVIDIA/nccl-tests #82: NCCL_IB_DISABLE=1 over eth0, 2 x 1 V100-PCIE; 8 B in 45.82 us out-of-place.
    (table,) = compare_nccl_tests(
        (PUBLIC / "broadcast_c0_socket_v100_warn_lines_cut.log").read_text(encoding="utf-8")
    ).tables
    assert (table.op, table.spec.n_nodes) == ("broadcast", 2)
    assert table.settings.env["NCCL_IB_DISABLE"] == "1"
    (row,) = table.rows
    assert row.measured_time_s == pytest.approx(45.82e-6)
    assert row.predicted.time_s < row.measured_time_s and row.causes[0] == "latency_net"


def test_copy_cut_in_a_row_label_keeps_the_rows_above() -> None:
    # NVIDIA/nccl #1453: the stored copy stops at "NIC" (the label of row NIC6); NIC0 is SYS to every GPU.
    node = _node("topo_h100_9nic_nic_rows_cut.txt")
    assert any(a.startswith("partial input: rows NIC6, NIC7, NIC8 cut") for a in node.assumptions)
    assert node.layout.nic_numa["NIC5"] == 0 and node.layout.nic_numa["NIC0"] is None
    assert "NIC0" not in {p.nic for p in node.pairing.values() if p is not None}
