"""Engine and tuner defects a new-user trial found: each test runs one command; its docstring holds the
command, what it printed and what it should do."""

import json
import re
from pathlib import Path

import pytest
import yaml
from tests.cli.refusal import refused
from tests.clusters import geforce_yaml
from tests.engines.test_one_tier_rails import SPEC as ONE_TIER_RAILS
from typer.testing import CliRunner

from aifabric.cli.app import app

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

PUBLIC = Path(__file__).parents[1] / "discovery" / "data" / "public"


def first_row(*args: str) -> dict:
    """The first JSON row of ``aifabric collective ARGS --json``."""
    r = runner.invoke(app, ["collective", *args, "--json"])
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)[0]


@pytest.mark.parametrize("engine", ["links", "flow"])
def test_a_pcie_node_has_no_nvswitch_in_the_explanation(tmp_path, engine):
    """``aifabric collective all_reduce -c rtx.yaml --size 1GiB --engine links`` (8 x RTX 4090 on PCIe, no
    NVLink, no NVSwitch) printed "bottleneck: gpu-nvswitch" and "hottest link gpu[0]->nvswitch[0]". The
    explanation names a switch the machine does not have. Expected: the bottleneck and hottest link named as
    the PCIe/host path (no 'nvswitch' in the output of a PCIe node)."""
    r = runner.invoke(
        app,
        [
            "collective",
            "all_reduce",
            "-c",
            geforce_yaml(tmp_path, "rtx", 8, 1),
            "--size",
            "1GiB",
            "--engine",
            engine,
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert "nvswitch" not in r.stdout.lower(), r.stdout


def test_formula_engine_refuses_what_has_no_route(tmp_path):
    """``aifabric collective all_to_all -c onetier.yaml --size 1MiB`` (2 nodes of 4 A100 on PCIe, two GPUs
    per ConnectX-7, scale_out.tiers: 1, tests/engines/test_one_tier_rails.py's cluster) printed 43.73 us,
    busbw 20.98 GB/s, exit 0. ``--engine links`` and ``--engine flow`` on the same line exit 2: "GPU 0 and
    GPU 6 sit on different leaves of a one-tier fabric (rail 0 and 1) and no scale-up relay reaches the
    destination's rail". The default engine times a collective the topology cannot carry. Expected: exit 2
    with the same one line (or the formula engine names the relay it assumes)."""
    path = tmp_path / "onetier.yaml"
    path.write_text(yaml.safe_dump(ONE_TIER_RAILS))
    refused(["collective", "all_to_all", "-c", str(path), "--size", "1MiB"], "one-tier")


def test_fabric_reads_every_spine_as_mgmt_does():
    """``aifabric fabric all_reduce --nodes 16 --size 64MiB --fail 'spine:*'`` printed "--fail: cannot read
    'spine:*' (spine index must be a whole number)", exit 2, while ``aifabric cluster mgmt --nodes 127 --fail
    'spine:*'`` (README) fails every spine. 9a715f2 made one reader for both networks. Expected: fabric
    takes 'spine:*' (every spine failed: exit 0 or the NoRoute line), not a parse refusal."""
    r = runner.invoke(app, ["fabric", "all_reduce", "--nodes", "16", "--size", "64MiB", "--fail", "spine:*"])
    assert "cannot read 'spine:*'" not in r.stderr, r.stderr


def test_a_faster_next_best_says_why_nccl_passes_it_over():
    """``aifabric collective all_reduce --nodes 3 --size 16MiB`` (dgx-h100-superpod) printed "time 243.48 us
    (nvls_tree/Simple)" and "Next best: tree/LL128 175.0 us, ring/LL128 198.7 us" with no reason. The trial
    expected "Next best" to list only slower candidates; by NCCL's rules the pick stands: NCCL picks on
    ``ncclTopoGetAlgoTime`` (src/graph/tuning.cc, v2.26.2-1: ``lat * latCount + nBytes / (1000 * bw)``),
    which has no term for the NVLS-tree pipeline fill (2 loops of chunks, ``enqueue.cc``), so its price of
    nvls_tree is below tree/LL128's while the run pays the fill. Expected (rewritten): each runner-up faster
    than the pick is named with NCCL's tuner price of the pick, below the runner-up's, and the fill it does
    not see."""
    row = first_row("all_reduce", "--nodes", "3", "--size", "16MiB")
    why = row["explanation"]
    next_best = why.split("Next best:")[1].split(". ")[0]
    faster = [float(t) for t in re.findall(r"([0-9.]+) us", next_best) if float(t) * 1e-6 < row["time_s"]]
    assert faster, why  # the case the trial found
    price = re.search(r"NCCL's tuner prices it at ([0-9.]+) us", why)
    assert price is not None and all(float(price.group(1)) < t for t in faster), why
    assert "does not see the pipeline fill" in why, why


def test_a_channel_cap_that_slows_more_nics_is_named(tmp_path):
    """``aifabric collective all_reduce -c nicG.yaml --size 1MiB --env NCCL_MAX_NCHANNELS=8`` (2 nodes of 8
    H100 on NVSwitch, ConnectX-7 400G shared by scale_out.gpus_per_nic = G GPUs, two tiers) printed, G = 4
    (2 NICs per node): 69.11 us, "algbw = 0.5 x 196.6 GB/s ... bandwidth 20.6 us"; G = 2 (4 NICs per
    node): 70.36 us, "algbw = 0.5 x 370.8 GB/s ... bandwidth 21.9 us" (tree/LL128 both). The trial expected
    the 4-NIC time <= the 2-NIC time. The mechanism is NCCL's channel rules: its search gives 4 NICs 16
    channels across nodes and 2 NICs 8 (src/graph/connect.cc, v2.26.2-1: doubled, and on sm90 doubled again
    below 16), each channel carrying 1/C0 of the bandwidth (tuning.cc ``busBw = graphs[a]->nChannels *
    bw``); NCCL_MAX_NCHANNELS=8 (connect.cc ``comm->nChannels = min(ncclMaxNchannels(), nChannels)``) keeps
    all of the 2-NIC node's channels and half of the 4-NIC node's: 8 x 370.8 / 16 < 8 x 196.6 / 8.
    Without the cap the 4-NIC node is faster. Expected (rewritten): the why of the 4-NIC time names the
    cap and its share, and that share times the named bound is below the 2-NIC bound. Both then run
    tree/LL128 at NCCL's tree cap, the tree graph's channels x perChMaxTreeLL128Bw[Hopper][2 nodes] 36.7
    (tuning.cc ``graphs[a]->nChannels*perChMaxTreeLL128Bw``, tiers.tree_graph_cap): the 4-NIC graph's 8
    channels at the 8 / 16 share, the 2-NIC graph's 4 (2 x 48 GB/s duplicated to 4 x 24) at 8 / 8, 4 x
    36.7 = 146.8 GB/s each: the 4-NIC node is no faster, and no slower."""

    def cluster(gpus_per_nic: int) -> str:
        spec = {
            "name": f"nic{gpus_per_nic}",
            "accelerator": "h100-sxm",
            "gpus_per_node": 8,
            "nodes": 2,
            "scale_up": {"kind": "nvswitch"},
            "scale_out": {"nic": "connectx-7", "gpus_per_nic": gpus_per_nic, "tiers": 2},
        }
        path = tmp_path / f"nic{gpus_per_nic}.yaml"
        path.write_text(yaml.safe_dump(spec))
        return str(path)

    args = ("all_reduce", "--size", "1MiB", "--env", "NCCL_MAX_NCHANNELS=8")
    two_nics = first_row(*args, "-c", cluster(4))
    four_nics = first_row(*args, "-c", cluster(2))
    why = four_nics["explanation"]
    assert "NCCL_MAX_NCHANNELS runs 8 of the 16 channels" in why, why
    bound = float(re.search(r"0\.5 x ([0-9.]+) GB/s", why).group(1))
    share = float(re.search(r"x ([0-9.]+); latency", why).group(1))
    two_bound = float(re.search(r"0\.5 x ([0-9.]+) GB/s", two_nics["explanation"]).group(1))
    assert bound * share < two_bound and four_nics["time_s"] >= two_nics["time_s"] * (1 - 1e-12), why
    assert four_nics["time_s"] == pytest.approx(two_nics["time_s"], rel=1e-9)  # 4 x 36.7 GB/s both
    uncapped = ("all_reduce", "--size", "1MiB")
    four_uncapped = first_row(*uncapped, "-c", cluster(2))["time_s"]
    assert four_uncapped <= first_row(*uncapped, "-c", cluster(4))["time_s"]


def test_a_failed_leaf_that_cuts_the_route_names_fail():
    """``aifabric fabric all_reduce --nodes 16 --size 64MiB --fail leaf:0`` printed "GPU 56 cannot reach
    GPU 64: link 312 has failed and has no alternative", a line that does not say the failure was asked.
    Expected: exit 2, one line naming --fail and the value."""
    refused(
        ["fabric", "all_reduce", "--nodes", "16", "--size", "64MiB", "--fail", "leaf:0"], "--fail 'leaf:0'"
    )
