"""RC queue pairs vs UET ephemeral connections at 10k peers, derived by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aifabric.errors import ConfigError
from aifabric.transport.connections import ephemeral_connections, rc_connections

# A 10k-peer all-to-all endpoint: 400 Gb/s NIC (50e9 B/s), 10 us fabric RTT, a 1 MiB first message.
RATE, RTT, MSG = 50e9, 10e-6, 2**20


def test_first_message_and_state_at_10k_peers() -> None:
    rc = rc_connections(
        10_000,
        qps_per_peer=4,
        qp_state_bytes=512,
        rtt_s=RTT,
        setup_software_s=100e-6,
        message_bytes=MSG,
        rate_bytes_per_s=RATE,
    )
    # by hand: 10,000 x 4 = 40,000 QPs x 512 B = 20,480,000 B of QP state
    assert rc.contexts == 40_000
    assert rc.state_bytes == 20_480_000
    # 100 us software + 1.5 x 10 us handshake + 5 us one way + 1,048,576 / 50e9 = 20.97152 us
    assert rc.first_message_s == pytest.approx(100e-6 + 15e-6 + 5e-6 + 20.97152e-6, rel=1e-12)
    uet = ephemeral_connections(64, pdc_state_bytes=512, rtt_s=RTT, message_bytes=MSG, rate_bytes_per_s=RATE)
    # only the 64 messages in flight hold a PDC: 64 x 512 B = 32,768 B, whatever the peer count
    assert uet.state_bytes == 32_768
    assert uet.first_message_s == pytest.approx(5e-6 + 20.97152e-6, rel=1e-12)
    # the handshake and QP setup are the whole difference: 115 us
    assert rc.first_message_s - uet.first_message_s == pytest.approx(115e-6, rel=1e-9)


@given(st.integers(1, 100_000), st.integers(1, 16))
def test_rc_state_grows_with_peers_and_qps(peers: int, qps: int) -> None:
    a = rc_connections(
        peers,
        qps_per_peer=qps,
        qp_state_bytes=256,
        rtt_s=RTT,
        setup_software_s=0,
        message_bytes=0,
        rate_bytes_per_s=RATE,
    )
    b = rc_connections(
        peers + 1,
        qps_per_peer=qps,
        qp_state_bytes=256,
        rtt_s=RTT,
        setup_software_s=0,
        message_bytes=0,
        rate_bytes_per_s=RATE,
    )
    assert b.state_bytes - a.state_bytes == 256 * qps


def test_bad_input_is_refused() -> None:
    with pytest.raises(ConfigError, match="peers"):
        rc_connections(
            0,
            qps_per_peer=1,
            qp_state_bytes=1,
            rtt_s=1,
            setup_software_s=0,
            message_bytes=0,
            rate_bytes_per_s=1,
        )
    with pytest.raises(ConfigError, match="rtt_s"):
        ephemeral_connections(1, pdc_state_bytes=1, rtt_s=-1, message_bytes=0, rate_bytes_per_s=1)
