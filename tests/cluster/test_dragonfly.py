"""The dragonfly scale-out (``scale_out.topology: dragonfly``): published Slingshot systems' counts, Kim et
al.'s limits, the global taper the formula engine bounds all-to-all with, and bad inputs.

Sources:
- [KIM] Kim, Dally, Scott, Abts, "Technology-Driven, Highly-Scalable Dragonfly Topology", ISCA 2008: p
  endpoint, a - 1 local and h global ports per switch, at most a h + 1 groups; balanced a = 2p = 2h; radix-64
  routers reach "over 256K" endpoints; Valiant routing crosses two global links.
- [DESENSI] De Sensi et al., "An In-Depth Analysis of the Slingshot Interconnect", SC20: Rosetta, 64 ports;
  16 endpoint, 31 local, 17 global ports per switch (545 groups at most).
- [NERSC-P1] NERSC, "Perlmutter Interconnect" (portal.nersc.gov/cfs/nstaff/siddiq90/nersc.gitlab.io/public/
  systems/perlmutter/interconnect): phase 1, "GPU cabinets contain one Dragonfly group per cabinet, with 32
  switch blades, making a total of 12 groups"; a chassis holds 8 compute blades of 2 GPU nodes, 8 chassis a
  cabinet; copper L0 and L1 cables.
- [NERSC-ARCH] NERSC, "Perlmutter Architecture" (docs.nersc.gov/systems/perlmutter/architecture): 1,536 +
  256 GPU nodes of 4 Slingshot 11 NICs, 3,072 CPU nodes of 1 NIC; a CPU cabinet is 8 chassis of 8 blades of
  4 nodes and 2 switch blades, one dragonfly group per cabinet.
- [AURORA] Ibeid et al., "Scaling MPI Applications on Aurora", arXiv:2512.04291 (2025): 10,624 nodes, "nearly
  85,000 Cassini NICs and 5,600 Rosetta switches"; "166 compute groups, 8 storage groups, and 1 service
  group"; 32 switches a compute group, two nodes a switch, 512 endpoints a group; compute groups joined
  "by two links per pair, providing 1.38 PB/s global bandwidth"; ALCF Aurora interconnect page: "8 fabric
  endpoints per node".
"""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.clusters import cluster_file, scale_out_counts, show_json
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.dragonfly import balanced, dragonfly_shape
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.api import collective_time

# One NIC port per GPU of a stand-in accelerator: only the ports count for sizing.
SLINGSHOT = """\
name: {name}
accelerator: a100-sxm-40gb
gpus_per_node: {gpus}
nodes: {nodes}
scale_up: {{kind: nvswitch}}
scale_out:
  nic: slingshot-11-cassini
  fabric: ethernet
  switch: slingshot-rosetta
  topology: dragonfly
  nic_to_leaf_copper: true
  dragonfly: {dragonfly}
front_end: null
management: null
"""


def _file(tmp_path, nodes: int, gpus: int = 4, dragonfly: str = "{}", name: str = "df") -> str:
    text = SLINGSHOT.format(name=name, gpus=gpus, nodes=nodes, dragonfly=dragonfly)
    return cluster_file(tmp_path, text, f"{name}.yaml")


def _spec(nodes: int, gpus: int = 4, **dragonfly: object) -> ClusterSpec:
    text = SLINGSHOT.format(name="df", gpus=gpus, nodes=nodes, dragonfly=json.dumps(dragonfly))
    return ClusterSpec.model_validate(yaml.safe_load(text))


def _refused(path: str, *args: str) -> str:
    r = CliRunner().invoke(app, ["cluster", "show", path, *args, "--json"])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    return r.output


def test_perlmutter_phase1_gpu_cabinets_are_12_groups_of_32_switches(tmp_path):
    # [NERSC-P1]: 12 groups of 32 switch blades. By hand: 1,536 GPU nodes x 4 NICs = 6,144 endpoints; the
    # balanced dragonfly of 64-port Rosettas is p = 16, a = 32 ([KIM]: p = floor(65/4)), 512 endpoints a
    # group (128 nodes: 8 chassis x 8 blades x 2 nodes, one cabinet); 6,144 / 512 = 12 groups, 384 switches.
    # Local links 12 x 32 x 31 / 2 = 5,952, copper ([NERSC-P1] L1); 6,144 copper L0 node links.
    d = show_json(_file(tmp_path, 1536))
    assert (d["dragonfly"]["p"], d["dragonfly"]["a"], d["dragonfly"]["g"]) == (16, 32, 12)
    assert scale_out_counts(d["parts"], "switch") == {"dragonfly": 384}
    cables = scale_out_counts(d["parts"], "cable")
    assert (cables["nic-switch"], cables["local (in-group)"]) == (6144, 5952)
    assert scale_out_counts(d["parts"], "copper") == {"nic-switch": 6144, "local (in-group)": 5952}


