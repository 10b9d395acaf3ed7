"""Expert parallelism folded over TP x DP (Megatron-Core's expert_tensor_parallel_size differing from TP).

Megatron-Core builds a second rank grid for the experts, etp x ep x edp x pp in the same order as the dense
tp x cp x dp x pp one (``parallel_state.initialize_model_parallel``: ``expert_decoder_rank_generator``,
default order tp-cp-ep-dp-pp, innermost first), and requires world_size % (etp x ep x pp) == 0; Liu et al.,
"MoE Parallel Folding", arXiv:2504.14960, Sec. 3. The groups below are derived by hand from that order.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tests.training.test_training_public import h100
from tests.training.test_training_public2 import QWEN3_235B

from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError
from aifabric.training import ParallelLayout, StepModel, get_model
from aifabric.training.fabric_step import step_traffic
from aifabric.training.gemm import layer_gemms
from aifabric.training.step import StepOptions

DSV3 = get_model("deepseek-v3-like")


def test_etp1_expert_groups_are_consecutive_ranks_across_tp():
    # tp=2 dp=4 ep=8 etp=1 on 8 GPUs. Dense: rank = tp + 2 dp. Experts: etp=1, so rank = ep (+ 8 edp, edp=1):
    # one EP group of all 8 ranks, EP 8 > DP 4 (folded over both TP ranks); every rank its own expert-DP.
    g = ParallelLayout(tp=2, dp=4, ep=8, expert_tp=1, sequence_parallel=True).groups(8)
    assert g.tp == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert g.dp == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert g.ep == ((0, 1, 2, 3, 4, 5, 6, 7),)
    assert g.expert_dp == tuple((i,) for i in range(8))


def test_etp1_groups_with_expert_data_parallelism_and_stages():
    # tp=2 pp=2 dp=4 ep=4 etp=1 on 16 GPUs: experts rank = ep + 4 edp + 8 pp (edp = 2 x 4 / 4 = 2), so EP
    # groups are runs of 4, expert-DP pairs 4 apart, and the pipeline groups are the dense ones (rank + 8).
    lay = ParallelLayout(tp=2, pp=2, dp=4, ep=4, expert_tp=1, sequence_parallel=True)
    g = lay.groups(16)
    assert g.ep == ((0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15))
    assert g.expert_dp == ((0, 4), (1, 5), (2, 6), (3, 7), (8, 12), (9, 13), (10, 14), (11, 15))
    assert g.pp == tuple((i, i + 8) for i in range(8))
    assert lay.expert_dp == 2
    for rank in range(16):
        assert lay.group_of("ep", rank) == next(x for x in g.ep if rank in x)
        assert lay.group_of("expert_dp", rank) == next(x for x in g.expert_dp if rank in x)


def test_qwen3_235b_recipe_ep32_spans_four_nodes_not_refused():
    # Megatron-Bridge Qwen3-235B-A22B on 256 H100: TP 2, PP 8, DP 16, EP 32, expert_tensor_parallel_size 1.
    # EP 32 > DP 16: the 32 ranks of an EP group are ranks 0..31 (TP x DP of a stage), 4 nodes of 8.
    # 94 layers over PP 8: uneven stages, as the step model pads them.
    lay = ParallelLayout(tp=2, pp=8, dp=16, ep=32, expert_tp=1, sequence_parallel=True)
    sm = StepModel(QWEN3_235B, h100(256)())
    lay.validate(sm.padded_model(lay), 256)
    assert lay.group_of("ep", 0) == tuple(range(32))
    assert lay.group_of("pp", 0) == tuple(range(0, 256, 32))
    assert sm.group(lay, "ep").n_domains == 4


def test_dsv3_ep64_folded_spans_eight_nodes_where_carved_spans_sixteen():
    # DeepSeek-V3 TP 2, PP 8, DP 64, EP 64 on 1,024 H100: carved from DP, an EP group strides over TP (ranks
    # 0, 2, ..., 126: 16 nodes); folded (etp = 1), it is ranks 0..63, 8 nodes.
    sm = StepModel(DSV3, h100(1024)())
    base = dict(tp=2, pp=8, dp=64, ep=64, sequence_parallel=True)
    carved, folded = ParallelLayout(**base), ParallelLayout(**base, expert_tp=1)
    assert carved.group_of("ep", 0) == tuple(range(0, 128, 2))
    assert folded.group_of("ep", 0) == tuple(range(64))
    assert sm.group(carved, "ep").n_domains == 16 and sm.group(folded, "ep").n_domains == 8


def test_default_expert_tp_is_tp():
    lay = ParallelLayout(tp=2, dp=4, ep=2)
    same = ParallelLayout(tp=2, dp=4, ep=2, expert_tp=2)
    assert lay.etp == 2 and not lay.folded and not same.folded
    assert lay.groups(8) == same.groups(8)
    assert "etp" not in lay.describe() and "etp=1" in ParallelLayout(tp=2, dp=4, ep=8, expert_tp=1).describe()


@pytest.mark.parametrize(
    ("layout", "match"),
    [
        (dict(tp=2, dp=16, ep=64, expert_tp=1, sequence_parallel=True),
         r"ep x expert_tp = 64 x 1 = 64 does not divide tp x cp x dp = 2 x 1 x 16 = 32"),
        (dict(tp=2, dp=16, ep=32, expert_tp=1),
         r"expert_tp=1 with tp=2 needs sequence_parallel"),
        (dict(tp=2, pp=2, dp=8, ep=16, expert_tp=1, sequence_parallel=True, order="tp-pp-cp-ep-dp"),
         r"order='tp-pp-cp-ep-dp': with expert_tp=1 the experts' grid puts the pipeline stages on other"),
        (dict(tp=1, dp=32, ep=32, expert_tp=5), r"expert_tp=5 does not divide the experts' ffn width 1536"),
        (dict(tp=2, dp=16, ep=32, sequence_parallel=True), r"ep=32 does not divide dp x cp = 16 x 1 = 16"),
        (dict(expert_tp=0), r"expert_tp must be an integer >= 1, got 0"),
    ],
)  # fmt: skip
def test_impossible_folds_are_refused_in_one_line(layout, match):
    pp = layout.get("pp", 1)
    n = layout.get("tp", 1) * pp * layout.get("dp", 1)
    with pytest.raises(ConfigError, match=match):
        lay = ParallelLayout(**layout, global_batch_size=layout.get("dp", 1) * 8)
        lay.validate(dataclasses.replace(QWEN3_235B, n_layers=96), n)  # 96: whole stages


def test_dense_model_refuses_a_fold():
    with pytest.raises(ConfigError, match="expert_tp=1 but model 'gpt3-175b' has no experts"):
        ParallelLayout(tp=8, dp=2, expert_tp=1, sequence_parallel=True).validate(get_model("gpt3-175b"), 16)


def test_step_model_refuses_an_expert_tp_between_one_and_tp():
    lay = ParallelLayout(tp=4, pp=8, dp=8, ep=16, expert_tp=2, sequence_parallel=True, global_batch_size=64)
    sm = StepModel(DSV3, h100(256)(), options=StepOptions(check_memory=False))
    with pytest.raises(ConfigError, match=r"expert_tp=2 with tp=4: the step model times expert_tp = 1 or tp"):
        sm.evaluate(lay)


def test_etp1_expert_gemms_are_whole_experts_on_fewer_tokens_same_flops():
    # Qwen3-235B, T = 4,096 tokens, tp 2, ep 32, 128 experts of width 1,536, top-8. etp = 2: each of the 4
    # local experts gets 4096 x 8 x 32 / 128 = 8,192 tokens at width 1,536 / 2; etp = 1: the EP group's 32
    # ranks dispatch 4,096 / 2 tokens each, 4096 x 8 x 32 / (2 x 128) = 4,096 per expert at the full width.
    folded = layer_gemms(QWEN3_235B, 4096, 2, moe=True, ep=32, etp=1)
    carved = layer_gemms(QWEN3_235B, 4096, 2, moe=True, ep=32)
    assert (folded[2].m, folded[2].n, folded[2].repeat) == (4096, 2 * 1536, 4)
    assert (carved[2].m, carved[2].n, carved[2].repeat) == (8192, 1536, 4)
    assert sum(g.flops for g in folded) == pytest.approx(sum(g.flops for g in carved))


def test_etp1_keeps_whole_experts_per_gpu_and_shards_their_optimizer_less():
    # Expert weights per GPU: n_experts x P_e / (etp x ep) per MoE layer, twice the carved one at tp 2;
    # expert-DP = tp x dp / (etp x ep) = 2 x 64 / 64 = 2 (carved: 64 / 64 = 1).
    sm = StepModel(DSV3, h100(1024)())
    base = dict(tp=2, pp=8, dp=64, ep=64, sequence_parallel=True)
    carved, folded = ParallelLayout(**base), ParallelLayout(**base, expert_tp=1)
    padded = sm.padded_model(carved)
    d_c, e_c = sm.stage_params(carved, padded, 0, 7)
    d_f, e_f = sm.stage_params(folded, padded, 0, 7)
    assert d_f == d_c and e_f == pytest.approx(2 * e_c)
    assert e_f == pytest.approx(7 * 256 * DSV3.expert_params / 64)
    assert (carved.expert_dp, folded.expert_dp) == (1, 2)


def _pair_s(sm: StepModel, layout: ParallelLayout, message_bytes: float) -> float:
    """Seconds of one sequence-parallel all-gather + reduce-scatter pair of ``message_bytes`` over TP."""
    comm = sm.group(layout, "tp")
    return sum(sm.collective(op, message_bytes, comm).time_s for op in ("all_gather", "reduce_scatter"))


def test_etp1_drops_the_tp_collectives_around_routed_experts_only():
    # Qwen3 (no shared expert): every layer MoE, so the folded step has one sequence-parallel all-gather +
    # reduce-scatter pair per layer (the attention's) instead of two. At etp = tp the MLP pair gathers the
    # dispatched tokens (Megatron-Core core_v0.10.0 MoEAlltoAllTokenDispatcher: all-gather over TP after the
    # all-to-all), top_k = 8 times the attention's b s h / cp bytes: what folding drops is that pair.
    # DeepSeek-V3's shared expert runs on the dense TP group and keeps its pair of the layer's size.
    opts = StepOptions(check_memory=False, capacity_factor=1.0)
    qwen = dict(tp=2, pp=2, dp=16, ep=16, sequence_parallel=True, global_batch_size=512)
    sm = StepModel(QWEN3_235B, h100(64)(), options=opts)
    carved, folded = (ParallelLayout(**qwen, **x) for x in ({}, {"expert_tp": 1}))
    c, f = (sm.evaluate(x).breakdown_s["tp"] for x in (carved, folded))
    size = QWEN3_235B.seq_len * QWEN3_235B.hidden_size * 2
    routed = _pair_s(sm, carved, QWEN3_235B.top_k * size) / _pair_s(sm, carved, size)
    assert c == pytest.approx(f * (1 + routed))
    dsv3 = dict(tp=2, pp=8, dp=64, ep=64, sequence_parallel=True, global_batch_size=1024)
    sm = StepModel(DSV3, h100(1024)(), options=opts)
    carved, folded = (ParallelLayout(**dsv3, **x) for x in ({}, {"expert_tp": 1}))
    c, f = (sm.evaluate(x).breakdown_s["tp"] for x in (carved, folded))
    # The bottleneck stage has 8 layers, all MoE: folded keeps 2 pairs a layer, carved adds the routed one.
    size = DSV3.seq_len * DSV3.hidden_size * 2
    routed = _pair_s(sm, carved, DSV3.top_k * size) / (2 * _pair_s(sm, carved, size))
    assert c == pytest.approx(f * (1 + routed))


def test_fabric_traffic_of_a_folded_all_to_all_stays_in_the_node():
    # Mixtral 8x7B (8 experts) on 4 DGX H100 nodes, TP 2 DP 16 EP 8. Carved: EP groups stride over TP, ranks
    # 0, 2, ..., 14 (two nodes); folded (etp = 1): ranks 8k .. 8k + 7, one node each: the all-to-all the
    # fabric carries is node-local.
    spec = preset("dgx-h100-superpod", nodes=4)
    sm = StepModel(get_model("mixtral-8x7b"), spec)
    base = dict(tp=2, dp=16, ep=8, sequence_parallel=True, global_batch_size=256)
    ranks = {}
    for name, extra in (("carved", {}), ("folded", {"expert_tp": 1})):
        traffic = step_traffic(sm, ParallelLayout(**base, **extra), spec, np.arange(32), job="j")
        ranks[name] = [tuple(plan.stages[0].ranks.tolist()) for plan in traffic["ep"][0]]
    assert ranks["carved"][0] == tuple(range(0, 16, 2))
    assert ranks["folded"] == [tuple(range(8 * k, 8 * k + 8)) for k in range(4)]
