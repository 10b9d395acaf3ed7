"""Blind check of the other half, second set: optics, storage paths and scale-across on new public figures.

Each test describes the published setup with a preset or a cluster file, runs the library call a user's
command makes (the inventory under ``aifabric cluster show``, ``node_path`` under ``aifabric checkpoint``,
``aifabric scale-across``) and asserts the published figure within 10 % (counts exactly), with its source and
the hand derivation. Figures the model misses are in ``MISSED`` (product figure, published figure,
diagnosis); their test re-measures the product's figure, so a fix shows up as a failure there.

Sources (none in the project's earlier source lists):

- NVIDIA MMA1Z00-NS400-T product specifications (docs.nvidia.com/networking/display/MMA1Z00NS400T/Overview):
  400G QSFP112 multimode for ConnectX-7/QSFP112 and BlueField-3 ("BlueField-3 only accepts QSFP112s"); in
  400 Gb/s mode it "draws 9 Watts maximum or 8 Watts typical", in 200 Gb/s mode "5 Watts maximum".
- NVIDIA LinkX cables overview, "Connectors and cages" (docs.nvidia.com/networking/display/cableovpub/
  connectors+and+cages, 2024): twin-port OSFP finned tops "support 17-Watt transceivers"; the 800G flat-top
  twin-port OSFP links "DGX H100 Cedar7 GPU links"; "Single-port, 400G OSFP or QSFP112 devices cannot be used
  in twin-port OSFP switch cages -- only adapters and DPUs".
- NVIDIA MCP7Y60-Hxxx 400G passive DAC product specifications (docs.nvidia.com/networking/display/
  mcp7y60hxxx400pub/specifications): power consumption 0.1 W maximum.
- NVIDIA DGX SuperPOD cabling design guide, "Port power" (docs.nvidia.com/dgx-superpod/
  design-guide-cabling-data-centers/latest/port-power.html): "An HDR cable can require 6W per port".
- NVIDIA QM97xx user manual, "Interfaces" (docs.nvidia.com/networking/display/QM97X0PUB/Interfaces): "Each
  OSFP port consists of 2 logical InfiniBand ports"; "Class 8 (17W) OSFP112 transceivers support".
- DDN blog "DDN AI storage gets faster, simpler with GPUDirect Storage" (ddn.com/blog/
  ddn-ai-storage-gets-faster-simpler-gpudirect-storage): "178 GB/s delivered directly to GPUs" of one DGX A100
  from AI400X appliances, "60x more than NFS".
- D. Naik, "Certified storage for NVIDIA DGX SuperPOD" (dilipnaik.substack.com, 2023): the DGX A100's storage
  fabric is one ConnectX-6 "which has 2 ports, each port capable of 200Gb/s".
- Jaghouar et al., "INTELLECT-1 technical report" (arXiv:2412.01152, abstract) and the INTELLECT-1 model card
  (as mirrored at skynet.interserver.net/chat/intellect-1-instruct): "trained using the DiLoCo algorithms with
  100 inner steps. The global all-reduce was done with custom int8 all-reduce kernels", "reducing the
  communication overhead by a factor 400x" against data-parallel training.
- DeepSeek 3FS README (github.com/deepseek-ai/3FS, "Peak throughput"): 180 storage nodes with 2 x 200 Gb/s
  InfiniBand NICs each, 500+ client nodes with 1 x 200 Gb/s each, "aggregate read throughput reached
  approximately 6.6 TiB/s with background traffic from training jobs".

Error before -> after this check's fixes: one DGX A100's GPUDirect Storage read -46.1 % -> +7.9 % (the DDN
catalogue entry's per-client cap, which was the DGX B200's two 400G NICs, removed); INTELLECT-1's cross-site
bytes per step against data parallelism 400x -> 1.0x (local SGD's outer all-reduce, ``scale-across
--inner-steps --sync-dtype``); 3FS's peak read +65 % -> +19 % (the storage servers' NICs, a stage of the
storage path).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from aifabric import catalog
from aifabric.cli.app import app
from aifabric.cluster.inventory import Inventory, inventory
from aifabric.cluster.presets import preset
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.topology import build_topology
from aifabric.storage.paths import node_path

TIB = 2**40


def _inventory(name: str, **kw) -> Inventory:
    return inventory(build_topology(preset(name, **kw)))


def _optics(inv: Inventory, network: str) -> dict[str, tuple[int, float]]:
    """Transceiver lines of one network: part -> (modules, watts per module)."""
    return {
        x.part: (x.count, x.watts / x.count)
        for x in inv.lines
        if x.item == "transceiver" and x.network == network and x.count
    }


def _watts(inv: Inventory, network: str, part: str) -> float:
    return next(w for p, (_, w) in _optics(inv, network).items() if p.startswith(part))


def _switch_end(part: str) -> bool:
    return part.startswith(("leaf end", "spine end", "core end", "switch ends"))


def test_bluefield3_front_end_module_is_the_400g_qsfp112_at_its_typical_watts():
    # MMA1Z00-NS400-T (QSFP112, the only cage BlueField-3 takes), 400 Gb/s mode: "8 Watts typical". DGX H100's
    # front end is 2 x BlueField-3 per node (preset); the inventory's node-end module is the 400G one.
    inv = _inventory("dgx-h100-superpod", nodes=32)
    assert "QSFP112" in next(p for p in _optics(inv, "front-end") if p.startswith("node end"))
    assert _watts(inv, "front-end", "node end") == pytest.approx(8.0, rel=0.10)


def test_200g_node_end_module_within_the_qsfp112_200g_mode_maximum():
    # MMA1Z00-NS400-T in 200 Gb/s mode (2 of 4 lanes lit): "5 Watts maximum". A DGX A100's 200G HDR node end
    # (Megatron's cluster, 2 x ConnectX-6 front end): the inventory's 200G QSFP56 module, 4.5 W (-10 %, under
    # the maximum as a typical figure should be).
    inv = _inventory("megatron-a100", nodes=32)
    watts = _watts(inv, "front-end", "node end")
    assert watts <= 5.0
    assert watts == pytest.approx(5.0, rel=0.10)


def test_passive_copper_draws_at_most_a_tenth_of_a_watt():
    # MCP7Y60 passive DAC: power consumption 0.1 W maximum (its EEPROM); the catalogue's passive copper, which
    # every in-rack copper link of the inventory uses, draws 0 W (within 0.1 W).
    assert catalog.optic("dac-copper").power_w == pytest.approx(0.1, abs=0.1)


def test_hdr_modules_within_the_port_power_an_hdr_cable_can_need():
    # SuperPOD cabling guide: "An HDR cable can require 6W per port". The inventory's HDR node and switch ends
    # (Megatron's DGX A100 cluster) draw 4.5 W each, within that port budget.
    inv = _inventory("megatron-a100", nodes=32)
    hdr = [w for p, (_, w) in _optics(inv, "scale-out").items() if "200G" in p]
    assert hdr and max(hdr) <= 6.0


@pytest.mark.parametrize("name", ["dgx-h100-superpod", "gb200-nvl72", "h100-ib-2node"])
def test_switch_end_modules_fit_the_class_8_cage(name):
    # QM97xx manual: "Class 8 (17W) OSFP112 transceivers support"; LinkX overview: the finned top supports
    # "17-Watt transceivers". Every switch-end module the inventory puts in a Quantum-2 / Spectrum-4 cage
    # draws at most 17 W (the multimode twin-port: 15 W).
    inv = _inventory(name)
    for network in ("scale-out", "front-end"):
        ends = {p: w for p, (_, w) in _optics(inv, network).items() if _switch_end(p)}
        assert ends
        assert max(ends.values()) <= 17.0


@pytest.mark.parametrize("name", ["dgx-h100-superpod", "gb200-nvl72", "h100-ib-2node"])
def test_switch_cages_take_twin_port_modules_only(name):
    # LinkX overview: "Single-port, 400G OSFP or QSFP112 devices cannot be used in twin-port OSFP switch cages
    # -- only adapters and DPUs": every 400G switch-end line is a twin-port (2x400G) module.
    inv = _inventory(name)
    for network in ("scale-out", "front-end"):
        ends = [p for p in _optics(inv, network) if _switch_end(p)]
        assert ends
        assert all("twin-port" in p for p in ends)


def test_a_quantum2_cage_carries_two_logical_ports():
    # QM97xx manual: "Each OSFP port consists of 2 logical InfiniBand ports". 32 DGX H100 = 256 NDR links into
    # the leaves: 256 / 2 = 128 leaf-end modules for the node links (and 128 more for the uplinks at 1:1).
    inv = _inventory("dgx-h100-superpod", nodes=32)
    leaf_modules = sum(
        x.count for x in inv.lines if x.item == "transceiver" and x.part.startswith("leaf end")
    )
    assert leaf_modules == 2 * 256 // 2


def test_dgx_h100_node_end_is_a_twin_port_module():
    # LinkX overview: the 800G flat-top twin-port OSFP is "for linking DGX H100 Cedar7 GPU links" (two 400G
    # NDR links per cage): 32 nodes x 8 NICs = 256 links on 256 / 2 = 128 node-end modules.
    inv = _inventory("dgx-h100-superpod", nodes=32)
    parts = _optics(inv, "scale-out")
    node_end = next(p for p in parts if p.startswith("node end"))
    assert "twin-port" in node_end
    assert parts[node_end][0] == 128


def test_dgx_a100_storage_fabric_ports():
    # Naik 2023: the DGX A100's storage fabric is one ConnectX-6 with 2 ports of 200 Gb/s: 2 x 25 GB/s =
    # 50 GB/s per direction at line rate. The Megatron preset's front end (storage network) has those ports.
    spec = preset("megatron-a100", nodes=32)
    assert spec.front_end is not None
    assert spec.front_end.nics_per_node == 2
    line = spec.front_end.nics_per_node * 200e9 / 8
    assert line == pytest.approx(50e9)


# DDN GPUDirect Storage blog: one DGX A100 reading from AI400X appliances (EXAScaler) with GDS. The blog gives
# neither the appliance count nor the ports: 178 GB/s is above the DGX A100's two storage ports (50 GB/s), so
# the reads came through its eight 200G HDR compute HCAs, one per GPU behind the same PCIe switch; the file
# system is given an aggregate (1 TB/s) that binds nowhere.
DGX_A100_GDS = """\
name: ddn-dgx-a100-gds
accelerator: a100-sxm-80gb
gpus_per_node: 8
nodes: 1
scale_up: {kind: nvswitch}
scale_out: null
front_end: {nic: connectx-6, nics_per_node: 8, switch: quantum-qm8700}
management: null
storage: {system: ddn-ai400x2-turbo, aggregate_read: 1 TB/s}
"""


def _dgx_a100(tmp_path: Path, *, gds: bool = True):
    path = tmp_path / "dgx-a100.yaml"
    path.write_text(DGX_A100_GDS)
    return node_path(resolve_cluster(str(path)), direction="read", active_nodes=1, gds=gds)


def test_dgx_a100_gds_read_from_exascaler(tmp_path):
    # Published: 178 GB/s into one DGX A100's GPUs.
    # Model: 8 x 200 Gb/s = 200 GB/s x 0.96 (ConnectX-6 payload) = 192 GB/s (+7.9 %), under the 8 GPUs'
    # PCIe 4.0 x16 links (8 x 28.81 = 230.5 GB/s). Before this check the catalogue capped a DDN client at
    # 96 GB/s (the DGX B200's two 400G storage NICs in DDN's B200 blog): 96 GB/s, -46 %.
    path = _dgx_a100(tmp_path)
    assert path.bottleneck == "node front-end NICs"
    assert path.rate_bytes_per_s == pytest.approx(8 * 25e9 * 0.96)
    assert path.rate_bytes_per_s == pytest.approx(178e9, rel=0.10)


# DeepSeek 3FS peak read: 500 client nodes, one 200 Gb/s HDR NIC each, reading into host memory (USRBIO, no
# GPU in the path) from 180 storage servers of 2 x 200 Gb/s HDR each. The GPUs' own fabric is only there for
# the file to describe a cluster; it carries none of these reads.
THREEFS = """\
name: deepseek-3fs-clients
accelerator: a100-sxm-80gb
gpus_per_node: 8
nodes: 500
scale_up: {kind: nvswitch}
scale_out: {nic: connectx-6, fabric: infiniband, switch: quantum-qm8700, tiers: 3}
front_end: {nic: connectx-6, nics_per_node: 1, switch: quantum-qm8700}
management: null
storage: {system: deepseek-3fs, units: 180, unit_nic: connectx-6, unit_nics: 2}
"""


def _threefs_read_bytes_per_s(tmp_path: Path) -> float:
    path = tmp_path / "3fs.yaml"
    path.write_text(THREEFS)
    spec = resolve_cluster(str(path))
    path = node_path(spec, direction="read", active_nodes=spec.n_nodes, gpus=0)
    assert path.bottleneck == "storage servers' NICs"
    return spec.n_nodes * path.rate_bytes_per_s


def test_intellect1_local_sgd_sends_1_400_of_data_parallel_bytes():
    # Published: DiLoCo with 100 inner steps and an int8 all-reduce: "400x" less communication than DP.
    # Model: the outer all-reduce of the pseudo-gradient in int8 (1 B per fp32 gradient's 4 B) once per 100
    # steps: r / H = 0.25 / 100 = 1/400 of DP's bytes over the DCI per step. Before, scale-across priced only
    # DP's all-reduce every step (400x the published bytes). 14 nodes of 8 H100 as in the report, split over
    # two sites 8,000 km apart on 100 Gb/s (the ratio holds whatever the distance and link).
    args = ["scale-across", "dgx-h100-superpod", "--nodes", "14", "--sites", "2", "--distance", "8000 km"]
    args += ["--dci", "100 Gb/s", "--message", "5 GB", "--inner-steps", "100", "--sync-dtype", "int8"]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    sync = json.loads(r.stdout)["local_sgd"]
    assert 1 / sync["cross_site_bytes_ratio"] == pytest.approx(400.0, rel=0.10)
    # per step, what the sites add to the outer all-reduce over it in one site (DP's basis), over 100 steps
    extra = sync["outer_all_reduce_s"] - sync["outer_single_site_s"]
    assert sync["step_cost_s"] == pytest.approx(extra / 100)


MISSED: dict[str, tuple[float, float, str]] = {
    # name: (product figure, published figure, diagnosis)
    "deepseek_3fs_peak_read_tb_per_s": (
        180 * 2 * 25e9 * 0.96 / 1e12,
        6.6 * TIB / 1e12,
        "3FS read stress test: product 8.64 TB/s (180 servers x 2 x 200 Gb/s x 0.96, the servers' NICs "
        "binding; the 500 clients' NICs give 12.0) vs 7.26 TB/s measured (+19 %; +65 % before the servers' "
        "NICs were a stage of the storage path). Missing mechanism: other traffic on the storage network. "
        "The README measured 'with background traffic from training jobs', which shares the servers' ports; "
        "the storage path prices one job alone.",
    ),
    "ddn_nfs_read_into_dgx_a100_gb_per_s": (
        50.0,
        178.0 / 60,
        "DDN's GDS blog: GDS gives '60x more than NFS', so NFS delivered about 178 / 60 = 2.97 GB/s into the "
        "DGX A100 vs the product's 50 GB/s without GDS (the host bounce buffer, +1,586 %). Missing "
        "mechanism: the client protocol. The no-GDS path prices a parallel file system client staging "
        "through host memory; an NFS mount over TCP runs one connection per mount with kernel copies (the "
        "catalogue's VAST entry: about 2 GB/s per mount over one TCP link), which no stage models.",
    ),
}


def test_every_missed_figure_is_outside_the_tolerance_and_names_both_figures() -> None:
    """A miss is one the agreement tests' 10 % would not pass, its diagnosis naming measured and predicted."""
    for product, published, why in MISSED.values():
        assert " vs " in why
        assert abs(product / published - 1) > 0.10


def test_missed_product_figures_are_still_what_the_product_gives(tmp_path) -> None:
    """Re-measured: a fix that moves one of these shows up here (then move it into an agreement test)."""
    assert _threefs_read_bytes_per_s(tmp_path) / 1e12 == pytest.approx(
        MISSED["deepseek_3fs_peak_read_tb_per_s"][0], rel=1e-6
    )
    no_gds = _dgx_a100(tmp_path, gds=False)
    assert no_gds.bottleneck == "host bounce buffer (no GDS)"
    assert no_gds.rate_bytes_per_s / 1e9 == pytest.approx(MISSED["ddn_nfs_read_into_dgx_a100_gb_per_s"][0])
