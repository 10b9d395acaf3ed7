"""ModelSpec, presets and YAML loading (aifabric.training.models)."""

from __future__ import annotations

import dataclasses

import pytest

from aifabric.errors import ConfigError, ParseError
from aifabric.training.flops import active_param_count, param_count
from aifabric.training.models import BytesPerParam, ModelSpec, get_model, list_models

REQUIRED = [
    "megatron-gpt-1.7b", "megatron-gpt-3.6b", "megatron-gpt-7.5b", "megatron-gpt-18.4b",
    "megatron-gpt-39.1b", "megatron-gpt-76.1b", "megatron-gpt-145.6b", "megatron-gpt-310.1b",
    "megatron-gpt-529.6b", "megatron-gpt-1008b", "gpt3-175b", "llama3-8b", "llama3-70b", "llama3-405b",
    "mixtral-8x7b", "deepseek-v3-like",
]  # fmt: skip


def test_presets_present_and_sourced():
    names = list_models()
    assert names[: len(REQUIRED)] == REQUIRED
    for name in names:
        model = get_model(name)
        assert model.name == name
        assert model.source, f"{name} has no source"


def test_aliases_and_case():
    assert get_model("megatron-gpt-1t") is get_model("MEGATRON-GPT-1008B")
    assert get_model("deepseek-v3") is get_model("deepseek-v3-like")


def test_unknown_preset_lists_names():
    with pytest.raises(ConfigError, match="no preset named 'gpt-5'.*llama3-8b"):
        get_model("gpt-5")


@pytest.mark.parametrize(
    ("name", "n_layers", "hidden", "ffn", "heads", "kv"),
    [
        # Llama 3 paper (arXiv:2407.21783) Table 3.
        ("llama3-8b", 32, 4096, 14336, 32, 8),
        ("llama3-70b", 80, 8192, 28672, 64, 8),
        ("llama3-405b", 126, 16384, 53248, 128, 8),
    ],
)
def test_llama3_shapes_and_hand_count(name, n_layers, hidden, ffn, heads, kv):
    m = get_model(name)
    assert (m.n_layers, m.hidden_size, m.ffn_hidden_size, m.n_heads, m.n_kv_heads) == (
        n_layers, hidden, ffn, heads, kv,
    )  # fmt: skip
    # Independent hand count: per layer Q and O (h x h each), K and V (h x 8*128 each), SwiGLU 3 h f,
    # two RMSNorms h each; untied embedding and output V h each; final RMSNorm h.
    d = hidden // heads
    per_layer = 2 * hidden * hidden + 2 * hidden * kv * d + 3 * hidden * ffn + 2 * hidden
    expected = n_layers * per_layer + 2 * 128256 * hidden + hidden
    assert param_count(m) == expected


def test_llama3_published_sizes():
    # Model names (Llama 3 paper Table 3): 8B, 70B, 405B; the count is within 1.5% of each name.
    for name, billions in (("llama3-8b", 8), ("llama3-70b", 70), ("llama3-405b", 405)):
        assert param_count(get_model(name)) / 1e9 == pytest.approx(billions, rel=0.015)


def test_mixtral_total_and_active():
    # Mistral AI, "Mixtral of experts" announcement / arXiv:2401.04088 Sec. 2.1: 47B total ("46.7B"),
    # 13B active ("12.9B") parameters per token.
    m = get_model("mixtral-8x7b")
    assert round(param_count(m) / 1e9, 1) == 46.7
    assert round(active_param_count(m) / 1e9, 1) == 12.9
    assert m.n_moe_layers == 32


def test_deepseek_v3_like_total_and_active():
    # DeepSeek-V3 report (arXiv:2412.19437) abstract: 671B total, 37B activated per token. Our MLA-as-MHA
    # approximation has ~18.6M more attention parameters per layer (206M vs ~187M), +1.1B over 61 layers,
    # and the embedding/output (1.85B) counts as active here, so we allow 1% on the total, 5% on active.
    m = get_model("deepseek-v3-like")
    assert m.n_moe_layers == 58 and m.n_dense_layers == 3
    assert param_count(m) / 1e9 == pytest.approx(671, rel=0.01)
    assert active_param_count(m) / 1e9 == pytest.approx(37, rel=0.05)
    assert "MHA" in m.notes


def test_moe_layer_pattern():
    m = ModelSpec("alt", n_layers=8, hidden_size=64, n_heads=4, vocab_size=100, seq_len=16,
                  n_experts=4, top_k=1, moe_layer_freq=2, first_dense_layers=1)  # fmt: skip
    # MoE iff i >= 1 and i % 2 == 0: layers 2, 4, 6.
    assert m.n_moe_layers == 3
    assert [m.moe_layers_before(i) for i in range(9)] == [0, 0, 0, 1, 1, 2, 2, 3, 3]


def test_gpt_counts_equal_eq2_plus_final_layernorm():
    # Eq. 2 omits the final LayerNorm (2h); everything else is the same count.
    m = get_model("megatron-gpt-39.1b")
    h, l = 8192, 48  # noqa: E741
    assert param_count(m) == 12 * l * h * h + 13 * l * h + (51200 + 2048) * h + 2 * h


