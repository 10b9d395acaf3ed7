"""Blind check of the other half (storage path, optics, scale-across) against figures not used to build it.

Each test describes the published setup with a cluster file, runs the product's library call a user's command
makes (``node_path`` under ``aifabric checkpoint``, the inventory under ``aifabric cluster show``) and asserts
the published figure within a stated tolerance, with its source and the hand derivation. Figures the model
misses are in ``MISSED`` (product figure, published figure, diagnosis); their test re-measures the product's
figure, so a fix shows up as a failure there (then move the entry into an agreement test).

Sources (none in the project's earlier source lists):

- gds-bench.farmgpu.net, pages ``/nfsordma/`` and ``/theory/`` (2026): GPUDirect Storage reads (gdsio,
  XferType GPUD, 1 MiB blocks) from a VAST cluster over NFS over RDMA (vastnfs, RoCE v2, nconnect 32/64) into
  L40S GPUs (PCIe 4.0 x16) through one ConnectX-7 400 GbE port: 1 GPU 26.41 GiB/s ("GPU PCIe uplink"),
  2 GPUs 40.15 GiB/s, 4 GPUs 43.43 GiB/s ("NIC (single port)").
- NVIDIA transceiver product specifications (docs.nvidia.com/networking): MMA4Z00-NS-T twin-port 2x400G
  multimode "remain at 15 Watts"; MMS4X00-NS-T twin-port 2x400G single mode "remain at 17 Watts";
  MMA4Z00-NS400-T single-port 400G multimode "9 Watts maximum or 8 Watts typical"; MMS4X00-NS400 single-port
  400G single mode DR4 "9 Watts maximum or 9 Watts typical".
- NVIDIA/nvbandwidth issues #15 and #24: device-to-host copies, the direction of a checkpoint's copy to host
  memory: eight RTX 4090 (PCIe 4.0 x16), ``device_to_host_memcpy_ce`` 26.25-27.11 GB/s, mean 26.78; an H100
  node (PCIe 5.0 x16), ``device_to_host_memcpy_sm`` 52.77 GB/s on every GPU.
- Google DeepMind, "Decoupled DiLoCo" (deepmind.google/blog/decoupled-diloco, 2026, as summarised by
  news.kav.co.id and 24-ai.news): cross-datacenter bandwidth 198 Gb/s for data-parallel training against
  0.84 Gb/s with Decoupled DiLoCo over eight datacenters.

Error before -> after this check's fix (the GPU's host link at its PCIe DMA payload efficiency): one GPU's
GPUDirect Storage read +12.8 % -> +1.6 %; the checkpoint's GPU -> host copy +19.5 % -> +7.6 % (RTX 4090) and
+21.3 % -> +9.2 % (H100).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aifabric.cluster.inventory import inventory
from aifabric.cluster.presets import preset
from aifabric.cluster.resolve import resolve_cluster
from aifabric.cluster.topology import build_topology
from aifabric.storage import checkpoint_size, checkpoint_time
from aifabric.storage.paths import node_path

GIB = 2**30

# gds-bench.farmgpu.net: one server of L40S (PCIe 4.0 x16, catalogue l40s) reading over one ConnectX-7
# 400 GbE port. The VAST cluster behind it (5 CNodes, 2 x SN5600) publishes no aggregate; the page names the
# GPU's PCIe uplink and the NIC as the binding stages, so the file system is given an aggregate (1 TB/s) that
# binds nowhere here.
FARMGPU = """\
name: farmgpu-l40s-vast
accelerator: l40s
gpus_per_node: 4
nodes: 1
scale_up: {kind: pcie, link: pcie-gen4}
scale_out: null
front_end: {nic: connectx-7, nics_per_node: 1, switch: spectrum-4-sn5600-400g}
management: null
storage: {system: vast, aggregate_read: 1 TB/s}
"""


def _farmgpu(tmp_path: Path):
    path = tmp_path / "farmgpu.yaml"
    path.write_text(FARMGPU)
    return resolve_cluster(str(path))


def _read(tmp_path: Path, gpus: int):
    return node_path(_farmgpu(tmp_path), direction="read", active_nodes=1, gpus=gpus)


def test_one_gpu_gds_read_is_bound_by_its_pcie_link(tmp_path):
    # Published: 26.41 GiB/s = 28.36 GB/s into one L40S, "GPU PCIe uplink" binding.
    # Model: PCIe 4.0 x16 line rate 16 GT/s x 16 / 8 = 32 GB/s per direction, x 128/130 line code x 256-B
    # TLPs over 256 + 24 B (STP token, 4-DW header, LCRC) = 0.9002 -> 28.81 GB/s (+1.6 %); the line rate
    # alone gave 32.0 (+12.8 %).
    path = _read(tmp_path, 1)
    assert path.bottleneck == "GPU<->host PCIe"
    assert path.rate_bytes_per_s == pytest.approx(32e9 * 128 / 130 * 256 / 280, rel=1e-4)
    assert path.rate_bytes_per_s == pytest.approx(26.41 * GIB, rel=0.03)


def test_four_gpu_gds_read_is_bound_by_the_nic(tmp_path):
    # Published: 43.43 GiB/s = 46.63 GB/s with 4 GPUs, "NIC (single port)" binding, 93 % of 400 Gb/s.
    # Model: 4 x 28.81 GB/s of PCIe > one 400 Gb/s port = 50 GB/s x 0.983 (ConnectX-7 payload efficiency,
    # 4 KiB MTU) = 49.15 GB/s (+5.4 %: NFS RPC framing and RoCE's 4 KiB MTU on Ethernet are not priced).
    path = _read(tmp_path, 4)
    assert path.bottleneck == "node front-end NICs"
    assert path.rate_bytes_per_s == pytest.approx(50e9 * 0.983)
    assert path.rate_bytes_per_s == pytest.approx(43.43 * GIB, rel=0.10)


def _copy_rate(spec, size) -> float:
    """Bytes/s of the asynchronous checkpoint's GPU -> host copy (``aifabric checkpoint``'s async copy):
    one GPU's share over the seconds the copy stops training."""
    res = checkpoint_time(spec, size)
    return size.total_bytes / size.writer_gpus / res.async_copy_s


