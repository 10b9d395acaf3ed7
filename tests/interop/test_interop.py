"""Exports to ASTRA-sim, htsim and SimAI parse back to the cluster's counts (aifabric/interop)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.cluster.topology import build_topology
from aifabric.errors import ConfigError, ParseError
from aifabric.interop.astra import read_analytical
from aifabric.interop.export import FORMATS, SITE_FORMATS, export_cluster
from aifabric.interop.graph import GraphCounts, cables
from aifabric.interop.htsim import host_order, read_htsim
from aifabric.interop.ns3 import read_ns3, read_simai


@pytest.fixture(scope="module")
def rail_2tier():
    # 64 DGX H100 nodes: 8 rails, 2 tiers (16 leaves of 32 down / 32 up, 8 spines), one plane
    spec = preset("dgx-h100-superpod", nodes=64)
    topo = build_topology(spec)
    assert (topo.shape.tiers, topo.shape.rails, topo.planes) == (2, 8, 1)
    return spec, topo


def test_full_graph_counts_by_hand(rail_2tier):
    _, topo = rail_2tier
    # 512 GPUs; switches: 64 NVSwitch domains + 16 leaves + 8 spines; cables: 512 GPU-NVSwitch + 512 NIC-leaf
    # + 16 x 32 leaf-spine
    assert cables(topo).counts() == GraphCounts(512, 88, 1536)


def test_astra_sim_round_trip(rail_2tier, tmp_path):
    spec, topo = rail_2tier
    files = export_cluster(spec, "astra-sim", tmp_path)
    assert {f.name for f in files} == {"network.yml", "topology.txt"}
    assert read_ns3(tmp_path / "topology.txt") == cables(topo).counts()
    net = read_analytical(tmp_path / "network.yml")
    assert net.topology == ("Switch", "Switch") and net.npus_count == (8, 64) and net.n_npus == 512
    # per direction: NVLink 4 is 900 GB/s both directions added -> 450; ConnectX-7 400 Gb/s -> 50 GB/s
    assert net.bandwidth_gbps == pytest.approx((450.0, 50.0))
    # the analytical backend: one switch per domain (64) and per rail (8), one link per NPU per dimension
    assert net.counts() == GraphCounts(512, 64 + 8, 2 * 512)


def test_simai_round_trip(rail_2tier, tmp_path):
    spec, topo = rail_2tier
    export_cluster(spec, "simai", tmp_path)
    assert read_simai(tmp_path / "topology.txt") == cables(topo).counts()
    head = (tmp_path / "topology.txt").read_text().splitlines()[0].split()
    assert head == ["600", "8", "64", "24", "1536", "H100"]  # nodes, GPUs/server, NVSwitches, switches, links


@pytest.mark.parametrize("nodes", [4, 64, 1024])
def test_htsim_round_trip(tmp_path, nodes):
    spec = preset("dgx-h100-superpod", nodes=nodes)
    topo = build_topology(spec)
    export_cluster(spec, "htsim", tmp_path)
    scale_out = cables(topo)
    scale_out = scale_out.select(scale_out.tier >= 1)
    assert read_htsim(tmp_path / "cluster.topo") == scale_out.counts()


def test_htsim_hosts_share_leaves_by_rail(rail_2tier, tmp_path):
    _, topo = rail_2tier
    order = host_order(topo)
    per_leaf = topo.shape.leaf_down
    leaves = topo.leaf_of_gpu[order].reshape(-1, per_leaf)
    assert (leaves == leaves[:, :1]).all()  # each block of Radix_Down hosts sits on one leaf
    rails = topo.rail_of(order).reshape(-1, per_leaf)
    assert (rails == rails[:, :1]).all()  # ... and is one rail (rail-optimised)


def test_cli_export_and_bad_input(tmp_path):
    res = CliRunner().invoke(app, ["export", "--format", "htsim", "--nodes", "4", "-o", str(tmp_path / "h")])
    assert res.exit_code == 0 and "cluster.topo" in res.stdout
    res = CliRunner().invoke(app, ["export", "--format", "ns2", "-o", str(tmp_path)])
    assert res.exit_code == 2 and "--format" in res.output
    (tmp_path / "file").write_text("x")
    res = CliRunner().invoke(app, ["export", "--format", "simai", "-o", str(tmp_path / "file")])
    assert res.exit_code == 2 and "--out" in res.output
    with pytest.raises(ConfigError, match="torus"):
        export_cluster(preset("tpu-v5p-pod"), "astra-sim", tmp_path)
    assert set(FORMATS) == {"astra-sim", "htsim", "simai"}


def test_readers_name_the_problem(tmp_path):
    bad = tmp_path / "t.txt"
    bad.write_text("3 1 2\n2\n0 2 400Gbps 0.001ms 0\n")
    with pytest.raises(ParseError, match="2 links"):
        read_ns3(bad)
    topo = tmp_path / "c.topo"
    topo.write_text("Nodes 8\nTiers 2\nPodsize 8\n\nTier 0\nRadix_Down 4\n")
    with pytest.raises(ParseError, match="Tier blocks|missing"):
        read_htsim(topo)
    yml = tmp_path / "n.yml"
    yml.write_text("topology: [Switch, Torus]\nnpus_count: [8, 2]\nbandwidth: [1, 1]\nlatency: [1, 1]\n")
    with pytest.raises(ParseError, match="Torus"):
        read_analytical(yml)


def test_htsim_connection_matrix_round_trip(tmp_path):
    import numpy as np

    from aifabric.collectives.algorithms import build_plan
    from aifabric.interop.htsim import read_connection_matrix

    spec = preset("dgx-h100-superpod", nodes=4)
    files = export_cluster(spec, "htsim", tmp_path, collective="all_reduce", message_bytes=2**26)
    assert files[-1].name == "collective.cm"
    hosts, flows, waits = read_connection_matrix(files[-1])
    plan = build_plan("all_reduce", 2**26, spec, np.arange(spec.n_gpus))
    node = spec.gpus_per_node
    expected = [
        (stage.repeat, int(((stage.src // node != stage.dst // node) & (stage.bytes_ > 0)).sum()))
        for stage in plan.stages
    ]
    assert hosts == 32 and len(flows) == sum(r * n for r, n in expected)
    inter_bytes = sum(
        stage.repeat * stage.bytes_[(stage.src // node) != (stage.dst // node)].sum() for stage in plan.stages
    )
    assert sum(b for *_, b in flows) == pytest.approx(inter_bytes, rel=1e-6)
    # every flow but each host's first waits for an earlier flow of the same host (a DAG in flow order)
    assert len(waits) == len(flows) - len({s for s, _, _ in flows})
    assert all(t < f for f, t in waits.items())
    assert all(flows[t - 1][0] == flows[f - 1][0] for f, t in waits.items())
    with pytest.raises(ConfigError, match="--collective"):
        export_cluster(spec, "simai", tmp_path, collective="all_reduce", message_bytes=1.0)


def test_htsim_hosts_of_a_shared_nic_split_its_line_rate(tmp_path):
    # aws-p4d: 2 nodes x 8 A100, 4 x 100 Gb/s EFA per node, 2 GPUs per NIC (AWS EC2 P4 page; the preset's
    # gpus_per_nic: 2): 16 hosts at 50 Gb/s each, 4 per leaf (2 NIC ports x 2 GPUs), so 4 leaves as built
    spec = preset("aws-p4d")
    topo = build_topology(spec)
    export_cluster(spec, "htsim", tmp_path)
    text = (tmp_path / "cluster.topo").read_text()
    assert "Downlink_speed_Gbps 50\nRadix_Down 4\n" in text, text
    assert read_htsim(tmp_path / "cluster.topo").switches == topo.shape.n_leaves + topo.shape.n_spines
    leaves = topo.leaf_of_gpu[host_order(topo)].reshape(-1, 4)
    assert (leaves == leaves[:, :1]).all()  # each block of Radix_Down hosts sits on one leaf


@pytest.mark.parametrize("fmt", ["htsim", "simai"])
def test_formats_without_sites_refuse_a_multi_site_cluster(tmp_path, fmt):
    # spectrum-xgs-2-sites: two sites 50 km apart (the preset's sites: {distance_km: 50}). htsim's fat tree
    # and SimAI's cable list have no link between sites, so writing it would run both sites as one and drop
    # the fibre's 250 us each way; astra-sim's network.yml has a dimension of the sites and writes it
    assert fmt not in SITE_FORMATS and "astra-sim" in SITE_FORMATS
    res = CliRunner().invoke(
        app, ["export", "--format", fmt, "-c", "spectrum-xgs-2-sites", "-o", str(tmp_path)]
    )
    assert res.exit_code == 2, res.output
    assert "2 sites 50 km apart" in res.output and "Traceback" not in res.output
    assert not list(tmp_path.iterdir())  # nothing half-written
