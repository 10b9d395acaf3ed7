"""The port rates ``ibstat`` and ``ibstatus`` print, read from the text around a topology.

People paste ``ibstat`` (or ``ibstatus``) next to ``nvidia-smi topo -m`` when they ask about a node; the NIC
speed the matrix leaves out is then in the paste. Both tools are infiniband-diags (linux-rdma/rdma-core):

* ``ibstat`` prints a block per device, ``CA 'mlx5_5'``, then per port ``Port 1:``, ``State: Active`` and
  ``Rate: 400``: the port's rate in Gb/s (the width times the lane speed the port trained at);
* ``ibstatus`` prints ``Infiniband device 'mlx5_0' port 1 status:``, then ``state: 4: ACTIVE`` and
  ``rate: 100 Gb/sec (4X EDR)``.

A port that is not active prints the rate of its last state (``State: Down``, ``Rate: 10``), so only active
ports tell the speed.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

__all__ = ["PortRate", "nic_port_rate", "port_rates_in_text"]

_IBSTAT_CA = re.compile(r"^\s*CA '([\w.:-]{1,64})'\s*$")
_IBSTAT_PORT = re.compile(r"^\s*Port (\d{1,3}):\s*$")
_IBSTATUS_PORT = re.compile(r"^\s*Infiniband device '([\w.:-]{1,64})' port (\d{1,3}) status:\s*$")
_STATE = re.compile(r"^\s*(?:State:\s*(\w+)|state:\s*\d+:\s*(\w+))\s*$")
_RATE = re.compile(r"^\s*(?:Rate:\s*(\d{1,4}(?:\.\d{1,3})?)|rate:\s*(\d{1,4}(?:\.\d{1,3})?) Gb/sec\b.*)\s*$")


@dataclass(frozen=True)
class PortRate:
    """One port's rate as printed: device, port, whether it is active, Gb/s and the 1-based line."""

    device: str
    port: int
    active: bool
    gbps: float
    line: int


def port_rates_in_text(text: str) -> tuple[PortRate, ...]:
    """Every port rate ``ibstat`` or ``ibstatus`` printed in ``text``, in order (module docstring).

    >>> text = "CA 'mlx5_0'\\n  Port 1:\\n    State: Active\\n    Rate: 400\\n"
    >>> [(p.device, p.port, p.active, p.gbps, p.line) for p in port_rates_in_text(text)]
    [('mlx5_0', 1, True, 400.0, 4)]
    """
    found: list[PortRate] = []
    device: str | None = None
    port: int | None = None
    state: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        if m := _IBSTAT_CA.match(line):
            device, port, state = m.group(1), None, None
        elif m := _IBSTAT_PORT.match(line):
            port, state = int(m.group(1)), None
        elif m := _IBSTATUS_PORT.match(line):
            device, port, state = m.group(1), int(m.group(2)), None
        elif m := _STATE.match(line):
            state = m.group(1) or m.group(2)
        elif (m := _RATE.match(line)) and device is not None and port is not None:
            active = (state or "").upper() == "ACTIVE"
            found.append(PortRate(device, port, active, float(m.group(1) or m.group(2)), number))
    return tuple(found)


def nic_port_rate(rates: tuple[PortRate, ...], names: Collection[str]) -> tuple[float, tuple[PortRate, ...]]:
    """The rate (Gb/s) the node's NICs run at, and the ports that say it: the active ports of the devices
    ``names`` (the GPUs' NICs) when they all print one rate; when no port is of those devices, every active
    port when they all print one rate; ``(0.0, ())`` when the ports disagree or none is active. Where the
    GPUs' NICs' ports are printed but down, another device's active port (a front-end NIC) says nothing of
    them: ``(0.0, ())``, and the caller assumes a speed and says so.

    >>> ports = port_rates_in_text("CA 'mlx5_0'\\nPort 1:\\nState: Active\\nRate: 200\\n"
    ...                            "CA 'mlx5_1'\\nPort 1:\\nState: Active\\nRate: 25\\n")
    >>> nic_port_rate(ports, {"mlx5_0"})[0], nic_port_rate(ports, {"mlx5_7"})[0]
    (200.0, 0.0)
    >>> down = port_rates_in_text("CA 'mlx5_0'\\nPort 1:\\nState: Down\\nRate: 10\\n"
    ...                           "CA 'mlx5_2'\\nPort 1:\\nState: Active\\nRate: 25\\n")
    >>> nic_port_rate(down, {"mlx5_0"})[0], nic_port_rate(down, {"mlx5_7"})[0]
    (0.0, 25.0)
    """
    active = tuple(p for p in rates if p.active)
    if any(p.device in names for p in rates):  # their ports are printed: only they count, down or not
        active = tuple(p for p in active if p.device in names)
    speeds = {p.gbps for p in active}
    return (speeds.pop(), active) if len(speeds) == 1 else (0.0, ())
