"""Reader defects a new user's first day found, feeding public outputs of machines the project had not seen to
``inspect`` and ``nccl-tests compare`` (``tests/discovery/fixtures/public4``; each file's first line and the
folder's README name the source thread). Each test reads one file; its docstring holds what the product
printed and what the text itself says, which is what the test asserts."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.catalog.loader import accelerator
from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

FIXTURES = Path(__file__).parents[1] / "discovery" / "fixtures" / "public4"

#: NVIDIA/nccl-tests#194: two H100 PCIe cards joined by an NVLink bridge, ``all_reduce_perf -g 2``.
H100_PCIE_BRIDGE = FIXTURES / "h100pcie_nvlink_bridge_2gpu_info_dots_cut.log"


def _compare(path: Path, *args: str) -> dict:
    """``aifabric nccl-tests compare PATH ARGS --json``'s first table; asserts exit 0."""
    r = runner.invoke(app, ["nccl-tests", "compare", str(path), *args, "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    return json.loads(r.stdout)["tables"][0]


def _inspect(path: Path) -> dict:
    """``aifabric inspect PATH --json``'s node; asserts exit 0."""
    r = runner.invoke(app, ["inspect", str(path), "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    return out[0] if isinstance(out, list) else out


def test_p2p_transport_line_is_not_modelled_as_shared_memory():
    """``nccl-tests compare h100pcie_nvlink_bridge_2gpu_info_dots_cut.log --nodes 1``: the log carries NCCL's
    own ``Channel 00/0 : 1[21000] -> 0[1000] via P2P/direct pointer`` (``src/transport/p2p.cc``: the P2P
    transport, direct pointers between GPUs of one process) and measured 115.37-115.86 GB/s busbw at 1-2 GiB.
    The product ignored the transport line (``evidence: []``), assumed "no NVLink: ... GPUs of a node exchange
    bytes through host memory (NCCL's SHM transport ...)", predicted 38.4 GB/s and gave the verdict
    ``above_links``: "measured faster than the links ... can carry ... not a possible measurement". A
    measurement is the fact; NCCL said which transport it ran. Expected: the table is not priced as SHM
    through host memory once NCCL's INFO line names P2P, and a real log is not declared impossible."""
    table = _compare(H100_PCIE_BRIDGE, "--nodes", "1")
    assert not any("SHM transport" in a for a in table["assumptions"]), table["assumptions"]
    assert table["verdict"] != "above_links", table["verdict"]


def test_launch_line_in_backticks_still_gives_the_node_count():
    """``nccl-tests compare h100pcie_nvlink_bridge_2gpu_info_dots_cut.log``: the launch line is pasted as
    Markdown code, `` `./nccl-tests/build/all_reduce_perf -b 1G -e 8G -f 2 -g 2` ``. One process driving
    ``-g 2`` GPUs runs on one node (nccl-tests README: ``-g`` GPUs per thread, in one process), and the
    product reads that very line once the backticks are gone (2 ranks on 1 node). With them it exits 2:
    "the log does not say how many nodes ran its 2 ranks (no rank lines with hosts, NCCL INFO nNodes, or
    launcher line giving hosts or ranks per node)". Expected: 1 node, read from the quoted line."""
    table = _compare(H100_PCIE_BRIDGE)
    assert table["n_nodes"] == 1 and table["n_ranks"] == 2, (table["n_nodes"], table["n_ranks"])


def test_markdown_rendered_rows_are_read():
    """``nccl-tests compare mi300x_mscclpp_markdown_pipe_rows_cut.log --ranks 8 --nodes 1 --gpu mi300x``:
    the rccl-tests table as GitHub rendered it in microsoft/mscclpp#736, header lines escaped ``\\#`` and
    each row's 13 fields joined by `` | `` (``262144 | 131072 | half | sum | -1 | 11.68 | 22.44 | 39.27 |
    ...``), a ``-- | --`` rule after the first row. The product exits 2: "no nccl-tests result table found
    (expected a '#  size  count  type ...' header) (read to the end, 16 lines)"; the same text with the pipes
    replaced by blanks reads as 9 rows. ``inspect`` already reads topo matrices pasted as pipe tables.
    Expected: 9 rows, 1 KiB to 256 KiB, the last at the log's 11.68 us and 39.27 GB/s busbw (busbw/algbw =
    39.27/22.44 = 1.75 = 2 x 7/8, nccl-tests' all_reduce factor for 8 ranks)."""
    path = FIXTURES / "mi300x_mscclpp_markdown_pipe_rows_cut.log"
    table = _compare(path, "--ranks", "8", "--nodes", "1", "--gpu", "mi300x")
    rows = table["rows"]
    assert [r["size_bytes"] for r in rows] == [1024 * 2**k for k in range(9)]
    assert rows[-1]["measured_time_s"] == pytest.approx(11.68e-6)
    assert rows[-1]["measured_busbw_bytes_per_s"] == pytest.approx(39.27e9, rel=1e-3)


def test_matrix_without_nvlink_is_not_modelled_as_an_sxm_board():
    """``inspect topo_l40s_4gpu_two_nics_pix.txt`` (4 x L40S, NODE/SYS between GPUs, no NV# anywhere):
    the product says "GPU model unknown (no NVLink in the matrix): assumed h100-sxm" and writes a
    ClusterSpec of ``accelerator: h100-sxm`` with ``scale_up: {kind: pcie ...}``. An SXM GPU always sits on
    its NVLink/NVSwitch board -- the product's own rule in ``discovery/node_spec.py`` ("an SXM GPU always
    sits on its NVSwitch board"), NVIDIA's HGX H100 datasheet (SXM5 GPUs joined by NVLink 4 / NVSwitch) --
    so a full matrix that shows none is not an SXM node. Expected: the assumed accelerator has no NVLink in
    the catalogue (a PCIe card, e.g. h100-pcie), so the spec and the matrix agree."""
    node = _inspect(FIXTURES / "topo_l40s_4gpu_two_nics_pix.txt")
    assert node["nvlink_groups"] == []
    assert not accelerator(node["accelerator"]).nvlink, node["accelerator"]


def test_disjoint_cpu_affinities_are_two_numa_groups():
    """``inspect topo_t4_4gpu_sys_node_cpu_affinity_only.txt`` (NVIDIA/nccl#428, 4 x T4): GPU0's CPU Affinity
    is ``0-15,32-47``, GPU1-3's ``16-31,48-63``, and GPU0 reaches the others over SYS, which nvidia-smi's
    legend defines as "traversing PCIe as well as the SMP interconnect between NUMA nodes"; GPU1-3 reach each
    other over NODE (within one NUMA node). The product prints "NUMA: node ?: GPU0, GPU1, GPU2, GPU3", one
    group, as if the four shared a socket. Expected: GPU0 in a group of its own, GPU1-3 together."""
    node = _inspect(FIXTURES / "topo_t4_4gpu_sys_node_cpu_affinity_only.txt")
    groups = sorted(sorted(group["gpus"]) for group in node["numa"])
    assert groups == [["GPU0"], ["GPU1", "GPU2", "GPU3"]], node["numa"]


def test_gpu_row_cut_inside_its_nic_columns_keeps_the_gpu():
    """``inspect topo_4gpu_nv12_26nic_all_sys_cut.txt`` (vllm-project/vllm#17527): the header names GPU0-GPU3,
    the rows of GPU0-GPU2 each give GPU3's column (NV12), and GPU3's own row is there up to its 17th NIC
    column (``GPU3    NV12    NV12    NV12     X      SYS ...``). The product says "rows GPU3 cut (the matrix
    stops after GPU2): those GPUs are not scored", reads "3 GPUs", an NVLink group GPU0+GPU1+GPU2, and writes
    a ClusterSpec of ``gpus_per_node: 3``. Every GPU-to-GPU path of GPU3 is in the text (twice). Expected: 4
    GPUs, GPU3 in the NV12 group, ``gpus_per_node: 4``; only GPU3's missing NIC columns are unknown."""
    node = _inspect(FIXTURES / "topo_4gpu_nv12_26nic_all_sys_cut.txt")
    assert node["cluster_spec"]["gpus_per_node"] == 4, node["missing"]
    assert [g["gpus"] for g in node["nvlink_groups"]] == [["GPU0", "GPU1", "GPU2", "GPU3"]]


def test_shared_nic_share_is_in_the_per_gpu_network_figure():
    """``inspect topo_l40s_4gpu_two_nics_pix.txt``: 2 NICs (NIC0, NIC1) for 4 GPUs, every GPU-NIC path NODE or
    SYS. The product's own lines: "NIC0 (mlx5_0) serves GPU0, GPU2 (2 NICs for 4 GPUs): they share its 400
    Gb/s, 200 Gb/s each across nodes", and "~2/3 of the NIC at best" without GPUDirect RDMA. Its summary
    line then says "(across nodes: the NICs give 67% of one GPU-local NIC per GPU)" -- the GDR factor alone,
    as if each GPU had a NIC of its own. Per GPU the text gives half a NIC at 2/3: 2/4 x 2/3 = 33% of one
    GPU-local NIC. Expected: the printed share is 33%, not 67%."""
    r = runner.invoke(app, ["inspect", str(FIXTURES / "topo_l40s_4gpu_two_nics_pix.txt")])
    assert r.exit_code == 0, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if "of one GPU-local NIC per GPU" in x)
    assert "33%" in line, line


def test_saved_node_spec_reproduces_inspects_own_across_node_figure(tmp_path: Path):
    """``inspect topo_4gpu_nv12_26nic_all_sys_cut.txt`` prints "Node ClusterSpec (save as YAML, then --cluster
    FILE)" and, from the same node, "2 nodes, NCCL_ALGO=Ring (the fabric's figure): 57.57 GB/s" -- every NIC
    is SYS from every GPU, so no GPUDirect RDMA, "~2/3 of the NIC at best" (its ``network_factor`` 0.667).
    Saving that spec as told and running ``aifabric collective all_reduce -c node.yaml --nodes 2 --size 4GiB
    --algo ring`` gives 86.33 GB/s busbw: the YAML carries no trace of the GDR finding (86.33 x 2/3 = 57.55),
    so every command fed the saved spec overstates the network by 1.5x against inspect's own figure.
    Expected: the saved spec, run as inspect describes, gives inspect's 2-node ring figure (within 1%)."""
    r = runner.invoke(app, ["inspect", str(FIXTURES / "topo_4gpu_nv12_26nic_all_sys_cut.txt"), "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    node = json.loads(r.stdout)
    node = node[0] if isinstance(node, list) else node
    ring2 = next(e for e in node["expected_busbw"] if e["nodes"] == 2)
    path = tmp_path / "node.yaml"
    path.write_text(json.dumps(node["cluster_spec"]))  # JSON is YAML
    args = ["collective", "all_reduce", "-c", str(path), "--nodes", "2", "--size", "4GiB", "--algo", "ring"]
    c = runner.invoke(app, [*args, "--json"])
    assert c.exit_code == 0, c.stdout + c.stderr
    busbw = json.loads(c.stdout)[0]["busbw_bytes_per_s"]
    assert busbw == pytest.approx(ring2["busbw_bytes_per_s"], rel=0.01), (busbw, ring2)
