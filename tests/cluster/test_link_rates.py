"""Link rates set by both ends: a NIC on slower switch ports, a GPU with fewer NVLinks than its generation."""

import pytest

from aifabric.cluster.clos import clos_shape
from aifabric.cluster.presets import preset
from aifabric.cluster.spec import ClusterSpec

pytestmark = pytest.mark.usefixtures("fresh_catalog")  # tests/conftest.py


def _cx8(switch: str, planes: int = 1) -> ClusterSpec:
    return ClusterSpec.from_dict(
        {
            "name": "cx8",
            "accelerator": "h100-sxm",
            "gpus_per_node": 8,
            "nodes": 4,
            "scale_out": {"nic": "connectx-8", "nic_speed": "800 Gb/s", "switch": switch, "planes": planes},
        }
    )


def test_a_nic_faster_than_the_leaf_ports_runs_at_their_speed():
    # QM9700 datasheet: 64 x 400 Gb/s NDR ports; a link trains to the rate both ends support (IBTA), so an
    # 800 Gb/s ConnectX-8 carries 400 Gb/s = 50e9 B/s, and the switch keeps its 64 ports
    spec = _cx8("quantum-2-qm9700")
    assert spec.nic_speed_bytes_per_s == pytest.approx(50e9)
    assert clos_shape(spec).radix == 64
    assert "runs at 400 Gb/s" in (spec.nic_negotiated_note or "")


def test_a_nic_on_matching_ports_or_planes_keeps_its_speed():
    # Q3400 datasheet: 144 x 800 Gb/s; or two 400 Gb/s planes on QM9700s (one port each)
    assert _cx8("quantum-x800-q3400").nic_speed_bytes_per_s == pytest.approx(100e9)
    two = _cx8("quantum-2-qm9700", planes=2)
    assert two.nic_speed_bytes_per_s == pytest.approx(100e9) and two.nic_negotiated_note is None


def test_the_rubin_preset_reaches_its_switches_at_port_speed():
    # ConnectX-9 1.6 Tb/s per GPU (NVIDIA Vera Rubin NVL72 page) as two 800 Gb/s planes on Q3400s
    spec = preset("rubin-nvl72")
    assert spec.nic_speed_bytes_per_s == pytest.approx(200e9)
    assert spec.endpoint_line_rate_bytes_per_s / spec.scale_out.planes <= spec.leaf_port_speed_bytes_per_s
    assert spec.nic_negotiated_note is None


def test_an_h800_domain_runs_on_its_eight_nvlinks():
    # H800 product brief: NVLink 400 GB/s both ways = 8 NVLink 4 links of 25 GB/s a direction; NCCL's
    # 20.6 GB/s per SM90 link (catalogue nvlink4) gives 8 x 20.6 = 164.8 GB/s
    spec = ClusterSpec.from_dict({"name": "h800", "accelerator": "h800-sxm", "gpus_per_node": 8, "nodes": 1})
    assert spec.scaleup_line_rate_bytes_per_s == pytest.approx(200e9)
    assert spec.p2p_effective_bytes_per_s == pytest.approx(8 * 20.6e9)
    # the same board written as h100-sxm with the eight links' bandwidth: the same rates
    h100 = ClusterSpec.from_dict(
        {"name": "nv8", "accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 1,
         "scale_up": {"kind": "nvswitch", "bandwidth": "400 GB/s"}}
    )  # fmt: skip
    assert h100.p2p_effective_bytes_per_s == pytest.approx(spec.p2p_effective_bytes_per_s)


def test_a_radix_the_switch_lacks_is_refused():
    # SN5600 datasheet: 51.2 Tb/s as 128 x 400GbE (breakout): radix 128 at 400 Gb/s per link builds, 129 is
    # a port the switch does not have; at two 200 Gb/s planes each port breaks out to two, 256
    def spec(radix: int, planes: int = 1) -> ClusterSpec:
        return ClusterSpec.from_dict(
            {"name": "r", "accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 4,
             "scale_out": {"nic": "connectx-7", "fabric": "ethernet", "switch": "spectrum-4-sn5600-400g",
                           "radix": radix, "planes": planes}}
        )  # fmt: skip

    assert clos_shape(spec(128)).radix == 128
    assert clos_shape(spec(256, planes=2)).radix == 256
    with pytest.raises(ValueError, match=r"scale_out.radix: 129 .* 128 ports of the leaf switch"):
        spec(129)
