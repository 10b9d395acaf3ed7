"""Input defects a fresh-machine trial of the main commands found: each test runs one command with one bad
value; its docstring holds the command, what it printed and what it should do (README: bad input exits 2
with one line on stderr naming the field and the value, never a traceback, and a result is never printed
as a non-finite number)."""

import re

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

SCALE_ACROSS = ["scale-across", "--nodes", "2048", "--distance", "50 km", "--dci", "100 Tb/s"]


def test_a_launch_cost_that_overflows_the_call_time_is_refused_naming_it():
    """``aifabric collective all_reduce -c h100-ib-2node --size 1GiB --gpus-per-thread 8 --launch-us 1e308``
    exits 0 and prints "time inf us, algbw 0.00 GB/s, busbw 0.00 GB/s" (8 x 1e308 us = 8e302 s, which is
    finite in --json but overflows to inf when printed in microseconds). README gives the host's per-GPU
    launch cost as 3.2-6.1 us in public logs; a cost no host has must exit 2 naming --launch-us and the value
    (as --launch-us -4 does), and no result may be printed as "inf"."""
    args = ["collective", "all_reduce", "-c", "h100-ib-2node", "--size", "1GiB", "--gpus-per-thread", "8"]
    r = runner.invoke(app, [*args, "--launch-us", "1e308"])
    out = r.stdout + r.stderr
    assert "inf us" not in out, out[:400]
    assert r.exit_code == 2, out[:400]
    assert "--launch-us" in r.stderr and "1e" in r.stderr, r.stderr


def test_a_scale_across_message_larger_than_any_gpu_memory_is_refused():
    """``aifabric scale-across --nodes 2048 --distance "50 km" --dci "100 Tb/s" --message "1e30 GB"`` exits 0
    and prints "all-reduce 1e30 GB: 5.169e+27 s". --message is the all-reduce size per GPU, and every other
    per-rank message (collective/fabric/export --size, transport --size) refuses one above 1 TiB, "more than
    any GPU's memory (288 GB HBM on B300/MI355X, 624 GB on GH200 ...), where a rank's message must fit".
    scale-across must refuse it the same way: exit 2, one line naming --message and the value."""
    r = runner.invoke(app, [*SCALE_ACROSS, "--message", "1e30 GB"])
    assert r.exit_code == 2, (r.stdout + r.stderr)[:400]
    assert "--message" in r.stderr and "1e30 GB" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_negative_scale_across_message_is_refused_with_the_bound_that_holds():
    """``aifabric scale-across ... --message "-140 GB"`` exits 2 with "--message: size must be >= 0 bytes,
    got '-140 GB'", yet ``--message "0 GB"`` is refused too ("'0 GB' is no data; give a size > 0"): the
    first line states a bound the command does not accept. The refusal must state the bound it applies
    (> 0), as collective --size does ("a message must be > 0 bytes")."""
    r = runner.invoke(app, [*SCALE_ACROSS, "--message", "-140 GB"])
    assert r.exit_code == 2, r.stdout
    assert "--message" in r.stderr and "-140 GB" in r.stderr, r.stderr
    assert ">= 0" not in r.stderr, r.stderr


def test_a_global_batch_no_run_takes_is_refused_or_printed_in_full():
    """``aifabric plan -m llama3-8b --nodes 2 -B 99999999999999999999999`` exits 0 and its table prints the
    step time cut to "67511281699…" s (6.75e17 s) and the layout to "B=999999999…", so the figures read as
    other numbers; ``train ... -B 100000000000000000000000`` exits 0 with "step 7827058895936175472640.000
    s". 1e23 sequences of 8,192 tokens are 8.2e26 tokens per step, 5e13 times Llama 3's whole 15.6T-token
    pre-training (Dubey et al. 2024, Sec. 3.1). --nodes above 16,777,216 and --size above 1 TiB exit 2; a
    global batch of this size must exit 2 with one line naming -B/--global-batch, or every figure of the
    table must be printed whole (no number cut by an ellipsis)."""
    r = runner.invoke(app, ["plan", "-m", "llama3-8b", "--nodes", "2", "-B", "99999999999999999999999"])
    if r.exit_code == 2:
        assert "global-batch" in r.stderr or "-B" in r.stderr, r.stderr
    else:
        assert r.exit_code == 0, (r.stdout + r.stderr)[-400:]
        assert not re.search(r"\d…", r.stdout), r.stdout[:1200]


def test_a_topo_matrix_with_more_nvlinks_than_any_gpu_has_is_not_modelled_silently(tmp_path):
    """``aifabric inspect topo.txt`` on a 2-GPU ``nvidia-smi topo -m`` matrix whose pair reads ``NV99``
    exits 0, prints "NVLink group GPU0+GPU1: 1 pairs, NV99; full mesh (NVSwitch)" and models the node as
    h100-sxm's full 18 links (370.31 GB/s busbw) without a word on the 99. No GPU has more than 18 NVLinks
    (H100 SXM and B200: 18, NVIDIA's datasheets; the catalogue's ``nvlink_links``), so the cell is malformed
    or misread. A matrix with fewer links than the GPU has already gets a note ("the matrix shows NV4 but
    h100-sxm has 18 links: modelled with the 4 links it shows"); one with more must be refused (exit 2, one
    line naming NV99) or get the same kind of note naming NV99 and the GPU's 18 links."""
    topo = tmp_path / "topo.txt"
    topo.write_text("\tGPU0\tGPU1\nGPU0\t X \tNV99\nGPU1\tNV99\t X \n")
    r = runner.invoke(app, ["inspect", str(topo)])
    if r.exit_code == 2:
        assert "NV99" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    else:
        assert r.exit_code == 0, (r.stdout + r.stderr)[-400:]
        assert re.search(r"NV99.*\b18\b", r.stdout + r.stderr), r.stdout[-1200:]


def test_a_row_whose_size_is_not_a_byte_count_is_refused_at_its_own_line(tmp_path):
    """``aifabric nccl-tests compare run.log`` on a banner, nccl-tests' column header (line 2) and one row
    (line 3) whose size reads ``1e300`` exits 2 with "run.log:2: unknown column '1e300' in the header": it
    points at the header, which is well formed, and calls the row's size a header column. The same row with
    a 41-digit size is refused at its own line, naming the size ("size '1000...0' is not a byte count"), as
    a negative time is ("negative time '-613.3'"). A size in exponent form must be refused the same way: at
    line 3, naming 1e300, not as a header column."""
    header = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
        "algbw   busbw #wrong"
    )
    row = "   1e300   33554432   float   sum   -1   613.3  218.85  382.99   0   614.3  218.48  382.34   0"
    log = tmp_path / "run.log"
    log.write_text(f"# nccl-tests all_reduce_perf\n{header}\n{row}\n")
    r = runner.invoke(app, ["nccl-tests", "compare", str(log)])
    assert r.exit_code == 2, r.stdout[:400]
    assert "run.log:3:" in r.stderr and "1e300" in r.stderr and "header" not in r.stderr, r.stderr