def test_perlmutter_cpu_cabinets_are_12_groups_of_16_switches(tmp_path):
    # [NERSC-ARCH]: a CPU cabinet is one group of 8 chassis x 2 switch blades = 16 switches and 8 x 8 blades
    # x 4 nodes = 256 one-NIC nodes. By hand: 3,072 / 256 = 12 groups, 192 switches; with the 12 GPU groups
    # of phase 1 (above), the 24 groups [NERSC-ARCH] counts.
    d = show_json(_file(tmp_path, 3072, gpus=1, dragonfly="{switches_per_group: 16}", name="cpu"))
    assert (d["dragonfly"]["a"], d["dragonfly"]["g"]) == (16, 12)
    assert scale_out_counts(d["parts"], "switch") == {"dragonfly": 192}


AURORA = "{global_links_per_switch: 17, links_per_arc: 2}"


def test_aurora_166_compute_groups_and_5600_switches(tmp_path):
    # [AURORA]: 10,624 nodes x 8 endpoints = 84,992 NICs ("nearly 85,000"); 512 a group: 84,992 / 512 = 166
    # compute groups of 32 switches, 5,312 switches; with its 8 storage and 1 service groups of as many
    # switches, 175 x 32 = 5,600 ("5,600 Rosetta switches").
    d = show_json(_file(tmp_path, 10624, gpus=8, dragonfly=AURORA, name="aurora"))
    assert scale_out_counts(d["parts"], "nic")["HPE Slingshot 11 NIC (Cassini), 200 Gb/s"] == 84992
    assert (d["dragonfly"]["g"], d["dragonfly"]["switches"]) == (166, 5312)
    all_groups = AURORA.replace("}", ", groups: 175}")
    d = show_json(_file(tmp_path, 10624, gpus=8, dragonfly=all_groups, name="aurora175"))
    assert d["dragonfly"]["switches"] == 5600


def test_aurora_global_bandwidth_of_two_links_per_pair_of_compute_groups(tmp_path):
    # [AURORA]: two links per pair of the 166 compute groups, "1.38 PB/s global bandwidth". By hand: 166 x
    # 165 / 2 = 13,695 pairs x 2 = 27,390 optical links x 200 Gb/s (25 GB/s) each way, both ways 1.3695 PB/s
    # (0.8% under the rounded 1.38, which 166^2 x 2 x 50 GB/s = 1.378 PB/s also rounds to).
    d = show_json(_file(tmp_path, 10624, gpus=8, dragonfly=AURORA, name="aurora"))
    assert d["dragonfly"]["global_links"] == 27390
    assert scale_out_counts(d["parts"], "cable")["global"] == 27390
    assert d["dragonfly"]["global_links"] * 2 * 25e9 == pytest.approx(1.38e15, rel=0.01)
    # half the groups to the other half: 83 x 83 arcs x 2 links x 25 GB/s, below the NICs' 42,496 x 25 GB/s
    assert d["bisection_bytes_per_s"] == pytest.approx(83 * 83 * 2 * 25e9)


