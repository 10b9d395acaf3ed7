"""Input and model-reading defects a new-user trial found (session 9): each test runs one command or reads
one file; its docstring holds the command, what it printed and what the product should do."""

import json

import pytest
from tests.cli.refusal import refused
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.training.models import load_model

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: google/gemma-7b's config.json as published on the Hugging Face hub (transformers 4.38): GemmaForCausalLM,
#: ``hidden_act: gelu``, no ``tie_word_embeddings`` key (GemmaConfig's default is True).
GEMMA_7B = {
    "architectures": ["GemmaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 2,
    "eos_token_id": 1,
    "head_dim": 256,
    "hidden_act": "gelu",
    "hidden_size": 3072,
    "initializer_range": 0.02,
    "intermediate_size": 24576,
    "max_position_embeddings": 8192,
    "model_type": "gemma",
    "num_attention_heads": 16,
    "num_hidden_layers": 28,
    "num_key_value_heads": 16,
    "pad_token_id": 0,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 10000.0,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 256000,
}


def _gemma(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GEMMA_7B))
    return load_model(str(path))


def test_a_gemma_config_keeps_its_gated_gelu_mlp(tmp_path):
    """``aifabric checkpoint --nodes 1 -m gemma-7b/config.json --storage ddn-ai400x2-turbo --storage-units 1``
    printed "7.21 B params". Gemma's MLP is gated (GeGLU: gate_proj, up_proj, down_proj; transformers'
    ``GemmaMLP``), but ``_hf_architecture`` calls an MLP gated only for a SiLU activation, so the GELU of
    Gemma gives two matrices instead of three. Gemma Team 2024 (arXiv:2403.08295, Table 2): the 7B model has
    7,751,248,896 non-embedding parameters = 28 x (attention 4 x 3072 x 4096 + MLP 3 x 3072 x 24576 + two
    RMSNorms of 3072) + the final norm. Expected: 28 layers of 276,830,208 parameters each."""
    m = _gemma(tmp_path)
    assert m.n_layers * m.dense_layer_params + m.hidden_size == 7_751_248_896, m.dense_layer_params


def test_a_gemma_config_ties_its_embeddings_as_transformers_does(tmp_path):
    """The same config.json has no ``tie_word_embeddings`` key; transformers' ``GemmaConfig`` defaults it to
    True (the output layer is the embedding matrix), and Gemma Team 2024 Table 2 counts 786,432,000
    embedding parameters once (256,000 x 3,072) in its 8.54 B. ``_hf_architecture`` ties only GPT-2, so a
    second 786 M-parameter output layer is added (weights, gradients and optimizer state). Expected: no
    separate output layer (``output_params`` 0)."""
    assert _gemma(tmp_path).output_params == 0


def test_transport_victim_refusal_names_senders():
    """``aifabric transport victim --senders 1 -t ib`` printed "error: senders_far must be an integer >= 1,
    got 0": an internal parameter name and a value nobody typed. The victim scenario splits --senders over two
    leaves (``--help``), so one sender cannot make it. Expected: exit 2, one line naming --senders and 1."""
    refused(["transport", "victim", "--senders", "1", "-t", "ib"], "--senders", "1")


@pytest.mark.parametrize("scenario", ["ring", "all-to-all", "meta"])
def test_transport_runs_the_ranks_asked_or_refuses(scenario):
    """``aifabric transport ring --senders 1 -t ib --json`` ran "chained-ring: 4 flows" between host0 and a
    host1 nobody asked for (``_scenario`` takes ``max(2, senders)``); all-to-all and meta do the same. --help
    says --senders is the ranks of these scenarios. Expected: one rank either is refused (exit 2 naming
    --senders) or runs no flow."""
    r = runner.invoke(app, ["transport", scenario, "--senders", "1", "-t", "ib", "--json"])
    if r.exit_code == 2:
        assert "--senders" in r.stderr, r.stderr
    else:
        assert r.exit_code == 0, r.stdout + r.stderr
        assert json.loads(r.stdout)["flows"] == 0, r.stdout[:300]


def test_transport_permutation_runs_the_hosts_asked_or_refuses():
    """``aifabric transport permutation --senders 5 -t ib`` and ``--senders 1`` both printed
    "permutation/even: 16 flows", the same as ``--senders 4``: the count is cut to a multiple of 4 hosts
    (``max(1, senders // 4)`` per leaf) and raised to 4, and --help does not list permutation among the
    scenarios --senders shapes. An option that changes nothing is dropped silently (other scenarios refuse
    options they do not take: --skew on incast exits 2). Expected: --senders 1 and 5 either refused (exit 2
    naming --senders) or each a different run from --senders 4."""
    outs = {}
    for senders in ("1", "4", "5"):
        r = runner.invoke(app, ["transport", "permutation", "--senders", senders, "-t", "ib", "--json"])
        if r.exit_code == 2:
            assert "--senders" in r.stderr, r.stderr
            continue
        assert r.exit_code == 0, r.stdout + r.stderr
        outs[senders] = json.loads(r.stdout)["flows"]
    for odd in ("1", "5"):
        if odd in outs and "4" in outs:
            assert outs[odd] != outs["4"], outs


