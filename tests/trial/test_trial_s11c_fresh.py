"""Defects a new user's first hour found (README quick start on a fresh venv, then every command the README
shows with bad input): each test runs one command; its docstring holds the command, what it printed and
what it should do. The README's rule for bad input: exit 2 with one line on stderr naming the field and the
value, never a traceback, and no result a run cannot have printed as if it were one."""

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

from .commands import main_exit

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

SCALE_ACROSS = ["scale-across", "--nodes", "2048", "--message", "140 GB"]
CHECKPOINT = ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--tp", "8", "--pp", "2"]
STORAGE = ["--storage", "ddn-ai400x2-turbo", "--storage-units", "4"]


@pytest.mark.parametrize(
    "args",
    [
        ["collective", "all_reduce", "--size", "1GiB"],
        ["checkpoint", "--params", "7e9", *STORAGE],
        ["scale-across", "--message", "140 GB"],
        ["ladder"],
        ["announcement", "72 GPUs"],
    ],
    ids=["collective", "checkpoint", "scale-across", "ladder", "announcement"],
)
@pytest.mark.parametrize("second", ["-c", "--cluster"])
def test_a_cluster_named_twice_by_its_short_option_is_refused(args, second, monkeypatch, capsys):
    """``aifabric collective all_reduce -c h100-ib-2node -c dgx-h100-superpod --size 1GiB`` exits 0 and
    times the call on dgx-h100-superpod (256 ranks): the first cluster is dropped without a word; the same
    on checkpoint, scale-across, ladder (``ladder -c tpu-v5p-pod -c gb200-nvl72`` prints gb200-nvl72's
    ladder) and announcement, and with ``-c A --cluster B``. ``ladder --cluster tpu-v5p-pod --cluster
    gb200-nvl72`` exits 2 with "-c: given 2 times ('tpu-v5p-pod', 'gb200-nvl72'); give it once", as
    ``--size 1GiB --size 2GiB`` does: the repeat check counts only the long spelling (cli/app.py
    ``repeated_option`` keeps the opts that start with "--"). A single-valued option given twice under
    any of its names must exit 2 with that one line naming both values."""
    cmd = args[:2] if args[0] == "collective" else args[:1]
    rest = args[len(cmd) :]
    argv = [*cmd, "-c", "h100-ib-2node", second, "dgx-h100-superpod", *rest]
    code, out, err = main_exit(argv, monkeypatch, capsys)
    assert code == 2, out[:400]
    assert "h100-ib-2node" in err and "dgx-h100-superpod" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_local_sgd_inner_steps_no_run_takes_are_refused():
    """``aifabric scale-across --nodes 2048 --message "140 GB" --inner-steps 99999999999999999999`` exits 0
    and prints "local SGD, sync every 99999999999999999999 steps ... the sites add 1.211e-13 ns per step".
    DiLoCo syncs every H = 500 inner steps (Douillard et al. 2023, arXiv:2311.08105, Sec. 3) and Llama 3
    405B's whole pre-training is about 1e6 steps (15.6T tokens at 4M-16M tokens per batch, Dubey et al.
    2024, Sec. 3.4): 1e20 inner steps is a run whose sites never sync, and 1e-13 ns is no time a step can
    cost. As --nodes above 16,777,216 and --message above 1 TiB, it must exit 2 with one line naming
    --inner-steps and the value."""
    r = runner.invoke(app, [*SCALE_ACROSS, "--inner-steps", "99999999999999999999"])
    assert r.exit_code == 2, r.stdout[-400:]
    assert "--inner-steps" in r.stderr and "99999999999999999999" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_claim_whose_number_is_nan_is_refused_not_dropped():
    """``aifabric announcement "72 GPUs with nan TB/s of NVLink" -c gb200-nvl72`` exits 0 and its table has
    one row, "72 GPUs matches": the NVLink claim vanishes without a word. ``"1e308 EFLOPS FP8"`` exits 2
    with "'1e308 EFLOPS FP8' is not a finite number" and ``"-130 TB/s"`` with "is negative"; a NaN is no
    more a bandwidth than those, and must be refused the same way: exit 2, one line naming 'nan TB/s'."""
    r = runner.invoke(app, ["announcement", "72 GPUs with nan TB/s of NVLink", "-c", "gb200-nvl72"])
    assert r.exit_code == 2, r.stdout[:600]
    assert "nan TB/s" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_the_gb200_nvl72_pages_own_fp8_figure_is_verified_not_left_unknown():
    """``aifabric announcement "720 PFLOPS FP8" -c gb200-nvl72 --gpus 72 --json`` answers "cannot verify:
    no modelled compute figure of FP8 is within 5% (have: FP8 peak per GPU, FP8 peak, cluster)". 720
    PFLOPS is the FP8/FP6 figure of NVIDIA's GB200 NVL72 page, quoted with sparsity, from which the
    catalogue itself derives the GPU's 5,000 TFLOPS dense (accelerators.yaml: "GB200 NVL72 page: FP8/FP6
    720 PFLOPS with sparsity per 72 GPUs; dense is half"; "360 PFLOPS FP8" matches). A vendor's headline
    figure the model holds must get a verdict: matches with 2:4 sparsity (2 x the 360 PFLOPS dense), or
    differs saying the claim is the sparse figure; not "cannot verify"."""
    r = runner.invoke(app, ["announcement", "720 PFLOPS FP8", "-c", "gb200-nvl72", "--gpus", "72", "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    row = json.loads(r.stdout)[0]
    assert row["status"] != "cannot verify", row
    assert "sparsity" in row["note"], row


@pytest.mark.parametrize("option", [["--mtbf", "1e300 h"], ["--step-time", "1e300 s"]], ids=["mtbf", "step"])
def test_a_duration_longer_than_any_run_is_refused(option):
    """``aifabric checkpoint --nodes 16 -m llama3-70b --tp 8 --pp 2 --storage ddn-ai400x2-turbo
    --storage-units 4 --mtbf "1e300 h"`` exits 0 and prints "Young/Daly interval (sync): every 1.491e+152
    s, goodput lost 0.00%"; ``--step-time "1e300 s"`` exits 0 with "the drain overlaps 0.00 training
    steps". 1e152 s is 1e134 times the age of the universe (4.35e17 s, Planck 2018); Llama 3 405B's 16K
    GPUs saw a job interruption every 3 hours (Dubey et al. 2024, Sec. 3.3.4: 466 in 54 days), the
    README's example MTBF is 2.8 h. --params 1e40 is refused naming what no cluster holds; a duration no
    run has must be refused too: exit 2, one line naming the option and the value."""
    r = runner.invoke(app, [*CHECKPOINT, *STORAGE, *option])
    assert r.exit_code == 2, r.stdout[-600:]
    assert option[0] in r.stderr and "1e300" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_gpus_per_thread_that_does_not_divide_a_nodes_ranks_is_refused():
    """``aifabric collective all_reduce -c h100-ib-2node --size 1GiB --gpus-per-thread 3 --launch-us 4.21``
    exits 0 and times 16 ranks. nccl-tests gives every thread the same -g GPUs: "The total number of ranks
    (=CUDA devices) will be equal to (number of processes)*(number of threads)*(number of GPUs per thread)"
    (nccl-tests README, Arguments), so no launch drives a node's 8 GPUs 3 to a thread. --gpus-per-thread
    99999 is already refused ("more than the 8 ranks of the call on one node"); 3 must be too: exit 2, one
    line naming --gpus-per-thread, 3 and the node's 8 ranks."""
    args = ["collective", "all_reduce", "-c", "h100-ib-2node", "--size", "1GiB"]
    r = runner.invoke(app, [*args, "--gpus-per-thread", "3", "--launch-us", "4.21"])
    assert r.exit_code == 2, r.stdout[:400]
    assert "--gpus-per-thread" in r.stderr and "3" in r.stderr and "8" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_nan_launch_cost_is_named_as_what_it_is():
    """``aifabric collective all_reduce -c h100-ib-2node --size 1GiB --gpus-per-thread 8 --launch-us nan``
    exits 2 with "Invalid value for '--launch-us': Input should be greater than or equal to 0": NaN is not
    below 0, so the line states a fault the value does not have and does not name the value. Bad input
    gets one line naming the field and the value (README; ``scale-across --distance "nan km"`` says "Input
    should be a finite number (got nan)")."""
    args = ["collective", "all_reduce", "-c", "h100-ib-2node", "--size", "1GiB", "--gpus-per-thread", "8"]
    r = runner.invoke(app, [*args, "--launch-us", "nan"])
    assert r.exit_code == 2, r.stdout[:400]
    assert "--launch-us" in r.stderr and "nan" in r.stderr.lower(), r.stderr
    assert "greater than or equal to 0" not in r.stderr, r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["fabric", "all_reduce", "--nodes", "2097152", "--jobs", "16"],
        ["train", "-m", "llama3-8b", "--nodes", "2097152", "--tp", "8", "-B", "16777216"],
        ["plan", "-m", "llama3-8b", "--nodes", "2097152", "-B", "16777216"],
        ["scale-across", "--nodes", "2097152", "--message", "140 GB"],
        ["export", "--format", "htsim", "--nodes", "2097152", "--out", "htsim"],
    ],
    ids=["fabric", "train", "plan", "scale-across", "export"],
)
def test_too_many_nodes_is_refused_naming_the_nodes_option(args, tmp_path, monkeypatch):
    """``aifabric fabric all_reduce --nodes 2097152 --jobs 16`` (and train, plan, scale-across, export with
    that --nodes) exits 2 with "scale_out.tiers: 16777216 GPUs need 16384 pods, more than a three-tier Clos
    of radix-64 cores connects (64 pods)": the line names a YAML field, not the option the user typed, and
    the default cluster names no tiers at all. ``collective all_reduce --nodes 16777216 --size 1GB`` says
    "--nodes 16777216: ...", and ``fabric all_reduce --nodes 8192 --jobs 16`` (under ``ulimit -v
    6000000``) "--nodes: routing 524,288 transfers ...": the same refusal must name --nodes (README: one
    line naming the field and the value)."""
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.stdout[-400:]
    assert r.stderr.startswith("error: --nodes"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
