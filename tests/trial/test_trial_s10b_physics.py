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


def test_a_capacity_factor_no_expert_can_fill_pads_every_expert_to_all_the_tokens():
    """``aifabric train -m mixtral-8x7b --tp 2 --ep 8 --recompute full --capacity-factor 100`` printed a step
    of 2,518.8 s (compute 2,507.6 s) against 65.3 s (compute 54.1 s) dropless (no --capacity-factor): the
    factor padded every expert to 100 x its fair share, more slots than there are tokens.

    An expert's capacity is C x tokens x top_k / n_experts slots (GShard, arXiv:2006.16668 Sec. 2.2; Switch
    Transformer arXiv:2101.03961 Eq. 3), computed in full. With top-2 of 8 experts a token picks an expert
    at most once, so the capacity is capped at all the tokens: min(tokens, C x tokens x top_k / n_experts)
    (AWS neuronx-distributed modules/moe/expert_mlps.py, forward_capacity_factor), i.e. at C = n_experts /
    top_k = 4. A factor of 100 therefore pads exactly as C = 4 does, not 25 x more. It is not the dropless
    step either: the same file runs that "full capacity" as forward_all_experts, every token through every
    expert, 4 x the routed FLOPs of dropless routing. So: C 100 == C 4 >= dropless.
    """
    dropless = result_json(MIXTRAL)["step_s"]
    full = result_json([*MIXTRAL, "--capacity-factor", "4"])["step_s"]
    capped = result_json([*MIXTRAL, "--capacity-factor", "100"])["step_s"]
    assert capped == pytest.approx(full, rel=1e-12), (capped, full)
    assert capped >= dropless, (capped, dropless)


def test_a_larger_capacity_factor_never_shortens_the_step():
    """A larger capacity factor only adds padded slots and drops fewer tokens (GShard Sec. 2.2; the padded
    capacity min(tokens, C x tokens x top_k / n_experts) of neuronx-distributed's forward_capacity_factor is
    non-decreasing in C): the step never gets shorter as C grows, across C = n_experts / top_k = 4 too,
    where it is continuous (3.99 within 0.25 % of 4: the padded work differs by 0.01 / 4)."""
    grid = (1.0, 1.25, 2.0, 3.0, 3.99, 4.0, 4.01, 8.0, 100.0)
    steps = [result_json([*MIXTRAL, "--capacity-factor", str(c)])["step_s"] for c in grid]
    assert all(b >= a * (1 - 1e-12) for a, b in zip(steps, steps[1:], strict=False)), list(
        zip(grid, steps, strict=True)
    )
    assert steps[4] == pytest.approx(steps[5], rel=2.5e-3), (steps[4], steps[5])


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
