"""Management reachability, whole-cluster power and optics, headline numbers and announcement claims."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from aifabric import catalog
from aifabric.cli.app import app
from aifabric.cluster.headlines import check_claims, extract_claims, headlines
from aifabric.cluster.management import management_reachability, management_shape
from aifabric.cluster.power import cluster_power, optics_whatif
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.summary import summarize
from aifabric.cluster.topology import build_topology
from aifabric.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _superpod_127():
    return build_topology(preset("dgx-h100-superpod", nodes=127))


def test_every_backend_spine_failed_all_bmcs_reachable():
    topo = build_topology(preset("dgx-h100-superpod", nodes=256))
    rep = management_reachability(topo, ["spine:*"])
    assert len(rep.failed) == topo.switch_counts["spine"]
    assert rep.reachable_bmcs == 256 and rep.unreachable_bmcs == ()
    # and with every back-end switch down too
    assert management_reachability(topo, ["leaf:*", "spine:*"]).reachable_bmcs == 256


def test_rack_management_switch_failed_loses_that_rack():
    # 4 DGX H100 per rack (DGX SuperPOD H100 RA): rack 5 holds nodes 20-23
    topo = build_topology(preset("dgx-h100-superpod", nodes=64))
    rep = management_reachability(topo, ["mgmt-rack:5"])
    assert rep.unreachable_bmcs == (20, 21, 22, 23)
    # one aggregation switch down: every rack keeps its second uplink
    assert management_reachability(topo, ["mgmt-agg:0"]).reachable_bmcs == 64
    assert management_reachability(topo, ["mgmt-agg:*"]).reachable_bmcs == 0


def test_management_counts_and_bad_failure():
    shape = management_shape(preset("dgx-h100-superpod", nodes=127))
    assert (shape.bmc_ports, shape.racks, shape.rack_switches, shape.aggregation_switches) == (127, 32, 32, 2)
    # an NVL72 rack is one management rack of 18 trays
    assert management_shape(preset("gb200-nvl72")).racks == 8
    with pytest.raises(ConfigError, match="--fail"):
        management_reachability(build_topology(preset("dgx-h100-superpod", nodes=8)), ["router:1"])


def test_dgx_h100_superpod_127_nodes_against_reference_architecture():
    # NVIDIA DGX SuperPOD (H100) RA, "Network Fabrics", Table 4, 4 SU / 127 nodes / 1,016 GPUs: 32 leaf and
    # 16 spine QM9700; cables 1,020 compute+UFM (1,016 compute: the 4 UFM links are not modelled) and
    # 1,024 spine-leaf. Modules: twin-port OSFP at the DGX (4 cages, "a two-port transceiver") and at the
    # QM9700: 1,016/2 + 1,016/2 + 1,024/2 + 1,024/2 = 2,040 (not 4,080 link ends), 15 W each = 30.6 kW.
    topo = _superpod_127()
    assert (topo.switch_counts["leaf"], topo.switch_counts["spine"]) == (32, 16)
    assert topo.cable_counts == {"nic-leaf": 1016, "leaf-spine": 1024, "spine-core": 0}
    p = cluster_power(topo)
    so = [x for x in p.inventory.lines if x.network == "scale-out" and x.item == "transceiver"]
    assert sum(x.count for x in so) == 2040
    assert sum(x.watts for x in so) == pytest.approx(2040 * 15)
    # Nodes at DGX H100's 10.2 kW maximum (DGX H100 user guide), itemised: 8 x 700 W GPUs + 700 W CPUs
    # + rest; NICs and NVSwitch are inside the node figure too.
    node_w = sum(x.watts for x in p.compute) + p.inventory.watts_by_network["scale-up"]
    node_w += sum(
        x.watts for x in p.inventory.lines if x.item == "nic" and x.network in ("scale-out", "front-end")
    )
    assert node_w == pytest.approx(127 * 10_200)
    # optics share of the whole cluster: all modules / total; about 2.7 % here
    assert p.optics_share == pytest.approx(p.optics_watts / p.total_watts)
    assert 0.02 < p.optics_share < 0.04


def test_cpo_saving_per_port_against_nvidia_ratio():
    # NVIDIA (GTC 2025; notebookcheck / techspot): ~30 W per pluggable 1.6T port vs ~9 W co-packaged,
    # marketed as "3.5x power efficiency". Our CPO entry against NVIDIA's pluggable figure: 30 / 9 = 3.33x,
    # within 5% of 3.5x; and "4x fewer lasers": 2 per CPO port vs 8 per 1.6T DR8 module.
    cpo = catalog.optic("cpo-1600g-port")
    assert 30.0 / cpo.power_w == pytest.approx(3.5, rel=0.05)
    assert catalog.optic("osfp-1600g").lasers / cpo.lasers == 4
    inv = cluster_power(_superpod_127()).inventory
    wi = optics_whatif(inv, "cpo")
    # switch ends (3 of every 4 modules here) become 400G CPO ports at 9 W x 400/1600 = 2.25 W per link
    switch_links = 1016 + 1024 + 1024
    node_w = 508 * 15
    assert wi.watts_after - (
        node_w
        + switch_links * 2.25
        + sum(x.watts for x in inv.lines if x.network == "front-end" and "node end" in x.part)
    ) == pytest.approx(
        sum(x.links * 2.25 for x in inv.lines if x.network == "front-end" and "switch" in x.part)
    )
    assert wi.saved_watts > 0 and wi.lasers_after < wi.lasers_before
    lpo = optics_whatif(inv, "lpo")
    assert lpo.lasers_after == lpo.lasers_before and lpo.watts_after < lpo.watts_before


def test_gb200_show_names_the_nvlink_domain():
    # NVIDIA GB200 NVL72: "130 TB/s" = 72 GPUs x 1.8 TB/s NVLink 5 (both directions) in one rack; each GPU
    # has one 400 Gb/s ConnectX-7 (DGX GB200 user guide) = 50 GB/s per direction of scale-out.
    h = {x.name: x for x in headlines(summarize(preset("gb200-nvl72")))}
    assert h["scale-up domain bandwidth"].value == pytest.approx(72 * 1.8e12)
    assert h["scale-up domain bandwidth"].network == "scale-up"
    assert h["scale-out per GPU"].value == pytest.approx(50e9)
    r = CliRunner().invoke(app, ["cluster", "show", "gb200-nvl72"])
    assert r.exit_code == 0, r.output
    line = next(x for x in r.stdout.splitlines() if "scale-up domain bandwidth" in x)
    assert "129.6 TB/s" in line and "scale-up" in line and "not the data centre" in line
    nic = next(x for x in r.stdout.splitlines() if "scale-out per GPU" in x)
    assert "50 GB/s" in nic and "400 Gb/s" in nic
    assert "asked" in r.stdout and "built" in r.stdout  # requested vs realised oversubscription


def test_gb200_preset_uses_shipping_nic():
    # DGX GB200 user guide: compute tray "4x NVIDIA ConnectX-7 single port 400G OSFP NIC"
    spec = preset("gb200-nvl72")
    assert spec.scale_out.nic == "connectx-7" and spec.nic_line_rate_bytes_per_s == 50e9


def test_announcement_claims():
    s = summarize(preset("gb200-nvl72", gpus=72))
    v = check_claims(s, extract_claims("72 GPUs, 130 TB/s, 800 Gb/s per GPU, 200 GPUs, 3 PB/s"))
    # 800 Gb/s per GPU against the modelled per-GPU figures (400 Gb/s ConnectX-7, NVLink 1.8 TB/s): differs;
    # 3 PB/s matches no modelled bandwidth and names no network: cannot verify
    assert [x.status for x in v] == ["matches", "matches", "differs", "differs", "cannot verify"]
    assert "scale-out per GPU 50 GB/s" in v[2].note
    assert v[1].figure is not None and v[1].figure.network == "scale-up"
    r = CliRunner().invoke(app, ["announcement", "130 TB/s and 1.8 TB/s per GPU", "--json"])
    assert r.exit_code == 0, r.output
    assert [x["status"] for x in json.loads(r.stdout)] == ["matches", "matches"]
    bad = CliRunner().invoke(app, ["announcement", "the fastest ever"])
    assert bad.exit_code == 2 and "no number" in bad.stderr


def test_cli_mgmt_fail():
    r = CliRunner().invoke(app, ["cluster", "mgmt", "--nodes", "16", "--fail", "mgmt-rack:0", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["unreachable_nodes"] == [0, 1, 2, 3]


@settings(max_examples=20, deadline=None)
@given(
    nodes=st.sampled_from([8, 32, 96]),
    failed=st.lists(
        st.tuples(st.sampled_from(["leaf", "spine", "host"]), st.integers(min_value=0, max_value=7)),
        max_size=6,
    ),
)
def test_property_backend_failures_never_cut_a_bmc(nodes, failed):
    # the OOB network shares no device with the back-end: any back-end failure set leaves every BMC reachable
    topo = build_topology(preset("dgx-h100-superpod", nodes=nodes))
    names = [f"{k}:{i}" for k, i in failed if (k != "spine" or i < topo.switch_counts["spine"])]
    assert management_reachability(topo, names).reachable_bmcs == nodes


@settings(max_examples=15, deadline=None)
@given(nodes=st.integers(min_value=2, max_value=600), copper=st.booleans())
def test_property_cpo_and_lpo_never_cost_more(nodes, copper):
    inv = cluster_power(
        build_topology(preset("dgx-h100-superpod", nodes=nodes, **{"scale_out.nic_to_leaf_copper": copper}))
    ).inventory
    for tech in ("cpo", "lpo"):
        wi = optics_whatif(inv, tech)
        assert wi.watts_after <= wi.watts_before and wi.lasers_after <= wi.lasers_before


def test_management_aggregation_scales_with_racks():
    # trial item 3: 100,000 GPUs = 12,500 DGX, 4 per rack -> 3,125 racks, one 48-port SN2201 each.
    # One 64-port SN4600C takes 63 rack uplinks (one port to the management servers): ceil(3,125 / 63) = 50
    # per plane, 2 planes = 100 (not 2 switches with 3,125 uplinks each). Cables: 12,500 BMC + 2 x 3,125
    # rack uplinks + 100 server links = 18,850. The item counts the nodes' BMCs alone: ``devices: bmc``.
    spec = ClusterSpec.from_yaml(EXAMPLES / "cluster-100k.yaml").with_changes(**{"management.devices": "bmc"})
    shape = management_shape(spec)
    assert (shape.racks, shape.rack_switches, shape.aggregation_switches) == (3125, 3125, 100)
    assert shape.cables == 18_850
    assert shape.rack_switches * 2 <= shape.aggregation_switches * shape.racks_per_aggregation


def test_mgmt_fail_needs_an_index_and_counts_once():
    # trial item 19
    bad = CliRunner().invoke(app, ["cluster", "mgmt", "--fail", "spine"])
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--fail" in bad.stderr
    twice = ["--fail", "mgmt-rack:0", "--fail", "mgmt-rack:0", "--json"]
    r = CliRunner().invoke(app, ["cluster", "mgmt", *twice])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["failed"] == 1 and out["unreachable_nodes"] == [0, 1, 2, 3]


def test_announcement_counts_past_model_names():
    # trial item 4: the 100 of "H100" and the 200 of "B200" are part numbers, not counts
    claims = extract_claims("16,384 H100 GPUs; 72 B200 GPUs; 1e30 GPUs; 800 Gb/s per GPU")
    assert [(c.kind, c.value) for c in claims] == [
        ("count", 16384.0),
        ("count", 72.0),
        ("count", 1e30),
        ("bandwidth", 100e9),
    ]
    assert claims[3].per_gpu


@pytest.mark.parametrize("text", ["-130 TB/s of NVLink", "\u2212130 TB/s", "a (-5 MW) site"])
def test_a_figure_with_a_minus_sign_is_refused(text):
    """A minus sign before a figure is kept: "-130 TB/s" is refused, never read as 130 TB/s."""
    with pytest.raises(ValueError, match="is negative"):
        extract_claims(text)


@pytest.mark.parametrize("text", ["0 PFLOPS of BF16", "-1 exaFLOPS"])
def test_a_compute_figure_at_or_below_zero_is_refused_naming_flops(text):
    """No dense tensor peak is 0 or below; the refusal lists FLOPS among the figures a claim can be of."""
    with pytest.raises(ValueError, match="FLOPS"):
        extract_claims(text)


def test_a_hyphen_between_figures_is_no_minus_sign():
    """ "100-400 Gb/s" and "H100-800 Gb/s": a hyphen joins words or a range: 400, 800 Gb/s. "72-GPU racks"
    is a count of 72 GPUs, as NVIDIA writes the NVL72 ("a 72-GPU NVLink domain", GB200 NVL72 page), never
    a minus 72."""
    claims = extract_claims("100-400 Gb/s, H100-800 Gb/s, 72-GPU racks")
    assert [(c.text, c.value) for c in claims] == [("400 Gb/s", 50e9), ("800 Gb/s", 100e9), ("72-GPU", 72.0)]


def test_a_count_suffix_after_a_space_still_scales_the_count():
    """ "100k GPUs" (xAI's Colossus) is 100,000; so is "100 k GPUs", never 100 GPUs of a model named k. A
    model name that only starts with K or M stays a model: "100 K80 GPUs" and "8 MI300X GPUs" count 100, 8."""
    claims = extract_claims("100k GPUs; 100 k GPUs; 1.5 M GPUs; 100 K80 GPUs; 8 MI300X GPUs")
    assert [c.value for c in claims] == [100e3, 100e3, 1.5e6, 100.0, 8.0]


@pytest.mark.parametrize("text", ["1e306M GPUs", "1e306k-GPU", "1e308 TB/s"])
def test_a_figure_that_overflows_with_its_unit_is_refused(text):
    """The figure is finite, times its suffix or unit it is not (1e306 x 1e6, 1e308 x 1e12 > 1.8e308):
    refused as "1e400" is, never an infinite count or bandwidth."""
    with pytest.raises(ValueError, match="is not a finite number"):
        extract_claims(text)


def test_announcement_nvlink_per_direction_matches():
    # trial item 8: NVLink 5 is 1.8 TB/s per GPU both directions = 900 GB/s each way (catalogue)
    s = summarize(preset("gb200-nvl72", gpus=72))
    (v,) = check_claims(s, extract_claims("900 GB/s"))
    assert v.status == "matches" and v.figure is not None and v.figure.network == "scale-up"


def test_show_prints_the_front_end_ratio():
    # trial item 21: front_end.oversubscription 8 slowed checkpoints but cluster show never said it
    spec = ["dgx-h100-superpod", "--nodes", "512"]
    r = CliRunner().invoke(app, ["cluster", "show", *spec])
    assert r.exit_code == 0, r.output
    assert "front-end: 2 x bluefield-3 per node; leaf oversubscription (down:up) 1:1" in r.stdout
    # and the front-end switches follow the ratio: 512 nodes x 2 = 1,024 BlueField-3 ports on 128-port
    # SN5600: at 1:1 (64 down / 64 up) 16 leaves + 8 spines = 24; at 8:1 (112 / 14) 10 leaves, 140
    # uplinks -> 2 spines = 12
    counts = {}
    for ratio in (1, 8):
        s = summarize(preset("dgx-h100-superpod", nodes=512, **{"front_end.oversubscription": ratio}))
        counts[ratio] = next(
            x.count for x in s.inventory.lines if x.network == "front-end" and x.item == "switch"
        )
    assert counts == {1: 24, 8: 12}


def test_a_tpu_pod_says_its_power_is_not_published():
    """Google publishes no TPU v5p chip, host or pod power (Cloud TPU v5p docs' specification table has no
    power row; catalogue power.yaml): ``cluster show`` says so instead of printing nothing, and counts no
    compute watts it does not have."""
    r = CliRunner().invoke(app, ["cluster", "show", "tpu-v5p-pod"])
    assert r.exit_code == 0, r.output
    assert "compute power (chips, hosts): not published for Google Cloud TPU v5p" in r.stdout
    out = json.loads(CliRunner().invoke(app, ["cluster", "show", "tpu-v5p-pod", "--json"]).stdout)
    assert out["compute_power_gap"].startswith("not published") and out["compute_watts"] == 0.0
    assert not catalog.system_power("tpu-v5p").published
    assert catalog.system_power("h100-sxm").published


@pytest.mark.parametrize("text", ["0.5 GPUs", "1.5-GPU servers", "0.0005k GPUs"])
def test_a_fraction_of_a_gpu_is_refused(text):
    """A GPU count is a whole number: "0.5 GPUs" is refused, never matched as a count ("1.5k GPUs" = 1,500
    is whole)."""
    with pytest.raises(ValueError, match="not a whole number of GPUs"):
        extract_claims(text)
    r = CliRunner().invoke(app, ["announcement", text])
    assert r.exit_code == 2 and "not a whole number" in r.stderr


def test_a_lower_bound_count_is_read():
    """ "100K+ GPUs" (how xAI writes Colossus' size) is at least 100,000 GPUs: read as 100,000."""
    claims = extract_claims("100K+ GPUs; 100,000+ GPUs; 1.5k GPUs")
    assert [(c.kind, c.value) for c in claims] == [("count", 100e3), ("count", 100e3), ("count", 1500.0)]


def test_an_n_gpu_server_is_a_node_size_not_the_cluster():
    """ "8-GPU servers" is the size of one server (HGX: 8 GPUs), not a claim that the cluster has 8 GPUs;
    "4-GPU compute trays" likewise (GB200 NVL72: 4 GPUs a tray); "72-GPU racks" stays the fast domain's
    count (GB200 NVL72 page: "a 72-GPU NVLink domain")."""
    claims = extract_claims("8-GPU servers, 72-GPU racks, 4-GPU compute trays")
    assert [(c.kind, c.value) for c in claims] == [("node size", 8.0), ("count", 72.0), ("node size", 4.0)]
    hgx = summarize(preset("dgx-h100-superpod", nodes=32))
    (v,) = check_claims(hgx, extract_claims("8-GPU servers"))
    assert v.status == "matches" and v.figure is not None and v.figure.name == "GPUs per node"
    (w,) = check_claims(summarize(preset("gb200-nvl72", gpus=72)), extract_claims("8-GPU servers"))
    assert w.status == "differs" and "4 GPUs per node" in w.note


def test_announcement_per_node_scale_out():
    # DGX H100: eight single-port ConnectX-7 of 400 Gb/s for the compute fabric (NVIDIA DGX H100 datasheet),
    # 8 x 400 Gb/s = 3.2 Tb/s = 400 GB/s per node, one direction. A per-node figure that is not it differs
    # and names the modelled one.
    s = summarize(preset("dgx-h100-superpod", nodes=32))
    ok, off = check_claims(s, extract_claims("3.2 Tb/s per node, 6.4 Tb/s per server"))
    assert ok.status == "matches" and ok.figure is not None and ok.figure.name == "scale-out per node"
    assert ok.figure.value == pytest.approx(400e9)
    assert off.status == "differs" and "scale-out per node 400 GB/s" in off.note


def test_announced_compute_is_checked_against_the_peak_of_the_format_it_names():
    # NVIDIA GB200 NVL72 page: FP16/BF16 180 PFLOPS dense (catalogue gb200 peak_bf16_flops 2.5e15 x 72),
    # FP8/FP6 720 PFLOPS with sparsity = 360 dense (peak_fp8_flops 5e15 x 72), FP4 1.4 exaFLOPS (no FP4
    # peak in the catalogue). 360 PFLOPS named as BF16 is twice the BF16 peak: it must not match FP8's; it
    # is the BF16 peak with 2:4 sparsity (GB300 NVL72 page: "FP16/BF16 360 PFLOPS with sparsity", the same
    # Blackwell GPU at 2.5 PF dense), and the verdict says so.
    s = summarize(preset("gb200-nvl72", gpus=72))
    text = (
        "180 PFLOPS of FP16/BF16, 360 PFLOPS of FP8, 1.4 exaFLOPS of FP4, 360 PFLOPS of BF16, "
        "2.5 PFLOPS per GPU"
    )
    v = check_claims(s, extract_claims(text))
    assert [x.status for x in v] == ["matches", "matches", "cannot verify", "matches", "matches"]
    assert v[3].figure is not None and v[3].figure.precision == "bf16" and "sparsity" in v[3].note
    assert v[3].figure.value == pytest.approx(2 * 72 * 2.5e15)
    assert v[0].figure is not None and v[0].figure.value == pytest.approx(72 * 2.5e15)
    assert v[1].figure is not None and v[1].figure.precision == "fp8"
    assert "of FP4" in v[2].note and "BF16 peak per GPU" in v[2].note
    assert v[4].figure is not None and v[4].figure.name == "BF16 peak per GPU"


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        # "PFLOPs" with a lower-case s is how many vendor pages write it: 720 x 1e15 FLOP/s
        ("720 PFLOPs FP8", 720e15, "compute"),
        # bits spelt out: 1.8 Tbit/s = 1.8e12 / 8 = 225 GB/s, as "1.8 Tb/s" reads
        ("1.8 Tbit/s per GPU", 1.8e12 / 8, "bandwidth"),
        ("800 Gbit/s", 800e9 / 8, "bandwidth"),
    ],
)
def test_common_spellings_of_known_units_are_read(text, value, kind):
    (claim,) = extract_claims(text)
    assert (claim.value, claim.kind) == (pytest.approx(value), kind)
