"""Physics defects a trial of train (MoE capacity), fabric routing and the collectives of full-mesh boxes
found: each test runs one command; its docstring holds the command, what it printed and what the physics
(or the cited source) says it should do."""

import pytest
import yaml
from typer.testing import CliRunner

from aifabric.cli.app import app

from .commands import result_json

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py

#: mixtral-8x7b (8 experts, top-2) on the default 256 x H100 superpod with full recompute: it fits in 80 GB.
MIXTRAL = ["train", "-m", "mixtral-8x7b", "--tp", "2", "--ep", "8", "--recompute", "full"]


def test_a_capacity_factor_no_expert_can_fill_is_no_slower_than_dropless():
    """``aifabric train -m mixtral-8x7b --tp 2 --ep 8 --recompute full --capacity-factor 100`` printed a step
    of 2,518.8 s (compute 2,507.6 s) against 65.3 s (compute 54.1 s) dropless (no --capacity-factor).

    --help: the capacity factor "caps the EP load imbalance". An expert's capacity is
    C x tokens x top_k / n_experts (GShard, arXiv:2006.16668 Sec. 2.2; Switch Transformer arXiv:2101.03961
    Eq. 3); with top-2 of 8 experts a token picks an expert at most once, so no expert ever receives more
    than all the tokens, i.e. C = n_experts / top_k = 4. A cap of 100 caps nothing: the step must be the
    dropless step, never 38x slower (a cap that binds drops tokens: it can only shorten the busiest expert).
    """
    dropless = result_json(MIXTRAL)["step_s"]
    capped = result_json([*MIXTRAL, "--capacity-factor", "100"])["step_s"]
    assert capped <= dropless * (1 + 1e-9), (capped, dropless)


def test_spraying_never_finishes_before_the_contention_free_time():
    """``aifabric fabric permutation --engine flow --routing spray -s 64MB --json`` (dgx-h100-superpod)
    printed time_s 0.0013026563 and ideal_time_s 0.0013033363: 0.68 us faster than the contention-free
    ideal, with efficiency printed 1.0. --routing reps prints the same. The ideal is the bound no routing can
    beat (README: "bandwidth against the contention-free ideal"); ECMP, qp and adaptive all stay above it.
    """
    for routing in ("spray", "reps"):
        out = result_json(["fabric", "permutation", "--engine", "flow", "--routing", routing, "-s", "64MB"])
        assert out["time_s"] >= out["ideal_time_s"] * (1 - 1e-12), (routing, out)


def test_astra_sim_export_gives_each_gpu_its_share_of_a_shared_nic(tmp_path):
    """``aifabric export --format astra-sim -c aws-p4d -o DIR`` writes network.yml
    ``bandwidth: [300.0, 12.5]``: 12.5 GB/s per NPU on the rail dimension, the rate of a whole 100 Gb/s EFA
    interface. A p4d.24xlarge has
    4 x 100 Gb/s EFA for 8 GPUs, "two GPUs and one NIC behind each PCIe switch" (AWS EC2 P4 page; the
    preset's gpus_per_nic: 2), and ``aifabric ladder aws-p4d`` prints 6.25 GB/s per GPU. docs/interop.md:
    dimension 1 is "at the GPU's scale-out rate over all planes"; ASTRA-sim runs that dimension's collective
    on all 8 rails at once, so 12.5 GB/s per NPU models 800 Gb/s per instance, twice the 400 Gb/s it has.
    (htsim's cluster.topo of the same cluster likewise gives 16 hosts a 100 Gb/s downlink each.)"""
    out = tmp_path / "astra"
    r = runner.invoke(app, ["export", "--format", "astra-sim", "-c", "aws-p4d", "-o", str(out)])
    assert r.exit_code == 0, r.stdout + r.stderr
    network = yaml.safe_load((out / "network.yml").read_text())
    assert network["bandwidth"][1] == pytest.approx(400e9 / 8 / 8 / 1e9), network  # 6.25 GB/s per GPU


def test_astra_sim_export_of_two_sites_keeps_the_distance_between_them(tmp_path):
    """``aifabric export --format astra-sim -c spectrum-xgs-2-sites -o DIR`` exits 0 with
    ``topology: [Switch, Switch]``, ``npus_count: [8, 512]``, ``latency: [600.0, 600.0]``: one flat rail
    dimension over both sites at a switch hop's latency. The preset's sites are 50 km apart (its
    ``sites: {distance_km: 50}``); light in fibre takes 5 us/km (scale-across --help), 250 us each way, and
    the DCI carries 100 Tb/s per site, not 512 x 50 GB/s. A torus is refused ("only switched clusters are
    exported"); a multi-site cluster must be refused the same way or get a site dimension whose latency
    is at least the fibre's 250,000 ns."""
    out = tmp_path / "astra"
    r = runner.invoke(app, ["export", "--format", "astra-sim", "-c", "spectrum-xgs-2-sites", "-o", str(out)])
    if r.exit_code == 2:
        assert "site" in (r.stdout + r.stderr), r.stdout + r.stderr
        return
    assert r.exit_code == 0, r.stdout + r.stderr
    network = yaml.safe_load((out / "network.yml").read_text())
    # a Switch dimension's latency is one link's and a message crosses two (NPU -> switch -> NPU:
    # astra-sim/astra-network-analytical congestion_unaware/Switch.hh, "takes 2 hops"), so two links
    # carry at least the one-way fibre delay
    assert 2 * max(network["latency"]) >= 50 * 5e3, network  # 50 km x 5 us/km, in ns
