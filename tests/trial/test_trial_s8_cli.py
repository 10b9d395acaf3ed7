"""Reporting and CLI defects a new-user trial found (session 8): each test runs one command; its docstring
holds the command, what it printed and what the product now does."""

import re

import pytest
from tests.cli.refusal import refused
from tests.trial.commands import example_cluster, result_json
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.errors import ConfigError

runner = CliRunner()

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def test_next_best_is_listed_fastest_first(tmp_path):
    """``aifabric collective all_reduce -c my200.yaml --nodes 2 -s 8MiB`` (examples/cluster.yaml at 1:1 with
    ``nic_speed: 200 Gb/s``) printed "Next best: nvls_tree/Simple 195.1 us, tree/Simple 153.9 us, ring/LL128
    162.4 us": the slowest named first. ``_next_best`` (engines/formula.py) documents its input as "fastest
    first". Expected: the next-best times in increasing order."""
    path = example_cluster(tmp_path, "nic200", nic_speed="200 Gb/s")
    why = result_json(["collective", "all_reduce", "-c", path, "--nodes", "2", "-s", "8MiB"])["explanation"]
    listed = why.split("Next best: ")[1].split(". ")[0]
    times = [float(t) for t in re.findall(r"([\d.]+) us", listed)]
    assert len(times) >= 2, why
    assert times == sorted(times), listed


def test_links_engine_names_latency_as_the_bottleneck_of_a_tiny_message():
    """``aifabric collective all_reduce --nodes 2 -s 8 --engine links`` printed "time 131.60 us ...
    bottleneck: nic-leaf" and "hottest link gpu[0]->leaf[0] at 0%": a link at 0% named as what limits the
    run. The formula engine on the same algorithm and protocol (``--algo ring --proto Simple``) gives the same
    131.60 us and "bottleneck: latency" (131.6 us of NCCL's ring latency, 0.0 us of bandwidth). Expected:
    the links engine names latency too when its time is NCCL's latency. (The links engine now runs the
    protocol NCCL's tuner picks for its ring, LL at 8 B: 40.0 us, the formula's ``--algo ring``.)"""
    links = result_json(["collective", "all_reduce", "--nodes", "2", "-s", "8", "--engine", "links"])
    formula = result_json(["collective", "all_reduce", "--nodes", "2", "-s", "8", "--algo", "ring"])
    assert links["protocol"] == formula["protocol"]
    assert links["time_s"] == pytest.approx(formula["time_s"], rel=1e-6)
    assert formula["bottleneck"] == "latency"
    assert links["bottleneck"] == "latency", links["bottleneck"]


def test_links_engine_reports_the_latency_it_charges():
    """``aifabric collective all_reduce --nodes 2 -s 8 --engine links --json`` gave "time_s": 1.316e-04 and
    "latency_s": 0.0. The README: a plan "carries its algorithm's NCCL latency ..., which the links/flow
    engines charge once"; here it is the whole 131.6 us (the formula engine's ring/Simple: latency_s
    1.316e-04, bandwidth 0.0 us). Expected: latency_s is the latency charged, ~ time_s for 8 bytes."""
    links = result_json(["collective", "all_reduce", "--nodes", "2", "-s", "8", "--engine", "links"])
    assert links["latency_s"] == pytest.approx(links["time_s"], rel=0.01), links


def test_fabric_send_recv_refusal_names_an_option_fabric_takes():
    """``aifabric fabric send_recv --nodes 2`` printed "error: send_recv: needs exactly 2 ranks (--ranks 2),
    got 16"; ``aifabric fabric --help`` has no --ranks (``fabric send_recv --nodes 2 --ranks 2`` exits 2 with
    "No such option: --ranks"). A refusal must tell the user what to type. Expected: fabric takes --ranks, or
    the line names a way fabric has (e.g. --job-nodes, or collective send_recv --ranks 2 --engine flow)."""
    line = refused(["fabric", "send_recv", "--nodes", "2"], "send_recv")
    takes_ranks = runner.invoke(app, ["fabric", "send_recv", "--nodes", "2", "--ranks", "2"]).exit_code == 0
    assert takes_ranks or "--ranks 2)" not in line, line


