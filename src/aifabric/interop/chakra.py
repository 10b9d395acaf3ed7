"""Chakra execution traces (ASTRA-sim's workload format): write a collective or a training step, read one
back.

Format (MLCommons Chakra, mlcommons/chakra@6dc63e1:schema/protobuf/et_def.proto, package ``ChakraProtoMsg``;
reference/reports-sweeps-interop.md sec. 4.1):

- one file per rank, ``<prefix>.<rank>.et``;
- a ``GlobalMetadata`` message (``1 version: string, 2 attr: repeated AttributeProto``), then ``Node``
  messages, each preceded by its length as a varint (Chakra's src/third_party/utils/protolib.py,
  ``encodeMessage`` / ``decodeMessage``);
- ``Node``: ``1 id: uint64, 2 name: string, 3 type: NodeType, 4 ctrl_deps: repeated uint64, 5 data_deps:
  repeated uint64, 6 start_time_micros: uint64, 7 duration_micros: uint64, 8 inputs, 9 outputs: IOInfo
  (1 values, 2 shapes, 3 types: string), 10 attr: repeated AttributeProto``;
- ``AttributeProto``: ``1 name, 2 doc_string``, then a oneof ``value``; of it, the scalars used here and by
  ASTRA-sim: ``3 double_val, 5 float_val, 7 int32_val, 9 int64_val, 11 uint32_val, 13 uint64_val,
  27 bool_val, 29 string_val, 31 bytes_val`` (a list value in a foreign trace is kept as an unknown field);
- ``NodeType``: INVALID 0, METADATA 1, MEM_LOAD 2, MEM_STORE 3, COMP 4, COMM_SEND 5, COMM_RECV 6,
  COMM_COLL 7, STORAGE 8, BATCH 9, CHECKPOINT 10 (all ``*_NODE``); ``CollectiveCommType``: ALL_REDUCE 0,
  REDUCE 1, ALL_GATHER 2, GATHER 3, SCATTER 4, BROADCAST 5, ALL_TO_ALL 6, REDUCE_SCATTER 7,
  REDUCE_SCATTER_BLOCK 8, BARRIER 9.

Attributes written, those ASTRA-sim's feeder reads (astra-sim src/feeder/et_feeder_node.cpp): ``is_cpu_op``
(bool), ``comm_type`` (int64, a CollectiveCommType), ``comm_size`` (int64 bytes, nccl-tests size
convention), ``comm_src`` / ``comm_dst`` / ``comm_tag`` (int64, send and receive), ``pg_name`` (string: the
parallel dimension, tp, dp ...), ``num_ops`` (int64 FLOPs of a compute node); and two of ours that other
readers ignore: ``comm_group_size`` (int64 ranks in the group) and ``comm_group_stride`` (int64: the group's
ranks are ``stride`` apart, as the parallel layout places them; a DP group of 2 under TP 8 is ranks 0 and 8).

The message classes are built at import from descriptors written in code with Chakra's field numbers (no
generated code, no dependency on the ``chakra`` package), with the ``protobuf`` runtime, in a private
descriptor pool.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from aifabric.collectives.ops import Collective
from aifabric.errors import ConfigError, ParseError
from aifabric.training.layout import ParallelLayout

if TYPE_CHECKING:
    from aifabric.training.step import StepTime

__all__ = [
    "COLL_TYPES",
    "NODE_TYPES",
    "SCHEMA_VERSION",
    "ChakraTrace",
    "EtNode",
    "Workload",
    "WorkloadCall",
    "collective_nodes",
    "comm_op",
    "export_ranks",
    "group_stride",
    "read_et",
    "step_nodes",
    "sweep_nodes",
    "write_et",
    "workload",
]

#: The GlobalMetadata version written (reference/reports-sweeps-interop.md sec. 4.1).
SCHEMA_VERSION = "1.0.0"

#: NodeType names (without ``_NODE``) -> numbers (et_def.proto).
NODE_TYPES: dict[str, int] = {
    "INVALID": 0,
    "METADATA": 1,
    "MEM_LOAD": 2,
    "MEM_STORE": 3,
    "COMP": 4,
    "COMM_SEND": 5,
    "COMM_RECV": 6,
    "COMM_COLL": 7,
    "STORAGE": 8,
    "BATCH": 9,
    "CHECKPOINT": 10,
}
_NODE_NAMES = {v: k for k, v in NODE_TYPES.items()}

#: Our collectives -> CollectiveCommType numbers (et_def.proto); send_recv is a COMM_SEND/COMM_RECV pair.
COLL_TYPES: dict[str, int] = {
    Collective.ALL_REDUCE.value: 0,
    Collective.REDUCE.value: 1,
    Collective.ALL_GATHER.value: 2,
    Collective.BROADCAST.value: 5,
    Collective.ALL_TO_ALL.value: 6,
    Collective.REDUCE_SCATTER.value: 7,
}
_COLL_NAMES = {v: k for k, v in COLL_TYPES.items()}

#: Largest ``.et`` file read (read whole into memory; a rank's trace of MAX_NODES nodes is ~150 MB).
MAX_FILE_BYTES = 1 << 30

#: Most nodes one rank's trace may hold (refused beyond: a step with more calls is a modelling mistake).
MAX_NODES = 1_000_000

_F = descriptor_pb2.FieldDescriptorProto
#: AttributeProto's oneof scalars: field name -> (number, protobuf type).
_ATTR_SCALARS: dict[str, tuple[int, int]] = {
    "double_val": (3, _F.TYPE_DOUBLE),
    "float_val": (5, _F.TYPE_FLOAT),
    "int32_val": (7, _F.TYPE_INT32),
    "int64_val": (9, _F.TYPE_INT64),
    "uint32_val": (11, _F.TYPE_UINT32),
    "uint64_val": (13, _F.TYPE_UINT64),
    "bool_val": (27, _F.TYPE_BOOL),
    "string_val": (29, _F.TYPE_STRING),
    "bytes_val": (31, _F.TYPE_BYTES),
}


def _message(
    f: descriptor_pb2.FileDescriptorProto, name: str, fields: Sequence[tuple[str, int, int, int, str]]
) -> descriptor_pb2.DescriptorProto:
    """Add message ``name`` with ``(field, number, type, label, type_name)`` fields to ``f``."""
    m = f.message_type.add(name=name)
    for fname, number, ftype, label, type_name in fields:
        fd = m.field.add(name=fname, number=number, type=ftype, label=label)
        if type_name:
            fd.type_name = type_name
    return m


def _schema() -> descriptor_pb2.FileDescriptorProto:
    """The subset of et_def.proto used here, field numbers as Chakra's (see the module docstring)."""
    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    f = descriptor_pb2.FileDescriptorProto(name="aifabric/chakra_et_def.proto", package="ChakraProtoMsg")
    f.syntax = "proto3"
    node_type = f.enum_type.add(name="NodeType")
    for name, number in NODE_TYPES.items():
        node_type.value.add(name=f"{name}_NODE", number=number)
    attr = _message(
        f,
        "AttributeProto",
        [("name", 1, _F.TYPE_STRING, opt, ""), ("doc_string", 2, _F.TYPE_STRING, opt, "")]
        + [(k, n, t, opt, "") for k, (n, t) in _ATTR_SCALARS.items()],
    )
    attr.oneof_decl.add(name="value")
    for fd in attr.field[2:]:
        fd.oneof_index = 0
    _message(
        f,
        "GlobalMetadata",
        [
            ("version", 1, _F.TYPE_STRING, opt, ""),
            ("attr", 2, _F.TYPE_MESSAGE, rep, ".ChakraProtoMsg.AttributeProto"),
        ],
    )
    _message(
        f, "IOInfo", [(k, n, _F.TYPE_STRING, opt, "") for n, k in enumerate(("values", "shapes", "types"), 1)]
    )
    _message(
        f,
        "Node",
        [
            ("id", 1, _F.TYPE_UINT64, opt, ""),
            ("name", 2, _F.TYPE_STRING, opt, ""),
            ("type", 3, _F.TYPE_ENUM, opt, ".ChakraProtoMsg.NodeType"),
            ("ctrl_deps", 4, _F.TYPE_UINT64, rep, ""),
            ("data_deps", 5, _F.TYPE_UINT64, rep, ""),
            ("start_time_micros", 6, _F.TYPE_UINT64, opt, ""),
            ("duration_micros", 7, _F.TYPE_UINT64, opt, ""),
            ("inputs", 8, _F.TYPE_MESSAGE, opt, ".ChakraProtoMsg.IOInfo"),
            ("outputs", 9, _F.TYPE_MESSAGE, opt, ".ChakraProtoMsg.IOInfo"),
            ("attr", 10, _F.TYPE_MESSAGE, rep, ".ChakraProtoMsg.AttributeProto"),
        ],
    )
    return f


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_schema())
GlobalMetadata: Any = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("ChakraProtoMsg.GlobalMetadata")
)
NodeMsg: Any = message_factory.GetMessageClass(_POOL.FindMessageTypeByName("ChakraProtoMsg.Node"))


