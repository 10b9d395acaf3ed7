"""An ML-infrastructure engineer's trial (session 15): common training setups run through ``train`` and
``plan`` on presets and on ``examples/cluster.yaml`` with its accelerator swapped, each figure checked by
hand (6 N D FLOPs, Korthikanti's activation memory, ZeRO's memory, the pipeline bubble) or against a run
that differs in one physical quantity. Each test is one defect; its docstring holds the call, what it gave
and the derivation of what it must give."""

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app

from .commands import EXAMPLE, result_json

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def swapped_cluster(tmp_path: Path, accelerator: str, nodes: int, **top: object) -> str:
    """``examples/cluster.yaml`` (non-blocking, 1:1) with ``accelerator`` on ``nodes`` nodes and the top-level
    fields ``top`` replaced; returns its path."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec.update(name=f"{accelerator}-x{nodes}", accelerator=accelerator, nodes=nodes, **top)
    spec["scale_out"]["oversubscription"] = ["1:1"]
    path = tmp_path / f"{accelerator}-x{nodes}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_a_job_the_h100s_80_gib_hold_is_not_refused_for_memory():
    """``aifabric train -m llama3-8b --nodes 1 --zero 2 --seq-len 10240`` exits 2: "needs 83.2 GB per GPU:
    weights 16.1 GB, grads 4 GB, optimizer 12 GB, activations 51.1 GB; the GPU has 80 GB". The H100 SXM5
    80GB holds 80 GiB of HBM3 (five 16 GiB stacks): ``nvidia-smi`` on it prints "0MiB / 81559MiB"
    (NVIDIA/nccl issue #1264, an HGX H100 SXM), 81,559 MiB = 85.52e9 bytes, the figure CUDA's
    ``cudaMemGetInfo`` total gives (modal-labs/modal-client PR #2797: "85520809984 bytes or 85.5 GB on
    H100"). ``accelerators.yaml`` reads the datasheet's "80GB" as 80e9 bytes ("decimal GB as stated"),
    though its own host-memory note says DRAM sizes are binary: every H100 job between 80.0 and 85.5 GB
    of the product's own estimate (6.9 % of the card) is refused, and ``plan`` drops those layouts. 83.2 GB
    leaves 2.3 GB for the CUDA context on a card that holds 85.52 GB."""
    r = runner.invoke(app, ["train", "-m", "llama3-8b", "--nodes", "1", "--zero", "2", "--seq-len", "10240"])
    assert r.exit_code == 0, r.stderr[-400:]


def test_an_mi325x_runs_no_faster_than_its_gemm_rate_over_the_mi300xs_same_die(tmp_path):
    """``aifabric train -m llama3-8b -c CLUSTER -B 256`` on examples/cluster.yaml's network with 8 x 8
    MI300X (Infinity Fabric scale-up): 3.357 s; the same with MI325X: 2.703 s, 1.242x faster. The two share
    the CDNA 3 die: the same 304 CUs and 1,307.4 TFLOPS dense BF16 (accelerators.yaml, both datasheets). What
    differs is measured in compute.yaml: MAMF GEMM 784.9 vs 668.4 TFLOP/s (1.174x, the MI325X at 1000 W)
    and HBM 6.0 vs 5.3 TB/s (1.132x). No part of the step can gain more than the larger of these, 1.174x.
    The rest comes from the attention core: MI300X runs it at FlashAttention-2's measured 25.1 % of peak
    (Azure ND MI300X v5), MI325X has no ``attention_efficiency`` so its attention runs at its GEMM rate,
    60.0 % of peak: 2.4x faster on the same matrix cores with the same kernels. At 65,536 tokens (``--cp 4
    -B 16 --seq-len 65536``) the gap reaches 1.340x. A part reusing a measured die should take that die's
    attention measurement (as h800-sxm takes the H100's), or be bounded by it."""
    link = {"scale_up": {"kind": "nvswitch", "link": "infinity-fabric-mi300"}}
    steps = {}
    for acc in ("mi300x", "mi325x"):
        cluster = swapped_cluster(tmp_path, acc, 8, **link)
        steps[acc] = result_json(["train", "-m", "llama3-8b", "-c", cluster, "-B", "256"])["step_s"]
    gemm_ratio = 784.9 / 668.4  # compute.yaml: MAMF MI325X / MI300X, the larger of the two measured ratios
    assert steps["mi300x"] / steps["mi325x"] <= gemm_ratio * 1.01, steps


def test_the_bubble_printed_on_the_step_line_is_a_share_of_the_step():
    """``aifabric train -m llama3-70b --nodes 8 --tp 8 --pp 8 -B 4 -b 1 --recompute full`` prints "step
    1.966 s ... 4 microbatches, bubble 175.0%" and, three lines below, the critical-path table's "bubble
    1.2432 s, 63.2 %". 1.2432 / 1.966 = 63.2 %, and 1F1B's bubble over the step is (p - 1) / (m + p - 1) =
    7 / 11 = 63.6 % (Narayanan et al. SC'21 Sec. 2.2.1). The step line prints (p - 1) / (v m) = 7 / 4, the
    ratio of bubble time to ideal compute time, under the same word "bubble" with no qualifier: no share of
    a step exceeds 100 %, and one output states two different bubble percentages for one run."""
    args = ["train", "-m", "llama3-70b", "--nodes", "8", "--tp", "8", "--pp", "8", "-B", "4", "-b", "1"]
    r = runner.invoke(app, [*args, "--recompute", "full"])
    assert r.exit_code == 0, r.stderr[-400:]
    step_line = next(line for line in r.stdout.splitlines() if line.startswith("step "))
    printed = float(re.search(r"bubble ([\d.]+)%", step_line).group(1))
    assert printed <= 100.0, step_line


@pytest.mark.parametrize(
    ("job", "option"),
    [
        (["-m", "llama3-70b", "--nodes", "8", "-B", "256"], ["--zero3-prefetch", "2"]),
        (["-m", "mixtral-8x7b", "--nodes", "4", "-B", "128", "--seq-len", "4096"], ["--embedding-chunks"]),
    ],
)
def test_the_plans_winner_runs_in_train_with_the_options_the_plan_was_given(job, option):
    """``aifabric plan -m llama3-70b --nodes 8 -B 256 --zero3-prefetch 2`` names as winner "tp=4 pp=8 dp=2
    sp b=1 B=256 zero=1 recompute=none"; ``aifabric train`` with that layout and the same
    ``--zero3-prefetch 2`` exits 2: "--zero3-prefetch: applies to ZeRO-3 only, got --zero 1". Likewise
    ``plan -m mixtral-8x7b --nodes 4 -B 128 --seq-len 4096 --embedding-chunks`` wins with "tp=1 pp=1 dp=32
    ep=8 b=1 zero=2 recompute=none" and ``train`` refuses it: "--embedding-chunks: ... --pp 1 has one
    stage". ``train --help`` says "The layout is checked with the same rules as `aifabric plan`": the plan
    ranks layouts under an option that ``train`` calls inapplicable to them, so a user cannot reproduce the
    plan's own winner by copying its layout onto the command they planned with (either the plan refuses the
    option as train does, or train ignores it where the plan does)."""
    ranked = result_json(["plan", *job, *option, "--top", "1"])["ranked"][0]["layout"]
    layout = ["--tp", ranked["tp"], "--pp", ranked["pp"], "--cp", ranked["cp"], "--ep", ranked["ep"]]
    layout += ["--virtual-stages", ranked["virtual_pipeline_stages"], "--zero", ranked["zero_stage"]]
    layout += ["-b", ranked["microbatch_size"], "--recompute", ranked["recompute"]]
    layout += ["--sp" if ranked["sequence_parallel"] else "--no-sp"]
    r = runner.invoke(app, ["train", *job, *option, *map(str, layout)])
    assert r.exit_code == 0, r.stderr[-300:]


def test_a_slice_at_odds_with_the_nodes_asked_is_refused_not_chosen_silently():
    """``aifabric train -m llama3-8b -c tpu-v5e-pod --nodes 4 --slice 8x8 --zero 3 --recompute full -B 64
    --json`` exits 0 with ``n_gpus`` 64: the 8x8 slice, and nothing on stdout or stderr says ``--nodes 4``
    was dropped. ``--nodes 4`` alone gives 32 chips (4 hosts x gpus_per_node 8: the 4x8 slice,
    ``job_slice``'s "most cube-like slice of nodes x gpus_per_node chips"), so the two options ask for
    different jobs, 32 and 64 chips, and ``job_slice`` takes ``--slice`` and never reads ``nodes``. README:
    input "at odds with another" is refused, exit 2, one line naming the field and the value."""
    args = ["train", "-m", "llama3-8b", "-c", "tpu-v5e-pod", "--nodes", "4", "--slice", "8x8"]
    r = runner.invoke(app, [*args, "--zero", "3", "--recompute", "full", "-B", "64", "--json"])
    if r.exit_code == 0:
        out = json.loads(r.stdout)
        assert (out[0] if isinstance(out, list) else out)["n_gpus"] == 4 * 8, "--nodes 4 dropped for --slice"
    else:
        assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "--nodes" in r.stderr and "--slice" in r.stderr, r.stderr
