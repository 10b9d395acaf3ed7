"""CLI tests of ``aifabric inspect``, ``aifabric nccl-tests compare`` and ``aifabric calibrate``.

Happy paths read the golden case files (``data/``); the robustness matrix damages them the way files get
damaged (cut short, a column lost, garbage bytes, an unknown nccl-tests binary, emptied) and checks, for
every command, exit code 2 and one line on stderr that names the file and the line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

DATA = Path(__file__).parent / "data"
CASE_01 = DATA / "case_01_dgx_h100_allreduce_single_node.txt"
CASE_03 = DATA / "case_03_h100_xe9680_ib_scaling_2_4_8_nodes.txt"
CASE_08 = DATA / "case_08_b200_gke_a4_topo_and_2node_allgather.txt"
CASE_17 = DATA / "case_17_azure_ndv4_ndv5_topology_xml.txt"

runner = CliRunner()


def run(*args: str):  # noqa: ANN201
    return runner.invoke(app, [str(a) for a in args])


# -- happy paths -------------------------------------------------------------------------------------------------


def test_inspect_b200_matrix() -> None:
    r = run("inspect", CASE_08, "--gpu", "b200")
    assert r.exit_code == 0, r.stderr
    out = r.stdout
    assert "28 pairs, NV18; full mesh" in out
    assert re.search(r"GPU0 .* NIC0 \(mlx5_0\), NIC1 \(mlx5_1\) .* PIX", out)
    assert "accelerator: b200" in out and "kind: nvswitch" in out
    assert "node 0: GPU0, GPU1, GPU2, GPU3" in out and "node 1: GPU4" in out
    assert "2 nodes, NCCL_ALGO=Ring (the fabric's figure)" in out
    assert "warning" not in out and r.stderr == ""


def test_inspect_xml_json() -> None:
    r = run("inspect", CASE_17, "--json", "--gpu", "h100-sxm")
    assert r.exit_code == 0, r.stderr
    nodes = json.loads(r.stdout)
    assert [n["format"] for n in nodes] == ["nccl-xml", "nccl-xml"]
    assert nodes[1]["pairing"]["GPU0"] == {"nic": "NIC0", "path": "PIX", "gdr": True}
    assert nodes[1]["cluster_spec"]["accelerator"] == "h100-sxm"
    r = run("inspect", CASE_17, "--doc", "3")
    assert r.exit_code == 2 and "--doc" in r.stderr


def test_compare_table_and_plot(tmp_path: Path) -> None:
    png = tmp_path / "t7.png"
    r = run("nccl-tests", "compare", CASE_03, "--table", "7", "--plot", png)
    assert r.exit_code == 0, r.stderr
    assert "NCCL_ALGO=Ring: predicted with algorithm=ring" in r.stdout
    assert "ring/Simple" in r.stdout and "median deviation +0.6%" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_flags_with_causes_and_json() -> None:
    r = run("nccl-tests", "compare", CASE_03, "-t", "3")
    assert r.exit_code == 0, r.stderr
    assert "flagged 4 rows, 1 GiB .. 8 GiB" in r.stdout and "adaptive routing" in r.stdout
    r = run("nccl-tests", "compare", CASE_03, "-t", "6")  # bracketed text must survive the console markup
    assert "[this run already sets NCCL_MIN_CTAS=24, NCCL_IB_QPS_PER_CONNECTION=2]" in r.stdout
    r = run("nccl-tests", "compare", CASE_01, "--json", "--no-nvls")
    data = json.loads(r.stdout)
    rows = data["tables"][0]["rows"]
    assert {row["algorithm"] for row in rows} == {"ring"}


def test_calibrate_writes_a_profile_the_other_commands_accept(tmp_path: Path) -> None:
    profile = tmp_path / "t7.yaml"
    r = run("calibrate", CASE_03, "--table", "7", "-o", profile)
    assert r.exit_code == 0, r.stderr
    assert "inter_scale" in r.stdout and "residual RMS" in r.stdout and profile.exists()
    r = run("collective", "all_reduce", "-c", "h100-ib-2node", "--size", "8GiB", "--calibration", profile)
    assert r.exit_code == 0, r.stderr
    r = run("nccl-tests", "compare", CASE_03, "-t", "6", "--calibration", profile)
    assert r.exit_code == 0, r.stderr
    assert "calibration h100-sxm x16 from case_03" in r.stdout
    r = run("calibrate", CASE_03, "-t", "1", "--max-size", "1MiB")
    assert r.exit_code == 0, r.stderr
    assert "held out" in r.stdout and "latency_scale:" in r.stdout  # profile printed without -o


# -- robustness: every damaged file, every command ------------------------------------------------------------------


def _damaged(kind: str, command: str) -> bytes:
    matrix = CASE_08.read_text()
    log = CASE_03.read_text()
    if kind == "truncated":  # cut inside a matrix row / inside a result row
        if command == "inspect":
            return matrix[: matrix.index("GPU3    NV18") + 20].encode()
        return log[: log.index("   268435456      67108864     float") + 40].encode()
    if kind == "missing_column":  # one cell of a matrix row lost / one column of a result row lost
        if command == "inspect":
            row = "GPU2    NV18    NV18     X      NV18    NV18    NV18    NV18    NV18    NODE"
            return matrix.replace(row, row.replace("NV18    NODE", "NODE", 1)).encode()
        one = CASE_01.read_text()
        return one.replace("  1139.2  235.63  412.35", "  1139.2  235.63").encode()
    if kind == "garbage":
        lines = log.split("\n")
        lines.insert(4, "\x00 junk")
        return "\n".join(lines).encode().replace(b"\x00 junk", b"\xff\xfe\x00\x80 junk")
    if kind == "unknown_collective":
        return log.replace("all_reduce_perf_mpi -b 8 -e 16g", "foo_perf -b 8 -e 16g").encode()
    return b""


COMMANDS = {
    "inspect": ("inspect",),
    "compare": ("nccl-tests", "compare"),
    "calibrate": ("calibrate",),
}


@pytest.mark.parametrize("kind", ["truncated", "missing_column", "garbage", "unknown_collective", "empty"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_damaged_input_is_one_line_with_a_line_number(tmp_path: Path, kind: str, command: str) -> None:
    path = tmp_path / f"{kind}.txt"
    path.write_bytes(_damaged(kind, command))
    r = run(*COMMANDS[command], path)
    assert r.exit_code == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert re.match(rf"error: {re.escape(str(path))}:\d+: ", lines[0]), lines[0]
    assert "Traceback" not in r.stdout + r.stderr
    if kind == "empty":
        assert ":1: the file is empty" in lines[0]
    if kind == "garbage":
        assert ":5: not UTF-8" in lines[0]
    if kind == "unknown_collective" and command != "inspect":
        assert "'foo_perf' is not an nccl-tests binary" in lines[0]