@dataclass(frozen=True)
class EtNode:
    """One Chakra node: ``type`` is a :data:`NODE_TYPES` name; ``attrs`` maps attribute name -> value
    (bool, int, float or str); ``duration_micros`` in whole microseconds, as the schema stores it."""

    id: int
    name: str
    type: str
    duration_micros: int = 0
    data_deps: tuple[int, ...] = ()
    ctrl_deps: tuple[int, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChakraTrace:
    """One rank's trace as read back: the GlobalMetadata version, the nodes in file order and the
    GlobalMetadata attributes (ours: ``rank``, ``ranks`` the trace was written for, ``producer``)."""

    version: str
    nodes: tuple[EtNode, ...]
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ranks(self) -> int | None:
        """Ranks the trace was written for (GlobalMetadata ``ranks``), None when it does not say."""
        n = self.attrs.get("ranks")
        return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else None


# -- varint framing (protolib.py's encodeMessage / decodeMessage) --------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _frames(data: bytes, source: str) -> Iterator[bytes]:
    """The length-prefixed messages of ``data``; ParseError for a truncated length or message."""
    pos = 0
    while pos < len(data):
        size = shift = 0
        while True:
            if pos >= len(data) or shift > 63:
                raise ParseError(f"{source}: byte {pos}: truncated or invalid message length (varint)")
            byte = data[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if pos + size > len(data):
            raise ParseError(f"{source}: byte {pos}: a message of {size} bytes runs past the end of the file")
        yield data[pos : pos + size]
        pos += size


# -- attributes ----------------------------------------------------------------------------------------------


def _set_attr(msg: Any, name: str, value: Any) -> None:
    a = msg.attr.add(name=name)
    if isinstance(value, bool):
        a.bool_val = value
    elif isinstance(value, int):
        a.int64_val = value
    elif isinstance(value, float):
        a.double_val = value
    else:
        a.string_val = str(value)


def _get_attr(a: Any) -> Any:
    which = a.WhichOneof("value")
    return getattr(a, which) if which else None


# -- writing -------------------------------------------------------------------------------------------------


def _encode(node: EtNode) -> bytes:
    msg = NodeMsg(
        id=node.id,
        name=node.name,
        type=NODE_TYPES[node.type],
        duration_micros=node.duration_micros,
        data_deps=list(node.data_deps),
        ctrl_deps=list(node.ctrl_deps),
    )
    for k, v in node.attrs.items():
        _set_attr(msg, k, v)
    body = msg.SerializeToString()
    return _varint(len(body)) + body


def _header(attrs: Mapping[str, Any]) -> bytes:
    meta = GlobalMetadata(version=SCHEMA_VERSION)
    for k, v in attrs.items():
        _set_attr(meta, k, v)
    body = meta.SerializeToString()
    return _varint(len(body)) + body


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def write_et(nodes: Sequence[EtNode], path: str | Path, *, attrs: Mapping[str, Any] | None = None) -> Path:
    """Write one rank's trace: GlobalMetadata (version :data:`SCHEMA_VERSION`, ``attrs``) then ``nodes``.

    Raises
    ------
    ValueError
        More than :data:`MAX_NODES` nodes.
    OSError
        The file cannot be written.
    """
    if len(nodes) > MAX_NODES:
        raise ValueError(f"chakra: {len(nodes):,} nodes for one rank; at most {MAX_NODES:,}")
    return _write(Path(path), _header(attrs or {}) + b"".join(map(_encode, nodes)))


def _micros(seconds: float) -> int:
    return max(0, round(seconds * 1e6))


def _comm_nodes(
    first_id: int, op: str, message_bytes: float, group: int, dim: str, deps: tuple[int, ...], *, rank: int,
    peer_stride: int, seconds: float, group_stride: int | None = None
) -> list[EtNode]:  # fmt: skip
    """The node(s) of one call: a COMM_COLL node, or for send_recv a COMM_SEND and a COMM_RECV node (to
    the next and from the previous rank ``peer_stride`` away, over ``group * peer_stride`` ranks);
    ``group_stride`` (the group's rank spacing) is written as ``comm_group_stride`` when given."""
    common: dict[str, Any] = {
        "is_cpu_op": False, "comm_size": int(message_bytes), "pg_name": dim, "comm_group_size": group
    }  # fmt: skip
    if group_stride is not None:
        common["comm_group_stride"] = group_stride
    if op == Collective.SEND_RECV.value:
        span = group * peer_stride
        nxt, prv = (rank + peer_stride) % span, (rank - peer_stride) % span
        return [
            EtNode(first_id, f"{dim} send {int(message_bytes)} B", "COMM_SEND", _micros(seconds), deps,
                   attrs={**common, "comm_dst": nxt, "comm_src": rank, "comm_tag": first_id}),
            EtNode(first_id + 1, f"{dim} recv {int(message_bytes)} B", "COMM_RECV", _micros(seconds), deps,
                   attrs={**common, "comm_src": prv, "comm_dst": rank, "comm_tag": first_id}),
        ]  # fmt: skip
    if op not in COLL_TYPES:
        raise ValueError(f"chakra: {op!r} has no Chakra collective type; known: {', '.join(COLL_TYPES)}")
    return [
        EtNode(first_id, f"{dim} {op} {int(message_bytes)} B", "COMM_COLL", _micros(seconds), deps,
               attrs={**common, "comm_type": COLL_TYPES[op]})
    ]  # fmt: skip


def collective_nodes(op: str, message_bytes: float, n_ranks: int, seconds: float = 0.0) -> list[EtNode]:
    """One rank's trace of one collective over ``n_ranks`` ranks (``seconds``: our modelled time, stored as
    ``duration_micros`` for reference; ASTRA-sim simulates the call itself).

    >>> [(n.type, n.attrs["comm_type"], n.attrs["comm_size"]) for n in collective_nodes("all_reduce", 1e9, 8)]
    [('COMM_COLL', 0, 1000000000)]
    """
    return _comm_nodes(0, Collective.parse(op).value, message_bytes, n_ranks, "world", (), rank=0,
                       peer_stride=1, seconds=seconds)  # fmt: skip


#: The parts of a step that are compute (one COMP node with their critical-path time).
_COMPUTE_PARTS = ("compute", "memory-bound")


def step_nodes(st: StepTime, rank: int = 0) -> list[EtNode]:
    """One rank's trace of one training step: a COMP node (the critical-path compute and memory-bound
    time; ``num_ops`` = the step's FLOPs per GPU), then every communication call of the step
    (``round(count)`` calls of each :class:`~aifabric.training.step.CommItem`, each its own node), each
    dimension's calls in a chain (``data_deps`` on the previous one), the first after the compute node.

    The step model is rank-symmetric (it models the busiest pipeline stage), so every rank gets the same
    calls; pipeline send_recv goes to the next stage and comes from the previous one, ``n_gpus / pp`` ranks
    away (pipeline outermost, Megatron's default order).

    Raises
    ------
    ValueError
        More than :data:`MAX_NODES` nodes, or a collective with no Chakra type.
    """
    compute_s = sum(st.breakdown_s[p] for p in _COMPUTE_PARTS)
    nodes = [
        EtNode(0, "compute (forward + backward)", "COMP", _micros(compute_s),
               attrs={"is_cpu_op": False, "num_ops": int(st.flops_per_iteration / st.n_gpus)})
    ]  # fmt: skip
    calls = sum(max(1, round(c.count)) for c in st.comms)
    if calls + 1 > MAX_NODES:
        raise ValueError(f"chakra: the step makes {calls:,} communication calls; at most {MAX_NODES:,} nodes")
    last: dict[str, int] = {}
    stride = max(1, st.n_gpus // max(1, st.layout.pp))
    for c in st.comms:
        for _ in range(max(1, round(c.count))):
            dep = (last.get(c.dim, 0),)
            new = _comm_nodes(len(nodes), c.op, c.message_bytes, c.n_ranks, c.dim, dep, rank=rank,
                              peer_stride=stride, seconds=c.time_s,
                              group_stride=group_stride(st.layout, c.dim, c.n_ranks))  # fmt: skip
            nodes += new
            last[c.dim] = new[-1].id
    return nodes


#: The layout's group of each step dimension that is not its own name (the dense DP group spans DP x CP).
_GROUP_OF_DIM = {"dp": "dp_cp"}


def group_stride(layout: ParallelLayout, dim: str, n_ranks: int) -> int | None:
    """Rank spacing of rank 0's ``dim`` group of ``n_ranks`` ranks in ``layout`` (GPU i runs rank i, as the
    step model places groups): ``layout.group_of``'s members when they are evenly spaced, else None (an
    exotic order, or a group the layout does not name).

    >>> group_stride(ParallelLayout(tp=8, dp=2, global_batch_size=2), "dp", 2)
    8
    """
    try:
        members = layout.group_of(_GROUP_OF_DIM.get(dim, dim), 0)
    except ConfigError:
        return None
    if len(members) != n_ranks or n_ranks < 2:
        return None
    step = members[1] - members[0]
    evenly = all(b - a == step for a, b in zip(members, members[1:], strict=False))
    return step if evenly and step > 0 else None


#: Most rank files one export writes (one file per rank; ASTRA-sim reads ``<prefix>.<rank>.et``).
MAX_RANK_FILES = 16_384


#: Most nodes one export writes over all its rank files (about 120 bytes each: ~1.2 GB).
MAX_TOTAL_NODES = 10_000_000

_P2P = ("COMM_SEND", "COMM_RECV")


def export_ranks(
    nodes: Sequence[EtNode], n_ranks: int, folder: str | Path, prefix: str = "workload"
) -> list[Path]:
    """Write the rank-symmetric trace ``nodes`` (rank 0's) as ``<folder>/<prefix>.<rank>.et`` for
    ``n_ranks`` ranks: each rank's file holds the same nodes, with its own send/recv peers (``comm_src`` /
    ``comm_dst`` shifted by the rank); GlobalMetadata attributes ``rank``, ``ranks``, ``producer``.

    Raises
    ------
    ValueError
        ``n_ranks`` outside 1 .. :data:`MAX_RANK_FILES`, more than :data:`MAX_NODES` nodes per rank, or more
        than :data:`MAX_TOTAL_NODES` over all ranks.
    OSError
        A file cannot be written.
    """
    if not 1 <= n_ranks <= MAX_RANK_FILES:
        raise ValueError(
            f"--chakra: {n_ranks:,} ranks would be {n_ranks:,} files; at most {MAX_RANK_FILES:,}"
        )
    if len(nodes) > MAX_NODES or len(nodes) * n_ranks > MAX_TOTAL_NODES:
        raise ValueError(
            f"--chakra: {len(nodes):,} nodes x {n_ranks:,} ranks is more than {MAX_TOTAL_NODES:,} nodes in "
            "all; export a smaller cluster (--nodes)"
        )
    fixed = [None if n.type in _P2P else _encode(n) for n in nodes]  # the same bytes on every rank
    out = Path(folder)
    paths = []
    for r in range(n_ranks):
        body = b"".join(
            f if f is not None else _encode(_shifted(n, r, n_ranks))
            for f, n in zip(fixed, nodes, strict=True)
        )
        head = _header({"rank": r, "ranks": n_ranks, "producer": "aifabric"})
        paths.append(_write(out / f"{prefix}.{r}.et", head + body))
    return paths


def _shifted(node: EtNode, rank: int, n_ranks: int) -> EtNode:
    attrs = dict(node.attrs)
    for key in ("comm_src", "comm_dst"):
        attrs[key] = (int(attrs[key]) + rank) % n_ranks
    return EtNode(node.id, node.name, node.type, node.duration_micros, node.data_deps, node.ctrl_deps, attrs)


def sweep_nodes(op: str, sizes_and_seconds: Sequence[tuple[float, float]], n_ranks: int) -> list[EtNode]:
    """One rank's trace of a collective at each size in turn (an nccl-tests-like sweep): each call's node
    depends on the previous one."""
    nodes: list[EtNode] = []
    name = Collective.parse(op).value
    for size, seconds in sizes_and_seconds:
        deps = (nodes[-1].id,) if nodes else ()
        nodes += _comm_nodes(len(nodes), name, size, n_ranks, "world", deps, rank=0, peer_stride=1,
                             seconds=seconds)  # fmt: skip
    return nodes


# -- reading -------------------------------------------------------------------------------------------------


def read_et(path: str | Path) -> ChakraTrace:
    """Read one rank's ``.et`` file (ours or any Chakra trace: unknown fields are skipped).

    Raises
    ------
    ParseError
        An empty, truncated or too large file (:data:`MAX_FILE_BYTES`), a message that is not a Chakra
        GlobalMetadata / Node, or a ``comm_group_size`` / ``comm_group_stride`` below 1.
    """
    p = Path(path)
    if p.is_file() and p.stat().st_size > MAX_FILE_BYTES:
        raise ParseError(f"{p}: {p.stat().st_size:,} bytes; at most {MAX_FILE_BYTES:,} for one rank's trace")
    data = p.read_bytes()
    frames = _frames(data, str(p))
    try:
        meta = GlobalMetadata.FromString(next(frames))
    except StopIteration:
        raise ParseError(f"{p}: empty file, not a Chakra execution trace") from None
    except DecodeError as err:
        raise ParseError(f"{p}: the first message is not a Chakra GlobalMetadata: {err}") from None
    nodes = []
    for k, frame in enumerate(frames, 1):
        try:
            m = NodeMsg.FromString(frame)
        except DecodeError as err:
            raise ParseError(f"{p}: message {k} is not a Chakra Node: {err}") from None
        nodes.append(
            EtNode(
                id=m.id,
                name=m.name,
                type=_NODE_NAMES.get(m.type, f"UNKNOWN_{m.type}"),
                duration_micros=m.duration_micros,
                data_deps=tuple(m.data_deps),
                ctrl_deps=tuple(m.ctrl_deps),
                attrs={a.name: _get_attr(a) for a in m.attr},
            )
        )
        _check_group(p, nodes[-1])
        if len(nodes) > MAX_NODES:
            raise ParseError(f"{p}: more than {MAX_NODES:,} nodes")
    return ChakraTrace(meta.version, tuple(nodes), {a.name: _get_attr(a) for a in meta.attr})


#: Our two group fields: how many ranks a call's group holds, and how far apart they are; both whole, >= 1.
_GROUP_FIELDS = ("comm_group_size", "comm_group_stride")


def _check_group(source: Path, node: EtNode) -> None:
    """ParseError naming the file, the node and the field when a group's size or spacing is below 1 or no
    whole number (a stride of 0 would put every rank of the group on one GPU)."""
    for name in _GROUP_FIELDS:
        v = node.attrs.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise ParseError(f"{source}: node {node.id}: {name} = {v!r}; must be a whole number >= 1")


def comm_op(node: EtNode) -> str | None:
    """Our collective name of a communication node (``send_recv`` for COMM_SEND / COMM_RECV), else None."""
    if node.type in ("COMM_SEND", "COMM_RECV"):
        return Collective.SEND_RECV.value
    if node.type == "COMM_COLL":
        return _COLL_NAMES.get(int(node.attrs.get("comm_type", -1)))
    return None


@dataclass(frozen=True)
class WorkloadCall:
    """Calls of one kind in a trace: the collective, its size (bytes), the group, how many; ``group_stride``
    the spacing of the group's ranks (``comm_group_stride``), None when the trace does not say."""

    op: str
    message_bytes: float
    group: str
    group_size: int | None
    count: int
    group_stride: int | None = None


@dataclass(frozen=True)
class Workload:
    """What a trace asks of a machine: compute seconds (the COMP nodes' durations) and the calls."""

    nodes: int
    compute_s: float
    calls: tuple[WorkloadCall, ...]
    skipped: int


def workload(trace: ChakraTrace) -> Workload:
    """Group a trace's communication nodes by (collective, size, group); a send/recv pair counts once (its
    COMM_SEND node). Nodes that are neither compute nor a known communication are counted in ``skipped``.

    >>> w = workload(ChakraTrace(SCHEMA_VERSION, tuple(collective_nodes("all_gather", 1e6, 4) * 3)))
    >>> [(c.op, c.message_bytes, c.group_size, c.count) for c in w.calls]
    [('all_gather', 1000000.0, 4, 3)]
    """
    compute = 0.0
    counts: dict[tuple[str, float, str, int | None, int | None], int] = {}
    skipped = 0
    for n in trace.nodes:
        op = comm_op(n)
        if n.type == "COMP":
            compute += n.duration_micros * 1e-6
        elif op is not None and n.type != "COMM_RECV":
            size = n.attrs.get("comm_size")
            group, stride = n.attrs.get("comm_group_size"), n.attrs.get("comm_group_stride")
            key = (op, float(size or 0), str(n.attrs.get("pg_name", "")), int(group) if group else None,
                   int(stride) if stride else None)  # fmt: skip
            counts[key] = counts.get(key, 0) + 1
        elif op is None and n.type != "COMM_RECV":
            skipped += 1
    calls = tuple(WorkloadCall(*k[:4], count=v, group_stride=k[4]) for k, v in counts.items())
    return Workload(len(trace.nodes), compute, calls, skipped)