def test_checkpoint_copy_to_host_of_an_rtx_4090(tmp_path):
    # Published (nvbandwidth #15): device_to_host_memcpy_ce, 8 x RTX 4090, 26.78 GB/s mean (26.25-27.11);
    # a checkpoint's copy to pinned host memory is the same copy-engine transfer.
    # Model: PCIe 4.0 x16, 32 GB/s x 0.9002 = 28.81 GB/s (+7.6 %; the line rate gave +19.5 %).
    path = tmp_path / "rtx4090.yaml"
    path.write_text(FARMGPU.replace("l40s", "rtx-4090").replace("gpus_per_node: 4", "gpus_per_node: 8"))
    spec = resolve_cluster(str(path), **{"storage.aggregate_write": "1 TB/s"})
    rate = _copy_rate(spec, checkpoint_size(7e9, dp=8))
    assert rate == pytest.approx(28.81e9, rel=1e-3)
    assert rate == pytest.approx(26.78e9, rel=0.10)


def test_checkpoint_copy_to_host_of_an_h100():
    # Published (nvbandwidth #24): device_to_host_memcpy_sm 52.77 GB/s on each of 8 H100 (PCIe 5.0 x16).
    # Model: 64 GB/s x 0.9002 = 57.61 GB/s (+9.2 %; the line rate gave +21.3 %). The rest is not priced: the
    # host's write path (root complex, memory) and the GPU's outstanding writes, as in the storage rows.
    spec = preset("dgx-h100-superpod", nodes=16, storage={"system": "ddn-ai400x2-turbo", "units": 4})
    rate = _copy_rate(spec, checkpoint_size(70e9, tp=8, pp=2, dp=8))
    assert rate == pytest.approx(57.61e9, rel=1e-3)
    assert rate == pytest.approx(52.77e9, rel=0.10)


