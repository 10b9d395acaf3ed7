"""Transports as data, the NCCL environment that steers them, and which one a connection uses.

``data/transports.yaml`` holds each way NCCL moves bytes between two GPUs -- InfiniBand verbs, RoCEv2, AWS
EFA (SRD through aws-ofi-nccl), GCP GPUDirect-TCPX/TCPXO and gIB, plain TCP sockets, and inside a node P2P
over NVLink or PCIe, P2P through the CPU and SHM through host memory -- with its latency, per-stream and
aggregate efficiency, GPUDirect RDMA requirement and source; HPE Slingshot's libfabric cxi provider
(through aws-ofi-nccl) also with its rendezvous (:class:`Rendezvous`).

:class:`NcclEnv` expresses the ``NCCL_*`` variables that change the choice (parsed from a mapping such as
``os.environ``, each value validated with a one-line error), and :func:`resolve_transport` says which
transport a connection uses from the environment and the topology facts, as NCCL's ``src/graph/paths.cc``
and ``src/transport.cc`` decide it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from functools import cache, lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from aifabric.catalog.nccl import Algorithm, Collective, NcclRelease, Protocol, version_tuple
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml
from aifabric.units import parse_latency, parse_time

__all__ = [
    "NcclEnv",
    "PathType",
    "Rendezvous",
    "TransportChoice",
    "TransportSpec",
    "gdr_distance",
    "gdr_enabled",
    "nccl_algorithms",
    "nccl_names",
    "nccl_enabled",
    "nccl_integer",
    "nccl_protocols",
    "net_ll128_allowed",
    "nic_path_class",
    "resolve_transport",
    "transport",
    "transport_names",
]


class PathType(IntEnum):
    """NCCL's path types between two devices, closest first (``src/include/graph.h``; ``topo.cc`` names)."""

    LOC = 0
    NVL = 1
    NVB = 2
    C2C = 3
    PIX = 4
    PXB = 5
    P2C = 6
    PXN = 7
    PHB = 8
    SYS = 9
    NET = 10
    DIS = 11

    @classmethod
    def parse(cls, value: str | int, field: str) -> PathType:
        """A path type by name (``"PXB"``, any of LOC .. SYS as NCCL's ``ncclGetLevel`` compares them) or
        NCCL's old integer levels, 0 to 5 (``src/graph/paths.cc`` ``levelsOldToNew``: 0 LOC, 1 PIX,
        2 PXB, 3 PHB, 4 and 5 SYS).

        Raises
        ------
        ConfigError
            Naming ``field`` and the value: an unknown name, or a number above 5 (NCCL clamps one to
            SYS without a word; a level of 99 is a typo, not a request for SYS).
        """
        text = str(value).strip()
        old = (cls.LOC, cls.PIX, cls.PXB, cls.PHB, cls.SYS, cls.SYS)
        known = ", ".join(p.name for p in cls if p <= cls.SYS)
        if text.isdigit():
            if int(text) >= len(old):
                raise ConfigError(
                    f"{field}: level {text} is out of range; NCCL takes {known} or the old levels "
                    f"0-{len(old) - 1}"
                )
            return old[int(text)]
        try:
            return cls[text.upper()]
        except KeyError:
            raise ConfigError(
                f"{field}: unknown path type {value!r}; known: {known} or 0-{len(old) - 1}"
            ) from None


