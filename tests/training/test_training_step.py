"""Step time (aifabric.training.step): Megatron-LM Table 1, the networks, expert parallelism, bad input."""

from __future__ import annotations

import math

import pytest

from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError, Infeasible
from aifabric.training import (
    ComputeProfile,
    ParallelLayout,
    StepModel,
    StepOptions,
    compute_profile,
    get_model,
    megatron_gpt_flops_per_iteration,
    step_time,
)
from aifabric.training.step import PARTS

from .conftest import TABLE1

# Megatron-LM examples/sc21/run_table_1.sh @79a3bb6: DDP=torch (PyTorch DDP, gradient all-reduce overlapped
# with the backward pass) for 1.7B-18B, DDP=local (all-reduce after the backward pass) from 39B up. The runs
# used the nvcr.io pytorch:20.12 container (SRUN.sh): no FlashAttention, the fused softmax goes through HBM.
_DDP_TORCH = {"megatron-gpt-1.7b", "megatron-gpt-3.6b", "megatron-gpt-7.5b", "megatron-gpt-18.4b"}
_BY_NAME = {row[0]: row for row in TABLE1}


def _table1_step(name: str):
    _, _, _, _, _, t, p, n, gbs, b, v = _BY_NAME[name]
    layout = ParallelLayout(tp=t, pp=p, dp=n // (t * p), microbatch_size=b, global_batch_size=gbs,
                            virtual_pipeline_stages=v, recompute="full")  # fmt: skip
    options = StepOptions(flash_attention=False, overlap_grad_reduce=name in _DDP_TORCH)
    # The paper's cluster (Narayanan et al. Sec. 5): DGX A100, 8 x 200 Gb/s HDR per node, resized per row.
    return step_time(get_model(name), layout, preset("megatron-a100", gpus=n), options=options)


def test_efficiency_constant_is_documented_and_fixed():
    # The A100 constant is a microbenchmark, not a fit: Mu Li's transformers-benchmarks (README @04df81d):
    # FP16 matmul 230 TFLOPS of 312, element-wise multiply 0.202 TFLOPS x 8 bytes = 1.616 TB/s of 2.039.
    prof = compute_profile("a100-sxm-80gb")
    assert prof.gemm_efficiency == pytest.approx(230 / 312, abs=1e-4)
    assert prof.hbm_efficiency == pytest.approx(0.202e12 * 8 / 2039e9, abs=1e-4)
    assert "transformers-benchmarks" in prof.source and "230" in prof.source
    # H100: ml-engineering's MAMF table, 794.5 of 989 TFLOPS.
    assert compute_profile("h100-sxm").gemm_efficiency == pytest.approx(794.5 / 989, abs=1e-4)
    with pytest.raises(ConfigError, match="vera-rubin"):
        compute_profile("vera-rubin")
    with pytest.raises(ConfigError, match="gemm_efficiency"):
        ComputeProfile(gemm_efficiency=1.2)


@pytest.mark.parametrize(
    ("gpu", "hbm", "fp8"),
    [
        # Azure AI-benchmarking-guide, ND H100 v5 / ND H200 v5 / ND GB200 v6 / ND MI300X v5: BabelStream Mul
        # (TB/s) over the datasheet HBM, cuBLASLt (hipBLASLt on the MI300X) FP8 8192^3 with random data
        # (TFLOP/s) over the datasheet FP8 peak.
        ("h100-sxm", 2.90 / 3.35, 1290.1 / 1979),
        ("h200-sxm", 4.00 / 4.80, 1300.6 / 1979),
        ("gb200", 1.0, 2876.6 / 5000),
        ("mi300x", 4.26 / 5.3, 1159.23 / 2614.9),
    ],
)
def test_hbm_and_fp8_efficiencies_are_the_azure_measurements(gpu, hbm, fp8):
    prof = compute_profile(gpu)
    assert prof.hbm_efficiency == pytest.approx(hbm, abs=1e-4)
    assert prof.fp8_gemm_efficiency == pytest.approx(fp8, abs=1e-4)
    assert "AI-benchmarking-guide" in prof.source


