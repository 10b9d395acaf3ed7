"""CLI defects a new user's first day found, running the README's commands on the example cluster and on
clusters of the newest features (switchless NVLink meshes) and trying hostile or mistaken input: each test
runs one command; its docstring holds the command, what it printed and what it should do. The README's rule
for bad input: exit 2 with one line on stderr naming the field and the value, never a traceback; and every
figure a report prints readable with its unit."""

import json
from pathlib import Path

import pytest
import yaml
from tests.trial.commands import EXAMPLE, runner

from aifabric.cli.app import app

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def _mesh_cluster(tmp_path: Path) -> str:
    """examples/cluster.yaml as two GB200 NVL4 boards (4 GPUs each, NVLink 5 all-to-all mesh, no NVSwitch)
    on its ConnectX-7 400G NICs and a one-tier Spectrum-4 leaf; returns its path."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec.update(name="nvl4-pair", accelerator="gb200", gpus_per_node=4, nodes=2)
    spec["scale_up"] = {"kind": "nvswitch", "link": "nvlink5-gb200-nvl4"}
    spec["scale_out"]["tiers"] = 1
    del spec["scale_out"]["oversubscription"]
    path = tmp_path / "nvl4.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_cluster_show_prints_hbm_capacity_with_its_unit(tmp_path: Path):
    """``aifabric cluster show nvl4.yaml`` (two GB200 NVL4 boards; the same on ``gb200-nvl72`` and
    ``dgx-h100-superpod``): the headline table prints "HBM capacity per GPU │ 186,000,000,000", "HBM
    capacity, fast domain │ 744,000,000,000" -- a bare count of bytes, where every other row carries its
    unit ("HBM bandwidth per GPU │ 8 TB/s", "BF16 peak per GPU │ 2.5 PFLOPS"). ``cli/cluster.py``'s
    ``_fmt`` formats bandwidth, power and compute and falls through to ``f"{value:,.0f}"`` for the headlines
    of kind ``memory``. The catalogue's GB200 holds 186 GB (NVIDIA GB200 NVL72 page: 13.4 TB HBM3e per rack
    = 72 x 186 GB), so the row should read 186 GB. Expected: the capacity rows print with a byte unit."""
    r = runner.invoke(app, ["cluster", "show", _mesh_cluster(tmp_path)])
    assert r.exit_code == 0, r.stdout + r.stderr
    row = next(line for line in r.stdout.splitlines() if "HBM capacity per GPU" in line)
    assert "186 GB" in row, row
    assert "186,000,000,000" not in row, row


@pytest.mark.parametrize(
    "args",
    [
        ["collective", "all_reduce", "-c", str(EXAMPLE), "--nodes", "1", "--size", "4GiB"],
        ["train", "-m", "llama3-8b", "-c", str(EXAMPLE), "--nodes", "1", "--tp", "8", "-B", "8"],
    ],
)
def test_example_cluster_on_one_node_is_not_refused_for_a_leaf_it_does_not_use(args: list[str]):
    """``aifabric collective all_reduce -c examples/cluster.yaml --nodes 1 --size 4GiB`` and ``aifabric
    train -m llama3-8b -c examples/cluster.yaml --nodes 1 --tp 8 -B 8``: both exit 2, "scale_out.
    oversubscription: 2:1 cannot be built to 1% for 8 GPUs on radix-128 switches (no scalable-unit count
    realises it); buildable leaf ratios nearest: 1:1". ``--nodes 2`` runs (16 GPUs: 8 rail leaves of 2 down
    and 1 up ports, 2:1). One node's eight GPUs talk over NVLink only: its collective and its TP=8 step never
    cross the scale-out leaf, and the same file's ``--ranks 8`` prices that very all-reduce (478.12 GB/s
    busbw, nvls/Simple). The message names neither ``--nodes 1`` nor a way out, and the user never wrote a
    ratio for one node. Expected: exit 0 -- a one-node run of a file whose ratio only one node cannot
    realise is priced (the leaf, unused, may be reported as not built), not refused."""
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.stdout + r.stderr


def test_example_cluster_on_one_node_prices_the_nodes_own_all_reduce():
    # the one-node run is the same file's 8-rank communicator (--ranks 8) on the full cluster: one NVLink
    # domain, nothing over the scale-out leaf (478.12 GB/s busbw, nvls/Simple, at 4 GiB)
    base = ["collective", "all_reduce", "-c", str(EXAMPLE), "--size", "4GiB", "--json"]
    runs = [runner.invoke(app, [*base, *extra]) for extra in (["--nodes", "1"], ["--ranks", "8"])]
    (one,), (ranks,) = (json.loads(r.stdout) for r in runs)
    assert one["n_ranks"] == ranks["n_ranks"] == 8
    assert (one["algorithm"], one["protocol"]) == (ranks["algorithm"], ranks["protocol"])
    assert (one["algorithm"], one["protocol"]) == ("nvls", "Simple")
    assert one["busbw_bytes_per_s"] == pytest.approx(ranks["busbw_bytes_per_s"])


def test_scale_up_bandwidth_written_in_bits_is_questioned(tmp_path: Path):
    """``aifabric cluster show c.yaml`` where c.yaml is examples/cluster.yaml with ``scale_up: {kind:
    nvswitch, bandwidth: 900 Gb/s}``: exit 0, "scale-up per GPU │ 112.5 GB/s │ NVLink 4 per GPU, both
    directions added (56.25 GB/s each way)" and "NCCL reaches 46.35 GB/s per direction" -- the H100's NVLink
    taken as 8x below its datasheet's 900 GB/s (NVIDIA H100 datasheet: "NVLink 900GB/s"), below the PCIe
    Gen5 x16 link of the same GPU (128 GB/s both ways), without a word. The same slip on the NIC is caught:
    ``nic_speed: 400 GB/s`` exits 2 "'400 GB/s' is 3.2 Tb/s per direction, above any NIC made ...; did you
    mean '400 Gb/s' (bits)?". Vendors quote NVLink in bytes, NICs in bits; "900 Gb/s" for NVLink 4 is the
    bytes figure typed with a small b. Expected: exit 2 naming scale_up.bandwidth and the value, or a note
    that says it is below the link's own datasheet figure and asks whether bytes were meant."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["scale_up"] = {"kind": "nvswitch", "bandwidth": "900 Gb/s"}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(spec))
    r = runner.invoke(app, ["cluster", "show", str(path)])
    if r.exit_code == 2:
        assert "scale_up.bandwidth" in r.stderr and "900 Gb/s" in r.stderr, r.stderr
        return
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "bits" in r.stdout.lower(), "no note on 900 Gb/s (bits) for NVLink 4"


