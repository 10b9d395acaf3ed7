"""ParallelLayout: validation and rank groups (aifabric.training.layout)."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from aifabric.errors import ConfigError
from aifabric.training.layout import DEFAULT_ORDER, ParallelLayout, Recompute
from aifabric.training.models import ModelSpec, get_model


def test_default_order_tp_innermost():
    # Brief / Megatron-LM RankGenerator: tp=8, pp=2, dp=2 on 32 GPUs, order tp-cp-ep-dp-pp.
    # rank = tp + 8 dp + 16 pp, so TP groups are the blocks of 8 consecutive ranks.
    g = ParallelLayout(tp=8, pp=2, dp=2).groups(32)
    assert g.tp == tuple(tuple(range(8 * k, 8 * k + 8)) for k in range(4))
    assert g.dp == tuple((i, i + 8) for i in (*range(8), *range(16, 24)))
    assert g.pp == tuple((i, i + 16) for i in range(16))
    assert g.cp == tuple((i,) for i in range(32))
    assert g.ep == g.cp and g.dp_cp == g.dp and g.expert_dp == g.dp
    assert g["tp"] is g.tp


def test_custom_order_dp_innermost():
    # order dp-tp-cp-ep-pp: rank = dp + 2 tp + 16 pp for tp=8, pp=2, dp=2.
    g = ParallelLayout(tp=8, pp=2, dp=2, order="dp-tp-cp-ep-pp").groups(32)
    assert g.dp[0] == (0, 1)
    assert g.tp[0] == (0, 2, 4, 6, 8, 10, 12, 14)
    assert g.tp[1] == (1, 3, 5, 7, 9, 11, 13, 15)
    assert g.pp[0] == (0, 16)


def test_context_parallel_groups():
    # tp=2, cp=2, dp=2: rank = tp + 2 cp + 4 dp. dp_cp joins cp and dp (cp varies fastest).
    g = ParallelLayout(tp=2, cp=2, dp=2).groups(8)
    assert g.cp == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert g.dp == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert g.dp_cp == ((0, 2, 4, 6), (1, 3, 5, 7))


def test_expert_groups_carved_from_dp():
    # Megatron-LM expert RankGenerator (tp, ep, expert-dp, pp) with the same order: tp=2, dp=4, ep=2.
    # Dense: rank = tp + 2 dp. Expert view: rank = tp + 2 ep + 4 edp.
    g = ParallelLayout(tp=2, dp=4, ep=2).groups(8)
    assert g.ep == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert g.expert_dp == ((0, 4), (1, 5), (2, 6), (3, 7))
    # every EP group lies inside one dense data-parallel group
    dp_sets = [set(x) for x in g.dp]
    assert all(any(set(e) <= d for d in dp_sets) for e in g.ep)


def test_expert_groups_fold_context_parallel():
    # cp=2, dp=2, ep=4: EP spans the whole dp x cp block (cp folded into ep, as Megatron-LM does).
    g = ParallelLayout(tp=2, cp=2, dp=2, ep=4).groups(8)
    assert g.ep == g.dp_cp == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert g.expert_dp == tuple((i,) for i in range(8))


@pytest.mark.parametrize("dim", ["tp", "cp", "dp", "pp", "dp_cp", "ep", "expert_dp"])
@pytest.mark.parametrize(
    ("order", "ep"),
    [("tp-cp-ep-dp-pp", 2), ("pp-dp-ep-cp-tp", 4), ("pp-tp-cp-ep-dp", 2), ("cp-tp-pp-ep-dp", 1)],
)
def test_group_of_matches_groups(dim, order, ep):
    lay = ParallelLayout(tp=2, pp=3, dp=4, cp=2, ep=ep, order=order)
    groups = lay.groups(48)[dim]
    for rank in range(48):
        (expected,) = [grp for grp in groups if rank in grp]
        assert lay.group_of(dim, rank) == expected


def test_group_of_errors():
    lay = ParallelLayout(tp=2, dp=2)
    with pytest.raises(ConfigError, match="rank must be in 0..3, got 4"):
        lay.group_of("tp", 4)
    with pytest.raises(ConfigError, match="dimension must be one of"):
        lay.group_of("xp", 0)


def test_microbatches_and_defaults():
    lay = ParallelLayout(tp=8, pp=2, dp=32, microbatch_size=4, global_batch_size=1536)
    assert lay.n_microbatches == 12  # m = B / (b d) = 1536 / (4 x 32), Narayanan et al. notation
    assert lay.n_gpus == 512
    assert ParallelLayout(dp=4, microbatch_size=2).global_batch_size == 8
    assert ParallelLayout().order == DEFAULT_ORDER


def test_fsdp_alias_and_recompute_strings():
    assert ParallelLayout(zero_stage="fsdp").zero_stage == 3
    assert ParallelLayout.from_dict({"dp": 8, "fsdp": True}).zero_stage == 3
    assert ParallelLayout(recompute="FULL").recompute is Recompute.FULL
    assert dataclasses.replace(ParallelLayout(), tp=4).tp == 4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tp": 0}, "tp must be an integer >= 1, got 0"),
        ({"zero_stage": 4}, "zero_stage must be 0, 1, 2, 3 or 'fsdp', got 4"),
        ({"recompute": "partial"}, "recompute must be one of"),
        ({"order": "tp-dp-pp"}, "order must be a permutation of tp-cp-ep-dp-pp"),
        ({"order": "tp-tp-ep-dp-pp"}, "order must be a permutation"),
        ({"sequence_parallel": 1}, "sequence_parallel must be true or false"),
        ({"global_batch_size": 0}, "global_batch_size must be an integer >= 1, got 0"),
    ],
)
def test_field_errors(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        ParallelLayout(**kwargs)


def test_from_dict_unknown_key():
    with pytest.raises(ConfigError, match=r"unknown field\(s\) \['tensor_parallel'\]"):
        ParallelLayout.from_dict({"tensor_parallel": 8})


GPT39 = get_model("megatron-gpt-39.1b")  # a = 64, l = 48
LLAMA8 = get_model("llama3-8b")  # a = 32, kv = 8, l = 32
MIXTRAL = get_model("mixtral-8x7b")  # 8 experts


@pytest.mark.parametrize(
    ("model", "layout", "n_gpus", "match"),
    [
        (GPT39, ParallelLayout(tp=8, pp=2, dp=2), 64,
         r"tp x pp x dp x cp = 8 x 2 x 2 x 1 = 32, but n_gpus = 64"),
        (get_model("megatron-gpt-1.7b"), ParallelLayout(tp=16), 16,
         r"tp=16 does not divide n_heads=24 of model 'megatron-gpt-1.7b'"),
        (LLAMA8, ParallelLayout(tp=16), 16, r"tp=16 does not divide n_kv_heads=8"),
        (GPT39, ParallelLayout(tp=8, dp=4, microbatch_size=2, global_batch_size=12), 32,
         r"global_batch_size=12 is not divisible by microbatch_size x dp = 2 x 4 = 8"),
        (GPT39, ParallelLayout(tp=8, pp=5), 40,
         r"n_layers=48 of model 'megatron-gpt-39.1b' is not divisible by pp x virtual_pipeline_stages = 5 x "
         r"1 = 5"),
        (GPT39, ParallelLayout(tp=8, pp=4, virtual_pipeline_stages=5, global_batch_size=4), 32,
         r"n_layers=48 .* = 4 x 5 = 20"),
        (GPT39, ParallelLayout(virtual_pipeline_stages=2), 1, r"virtual_pipeline_stages=2 needs pp > 1"),
        (GPT39, ParallelLayout(pp=4, virtual_pipeline_stages=2, global_batch_size=6), 4,
         r"n_microbatches=6 is not divisible by pp=4"),
        (GPT39, ParallelLayout(dp=2, ep=2), 2, r"ep=2 but model 'megatron-gpt-39.1b' has no experts"),
        (MIXTRAL, ParallelLayout(dp=3, ep=3), 3, r"ep=3 does not divide the 8 experts"),
        (MIXTRAL, ParallelLayout(dp=2, ep=4), 2, r"ep=4 does not divide dp x cp = 2 x 1 = 2"),
        (MIXTRAL, ParallelLayout(tp=2, pp=2, dp=2, ep=2, order="dp-tp-ep-pp-cp"), 8,
         r"the ep, dp and cp dimensions must be adjacent"),
        (LLAMA8, ParallelLayout(cp=3), 3, r"seq_len=8192 is not divisible by 2 x cp = 6"),
        (get_model("megatron-gpt-1.7b"), ParallelLayout(tp=3, sequence_parallel=True), 3,
         r"sequence_parallel: seq_len / cp = 2048 is not divisible by tp=3"),
    ],
)  # fmt: skip
def test_validate_messages(model, layout, n_gpus, match):
    with pytest.raises(ConfigError, match=match):
        layout.validate(model, n_gpus)


def test_validate_accepts_table1_layouts(table1_row):
    # Every Table 1 configuration ran (Narayanan et al.), with b and v of Megatron-LM run_table_1.sh.
    name, _, _, _, _, t, p, n, gbs, b, v = table1_row
    lay = ParallelLayout(tp=t, pp=p, dp=n // (t * p), microbatch_size=b, global_batch_size=gbs,
                         virtual_pipeline_stages=v, recompute="full")  # fmt: skip
    lay.validate(get_model(name), n)


def test_expert_order_rule_ignores_trivial_dimensions():
    # pp=1 between ep and dp is no obstacle: the live ep/dp ranks stay adjacent.
    lay = ParallelLayout(tp=2, dp=4, ep=2, order="tp-ep-pp-dp-cp")
    lay.validate(MIXTRAL, 8)
    assert lay.groups(8).ep == ((0, 2), (1, 3), (4, 6), (5, 7))


def test_groups_partition_every_rank():
    for order in itertools.islice(itertools.permutations(("tp", "cp", "ep", "dp", "pp")), 0, 120, 7):
        lay = ParallelLayout(tp=2, cp=2, dp=2, pp=2, order="-".join(order))
        g = lay.groups(16)
        for dim, size in (("tp", 2), ("cp", 2), ("dp", 2), ("pp", 2), ("dp_cp", 4)):
            flat = sorted(r for grp in g[dim] for r in grp)
            assert flat == list(range(16)), (order, dim)
            assert all(len(grp) == size for grp in g[dim])


def test_layout_model_independent_of_spec_equality():
    # A small custom model validates too (no preset needed).
    m = ModelSpec("tiny", n_layers=4, hidden_size=64, n_heads=4, vocab_size=128, seq_len=64)
    ParallelLayout(tp=4, pp=2, dp=2, global_batch_size=8).validate(m, 16)
