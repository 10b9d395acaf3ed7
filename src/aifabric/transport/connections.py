"""Connection state and first-message latency: RDMA reliable-connected queue pairs vs UET ephemeral contexts.

**RC (InfiniBand / RoCEv2).** A reliable connection is a queue pair at each end, set up before the first
byte moves by the connection manager's three-way handshake (REQ, REP, RTU: 1.5 round trips, IBTA
Architecture Specification Vol. 1, ch. 12) plus the software that creates the QP and moves it through
INIT, RTR and RTS (the steps ``cmtime(1)`` of librdmacm times). A rank that talks to ``P`` peers over
``k`` QPs each (NCCL: channels x ``NCCL_IB_QPS_PER_CONNECTION``) holds ``P k`` QP contexts:

    state_rc = P k s_qp,        first_message_rc = setup_s + 1.5 RTT + RTT/2 + size / rate

**UET ephemeral connections.** A Packet Delivery Context is created on demand by the first packet and
discarded after the transaction (UEC, "Ultra Ethernet Specification Update", Aug 2024; Hoefler et al.,
arXiv 2508.08906): no handshake, and state only for the messages in flight, whatever the number of peers:

    state_uet = m s_pdc,        first_message_uet = RTT/2 + size / rate

``m`` is the number of concurrently active peers (PDCs). Context sizes are inputs: they are NIC-specific
and not published in the sources this project holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from aifabric.errors import ConfigError

__all__ = ["CM_HANDSHAKE_ROUND_TRIPS", "ConnectionCost", "ephemeral_connections", "rc_connections"]

#: REQ -> REP -> RTU of the InfiniBand connection manager (IBTA Vol. 1 ch. 12), in round trips.
CM_HANDSHAKE_ROUND_TRIPS = 1.5


@dataclass(frozen=True)
class ConnectionCost:
    """What connecting to peers costs one endpoint.

    Attributes
    ----------
    state_bytes : float
        NIC connection state held, bytes.
    contexts : float
        QPs (RC) or PDCs (UET) held.
    first_message_s : float
        From posting the first message to a new peer to its last byte arriving, seconds.
    """

    state_bytes: float
    contexts: float
    first_message_s: float


def _check(**values: float) -> None:
    for name, value in values.items():
        if not (value >= 0 and value < float("inf")):
            raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")


def rc_connections(
    peers: int,
    *,
    qps_per_peer: int,
    qp_state_bytes: float,
    rtt_s: float,
    setup_software_s: float,
    message_bytes: float,
    rate_bytes_per_s: float,
) -> ConnectionCost:
    """RC queue pairs to ``peers`` peers (module docstring formulas).

    Raises
    ------
    ConfigError
        A negative or non-finite value, ``peers`` or ``qps_per_peer`` below 1, or a rate <= 0.

    Examples
    --------
    10,000 peers, 2 QPs each of 1 KiB: 20,000 contexts, 20.48 MB.

    >>> c = rc_connections(10_000, qps_per_peer=2, qp_state_bytes=1024, rtt_s=10e-6, setup_software_s=0,
    ...                    message_bytes=0, rate_bytes_per_s=50e9)
    >>> c.contexts, c.state_bytes, round(c.first_message_s * 1e6, 1)
    (20000.0, 20480000.0, 20.0)
    """
    _check(
        qp_state_bytes=qp_state_bytes,
        rtt_s=rtt_s,
        setup_software_s=setup_software_s,
        message_bytes=message_bytes,
    )
    if peers < 1 or qps_per_peer < 1:
        raise ConfigError(f"peers and qps_per_peer must be >= 1, got {peers!r}, {qps_per_peer!r}")
    if not rate_bytes_per_s > 0:
        raise ConfigError(f"rate_bytes_per_s must be > 0, got {rate_bytes_per_s!r}")
    contexts = float(peers * qps_per_peer)
    first = setup_software_s + CM_HANDSHAKE_ROUND_TRIPS * rtt_s + rtt_s / 2 + message_bytes / rate_bytes_per_s
    return ConnectionCost(contexts * qp_state_bytes, contexts, first)


def ephemeral_connections(
    active_peers: int,
    *,
    pdc_state_bytes: float,
    rtt_s: float,
    message_bytes: float,
    rate_bytes_per_s: float,
) -> ConnectionCost:
    """UET ephemeral PDCs for ``active_peers`` concurrent messages (module docstring formulas).

    Raises
    ------
    ConfigError
        A negative or non-finite value, or a rate <= 0.
    """
    _check(
        pdc_state_bytes=pdc_state_bytes, rtt_s=rtt_s, message_bytes=message_bytes, active_peers=active_peers
    )
    if not rate_bytes_per_s > 0:
        raise ConfigError(f"rate_bytes_per_s must be > 0, got {rate_bytes_per_s!r}")
    contexts = float(active_peers)
    return ConnectionCost(contexts * pdc_state_bytes, contexts, rtt_s / 2 + message_bytes / rate_bytes_per_s)
