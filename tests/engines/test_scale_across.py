"""Scale-across: all-reduce over sites kilometres apart, latency term by hand, Spectrum-XGS vs plain."""

import json

import pytest
from typer.testing import CliRunner

from aifabric.cli.app import app
from aifabric.cluster.presets import preset
from aifabric.engines.scale_across import cross_site_all_reduce, local_sgd_sync, pp_boundary_time
from aifabric.errors import ConfigError


def _two_sites(transport: str = "spectrum-xgs"):
    return preset(
        "dgx-h100-superpod",
        nodes=64,
        sites={"distance_km": 50, "dci_bandwidth": "100 Tb/s", "transport": transport},
    )


def test_two_sites_50_km_by_hand():
    # 512 H100 in 2 sites of 256. Fibre 50 km x 5 us/km = 250 us one way (reference 2.2). A ring over
    # k = 2 sites takes 2 (k - 1) = 2 steps: latency term 500 us.
    # Bandwidth: DCI 100 Tb/s = 12.5 TB/s x 0.96 (Spectrum-XGS) = 12 TB/s shared by 256 GPUs = 46.875 GB/s,
    # below the NIC's 50 GB/s x 0.983 = 49.15 GB/s. Shard 1 GB / 256 = 3.90625 MB; bandwidth term
    # 2 (k - 1) / k x 3.90625 MB / 46.875 GB/s = 83.33 us. Each of the 2 steps also crosses a NIC and the
    # site's switches: NCCL's hwLat[NET][RING][SIMPLE] = 14 us (tuning.cc), 28 us. Cross-site total 611.33 us.
    r = cross_site_all_reduce(_two_sites(), 1e9)
    assert r.cross_latency_s == pytest.approx(500e-6)
    assert r.cross_network_latency_s == pytest.approx(28e-6)
    assert r.cross_bytes_per_s == pytest.approx(46.875e9)
    assert r.cross_s == pytest.approx(500e-6 + 28e-6 + 3.90625e6 / 46.875e9, rel=1e-9)
    # DCI oversubscription: 256 x 50 GB/s = 12.8 TB/s of NICs over 12.5 TB/s of DCI = 1.024:1
    assert r.dci_oversubscription == pytest.approx(1.024)
    assert r.dp_step_cost_s > 0


def test_spectrum_xgs_against_off_the_shelf():
    # NVIDIA: "up to 1.9x higher NCCL all-reduce bandwidth" than off-the-shelf Ethernet (catalogue dci)
    xgs = cross_site_all_reduce(_two_sites(), 1e9)
    plain = cross_site_all_reduce(_two_sites("ethernet-deep-buffer"), 1e9)
    assert xgs.cross_bytes_per_s / plain.cross_bytes_per_s == pytest.approx(1.9, rel=0.01)


def test_latency_grows_with_distance_and_sites():
    near = preset("dgx-h100-superpod", nodes=64, sites={"distance_km": 1, "dci_bandwidth": "100 Tb/s"})
    far = preset("dgx-h100-superpod", nodes=64, sites={"distance_km": 1000, "dci_bandwidth": "100 Tb/s"})
    assert cross_site_all_reduce(far, 1e6).cross_s > cross_site_all_reduce(near, 1e6).cross_s
    four = preset(
        "dgx-h100-superpod", nodes=64, sites={"count": 4, "distance_km": 50, "dci_bandwidth": "100 Tb/s"}
    )
    assert cross_site_all_reduce(four, 1e9).cross_latency_s == pytest.approx(6 * 250e-6)


