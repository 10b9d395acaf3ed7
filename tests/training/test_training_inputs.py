"""What users type: a model from a Hugging Face config.json or YAML, --seq-len, the overlap options, and plain
refusals (aifabric.training.models.load_model, aifabric.cli.train)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError, ParseError
from aifabric.training import ParallelLayout, StepModel, get_model, load_model
from aifabric.training.efficiency import compute_profile
from aifabric.training.step import StepOptions

DATA = Path(__file__).parent / "data"
runner = CliRunner()
_SHAPE = [
    f.name
    for f in dataclasses.fields(get_model("llama3-8b"))
    if f.init and f.name not in ("name", "source", "notes", "seq_len_source")  # provenance, not shape
]


def _shape(model):
    return {k: getattr(model, k) for k in _SHAPE}


def test_hf_config_of_llama3_8b_is_the_preset():
    # meta-llama/Meta-Llama-3-8B config.json (golden copy in tests/training/data): same shape as the preset
    # built from the Llama 3 paper's Table 3.
    model = load_model(str(DATA / "Meta-Llama-3-8B" / "config.json"))
    assert model.name == "Meta-Llama-3-8B"
    assert _shape(model) == _shape(get_model("llama3-8b"))


def test_hf_config_of_deepseek_v3_with_seq_len_is_the_preset():
    # deepseek-ai/DeepSeek-V3 config.json: 256 routed + 1 shared expert of width 2,048, top-8, first 3 layers
    # dense, MLA approximated as MHA of width h / a (as the preset); pre-trained at 4K (--seq-len 4096).
    model = load_model(str(DATA / "DeepSeek-V3" / "config.json"), seq_len=4096)
    assert _shape(model) == _shape(get_model("deepseek-v3-like"))
    assert "latent attention" in model.notes


def test_yaml_model_and_seq_len(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text("n_layers: 4\nhidden_size: 256\nn_heads: 4\nvocab_size: 1000\nseq_len: 512\n")
    assert load_model(str(path)).n_layers == 4
    assert load_model("llama3-8b", seq_len=131072).seq_len == 131072


def test_bad_model_inputs_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="seq_len must be an integer >= 1, got 0"):
        load_model("llama3-8b", seq_len=0)
    with pytest.raises(ConfigError, match="no such file"):
        load_model(str(tmp_path / "missing.yaml"))
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ParseError, match="invalid JSON"):
        load_model(str(bad))
    bad.write_text(json.dumps({"num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 10}))
    with pytest.raises(ConfigError, match="config.json has no num_attention_heads, max_position_embeddings"):
        load_model(str(bad))


def run(*args: str):
    return runner.invoke(app, list(args))


def test_cli_takes_a_config_json_and_seq_len():
    cfg = str(DATA / "Meta-Llama-3-8B" / "config.json")
    r = run(
        "train", "-m", cfg, "--nodes", "1", "--tp", "8", "--global-batch", "8", "--seq-len", "4096", "--json"
    )
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["model"] == "Meta-Llama-3-8B"
    assert data["tokens_per_s"] == pytest.approx(8 * 4096 / data["step_s"])


def test_cli_tp_comm_overlap_shrinks_tp():
    base = (
        "train",
        "-m",
        "gpt3-175b",
        "--nodes",
        "128",
        "--tp",
        "8",
        "--pp",
        "8",
        "--global-batch",
        "1536",
        "--json",
    )
    plain, over = run(*base), run(*base, "--tp-comm-overlap")
    assert plain.exit_code == 0 and over.exit_code == 0, plain.stderr + over.stderr
    tp_plain = json.loads(plain.stdout)["breakdown_s"]["tp"]
    tp_over = json.loads(over.stdout)["breakdown_s"]["tp"]
    assert 0 < tp_over < 0.25 * tp_plain  # f = 24/132 of the TP time stays (SM contention)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-m", "mixtral-8x7b", "--nodes", "8", "--ep", "1050", "--global-batch", "64"),
         "error: ep=1050 does not divide the 8 experts of model 'mixtral-8x7b'"),
        (("-m", "llama3-8b", "--nodes", "1", "--global-batch", "8", "--capacity-factor", "1.2"),
         "error: --capacity-factor: model 'llama3-8b' has no experts"),
        (("-m", "llama3-8b", "--nodes", "1", "--global-batch", "8", "--zero3-prefetch", "2"),
         "error: --zero3-prefetch: applies to ZeRO-3 only, got --zero 1"),
        (("-m", "gpt3-175b", "--nodes", "128", "--tp", "8", "--pp", "8", "--no-sp", "--tp-comm-overlap",
          "--global-batch", "1536"),
         "error: tp_comm_overlap needs sequence_parallel with tp=8"),
        (("-m", "nope.json", "--nodes", "1"), "error: model: cannot read 'nope.json'"),
    ],
)  # fmt: skip
def test_cli_refusals_are_one_plain_line(args: tuple[str, ...], message: str):
    r = run("train", *args)
    assert r.exit_code == 2 and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(message), line


def test_plan_refuses_ep_that_does_not_divide_the_experts():
    r = run("plan", "-m", "deepseek-v3-like", "--nodes", "128", "--ep", "1050", "--global-batch", "4096")
    assert r.exit_code == 2
    assert r.stderr.strip() == "error: ep=1050 does not divide the 256 experts of model 'deepseek-v3-like'"


def test_fp8_halves_the_linear_gemms_only():
    # H100 SXM: dense FP8 1,979 TFLOP/s = 2 x BF16 989 (datasheet, catalogue). With Transformer Engine FP8 and
    # no FP8 GEMM measurement the layers' linear GEMMs take half the time; the attention core and the logit
    # layer stay in BF16.
    model, spec = get_model("llama3-70b"), preset("dgx-h100-superpod", nodes=8)
    lay = ParallelLayout(tp=8, pp=4, dp=2, sequence_parallel=True, zero_stage=1, global_batch_size=64,
                         recompute="none")  # fmt: skip
    unmeasured = dataclasses.replace(compute_profile("h100-sxm"), fp8_gemm_efficiency=None)
    bf16 = StepModel(model, spec, options=StepOptions(compute=unmeasured))
    fp8 = StepModel(model, spec, options=StepOptions(fp8=True, compute=unmeasured))
    assert fp8.linear_flops_per_s == pytest.approx(2 * bf16.linear_flops_per_s, rel=1e-3)
    st = bf16.stage(lay, bf16.padded_model(lay))
    c16, c8 = bf16.compute_term(st), fp8.compute_term(st)
    core = st.layers * bf16._f_core * st.tokens / 8 / bf16.attention_flops_per_s
    logit_rate = bf16.gemm_rates(lay, st.tokens).logit_fwd  # the logit GEMM's shape on the H100 table
    logit = 2.0 * model.vocab_size * model.hidden_size * st.tokens / 8 / logit_rate
    assert c8.gemm_fwd - core - logit == pytest.approx((c16.gemm_fwd - core - logit) / 2, rel=1e-3)
    assert fp8.evaluate(lay).mfu > bf16.evaluate(lay).mfu  # MFU stays against the BF16 peak
    with pytest.raises(ConfigError, match="fp8: the a100-sxm-80gb has no FP8 tensor cores"):
        StepModel(model, preset("megatron-a100", gpus=64), options=StepOptions(fp8=True))


def test_fp8_linear_gemms_run_at_the_measured_fp8_efficiency():
    # Azure AI-benchmarking-guide, ND H100 v5: cuBLASLt FP8 8192^3 with random data after 10,000 warm-ups,
    # 1290.1 TFLOP/s of the 1,979 peak; BF16 held on random data is 730 of 989 (huggingface/gpu-fryer, cuBLAS
    # 8192^3). FP8 therefore speeds the linear GEMMs up by 1290.1 / 730, not by the datasheet's 2.
    model, spec = get_model("llama3-70b"), preset("dgx-h100-superpod", nodes=8)
    lay = ParallelLayout(tp=8, pp=4, dp=2, sequence_parallel=True, zero_stage=1, global_batch_size=64,
                         recompute="none")  # fmt: skip
    bf16 = StepModel(model, spec, options=StepOptions(gemm_shapes=False))
    fp8 = StepModel(model, spec, options=StepOptions(fp8=True, gemm_shapes=False))
    assert fp8.linear_flops_per_s == pytest.approx(1290.1e12, rel=1e-3)
    st = bf16.stage(lay, bf16.padded_model(lay))
    c16, c8 = bf16.compute_term(st), fp8.compute_term(st)
    core = st.layers * bf16._f_core * st.tokens / 8 / bf16.attention_flops_per_s
    logit = 2.0 * model.vocab_size * model.hidden_size * st.tokens / 8 / bf16.gemm_flops_per_s
    assert bf16.gemm_flops_per_s == pytest.approx(730e12, rel=1e-3)
    speedup = 1290.1 / 730
    assert c8.gemm_fwd - core - logit == pytest.approx((c16.gemm_fwd - core - logit) / speedup, rel=1e-3)


def test_fp8_casts_move_four_bytes_per_gemm_operand():
    # Transformer Engine nvte_cast_transpose: read 2 bytes, write the FP8 cast and its transpose, 1 byte each.
    # Llama 3 70B (h 8,192, f 28,672 gated, 64 heads x 128, 8 KV heads), TP 1, no sequence parallelism:
    # forward QKV h + projection 8,192 + FC1 h + FC2 f = 53,248 elements; backward QKV 8,192 + 2 x 1,024,
    # projection h, FC1 2 f, FC2 h = 83,968 elements.
    model, spec = get_model("llama3-70b"), preset("dgx-h100-superpod", nodes=1)
    lay = ParallelLayout(dp=8, global_batch_size=8, recompute="none")
    fp8 = StepModel(model, spec, options=StepOptions(fp8=True))
    assert fp8._fp8_cast_bytes(lay, False) == (4 * 53248, 4 * 83968)
    assert StepModel(model, spec)._fp8_cast_bytes(lay, False) == (0.0, 0.0)