def _module_watts(part: str) -> float:
    """Watts of one transceiver of the inventory line whose part starts with ``part`` (a 32-node DGX H100
    SuperPOD: scale-out 400G links, twin-port modules at both ends; front-end 400G single-port at the
    node)."""
    inv = inventory(build_topology(preset("dgx-h100-superpod", nodes=32)))
    line = next(x for x in inv.lines if x.item == "transceiver" and x.part.startswith(part))
    return line.watts / line.count


def test_twin_port_800g_multimode_module_watts():
    # NVIDIA MMA4Z00-NS-T: "Twin-port multimode OSFP transceivers remain at 15 Watts for all configurations".
    assert _module_watts("leaf end") == pytest.approx(15.0)


def test_single_port_400g_multimode_module_watts():
    # NVIDIA MMA4Z00-NS400-T: in 400 Gb/s mode "the transceiver draws 9 Watts maximum or 8 Watts typical";
    # the inventory's node-end front-end module is the typical figure.
    assert _module_watts("node end: 400G") == pytest.approx(8.0)


MISSED: dict[str, tuple[float, float, str]] = {
    # name: (product figure, published figure, diagnosis)
    "farmgpu_two_gpu_gds_read_gb_per_s": (
        49.15,
        40.15 * GIB / 1e9,
        "two L40S reading over one 400 GbE port: product 49.15 GB/s (the NIC binds, 2 x 28.8 GB/s of PCIe "
        "above it) vs 43.11 GB/s measured (+14 %). Missing mechanism: outstanding I/O. The scaling run gives "
        "each GPU 64 gdsio workers where the single-GPU peak needed 128 (run 5), so each GPU's stream is "
        "bounded by its queue depth over the round-trip time (Little's law), 21.6 GB/s per GPU here; the "
        "storage path prices link rates only, as if every stage had enough requests in flight.",
    ),
    "twin_port_800g_single_mode_watts": (
        15.0,
        17.0,
        "a leaf-spine or spine-core link longer than multimode's 50 m needs single-mode modules: NVIDIA "
        "MMS4X00-NS-T 2x400G DR 'remain at 17 Watts' vs the product's 15 W (MMA4Z00-NS multimode) at every "
        "optical end (-12 %). Missing mechanism: cable reach; the inventory has no link lengths, so it "
        "cannot tell which links need single-mode optics.",
    ),
    "single_port_400g_single_mode_watts": (
        8.0,
        9.0,
        "NVIDIA MMS4X00-NS400 DR4 single mode draws '9 Watts maximum or 9 Watts typical' vs the product's "
        "8 W (multimode typical) at a node end beyond 50 m (-11 %); same missing mechanism (cable reach).",
    ),
    "decoupled_diloco_cross_site_bandwidth_ratio": (
        1.0,
        0.84 / 198,
        "cross-datacenter bandwidth of Decoupled DiLoCo over data parallelism, eight datacenters: product "
        "1.0 (scale-across's default, a data-parallel all-reduce over the DCI every step) vs 0.84 / 198 "
        "Gb/s = 0.0042 published. scale-across now prices local SGD (--inner-steps H, --sync-dtype: r / H of "
        "DP's bytes, INTELLECT-1's 1/400 in test_published_other_half2.py), but the summaries read give "
        "neither Decoupled DiLoCo's inner steps nor its pseudo-gradient type, so the published run cannot be "
        "described; its asynchronous, overlapped sync (no blocking outer step) is not modelled either.",
    ),
}


def test_every_missed_figure_is_outside_the_tolerance_and_names_both_figures() -> None:
    """A miss is one the agreement tests' 10 % would not pass, its diagnosis naming measured and predicted."""
    for product, published, why in MISSED.values():
        assert " vs " in why
        assert abs(product / published - 1) > 0.10


def test_missed_product_figures_are_still_what_the_product_gives(tmp_path) -> None:
    """Re-measured: a fix that moves one of these shows up here (then move it into an agreement test)."""
    assert _read(tmp_path, 2).rate_bytes_per_s / 1e9 == pytest.approx(
        MISSED["farmgpu_two_gpu_gds_read_gb_per_s"][0], rel=1e-3
    )
    assert _module_watts("spine end") == MISSED["twin_port_800g_single_mode_watts"][0]
    assert _module_watts("node end: 400G") == MISSED["single_port_400g_single_mode_watts"][0]