class Rendezvous(BaseModel):
    """A network provider's rendezvous protocol: a message longer than its eager limit costs one more round
    trip (the target pulls the rest with an RDMA Get once the header matches a receive).

    ``eager_max_bytes`` maps the provider release from which a default holds to the longest message sent
    eagerly; a release before the first recorded takes the first figure.

    >>> r = transport("slingshot-cxi").rendezvous
    >>> r.eager_max_at("1.22.0"), r.eager_max_at("2.2.0"), r.eager_max_at(None), r.eager_max_at("1.15.2")
    (4097, 18433, 18433, 4097)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    round_trip_s: float = Field(gt=0, validation_alias="round_trip")
    eager_max_bytes: dict[str, int] = Field(min_length=1)
    source: str = Field(min_length=10)

    @field_validator("round_trip_s", mode="before")
    @classmethod
    def _rtt(cls, v: Any) -> float:
        return parse_time(v, field="rendezvous.round_trip")

    def eager_max_at(self, version: str | None) -> int:
        """The eager limit of provider release ``version`` (default: the newest recorded), bytes."""
        table = self._recorded()
        if version is None:
            return self.eager_max_bytes[table[-1][1]]
        wanted = version_tuple(version, "libfabric_version", "1.22.0")
        return self.eager_max_bytes[next((k for v, k in reversed(table) if v <= wanted), table[0][1])]

    def _recorded(self) -> list[tuple[tuple[int, ...], str]]:
        """The recorded provider releases, oldest first: each one's version tuple and its key as written."""
        return sorted((version_tuple(k, "rendezvous.eager_max_bytes"), k) for k in self.eager_max_bytes)

    def eager_note(self, version: str | None) -> str | None:
        """Which recorded release's eager limit prices a stated ``version`` outside the recorded ones (older
        than the first: the first's figure, as HPE's 1.15.x builds keep the upstream defaults; newer than
        the newest: the newest's); None inside them or unstated.

        >>> transport("slingshot-cxi").rendezvous.eager_note("0.1.0")
        "libfabric 0.1.0's eager limit priced with 1.21.0's (4097 B), the first release recorded"
        """
        if version is None:
            return None
        table = self._recorded()
        (first_v, first), (newest_v, newest) = table[0], table[-1]
        wanted = version_tuple(version, "libfabric_version", "1.22.0")
        for key, side, test in ((first, "first", wanted < first_v), (newest, "newest", wanted > newest_v)):
            if test:
                figure = f"{key}'s ({self.eager_max_bytes[key]} B), the {side} release recorded"
                return f"libfabric {version}'s eager limit priced with {figure}"
        return None