def test_one_tier_fabric_line_has_no_empty_oversubscription_clause(tmp_path: Path):
    """``aifabric cluster show nvl4.yaml`` (two GB200 NVL4 boards on one Spectrum-4 leaf, ``tiers: 1``):
    "scale-out: 1-tier rail-optimised Clos, 1 plane(s); oversubscription (down:up) ; bisection 0.20 TB/s per
    direction (1.6 Tb/s), 1.000 x the requested 0.20 TB/s" -- the oversubscription clause announces its
    ratios and lists none. A one-tier fabric has no uplink tier, so there is no ratio to give (bisection
    200 GB/s = 4 GPUs x 50 GB/s, the NICs of one half). Expected: no empty "(down:up) ;" clause; either no
    oversubscription clause or one that says a single tier has no uplinks."""
    r = runner.invoke(app, ["cluster", "show", _mesh_cluster(tmp_path)])
    assert r.exit_code == 0, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("scale-out:"))
    assert "(down:up) ;" not in line, line


def test_config_without_activation_or_model_type_message_reads(tmp_path: Path):
    """``aifabric train -m cfg/config.json --nodes 1 --tp 8 -B 8`` with a Llama-shaped config.json that
    names neither ``model_type`` nor ``hidden_act``: exit 2, "config.json has neither hidden_act nor
    activation_function and no model_type is not a family aifabric knows (llama, ...): add hidden_act" --
    "no model_type is not a family" is a double negative that reads as the opposite of what it means (the
    file names no model_type; ``training/models.py`` fills ``{kind} is not a family`` with "no model_type").
    The refusal is right (the MLP's width would be a guess); the line must say what the file lacks.
    Expected: exit 2, one line that names hidden_act and model_type without "no model_type is not"."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
    }
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    r = runner.invoke(
        app, ["train", "-m", str(folder / "config.json"), "--nodes", "1", "--tp", "8", "-B", "8"]
    )
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "hidden_act" in r.stderr and "model_type" in r.stderr, r.stderr
    assert "no model_type is not" not in r.stderr, r.stderr


def test_announcement_figure_that_names_nvlink_and_misses_it_differs():
    """``aifabric announcement "72 GPUs with 200 TB/s of NVLink" -c gb200-nvl72 --json``: "72 GPUs" matches
    the fast domain, and "200 TB/s" is answered "cannot verify: no modelled bandwidth figure is within 5%
    (have: scale-up domain bandwidth, ...)". The rack's NVLink is 72 x 1.8 TB/s = 129.6 TB/s (NVIDIA GB200
    NVL72 page: "130 TB/s"), which the README's own example matches; 200 TB/s is 54% above it. The
    product's rule is that a figure matching nothing and naming no network cannot be verified
    (``tests/cluster/test_power_mgmt_headlines.py``: "3 PB/s matches no modelled bandwidth and names no
    network: cannot verify"); this one names its network ("of NVLink"), and the scale-up domain bandwidth is
    the figure to hold it against -- a wrong headline is what ``announcement`` is for. ``extract_claims``
    drops the words after the number (``Claim(text='200 TB/s', ... per_gpu=False)``). Expected: "differs",
    with the modelled 130 TB/s NVLink figure in its note."""
    r = runner.invoke(app, ["announcement", "72 GPUs with 200 TB/s of NVLink", "-c", "gb200-nvl72", "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    row = next(x for x in json.loads(r.stdout) if x["claim"].startswith("200 TB/s"))
    assert row["status"] == "differs", row
    assert "130" in row["note"] or "129.6" in row["note"], row


def test_collective_names_the_tables_an_unrecorded_release_is_priced_with():
    """``aifabric collective all_reduce --nodes 2 --size 4GiB --nccl-version 2.26.2 --json``: exit 0; the
    explanation says "NCCL's per-channel cap 246 GB/s algbw, which NCCL 2.26.2's tuner does not know", and no
    field of the result says that 2.26.2 is not a recorded release (``catalog/data/nccl_releases.yaml``:
    2.25.1, then 2.27.3) and that the call was priced with 2.25.1's tables. ``nccl-tests compare`` says it
    for the same release (``discovery/release.py``: "priced with NCCL 2.26.2's tuning tables (recorded at
    2.25.1, the last release at or below it that changed them)"), and the README promises "the assumptions
    name the tables used". Expected: the result names 2.25.1 as the recorded tables that priced 2.26.2."""
    args = ["collective", "all_reduce", "--nodes", "2", "--size", "4GiB", "--nccl-version", "2.26.2"]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "2.25.1" in r.stdout, "no word of the 2.25.1 tables that priced 2.26.2"
