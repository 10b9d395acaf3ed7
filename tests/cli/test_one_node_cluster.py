"""One node needs no scale-out: a leaf ratio only more nodes realise refuses neither ``cluster show`` nor the
links engine, as it refuses neither the formula engine nor ``train`` (one scale-up domain sends nothing
across its scale-out fabric: collectives/communicator.py ``_su_pod_gpus``, cluster/clos.py ``built_clos``)."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.topology import build_topology

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

EXAMPLE = Path(__file__).parents[2] / "examples" / "cluster.yaml"  # 32 x 8 H100, RoCE, 2:1 leaf


def _at_ratio(tmp_path: Path, ratio: str = "1:1") -> Path:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["scale_out"]["oversubscription"] = [ratio]
    path = tmp_path / f"at_{ratio.replace(':', '_')}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _one_to_one(tmp_path: Path) -> Path:
    return _at_ratio(tmp_path)


#: 1.37:1 is no integer split of the 128-port leaf (clos.py ``exact_split``): no node count realises it
def _unsplittable(tmp_path: Path) -> Path:
    return _at_ratio(tmp_path, "1.37:1")


def test_cluster_show_builds_one_node_without_a_leaf_and_says_so(tmp_path):
    path = str(_unsplittable(tmp_path))
    r = runner.invoke(app, ["cluster", "show", path, "--nodes", "1"])
    assert r.exit_code == 0, r.output
    assert "scale-out: not built: one scale-up domain (1 node(s))" in r.stdout
    assert "far-end" not in r.stdout  # no fabric: no bisection to quote
    doc = json.loads(runner.invoke(app, ["cluster", "show", path, "--nodes", "1", "--json"]).stdout)
    assert (doc["tiers"], doc["scale_out_built"]) == (0, False)
    parts = {(p["network"], p["item"]): p["count"] for p in doc["parts"]}
    assert parts[("scale-out", "nic")] == 8  # one ConnectX-7 per H100 (nics_per_gpu 1) stays in the box
    assert ("scale-out", "switch") not in parts


def test_one_node_at_two_to_one_builds_its_rail_leaves_no_worse():
    # 2:1 on one node: each of the 8 rail leaves has 1 down port and ceil(1 / 2) = 1 uplink, 1:1, no worse
    # than asked (clos.py ``_holds``), so the leaves are built as at 1:1
    r = runner.invoke(app, ["cluster", "show", str(EXAMPLE), "--nodes", "1"])
    assert r.exit_code == 0, r.output
    assert "leaf 2:1 asked, 1:1 built" in r.stdout


def test_one_node_topology_has_its_gpus_and_no_scale_out_links(tmp_path):
    spec = ClusterSpec.model_validate(yaml.safe_load(_unsplittable(tmp_path).read_text())).with_changes(
        nodes=1
    )
    topo = build_topology(spec)
    assert topo.shape is None and "leaf" not in topo.device_offsets
    assert topo.switch_counts["scale-up domain"] == 1
    assert sum(topo.cable_counts.values()) == 0


def test_a_buildable_one_node_clos_is_still_built(tmp_path):
    # a ratio one node realises (1:1) keeps its leaves: only an unbuildable one is dropped
    doc = json.loads(
        runner.invoke(app, ["cluster", "show", str(_one_to_one(tmp_path)), "--nodes", "1", "--json"]).stdout
    )
    assert doc["scale_out_built"] and doc["tiers"] >= 1


def test_the_links_engine_times_one_node_as_its_leaf_never_mattered(tmp_path):
    # invariant: nothing of one node crosses the leaf, so the 2:1 leaf and a 1:1 leaf time the call alike
    args = ["collective", "all_reduce", "--engine", "links", "--nodes", "1", "-s", "1G", "--json"]
    two = runner.invoke(app, [*args, "-c", str(EXAMPLE)])
    assert two.exit_code == 0, two.output
    one = runner.invoke(app, [*args, "-c", str(_one_to_one(tmp_path))])
    assert json.loads(two.stdout)[0]["time_s"] == json.loads(one.stdout)[0]["time_s"]