def test_fp8_gemm_efficiency_is_checked_and_optional():
    assert compute_profile("a100-sxm-80gb").fp8_gemm_efficiency is None  # no FP8 tensor cores
    assert ComputeProfile(gemm_efficiency=0.8).fp8_gemm_efficiency is None  # optional: not measured
    # No Azure figure for the B200: its level is the best shape of OpenXLA's FP8 table (b = 4, 4096-cube,
    # 3279.7 TFLOP/s, gemm_b200_sm100_fp8.csv) over the 4,500 dense FP8 peak.
    b200 = compute_profile("b200")
    assert b200.fp8_gemm_table is not None
    assert b200.fp8_gemm_efficiency == pytest.approx(b200.fp8_gemm_table.best_flops_per_s / 4500e12, abs=1e-4)
    with pytest.raises(ConfigError, match="fp8_gemm_efficiency must be in"):
        ComputeProfile(gemm_efficiency=0.8, fp8_gemm_efficiency=1.5)


def test_table1_rows_within_15_percent(table1_csv):
    # Narayanan et al. SC'21 Table 1 (arXiv:2104.04473), the three rows of the shared case file: achieved
    # teraFLOP/s per GPU 137 (1.7B, 32 GPUs), 138 (39.1B, 512 GPUs), 163 (1T, 3072 GPUs). The model's own
    # figures (a regression guard as well): 135.0, 133.1, 165.4 TFLOP/s.
    assert len(table1_csv) == 3
    expected = {"megatron-gpt-1.7b": 135.0, "megatron-gpt-39.1b": 133.1, "megatron-gpt-1008b": 165.4}
    for row in table1_csv:
        name = f"megatron-gpt-{row['params_billion'].removesuffix('.0')}b"
        st = _table1_step(name)
        published = float(row["achieved_tflops_per_gpu"]) * 1e12
        assert st.achieved_flops_per_gpu == pytest.approx(published, rel=0.15), name
        assert st.achieved_flops_per_gpu / 1e12 == pytest.approx(expected[name], rel=0.03)
        # Achieved TFLOP/s counts Eq. 3's FLOPs (full recomputation) over the step.
        gbs = int(row["global_batch_size_seqs"])
        eq3 = megatron_gpt_flops_per_iteration(
            gbs, 2048, int(row["num_layers"]), int(row["hidden_size"]), 51200
        )
        assert st.flops_per_iteration == pytest.approx(eq3, rel=1e-9)
        assert st.achieved_flops_per_gpu == pytest.approx(eq3 / (int(row["num_gpus"]) * st.step_s))


def test_breakdown_adds_up_and_networks_split():
    st = _table1_step("megatron-gpt-39.1b")
    assert set(st.breakdown_s) == set(PARTS)
    assert sum(st.breakdown_s.values()) == pytest.approx(st.step_s, rel=1e-12)
    # TP (t = 8) stays in the DGX: all on scale-up and exposed; the pipeline (p = 2, 256 GPUs apart) and
    # DP (32 ranks, one per node) cross the InfiniBand fabric.
    tp = [c for c in st.comms if c.dim == "tp"]
    assert tp and all(c.n_domains == 1 and set(c.network_time_s) == {"scale-up"} for c in tp)
    assert st.comm_s("tp") == pytest.approx(st.breakdown_s["tp"])
    assert st.comm_s("pp", "scale-out") > 0 and st.comm_s("dp", "scale-out") > 0
    # 2021 Megatron, DDP=local: gradient all-reduce after the backward pass, all exposed.
    dp = [c for c in st.comms if c.dim == "dp"]
    assert [c.op for c in dp] == ["all_reduce"] and dp[0].hidden_s == 0
    # per network, exposed + hidden = the time of every collective on it
    for net in ("scale-up", "scale-out"):
        total = sum(st.comm_s(dim, net) for dim in ("tp", "cp", "ep", "pp", "dp", "expert_dp"))
        assert st.network_s[net]["exposed"] + st.network_s[net]["hidden"] == pytest.approx(total)
    # bubble = (p - 1) / (v m) of the steady-state time: p = 2, m = 1536 / (4 x 32) = 12
    steady = st.step_s - st.breakdown_s["bubble"] - st.breakdown_s["dp"] - st.breakdown_s["optimizer"]
    assert st.bubble_fraction == pytest.approx(1 / 12)
    assert st.breakdown_s["bubble"] == pytest.approx(steady / 12)


