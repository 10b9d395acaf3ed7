"""Physics defects a trial of calibration profiles, fabric sizing and announcements found: each test runs
one command; its docstring holds the command, what it printed and what the physics (or the cited source)
says it should do."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app

from .commands import EXAMPLE, result_json

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: Case 01 (NVIDIA/nccl-tests #290): 8 x H100 SXM, all_reduce_perf 128 MB .. 4 GB, NVLS.
CASE_01 = Path(__file__).parents[1] / "discovery" / "data" / "case_01_dgx_h100_allreduce_single_node.txt"


def _profile(tmp_path: Path, intra_scale: float) -> str:
    """``aifabric calibrate`` on case 01 (it fits intra_scale 0.995), the scale then set to ``intra_scale``
    inside the box the loader accepts (discovery/calibrate.py FIT_BOUNDS: 0.2..5)."""
    out = tmp_path / "cal.yaml"
    r = runner.invoke(app, ["calibrate", str(CASE_01), "-o", str(out)])
    assert r.exit_code == 0, r.stdout + r.stderr
    prof = yaml.safe_load(out.read_text())
    prof["intra_scale"] = intra_scale
    out.write_text(yaml.safe_dump(prof))
    return str(out)


def test_a_calibrated_nvlink_never_runs_above_its_line_rate(tmp_path):
    """A profile from ``aifabric calibrate case_01.txt -o cal.yaml`` with ``intra_scale: 5.0`` (inside the
    0.2..5 box the loader accepts), then ``aifabric collective all_reduce --nodes 1 --calibration cal.yaml
    -s 1GiB --no-nvls`` printed "busbw 1756.92 GB/s (ring/Simple) ... ring over 8 ranks on scale-up at
    1854.0 GB/s per GPU". H100 NVLink 4 carries 450 GB/s each way (datasheet: 900 GB/s both ways), so a
    ring's busbw cannot exceed it; discovery/calibrate.py says the bandwidth scale is "further capped at line
    rate per cluster", and here it is not."""
    prof = _profile(tmp_path, 5.0)
    args = ["collective", "all_reduce", "--nodes", "1", "--calibration", prof, "-s", "1GiB", "--no-nvls"]
    out = result_json(args)
    assert out["busbw_bytes_per_s"] <= 450e9, out["busbw_bytes_per_s"]


def _leaf_ports_needed(shown: dict) -> float:
    """Ports each scale-out leaf uses: its NICs down plus as many up at 1:1 (examples/cluster.yaml)."""
    leaves = next(p["count"] for p in shown["parts"] if p["part"].startswith("leaf:"))
    return 2 * shown["gpus"] / leaves


def test_a_radix_above_the_switch_ports_is_refused(tmp_path):
    """examples/cluster.yaml at 1:1 with ``scale_out.radix: 1000`` (its leaf is the Spectrum-4 SN5600, 128 x
    400GbE: catalogue switches.yaml, NVIDIA SN5600 datasheet) is accepted: ``aifabric cluster show r.yaml
    --nodes 128`` built 1,024 GPUs on 8 leaves, 128 NICs down and 128 uplinks each: 256 ports on a 128-port
    switch. ``uplink_speed`` is already checked against every tier's switch port; a radix the named switch
    does not have must be refused (exit 2 naming radix), or the Clos built from ports that exist."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["scale_out"].update({"oversubscription": ["1:1"], "radix": 1000})
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(spec))
    r = runner.invoke(app, ["cluster", "show", str(path), "--nodes", "128", "--json"])
    if r.exit_code == 2:
        assert "radix" in r.stderr, r.stderr
        return
    assert r.exit_code == 0, r.stdout + r.stderr
    assert _leaf_ports_needed(json.loads(r.stdout)) <= 128


def test_an_announced_per_server_rate_is_checked_against_the_node():
    """``aifabric announcement "3.2 Tb/s per node" -c dgx-h100-superpod`` answered "cannot verify: no
    modelled bandwidth figure is within 5%". A DGX H100 has eight single-port ConnectX-7 of 400 Gb/s for its
    compute fabric (NVIDIA DGX H100 datasheet), 8 x 400 = 3.2 Tb/s per node: the claim is the preset's own
    scale-out rate per node, which the checker has (scale-out per GPU x 8) but does not offer."""
    r = runner.invoke(app, ["announcement", "3.2 Tb/s per node", "-c", "dgx-h100-superpod", "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    claim = json.loads(r.stdout)[0]
    assert claim["status"] == "matches", claim


def test_spreading_a_job_over_sites_never_makes_its_all_reduce_faster():
    """``aifabric scale-across --nodes 2048 --sites 8 --distance "50 km" --dci "100 Tb/s" --message "140 GB"``
    printed "all-reduce 140 GB: 762.7 ms = in-site 738.8 ms + cross-site 23.92 ms" and "in one site it would
    take 769.8 ms: DP across the sites costs -7.018 ms per step" (64 sites 1 km apart: -33.48 ms). The same
    16,384 GPUs in one site have every link the split has, a non-blocking fabric in place of an 8.2:1
    oversubscribed DCI and no 3.5 ms of fibre; one site can run the very same site-by-site reduction over
    its own fabric, so the split can only cost time: total_s >= single_site_s, dp_step_cost_s >= 0."""
    args = ["scale-across", "--nodes", "2048", "--sites", "8", "--distance", "50 km", "--dci", "100 Tb/s"]
    out = result_json([*args, "--message", "140 GB"])
    assert out["total_s"] >= out["single_site_s"], out
    assert out["dp_step_cost_s"] >= 0, out