class TransportSpec(BaseModel):
    """One transport (see the module docstring and ``data/transports.yaml`` for the fields' meaning)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    name: str
    scope: Literal["net", "intra"]
    nccl_name: str
    plugin: str | None = None
    latency_s: float = Field(ge=0, validation_alias="latency")
    per_stream_efficiency: float = Field(gt=0, le=1)
    aggregate_efficiency: float = Field(gt=0, le=1)
    gdr: Literal["required", "optional", "none"]
    source: str = Field(min_length=10)
    mtu_bytes: int | None = Field(default=None, gt=0)
    header_bytes: int | None = Field(default=None, ge=0)
    rendezvous: Rendezvous | None = None
    ib_verbs: bool = False
    image_env: tuple[tuple[str, str], ...] = ()

    @property
    def payload_share(self) -> float:
        """The payload share of line rate this transport's bytes are priced at, before the NIC's own ceiling:
        the framing ceiling where NCCL's IB verbs code frames the packets and the catalogue gives the framing
        (:attr:`speaks_ib_verbs`: NET/IB on InfiniBand or RoCE, gIB), else the aggregate efficiency,
        measured end to end as nccl-tests busbw over line rate, which already holds the wire's framing
        (:attr:`aifabric.cluster.spec.ClusterSpec.nic_payload_bytes_per_s`).

        >>> [round(transport(k).payload_share, 4) for k in ("roce-v2", "gcp-gib", "gcp-tcpxo", "tcp-socket")]
        [0.9804, 0.9804, 0.94, 0.55]
        """
        if self.speaks_ib_verbs and self.mtu_bytes is not None:
            return self.framing_efficiency
        return self.aggregate_efficiency

    @property
    def speaks_ib_verbs(self) -> bool:
        """Whether NCCL's IB verbs code carries this transport's bytes: NET/IB itself (InfiniBand, RoCE) or a
        plugin built on it (``ib_verbs``: gIB), which reads the ``NCCL_IB_*`` variables.

        >>> [transport(k).speaks_ib_verbs for k in ("roce-v2", "gcp-gib", "efa-srd")]
        [True, True, False]
        """
        return self.nccl_name == "NET/IB" or self.ib_verbs

    @field_validator("image_env", mode="before")
    @classmethod
    def _env(cls, v: Any) -> tuple[tuple[str, str], ...]:
        items = v.items() if isinstance(v, Mapping) else v
        return tuple(sorted((str(k), str(val)) for k, val in items))

    @property
    def framing_efficiency(self) -> float:
        """The payload share of a full packet on the wire, ``mtu / (mtu + header_bytes)``: the ceiling its
        headers put on any NIC that speaks this transport (1.0 where the catalogue gives no framing).

        RoCEv2 at a 4096 B RoCE MTU: 82 B per packet (Ethernet preamble and SFD 8, header 14, FCS 4,
        inter-frame gap 12; IPv4 20; UDP 8; InfiniBand BTH 12 and ICRC 4), 4096 / 4178 = 0.9804.

        >>> [round(transport(k).framing_efficiency, 4) for k in ("roce-v2", "ib-verbs")]
        [0.9804, 0.9937]
        """
        if self.mtu_bytes is None or self.header_bytes is None:
            return 1.0
        return self.mtu_bytes / (self.mtu_bytes + self.header_bytes)

    @field_validator("latency_s", mode="before")
    @classmethod
    def _lat(cls, v: Any) -> float:
        return parse_latency(v, field="latency")


@cache
def _transports() -> dict[str, TransportSpec]:
    raw: dict[str, Any] = load_package_yaml("aifabric.catalog", "data/transports.yaml")
    try:
        return {key: TransportSpec.model_validate({"key": key, **entry}) for key, entry in raw.items()}
    except ValidationError as err:
        raise ConfigError(f"transports.yaml: {err.errors()[0]['loc']}: {err.errors()[0]['msg']}") from err


def transport_names() -> list[str]:
    """Keys of the catalogued transports."""
    return sorted(_transports())


def transport(key: str) -> TransportSpec:
    """The transport ``key`` (``"ib-verbs"``, ``"efa-srd"``, ``"shm"`` ...); ConfigError lists the keys."""
    table = _transports()
    norm = key.strip().lower()
    if norm not in table:
        raise ConfigError(f"transport: unknown transport {key!r}; known: {', '.join(sorted(table))}")
    return table[norm]


# NCCL's names (ncclAlgoStr, ncclProtoStr, ncclFuncStr), compared case-insensitively as NCCL does.
_ALGO_NAMES = {
    "tree": Algorithm.TREE,
    "ring": Algorithm.RING,
    "collnetdirect": Algorithm.COLLNET_DIRECT,
    "collnetchain": Algorithm.COLLNET_CHAIN,
    "nvls": Algorithm.NVLS,
    "nvlstree": Algorithm.NVLS_TREE,
    "pat": Algorithm.PAT,
}
_PROTO_NAMES = {"ll": Protocol.LL, "ll128": Protocol.LL128, "simple": Protocol.SIMPLE}
_FUNC_NAMES = {
    "broadcast": Collective.BROADCAST,
    "reduce": Collective.REDUCE,
    "allgather": Collective.ALL_GATHER,
    "reducescatter": Collective.REDUCE_SCATTER,
    "allreduce": Collective.ALL_REDUCE,
}


def nccl_enabled(value: str, names: Mapping[str, Any], collective: str, *, field: str) -> frozenset[Any]:
    """What an ``NCCL_ALGO`` / ``NCCL_PROTO`` value enables for one collective (NCCL's ``parseList``).

    Grammar (``src/graph/tuning.cc``): ``;``-separated entries; only the first may lack a ``prefix:``
    (a collective name) and then applies to every collective; each list is ``,``-separated names, or
    ``^names`` for everything but them. Later entries override earlier ones for their collective.

    Raises
    ------
    ConfigError
        An unknown name or prefix, or a prefix-less entry after the first (NCCL: ncclInvalidUsage).
    """
    everything = frozenset(names.values())
    coll = Collective(collective)
    enabled = everything
    for i, entry in enumerate(value.strip().strip("'\"").split(";")):
        prefix, sep, items = entry.partition(":")
        if not sep:
            if i:
                raise ConfigError(
                    f"{field}: every entry but the first needs a 'collective:' prefix ({value!r})"
                )
            prefix, items = "", entry
        target = _FUNC_NAMES.get(prefix.strip().lower()) if prefix else None
        if prefix and target is None:
            raise ConfigError(f"{field}: unknown prefix {prefix!r}; known: {', '.join(_FUNC_NAMES)}")
        negate = items.strip().startswith("^")
        chosen = set()
        for raw in items.strip().lstrip("^").split(","):
            name = raw.strip().lower()
            if name not in names:
                raise ConfigError(f"{field}: unknown name {raw.strip()!r}; known: {', '.join(names)}")
            chosen.add(names[name])
        result = everything - chosen if negate else frozenset(chosen)
        if target is None or target is coll:
            enabled = result
    return enabled


@lru_cache(maxsize=256)  # pure in its strings; a call per collective timed (optimisation)
def nccl_names(value: str, collective: str) -> bool:
    """Whether an ``NCCL_ALGO`` / ``NCCL_PROTO`` value has an entry for ``collective`` (one without a
    prefix, or with its prefix): NCCL's ``parseList`` then sets every one of the collective's flags to on
    or off, LL128's default (``pEnable == 2``, tuning.cc) included; other collectives keep their defaults.
    Read after :func:`nccl_enabled` has checked the value."""
    coll = Collective(collective)
    for entry in value.strip().strip("'\"").split(";"):
        prefix, sep, _ = entry.partition(":")
        if not sep or _FUNC_NAMES.get(prefix.strip().lower()) is coll:
            return True
    return False


@lru_cache(maxsize=256)  # pure in its strings; a call per collective timed (optimisation)
def nccl_algorithms(value: str, collective: str) -> frozenset[Algorithm]:
    """Algorithms an ``NCCL_ALGO`` value enables for ``collective`` (:func:`nccl_enabled`)."""
    return nccl_enabled(value, _ALGO_NAMES, collective, field="NCCL_ALGO")


@lru_cache(maxsize=256)  # pure in its strings; a call per collective timed (optimisation)
def nccl_protocols(value: str, collective: str) -> frozenset[Protocol]:
    """Protocols an ``NCCL_PROTO`` value enables for ``collective`` (:func:`nccl_enabled`)."""
    return nccl_enabled(value, _PROTO_NAMES, collective, field="NCCL_PROTO")


def _flag(env: Mapping[str, str], name: str) -> bool | None:
    if name not in env:
        return None
    text = str(env[name]).strip()
    if text not in ("0", "1"):
        raise ConfigError(f"{name}: expected 0 or 1, got {text!r}")
    return text == "1"


#: An integer as C's ``strtoll(str, nullptr, 0)`` reads it: a sign, then ``0x`` hexadecimal, a leading
#: ``0`` octal, or decimal (C11 7.22.1.4).
_STRTOLL_BASE0 = re.compile(
    r"(?P<sign>[+-]?)(?:0[xX](?P<hex>[0-9a-fA-F]+)|(?P<oct>0[0-7]*)|(?P<dec>[1-9][0-9]*))"
)


def nccl_integer(text: str) -> int | None:
    """An NCCL integer parameter's value as NCCL reads it, or None when ``text`` is not a whole number.

    ``ncclLoadParam`` reads every ``NCCL_PARAM`` with ``strtoll(str, nullptr, 0)`` (``src/misc/param.cc``,
    v2.26.2-1): leading blanks skipped, a sign, and base 0: ``0x10`` is 16, ``010`` is 8, ``+8`` is 8.
    strtoll stops at the first character it cannot read and NCCL ignores the rest; a value with such a
    tail (``8 channels``, ``0x``) is refused here instead, being a slip more often than a setting.

    Examples
    --------
    >>> [nccl_integer(t) for t in ("0x10", "+8", "010", "-2", " 32", "8k", "")]
    [16, 8, 8, -2, 32, None, None]
    """
    match = _STRTOLL_BASE0.fullmatch(text.strip())
    if match is None:
        return None
    digits, base = next((match[g], b) for g, b in (("hex", 16), ("oct", 8), ("dec", 10)) if match[g])
    return int(match["sign"] + digits, base)


def _count(env: Mapping[str, str], name: str, low: int, high: int) -> int | None:
    if name not in env:
        return None
    text = str(env[name]).strip()
    value = nccl_integer(text)
    if value is None or not low <= value <= high:
        raise ConfigError(f"{name}: expected an integer in {low}..{high}, got {text!r}")
    return value


@dataclass(frozen=True)
class NcclEnv:
    """The NCCL environment variables that change transports, algorithms, protocols and channels.

    Attributes
    ----------
    p2p_disable, shm_disable : bool
        ``NCCL_P2P_DISABLE=1`` / ``NCCL_SHM_DISABLE=1``.
    p2p_level : PathType or None
        ``NCCL_P2P_LEVEL``: the farthest path P2P is used on (NCCL default PXB).
    net_gdr_level : PathType or None
        ``NCCL_NET_GDR_LEVEL``: the farthest GPU-NIC path GPUDirect RDMA is used on (NCCL default PXB).
    net_gdr_c2c : bool or None
        ``NCCL_NET_GDR_C2C``: GPUDirect RDMA on a NIC behind a Grace CPU reached over C2C (paths.cc
        ncclTopoCheckGdr: v2.26.2 takes such a PHB path as C2C when it is 1, default 0; v2.27.3 on its P2C
        path unless it is 0, default 1). The 2.25.1 tables also price 2.25, which does not read it.
    algo, proto : str or None
        ``NCCL_ALGO`` / ``NCCL_PROTO`` as written; :meth:`algorithms` and :meth:`protocols` resolve them.
    nvls_enable : int or None
        ``NCCL_NVLS_ENABLE``: 0 off, 1 forced on, 2 (NCCL's default) when the hardware supports it.
    min_nchannels, max_nchannels : int or None
        ``NCCL_MIN_NCHANNELS`` / ``NCCL_MAX_NCHANNELS`` (0..64 / 1..64, NCCL's MAXCHANNELS).
    ib_qps_per_connection : int or None
        ``NCCL_IB_QPS_PER_CONNECTION`` (NCCL default 1, ``net_ib/connect.cc``; 1..128 here).
    net_plugin : str or None
        ``NCCL_NET``: the network transport by NCCL name (``IB``, ``Socket``, a plugin's name).
    nvls_chunks : (int or None, int or None)
        ``NCCL_NVLS_CHUNKSIZE`` / ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` in bytes (NCCL defaults 128 KiB / -2,
        ``src/transport/nvls.cc`` ncclNvlsTuning): NVLS's and NVLS-tree's largest chunk.
    collnet_enable : bool
        ``NCCL_COLLNET_ENABLE=1``: CollNet (in-network reduction, SHARP) allowed. NCCL's default is 0 (NCCL
        environment-variable docs; ``init.cc`` disables CollNet unless it is set and a CollNet plugin loads).
    """

    p2p_disable: bool = False
    shm_disable: bool = False
    p2p_level: PathType | None = None
    net_gdr_level: PathType | None = None
    net_gdr_c2c: bool | None = None
    algo: str | None = None
    proto: str | None = None
    nvls_enable: int | None = None
    min_nchannels: int | None = None
    max_nchannels: int | None = None
    ib_qps_per_connection: int | None = None
    net_plugin: str | None = None
    collnet_enable: bool = False
    nvls_chunks: tuple[int | None, int | None] = (None, None)

    @classmethod
    def from_mapping(cls, env: Mapping[str, str]) -> NcclEnv:
        """Read the variables above from ``env`` (others are ignored); raises ConfigError naming one.

        Examples
        --------
        >>> NcclEnv.from_mapping({"NCCL_P2P_DISABLE": "1", "NCCL_NET_GDR_LEVEL": "PHB"}).net_gdr_level.name
        'PHB'
        """
        algo = env.get("NCCL_ALGO")
        proto = env.get("NCCL_PROTO")
        for c in Collective:  # validate every collective's reading now, so errors show at parse time
            if algo is not None:
                nccl_algorithms(algo, c)
            if proto is not None:
                nccl_protocols(proto, c)
        nvls = _count(env, "NCCL_NVLS_ENABLE", 0, 2)
        lo = _count(env, "NCCL_MIN_NCHANNELS", 0, 64)
        hi = _count(env, "NCCL_MAX_NCHANNELS", 1, 64)
        if lo is not None and hi is not None and lo > hi:
            raise ConfigError(f"NCCL_MIN_NCHANNELS: {lo} is above NCCL_MAX_NCHANNELS {hi}")
        p2p_level = env.get("NCCL_P2P_LEVEL")
        gdr_level = env.get("NCCL_NET_GDR_LEVEL")
        return cls(
            p2p_disable=bool(_flag(env, "NCCL_P2P_DISABLE")),
            shm_disable=bool(_flag(env, "NCCL_SHM_DISABLE")),
            p2p_level=None if p2p_level is None else PathType.parse(p2p_level, "NCCL_P2P_LEVEL"),
            net_gdr_level=None if gdr_level is None else PathType.parse(gdr_level, "NCCL_NET_GDR_LEVEL"),
            net_gdr_c2c=_flag(env, "NCCL_NET_GDR_C2C"),
            algo=algo,
            proto=proto,
            nvls_enable=nvls,
            min_nchannels=lo,
            max_nchannels=hi,
            ib_qps_per_connection=_count(env, "NCCL_IB_QPS_PER_CONNECTION", 1, 128),
            net_plugin=env.get("NCCL_NET"),
            collnet_enable=bool(_flag(env, "NCCL_COLLNET_ENABLE")),
            nvls_chunks=(
                _count(env, "NCCL_NVLS_CHUNKSIZE", 1, 2**30),
                _count(env, "NCCL_NVLSTREE_MAX_CHUNKSIZE", 1, 2**30),
            ),
        )

    def algorithms(self, collective: str) -> frozenset[Algorithm]:
        """Algorithms ``NCCL_ALGO`` leaves enabled for ``collective`` (all when unset), less NVLS when
        ``NCCL_NVLS_ENABLE=0`` and CollNet unless ``NCCL_COLLNET_ENABLE=1`` (tuning.cc disables CollNet
        Direct and Chain when ``collnetEnable == 0``)."""
        out = frozenset(Algorithm) if self.algo is None else nccl_algorithms(self.algo, collective)
        if self.nvls_enable == 0:
            out -= {Algorithm.NVLS, Algorithm.NVLS_TREE}
        if not self.collnet_enable:
            out -= {Algorithm.COLLNET_DIRECT, Algorithm.COLLNET_CHAIN}
        return out

    def protocols(self, collective: str) -> frozenset[Protocol]:
        """Protocols ``NCCL_PROTO`` leaves enabled for ``collective`` (all when unset)."""
        if self.proto is None:
            return frozenset(Protocol)
        return nccl_protocols(self.proto, collective)


@dataclass(frozen=True)
class TransportChoice:
    """The transport a connection uses, whether GPUDirect RDMA is on, and why."""

    transport: TransportSpec
    gdr: bool
    reason: str


# Network transports by plugin name (NCCL_NET or what the log prints after NET/), fabric-dependent for IB.
_NET_PLUGINS = {
    "socket": "tcp-socket",
    "aws libfabric": "efa-srd",
    "aws-ofi-nccl": "efa-srd",
    "efa": "efa-srd",
    "ofi": "efa-srd",
    "gpudirecttcpx": "gcp-tcpx",
    "tcpx": "gcp-tcpx",
    "fastrak": "gcp-tcpxo",
    "tcpxo": "gcp-tcpxo",
    "gib": "gcp-gib",
}


def nic_path_class(nic_path: str, release: NcclRelease) -> PathType:
    """NCCL's path type, in ``release``, for a cluster's GPU-NIC path (``scale_out.nic_path``): the name
    itself, but a NIC behind a Grace CPU (``P2C``) is PHB to v2.26 and P2C from v2.27.3
    (:attr:`~aifabric.catalog.nccl.NcclRelease.c2c_nic_path`).

    >>> from aifabric.catalog.nccl import nccl_release
    >>> nic_path_class("P2C", nccl_release("2.20.5")).name, nic_path_class("P2C", nccl_release("2.27.3")).name
    ('PHB', 'P2C')
    """
    return PathType[release.c2c_nic_path if nic_path == "P2C" else nic_path]


def gdr_distance(env: NcclEnv, nic_path: str, release: NcclRelease) -> PathType:
    """The GPU-NIC distance NCCL's ``ncclTopoCheckGdr`` compares with ``NCCL_NET_GDR_LEVEL``: the
    release's class of ``nic_path`` (:func:`nic_path_class`), but C2C for a NIC behind a Grace CPU under
    ``NCCL_NET_GDR_C2C`` ("On C2C platforms we can still use GDRDMA on NICs connected to the CPUs"): its
    PHB path when the variable is 1 (v2.26.2), its P2C path unless it is 0 (v2.27.3 on, default 1).

    >>> from aifabric.catalog.nccl import nccl_release
    >>> on, v226 = NcclEnv.from_mapping({"NCCL_NET_GDR_C2C": "1"}), nccl_release("2.26.2")
    >>> gdr_distance(NcclEnv(), "P2C", v226).name, gdr_distance(on, "P2C", v226).name
    ('PHB', 'C2C')
    """
    path = nic_path_class(nic_path, release)
    c2c = path is PathType.P2C if env.net_gdr_c2c is None else env.net_gdr_c2c
    return PathType.C2C if nic_path == "P2C" and c2c else path


#: tuning.cc ncclTopoTuneModel (v2.18.1-1 to v2.30.7-1, ``pEnable == 2``): LL128 runs across nodes while the
#: graph's GPU-NIC path ``typeInter`` is within PXB, or within this one on compute capability >= 9.0 (PXN;
#: v2.27.3: P2C with NCCL_LL128_C2C=1, sorted after PXN there; v2.28.3 on: PXN, P2C sorted before it)
_LL128_NET_PATH_SM90 = PathType.PXN


def net_ll128_allowed(path: PathType, compute_capability: int) -> bool:
    """Whether NCCL's tuner leaves LL128 on across nodes over GPU-NIC path ``path`` (a release's class,
    :func:`nic_path_class`) on a GPU of ``compute_capability`` (90 = 9.0; 0: none recorded, NCCL's
    default kept).

    >>> [net_ll128_allowed(p, cc) for p, cc in ((PathType.PHB, 90), (PathType.P2C, 90), (PathType.P2C, 80))]
    [False, True, False]
    """
    return path <= PathType.PXB or (
        (compute_capability >= 90 or not compute_capability) and path <= _LL128_NET_PATH_SM90
    )


def gdr_enabled(env: NcclEnv, spec: TransportSpec, nic_path: PathType | str) -> bool:
    """Whether a network transport uses GPUDirect RDMA at GPU-NIC path ``nic_path`` (``paths.cc``).

    GDR is on when the transport can use it (``gdr`` not ``none``) and ``nic_path <= NCCL_NET_GDR_LEVEL``
    (default PXB: same PCIe switch or a chain of switches; PHB/SYS, through the CPU, stage in host memory).
    ``nic_path`` is the distance NCCL compares (:func:`gdr_distance`: C2C for a Grace NIC under
    ``NCCL_NET_GDR_C2C``).

    Raises
    ------
    ConfigError
        An unknown path type, or a transport that requires GDR (``gdr: required``) on a path beyond the level.
    """
    nic_p = PathType.parse(nic_path, "nic_path") if not isinstance(nic_path, PathType) else nic_path
    gdr_level = env.net_gdr_level if env.net_gdr_level is not None else PathType.PXB
    gdr_ok = nic_p <= gdr_level
    if spec.gdr == "required" and not gdr_ok:
        raise ConfigError(
            f"nic_path: {spec.name} needs GPUDirect RDMA but the GPU-NIC path {nic_p.name} is beyond "
            f"NCCL_NET_GDR_LEVEL {gdr_level.name}"
        )
    return spec.gdr != "none" and gdr_ok


def resolve_transport(
    env: NcclEnv,
    *,
    same_node: bool,
    gpu_path: PathType | str = PathType.NVL,
    nic_path: PathType | str = PathType.PIX,
    fabric: Literal["infiniband", "ethernet"] = "infiniband",
    net_plugin: str | None = None,
    peer_access: bool = True,
) -> TransportChoice:
    """Which transport NCCL uses between two GPUs (``src/transport.cc`` order P2P, SHM, NET; ``paths.cc``).

    Same node: P2P when the GPUs have peer access (``peer_access``: ``cudaDeviceCanAccessPeer``, which
    ``p2p.cc`` p2pCanConnect checks; GeForce cards have none), ``NCCL_P2P_DISABLE`` is not 1 and
    ``gpu_path <= NCCL_P2P_LEVEL`` (default PXB):
    over NVLink for NVL/NVB, over PCIe for PIX/PXB, through the CPU for PHB/SYS; else SHM unless
    ``NCCL_SHM_DISABLE=1``; else the network (loopback through the NIC). Across nodes: the network
    transport of ``net_plugin`` (``NCCL_NET`` wins; default IB verbs, RoCEv2 on an Ethernet fabric), with
    GPUDirect RDMA when the transport allows it and ``nic_path <= NCCL_NET_GDR_LEVEL`` (default PXB); a
    plugin that requires GDR on a path beyond that level is refused.

    Parameters
    ----------
    gpu_path : PathType or str
        NCCL's path type between the two GPUs (``nvidia-smi topo -m``: NV#, PIX, PXB, PHB, SYS).
    nic_path : PathType or str
        NCCL's path type between the sending GPU and its NIC.

    Raises
    ------
    ConfigError
        An unknown plugin or path type, or a GDR-only plugin whose GPU-NIC path forbids GDR.
    """
    gpu_p = PathType.parse(gpu_path, "gpu_path") if not isinstance(gpu_path, PathType) else gpu_path
    nic_p = PathType.parse(nic_path, "nic_path") if not isinstance(nic_path, PathType) else nic_path
    if same_node:
        level = env.p2p_level if env.p2p_level is not None else PathType.PXB
        if env.p2p_disable:
            why = "NCCL_P2P_DISABLE=1"
        elif not peer_access:
            why = "no peer access between these GPUs"
        elif gpu_p <= level:
            key = (
                "p2p-nvlink"
                if gpu_p <= PathType.NVB
                else ("p2p-pcie" if gpu_p <= PathType.PXB else "pcie-through-cpu")
            )
            return TransportChoice(transport(key), False, f"P2P: path {gpu_p.name} <= P2P level {level.name}")
        else:
            why = f"path {gpu_p.name} beyond P2P level {level.name}"
        if not env.shm_disable:
            return TransportChoice(transport("shm"), False, f"SHM ({why})")
        why += ", NCCL_SHM_DISABLE=1"
    else:
        why = "different nodes"
    name = (env.net_plugin or net_plugin or "ib").strip().lower()
    if name in ("ib", "net/ib"):
        key = "roce-v2" if fabric == "ethernet" else "ib-verbs"
    elif name.removeprefix("net/") in _NET_PLUGINS:
        key = _NET_PLUGINS[name.removeprefix("net/")]
    else:
        known = ", ".join(["IB", *sorted(_NET_PLUGINS)])
        raise ConfigError(f"net plugin: unknown {name!r}; known: {known}")
    spec = transport(key)
    gdr = gdr_enabled(env, spec, nic_p)
    return TransportChoice(spec, gdr, f"NET ({why}); GDR {'on' if gdr else 'off'} at path {nic_p.name}")
