"""``aifabric train`` and ``aifabric plan``: output, JSON, plot, and one-line errors with exit code 2."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()
GPT3 = ("--model", "gpt3-175b", "--cluster", "dgx-h100-superpod", "--nodes", "128")


def run(*args):
    return runner.invoke(app, list(args))


def test_train_prints_breakdown_networks_and_source(tmp_path):
    png = tmp_path / "step.png"
    r = run("train", *GPT3, "--tp", "8", "--pp", "8", "--dp", "16", "--microbatch", "1", "--global-batch", "1536",
            "--plot", str(png))  # fmt: skip
    assert r.exit_code == 0, r.stdout + r.stderr
    out = r.stdout
    assert "tp=8 pp=8 dp=16 sp b=1 B=1536 zero=1 recompute=selective" in out
    for needle in ("tokens/s", "TFLOP/s per GPU", "MFU", "bubble", "scale-up:", "scale-out:", "exposed", "hidden",
                   "reduce_scatter", "send_recv", "ml-engineering"):  # fmt: skip
        assert needle in out, needle
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_train_json_has_the_figures():
    r = run("train", *GPT3, "--tp", "8", "--pp", "8", "--microbatch", "1", "--global-batch", "1536", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["layout"]["dp"] == 16 and data["n_gpus"] == 1024
    assert sum(data["breakdown_s"].values()) == pytest.approx(data["step_s"])
    assert 0 < data["mfu"] < 1 and data["tokens_per_s"] == pytest.approx(1536 * 2048 / data["step_s"])
    assert set(data["network_s"]) == {"scale-up", "scale-out"}
    assert {c["dim"] for c in data["comms"]} >= {"tp", "pp", "dp"}


def test_plan_forced_tp16_names_scale_out(tmp_path):
    png = tmp_path / "plan.png"
    r = run("plan", *GPT3, "--global-batch", "1536", "--top", "3", "--tp", "16", "--json", "--plot", str(png))
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert len(data["ranked"]) == 3 and all(st["layout"]["tp"] == 16 for st in data["ranked"])
    cmp = data["comparison"]
    assert cmp["blamed_network"] == "scale-out" and cmp["slower_by_s"] > 0
    assert "scale-out" in cmp["text"] and data["layouts_per_s"] > 0
    assert png.exists()


def test_plan_text_says_why():
    r = run("plan", "--model", "llama3-8b", "--cluster", "dgx-h100-superpod", "--nodes", "2", "--global-batch", "64",
            "--top", "2")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert "Fastest layouts" in r.stdout and "Winner tp=" in r.stdout and "layouts/s" in r.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (("train", *GPT3, "--tp", "5", "--pp", "8"), "tp=5 does not divide n_heads=96"),
        (("train", *GPT3, "--tp", "8", "--pp", "8", "--dp", "8"), "tp x pp x dp x cp = 8 x 8 x 8 x 1 = 512, but n_gpus = 1024"),
        (("train", *GPT3, "--tp", "8", "--pp", "8", "--global-batch", "1000", "--microbatch", "4"),
         "global_batch_size=1000 is not divisible by microbatch_size x dp = 4 x 16 = 64"),
        (("train", *GPT3, "--tp", "1", "--pp", "1", "--global-batch", "1024", "--recompute", "none"),
         "the GPU has 80 GB"),
        (("train", "--model", "no-such-model"), "no preset named 'no-such-model'"),
        (("plan", *GPT3, "--tp", "5"), "tp=5 does not divide n_heads=96"),
        (("plan", "--model", "gpt3-175b", "--nodes", "1", "--global-batch", "8"), "no feasible layout"),
    ],
)
def test_bad_input_one_line_exit_2(args, needle):
    r = run(*args)
    assert r.exit_code == 2, r.stdout
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0]
