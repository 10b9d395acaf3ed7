"""Physics defects a trial of "the other half" found (fabric sizing, power, scale-across, storage,
transport): each test runs one command; its docstring holds the command, what it printed and what the
physics (or the cited source) says it should do."""

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def _json(args: list[str]) -> dict:
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    return out[0] if isinstance(out, list) else out


def _scale_out_switches(nodes: int) -> int:
    shown = _json(["cluster", "show", "dgx-h100-superpod", "--nodes", str(nodes)])
    parts = shown["parts"]
    return sum(p["count"] for p in parts if p["network"] == "scale-out" and p["item"] == "switch")


@pytest.mark.parametrize("nodes", [11, 31])
def test_one_node_more_never_needs_fewer_fabric_switches(nodes):
    """``aifabric cluster show dgx-h100-superpod --nodes 11`` printed 16 QM9700 leaves + 2 spines ("leaf 1:1
    asked, 0.917:1 built"); ``--nodes 12`` 8 leaves + 2 spines (1:1 built). 31 nodes: 16 leaves + 4 spines,
    363,452 W for the whole cluster; 32 nodes: 8 leaves + 4 spines, 360,044 W. A Clos built for N + 1
    nodes with one node unplugged still serves N nodes at the same (or better) ratio, so the fewest switches
    for N nodes can never exceed those for N + 1: the sizing is not minimal, and it overcounts switches,
    optics and watts at 11, 13, 17, 19, 23, 27, 29, 31, 33, 38, 45... nodes (every DGX SuperPOD RA table
    grows its switch count with the node count)."""
    assert _scale_out_switches(nodes) <= _scale_out_switches(nodes + 1)


def test_whole_cluster_power_grows_with_nodes():
    """``aifabric cluster show dgx-h100-superpod --nodes 31 --json`` gave total_watts 363,452; ``--nodes 32``
    360,044: one more DGX H100 (10.2 kW max, NVIDIA DGX H100 datasheet) lowered the cluster's power by
    3.4 kW, because 31 nodes were given 16 leaves. Adding a node adds its GPUs, NICs and optics; the
    cluster's power is monotone in its node count."""
    small = _json(["cluster", "show", "dgx-h100-superpod", "--nodes", "31"])
    large = _json(["cluster", "show", "dgx-h100-superpod", "--nodes", "32"])
    assert small["total_watts"] < large["total_watts"], (small["total_watts"], large["total_watts"])
