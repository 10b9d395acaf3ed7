"""Defects a new-user trial of ``aifabric train``/``plan`` found (issue 10, 0.2), each pinned by the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app, main

runner = CliRunner()
LLAMA405_16K = ("--model", "llama3-405b", "--cluster", "dgx-h100-superpod", "--nodes", "2048")
# Llama 3 405B's 16K-GPU layout (Dubey et al. 2024, Table 4): TP 8, PP 16, DP 128, 8K sequences, 16 M tokens
LLAMA3_TABLE4 = (*LLAMA405_16K, "--tp", "8", "--pp", "16", "--dp", "128", "-B", "2048", "--seq-len", "8192")
DSV3 = "tests/training/data/DeepSeek-V3/config.json"


def run(*args: str):
    return runner.invoke(app, list(args))


def one_error_line(r) -> str:
    assert r.exit_code == 2, r.stdout
    assert r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("error: ")
    return line


def test_seed_beyond_the_hash_range_is_one_line(monkeypatch, capsys):
    # item 3: 2**63 - 1 used to overflow np.int64 in the ECMP hash (engines/routing.py) with a traceback;
    # `train --seed` is bounded at the CLI edge by routing.MAX_SEED = 2**40 - 1
    argv = ["aifabric", "train", "--engine", "flow", "--seed", str(2**63 - 1)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and "--seed" in line and str(2**40 - 1) in line


def test_llama3_published_layout_refusal_names_the_setting_that_fits():
    # item 1: with defaults (ZeRO-1) the layout needs 89.2 GB; Llama 3 Sec. 3.3.2 shards gradients and
    # optimizer states (FSDP, weights not resharded after forward) = ZeRO-2, which removes the 13.8 GB of
    # BF16... fp32 gradients but 1/128 of them.
    line = one_error_line(run("train", *LLAMA3_TABLE4))
    assert "89.2 GB" in line and "fits with --zero 2 (Llama 3 Sec. 3.3.2" in line
    r = run("train", *LLAMA3_TABLE4, "--zero", "2", "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["memory_bytes_per_gpu"] < 80e9
    # 89.2 GB - 13.8 GB x (1 - 1/128) of gradients = 75.5 GB
    assert data["memory_bytes_per_gpu"] == pytest.approx(89.2e9 - 13.8e9 * (1 - 1 / 128), rel=2e-3)
    # item 12: ZeRO-2 with PP is said (DeepSpeed refuses it; Llama 3 ran it)
    assert any("DeepSpeed refuses ZeRO-2/3 with pipeline" in n for n in data["notes"])
    # with Llama 3's interleaved schedule as well (Sec. 3.3.2; v = 4 here): 4 x fewer bubble, still fits
    r = run("train", *LLAMA3_TABLE4, "--zero", "2", "--virtual-stages", "4", "--json")
    assert r.exit_code == 0, r.stderr
    inter = json.loads(r.stdout)
    assert inter["memory_bytes_per_gpu"] < 80e9 and inter["step_s"] < data["step_s"]
    assert inter["bubble_fraction"] == pytest.approx(15 / (4 * 16))  # (p - 1) / (v m)


def test_sequence_length_and_its_source_are_shown():
    # item 5: text and --json say which sequence length ran and where it came from
    r = run("train", "--model", "llama3-8b", "--nodes", "1", "--tp", "8", "-B", "64")
    assert r.exit_code == 0, r.stderr
    assert "sequence length 8,192 tokens (from the model's seq_len)" in r.stdout
    r = run("train", "--model", "llama3-8b", "--nodes", "1", "--tp", "8", "-B", "64", "--seq-len", "4096",
            "--json")  # fmt: skip
    data = json.loads(r.stdout)
    assert data["seq_len"] == 4096 and data["seq_len_source"] == "--seq-len"


def test_config_json_trains_at_its_pretraining_length_and_says_mla_is_approximated(tmp_path):
    # items 4, 5: DeepSeek-V3's config.json extends 4096 -> 163840 by YaRN (rope_scaling, factor 40);
    # pre-training used 4K sequences (DeepSeek-V3 report Sec. 4.2)
    cfg = json.loads(Path(DSV3).read_text())
    cfg["rope_scaling"] = {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096}
    path = tmp_path / "DeepSeek-V3" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(cfg))
    r = run("train", "--model", str(path), "--nodes", "256", "--pp", "16", "--ep", "64", "-B", "4096",
            "--zero", "2", "--json")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["seq_len"] == 4096
    assert "rope_scaling.original_max_position_embeddings" in data["seq_len_source"]
    assert any(n.startswith("MLA approximated as MHA") for n in data["notes"])


def test_config_json_without_rope_scaling_says_max_position_embeddings():
    r = run("train", "--model", DSV3, "--nodes", "256", "--pp", "16", "--ep", "64", "-B", "4096",
            "--seq-len", "4096", "--zero", "2")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert "from --seq-len" in r.stdout and "MLA approximated as MHA" in r.stdout


def test_config_json_without_intermediate_size_is_refused(tmp_path):
    # item 6: the dense MLP width is not guessed
    cfg = json.loads(Path("tests/training/data/Meta-Llama-3-8B/config.json").read_text())
    del cfg["intermediate_size"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    line = one_error_line(run("train", "--model", str(path), "--nodes", "1", "-B", "64"))
    assert "config.json has no intermediate_size" in line


@pytest.mark.parametrize(
    "args,needle",
    [
        # item 14: options that do not apply are refused, prefetch is bounded by the layers
        (
            ("train", "--model", "llama3-8b", "--nodes", "1", "-B", "64", "--tp-comm-overlap"),
            "--tp-comm-overlap",
        ),  # fmt: skip
        (
            (
                "train",
                "--model",
                "llama3-8b",
                "--nodes",
                "1",
                "-B",
                "64",
                "--zero",
                "3",
                "--zero3-prefetch",
                "100000",
            ),
            "--zero3-prefetch: 100000 layers ahead, but model 'llama3-8b' has 32 layers",
        ),  # fmt: skip
        (
            ("plan", "--model", "llama3-8b", "--nodes", "1", "-B", "64", "--zero3-prefetch", "33"),
            "--zero3-prefetch: 33",
        ),  # fmt: skip
        (
            ("plan", "--model", "llama3-8b", "--nodes", "1", "-B", "64", "--tp", "1", "--tp-comm-overlap"),
            "--tp-comm-overlap",
        ),  # fmt: skip
        # item 16: the option's name, not the internal field's
        (
            ("train", "--model", "mixtral-8x7b", "--nodes", "1", "-B", "64", "--capacity-factor", "nan"),
            "--capacity-factor: must be >= 1",
        ),  # fmt: skip
    ],
)
def test_options_that_do_not_apply_are_refused(args, needle):
    assert needle in one_error_line(run(*args))


def test_fp8_says_which_peak_mfu_is_against():
    # item 9: Megatron-LM / Transformer Engine report MFU against the BF16 peak
    r = run("train", "--model", "llama3-8b", "--nodes", "1", "--tp", "8", "-B", "64", "--fp8", "--json")
    assert r.exit_code == 0, r.stderr
    notes = json.loads(r.stdout)["notes"]
    assert any("FP8" in n and "MFU is against the BF16 peak (989 TFLOP/s)" in n for n in notes)


def test_flow_engine_table_heading_says_the_fabric_slowed_it():
    # item 10: the times are the flow engine's, not the formula engine's
    r = run("train", "--model", "llama3-8b", "--nodes", "16", "--tp", "8", "-B", "64", "--engine", "flow",
            "--jobs", "8")  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert "flow engine: DP, PP and EP slowed by the placed fabric" in r.stdout
    assert "(formula engine;" not in r.stdout


def test_jobs_that_do_not_fit_say_what_each_needs():
    # item 16: 8 jobs of dp=16 x tp=8 = 128 GPUs (16 nodes) each need 128 nodes; the cluster has 16
    line = one_error_line(run("train", "--model", "llama3-8b", "--nodes", "16", "--tp", "8", "--dp", "16",
                              "-B", "64", "--engine", "flow", "--jobs", "8"))  # fmt: skip
    assert "8 jobs x 16 nodes do not fit the 16 nodes" in line
    assert "each job is tp x pp x dp x cp = 128 GPUs" in line and "GPUs / jobs" in line


def test_help_names_dp_pp_ep_traffic_and_per_job_batch():
    r = run("train", "--help")
    text = " ".join(r.stdout.replace("│", " ").split())
    assert "DP, PP and EP traffic" in text and "of each job with --jobs" in text


def test_capacity_factor_computes_the_padded_expert_slots():
    # item 11: at capacity factor c every expert computes c x tokens x k / E slots (Fedus et al. 2022 Sec.
    # 2.2): routed-expert GEMM time grows by (c - 1) x 2 k P_expert per token; hand check on the compute part
    from aifabric.cluster.resolve import resolve_cluster
    from aifabric.training.layout import ParallelLayout
    from aifabric.training.models import get_model
    from aifabric.training.step import StepModel, StepOptions

    model, spec = get_model("mixtral-8x7b"), resolve_cluster("dgx-h100-superpod", nodes=1)
    lay = ParallelLayout(tp=8, dp=1, sequence_parallel=True, global_batch_size=8, recompute="selective")
    opts = {"gemm_shapes": False, "check_memory": False}
    dropless = StepModel(model, spec, options=StepOptions(**opts)).evaluate(lay)
    capped = StepModel(model, spec, options=StepOptions(capacity_factor=1.25, **opts)).evaluate(lay)
    sm = StepModel(model, spec, options=StepOptions(**opts))
    tokens = 8 * model.seq_len
    extra_fwd_s = 0.25 * 2 * model.top_k * model.expert_matmul_params * tokens / 8 / sm.linear_flops_per_s
    # forward + backward (2 x forward); selective recompute reruns no linear GEMM
    expected = model.n_layers * 3 * extra_fwd_s
    assert capped.breakdown_s["compute"] - dropless.breakdown_s["compute"] == pytest.approx(
        expected, rel=1e-6
    )
    assert capped.mfu < dropless.mfu


def test_plan_says_the_cp_rule_excluded_context_parallelism():
    # item 8: at 8,192 tokens cp >= 2 would leave < 8,192 tokens per rank (Llama 3 Table 4: cp = 1 at 8K)
    args = ("plan", "--model", "llama3-8b", "--nodes", "2", "-B", "64", "--top", "1")
    r = run(*args, "--seq-len", "8192")
    assert r.exit_code == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "Context parallelism not tried: at 8,192 tokens" in text and "Table 4" in text
    r = run(*args, "--seq-len", "8192", "--cp", "2", "--json")
    assert "Context parallelism not tried" not in json.loads(r.stdout)["why"]  # forced: no rule applied
    r = run(*args, "--seq-len", "16384", "--json")
    assert "Context parallelism not tried" not in json.loads(r.stdout)["why"]
