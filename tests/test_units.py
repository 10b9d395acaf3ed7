"""Units at the edges: bits vs bytes, prefixes, implausible NIC speeds."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aifabric.errors import UnitError
from aifabric.units import parse_bandwidth, parse_bytes, parse_nic_bandwidth, parse_time


def test_bits_and_bytes():
    assert parse_bandwidth("400 Gb/s") == 50e9  # 400e9 bits / 8
    assert parse_bandwidth("900 GB/s") == 900e9
    assert parse_bandwidth("50 Gbps") == 6.25e9  # TPU v5p DCN, seed 2: 6.25 GB/s
    assert parse_bytes("140 GB") == 140e9
    assert parse_bytes("4 GiB") == 4 * 2**30
    assert parse_time("25 us") == pytest.approx(25e-6)


def test_nic_speed_in_bytes_is_rejected_with_the_field_named():
    with pytest.raises(UnitError, match=r"nic_speed: '400 GB/s' is 3.2 Tb/s"):
        parse_nic_bandwidth("400 GB/s")
    assert parse_nic_bandwidth("1.6 Tb/s") == 200e9  # ConnectX-9, lesson: 200 GB/s


def test_nic_speed_below_any_adapter_is_rejected_with_the_field_named():
    """The slowest adapter in the catalogue is the 1 GbE BMC port: "1 Mb/s" is no NIC of a cluster."""
    with pytest.raises(UnitError, match=r"--nic-speed: '1 Mb/s' is 1e\+06 b/s per direction, below any"):
        parse_nic_bandwidth("1 Mb/s", field="--nic-speed")
    assert parse_nic_bandwidth("1 Gb/s") == 125e6  # bmc-1g


@pytest.mark.parametrize("bad", ["-1 GB", "lots", "", "3 XB"])
def test_bad_sizes(bad):
    with pytest.raises(UnitError, match="size"):
        parse_bytes(bad)


def test_zero_bandwidth_rejected():
    with pytest.raises(UnitError, match="bandwidth must be > 0"):
        parse_bandwidth("0 Gb/s")
    # a bare zero or negative number: the value is the error, whatever its unit
    for raw in ("0", "-5", "0.0"):
        with pytest.raises(UnitError, match=f"bandwidth must be > 0, got '{raw}'"):
            parse_bandwidth(raw)


@given(st.floats(min_value=1e-3, max_value=1e6))
def test_gigabit_is_an_eighth_of_a_gigabyte(x):
    assert parse_bandwidth(f"{x} Gb/s") == pytest.approx(parse_bandwidth(f"{x} GB/s") / 8)