def test_dp_overlap_hides_gradient_reduction():
    model, spec = get_model("megatron-gpt-1.7b"), preset("megatron-a100", gpus=32)
    lay = ParallelLayout(dp=32, microbatch_size=16, global_batch_size=512, recompute="full")
    on = step_time(model, lay, spec, options=StepOptions(flash_attention=False, overlap_grad_reduce=True))
    off = step_time(model, lay, spec, options=StepOptions(flash_attention=False, overlap_grad_reduce=False))
    (ar_on,), (ar_off,) = on.comms, off.comms
    # 1.7B fp32 gradients (4 bytes each) over 32 GPUs in 4 nodes: ~67 ms, under one 16-sequence backward pass.
    assert ar_on.message_bytes == pytest.approx(4 * 1.647e9, rel=0.01)
    # Overlapped, it goes in Megatron's buckets of max(40 M, 1 M x 32) = 40 M parameters: 42 buckets. The last
    # (1/42) is ready only when the backward pass ends; the other 41 hide behind it but hold 24 of the A100's
    # 108 SMs while they run (presets/compute.yaml), slowing it by 24/108 of their time (bucketed_exposed_s).
    n_b, f = 42, 24 / 108
    assert ar_on.exposed_s == pytest.approx(ar_on.time_s * (1 / n_b + f * (n_b - 1) / n_b), rel=1e-9)
    assert ar_on.exposed_s < 0.25 * ar_on.time_s
    assert ar_off.exposed_s == pytest.approx(ar_off.time_s)
    assert off.step_s - on.step_s == pytest.approx(ar_on.time_s - ar_on.exposed_s)


def test_recomputation_costs_a_forward_and_mfu_excludes_it():
    model, spec = get_model("gpt3-175b"), preset("dgx-h100-superpod", nodes=128)
    sm = StepModel(model, spec)
    base = dict(
        tp=8, pp=8, dp=16, sequence_parallel=True, zero_stage=1, microbatch_size=1, global_batch_size=1536
    )
    none = sm.evaluate(ParallelLayout(**base, recompute="none"))
    full = sm.evaluate(ParallelLayout(**base, recompute="full"))
    # Full recomputation: 4 passes instead of 3 (Eq. 3 vs model FLOPs), so ~4/3 the GEMM time.
    assert full.breakdown_s["compute"] / none.breakdown_s["compute"] == pytest.approx(4 / 3, rel=0.02)
    assert full.step_s > none.step_s
    assert none.hfu == pytest.approx(none.mfu)
    assert full.hfu / full.mfu == pytest.approx(full.flops_per_iteration / full.model_flops_per_iteration)
    assert full.tokens_per_s == pytest.approx(1536 * 2048 / full.step_s)


def test_tp_across_two_nodes_goes_over_scale_out():
    # GPT-3 175B on 128 DGX H100: TP = 8 is one NVLink domain, TP = 16 crosses the NICs of two nodes.
    model, spec = get_model("gpt3-175b"), preset("dgx-h100-superpod", nodes=128)
    sm = StepModel(model, spec)
    kw = dict(pp=8, sequence_parallel=True, zero_stage=1, microbatch_size=1, global_batch_size=1536,
              recompute="selective")  # fmt: skip
    tp8 = sm.evaluate(ParallelLayout(tp=8, dp=16, **kw))
    tp16 = sm.evaluate(ParallelLayout(tp=16, dp=8, **kw))
    assert tp8.comm_s("tp", "scale-out") == 0 and tp8.comm_s("tp", "scale-up") > 0
    assert tp16.comm_s("tp", "scale-up") == 0 and tp16.comm_s("tp", "scale-out") > 0
    assert tp16.step_s > tp8.step_s
    assert tp16.network_s["scale-out"]["exposed"] > tp8.network_s["scale-out"]["exposed"]


