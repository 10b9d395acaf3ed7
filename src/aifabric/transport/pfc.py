"""PFC (IEEE 802.1Qbb) sizing: pause time per quantum, headroom and XOFF per port.

The headroom a port must keep above its XOFF threshold is what keeps arriving after it sends a PAUSE: one
MTU being sent when the threshold is crossed, the bytes on the cable in both directions, and the peer's
response time (``pause_quanta`` x 512 bit times, IEEE 802.3 Annex 31B.3.7), plus the MTU the peer is
sending when the PAUSE lands:

    headroom = 2 MTU + 2 L rate / v + quanta(rate) x 512 / 8            (bytes; rate in bytes/s)

with ``v`` = 1.98e8 m/s in fibre. This is the physics form of SONiC's dynamic headroom
(``cfgmgr/buffer_headroom_mellanox.lua``: port MTU + bytes on cable + peer response, plus the lossless MTU)
with gearbox and MAC/PHY delays 0 and cell occupancy 1, as in congestion-control.md, Sec. 2.2 and
Appendix A.2.

References
----------
.. [1] sonic-net/sonic-swss@18913fa357264149fa4d4ba93638f58e1c8ad89b ``cfgmgr/buffer_headroom_mellanox.lua``.
.. [2] IEEE 802.1Qbb-2011, Priority-based Flow Control.
"""

from __future__ import annotations

from aifabric.errors import ConfigError
from aifabric.transport.params import pfc_constants

__all__ = ["pause_quanta", "pfc_headroom_bytes", "pause_duration_s"]


def pause_quanta(rate_bytes_per_s: float) -> int:
    """The peer response time in pause quanta for a port speed (the table's entry at or above the speed).

    Raises
    ------
    ConfigError
        If the speed is not positive or above the table (800 Gb/s).

    >>> pause_quanta(50e9)  # 400 Gb/s
    905
    """
    table = pfc_constants().pause_quanta
    if not rate_bytes_per_s > 0:
        raise ConfigError(f"rate_bytes_per_s must be > 0, got {rate_bytes_per_s!r}")
    for speed, quanta in table.items():
        if rate_bytes_per_s <= speed * (1 + 1e-9):
            return quanta
    raise ConfigError(
        f"rate_bytes_per_s: {rate_bytes_per_s * 8 / 1e9:g} Gb/s is above the pause-quanta table "
        f"(up to {max(table) * 8 / 1e9:g} Gb/s)"
    )


def pause_duration_s(rate_bytes_per_s: float, quanta: int = 65535) -> float:
    """How long ``quanta`` pause quanta last at a port speed, seconds: ``quanta x 512 / (8 rate)``.

    >>> round(pause_duration_s(5e9) * 1e3, 3)  # the longest PAUSE at 40 Gb/s, ms
    0.839
    """
    return quanta * pfc_constants().quantum_bits / 8 / rate_bytes_per_s


def pfc_headroom_bytes(rate_bytes_per_s: float, cable_m: float, mtu_bytes: float = 4224.0) -> float:
    """Headroom above XOFF for one lossless port (module docstring), bytes.

    Parameters
    ----------
    rate_bytes_per_s : float
        Port speed, bytes/s per direction.
    cable_m : float
        Cable length, metres.
    mtu_bytes : float, default 4224
        Frame size: 4 KiB RoCE payload plus headers (the reference's assumption).

    Raises
    ------
    ConfigError
        If a value is negative or the speed is outside the pause-quanta table.

    Examples
    --------
    400 Gb/s and 100 m: 116.9 KB (congestion-control.md, Sec. 2.2 table, SONiC physics column).

    >>> round(pfc_headroom_bytes(50e9, 100.0) / 1e3, 1)
    116.9
    """
    if cable_m < 0 or mtu_bytes <= 0:
        raise ConfigError(f"cable_m must be >= 0 and mtu_bytes > 0, got {cable_m!r}, {mtu_bytes!r}")
    c = pfc_constants()
    on_cable = 2 * cable_m * rate_bytes_per_s / c.signal_speed_m_per_s
    response = pause_quanta(rate_bytes_per_s) * c.quantum_bits / 8
    return 2 * mtu_bytes + on_cable + response
