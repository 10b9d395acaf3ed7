"""Input defects a trial of the fabric command found: each test runs one command; its docstring holds the
command, what it printed and what it should do (README: bad input exits 2 with one line naming the field and
the value, and help texts tell the truth)."""

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def test_a_fabric_refusal_does_not_call_spraying_its_default():
    """``aifabric fabric all_reduce --nodes 8 --routing spray --polarized --size 64MiB`` exits 2 with
    "--polarized: used only by --routing ecmp, qp, adaptive, spray-blind, reps; routing spray (the default)
    does not use it". On ``fabric`` spraying is not the default: ``fabric --help`` prints "[default: ecmp]"
    for --routing and README says "`collective --engine links` sprays by default ...; `fabric` defaults to
    ECMP" (``fabric all_reduce --nodes 8 --polarized`` runs, on ECMP). The user named spray; the refusal
    should not tell them they left the routing at its default."""
    args = ["fabric", "all_reduce", "--nodes", "8", "--routing", "spray", "--polarized", "--size", "64MiB"]
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "--polarized" in r.stderr, r.stderr
    assert "spray (the default)" not in r.stderr, r.stderr


def _nv4_pairs_topo() -> str:
    """``nvidia-smi topo -m`` of a 4-GPU PCIe workstation whose GPUs are NVLink-bridged in pairs (NV4: a 2-way
    bridge of 4 links, as on RTX A6000 boards), one NIC on socket 0, as the tool prints it."""
    rel = [[" X ", "NV4", "SYS", "SYS"], ["NV4", " X ", "SYS", "SYS"], ["SYS", "SYS", " X ", "NV4"]]
    rel.append(["SYS", "SYS", "NV4", " X "])
    nic = ["PHB", "PHB", "SYS", "SYS"]
    lines = ["\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for i in range(4):
        numa = "0" if i < 2 else "1"
        cpus = "0-31" if i < 2 else "32-63"
        lines.append("\t".join([f"GPU{i}", *rel[i], nic[i], cpus, numa, "N/A"]))
    lines.append("\t".join(["NIC0", *nic, " X "]))
    lines += ["", "Legend:", "", " X    = Self", "", "NIC Legend:", "", "  NIC0: mlx5_0", ""]
    return "\n".join(lines)


def test_inspect_does_not_call_a_bridged_pair_an_nvswitch(tmp_path):
    """``aifabric inspect pairs.txt`` on the topology above printed "NVLink group GPU0+GPU1: 1 pairs, NV4;
    full mesh (NVSwitch)" (and the same for GPU2+GPU3), while the ClusterSpec it printed is ``scale_up:
    {kind: pcie, ...}`` with a warning that NVLink joins only the pairs. Two GPUs on a 2-way NVLink bridge
    are wired to each other directly: there is no NVSwitch in the box (NVIDIA's NVLink bridge pages: a
    bridge joins two boards; NVSwitch appears only on HGX/DGX baseboards, where topo -m prints NV18 or NV12
    between all eight GPUs). The group line should not name a switch the machine lacks."""
    topo = tmp_path / "pairs.txt"
    topo.write_text(_nv4_pairs_topo())
    r = runner.invoke(app, ["inspect", str(topo)])
    assert r.exit_code == 0, r.stdout + r.stderr
    groups = [line for line in r.stdout.splitlines() if line.startswith("NVLink group")]
    assert groups, r.stdout
    assert not any("NVSwitch" in line for line in groups), groups


def test_import_chakra_refusal_counts_the_ranks_the_trace_has(tmp_path):
    """``aifabric train -m llama3-8b --nodes 2 --tp 8 -B 16 --chakra et/`` writes 16 traces (workload.0.et
    .. workload.15.et); ``aifabric import-chakra et/workload.0.et --nodes 1`` then exits 2 with "the trace
    ... has 9 ranks (comm_group_size, comm_group_stride) but dgx-h100-superpod has 8 GPUs". The trace was
    written for 16 ranks; 9 is the span of rank 0's DP group (2 ranks, 8 apart: GPUs 0 and 8). The refusal
    is right, its count is not: it should name the 16 ranks, or the span as a span."""
    et = tmp_path / "et"
    train = ["train", "-m", "llama3-8b", "--nodes", "2", "--tp", "8", "-B", "16", "--chakra", str(et)]
    assert runner.invoke(app, train).exit_code == 0
    assert len(list(et.glob("workload.*.et"))) == 16
    r = runner.invoke(app, ["import-chakra", str(et / "workload.0.et"), "--nodes", "1"])
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "has 9 ranks" not in r.stderr, r.stderr
