"""``aifabric inspect`` on an ``nvidia-smi topo -m`` copied from a job log (issue 9).

Each line of case 26 (``nvidia-smi topo -m`` of a 8 x A30 PCIe node with 2 NICs, NVIDIA/nccl#1084) gets the
timestamp or launcher tag a job log puts in front; the node read must be the one the plain file gives. The
forms are those ``nccl-tests compare`` already strips (:func:`aifabric.discovery._text.clean_line`):
Open MPI ``--tag-output``, MPICH ``-prepend-rank``, Slurm ``srun -l``, an ISO 8601 timestamp, and a
timestamp followed by a tag.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.discovery.node import detect_format, inspect_node_text
from aifabric.discovery.nvsmi import TopoMatrix

CASE_26 = Path(__file__).parent / "data" / "case_26_a30_pcie_two_nics_phb_no_pcie_switch.txt"
PREFIXES = (
    "[1,0]<stdout>:",
    "[0] ",
    "0: ",
    "2025-01-02T03:04:05.123Z ",
    "2025-01-02T03:04:05.123Z [1,0]<stdout>:",
)


def _prefixed(prefix: str) -> str:
    return "\n".join(prefix + line for line in CASE_26.read_text(encoding="utf-8").split("\n"))


@pytest.mark.parametrize("prefix", PREFIXES)
def test_prefixed_matrix_reads_as_the_plain_one(prefix: str) -> None:
    plain = inspect_node_text(CASE_26.read_text(encoding="utf-8"), gpu="a30")
    text = _prefixed(prefix)
    assert detect_format(text) == "nvidia-smi"
    node = inspect_node_text(text, gpu="a30")
    assert [n.to_dict() for n in node] == [n.to_dict() for n in plain]
    # Case 26 as the reporter printed it: 8 GPUs, 2 NICs, NIC0 PHB to GPU1 only, NIC1 PHB to GPU6 only.
    m = TopoMatrix.from_text(text)
    assert (len(m.gpus), m.nics) == (8, ("NIC0", "NIC1"))
    assert m.path_type("GPU1", "NIC0") == "PHB" and m.path_type("GPU6", "NIC1") == "PHB"
    assert m.path_type("GPU0", "NIC0") == "SYS"


@pytest.mark.parametrize("prefix", PREFIXES)
def test_cli_inspect_prefixed_matrix(tmp_path: Path, prefix: str) -> None:
    runner = CliRunner()
    path = tmp_path / CASE_26.name
    path.write_text(_prefixed(prefix), encoding="utf-8")
    prefixed = runner.invoke(app, ["inspect", str(path), "--gpu", "a30"])
    plain = runner.invoke(app, ["inspect", str(CASE_26), "--gpu", "a30"])
    assert prefixed.exit_code == 0, prefixed.stderr
    assert prefixed.stdout.replace(str(path), str(CASE_26)) == plain.stdout
