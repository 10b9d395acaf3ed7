"""Users add parts without editing the package: --catalog files, AIFABRIC_CATALOG, the config folder and
parts defined inline in a cluster YAML."""

import json
import textwrap

import pytest
from typer.testing import CliRunner

from aifabric import catalog
from aifabric.cli.app import app
from aifabric.cluster.spec import ClusterSpec
from aifabric.engines.api import collective_time
from aifabric.errors import ConfigError

runner = CliRunner()

# Figures invented for the test (a user's own parts), written as a vendor states them.
USER_PARTS = """
accelerators:
  acme-x1:
    name: ACME X1 accelerator
    arch: hopper
    peak_bf16_flops: 500e12
    hbm_capacity: 96 GB
    hbm_bandwidth: 3000 GB/s
    nvlink: nvlink4
    nvlink_links: 18
    pcie: gen5
    nvls: true
    source: "test part: the user's own datasheet"
switches:
  acme-sw64:
    name: ACME 64 x 400G InfiniBand switch
    fabric: infiniband
    ports: 64
    port_speed: 400 Gb/s
    power: 1500 W
    latency: 0.2 us
    source: "test part: the user's own datasheet"
"""

CLUSTER = """
name: acme-pod
accelerator: acme-x1
nodes: 4
scale_out:
  nic: connectx-7
  switch: acme-sw64
front_end: null
management: null
"""


pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


@pytest.fixture
def files(tmp_path):
    parts = tmp_path / "parts.yaml"
    parts.write_text(USER_PARTS)
    cluster = tmp_path / "acme.yaml"
    cluster.write_text(CLUSTER)
    return parts, cluster


