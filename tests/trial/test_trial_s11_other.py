"""Other defects a trial of the announcement checker and the command line found: each test runs one command;
its docstring holds the command, what it printed and what it should do."""

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def test_an_announced_flops_figure_is_checked_against_the_gpus_peak():
    """``aifabric announcement "72 GPUs, 180 PFLOPS of FP16/BF16" -c gb200-nvl72 --json`` listed one claim,
    72 GPUs: "180 PFLOPS" vanished without a verdict, and alone (``announcement "180 PFLOPS of FP16/BF16"``)
    it exits 2 with "no number with a unit (TB/s, Gb/s, GPUs, MW, TB) found in the text". Compute is the
    headline of every GPU announcement (NVIDIA's GB200 NVL72 page: "180 PFLOPS" FP16/BF16, "1.4 exaFLOPS"
    FP4), and the catalogue holds the figure that checks it: accelerators.yaml gb200 peak_bf16_flops 2.5e15,
    citing that very page (72 x 2.5 PF = 180 PF). The claim gets a row, and it matches."""
    r = runner.invoke(
        app, ["announcement", "72 GPUs, 180 PFLOPS of FP16/BF16", "-c", "gb200-nvl72", "--json"]
    )
    assert r.exit_code == 0, r.stdout + r.stderr
    claims = json.loads(r.stdout)
    flops = [c for c in claims if "180" in c["claim"]]
    assert flops and flops[0]["status"] == "matches", claims


@pytest.mark.parametrize("command", [["checkpoint", "-m", "llama3-8b"], ["scale-across"], ["ladder"]])
def test_every_command_takes_its_cluster_as_the_cluster_option(command):
    """``aifabric checkpoint -c gb200-nvl72 -m llama3-8b`` exits 2 with "No such option: -c", as do
    ``scale-across -c ...`` and ``ladder -c ...``: these commands take the cluster as a positional argument,
    while collective, fabric, train, plan, export, import-chakra, announcement and nccl-tests compare take
    ``-c/--cluster`` (README: "Every command accepts a preset name or a cluster YAML file"; its own examples
    write ``aifabric collective all_reduce -c dgx-h100-superpod``). A user who moves from ``train -c X`` to
    ``checkpoint -c X`` is refused; the same option names the cluster everywhere."""
    r = runner.invoke(app, [*command, "-c", "gb200-nvl72"])
    assert "No such option" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert r.exit_code in (0, 2), r.stdout + r.stderr
