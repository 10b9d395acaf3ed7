"""Defects of the new-user trial 12 (refusals, impossible measurements, silent work), each with the command
that showed it, what it printed and what it does now."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli.refusal import refused
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.engines.fabric import MAX_PAIRS_ROUTED

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

PUBLIC = Path(__file__).parents[1] / "discovery" / "data" / "public"


# -- a protocol setting that leaves nothing --------------------------------------------------------------


def test_nccl_proto_that_leaves_nothing_names_nccl_proto():
    """``aifabric collective all_reduce -s 1GiB --env NCCL_PROTO=^LL,LL128,Simple`` printed
    ``error: --algo: no algorithm/protocol left for all_reduce (asked None/None)``: it names --algo, which was
    not given, and prints Python's None. Expected: exit 2, one line naming NCCL_PROTO and that it disables
    every protocol (as NCCL_ALGO's refusal does)."""
    args = ["collective", "all_reduce", "-s", "1GiB", "--env", "NCCL_PROTO=^LL,LL128,Simple"]
    line = refused(args, "NCCL_PROTO")
    assert "None" not in line
    assert "--algo" not in line


def test_nccl_proto_left_empty_by_the_transports_names_its_value():
    """``NCCL_PROTO=LL128`` across two nodes without GPUDirect RDMA (``NCCL_NET_GDR_LEVEL=LOC``): NCCL's
    tuner runs no LL128 across nodes then (tuning.cc, typeInter > PXB), so nothing is left; the line names
    NCCL_PROTO with its value and the protocols left, never Python's None."""
    args = ["collective", "all_reduce", "-s", "1GiB", "-c", "h100-ib-2node", "--nodes", "2"]
    args += ["--env", "NCCL_PROTO=LL128", "--env", "NCCL_NET_GDR_LEVEL=LOC"]
    line = refused(args, "NCCL_PROTO=LL128")
    assert "None" not in line


# -- measurements faster than the hardware ----------------------------------------------------------------

IMPOSSIBLE_LOG = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1
#
# Using devices
#  Rank  0 Group  0 Pid  1 on node1 device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  2 on node1 device  1 [0x1b] NVIDIA H100 80GB HBM3
#
#                                                     out-of-place                       in-place
#    size       count   type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#     (B)  (elements)                            (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
 1073741824  268435456  float    sum      -1   2911.0  368.86  368.86      0   2911.0  368.86  368.86      0
 2147483648  536870912  float    sum      -1    100.0 21474.84 21474.84     0    100.0 21474.84 21474.84     0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 10921
"""


def test_a_measurement_faster_than_nvlink_is_not_healthy(tmp_path):
    """``aifabric nccl-tests compare nt2.log --collective all_reduce`` on a 2-GPU H100 log whose 2 GiB row
    reads 21,474.84 GB/s busbw (100 us) printed ``verdict: healthy``, exit 0. Each of two ranks receives its
    2 GiB result at most at its links' line rate: NVLink 4's 450 GB/s plus its 400 Gb/s NIC's 50 GB/s per
    direction, so busbw <= 500 GB/s (x 2 (n-1)/n = 1 for two ranks). Now: verdict above_links, with the
    row's line (11) and the 500 GB/s bound; the 1 GiB row at 368.86 GB/s stays within it."""
    path = tmp_path / "nt2.log"
    path.write_text(IMPOSSIBLE_LOG)
    r = runner.invoke(app, ["nccl-tests", "compare", str(path), "--collective", "all_reduce"])
    assert r.exit_code == 0, r.stderr
    assert "verdict: healthy" not in r.stdout, r.stdout
    assert "verdict: above_links" in r.stdout, r.stdout
    assert "line 11: 2147483648 B: busbw 21474.84 GB/s, above the links' 500 GB/s" in r.stdout, r.stdout
    args = ["nccl-tests", "compare", str(path), "--collective", "all_reduce", "--json"]
    doc = json.loads(runner.invoke(app, args).stdout)
    table = doc["tables"][0]
    assert [f["cause"] for f in table["findings"]] == ["above_links"]
    assert table["findings"][0]["rows"] == 1 and table["findings"][0]["side"] == "above"


def test_a_row_at_one_percent_of_the_model_is_not_healthy_for_being_mid_size():
    """``aifabric nccl-tests compare sendrecv_uint8_gtx1080_two_runs.log`` (NVIDIA/nccl-tests #104): its
    only row, 36 MB at 3.22 GB/s, is -99 % of the model, and was called ``ramp`` (mid-size) with ``verdict:
    healthy``. The ramp explains a mid-size row tens of per cent below a plateau the run reaches (383 of
    474 GB/s at 128 MB, NVIDIA/nccl-tests #290); a run whose largest row is that row reaches none. Now:
    not healthy, the row flagged."""
    r = runner.invoke(app, ["nccl-tests", "compare", str(PUBLIC / "sendrecv_uint8_gtx1080_two_runs.log")])
    assert r.exit_code == 0, r.stderr
    assert "verdict: healthy" not in r.stdout, r.stdout
    assert "FLAG" in r.stdout, r.stdout


# -- work that runs for minutes without a word ------------------------------------------------------------


def test_a_large_fabric_all_to_all_is_refused_or_answers():
    """``aifabric fabric all_to_all --nodes 1024`` (8,192 GPUs, flow engine, ECMP) was still running after
    120 s (518 MB), with no output; ``--nodes 2048`` likewise (842 MB). ``--nodes 512`` takes ~21 s and
    ``aifabric collective all_to_all --nodes 2048 --engine flow`` answers in ~13 s. Expected: exit 2, one line
    naming the all-to-all's transfer count and pointing to the formula engine (as ``sweep --max-points``
    refuses a grid counted first), or an answer; never minutes of silence. The timeout below only guards the
    suite against the hang; the assertion is on the exit code."""
    cmd = [sys.executable, "-c", "from aifabric.cli.app import main; main()"]
    cmd += ["fabric", "all_to_all", "--nodes", "1024"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("fabric all_to_all --nodes 1024 neither refused nor answered in 120 s")
    assert r.returncode in (0, 2), r.stderr


@pytest.mark.parametrize(
    ("extra", "needles"),
    [
        # 8,192 ranks: 67,100,672 pairs routed one by one under ECMP, 4x the bound
        ([], ("--nodes", "67,100,672 pairs", f"{MAX_PAIRS_ROUTED:,}", "--engine formula", "--routing spray")),
        # 4,096 ranks: within the bound under ECMP, but 4 sub-flows per pair under qp
        (["--nodes", "512", "--routing", "qp"], ("--nodes", "16,773,120 pairs of 4 routes")),
    ],
)
def test_an_all_to_all_routed_pair_by_pair_is_refused_above_its_bound(extra, needles):
    """``fabric all_to_all`` under a per-pair policy routes every pair (~1.2 us each): refused at once,
    naming --nodes, the pairs, the bound and what answers instead."""
    args = ["fabric", "all_to_all", "--nodes", "1024", *extra]
    refused(args, *needles)


def test_an_adaptive_all_to_all_is_refused_before_its_pairs_exist():
    """``fabric all_to_all --nodes 2048 --routing adaptive`` (268M pairs) built every pair array before its
    memory check (1.8 GB at 512 nodes before the refusal); now the check counts them from the ranks first."""
    line = refused(["fabric", "all_to_all", "--nodes", "2048", "--routing", "adaptive"], "--nodes")
    assert "268,419,072" in line and "memory" in line


def test_collective_all_to_all_routed_pair_by_pair_is_refused_above_its_bound():
    """``collective all_to_all --engine flow --routing ecmp`` routes pairs as ``fabric`` does: same bound."""
    args = ["collective", "all_to_all", "--nodes", "1024", "--engine", "flow", "--routing", "ecmp"]
    refused(args, f"{MAX_PAIRS_ROUTED:,}")


# -- the transport inside a GeForce node --------------------------------------------------------------------


def test_a_geforce_node_names_shm_and_why(tmp_path):
    """A node of 8 RTX 4090s runs NCCL's SHM transport (the GeForce driver exposes no peer-to-peer); the
    explanation said ``ring over 8 ranks on scale-up at 19.2 GB/s`` without naming it. Now it names SHM and
    the reason."""
    path = tmp_path / "box.yaml"
    path.write_text("name: box\nnodes: 1\ngpus_per_node: 8\naccelerator: rtx-4090\nscale_up:\n  kind: pcie\n")
    r = runner.invoke(app, ["collective", "all_reduce", "-c", str(path), "-s", "1GiB", "--json"])
    assert r.exit_code == 0, r.stderr
    why = json.loads(r.stdout)[0]["explanation"]
    assert "SHM through host memory" in why and "peer-to-peer" in why, why