def test_expert_parallel_across_nics_costs_the_bandwidth_ratio():
    # Mixtral 8x7B on 8 DGX H100 nodes. EP = 4 inside an NVLink domain (order tp-cp-ep-dp-pp: ranks 0, 2, 4,
    # 6) vs EP = 4 across 4 nodes (order tp-cp-dp-ep-pp: expert-DP innermost, ranks 0, 16, 32, 48). The
    # all-to-all of a rank's tokens x top_k x h x 2 bytes then crosses the NICs instead of NVLink, and takes
    # about intra / NIC bandwidth times longer (370.8 / 49.15 GB/s per GPU on the formula engine).
    model, spec = get_model("mixtral-8x7b"), preset("dgx-h100-superpod", nodes=8)
    sm = StepModel(model, spec)
    kw = dict(tp=2, pp=2, dp=16, ep=4, sequence_parallel=True, microbatch_size=1, global_batch_size=64,
              recompute="full", zero_stage=1)  # fmt: skip
    inside = sm.evaluate(ParallelLayout(**kw))
    across = sm.evaluate(ParallelLayout(**kw, order="tp-cp-dp-ep-pp"))
    (a2a_in,) = [c for c in inside.comms if c.dim == "ep"]
    (a2a_out,) = [c for c in across.comms if c.dim == "ep"]
    assert a2a_in.n_domains == 1 and set(a2a_in.network_time_s) == {"scale-up"}
    assert a2a_out.n_domains == 4 and set(a2a_out.network_time_s) == {"scale-out"}
    # 32,768 tokens / 2 TP ranks x top-2 x 4096 x 2 bytes
    assert a2a_in.message_bytes == a2a_out.message_bytes == 32768 / 2 * 2 * 4096 * 2
    ratio = sm.tiers.intra_bytes_per_s / sm.tiers.nic_bytes_per_s
    assert ratio == pytest.approx(370.8 / 49.15, rel=0.01)
    assert a2a_out.time_s / a2a_in.time_s == pytest.approx(ratio, rel=0.10)
    assert across.breakdown_s["ep"] > inside.breakdown_s["ep"] and across.step_s > inside.step_s


def test_uneven_stages_for_llama3_405b():
    # Llama 3 405B (126 layers) with PP = 16, as Meta ran it (Llama 3 paper Sec. 3.3.2): 8 layers on the
    # busiest stage when uneven stages are allowed; the strict check names the field otherwise.
    # 16,384 GPUs need a three-tier fabric (512 leaves of radix 64).
    model, spec = get_model("llama3-405b"), preset("dgx-h100-superpod", nodes=2048, **{"scale_out.tiers": 3})
    lay = ParallelLayout(tp=8, pp=16, dp=128, sequence_parallel=True, zero_stage=1, microbatch_size=1,
                         global_batch_size=2048, recompute="full")  # fmt: skip
    st = step_time(model, lay, spec)
    assert st.layers_per_stage == math.ceil(126 / 16) == 8
    assert st.notes and "uneven" in st.notes[0]
    with pytest.raises(ConfigError, match=r"n_layers=126 .* pp x virtual_pipeline_stages = 16 x 1"):
        step_time(model, lay, spec, options=StepOptions(uneven_stages=False))


def test_embedding_chunks_give_llama3_405b_one_layer_chunks():
    # Llama 3 paper Sec. 3.3.2: one Transformer layer fewer on the first and last stages, whose first (last)
    # chunk holds only the embedding (the output layer and loss): 126 + 2 = 128 layer places = 16 ranks x
    # 8 one-layer chunks. Without the option 126 layers cannot fill 128 chunks.
    model, spec = get_model("llama3-405b"), preset("dgx-h100-superpod", nodes=1024, **{"scale_out.tiers": 3})
    kw = dict(
        tp=8, pp=16, dp=64, sequence_parallel=True, zero_stage=2, microbatch_size=1, global_batch_size=2048
    )
    with pytest.raises(
        ConfigError, match=r"n_layers=126 .* fewer than pp x virtual_pipeline_stages = 16 x 8"
    ):
        step_time(
            model,
            ParallelLayout(virtual_pipeline_stages=8, **kw),
            spec,
            options=StepOptions(check_memory=False),
        )
    chunks = StepOptions(check_memory=False, embedding_chunks=True)
    v8 = step_time(model, ParallelLayout(virtual_pipeline_stages=8, **kw), spec, options=chunks)
    assert v8.layers_per_stage == 8 and v8.bubble_fraction == pytest.approx(15 / (8 * 32))
    # At v = 1 both cut 8 layers per stage; with the option the busiest stage (a middle one) no longer runs
    # the output layer, 2 V h = 4.2 GFLOP per token, less than one Transformer layer's 6.9 GFLOP.
    plain = step_time(model, ParallelLayout(**kw), spec, options=StepOptions(check_memory=False))
    v1 = step_time(model, ParallelLayout(**kw), spec, options=chunks)
    assert v1.layers_per_stage == plain.layers_per_stage == 8
    assert v1.breakdown_s["compute"] < plain.breakdown_s["compute"]
    assert v1.model_flops_per_iteration == plain.model_flops_per_iteration  # MFU counts the real 126 layers


