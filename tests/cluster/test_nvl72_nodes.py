"""On an NVL72 cluster a node is a compute tray of 4 GPUs; the error and the help say so."""

from __future__ import annotations

from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()


def test_nodes_that_do_not_fill_racks_say_what_a_node_is():
    # gb200-nvl72.yaml: 18 compute trays of 4 GPUs per 72-GPU NVLink domain; 64 trays = 3.56 racks
    r = runner.invoke(app, ["collective", "-c", "gb200-nvl72", "--nodes", "64", "-s", "1GiB"])
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "gpus=256 (64 nodes x 4 GPUs) does not fill whole scale-up domains of scale_up.gpus=72" in lines[0]
    assert "a node is one tray of gpus_per_node=4 GPUs and 18 nodes make one domain" in lines[0]
    assert (
        runner.invoke(app, ["collective", "-c", "gb200-nvl72", "--nodes", "36", "-s", "1GiB"]).exit_code == 0
    )


def test_nodes_help_says_what_a_node_is_on_nvl72():
    r = runner.invoke(app, ["collective", "--help"], terminal_width=200)
    text = " ".join(r.stdout.replace("│", " ").split())  # rich wraps the help inside a box
    assert "a node is a compute tray of 4 GPUs and 18 trays make a rack" in text