def test_kim_balanced_radix_64_reaches_262656_endpoints():
    # [KIM] Sec. 3.1: a = 2p = 2h on radix-64 routers, "over 256K nodes": 32 x 16 x (32 x 16 + 1) = 262,656.
    p, a, h = balanced(64)
    assert (p, a, h) == (16, 32, 16)
    s = dragonfly_shape(_spec(262656 // 4))
    assert (s.g, s.switches, s.links_per_arc) == (513, 513 * 32, 1)
    assert s.oversubscription == pytest.approx(1.0)


def test_kim_limit_a_h_plus_one_groups(tmp_path):
    # [KIM]: at most a h + 1 = 513 groups of 512 endpoints; one endpoint more needs group 514.
    out = _refused(_file(tmp_path, 262656 // 4 + 1))
    assert "a h + 1 = 513" in out


def test_slingshot_17_global_ports_reach_545_groups(tmp_path):
    # [DESENSI]: 16 + 31 + 17 = 64 ports, a h + 1 = 32 x 17 + 1 = 545 groups, 279,040 endpoints.
    s = dragonfly_shape(_spec(279040 // 4, global_links_per_switch=17))
    assert (s.g, s.links_per_arc) == (545, 1)
    _refused(_file(tmp_path, 1, dragonfly="{global_links_per_switch: 17, groups: 546}"))


@pytest.mark.parametrize(
    ("dragonfly", "field"),
    [
        ("{global_links_per_switch: 18}", "16 endpoint + 31 local + 18 global"),  # 65 ports > 64
        ("{groups: 1}", "scale_out.dragonfly.groups: 1 groups"),  # 512 ports for 1,024 NICs
        ("{links_per_arc: 600}", "scale_out.dragonfly.links_per_arc: 600"),  # 600 > a h = 512
        ("{routing: ugal}", "routing"),
        ("{switches_per_group: 0}", "switches_per_group"),
    ],
)
def test_bad_dragonfly_fields_exit_2_with_one_line(tmp_path, dragonfly, field):
    assert field in _refused(_file(tmp_path, 256, dragonfly=dragonfly))


def test_clos_fields_on_a_dragonfly_and_dragonfly_on_a_clos_are_refused(tmp_path):
    text = SLINGSHOT.format(name="x", gpus=4, nodes=8, dragonfly="{}")
    tiers = cluster_file(
        tmp_path, text.replace("  topology: dragonfly\n", "  topology: dragonfly\n  tiers: 3\n"), "t.yaml"
    )
    assert "scale_out.tiers" in _refused(tiers)
    clos = cluster_file(
        tmp_path, text.replace("  topology: dragonfly\n", "").replace("{}", "{groups: 2}"), "c.yaml"
    )
    assert "scale_out.dragonfly" in _refused(clos)


def test_link_level_engines_refuse_a_dragonfly_with_one_line(tmp_path):
    path = _file(tmp_path, 4)
    for engine in ("links", "flow"):
        r = CliRunner().invoke(
            app, ["collective", "all_reduce", "-c", path, "--size", "1MB", "--engine", engine]
        )
        assert r.exit_code == 2, r.output
        assert "scale_out.topology: dragonfly" in r.output


def _a2a_s(spec: ClusterSpec) -> float:
    return collective_time("all_to_all", 2**30, spec).time_s


def test_all_to_all_across_groups_is_bounded_by_the_global_taper():
    # 1,024 nodes x 4 GPUs, 8 groups of 512 endpoints, h = 2: l = floor(64 / 7) = 9 links per arc, 63 global
    # links a group for 512 endpoints, taper r = 512 / 63 = 8.13 (minimal); Valiant ([KIM] Sec. 4.1: "first
    # to a randomly-chosen intermediate group") crosses two global links unless that group is the source's
    # or the destination's (probability 2/g), 2 - 2/8 = 1.75 on average: 14.22.
    # The pairwise all-to-all's traffic leaving a group: S (n - 512) / n over B_nic / r per rank.
    tapered = _spec(1024, global_links_per_switch=2)
    s = dragonfly_shape(tapered)
    assert s.oversubscription == pytest.approx(512 / 63)
    valiant = dragonfly_shape(_spec(1024, global_links_per_switch=2, routing="valiant"))
    assert valiant.oversubscription == pytest.approx((2 - 2 / 8) * 512 / 63)
    n, nic = 4096, tapered.nic_payload_bytes_per_s
    assert _a2a_s(tapered) >= 2**30 * (n - 512) / n / (nic / s.oversubscription)
    assert _a2a_s(_spec(1024, global_links_per_switch=2, routing="valiant")) > _a2a_s(tapered)
    assert _a2a_s(_spec(1024)) < _a2a_s(tapered)


@settings(max_examples=25, deadline=None)
@given(nodes=st.integers(64, 4096), h=st.integers(1, 15))
def test_more_global_links_never_slower(nodes, h):
    # One more global port per switch adds links per arc (or none): the taper, and the all-to-all it
    # bounds, never grow.
    fewer, more = _spec(nodes, global_links_per_switch=h), _spec(nodes, global_links_per_switch=h + 1)
    assert dragonfly_shape(more).oversubscription <= dragonfly_shape(fewer).oversubscription
    assert _a2a_s(more) <= _a2a_s(fewer) * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), a=st.integers(2, 32))
def test_switches_monotone_in_endpoints(data, a):
    # Up to the largest dragonfly of groups of a switches: a h + 1 groups of a p endpoints (4 a node).
    nodes = data.draw(st.integers(1, min(60000, a * 16 * (a * 16 + 1) // 4 - 1)))
    small = dragonfly_shape(_spec(nodes, switches_per_group=a))
    big = dragonfly_shape(_spec(nodes + 1, switches_per_group=a))
    assert small.switches <= big.switches
    assert small.switches * small.p >= small.endpoints  # every NIC has a port