def test_errors_and_cli():
    with pytest.raises(ConfigError, match="sites"):
        cross_site_all_reduce(preset("dgx-h100-superpod", nodes=64), 1e9)
    with pytest.raises(ConfigError, match="sites.count"):
        preset("dgx-h100-superpod", nodes=63, sites={"count": 2, "distance_km": 5, "dci_bandwidth": "1 Tb/s"})
    r = CliRunner().invoke(app, ["scale-across", "--nodes", "64", "--distance", "50", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["cross_latency_s"] == pytest.approx(500e-6)
    bad = CliRunner().invoke(app, ["scale-across", "--dci", "100"])
    assert bad.exit_code == 2 and "dci_bandwidth" in bad.stderr


def test_a_site_count_that_does_not_split_the_domains_names_sites():
    """A refusal names the option (--sites), not the field (sites.count) the user never wrote:
    dgx-h100-superpod's 32 NVLink domains do not split over 3 sites."""
    bad = CliRunner().invoke(app, ["scale-across", "--sites", "3"])
    assert bad.exit_code == 2, bad.output
    assert bad.stderr == "error: --sites: 3 does not split the 32 scale-up domains evenly\n", bad.stderr


def test_pp_boundary_across_sites_by_hand():
    # TP 8 boundary GPUs each send 64 MB / 8 = 8 MB at min(49.15 GB/s NIC, 12 TB/s / 8) = 49.15 GB/s:
    # one NET step (NCCL tuning.cc hwLat[NET][RING][SIMPLE] = 14 us) + 250 us of fibre (50 km) + 162.8 us
    # = 426.8 us per microbatch and direction.
    t = pp_boundary_time(_two_sites(), 64e6, tp=8)
    assert t == pytest.approx(14e-6 + 250e-6 + 8e6 / (50e9 * 0.983))


def test_spectrum_xgs_preset_sites_used_by_cli():
    # the preset's own sites (2 x 50 km, 100 Tb/s, Spectrum-XGS) are used when no option overrides them
    r = CliRunner().invoke(app, ["scale-across", "spectrum-xgs-2-sites", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["sites"] == 2 and out["cross_latency_s"] == pytest.approx(500e-6)
    # 2,048 GPUs per site share 12.5 TB/s x 0.96 = 12 TB/s: 5.86 GB/s each;
    # 2,048 x 50 GB/s / 12.5 TB/s = 8.19:1 oversubscribed
    assert out["cross_bytes_per_s"] == pytest.approx(12e12 / 2048)
    assert out["dci_oversubscription"] == pytest.approx(2048 * 50e9 / 12.5e12)
    far = CliRunner().invoke(app, ["scale-across", "spectrum-xgs-2-sites", "--distance", "500", "--json"])
    assert json.loads(far.stdout)["cross_latency_s"] == pytest.approx(5e-3)


def _sa(*args: str):
    return CliRunner().invoke(app, ["scale-across", *args])


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--distance", "inf"], "sites.distance_km"),  # trial item 7
        (["--distance", "nan"], "sites.distance_km"),
        (["--distance", "0 m"], "sites.distance_km"),
        (["--distance", "far"], "--distance"),
        (["--message", "0 GB"], "--message"),  # trial item 16
    ],
)
def test_bad_scale_across_input(args, field):
    r = _sa(*args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], r.stderr


def test_dci_wider_than_the_nics_is_not_oversubscribed():
    # trial item 20: 256 GPUs in 2 sites, 128 x 400 Gb/s = 51.2 Tb/s of NICs per site against a 100 Tb/s
    # DCI: 0.512:1, i.e. the DCI has room, not "oversubscribed"
    r = _sa()
    assert r.exit_code == 0, r.output
    assert "0.512:1" in r.stdout and "not oversubscribed" in r.stdout
    assert "51.2:1 against the site's NICs (oversubscribed)" in _sa("--dci", "1 Tb/s").stdout


def test_distance_takes_units():
    # trial item 20: 50 km = 50,000 m; 5 us/km of fibre -> the same cross-site latency either way
    km = json.loads(_sa("--distance", "50 km", "--json").stdout)
    m = json.loads(_sa("--distance", "50000 m", "--json").stdout)
    bare = json.loads(_sa("--distance", "50", "--json").stdout)
    assert km["cross_latency_s"] == pytest.approx(m["cross_latency_s"])
    assert km["cross_latency_s"] == pytest.approx(bare["cross_latency_s"])


@pytest.mark.parametrize(
    ("nodes", "sites", "km", "size"),
    [(2048, 8, 50, 140e9), (2048, 64, 1, 140e9), (64, 2, 1, 1e3), (256, 4, 1, 1e9), (2048, 8, 1000, 1e6)],
)
def test_one_site_is_never_slower_than_several(nodes, sites, km, size):
    # Invariant (module docstring): the one site can run the split's grouped schedule on its own fabric, at
    # the NICs' rate and without fibre, so total_s >= single_site_s whatever the sites, distance and size.
    spec = preset(
        "dgx-h100-superpod",
        nodes=nodes,
        sites={"count": sites, "distance_km": km, "dci_bandwidth": "100 Tb/s"},
    )
    r = cross_site_all_reduce(spec, size)
    assert r.total_s >= r.single_site_s
    assert r.dp_step_cost_s >= 0


def test_local_sgd_outer_all_reduce_by_hand():
    # DiLoCo / INTELLECT-1: the pseudo-gradient, r x the gradient's bytes, crosses the sites once per H steps.
    spec = _two_sites()
    sync = local_sgd_sync(spec, 4e9, inner_steps=100, sync_bytes_ratio=0.25)
    assert sync.outer.total_s == pytest.approx(cross_site_all_reduce(spec, 1e9).total_s)
    assert sync.dp.total_s == pytest.approx(cross_site_all_reduce(spec, 4e9).total_s)
    # on DP's basis: what the sites add to the outer all-reduce over it in one site, over H steps
    assert sync.step_cost_s == pytest.approx((sync.outer.total_s - sync.outer.single_site_s) / 100)
    assert sync.cross_site_bytes_ratio == pytest.approx(1 / 400)
    # one inner step at full width is data parallelism (DiLoCo Sec. 2), and costs what DP does per step
    same = local_sgd_sync(spec, 4e9, inner_steps=1)
    assert same.step_cost_s == pytest.approx(same.dp.dp_step_cost_s)


@pytest.mark.parametrize(
    ("kw", "match"), [({"inner_steps": 0}, "inner_steps"), ({"sync_bytes_ratio": 2.0}, "ratio")]
)
def test_local_sgd_refuses_impossible_settings(kw, match):
    args = {"inner_steps": 10, "sync_bytes_ratio": 0.5, **kw}
    with pytest.raises(ValueError, match=match):
        local_sgd_sync(_two_sites(), 1e9, **args)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--sync-dtype", "int8"], "--sync-dtype"),  # a pseudo-gradient type without local SGD
        (["--grad-dtype", "bf16"], "--grad-dtype"),  # read only by local SGD: never silently dropped
        (["--inner-steps", "10", "--sync-dtype", "fp32", "--grad-dtype", "bf16"], "--sync-dtype"),
        # no published run all-reduces an fp4 gradient (Streaming DiLoCo's fp4 is the pseudo-gradient)
        (["--inner-steps", "10", "--grad-dtype", "fp4"], "--grad-dtype"),
        (["--inner-steps", "10", "--sync-dtype", "fp4", "--grad-dtype", "fp4"], "--grad-dtype"),
    ],
)
def test_bad_local_sgd_input(args, field):
    r = _sa("--nodes", "64", *args)
    assert r.exit_code == 2, r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], r.stderr


def test_local_sgd_cli_prints_and_emits_the_outer_all_reduce():
    r = _sa("--nodes", "64", "--message", "4 GB", "--inner-steps", "100", "--sync-dtype", "int8")
    assert r.exit_code == 0, r.output
    assert "sync every 100 steps" in r.stdout and "1/400 of DP's bytes" in r.stdout
    out = json.loads(_sa("--nodes", "64", "--inner-steps", "20", "--json").stdout)["local_sgd"]
    assert out["sync_bytes_ratio"] == 1.0 and out["cross_site_bytes_ratio"] == pytest.approx(1 / 20)
