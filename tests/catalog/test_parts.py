"""The GPUs, NICs, scale-up links and switches people run: every part loads, with figures from datasheets."""

import re

import pytest

from aifabric import catalog

ACCELERATORS = [
    "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "a30", "a40", "l40s",
    "h100-pcie", "h100-nvl", "h100-sxm", "h800-sxm", "h20", "h200-sxm", "b200", "b300", "gb200", "gb300",
    "gb10", "rtx-4090", "rtx-5090", "rtx-6000-ada", "rtx-pro-6000-blackwell", "v100-sxm2-32gb",
    "v100-pcie-32gb", "mi300x", "mi325x", "mi350x", "mi355x", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e",
    "tpu-ironwood",
]  # fmt: skip
NICS = [
    "connectx-5", "connectx-6", "connectx-7", "connectx-8", "connectx-9", "bluefield-3", "efa-v2", "efa-v3",
    "broadcom-thor2", "amd-pollara-400",
]  # fmt: skip


def test_every_part_the_issue_names_is_catalogued_with_a_source():
    assert set(ACCELERATORS) <= set(catalog.catalog_names("accelerator"))
    assert set(NICS) <= set(catalog.catalog_names("nic"))
    for key in ACCELERATORS:
        acc = catalog.accelerator(key)
        assert len(acc.source) > 30 and acc.peak_bf16_flops > 1e13 and acc.hbm_bandwidth_bytes_per_s > 1e11
        link = acc.nvlink or acc.scale_up_link
        if link is not None:
            assert catalog.scaleup(link).per_gpu_bidirectional_bytes_per_s > 0
    for key in NICS:
        assert catalog.nic(key).line_rate_bytes_per_s >= 100e9 / 8


@pytest.mark.parametrize(
    ("key", "flops", "hbm", "hbm_bw"),
    [
        ("a100-sxm-40gb", 312e12, 42298834944, 1555e9),  # datasheet; HBM: CUDA total (bottlerocket PR #3873)
        ("a30", 165e12, 24e9, 933e9),  # NVIDIA A30 datasheet
        ("l40s", 362.05e12, 48e9, 864e9),  # NVIDIA L40S datasheet
        ("h100-nvl", 835e12, 99961274368, 3900e9),  # datasheet NVL column; HBM: NVML total (fastfetch #1658)
        (
            "h20",
            148e12,
            97871 * 2**20,
            4000e9,
        ),  # HGX H20 brief; HBM: nvidia-smi (NVIDIA/nvtrust #128)
        ("gb300", 2500e12, 288e9, 8000e9),  # GB300 NVL72: 360 PF sparse BF16 / 72 / 2
        ("rtx-4090", 165.2e12, 24e9, 1008e9),  # Ada whitepaper
        ("mi300x", 1307.4e12, 192 * 2**30, 5300e9),  # datasheet; HBM: rocm-smi (ROCm/legacy-rocm-build #4750)
        (
            "mi350x",
            2306.9e12,
            288 * 2**30,
            8000e9,
        ),  # MI350X datasheet (2.3 PF dense); 8 x 36 GiB HBM3E
        ("mi355x", 2516.6e12, 288 * 2**30, 8000e9),  # AMD MI355X datasheet; 8 x 36 GiB HBM3E
        ("tpu-v6e", 918e12, 32e9, 1638e9),  # Google Cloud TPU v6e docs
        ("tpu-v4", 275e12, 32 * 2**30, 1200e9),  # Google Cloud TPU v4 docs (32 GiB)
    ],
)
def test_accelerator_figures_against_datasheets(key, flops, hbm, hbm_bw):
    acc = catalog.accelerator(key)
    assert acc.peak_bf16_flops == pytest.approx(flops)
    assert acc.hbm_capacity_bytes == pytest.approx(hbm)
    assert acc.hbm_bandwidth_bytes_per_s == pytest.approx(hbm_bw)


def test_scale_up_of_the_new_parts():
    # H800: NVLink cut to 400 GB/s = 8 NVLink 4 links; NCCL 8 x 20.6 = 164.8 GB/s
    # (A800 ~160, NVIDIA/nccl #412)
    h800 = catalog.accelerator("h800-sxm")
    assert h800.nvlink_links == 8
    assert catalog.scaleup("nvlink4").nccl_effective_bytes_per_s(h800.nvlink_links) == pytest.approx(164.8e9)
    # MI300X: 7 x 48 GB/s usable xGMI = 336 GB/s (AMD ROCm blog, case 31); RCCL, not NCCL
    mi = catalog.accelerator("mi300x")
    assert mi.collective_library == "rccl" and mi.nvlink is None
    assert catalog.scaleup(mi.scale_up_link).nccl_effective_bytes_per_s() == pytest.approx(336e9)
    # TPU v5e: 400 GBps bidirectional ICI over 4 ports
    v5e = catalog.scaleup(catalog.accelerator("tpu-v5e").scale_up_link)
    assert v5e.per_gpu_per_direction_bytes_per_s == 200e9 and v5e.links_per_gpu == 4
    assert catalog.accelerator("tpu-ironwood").chips_per_pod == 9216
    # V100 SXM2: NVLink 2, 6 links, 300 GB/s
    assert catalog.scaleup("nvlink2").per_gpu_bidirectional_bytes_per_s == 300e9
    # PCIe cards have no NVLink domain
    for key in ("l40s", "rtx-5090", "rtx-pro-6000-blackwell", "h100-pcie", "a40"):
        assert catalog.accelerator(key).nvlink is None


