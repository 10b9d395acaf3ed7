"""htsim's fat-tree ``.topo`` file: the scale-out Clos of one plane, tier by tier.

Format (ultraethernet/uet-htsim@40ccb05 ``htsim/sim/datacenter/topologies/*.topo``, read by
``FatTreeTopologyCfg`` in ``datacenter/fat_tree_topology.cpp``)::

    Nodes <hosts>
    Tiers <2 or 3>
    Podsize <hosts per pod>

    Tier 0                      # the leaves (ToRs)
    Downlink_speed_Gbps <host link, per direction>
    Radix_Down <hosts per leaf>
    Radix_Up <uplinks per leaf>
    Downlink_Latency_ns <ns>
    Switch_Latency_ns <ns>

    Tier 1                      # the spines (aggregation)
    Downlink_speed_Gbps ...
    Radix_Down <leaf-facing ports used per spine>
    [Radix_Up <core-facing ports per spine>]  ...

Counts implied: leaves = Nodes / Radix_Down(0); spines = leaves x Radix_Up(0) / Radix_Down(1); cores (3 tiers)
= spines x Radix_Up(1) / Radix_Down(2); cables = Nodes + leaves x Radix_Up(0) [+ spines x Radix_Up(1)]. A
host is one GPU with its NIC (a NIC that ``gpus_per_nic`` GPUs share: that many hosts, each with its share
of the line rate, htsim giving every host its own downlink); in a rail-optimised cluster the hosts of leaf
k are GPUs of one rail, numbered by :func:`host_order`. htsim has no scale-up network and no planes: the
scale-out of one plane is exported.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aifabric.budget import check_memory
from aifabric.cluster.topology import Topology
from aifabric.collectives.plan import CommPlan
from aifabric.errors import ConfigError, ParseError
from aifabric.interop.graph import GraphCounts

__all__ = [
    "FLOW_BYTES",
    "host_order",
    "read_connection_matrix",
    "read_htsim",
    "write_connection_matrix",
    "write_htsim",
]

#: Peak Python memory per flow while :func:`write_connection_matrix` builds a ``.cm`` (the flow's fields,
#: its line, the joined text), bytes: 474 B for an all_to_all and 838 B for an all_reduce (ring, with its
#: triggers) over 256 GPUs of dgx-h100-superpod, measured with tracemalloc; rounded up.
FLOW_BYTES = 850


def host_order(topo: Topology) -> np.ndarray:
    """GPU id of each htsim host: sorted by leaf, so hosts ``k x Radix_Down ...`` share leaf ``k``."""
    return np.argsort(topo.leaf_of_gpu, kind="stable")


def write_htsim(topo: Topology, path: str | Path) -> Path:
    """Write the scale-out of ``topo`` as an htsim ``.topo``.

    Raises
    ------
    ConfigError
        Without a scale-out Clos, with more than one plane, or with one tier (htsim reads 2 or 3).
    """
    s = topo.shape
    name = topo.spec.name
    if s is None:
        raise ConfigError(f"--format htsim: {name} has no scale-out Clos to export")
    if topo.planes != 1:
        raise ConfigError(f"--format htsim: {name} has {topo.planes} planes; htsim's fat tree has one")
    if s.tiers not in (2, 3):
        raise ConfigError(f"--format htsim: {name} has {s.tiers} tier(s); htsim reads 2 or 3")
    cap, lat = topo.link_capacity_bytes_per_s, topo.link_latency_s
    nic = int(topo.nic_up[0, 0])
    up = int(topo.leaf_uplinks[0].ravel()[0])
    leaf_up_used = s.n_leaves * s.leaf_up
    per_host = topo.spec.scale_out.nic_links_per_plane if topo.spec.scale_out else 1  # a GPU's NIC ports
    hosts_per_leaf = s.leaf_down // per_host * topo.gpus_per_nic  # a host per GPU, its share of a shared NIC
    lines = [f"Nodes {topo.n_gpus}", f"Tiers {s.tiers}", f"Podsize {s.leaves_per_pod * hosts_per_leaf}", ""]
    lines += _tier(0, topo.gpu_nic_bytes_per_s(), hosts_per_leaf, s.leaf_up, lat[nic])
    spine_up = s.spine_up if s.tiers == 3 else None
    lines += _tier(1, cap[up], leaf_up_used // s.n_spines, spine_up, lat[up])
    if s.tiers == 3:
        core = int(topo.spine_uplinks[0].ravel()[0])
        lines += _tier(2, cap[core], s.n_spines * s.spine_up // s.n_cores, None, lat[core])
    p = Path(path)
    p.write_text("\n".join(lines))
    return p


def _tier(k: int, bytes_per_s: float, down: int, up: int | None, latency_s: float) -> list[str]:
    out = [f"Tier {k}", f"Downlink_speed_Gbps {bytes_per_s * 8 / 1e9:g}", f"Radix_Down {down}"]
    if up is not None:
        out.append(f"Radix_Up {up}")
    out += [f"Downlink_Latency_ns {latency_s * 1e9:g}", "Switch_Latency_ns 0", ""]
    return out


def read_htsim(path: str | Path) -> GraphCounts:
    """Counts of an htsim ``.topo`` (hosts, switches, cables). Raises ParseError naming the field."""
    p = Path(path)
    head: dict[str, float] = {}
    tiers: list[dict[str, float]] = []
    for lineno, raw in enumerate(p.read_text().splitlines(), 1):
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise ParseError(f"{p}: line {lineno}: expected '<Key> <value>', got {raw.strip()!r}")
        key, value = parts
        try:
            number = float(value)
        except ValueError as err:
            raise ParseError(f"{p}: line {lineno}: {key}: {value!r} is not a number") from err
        if key == "Tier":
            tiers.append({})
        elif tiers:
            tiers[-1][key] = number
        else:
            head[key] = number
    try:
        hosts, n_tiers = int(head["Nodes"]), int(head["Tiers"])
        if len(tiers) != n_tiers:
            raise ParseError(f"{p}: Tiers {n_tiers} but {len(tiers)} Tier blocks")
        leaves = hosts // int(tiers[0]["Radix_Down"])
        spines = leaves * int(tiers[0]["Radix_Up"]) // int(tiers[1]["Radix_Down"])
        switches, links = leaves + spines, hosts + leaves * int(tiers[0]["Radix_Up"])
        if n_tiers == 3:
            switches += spines * int(tiers[1]["Radix_Up"]) // int(tiers[2]["Radix_Down"])
            links += spines * int(tiers[1]["Radix_Up"])
    except KeyError as err:
        raise ParseError(f"{p}: field {err.args[0]} is missing") from err
    return GraphCounts(hosts, switches, links)


def write_connection_matrix(plan: CommPlan, topo: Topology, path: str | Path) -> Path:
    """Write a collective's scale-out flows as an htsim connection matrix (``.cm``), chained by triggers.

    Format (ultraethernet/uet-htsim@40ccb05 ``connection_matrices/gen_*.py``, read by
    ``ConnectionMatrix::load``)::

        Nodes <hosts>
        Connections <flows>
        Triggers <triggers>
        <src>-><dst> id <flow> start 0 size <bytes> [send_done_trigger <t>]
        <src>-><dst> id <flow> trigger <t> size <bytes> [send_done_trigger <t'>]
        trigger id <t> oneshot

    Hosts are numbered by :func:`host_order`. Every stage of ``plan`` is expanded into its ``repeat`` steps;
    a host's flow of step j starts when its last flow of the step before has been sent (``send_done``), the
    way htsim's own ring generators chain their steps. Transfers inside a node (NVLink) are left out:
    htsim has no scale-up network.

    The flows are counted first (the plan's scale-out transfers x their stage's ``repeat``) and a matrix
    of more than the memory limit (flows x :data:`FLOW_BYTES`, :func:`aifabric.budget.check_memory`) is
    refused before any is built.

    Raises
    ------
    ConfigError
        If the matrix would need more memory than the limit (the figure and ``--max-memory`` named).
    ValueError
        If no transfer of the plan crosses the scale-out network.
    """
    node = topo.spec.gpus_per_node
    n_flows = sum(
        int(((st.src // node != st.dst // node) & (st.bytes_ > 0)).sum()) * st.repeat for st in plan.stages
    )
    check_memory(
        f"the htsim connection matrix of {plan.op} ({n_flows:,} flows over {topo.n_gpus:,} GPUs)",
        n_flows * FLOW_BYTES,
        "--nodes",
    )
    host = np.empty(topo.n_gpus, dtype=np.int64)
    host[host_order(topo)] = np.arange(topo.n_gpus)
    last_flow: dict[int, int] = {}  # host -> its latest flow
    flows: list[list[str]] = []
    for stage in plan.stages:
        inter = (stage.src // node != stage.dst // node) & (stage.bytes_ > 0)
        src, dst, size = host[stage.src[inter]], host[stage.dst[inter]], stage.bytes_[inter]
        for _ in range(stage.repeat):
            previous = dict(last_flow)
            for s, d, b in zip(src.tolist(), dst.tolist(), size.tolist(), strict=True):
                flows.append([f"{s}->{d}", f"id {len(flows) + 1}", "", f"size {round(b)}", ""])
                if s in previous:
                    flows[-1][2] = f"trigger {previous[s]}"  # the trigger id is its predecessor's flow id
                    flows[previous[s] - 1][4] = f"send_done_trigger {previous[s]}"
                else:
                    flows[-1][2] = "start 0"
                last_flow[s] = len(flows)
    if not flows:
        raise ValueError(f"--collective: {plan.op} on these ranks sends nothing over the scale-out network")
    triggers = sorted({int(f[4].split()[1]) for f in flows if f[4]})
    lines = [f"Nodes {topo.n_gpus}", f"Connections {len(flows)}", f"Triggers {len(triggers)}"]
    lines += [" ".join(part for part in f if part) for f in flows]
    lines += [f"trigger id {t} oneshot" for t in triggers]
    p = Path(path)
    p.write_text("\n".join(lines) + "\n")
    return p


def read_connection_matrix(path: str | Path) -> tuple[int, list[tuple[int, int, int]], dict[int, int]]:
    """Read a ``.cm``: (hosts, flows as (src, dst, bytes), {flow id: trigger it waits for}).

    Raises ParseError naming the line for a malformed flow or a trigger that no flow fires.
    """
    p = Path(path)
    hosts, flows, waits, fired, declared = 0, [], {}, set(), set()
    for lineno, raw in enumerate(p.read_text().splitlines(), 1):
        parts = raw.split()
        if not parts or parts[0] in ("Connections", "Triggers"):
            continue
        if parts[0] == "Nodes":
            hosts = int(parts[1])
        elif parts[0] == "trigger":
            declared.add(int(parts[2]))
        elif "->" in parts[0]:
            kv = dict(zip(parts[1::2], parts[2::2], strict=False))
            try:
                s, d = (int(x) for x in parts[0].split("->"))
                flows.append((s, d, int(kv["size"])))
                if "trigger" in kv:
                    waits[int(kv["id"])] = int(kv["trigger"])
                if "send_done_trigger" in kv:
                    fired.add(int(kv["send_done_trigger"]))
            except (KeyError, ValueError) as err:
                raise ParseError(f"{p}: line {lineno}: malformed flow {raw.strip()!r}") from err
        else:
            raise ParseError(f"{p}: line {lineno}: unknown line {raw.strip()!r}")
    orphan = (set(waits.values()) | declared) - fired
    if orphan:
        raise ParseError(f"{p}: trigger {min(orphan)} is never fired by a flow")
    return hosts, flows, waits
