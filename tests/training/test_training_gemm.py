"""GEMM time by shape: the measured H100 and B200 tables, the products of a layer, and the step that uses
them."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.training.test_training_public2 import QWEN3_30B

from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError
from aifabric.training import ParallelLayout, StepModel, get_model
from aifabric.training.gemm import (
    Gemm,
    GemmTable,
    backward_gemms,
    gemm_table,
    layer_gemms,
    pass_flops_per_s,
    userbuffer_gemms,
)
from aifabric.training.models import ModelSpec
from aifabric.training.step import StepOptions

H100 = gemm_table("gemm_h100_sm90.csv")
H100_PEAK = 989e12  # dense BF16, catalogue
B200 = gemm_table("gemm_b200_sm100.csv")
B200_FP8 = gemm_table("gemm_b200_sm100_fp8.csv")

# OpenXLA xla/service/gpu/model/matmul_interpolator_data.h @8b757a8, entry "sm_90" (H100 80 GB HBM3),
# "BF16xBF16->BF16" FLOP/s, copied by hand from the source (not from our CSV): (b, m, n, k) -> TFLOP/s.
XLA_SM90 = {
    (1, 4096, 4096, 4096): 786.048187408492,
    (1, 4096, 4096, 1024): 681.092181414525,
    (1, 4096, 4096, 512): 543.391611336032,
    (1, 4096, 4096, 256): 393.024093704246,
    (1, 2048, 2048, 2048): 630.870636897767,
    (1, 1024, 1024, 1024): 246.723764705882,
    (1, 2048, 1024, 4096): 659.141696746470,
    (1, 4096, 2048, 4096): 764.093096602028,
    (1, 256, 256, 256): 6.186289085545,
    (2, 4096, 4096, 4096): 810.450034773430,
    (4, 4096, 4096, 512): 621.648182949775,
    (4, 4096, 2048, 4096): 809.495348323011,
}

# OpenXLA xla/service/gpu/model/matmul_interpolator_data.h @71feedd, entry "sm_100" (B200), "bf16xbf16->bf16"
# FLOP/s, read from the source (not from our CSV): (b, m, n, k) -> TFLOP/s.
XLA_SM100 = {
    (1, 4096, 4096, 4096): 1416.867213789406,
    (2, 4096, 4096, 4096): 1466.617794742374,
    (4, 4096, 4096, 4096): 1670.467342710337,
    (1, 2048, 2048, 2048): 985.762519164562,
    (1, 256, 256, 256): 6.765006451612,
}

# The same entry and commit, "f8e4m3fnxf8e4m3fn->bf16" FLOP/s, read from the source: (b, m, n, k) -> TFLOP/s.
XLA_SM100_FP8 = {
    (4, 4096, 4096, 4096): 3279.676742061148,
    (1, 4096, 4096, 4096): 2764.981863158106,
    (1, 2048, 2048, 2048): 1427.729509183079,
}


def test_the_table_is_the_full_measured_grid():
    assert H100.batches == (1, 2, 4)
    assert H100.sizes == (256, 512, 1024, 2048, 4096)
    assert H100.flops_per_s.shape == (3, 5, 5, 5)
    assert "matmul_interpolator_data.h" in H100.source and "8b757a8" in H100.source


@pytest.mark.parametrize(("shape", "tflops"), sorted(XLA_SM90.items()))
def test_matches_the_measured_xla_table_within_10_percent(shape, tflops):
    # A product of b x 4096 rows is looked up as b batched 4096-row products (same FLOPs, same tiling).
    b, m, n, k = shape
    rows = b * m
    assert H100.gemm_flops_per_s(rows, n, k) == pytest.approx(tflops * 1e12, rel=0.10)
    assert H100.gemm_flops_per_s(rows, n, k) == pytest.approx(tflops * 1e12, rel=1e-4)  # CSV rounding


def test_every_listed_shape_within_10_percent():
    for i, b in enumerate(H100.batches):
        for j, m in enumerate(H100.sizes):
            if b > 1 and m != H100.sizes[-1]:
                continue  # batched products of fewer rows have no single-matrix equivalent
            for u, n in enumerate(H100.sizes):
                for v, k in enumerate(H100.sizes):
                    measured = H100.flops_per_s[i, j, u, v]
                    assert H100.gemm_flops_per_s(b * m, n, k) == pytest.approx(measured, rel=0.10)


def test_the_b200_table_is_xla_s_sm100_grid():
    assert (B200.batches, B200.sizes) == ((1, 2, 4), (256, 512, 1024, 2048, 4096))
    assert "71feeddf" in B200.source and "sm_100" in B200.source
    for (b, m, n, k), tflops in XLA_SM100.items():
        assert B200.gemm_flops_per_s(b * m, n, k) == pytest.approx(tflops * 1e12, rel=1e-5)
    assert B200.best_flops_per_s == pytest.approx(XLA_SM100[4, 4096, 4096, 4096] * 1e12, rel=1e-5)


def test_the_b200_fp8_table_is_the_same_runs_fp8_products():
    assert (B200_FP8.batches, B200_FP8.sizes) == (B200.batches, B200.sizes)
    assert "71feeddf" in B200_FP8.source and "f8e4m3fnxf8e4m3fn->bf16" in B200_FP8.source
    for (b, m, n, k), tflops in XLA_SM100_FP8.items():
        assert B200_FP8.gemm_flops_per_s(b * m, n, k) == pytest.approx(tflops * 1e12, rel=1e-5)
    assert B200_FP8.best_flops_per_s == pytest.approx(XLA_SM100_FP8[4, 4096, 4096, 4096] * 1e12, rel=1e-5)


def test_fp8_products_lose_more_to_a_small_shape_than_bf16_ones():
    # An FP8 product does twice the FLOPs per tile load of a BF16 one, so a product too small to fill the
    # GPU loses more of its best rate: a 2048-cube runs at 1427.7 / 3279.7 = 0.435 of the FP8 table's best,
    # 985.8 / 1670.5 = 0.590 of the BF16 one's (XLA_SM100, XLA_SM100_FP8); on a 4096-cube both at 0.85.
    def share(table: GemmTable, size: int) -> float:
        return table.gemm_flops_per_s(size, size, size) / table.best_flops_per_s

    assert share(B200_FP8, 2048) == pytest.approx(0.435, abs=0.001)
    assert share(B200, 2048) == pytest.approx(0.590, abs=0.001)
    assert share(B200_FP8, 4096) == pytest.approx(share(B200, 4096), abs=0.01)


@pytest.mark.parametrize("table", [H100, B200], ids=["h100", "b200"])
def test_columns_beyond_the_grid_are_batched_like_rows(table):
    # An (M x K) by (K x N) product with M, N beyond the largest size s has (M / s) (N / s) times the output
    # tiles of an s x s product: the same waves as that many batched products. 4096 x 8192 and 8192 x 4096
    # outputs both read b = 2; 8192 x 8192 reads b = 4 (on the B200 a 4096-cube is still wave-quantised:
    # 1417 TFLOP/s alone, 1670 four at a time).
    s = 4096
    b2, b4 = table.gemm_flops_per_s(2 * s, s, s), table.gemm_flops_per_s(4 * s, s, s)
    assert table.gemm_flops_per_s(s, 2 * s, s) == pytest.approx(b2)
    assert table.gemm_flops_per_s(2 * s, 2 * s, s) == pytest.approx(b4)
    assert table.gemm_flops_per_s(s, 8 * s, 2 * s) == pytest.approx(b4)  # clamped at the grid's b = 4


def _model(h: int) -> ModelSpec:
    return ModelSpec("w", n_layers=2, hidden_size=h, n_heads=1, head_dim=h, vocab_size=1000, seq_len=2048)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    tokens=st.integers(min_value=2048, max_value=65536),
    small=st.integers(min_value=256, max_value=2048),
    factor=st.floats(min_value=2.0, max_value=8.0),
)
def test_gemm_efficiency_falls_for_small_hidden_sizes(tokens, small, factor):
    # A layer's forward and backward products on one GPU: a layer at least 2x narrower runs slower per FLOP.
    # (Above 4,096 the table's own spread decides: 4096^3 measured 810 TFLOP/s at b = 2, 794 at b = 4.)
    large = int(small * factor)
    for gemms in (
        lambda h: layer_gemms(_model(h), tokens, 1),
        lambda h: backward_gemms(layer_gemms(_model(h), tokens, 1)),
    ):
        assert pass_flops_per_s(H100, gemms(small)) < pass_flops_per_s(H100, gemms(large))


def test_small_hidden_sizes_far_below_the_square_peak():
    # 8,192 tokens through an h = 512 layer: (8192 x 512) by (512 x 1536) etc. The table has
    # 4096 x 512 x 512 at 239 and 4096 x 2048 x 512 at 448 TFLOP/s; a 4096-cube at 786.
    x512 = pass_flops_per_s(H100, layer_gemms(_model(512), 8192, 1))
    x4096 = pass_flops_per_s(H100, layer_gemms(_model(4096), 8192, 1))
    assert x512 / H100_PEAK < 0.6 < 0.8 < x4096 / H100_PEAK


def test_layer_gemms_count_the_weight_flops():
    # Llama 3 8B: h 4096, 32 heads, 8 KV heads of 128, SwiGLU f 14,336. Weight FLOPs per token of a layer
    # = 2 x (matmul parameters / t): 2 (2 h q + 2 h kv + 3 h f) / t.
    m = get_model("llama3-8b")
    h, q, kv, f = 4096, 4096, 1024, 14336
    for t in (1, 2, 8):
        fwd = layer_gemms(m, 8192, t)
        assert sum(g.flops for g in fwd) == pytest.approx(8192 * 2 * (2 * h * q + 2 * h * kv + 3 * h * f) / t)
        assert sum(g.flops for g in backward_gemms(fwd)) == pytest.approx(2 * sum(g.flops for g in fwd))


def test_moe_layer_gemms_route_tokens_to_the_local_experts():
    # DeepSeek-V3-like: 256 routed experts, top 8, one shared; on EP 8 each GPU holds 32 experts, and
    # with uniform routing each sees T x 8 x 8 / 256 = T / 4 tokens.
    m = get_model("deepseek-v3-like")
    gemms = layer_gemms(m, 4096, 1, moe=True, ep=8)
    routed = [g for g in gemms if g.repeat == 32]
    assert routed and all(g.m == pytest.approx(1024) for g in routed)
    total_routed = sum(g.flops for g in routed)
    assert total_routed == pytest.approx(4096 * 8 * 2 * m.expert_matmul_params)


def test_userbuffer_chunks_keep_the_flops_and_split_the_rows():
    # GPT-3 175B layer, TP 4, 2,048 tokens (NeMo's DGX H100 recipe, dgxc-benchmarking gpt3_175b_hydra.yaml).
    # Transformer Engine's userbuffers (ub_tp_comm_overlap_cfg): QKV and fc1 forward, proj and fc2 data
    # gradients in t = 4 ring-exchange steps of 2,048 / 4 rows; proj and fc2 forward in 4 pipeline splits
    # of 2,048 / 4 rows; the other backward products whole.
    fwd = layer_gemms(get_model("gpt3-175b"), 2048, 4)
    ub_fwd, ub_bwd = userbuffer_gemms(fwd, 4, 4)
    bwd = backward_gemms(fwd)
    assert sum(g.flops for g in ub_fwd) == pytest.approx(sum(g.flops for g in fwd))
    assert sum(g.flops for g in ub_bwd) == pytest.approx(sum(g.flops for g in bwd))
    assert [(g.m, g.repeat) for g in ub_fwd] == [(512, 4)] * 4
    split = [i for i, (a, b) in enumerate(zip(ub_bwd, bwd, strict=True)) if a != b]
    assert split == [2, 6]  # dgrad of proj (forward product 1) and of fc2 (product 3)
    assert all(ub_bwd[i].m == bwd[i].m / 4 for i in split)
    # An MoE layer splits only the attention's two products (the experts are not userbuffer modules).
    moe_fwd = layer_gemms(get_model("deepseek-v3-like"), 4096, 2, moe=True, ep=8)
    ub_moe, _ = userbuffer_gemms(moe_fwd, 2, 2)
    assert ub_moe[2:] == moe_fwd[2:] and ub_moe[0].m == 2048 and ub_moe[1].m == 1024
    # Smaller products run slower on the H100 table: the chunked pass is 3-10 % slower here.
    ratio = pass_flops_per_s(H100, ub_fwd) / pass_flops_per_s(H100, fwd)
    assert 0.90 < ratio < 0.97


def test_step_uses_the_shapes_on_h100_and_refuses_them_without_a_table():
    model, spec = get_model("llama3-8b"), preset("dgx-h100-superpod", nodes=1)
    lay = ParallelLayout(tp=8, dp=1, sequence_parallel=True, global_batch_size=8, recompute="none")
    shaped, flat = StepModel(model, spec), StepModel(model, spec, options=StepOptions(gemm_shapes=False))
    assert shaped.gemm_table is H100 and flat.gemm_table is None
    rates = shaped.gemm_rates(lay, 8192.0)
    # t = 8 slices the layer to (8192 x 4096) by (4096 x 768): 71-72 % of peak in the table's short runs,
    # not the flat 80.3 %; the step reads them relative to the table's best shape (b = 2 4096-cube, 810.45
    # TFLOP/s) at the profile's level there: the 700 W limit's 730 TFLOP/s (gpu-fryer's sustained 8192^3).
    table_rate = pass_flops_per_s(H100, layer_gemms(model, 8192.0, 8))
    assert 0.6 < table_rate / H100_PEAK < 0.78
    assert H100.best_flops_per_s == pytest.approx(XLA_SM90[2, 4096, 4096, 4096] * 1e12, rel=1e-5)
    assert rates.dense_fwd == pytest.approx(table_rate * 0.7381 * H100_PEAK / H100.best_flops_per_s)
    assert shaped.evaluate(lay).step_s > flat.evaluate(lay).step_s
    with pytest.raises(ConfigError, match="gemm_shapes: no measured GEMM table for 'a100-sxm-80gb'"):
        StepModel(model, preset("megatron-a100", gpus=8), options=StepOptions(gemm_shapes=True))


def test_gb200_reads_the_b200_table_at_its_own_measured_level():
    # The GB200 entry borrows the B200's table (same GPU) for the shape dependence only: a 70B layer on
    # 16,384 tokens (every product at least 4 s x s outputs) runs at the GB200's own sustained 1,550
    # TFLOP/s (gpu-fryer), not the B200 table's 1,670; Qwen3-30B-A3B's routed experts (16 per GPU, 8,192
    # tokens each, (8192 x 2048) by (2048 x 1536)) lose a quarter of it to their narrow shapes.
    spec = preset("gb200-nvl72")
    dense = StepModel(get_model("llama3-70b"), spec)
    assert dense.gemm_table is B200
    rates = dense.gemm_rates(ParallelLayout(dp=72, global_batch_size=72), 16384.0)
    assert rates.dense_fwd == pytest.approx(0.62 * 2500e12, rel=1e-6)
    narrow = StepModel(QWEN3_30B, spec).gemm_rates(ParallelLayout(dp=72, ep=8, global_batch_size=72), 16384.0)
    assert 0.65 < narrow.moe_fwd / (0.62 * 2500e12) < 0.8


def test_fp8_layers_on_blackwell_run_at_the_fp8_table_s_shapes():
    # Under FP8 the B200 and GB200 time the layers' products on the FP8 table at the entry's FP8 level (B200:
    # the table's own best, 3279.7 of 4,500 TFLOP/s; GB200: Azure's 2,876.6 of 5,000); the logit layer stays
    # BF16. A BF16 step never reads the FP8 table, and the report names the table that ran.
    model = get_model("llama3-8b")
    b200, gb200 = preset("dgx-h100-superpod", nodes=1, accelerator="b200"), preset("gb200-nvl72")
    for spec, level in ((b200, 3279.7e12), (gb200, 2876.6e12)):
        lay = ParallelLayout(dp=spec.n_gpus, global_batch_size=spec.n_gpus)
        fp8 = StepModel(model, spec, options=StepOptions(fp8=True, check_memory=False))
        assert fp8.linear_gemm_table is B200_FP8 and fp8.gemm_table is B200
        rates = fp8.gemm_rates(lay, 8192.0)
        expected = pass_flops_per_s(B200_FP8, layer_gemms(model, 8192.0, 1)) / B200_FP8.best_flops_per_s
        assert rates.dense_fwd == pytest.approx(level * expected, rel=1e-3)
        assert fp8.evaluate(lay).to_dict()["compute_profile"]["fp8_gemm_table"] == "gemm_b200_sm100_fp8.csv"
        bf16 = StepModel(model, spec, options=StepOptions(check_memory=False))
        assert bf16.linear_gemm_table is B200
        assert bf16.evaluate(lay).to_dict()["compute_profile"]["fp8_gemm_table"] is None
    h100 = StepModel(model, preset("dgx-h100-superpod", nodes=1), options=StepOptions(fp8=True))
    assert h100.linear_gemm_table is H100  # no FP8 table recorded: the BF16 shapes, an upper bound


def test_a_malformed_table_is_refused():
    with pytest.raises(ConfigError, match="no positive throughput for b=1 m=256 n=256 k=512"):
        GemmTable.from_csv("b,m,n,k,tflops\n1,256,256,256,6.2\n1,512,512,512,40\n", name="bad.csv")
    with pytest.raises(ConfigError, match="bad.csv: rows must be b,m,n,k,tflops numbers"):
        GemmTable.from_csv("b,m,n,k,tflops\n1,256,x,256,6.2\n", name="bad.csv")
    with pytest.raises(ValueError, match="no FLOPs"):
        pass_flops_per_s(H100, [Gemm(0, 1, 1)])