def test_nic_and_switch_figures():
    assert catalog.nic("connectx-5").line_rate_bytes_per_s * 8 == 100e9  # ConnectX-5 EDR / 100GbE
    # AWS: p5.48xlarge 32 x 100 Gb/s EFAv2 = 3,200 Gb/s; p5en 16 x 200 Gb/s EFAv3
    assert 32 * catalog.nic("efa-v2").line_rate_bytes_per_s * 8 == 3200e9
    assert 16 * catalog.nic("efa-v3").line_rate_bytes_per_s * 8 == 3200e9
    assert catalog.nic("broadcom-thor2").line_rate_bytes_per_s * 8 == 400e9
    assert catalog.nic("amd-pollara-400").line_rate_bytes_per_s * 8 == 400e9
    th6 = catalog.switch("tomahawk6-102t")  # Tomahawk 6: 102.4 Tb/s
    assert th6.ports * th6.port_speed_bytes_per_s * 8 == pytest.approx(102.4e12)


def test_clusters_of_new_parts_validate():
    from aifabric.cluster.spec import ClusterSpec

    mi = ClusterSpec.from_dict({"accelerator": "mi300x", "nodes": 2, "scale_out": {"nic": "amd-pollara-400",
                                "fabric": "ethernet", "switch": "tomahawk5-51t"}})  # fmt: skip
    assert mi.scaleup_link.key == "infinity-fabric-mi300"
    assert mi.scaleup_effective_bytes_per_s == pytest.approx(336e9)
    pcie = ClusterSpec.from_dict({"accelerator": "l40s", "nodes": 1, "scale_up": {"kind": "pcie"}})
    assert pcie.scaleup_link.key == "pcie-gen4"


def _numbers(text: str) -> set[float]:
    return {float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}


def _stated(value: float, text: str, scales: tuple[float, ...]) -> bool:
    """``value`` (or value / scale) is written in ``text``, to 0.5%."""
    return any(abs(n - value / k) <= 0.005 * value / k for n in _numbers(text) for k in scales)


@pytest.mark.parametrize("key", ACCELERATORS)
def test_every_gpu_figure_is_stated_in_its_source(key):
    # the datasheet figures are written out in the entry's source: HBM capacity (GB, or GiB for TPU v4),
    # HBM bandwidth (GB/s or TB/s), 16-bit peak (dense TFLOPS/PFLOPS, or the sparse figure, twice dense)
    acc = catalog.accelerator(key)
    src = acc.source
    assert _stated(acc.hbm_capacity_bytes, src, (1e9, 2**30)), (key, "hbm_capacity")
    assert _stated(acc.hbm_bandwidth_bytes_per_s, src, (1e9, 1e12)), (key, "hbm_bandwidth")
    flops = acc.peak_bf16_flops
    assert _stated(flops, src, (1e12, 1e15)) or _stated(2 * flops, src, (1e12, 1e15)), (key, "peak_bf16")


@pytest.mark.parametrize("key", NICS)
def test_every_nic_line_rate_is_stated_in_its_source(key):
    nic = catalog.nic(key)
    assert _stated(nic.line_rate_bytes_per_s * 8, nic.source, (1e9, 1e12)), key  # Gb/s or Tb/s


def test_in_network_reduction_where_the_datasheet_says_sharp():
    # QM8700 SHARPv2, QM9700 SHARPv3, Q3400 SHARPv4 (NVIDIA datasheets, in each source); Ethernet switches
    # named here have no in-network reduction (CollNet needs it on every tier: collectives/nccl_env.py)
    for key in ("quantum-qm8700", "quantum-2-qm9700", "quantum-x800-q3400"):
        sw = catalog.switch(key)
        assert sw.in_network_reduction and "SHARP" in sw.source, key
    for key in ("spectrum-4-sn5600-400g", "spectrum-4-sn5600-800g", "tomahawk5-51t", "tomahawk6-102t"):
        assert not catalog.switch(key).in_network_reduction, key