def test_user_file_adds_a_gpu_and_a_switch_and_a_cluster_using_them_runs(files):
    parts, cluster = files
    shown = runner.invoke(app, ["--catalog", str(parts), "cluster", "show", str(cluster), "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert data["gpus"] == 32
    assert any("acme-sw64" in str(p.values()) or "ACME" in str(p.values()) for p in data["parts"])
    timed = runner.invoke(
        app,
        [
            "--catalog",
            str(parts),
            "collective",
            "all_reduce",
            "--cluster",
            str(cluster),
            "--size",
            "1GiB",
            "--json",
        ],
    )
    assert timed.exit_code == 0, timed.output
    assert "busbw" in timed.stdout
    # the option also sits on the command that takes the cluster
    again = runner.invoke(app, ["cluster", "show", str(cluster), "--catalog", str(parts)])
    assert again.exit_code == 0, again.output
    assert "ACME X1" in again.stdout


def test_without_the_catalogue_the_part_is_unknown(files):
    _, cluster = files
    result = runner.invoke(app, ["cluster", "show", str(cluster)])
    assert result.exit_code == 2
    assert "unknown switch 'acme-sw64'" in result.stderr


def test_environment_variable_and_config_folder(files, monkeypatch, tmp_path):
    parts, cluster = files
    monkeypatch.setenv("AIFABRIC_CATALOG", str(parts))
    catalog.reload_catalog()
    assert catalog.switch("acme-sw64").ports == 64
    assert catalog.catalog_sources() == [parts]
    monkeypatch.delenv("AIFABRIC_CATALOG")
    cfg = tmp_path / "xdg" / "aifabric" / "catalog"
    cfg.mkdir(parents=True)
    (cfg / "mine.yaml").write_text(USER_PARTS)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    catalog.reload_catalog()
    assert catalog.accelerator("acme-x1").peak_bf16_flops == 500e12
    assert ClusterSpec.from_yaml(cluster).n_gpus == 32


def test_user_file_overrides_a_shipped_part(tmp_path):
    f = tmp_path / "cx7.yaml"
    f.write_text(
        textwrap.dedent(
            """
            nics:
              connectx-7:
                name: ConnectX-7 as our lab measured it
                speed: 400 Gb/s
                power: 25 W
                payload_efficiency: 0.95
                latency: 3 us
                source: "our ib_write_bw runs, 2026"
            """
        )
    )
    catalog.use_catalog_files([f])
    assert catalog.nic("connectx-7").payload_efficiency == 0.95
    catalog.reload_catalog()
    assert catalog.nic("connectx-7").payload_efficiency == 0.983


def test_inline_parts_in_a_cluster_yaml(tmp_path):
    inline = "parts:\n" + textwrap.indent(USER_PARTS, "  ") + CLUSTER
    path = tmp_path / "inline.yaml"
    path.write_text(inline)
    spec = ClusterSpec.from_yaml(path)
    assert spec.accelerator_spec.name == "ACME X1 accelerator"
    assert spec.scale_out is not None and catalog.switch(spec.scale_out.switch).latency_s == pytest.approx(
        0.2e-6
    )
    resized = spec.with_changes(nodes=8)  # round-trips through the same inline parts
    assert resized.n_gpus == 64
    r = collective_time("all_reduce", 1 << 30, spec)
    assert r.time_s > 0


def test_inline_part_may_not_redefine_a_shipped_one(tmp_path):
    nic = {"name": "x", "speed": "100 Gb/s", "power": "1 W", "payload_efficiency": 0.5, "latency": "1 us",
           "source": "a lab note"}  # fmt: skip
    data = {"parts": {"nics": {"connectx-7": nic}}, "accelerator": "h100-sxm", "nodes": 1}
    with pytest.raises(ConfigError, match="nics.connectx-7: already in the catalogue"):
        ClusterSpec.from_dict(data, source="lab.yaml")


def test_a_part_missing_a_field_is_one_line_naming_part_and_field(files, tmp_path):
    _, cluster = files
    bad = tmp_path / "bad.yaml"
    bad.write_text(USER_PARTS.replace("    port_speed: 400 Gb/s\n", ""))
    result = runner.invoke(app, ["--catalog", str(bad), "cluster", "show", str(cluster)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "switches.acme-sw64: missing field 'port_speed'" in lines[0] and str(bad) in lines[0]
    inline = tmp_path / "inline.yaml"
    inline.write_text(
        "parts:\n  accelerators:\n    g1: {name: G1, arch: hopper, source: 'my notes here'}\n" + CLUSTER
    )
    result = runner.invoke(app, ["cluster", "show", str(inline)])
    assert result.exit_code == 2
    assert "parts.accelerators.g1: missing field 'peak_bf16_flops'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpus:\n  x: {}\n", "unknown family 'gpus'; known: accelerators, scale_up, nics, switches, optics"),
        ("switches:\n  s1: {name: S, fabric: ethernet, ports: 2, port_speed: fast, power: 1 W, "
         "latency: 1 us, source: 'my notes here'}\n", "switches.s1: "),
        ("switches:\n  s1: {name: S, fabric: ethernet, ports: 2, port_speed: 400 Gb/s, power: 1 W, "
         "latency: 1 us, source: 'my notes here', colour: red}\n", "unknown field 'colour'"),
        ("accelerators:\n  a1: {name: A, arch: hopper, peak_bf16_flops: 1e15, hbm_capacity: 1 GB, "
         "hbm_bandwidth: 1 TB/s, nvlink: nvlink99, source: 'my notes here'}\n",
         "nvlink 'nvlink99' is not a scale-up link"),
        ("[1, 2]\n", "expected a mapping"),
        # NCCL tuning.cc nvlsEfficiency is a share of the NVLink rate: 0 prices NVLS at 0 GB/s.
        ("scaleup:\n  l1: {name: L, per_gpu_bidirectional: 900 GB/s, links_per_gpu: 18, "
         "nccl_effective_per_link: 20.6 GB/s, in_switch_reduction: true, nvls_efficiency: 0, "
         "hop_latency: 0.6 us, source: 'my notes here'}\n", "scaleup.l1: nvls_efficiency: "),
        # NCCL topo.h INTEL_P2P_OVERHEAD(bw) = bw x 6/5: traffic through the CPU costs more, never less.
        ("scaleup:\n  l1: {name: L, per_gpu_bidirectional: 64 GB/s, links_per_gpu: 1, "
         "nccl_effective_per_link: 24 GB/s, p2p_through_cpu_overhead: 0.5, "
         "hop_latency: 1 us, source: 'my notes here'}\n", "scaleup.l1: p2p_through_cpu_overhead: "),
        # a full mesh wires GPUs to each other: no switch to reduce in (AMD xGMI, 4 x GH200 EX254n)
        ("scaleup:\n  l1: {name: L, per_gpu_bidirectional: 896 GB/s, links_per_gpu: 7, "
         "nccl_effective_per_link: 48 GB/s, topology: full_mesh, in_switch_reduction: true, "
         "nvls_efficiency: 0.85, hop_latency: 1 us, source: 'my notes here'}\n",
         "scaleup.l1: in_switch_reduction: true on a topology: full_mesh part"),
        # 2 links x 40 GB/s = 80 GB/s per direction on a 100 GB/s-both-ways part (50 each way).
        ("scaleup:\n  l1: {name: L, per_gpu_bidirectional: 100 GB/s, links_per_gpu: 2, "
         "nccl_effective_per_link: 40 GB/s, hop_latency: 1 us, source: 'my notes here'}\n",
         "nccl_effective_per_link: 40 GB/s x links_per_gpu 2 = 80 GB/s per direction is more than the "
         "line rate, per_gpu_bidirectional 100 GB/s / 2 = 50 GB/s"),
        # max_ports caps breakout (SN5000 manual: an SN5600 holds 64 ports of 800GbE and at most 256 after
        # breakout): fewer than the native ports would take ports the switch has away from its radix.
        ("switches:\n  s1: {name: S, fabric: ethernet, ports: 64, port_speed: 800 Gb/s, max_ports: 32, "
         "power: 1 W, latency: 1 us, source: 'my notes here'}\n",
         "switches.s1: max_ports: 32 is fewer than the switch's 64 ports at 800 Gb/s"),
    ],
)  # fmt: skip
def test_bad_user_files_are_refused_with_one_line(tmp_path, text, message):
    f = tmp_path / "u.yaml"
    f.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        catalog.use_catalog_files([f])
    assert "\n" not in str(err.value)


def test_missing_catalogue_file_exit_2(tmp_path):
    result = runner.invoke(app, ["--catalog", str(tmp_path / "nope.yaml"), "cluster", "list"])
    assert result.exit_code == 2
    assert "does not exist" in result.stderr


def test_a_broken_file_in_the_environment_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    bad = tmp_path / "bad.yaml"
    bad.write_text(USER_PARTS.replace("    port_speed: 400 Gb/s\n", ""))
    monkeypatch.setenv("AIFABRIC_CATALOG", str(bad))
    catalog.reload_catalog()
    result = runner.invoke(app, ["cluster", "show", "lesson"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: {bad}: switches.acme-sw64: missing field 'port_speed'"
    from aifabric.cluster.presets import preset

    with pytest.raises(ConfigError, match=r"^\S+bad.yaml: switches.acme-sw64: missing field 'port_speed'$"):
        preset("lesson")


@pytest.mark.parametrize(
    ("links", "expected"),
    [
        ("1000", "nvlink_links: 1000 is outside 1..18"),  # ran before at busbw 18613 GB/s
        ("0", "nvlink_links: 0 is outside 1..18"),  # fell back to 12 silently
        ("-3", "nvlink_links: -3 is outside 1..18"),  # was "scale_up.bandwidth: ... got -6e10"
    ],
)
def test_nvlink_links_outside_the_generation_is_refused_naming_file_part_and_field(tmp_path, links, expected):
    """NVLink 4 GPUs have 18 links (NVIDIA H100 datasheet, NVLink page; ``scaleup.nvlink4.links_per_gpu``):
    a user file giving h100-sxm another count outside 1..18 is refused with the file, the part and the
    field (fix11b)."""
    cat = tmp_path / "cat.yaml"
    cat.write_text(
        "accelerators:\n  h100-sxm:\n    name: H100\n    arch: hopper\n    peak_bf16_flops: 989e12\n"
        "    hbm_capacity: 80 GB\n    hbm_bandwidth: 3350 GB/s\n    nvlink: nvlink4\n"
        f"    nvlink_links: {links}\n    nvls: true\n    source: 'my notes here'\n"
    )
    try:
        result = runner.invoke(
            app, ["--catalog", str(cat), "collective", "all_reduce", "-c", "h100-ib-2node", "-s", "1GB"]
        )
    finally:
        catalog.reload_catalog()
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {cat}: accelerators.h100-sxm: {expected}, the links per GPU of nvlink4 "
        "(scaleup.nvlink4.links_per_gpu)"
    ]


def test_nvlink_links_on_a_part_without_nvlink_is_refused(tmp_path):
    f = tmp_path / "u.yaml"
    f.write_text(
        "accelerators:\n  a1: {name: A, arch: hopper, peak_bf16_flops: 1e15, hbm_capacity: 1 GB, "
        "hbm_bandwidth: 1 TB/s, nvlink_links: 4, source: 'my notes here'}\n"
    )
    with pytest.raises(
        ConfigError, match=r"u.yaml: accelerators.a1: nvlink_links: 4 on a part without nvlink"
    ):
        catalog.use_catalog_files([f])


def test_a_scale_up_part_at_exactly_its_line_rate_is_accepted(tmp_path):
    """The rate rule is ``links x per-link <= bidirectional / 2``, equality allowed: the shipped tpu-v4-ici
    is 6 x 45 GB/s = 270 GB/s on its 540 GB/s both ways (scaleup.yaml's source), and so is this part."""
    f = tmp_path / "u.yaml"
    f.write_text(
        "scaleup:\n  l1: {name: L, per_gpu_bidirectional: 540 GB/s, links_per_gpu: 6, "
        "nccl_effective_per_link: 45 GB/s, hop_latency: 1 us, source: 'my notes here'}\n"
    )
    catalog.use_catalog_files([f])
    link = catalog.scaleup("l1")
    assert link.nccl_effective_bytes_per_s() == link.per_gpu_per_direction_bytes_per_s == 270e9
    assert link.nvls_efficiency is None  # no in-switch reduction, no NVLS figure
