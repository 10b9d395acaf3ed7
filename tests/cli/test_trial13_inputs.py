"""Defects a new-user trial found (trial 13): each test runs one command, its docstring holds the command,
what it printed and what it should do."""

import re
from pathlib import Path

import pytest
import yaml
from tests.cli.refusal import refused
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

PUBLIC = Path(__file__).parents[1] / "discovery" / "data" / "public"


def test_a_fault_verdict_is_not_drawn_from_an_assumed_gpu(tmp_path):
    """``aifabric nccl-tests compare t4.log --collective reduce`` on sb_reduce_a100_redop_root.log with the
    rank lines' GPU renamed 'Tesla T4' (a PCIe card without NVLink) printed "assumed: GPU 'Tesla T4' not in
    the catalogue: assumed h100-sxm (give --gpu)" and then "verdict: nvlink_degraded ... a GPU with NVLinks
    down (nvidia-smi nvlink -s)". A T4 has no NVLink to be down: the fault is read off a machine the log
    does not describe. Expected: no fault verdict from an assumed GPU (inconclusive, naming --gpu), or
    exit 2 naming the GPU."""
    text = (PUBLIC / "sb_reduce_a100_redop_root.log").read_text().replace("A100-SXM4-40GB", "Tesla T4")
    log = tmp_path / "t4.log"
    log.write_text(text)
    r = runner.invoke(app, ["nccl-tests", "compare", str(log), "--collective", "reduce"])
    if r.exit_code == 2:
        return
    assert "nvlink_degraded" not in r.stdout, r.stdout


def test_a_tab_separated_table_is_read_or_named(tmp_path):
    """``aifabric nccl-tests compare pasted.log --collective reduce`` on sb_reduce_a100_redop_root.log with
    runs of spaces turned into tabs (as a paste through a spreadsheet or some chat tools leaves it) printed
    "pasted.log:14: the column header has no result rows below it": there are 32 rows below it. Expected: the
    rows read (whitespace is whitespace), or one line saying the rows are tab-separated."""
    text = (PUBLIC / "sb_reduce_a100_redop_root.log").read_text()
    log = tmp_path / "pasted.log"
    log.write_text(re.sub(" +", "\t", text))
    r = runner.invoke(app, ["nccl-tests", "compare", str(log), "--collective", "reduce"])
    assert r.exit_code == 0 or "tab-separated" in r.stderr, r.stderr


def test_a_row_of_zero_time_with_bandwidth_is_refused(tmp_path):
    """``aifabric nccl-tests compare zero.log --collective reduce`` on sb_reduce_a100_redop_root.log whose
    8 MiB row reads time 0 us with algbw 88.57 GB/s printed a table and "verdict: healthy". A row that moved
    8 MiB in 0 us contradicts its own algbw (nccl-tests: algbw = size / time); nan, inf and negative figures
    in the same place are refused naming the line. Expected: exit 2 naming the line and the time."""
    text = (PUBLIC / "sb_reduce_a100_redop_root.log").read_text()
    log = tmp_path / "zero.log"
    log.write_text(
        text.replace("2097152   float     sum       0    94.72", "2097152   float     sum       0     0")
    )
    refused(["nccl-tests", "compare", str(log), "--collective", "reduce"], "time")


def test_a_tray_cluster_refusal_keeps_the_logs_numbers():
    """``aifabric nccl-tests compare bfloat16_rows_headerless_cut.log --nodes 1 -c gb200-nvl72`` printed
    "cluster: gb200-nvl72 cannot be sized to the log ran 8 ranks on 1 node(s): cluster: gpus=4 (1 nodes x 4
    GPUs) does not fill whole scale-up domains of scale_up.gpus=72 ...": the log's 8 ranks become 4 GPUs in
    the same line, and the reason given (whole domains) is not the one that stops it (8 ranks on a node of 4
    GPUs). Expected: one line saying 8 ranks on one node do not fit a gb200-nvl72 node (tray) of 4 GPUs."""
    line = refused(
        [
            "nccl-tests",
            "compare",
            str(PUBLIC / "bfloat16_rows_headerless_cut.log"),
            "--nodes",
            "1",
            "-c",
            "gb200-nvl72",
        ]
    )
    assert "gpus=4 (1 nodes" not in line, line


