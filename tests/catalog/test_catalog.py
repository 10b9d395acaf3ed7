"""The catalogue: every entry has a source; vendor figures and conventions as stated."""

import pytest

from aifabric import catalog
from aifabric.errors import ConfigError
from aifabric.units import MAX_PLAUSIBLE_NIC_BITS_PER_S, MIN_PLAUSIBLE_NIC_BITS_PER_S


@pytest.mark.parametrize("kind", ["accelerator", "scaleup", "nic", "switch", "optic", "cpu"])
def test_every_entry_loads_with_a_source(kind):
    for key in catalog.catalog_names(kind):
        entry = getattr(catalog, kind)(key)
        assert len(entry.source) > 10


def test_nvlink_generations_vendor_figures():
    # NVIDIA NVLink page: 600 / 900 / 1,800 / 3,000 GB/s per GPU, both directions added
    figs = [catalog.scaleup(f"nvlink{g}").per_gpu_bidirectional_bytes_per_s for g in (3, 4, 5, 6)]
    assert figs == [600e9, 900e9, 1800e9, 3000e9]
    assert catalog.scaleup("nvlink4").per_gpu_per_direction_bytes_per_s == 450e9
    # NCCL topo.h: 18 x SM90_NVLINK_BW 20.6 = 370.8 GB/s
    assert catalog.scaleup("nvlink4").nccl_effective_bytes_per_s(18) == pytest.approx(370.8e9)


def test_nics_and_tpu():
    speeds = [catalog.nic(f"connectx-{g}").line_rate_bytes_per_s * 8 for g in (6, 7, 8, 9)]
    assert speeds == [200e9, 400e9, 800e9, 1600e9]
    tpu = catalog.accelerator("tpu-v5p")
    assert tpu.hbm_bandwidth_bytes_per_s == 2765e9
    assert tpu.ici_bandwidth_bidirectional_bytes_per_s == 1200e9
    assert tpu.dcn_bandwidth_bytes_per_s == 6.25e9
    assert tpu.chips_per_pod == 8960
    assert catalog.optic("osfp-800g-2xsr4").power_w == 15.0  # seed lesson: ~15 W per 800G pluggable


def test_switch_radices():
    assert catalog.switch("quantum-2-qm9700").ports == 64
    assert catalog.switch("quantum-x800-q3400").ports == 144
    sn = catalog.switch("spectrum-4-sn5600-800g")
    assert sn.ports * sn.port_speed_bytes_per_s * 8 == pytest.approx(51.2e12)


def test_ports_at_counts_breakout_and_gives_a_faster_link_one_port():
    # SN5600 (SN5000 user manual): 64 x 800GbE, 128 x 400GbE, 256 x 200GbE and below (max_ports caps breakout)
    sn = catalog.switch("spectrum-4-sn5600-800g")
    assert [sn.ports_at(g * 1e9 / 8) for g in (800, 400, 200, 100)] == [64, 128, 256, 256]
    # a 1.6 Tb/s link on an 800 Gb/s port still takes one port: the 64 it has, not 51.2 Tb/s / 1.6 Tb/s = 32
    assert sn.ports_at(1.6e12 / 8) == 64


def test_unknown_key_names_known_ones():
    with pytest.raises(ConfigError, match="unknown accelerator 'h900'.*h100-sxm"):
        catalog.accelerator("h900")


def test_the_nic_speed_bounds_are_the_catalogues_slowest_and_fastest_adapters():
    """parse_nic_bandwidth refuses rates outside the catalogue's NICs: the floor is its slowest adapter
    (bmc-1g, 1 GbE, NVIDIA DGX H100 user guide), the ceiling its fastest (ConnectX-9, 1.6 Tb/s)."""
    rates = [catalog.nic(k).line_rate_bytes_per_s * 8 for k in catalog.catalog_names("nic")]
    assert (min(rates), max(rates)) == (MIN_PLAUSIBLE_NIC_BITS_PER_S, MAX_PLAUSIBLE_NIC_BITS_PER_S)
