"""``inspect --gpu`` refuses a GPU that cannot have the matrix's NVLink count (issue 9, trial 9 defect 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

# case_08: nvidia-smi topo -m of a GKE A4 node, NV18 between every pair of its 8 B200s
CASE_08 = Path(__file__).parent / "data" / "case_08_b200_gke_a4_topo_and_2node_allgather.txt"


@pytest.mark.parametrize(
    ("gpu", "has"),
    [
        ("a30", "a30 has no NVLink"),  # A30 datasheet: a bridge between two cards only
        ("a100-sxm-80gb", "a100-sxm-80gb has 12 NVLinks per GPU (NV12 at most)"),  # A100 datasheet: 12 links
        ("v100-sxm2-32gb", "v100-sxm2-32gb has 6 NVLinks per GPU (NV6 at most)"),  # V100 datasheet: 6 links
    ],
)
def test_a_gpu_without_the_matrix_nvlinks_is_refused(gpu: str, has: str) -> None:
    result = CliRunner().invoke(app, ["inspect", str(CASE_08), "--gpu", gpu])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and f"--gpu: {has}, but the matrix" in lines[0], lines
    assert "shows NV18 (18 NVLinks) between GPUs" in lines[0]


@pytest.mark.parametrize("gpu", ["h100-sxm", "b200"])  # 18 NVLinks per GPU (datasheets in the catalogue)
def test_a_gpu_with_the_matrix_nvlinks_is_taken(gpu: str) -> None:
    result = CliRunner().invoke(app, ["inspect", str(CASE_08), "--gpu", gpu])
    assert result.exit_code == 0, result.output
    assert f"modelled as {gpu} (given)" in result.output
