"""ASTRA-sim's ns-3 topology file, and SimAI's variant of it: every device and cable of the cluster.

ASTRA-sim ns-3 backend (astra-sim/astra-network-ns3, after HPCC's ``simulation/mix`` generators, e.g.
astra-sim/deprecated-astra-network-ns3 ``simulation/mix/fbtopo1.py``)::

    <nodes> <switch nodes> <links>
    <switch id> <switch id> ...
    <src> <dst> <rate, e.g. 400Gbps> <delay, e.g. 0.0005ms> <error rate>

Nodes are numbered from 0: end points (GPUs) first, then switches. SimAI (aliyun/SimAI@071ec08
``astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py``) extends the first line to
``<nodes> <gpus per server> <nvswitches> <other switches> <links> <gpu type>`` and lists the NVSwitches
first on the switch line. Rates are per direction (Gb/s = 1e9 bit/s), delays one-way.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from aifabric.errors import ParseError
from aifabric.interop.graph import Cables, GraphCounts

__all__ = ["read_ns3", "read_simai", "write_ns3", "write_simai"]


def _link_lines(c: Cables) -> list[str]:
    return [
        f"{s} {d} {r * 8 / 1e9:g}Gbps {lat * 1e3:g}ms 0"
        for s, d, r, lat in zip(
            c.src.tolist(), c.dst.tolist(), c.bytes_per_s.tolist(), c.latency_s.tolist(), strict=True
        )
    ]


def _switch_ids(c: Cables) -> list[int]:
    return sorted((set(c.src.tolist()) | set(c.dst.tolist())) - set(range(c.n_gpus)))


def write_ns3(c: Cables, path: str | Path) -> Path:
    """Write ``c`` in ASTRA-sim's ns-3 topology format."""
    switches = _switch_ids(c)
    lines = [
        f"{c.n_gpus + len(switches)} {len(switches)} {c.src.size}",
        " ".join(map(str, switches)),
        *_link_lines(c),
    ]
    p = Path(path)
    p.write_text("\n".join(lines) + "\n")
    return p


def write_simai(c: Cables, path: str | Path, *, gpus_per_server: int, gpu_type: str) -> Path:
    """Write ``c`` in SimAI's topology format (NVSwitches = switches reached by tier-0 cables)."""
    switches = _switch_ids(c)
    nv = set(c.dst[c.tier == 0].tolist()) | set(c.src[c.tier == 0].tolist())
    nv_ids = [s for s in switches if s in nv]
    other = [s for s in switches if s not in nv]
    head = f"{c.n_gpus + len(switches)} {gpus_per_server} {len(nv_ids)} {len(other)} {c.src.size} {gpu_type}"
    lines = [head, " ".join(map(str, nv_ids + other)), *_link_lines(c)]
    p = Path(path)
    p.write_text("\n".join(lines) + "\n")
    return p


def _ints(line: str, n: int | None, path: Path, lineno: int, what: str) -> list[int]:
    try:
        vals = [int(x) for x in line.split()]
    except ValueError as err:
        raise ParseError(f"{path}: line {lineno}: {what}: expected integers, got {line.strip()!r}") from err
    if n is not None and len(vals) != n:
        raise ParseError(f"{path}: line {lineno}: {what}: expected {n} values, got {len(vals)}")
    return vals


def _read_links(lines: list[str], start: int, n_links: int, n_nodes: int, path: Path) -> np.ndarray:
    body = [ln for ln in lines[start:] if ln.strip()]
    if len(body) != n_links:
        raise ParseError(f"{path}: header says {n_links} links, the file lists {len(body)}")
    ends = np.array([[int(t) for t in ln.split()[:2]] for ln in body], dtype=np.int64).reshape(-1, 2)
    if ends.size and (ends.min() < 0 or ends.max() >= n_nodes):
        raise ParseError(f"{path}: a link names a node outside 0..{n_nodes - 1}")
    return ends


def read_ns3(path: str | Path) -> GraphCounts:
    """Counts of an ns-3 topology file. Raises ParseError naming the line."""
    p = Path(path)
    lines = p.read_text().splitlines()
    n_nodes, n_switches, n_links = _ints(lines[0], 3, p, 1, "header <nodes> <switches> <links>")
    switches = _ints(lines[1], n_switches, p, 2, "switch ids")
    _read_links(lines, 2, n_links, n_nodes, p)
    return GraphCounts(n_nodes - len(switches), len(switches), n_links)


def read_simai(path: str | Path) -> GraphCounts:
    """Counts of a SimAI topology file. Raises ParseError naming the line."""
    p = Path(path)
    lines = p.read_text().splitlines()
    head = lines[0].split()
    if len(head) < 6:
        raise ParseError(
            f"{p}: line 1: expected <nodes> <gpus/server> <nvswitches> <switches> <links> <gpu type>"
        )
    n_nodes, _, n_nv, n_sw, n_links = _ints(" ".join(head[:5]), 5, p, 1, "header")
    _ints(lines[1], n_nv + n_sw, p, 2, "switch ids")
    _read_links(lines, 2, n_links, n_nodes, p)
    return GraphCounts(n_nodes - n_nv - n_sw, n_nv + n_sw, n_links)
