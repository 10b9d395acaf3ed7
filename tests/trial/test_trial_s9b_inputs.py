"""Input defects a trial of "the other half" found (logs as Windows writes them, presets the storage
model cannot read): each test runs one command; its docstring holds the command, what it printed and what
it should do."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: The nccl-tests table of case 01 (NVIDIA/nccl-tests #290: 8 x H100 SXM, all_reduce_perf, 128 MB .. 4 GB).
CASE_01 = Path(__file__).parents[1] / "discovery" / "data" / "case_01_dgx_h100_allreduce_single_node.txt"


def _case_01_table() -> str:
    """Case 01's nccl-tests output as the run printed it (the lines after its RAW DATA marker)."""
    text = CASE_01.read_text()
    raw = text.split("=== RAW DATA", 1)[1].split("\n", 1)[1]
    return raw.split("\n\n", 1)[0]


def test_a_log_saved_by_windows_powershell_is_read(tmp_path):
    """A log redirected with ``>`` in Windows PowerShell 5.1 (its default ``Out-File`` encoding is "Unicode":
    UTF-16LE with the byte-order mark FF FE, Microsoft Learn, about_Character_Encoding) and CRLF line ends.
    ``aifabric nccl-tests compare run.log -c dgx-h100-superpod --nodes 1`` printed "run.log:1: not UTF-8
    text (invalid start byte at byte 0)" and exit 2, while the same table in UTF-8 with a BOM and CRLF is
    read (verdict healthy). The BOM names the encoding without doubt; the README says logs are read "as they
    are pasted". The table is case 01's (NVIDIA/nccl-tests #290)."""
    text = _case_01_table().replace("\n", "\r\n") + "\r\n"
    log = tmp_path / "run.log"
    log.write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    r = runner.invoke(app, ["nccl-tests", "compare", str(log), "-c", "dgx-h100-superpod", "--nodes", "1"])
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "4 GiB" in r.stdout, r.stdout


def test_a_tpu_pod_checkpoints_over_its_data_centre_network():
    """``aifabric checkpoint tpu-v5p-pod -m llama3-70b --storage weka --storage-units 2`` printed
    "error: front_end: this cluster has no front-end NICs to reach storage" (exit 2). The preset's own
    description gives each chip "a data-centre network (DCN) of 50 Gb/s" (Cloud TPU v5p docs) and ``aifabric
    ladder tpu-v5p-pod`` prices it (DCN 6.25 GB/s per chip, 160 ms per GB): TPU hosts write checkpoints to
    storage over that DCN (Orbax to Cloud Storage). A pod whose hosts have a network must get a write time
    bounded by that network (at most 8,960 x 6.25 GB/s), not a refusal.

    WEKA publishes no write bandwidth (catalogue storage.yaml; the same command on dgx-h100-superpod is
    refused for it, tests/storage/test_checkpoint.py), so the storage here is DDN's AI400X2 Turbo, whose
    per-appliance figures are published. Each 4-chip host's DCN is 4 x 6.25 GB/s = 25 GB/s per direction."""
    args = ["checkpoint", "tpu-v5p-pod", "-m", "llama3-70b", "--storage", "ddn-ai400x2-turbo"]
    r = runner.invoke(app, [*args, "--storage-units", "2"])
    assert r.exit_code == 0, r.stdout + r.stderr
    # enough appliances that the file system is not the limit: the host's DCN is, at 25 GB/s
    wide = runner.invoke(app, [*args, "--storage-units", "4000", "--json"])
    assert wide.exit_code == 0, wide.stdout + wide.stderr
    write = json.loads(wide.stdout)["write"]
    assert write["rate_bytes_per_s"] == pytest.approx(4 * 50e9 / 8), write
    assert write["seconds"] >= write["bytes_per_node"] / (4 * 6.25e9) * (1 - 1e-12), write