def test_embedding_chunks_keep_the_output_layer_in_its_layer_place():
    # Llama 3 8B: the output layer (2 V h = 2 x 128,256 x 4,096 = 1.05 GFLOP per token) outweighs one
    # Transformer layer (0.47 GFLOP with its attention at 8K), so with the embedding and the output layer in
    # layer places the last stage is the busiest: pp 2 cuts 32 + 2 places into [embedding + 16 layers] and
    # [16 layers + output layer], the same work as the plain cut's last stage (16 layers + output), not 17
    # layers and the output layer. Its DP reduction carries the output layer's weights, as the plain one.
    model, spec = get_model("llama3-8b"), preset("h100-ib-2node")
    lay = ParallelLayout(tp=1, pp=2, dp=8, zero_stage=1, microbatch_size=1, global_batch_size=64)
    plain = step_time(model, lay, spec, options=StepOptions(check_memory=False))
    chunks = step_time(model, lay, spec, options=StepOptions(check_memory=False, embedding_chunks=True))
    assert chunks.layers_per_stage == plain.layers_per_stage == 16
    for part in ("compute", "memory-bound", "dp"):
        assert chunks.breakdown_s[part] == pytest.approx(plain.breakdown_s[part], rel=1e-12), part


@pytest.mark.parametrize(
    "layout,error,pattern",
    [
        (dict(tp=5, pp=8, dp=16), ConfigError, r"tp=5 does not divide n_heads=96"),
        (dict(tp=8, pp=8, dp=8), ConfigError, r"tp x pp x dp x cp = 8 x 8 x 8 x 1 = 512, but n_gpus = 1024"),
        (
            dict(tp=8, pp=8, dp=16, global_batch_size=1000, microbatch_size=4),
            ConfigError,
            r"global_batch_size=1000 is not divisible by microbatch_size x dp = 4 x 16 = 64",
        ),
        (
            dict(tp=1, pp=1, dp=1024, global_batch_size=1024),
            Infeasible,
            r"gpt3-175b with tp=1 pp=1 dp=1024 .* needs \d+\.\d GB per GPU.*the GPU has 85.5 GB",
        ),
    ],
)
def test_bad_layouts_name_the_field(layout, error, pattern):
    model, spec = get_model("gpt3-175b"), preset("dgx-h100-superpod", nodes=128)
    kw = dict(global_batch_size=1536) | layout
    with pytest.raises(error, match=pattern):
        step_time(model, ParallelLayout(**kw), spec)


def test_embedding_chunks_with_interleaving_cut_per_stage():
    # Llama 3 8B, pp 2, v 2: 32 + 2 = 34 layer places, 17 a stage (an even cut, 34 / 2); a stage's two
    # chunks hold 9 and 8 places (Megatron-LM's --pipeline-model-parallel-layout allows any layers per
    # virtual stage), so the last stage runs 16 layers and the output layer, as at v = 1 and as the plain
    # cut: not 36 padded places (17 layers and the output layer), and no "uneven stages" note.
    model, spec = get_model("llama3-8b"), preset("h100-ib-2node")
    kw = dict(tp=1, pp=2, dp=8, zero_stage=1, microbatch_size=1, global_batch_size=64)
    off = StepOptions(check_memory=False)
    chunks = StepOptions(check_memory=False, embedding_chunks=True)
    plain = step_time(model, ParallelLayout(virtual_pipeline_stages=2, **kw), spec, options=off)
    v2 = step_time(model, ParallelLayout(virtual_pipeline_stages=2, **kw), spec, options=chunks)
    assert v2.layers_per_stage == plain.layers_per_stage == 16
    assert v2.breakdown_s["compute"] == pytest.approx(plain.breakdown_s["compute"], rel=1e-12)
    assert not any("uneven" in n for n in v2.notes)
