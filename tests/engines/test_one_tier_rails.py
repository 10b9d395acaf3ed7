"""A one-tier rail-optimised fabric has one leaf per rail and no spine: a flow whose ends sit on different
rails has no route unless a scale-up relay (PXN) reaches the destination's rail. The links engine said so
with an IndexError (found by running the engines over random clusters); now NoRoute, one line, exit 2."""

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.api import collective_time
from aifabric.errors import NoRoute

# 2 nodes of 4 A100 on PCIe, two GPUs per ConnectX-7 (2 NICs, so 2 rails), one tier: leaf 0 holds rail 0's
# NICs, leaf 1 rail 1's. An all_to_all sends GPU 0 (rail 0) to GPU 6 (node 1, rail 1): no spine joins
# the leaves, and PXN relays only where rails = GPUs per node (routing.py).
SPEC = {
    "name": "one-tier-rails",
    "accelerator": "a100-sxm-80gb",
    "gpus_per_node": 4,
    "gpus": 8,
    "scale_up": {"kind": "pcie"},
    # rail_optimized stated: its 4 NIC ports would otherwise fit one leaf, which a one-tier fabric not told
    # otherwise builds as one switch (no rails to keep apart)
    "scale_out": {"nic": "connectx-7", "tiers": 1, "gpus_per_nic": 2, "rail_optimized": True},
}


def test_links_engine_says_there_is_no_route_between_rails():
    spec = ClusterSpec.from_dict(SPEC)
    with pytest.raises(NoRoute, match="different leaves of a one-tier fabric"):
        collective_time("all_to_all", 2**20, spec, algorithm="direct", engine="links")
    # the ring's node-crossing hops stay on their rail: it runs
    assert collective_time("all_reduce", 2**20, spec, algorithm="ring", engine="links").time_s > 0


def test_cli_exits_2_with_one_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    r = CliRunner().invoke(
        app, ["collective", "all_to_all", "-c", str(path), "--size", "1MiB", "--engine", "links"]
    )
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and "one-tier fabric" in r.stderr
