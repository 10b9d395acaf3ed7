"""A model-reading defect a new-user trial found (session 9): ``inspect`` of an ``nvidia-smi topo -m`` matrix
whose NV# count differs from the catalogue GPU the matrix is taken for; the docstring holds the command,
what it printed and what the product should do."""

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def _nv8_topo() -> str:
    """``nvidia-smi topo -m`` of an 8-GPU NVSwitch board with NV8 between every pair (H800 SXM: 8 NVLink 4
    links, 400 GB/s), one PIX NIC per GPU, two sockets."""
    head = "\t" + "\t".join([f"GPU{g}" for g in range(8)] + [f"NIC{n}" for n in range(8)])
    rows = [head + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"]
    for g in range(8):
        peers = [" X " if h == g else "NV8" for h in range(8)]
        nics = ["PIX" if n == g else ("NODE" if n // 4 == g // 4 else "SYS") for n in range(8)]
        rows.append("\t".join([f"GPU{g}", *peers, *nics, "0-55" if g < 4 else "56-111", str(g // 4), "N/A"]))
    for n in range(8):
        gpus = ["PIX" if g == n else ("NODE" if n // 4 == g // 4 else "SYS") for g in range(8)]
        nics = [" X " if m == n else ("NODE" if n // 4 == m // 4 else "SYS") for m in range(8)]
        rows.append("\t".join([f"NIC{n}", *gpus, *nics]))
    rows += ["", "NIC Legend:", ""] + [f"  NIC{n}: mlx5_{n}" for n in range(8)]
    return "\n".join(rows) + "\n"


def test_inspect_models_the_nvlinks_the_matrix_shows(tmp_path):
    """``aifabric inspect h800.txt`` (8 GPUs, NV8 between every pair, no --gpu) printed "modelled as h100-sxm
    (assumed)", "assumed: the matrix shows NV8 but h100-sxm has 18 links: modelled with the catalogue's" and
    "one node, NCCL_ALGO=Ring: 369.78 GB/s", "NCCL default: 478.12 GB/s": 18 links where the matrix counts 8.
    The catalogue has h800-sxm with ``nvlink_links: 8`` (NVIDIA H800 product brief: 400 GB/s); eight links
    at NCCL's 20.6 GB/s each carry at most 164.8 GB/s of ring busbw, and NVIDIA/nccl #1374 measured 215 GB/s
    all_reduce busbw on 8 x H800 (NVLS). ``--gpu a100-sxm-80gb`` with NV18 is refused for the opposite
    mismatch. Expected: the one-node ring figure within 8 links (<= 1.01 x 8 x 20.6 GB/s)."""
    path = tmp_path / "h800.txt"
    path.write_text(_nv8_topo())
    out = runner.invoke(app, ["inspect", str(path), "--json"])
    assert out.exit_code == 0, out.stderr
    data = json.loads(out.stdout)
    data = data[0] if isinstance(data, list) else data
    ring = next(e for e in data["expected_busbw"] if e["label"] == "one node, NCCL_ALGO=Ring")
    assert ring["busbw_bytes_per_s"] <= 1.01 * 8 * 20.6e9, (data["accelerator"], ring)