def test_a_nic_speed_below_any_network_adapter_is_refused(tmp_path):
    """``aifabric nccl-tests compare run.log --nic-speed "1 b/s"`` (a 2 x 8 H100 all_reduce log, 437.67 GB/s
    busbw at 1 GiB) predicted 4.6e15 us and 0.00 GB/s for 1 GiB, a deviation of +1.0e14 %, and said
    "verdict: healthy" ("1 Mb/s": 4.6e9 us, the same verdict). ``--nic-speed "400 GB/s"`` is refused
    ("above any NIC made (ConnectX-9: 1.6 Tb/s)"), but no floor exists: the slowest adapter in the catalogue
    is the 1 GbE BMC port, and IEEE 802.3's slowest Ethernet is 10 Mb/s. Expected: exit 2, one line naming
    --nic-speed and the value."""
    log = tmp_path / "run.log"
    rows = [
        "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5",
        "#",
        "# Using devices",
    ]
    rows += [
        f"#  Rank {r:2d} Group  0 Pid {1000 + r} on {'nodeA' if r < 8 else 'nodeB'} device  {r % 8} "
        f"[0x{r:02x}] NVIDIA H100 80GB HBM3"
        for r in range(16)
    ]
    rows += [
        "#    size     count  type redop root   time  algbw  busbw #wrong   time  algbw  busbw #wrong",
        "1073741824 268435456 float   sum   -1 4600.0 233.42 437.67      0 4600.0 233.42 437.67      0",
    ]
    log.write_text("\n".join(rows) + "\n")
    refused(["nccl-tests", "compare", str(log), "--nic-speed", "1 b/s"], "--nic-speed", "1 b/s")


@pytest.mark.parametrize(
    ("text", "claim"),
    [("a 72-GPU NVLink domain", "72"), ("Colossus: 100k GPUs", "100k")],
    ids=["hyphenated-72-GPU", "k-suffix-100k"],
)
def test_an_announcement_reads_gpu_counts_as_vendors_write_them(text, claim):
    """``aifabric announcement "a 72-GPU NVLink domain" -c gb200-nvl72`` and ``aifabric announcement
    "Colossus: 100k GPUs"`` both exited 2 with "no number with a unit (TB/s, Gb/s, GPUs, MW) found in the
    text", while "72 GPUs" and "100,000 GPUs" are read. NVIDIA's GB200 NVL72 page calls the rack "a 72-GPU
    NVLink domain" and xAI announced Colossus as "100k" H100 GPUs. Expected: exit 0 and a claim row holding
    the count (72: matches the fast-domain size of gb200-nvl72)."""
    r = runner.invoke(app, ["announcement", text, "-c", "gb200-nvl72", "--json"])
    assert r.exit_code == 0, r.stderr
    assert claim in r.stdout, r.stdout


@pytest.mark.parametrize(
    ("op", "size"), [("all_gather", "3"), ("reduce_scatter", "3"), ("all_to_all", "100")]
)
def test_a_size_no_rank_split_can_carry_is_refused_or_rounded(op, size):
    """``aifabric collective all_gather --nodes 2 -s 3`` printed "size 3 B: time 23.30 us" for 16 ranks, i.e.
    0.1875 bytes per rank; ``all_to_all -s 100`` sends 6.25 bytes to each peer. ``-s 1.5`` is refused ("a
    message is a whole number of bytes"), and NCCL takes these calls as a whole count per rank
    (ncclAllGather's sendcount, ncclReduceScatter's recvcount; nccl-tests rounds the size down to a multiple
    of the ranks, all_gather.cu AllGatherGetCollByteCount). Expected: exit 2 naming --size, or a timed size
    that the ranks split into whole bytes (per rank; per peer for all_to_all)."""
    r = runner.invoke(app, ["collective", op, "--nodes", "2", "-s", size, "--json"])
    if r.exit_code == 2:
        assert "--size" in r.stderr, r.stderr
        return
    assert r.exit_code == 0, r.stdout + r.stderr
    row = json.loads(r.stdout)
    row = row[0] if isinstance(row, list) else row
    assert row["message_bytes"] % row["n_ranks"] == 0, (row["message_bytes"], row["n_ranks"])


def test_fabric_refusal_of_unknown_traffic_lists_the_patterns_too():
    """``aifabric fabric incats --nodes 2`` (a typo of the incast pattern) printed "error: collective:
    unknown collective 'incats'; known: all_reduce, reduce_scatter, all_gather, all_to_all, broadcast,
    reduce, send_recv": it names a field the command does not have and leaves out the patterns its argument
    takes (``fabric --help``: "TRAFFIC: a collective (...) or a pattern (permutation, incast, uniform)").
    Expected: exit 2, one line naming the traffic argument's value and listing the patterns as well."""
    refused(["fabric", "incats", "--nodes", "2"], "incats", "permutation", "incast", "uniform")