def test_checkpoint_takes_the_model_files_train_takes():
    """``aifabric checkpoint --nodes 16 --storage ddn-ai400x2-turbo --storage-units 4 -m
    tests/training/data/Meta-Llama-3-8B/config.json`` printed "model: no preset named
    'tests/training/data/Meta-Llama-3-8B/config.json'; presets: ...". ``train`` and ``plan`` read the same
    file (and name an existing non-model file as such since a2ad5f6); checkpoint looks every path up among
    the presets. Expected: exit 0, the checkpoint of Llama 3 8B's parameters."""
    config = Path(__file__).parents[1] / "training" / "data" / "Meta-Llama-3-8B" / "config.json"
    args = ["checkpoint", "--nodes", "16", "--storage", "ddn-ai400x2-turbo", "--storage-units", "4"]
    r = runner.invoke(app, [*args, "-m", str(config)])
    assert r.exit_code == 0, r.stderr


def test_checkpoint_names_an_existing_non_model_file_as_such(tmp_path):
    """``aifabric checkpoint --nodes 16 --storage ddn-ai400x2-turbo --storage-units 4 -m empty.log`` (an
    existing empty file) printed "model: no preset named '.../empty.log'; presets: megatron-gpt-1.7b, ...",
    where ``train -m empty.log`` prints "'.../empty.log' is a file, not a model file". Expected: the same
    line as train's."""
    path = tmp_path / "empty.log"
    path.write_text("")
    args = ["checkpoint", "--nodes", "16", "--storage", "ddn-ai400x2-turbo", "--storage-units", "4"]
    refused([*args, "-m", str(path)], "is a file, not a model file")


@pytest.mark.parametrize("figure", ["1e400 TB/s", "0 TB/s"])
def test_announcement_refuses_a_figure_that_is_no_bandwidth(figure):
    """``aifabric announcement '72 GPUs with 1e400 TB/s of NVLink' -c gb200-nvl72`` printed "1e400 TB/s |
    cannot verify | no modelled bandwidth figure is within 5%", exit 0; '0 TB/s' the same. 1e400 overflows
    to infinity and 0 TB/s is no link; a negative figure is refused ("no bandwidth, GPU count or power is
    below 0") and checkpoint refuses overflowing figures. Expected: exit 2 naming the figure."""
    refused(["announcement", f"72 GPUs with {figure} of NVLink", "-c", "gb200-nvl72"], figure.split()[0])


def test_a_duration_hint_does_not_suggest_a_refused_value():
    """``aifabric checkpoint --nodes 16 -m llama3-70b --storage ddn-ai400x2-turbo --storage-units 4 --mtbf
    nan`` printed "--mtbf: 'nan' has no unit; write it with one, e.g. 'nan h' or 'nan s'"; the suggested
    ``--mtbf 'nan h'`` is then refused ("cannot read a duration in 'nan h'"). Expected: one line saying nan
    is not a number (as --weight-bytes nan does), no hint to write it with a unit."""
    args = ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--storage", "ddn-ai400x2-turbo"]
    line = refused([*args, "--storage-units", "4", "--mtbf", "nan"], "--mtbf")
    assert "'nan h'" not in line, line


def test_a_sweep_refuses_a_node_count_below_one(tmp_path):
    """``aifabric sweep sw.yaml --db s.db`` with ``vary: {nodes: [0, -1]}`` (cluster dgx-h100-superpod, one
    all_reduce of 1 MiB) printed "2 point(s) evaluated", exit 0; the store holds two rows whose error
    column reads "nodes: Input should be greater than or equal to 1 (got 0)". An empty list (``nodes: []``)
    is refused naming vary.nodes. Zero and negative node counts are bad input, not design points that do
    not build. Expected: exit 2, one line naming vary.nodes and the value 0."""
    sweep = tmp_path / "sw.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {
                "cluster": "dgx-h100-superpod",
                "vary": {"nodes": [0, -1]},
                "collectives": [{"op": "all_reduce", "sizes": ["1 MiB"]}],
            }
        )
    )
    refused(["sweep", str(sweep), "--db", str(tmp_path / "s.db")], "vary.nodes", "0")