def test_transport_skew_overflow_names_skew():
    """``aifabric transport all-to-all --skew 1e300`` printed "error: --senders: about 1.2e+303 steps of
    0.5 us x 240 flows at once ... is too long a run": it blames --senders (the default 16) for what
    --skew 1e300 asked. Expected: exit 2 naming --skew and its value."""
    line = refused(["transport", "all-to-all", "--skew", "1e300"], "--skew")
    assert not line.startswith("error: --senders"), line


def test_checkpoint_refuses_a_model_no_cluster_can_hold():
    """``aifabric checkpoint --nodes 16 --params 1e30 --storage ddn-ai400x2-turbo --storage-units 4`` printed
    "checkpoint 1.4e+16 PB = 1e+21 B params x 14 B/param" and a write of 4.375e+19 s, exit 0. The 128 H100s
    hold 128 x 80 GB = 10.24 TB of HBM, and the state checkpointed (weights and optimizer, 14 B/param) is
    the state they train; `collective` refuses a message above one GPU's memory (--size 1e30: "above 1 TiB,
    more than any GPU's memory"). Expected: exit 2 naming --params and the memory it needs."""
    refused(
        ["checkpoint", "--nodes", "16", "--params", "1e30", "--storage", "ddn-ai400x2-turbo"]
        + ["--storage-units", "4"],
        "--params",
    )


def test_scale_across_refuses_a_distance_no_fibre_spans():
    """``aifabric scale-across --distance 1e9`` printed "256 GPUs over 2 sites 1e+09 km apart" and "DP across
    the sites costs 1e+04 s per step", exit 0. Two sites on Earth are at most half its circumference apart,
    20,037 km (WGS-84); a billion km is 6.7 astronomical units. --distance 0 and nan are refused with one line
    (sites.distance_km). Expected: exit 2 naming --distance (or sites.distance_km) and the value."""
    line = refused(["scale-across", "--distance", "1e9"])
    assert "distance" in line, line


@pytest.mark.parametrize("value", ["-1 MB", "0 MB", "0", "nan MB"])
def test_checkpoint_refuses_a_data_per_step_that_is_no_size(value):
    """``aifabric checkpoint ... --step-time 5s --data-per-step "0 MB"`` printed "data loading: 0 GB/s
    needed", exit 0, while "-1 MB" said "size must be >= 0 bytes": a step that reads nothing loads no data.
    Expected: exit 2, one line naming --data-per-step and the value, for every size that is not > 0."""
    args = ["checkpoint", "--nodes", "16", "-m", "llama3-70b", "--storage", "ddn-ai400x2-turbo"]
    refused(
        [*args, "--storage-units", "4", "--step-time", "5s", "--data-per-step", value],
        "--data-per-step",
        value,
    )


def test_flow_engine_charges_and_names_latency_as_the_links_engine_does():
    """The flow engine adds the same NCCL latency once (README): for 8 bytes it is the whole time, so its
    latency_s is ~ time_s and its bottleneck is latency, by the formula engine's rule."""
    flow = result_json(["collective", "all_reduce", "--nodes", "2", "-s", "8", "--engine", "flow"])
    assert flow["latency_s"] == pytest.approx(flow["time_s"], rel=0.01), flow
    assert flow["bottleneck"] == "latency", flow["bottleneck"]


def test_links_engine_names_the_loaded_tier_for_a_large_message():
    """1 GiB over 2 nodes: bandwidth, not latency, sets the time; the links engine names the tier it loads."""
    links = result_json(["collective", "all_reduce", "--nodes", "2", "-s", "1GiB", "--engine", "links"])
    assert links["latency_s"] < 0.1 * links["time_s"], links
    assert links["bottleneck"] != "latency", links["bottleneck"]


def test_a_cluster_file_with_sites_farther_apart_than_earth_allows_is_refused():
    """The bound is the spec's, so a cluster file meets it too: 20,037.5 km (half the WGS-84 equator, pi x
    6,378.137 km) is the farthest two sites can be apart; 20,000 km (two nearly antipodal sites) is taken."""
    dci = {"dci_bandwidth": "100 Tb/s"}
    assert preset("dgx-h100-superpod", nodes=64, sites={"distance_km": 20_000, **dci}).sites is not None
    with pytest.raises(ConfigError, match=r"sites\.distance_km: 30000\.0 km is farther"):
        preset("dgx-h100-superpod", nodes=64, sites={"distance_km": 30_000, **dci})
