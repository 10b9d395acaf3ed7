"""CLI defects a new user's first day found, trying hostile and degenerate input on every command the README
shows: each test runs one command; its docstring holds the command, what it printed and what it should do.
The README's rule for bad input: exit 2 with one line on stderr naming the field and the value, never a
traceback; and no result a run could not have produced printed as if it were one."""

import json
from pathlib import Path

import pytest
import yaml
from tests.trial.commands import EXAMPLE, runner

from aifabric.cli.app import app

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def test_plan_does_not_rank_one_layout_under_three_zero_stages():
    """``aifabric plan -m llama3-8b --nodes 1 -B 1 --top 5 --json``: 8 GPUs, so the only data-parallel
    degree is dp = 1. The ranking printed tp=8 pp=1 dp=1 at zero=1, zero=2 and zero=3 as places 1-3 (each
    0.1577 s/step, 23.18 GB per GPU) and the selective-recompute layout at zero=1 and zero=2 as places 4-5;
    the text called zero=2 the "Runner-up ... 0.0% slower". ZeRO shards optimizer state, gradients and
    weights over the data-parallel group (Rajbhandari et al. 2020, Sec. 5): with dp = 1 every stage is the
    same computation holding the same bytes, as the planner's own step times and memory show. Five places
    for two layouts hide the real alternatives (another tp, pp). Expected: no two ranked layouts that differ
    in nothing but the ZeRO stage when dp x cp = 1."""
    r = runner.invoke(app, ["plan", "-m", "llama3-8b", "--nodes", "1", "-B", "1", "--top", "5", "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    ranked = (out[0] if isinstance(out, list) else out)["ranked"]
    seen = set()
    for item in ranked:
        layout = dict(item["layout"])
        if layout["dp"] * layout["cp"] == 1:
            layout.pop("zero_stage")
        key = json.dumps(layout, sort_keys=True)
        assert key not in seen, f"ranked twice, apart only by its ZeRO stage: {item['layout']}"
        seen.add(key)


def test_cluster_file_with_an_empty_name_is_refused(tmp_path: Path):
    """``aifabric cluster show c.yaml`` where c.yaml is examples/cluster.yaml with ``name: ''``: exit 0, and
    the report's first line reads ": 256 x NVIDIA H100 SXM5 80GB in 32 nodes; ..." -- a cluster without a
    name, which every report, sweep row and export names it by. Every other field of the file with an
    impossible value is refused (``accelerator: ''`` exits 2 "accelerator: unknown accelerator ''").
    Expected: exit 2, one line naming the field ``name`` and the value."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["name"] = ""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(spec))
    r = runner.invoke(app, ["cluster", "show", str(path)])
    assert r.exit_code == 2, r.stdout[:300]
    assert "name" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_announcement_starting_with_a_negative_number_names_it():
    """``aifabric announcement "-72 GPUs" -c gb200-nvl72``: exit 2 with "No such option: -7" -- the
    announcement's text read as an option, and the message names neither the argument nor the value typed
    ("-7" is not in it). The same number later in the text gets the product's own refusal: ``"72 GPUs with
    -130 TB/s of NVLink"`` exits 2 "announcement: '-130 TB/s' is negative; no bandwidth, count, power, memory
    or FLOPS is below 0". Expected: that refusal, naming '-72 GPUs'."""
    r = runner.invoke(app, ["announcement", "-72 GPUs", "-c", "gb200-nvl72"])
    assert r.exit_code == 2
    assert "-72 GPUs" in r.stderr and "negative" in r.stderr, r.stderr


def test_collective_override_against_a_reduction_table_names_the_conflict():
    """``aifabric nccl-tests compare h100pcie_nvlink_bridge_2gpu_info_dots_cut.log --nodes 1 --collective
    all_gather`` (tests/discovery/fixtures/public4, NVIDIA/nccl-tests#194): the log's launch line runs
    ``all_reduce_perf`` and every row's redop column reads ``sum``; all_gather_perf prints ``none`` there
    (nccl-tests src/all_gather.cu: no reduction). The product exits 2 with "no table to compare (one rank:
    nothing crosses a link, busbw is 0 by definition ...)" -- but the run had 2 ranks (busbw = algbw, the
    2-rank all_reduce factor 2 x 1/2 = 1; ``-g 2``); the one rank comes from re-reading the count column as an
    all_gather's. Expected: exit 2 with one line that names --collective and the log's reduction ('sum' or
    all_reduce), and no claim that the run had one rank."""
    path = Path(__file__).parents[1] / "discovery" / "fixtures" / "public4"
    log = path / "h100pcie_nvlink_bridge_2gpu_info_dots_cut.log"
    r = runner.invoke(app, ["nccl-tests", "compare", str(log), "--nodes", "1", "--collective", "all_gather"])
    assert r.exit_code == 2, r.stdout[:300]
    assert "one rank" not in r.stderr, r.stderr
    assert "--collective" in r.stderr and ("sum" in r.stderr or "all_reduce" in r.stderr), r.stderr