def test_bytes_per_param_default_is_18():
    # Formula note: bf16 params + fp32 grads + fp32 master + 2 fp32 moments = 18 bytes/param.
    assert get_model("llama3-8b").bytes_per_param == BytesPerParam(2, 4, 12)
    assert BytesPerParam().total == 18


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"n_kv_heads": 5}, "n_kv_heads=5 must divide n_heads=4"),
        ({"hidden_size": 66}, "hidden_size=66 is not divisible by n_heads=4"),
        ({"n_layers": 0}, "n_layers must be an integer >= 1, got 0"),
        ({"n_experts": 4, "top_k": 5}, "top_k must be in 1..n_experts=4, got 5"),
        ({"top_k": 2}, "top_k=2 .* dense model"),
        ({"norm": "batchnorm"}, "norm must be one of"),
        ({"bytes_per_param": {"weights": 2, "grads": 4, "optimizer": -1}}, "optimizer must be a number >= 0"),
    ],
)
def test_invalid_specs_name_field_and_value(change, match):
    base = {"n_layers": 2, "hidden_size": 64, "n_heads": 4, "vocab_size": 100, "seq_len": 16}
    with pytest.raises(ConfigError, match=match):
        ModelSpec("bad", **{**base, **change})


def test_replace_revalidates():
    m = get_model("llama3-8b")
    assert dataclasses.replace(m, seq_len=4096).seq_len == 4096
    with pytest.raises(ConfigError, match="n_kv_heads=3"):
        dataclasses.replace(m, n_kv_heads=3)


def test_explicit_head_dim():
    m = ModelSpec("g", n_layers=1, hidden_size=3072, n_heads=16, head_dim=256, vocab_size=10, seq_len=8)
    assert m.attention_params == 4 * 3072 * 16 * 256


def test_from_yaml_single_and_multi(tmp_path):
    one = tmp_path / "mine.yaml"
    one.write_text("n_layers: 2\nhidden_size: 64\nn_heads: 4\nvocab_size: 100\nseq_len: 32\n"
                   "bytes_per_param: {weights: 2, grads: 2, optimizer: 12}\n")  # fmt: skip
    m = ModelSpec.from_yaml(one)
    assert m.name == "mine" and m.bytes_per_param.grads == 2
    many = tmp_path / "many.yaml"
    many.write_text("a:\n  n_layers: 1\n  hidden_size: 8\n  n_heads: 2\n  vocab_size: 10\n  seq_len: 4\n"
                    "b:\n  aliases: [bee]\n  n_layers: 3\n  hidden_size: 8\n  n_heads: 2\n  vocab_size: 10\n"
                    "  seq_len: 4\n")  # fmt: skip
    assert ModelSpec.from_yaml(many, "BEE").n_layers == 3
    with pytest.raises(ConfigError, match="holds 2 models"):
        ModelSpec.from_yaml(many)
    with pytest.raises(ConfigError, match="no model 'c'"):
        ModelSpec.from_yaml(many, "c")


def test_from_yaml_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(ParseError, match="bad.yaml"):
        ModelSpec.from_yaml(bad)
    typo = tmp_path / "typo.yaml"
    typo.write_text("n_layers: 2\nhidden: 64\nn_heads: 4\nvocab_size: 100\nseq_len: 32\n")
    with pytest.raises(ConfigError, match=r"unknown field\(s\) \['hidden'\]"):
        ModelSpec.from_yaml(typo)
    with pytest.raises(ConfigError, match="missing field"):
        ModelSpec.from_dict({"n_layers": 2, "n_heads": 4, "vocab_size": 100, "seq_len": 32}, name="x")


#: A config.json of a family aifabric does not list (hand-written: 2 layers of width 64, MLP 256).
_UNKNOWN_FAMILY = {
    "model_type": "newarch",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 256,
    "vocab_size": 1000,
    "max_position_embeddings": 128,
}


def test_an_unknown_family_says_what_it_assumes_of_its_mlp_and_output_layer():
    """A family not in HF_FAMILIES: gated iff hidden_act is SiLU, tied as PretrainedConfig defaults (True),
    both said in notes; without any activation the MLP's matrix count would be a guess, so it is refused."""
    m = ModelSpec.from_hf_config({**_UNKNOWN_FAMILY, "hidden_act": "gelu"}, name="x")
    assert (m.gated_mlp, m.output_params) == (False, 0)
    assert "MLP assumed plain" in m.notes and "PretrainedConfig" in m.notes, m.notes
    gated = ModelSpec.from_hf_config({**_UNKNOWN_FAMILY, "hidden_act": "silu"}, name="x")
    assert gated.gated_mlp and "MLP assumed gated" in gated.notes
    with pytest.raises(ConfigError, match="neither hidden_act nor activation_function.*add hidden_act"):
        ModelSpec.from_hf_config(_UNKNOWN_FAMILY, name="x")


def test_a_known_family_needs_no_activation_to_know_its_gate():
    """Llama's MLP is gated whatever hidden_act says (transformers' LlamaMLP) and LlamaConfig does not tie."""
    m = ModelSpec.from_hf_config({**_UNKNOWN_FAMILY, "model_type": "llama"}, name="x")
    assert (m.gated_mlp, m.tied_embeddings, m.notes) == (True, False, "")
