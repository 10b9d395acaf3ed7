"""NCCL's own tuning tables per release, and the choices NCCL makes from them.

The figures live in ``data/nccl_releases.yaml``, read from NVIDIA/nccl at each release tag (``git show
TAG:src/graph/tuning.cc`` and the files named next to each figure). A release there is the first tag where
one of the recorded facts changed; :func:`nccl_release` maps any version to the newest recorded release at or
below it. Units as NCCL writes them: latencies in microseconds, bandwidths in GB/s (1e9 bytes/s); the pure
functions below return SI units (seconds, bytes/s) where they return times or rates.

Functions
---------
- :func:`nccl_release` -- the tables of one release (``None``: the newest).
- :func:`tuning_arch` -- which architecture row NCCL uses for a GPU architecture.
- :func:`search_channels` -- the ring graph's channels and per-channel speed (``search.cc``).
- :func:`comm_channels` -- the communicator's channels after ``connect.cc`` duplicates the searched rings.
- :func:`channels_for` -- the channels one call runs on (``enqueue.cc`` reduces them for small sizes).
- :func:`protocol_costs` / :func:`protocol_for` -- NCCL's per-protocol latency and bandwidth, and its pick.
- :func:`algorithm_for` -- ring or tree and the protocol NCCL's tuner picks for a size.
- :func:`nvls_support` -- whether NVLS and NVLS-tree are on for (architecture, nodes, local GPUs, release).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from aifabric.catalog.nccl_p2p import NetPeerChannels
from aifabric.errors import ConfigError
from aifabric.package_data import load_package_yaml

__all__ = [
    "Algorithm",
    "Collective",
    "NcclRelease",
    "NvlsSupport",
    "Protocol",
    "ProtocolCost",
    "algorithm_for",
    "channel_unit_bytes",
    "channels_for",
    "comm_channels",
    "nccl_release",
    "nccl_release_versions",
    "release_named",
    "nvls_channels",
    "nvls_chunk_bytes",
    "nvls_gather_tuner_algbw",
    "nvls_heads",
    "nvls_search",
    "nvls_support",
    "nvls_tree_kernel_bw",
    "tree_simple_latency_release",
    "nvls_tree_net_steps",
    "nvls_tree_start_chunk",
    "nvls_tuner_algbw",
    "nvls_tuner_figure",
    "pick_release",
    "ring_backup",
    "protocol_costs",
    "protocol_for",
    "search_channels",
    "socket_ring_search",
    "tuning_arch",
    "version_tuple",
]


class Algorithm(StrEnum):
    """NCCL's algorithms, in the order of its ``NCCL_ALGO_*`` enum."""

    TREE = "tree"
    RING = "ring"
    COLLNET_DIRECT = "collnet_direct"
    COLLNET_CHAIN = "collnet_chain"
    NVLS = "nvls"
    NVLS_TREE = "nvls_tree"
    PAT = "pat"


class Protocol(StrEnum):
    """NCCL's protocols, in the order of its ``NCCL_PROTO_*`` enum (the tables' columns)."""

    LL = "LL"
    LL128 = "LL128"
    SIMPLE = "Simple"


class Collective(StrEnum):
    """The collectives NCCL's tuner costs."""

    ALL_REDUCE = "all_reduce"
    ALL_GATHER = "all_gather"
    REDUCE_SCATTER = "reduce_scatter"
    BROADCAST = "broadcast"
    REDUCE = "reduce"


_PROTO_INDEX = {Protocol.LL: 0, Protocol.LL128: 1, Protocol.SIMPLE: 2}
Triple = tuple[float, float, float]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BlackwellNvlsTreeRule(_Frozen):
    """One row of ``nvls.cc`` ncclNvlsTreeSm100Tuning: channels for a NIC speed (GB/s per GPU) and nodes."""

    nodes: int | None = None
    min_nic_gbps: float
    max_local_gpus: int | None = None
    channels: int = Field(ge=1)


class BlackwellNvlsTreeChunkRule(_Frozen):
    """One branch of ``nvls.cc`` ncclNvlsTreeSm100Tuning: NVLS chunk and NVLS-tree max chunk, bytes, for
    nodes, NIC GB/s per GPU (``min_nic_gbps <= bw < below_nic_gbps``), GPUs per node and whether the
    GPU-NIC path is within PXB (``near_nic``: ``gpuToNicPathType <= PATH_PXB``)."""

    nodes: int | None = None
    min_nic_gbps: float
    below_nic_gbps: float | None = None
    min_local_gpus: int | None = None
    max_local_gpus: int | None = None
    near_nic: bool | None = None
    chunk: int = Field(ge=1)
    tree_max_chunk: int = Field(ge=1)

    def matches(self, *, nnodes: int, nic_gbps: float, local_gpus: int, near_nic: bool) -> bool:
        """Whether this branch applies (every given condition holds)."""
        return (
            (self.nodes is None or self.nodes == nnodes)
            and nic_gbps >= self.min_nic_gbps
            and (self.below_nic_gbps is None or nic_gbps < self.below_nic_gbps)
            and (self.min_local_gpus is None or local_gpus >= self.min_local_gpus)
            and (self.max_local_gpus is None or local_gpus <= self.max_local_gpus)
            and (self.near_nic is None or self.near_nic == near_nic)
        )


class NcclRelease(_Frozen):
    """The tuning facts of one NCCL release (see ``data/nccl_releases.yaml`` for each figure's source).

    Table attributes map an architecture (``volta``, ``ampere``, ``hopper``, ``blackwell``) or a hardware
    class (``nvlink``, ``pci``, ``net``) to NCCL's rows; each row is ``[LL, LL128, Simple]`` (latencies, us)
    or ``[1 node, 2 nodes, >= 3 nodes]`` (bandwidths, GB/s).
    """

    version: str
    tag: str
    source: str = Field(min_length=10)
    architectures: tuple[str, ...]
    base_latency_us: dict[Algorithm, Triple]
    hw_latency_us: dict[str, dict[Algorithm, Triple]]
    ll_max_bw: dict[str, Triple]
    per_channel_max_ring_ll128_bw: dict[str, Triple]
    per_channel_max_tree_ll128_bw: dict[str, Triple] | None = None
    per_channel_max_tree_bw: dict[str, Triple]
    per_channel_max_nvls_tree_bw: dict[str, Triple] | None = None
    nvls_efficiency: dict[str, float] | None = None
    nvls_tuner_ratio: float | None = Field(default=None, gt=0, le=1)
    nvls_gather_tuner_ratio: float | None = Field(default=None, gt=0, le=1)
    ring_ll_bw_factor: float = Field(gt=0, le=1)
    ring_ll_bw_factor_single_node_other: float = Field(gt=0, le=1)
    ring_ll128_bw_factor: float = Field(gt=0, le=1)
    ring_ll128_bw_factor_one_gpu_per_node: float = Field(gt=0, le=1)
    tree_bw_factor: float = Field(gt=0, le=1)
    tree_ll_bw_divisor: float = Field(gt=1)
    tree_ll128_bw_factor: tuple[float, float]
    tree_correction_factor: dict[Protocol, tuple[float, ...]]
    ring_plateau_min_bytes_per_channel_rank: float = Field(gt=0)
    ring_plateau_latency_factor: dict[str, float]
    net_overhead_us: dict[str, float]
    #: tuning.cc from 2.23.4: with one rank per node (ppn = 1) every algorithm's inter-node latency is the
    #: Tree row's NET latency ("latencies are fully exposed"); before, each algorithm's own row
    ppn1_tree_net_latency: bool = False
    pat_bw_factor: float | None = None
    pat_latency_per_rank_us: float | None = None
    thread_threshold: dict[Protocol, int]
    max_threads: dict[Protocol, int]
    #: data bytes a thread's 16-byte store carries, by protocol (LL 8, LL128 15): the ratio that turns
    #: NCCL's per-channel LL128 figure into one channel's LL rate (tiers.ll_channel_rate); None: not
    #: recorded, a channel's LL rate is then ``llMaxBw`` shared over the GPU's channels
    store_data_bytes: dict[Protocol, float] | None = None
    max_channels: int = Field(ge=1)
    channel_doubling_archs: tuple[str, ...]
    channel_doubling_below: int = Field(ge=1)
    search_speeds_intra: dict[str, tuple[float, ...]]
    search_speeds_inter: dict[str, tuple[float, ...]]
    dup_min_bw: dict[str, float]
    dup_min_bw_many_channels: dict[str, float]
    nvls_channels: dict[str, int]
    nvls_min_local_gpus: int = Field(ge=1)
    nvls_min_channels: int = Field(ge=1)
    nvls_multi_node_requires_collnet: bool
    nvls_tree_min_nodes: int = Field(ge=2)
    nvls_chunk_bytes: int = Field(ge=1)
    nvls_tree_chunk_bytes: int = Field(ge=1)
    nvls_tree_chunk_bytes_from_4_nodes: int | None = None
    nvls_multi_node_chunk_bytes: int | None = Field(default=None, ge=1)
    nvls_multi_node_chunk_below_gbps: float | None = Field(default=None, gt=0)
    nvls_chunk_shrink: tuple[tuple[int, int], ...]
    nvls_tree_chunk_shrink: tuple[tuple[int, int], ...]
    nvls_pipeline_stages: int = Field(ge=1)
    nvls_one_node_channel_first: bool = False
    nvls_max_arity: int = Field(ge=1)
    blackwell_nvls_tree_channels: tuple[BlackwellNvlsTreeRule, ...] = ()
    blackwell_nvls_tree_chunks: tuple[BlackwellNvlsTreeChunkRule, ...] = ()
    algorithms: dict[Collective, tuple[Algorithm, ...]]
    collnet_gather_scatter_ppn_correction: tuple[float, float] | None = None
    collnet_gather_scatter_inter_factor: float | None = Field(default=None, gt=0, le=1)
    nvls_archs: tuple[str, ...]
    nvls_tree_kernel_bw_from: str | None = None
    #: the release whose tree/Simple ``baseLat`` and ``hwLat`` price a tree step where this release's are a
    #: penalty that steers its tuner off the tree (:func:`tree_simple_latency_release`); None: its own
    tree_simple_latency_from: str | None = None
    nvls_tree_latency_steps: Literal["log2", "linear"] = "log2"
    ring_backup: Literal["none", "not_all_reduce", "any"] = "none"
    #: paths.cc ncclTopoCheckP2p: NCCL's default P2P level is PXB (SYS on an x86 AMD host); from 2.23 SYS only
    #: while the host has at most this many GPUs (None: at any count)
    p2p_sys_amd_max_gpus: int | None = Field(default=None, ge=1)
    #: whose tables these are: NCCL's, or RCCL's (ROCm/rccl, a fork keeping NCCL's version numbers)
    library: Literal["nccl", "rccl"] = "nccl"
    #: GPU architectures on which LL128 is on by default (None: every one NCCL tunes, on NVLink-class paths;
    #: RCCL tuning.cc: only gfx90a, where the topology's model sets ll128Enabled)
    ll128_archs: tuple[str, ...] | None = None
    #: compute capabilities (90 = 9.0) on which NCCL's tuner turns LL128 on by default (tuning.cc
    #: ncclTopoTuneModel, ``switch (minCompCap)`` while ``pEnable == 2``; any other is ``pEnable &= 0``);
    #: None: every one from 7.0 (v2.27.3-1 on: ``!(minCompCap < 70 ...)``)
    ll128_compute_capabilities: tuple[int, ...] | None = None
    #: NCCL's path type for a GPU that reaches its NIC through its Grace CPU (NVLink-C2C to the CPU, PCIe
    #: from the CPU to the NIC: GH200, GB200; the cluster's ``nic_path: P2C``). PHB to v2.26 (paths.cc
    #: ncclTopoSetPaths: a PCI link at a CPU makes the path PATH_PHB; topo.cc joins GPU and CPU with an NVL
    #: link, a C2C one from v2.26.2), so GPUDirect RDMA only with NCCL_NET_GDR_LEVEL >= PHB and LL128 off
    #: across nodes (tuning.cc: typeInter <= PXB, or <= PXN on Hopper+); P2C from v2.27.3 ("Add support
    #: for P2C (PXN over C2C) and the LL128 protocol", "Enable GPUDirect RDMA for the NICs by default")
    c2c_nic_path: Literal["PHB", "P2C"] = "PHB"
    #: paths.cc ncclTopoGetNchannels: the rule for the p2p channels to a network peer
    #: (:mod:`aifabric.catalog.nccl_p2p`); None where the release's tables do not record it (RCCL's)
    net_peer_channels: NetPeerChannels | None = None

    @property
    def version_tuple(self) -> tuple[int, ...]:
        """The version as integers, ``(2, 30, 3)``."""
        return _version_tuple(self.version)


def version_tuple(version: str, field: str = "nccl version", example: str = "2.21.5") -> tuple[int, ...]:
    """A stated version as integers (:func:`_version_tuple`); ConfigError naming ``field`` when it is not
    one (``example`` shows the form)."""
    return _version_tuple(version, field, example)


def _version_tuple(version: str, field: str = "nccl version", example: str = "2.21.5") -> tuple[int, ...]:
    """``"2.30.7"`` / ``"v2.30.7-1"`` / ``"2.30"`` -> ``(2, 30, 7)`` / ``(2, 30, 7)`` / ``(2, 30)``."""
    text = str(version).strip().lower().removeprefix("v").split("-")[0].split("+")[0]
    try:
        parts = tuple(int(p) for p in text.split("."))
    except ValueError:
        raise ConfigError(f"{field}: {version!r} is not a version like {example}") from None
    if not 1 <= len(parts) <= 3:
        raise ConfigError(f"{field}: {version!r} is not a version like {example}")
    return parts


@cache
def _releases() -> dict[str, NcclRelease]:
    raw: dict[str, Any] = load_package_yaml("aifabric.catalog", "data/nccl_releases.yaml")
    out: dict[str, NcclRelease] = {}
    for version, entry in raw.items():
        try:
            out[str(version)] = NcclRelease.model_validate({"version": str(version), **entry})
        except ValidationError as err:  # a broken shipped file is a bug; say where
            raise ConfigError(f"nccl_releases.yaml: release {version}: {err.errors()[0]['msg']}") from err
    return dict(sorted(out.items(), key=lambda kv: _version_tuple(kv[0])))


def nccl_release_versions() -> list[str]:
    """The recorded releases, oldest first (each the first tag where a recorded fact changed)."""
    return list(_releases())


def nccl_release(version: str | None = None) -> NcclRelease:
    """The tuning tables NCCL ``version`` runs with.

    Parameters
    ----------
    version : str or None
        ``"2.21.5"``, ``"v2.21.5-1"`` or ``"2.21"``; ``None`` is the newest recorded release. A version
        between two recorded releases has the tables of the earlier one (``"2.22.3"`` -> ``2.21.5``); a
        later patch of the newest recorded minor (``"2.30.7"``) has the newest's tables.

    Raises
    ------
    ConfigError
        A malformed version, one older than the oldest recorded release (the message lists the known ones),
        or one of a minor series newer than the newest recorded release's (``"2.31.0"``, ``"3.0"``: tables
        not read yet; the message names the newest).
    """
    return pick_release(_releases(), version)


def release_named(version: str | None, release: NcclRelease) -> str:
    """How a verdict names the release whose rule it used: its version, and when the ``version`` a user
    typed is not that recorded release, what was typed and why the rule is another's.

    >>> release_named(" 2.27.3", nccl_release("2.27.3"))
    '2.27.3'
    >>> release_named("2.26.2", nccl_release("2.26.2"))
    '2.25.1 (2.26.2 is not a recorded release: the newest recorded at or below it sets the rule)'
    """
    if version is None or _version_tuple(version) == release.version_tuple:
        return release.version
    return (
        f"{release.version} ({str(version).strip()} is not a recorded release: the newest recorded at or "
        "below it sets the rule)"
    )


def pick_release(table: dict[str, NcclRelease], version: str | None, library: str = "nccl") -> NcclRelease:
    """The release of ``table`` (oldest first) that ``version`` runs: the newest at or below it.

    :func:`nccl_release`'s rules, for NCCL's tables or a fork's (``library`` names it in messages: RCCL's
    releases carry the NCCL version they are built on, :mod:`aifabric.catalog.rccl`).
    """
    newest = next(reversed(table.values()))
    if version is None:
        return newest
    want = _version_tuple(version)
    if want[:2] > newest.version_tuple[:2]:
        raise ConfigError(
            f"{library} version: {version!r} is newer than the newest recorded release {newest.version} "
            f"(tables read through the {'.'.join(map(str, newest.version_tuple[:2]))} series)"
        )
    if len(want) == 2:  # "2.21": the newest release of that minor
        want = (*want, 10**6)
    chosen = None
    for rel in table.values():
        if rel.version_tuple <= want:
            chosen = rel
    if chosen is None:
        raise ConfigError(
            f"{library} version: {version!r} is older than the catalogue's releases; "
            f"known: {', '.join(table)}"
        )
    return chosen


def nvls_tree_kernel_bw(release: NcclRelease) -> tuple[NcclRelease, dict[str, Triple]] | None:
    """The per-channel ceiling of the NVLS-tree kernel ``release`` runs, and the release whose table gives it.

    NCCL's tuner bounds each NVLS-tree channel by ``perChMaxNVLSTreeBws`` (GB/s, rows by architecture,
    columns 1 / 2 / >= 3 nodes) from 2.28.3 on, a measured figure of the kernel, not a change of it: the
    NVLS-tree kernel of 2.21.5-2.27 (``all_reduce.h`` warp groups and counts, ``enqueue.cc`` chunk rules) is
    2.28.3's, and that of 2.18.1-2.20 has the same warp groups with a larger chunk (512 KiB), the table
    known for it (case 24: NCCL 2.19.3, 2 nodes ~430 GB/s busbw, under it). Such a release names the release
    whose table describes its kernel (``nvls_tree_kernel_bw_from``); its own tuner does not see that
    ceiling. ``None``: neither has one.
    """
    source = release if release.per_channel_max_nvls_tree_bw is not None else None
    if source is None and release.nvls_tree_kernel_bw_from is not None:
        source = nccl_release(release.nvls_tree_kernel_bw_from)
    if source is None or source.per_channel_max_nvls_tree_bw is None:
        return None
    return source, source.per_channel_max_nvls_tree_bw


def tree_simple_latency_release(release: NcclRelease) -> NcclRelease:
    """The release whose tree/Simple latencies (``baseLat``, ``hwLat``) price the steps ``release`` runs.

    NCCL's tree/Simple ``hwLat`` of 28 us on NVLink, PCI and the network (v2.18.1-1, v2.19.1-1 to
    v2.22.3-1; base 0) is a penalty of the tuner, not a step's duration: tuning.cc of those tags says
    so where it lifts it on POWER hosts ("De-penalize Tree/Simple latency on Power systems to favor Tree
    than Ring"), and the figure came and went by release, 4 / 6 / 14 in v2.18.3-1 and v2.18.5-1, 28 again
    in v2.19.1-1, 4.0 / 4.0 / 14 with a base of 8.4 from v2.23.4-1 (as the ring's Simple step).
    The same 2 x 4 GH200 over Slingshot 11, NICs behind the Grace CPU (PHB, no LL128 across nodes, both
    runs NCCL_NET_GDR_LEVEL=PHB), gives 109.34 / 140.17 GB/s busbw at 64 / 256 MiB on NCCL 2.20.5 with the
    tree forced (crickett-hpe/hpc-ai-envs) and 107.91 / 141.75 on 2.23.4 (boeschf/nccl-benchmark-on-
    alps-2025), where the 28 us steps would cost 2.20.5 163 us a call more. Such a release names the
    release whose figures price the step (``tree_simple_latency_from``); its own tuner still picks with
    the penalty.

    >>> tree_simple_latency_release(nccl_release("2.20.5")).version, nccl_release("2.20.5").version
    ('2.23.4', '2.20.3')
    """
    name = release.tree_simple_latency_from
    return release if name is None else nccl_release(name)


#: GPU architectures NCCL tunes with another's row (tuning.cc compCapIndex, by compute capability).
_ARCH_ROW = {"rubin": "blackwell", "ada": "ampere", "turing": "volta"}


def tuning_arch(release: NcclRelease, arch: str) -> str:
    """The architecture row NCCL uses for a GPU of ``arch`` in ``release``.

    NCCL indexes by compute capability: ``>= 100`` Blackwell (and newer), ``>= 90`` Hopper, ``>= 80`` Ampere,
    else Volta (tuning.cc ``compCapIndex``). A release without a Blackwell row treats Blackwell as Hopper;
    Rubin uses the Blackwell row, Ada (compute capability 8.9) the Ampere row and Turing (7.5) the Volta row.

    Raises
    ------
    ConfigError
        ``arch`` is not an NVIDIA GPU architecture NCCL tunes for (TPU, AMD CDNA: RCCL has its own tables).
    """
    order = ("volta", "ampere", "hopper", "blackwell")
    key = _ARCH_ROW.get(arch.lower(), arch.lower())
    if key not in order:
        raise ConfigError(f"arch: NCCL has no tuning row for {arch!r}; known: {', '.join(order)}, rubin")
    rows = release.architectures
    idx = min(order.index(key), len(rows) - 1)
    return rows[idx]


def check_release_has_arch(
    version: str | None, release: NcclRelease, arch: str, gpu: str, *, field: str = "nccl version"
) -> None:
    """Refuse an NCCL release older than the GPU: one whose tuning tables have no row for ``arch``.

    A release's ``architectures`` are the rows of its ``src/graph/tuning.cc`` tables (``nccl_releases.yaml``,
    read at each tag): Blackwell (sm_100) first appears in v2.25.1; Volta, Ampere and Hopper are in every
    recorded release. Rubin is tuned with the Blackwell row and Ada with the Ampere row
    (:func:`tuning_arch`); GPUs NCCL does not tune (AMD under RCCL, TPU) are not checked. ``version`` None
    (the newest release) is never refused. ``field`` names the input in the message (``--nccl-version`` on
    the command line). The engines take any recorded release (what-if studies of the tables); the CLI checks.

    Raises
    ------
    ConfigError
        ``release`` has no row for ``arch``; the message names the version, the GPU and the first release
        with the row.
    """
    key = _ARCH_ROW.get(arch.lower(), arch.lower())
    if (
        version is None
        or key not in ("volta", "ampere", "hopper", "blackwell")
        or key in release.architectures
    ):
        return
    first = next(r.version for r in _releases().values() if key in r.architectures)
    raise ConfigError(
        f"{field}: {version!r} predates the {arch} GPU {gpu!r}: NCCL's tuning tables (tuning.cc) have a "
        f"{key} row from {first}; use --nccl-version {first} or newer"
    )


def _node_column(nnodes: int) -> int:
    """Column of the per-node tables: 1 node, 2 nodes, >= 3 nodes (tuning.cc ``index2``)."""
    if nnodes < 1:
        raise ConfigError(f"nnodes: must be >= 1, got {nnodes}")
    return min(nnodes, 3) - 1


#: Search channels with more than this many are kept undoubled below ``dup_min_bw_many_channels``
#: (search.cc ncclTopoDupChannels: ``nChannels > 4``).
_DUP_MANY_CHANNELS = 4
#: The search walks down the speeds while the next is above this fraction of the best found speed
#: (search.cc: ``speedArray[speedIndex+1] / graph->bwInter > .49``).
_SEARCH_SPEED_RATIO = 0.49


def search_channels(
    release: NcclRelease,
    arch: str,
    *,
    gpu_gbps: float,
    nnodes: int = 1,
    nics_per_node: int = 0,
    nic_gbps: float = 0.0,
) -> tuple[int, float]:
    """The ring graph NCCL's topology search finds on a uniform node: ``(channels, GB/s per channel)``.

    A simplified ``src/graph/search.cc`` (ncclTopoCompute) for nodes whose GPUs each have ``gpu_gbps`` of
    scale-up bandwidth (NCCL's per-link constant x links) and, across nodes, ``nics_per_node`` NICs of
    ``nic_gbps`` each. For each speed ``s`` of ``search_speeds_intra`` (one node) or ``search_speeds_inter``
    (more) at or below the path's ``maxBw`` (``gpu_gbps``, or the NIC speed across nodes), highest first::

        n(s) = min(max_channels / 2, floor(gpu_gbps / s) [, nics_per_node x floor(nic_gbps / s)])

    The first ``s`` with ``n(s) s >= gpu_gbps`` is optimal and ends the search; otherwise the search walks
    down while the next speed is above 0.49 x the best speed found and keeps the first largest
    ``n(s) s``. Then ``ncclTopoDupChannels`` doubles ``n`` (capped at ``max_channels / 2``) and halves
    ``s`` when ``s >= dup_min_bw[row]`` (``dup_min_bw_many_channels[row]`` when ``n > 4``). The ring
    graph's ``maxChannels`` is ``MAXCHANNELS / 2`` (init.cc).

    Examples: 8 x H100 (370.8 GB/s): 6 x 60 -> 12 x 30, 24 communicator channels (NCCL's "24 coll
    channels"); 8 x A100 (240 GB/s): 6 x 40 optimal -> 12 x 20, 24.

    Raises
    ------
    ConfigError
        A non-positive ``gpu_gbps``, or NICs missing across nodes.
    """
    if not gpu_gbps > 0:
        raise ConfigError(f"gpu_gbps: must be > 0, got {gpu_gbps}")
    multi = nnodes > 1
    if multi and not (nics_per_node >= 1 and nic_gbps > 0):
        raise ConfigError(f"nics: a ring across {nnodes} nodes needs NICs; got {nics_per_node} x {nic_gbps}")
    row = tuning_arch(release, arch)
    speeds = (release.search_speeds_inter if multi else release.search_speeds_intra)[row]
    max_bw = min(gpu_gbps, nic_gbps) if multi else gpu_gbps
    cap = release.max_channels // 2
    best_n, best_s = 0, 0.0
    usable = [s for s in speeds if s <= max_bw] or [speeds[-1]]
    for s in usable:
        if best_n and s / best_s <= _SEARCH_SPEED_RATIO:
            break
        n = min(cap, math.floor(gpu_gbps / s))
        if multi:
            n = min(n, nics_per_node * math.floor(nic_gbps / s))
        if n >= 1 and n * s > best_n * best_s:
            best_n, best_s = n, s
        if best_n and best_n * best_s >= gpu_gbps:
            break
    if best_n == 0:  # slower than the slowest speed: one channel at it (NCCL's last resort)
        return 1, usable[-1]
    limit = release.dup_min_bw_many_channels if best_n > _DUP_MANY_CHANNELS else release.dup_min_bw
    if best_s >= limit[row]:
        doubled = min(cap, 2 * best_n)
        best_s /= math.ceil(doubled / best_n)
        best_n = doubled
    return best_n, best_s


def socket_ring_search(
    release: NcclRelease, arch: str, *, sys_gbps: float, gpu_gbps: float
) -> tuple[int, float] | None:
    """The ring graph NCCL's search finds on a node whose GPUs sit on two CPU sockets: ``(channels, GB/s
    per channel)``, or None where it finds none.

    Every ring over both sockets crosses the ``LINK_SYS`` between the two CPU nodes once each way
    (``topo.cc`` ncclTopoConnectCpus: one link per ordered pair, ``sys_gbps`` =
    ncclTopoGetInterCpuBw's figure), and ``search.cc`` followPath books each channel's speed on it, so the
    channels of a speed ``s`` are ``floor(min(sys_gbps, gpu_gbps) / s)`` (on an x86 AMD host the search
    keeps every channel the same ring, ``sameChannels``, which changes nothing with one link each way):
    :func:`search_channels` on ``min(sys_gbps, gpu_gbps)``. When the link is slower than the slowest
    speed of the architecture's ``search_speeds_intra`` no ring fits and ncclTopoCompute "falls back to
    simple order": one channel in GPU order, graph bandwidth 0.1 GB/s (None here). With more CPU nodes
    (NUMA nodes per socket, NPS > 1) NCCL links every pair alike; the two-node form is what is modelled.

    Examples: an AMD host (AMD_BW 16) with Blackwell GPUs: None (speeds down to 18); with Hopper GPUs
    (speeds ... 20, 15, 12, 11, 6): (1, 15.0); two Sapphire Rapids (SRP_QPI_BW 22) with Hopper GPUs:
    (2, 11.0), 2 x 11 = 22 beating 1 x 20.

    Raises
    ------
    ConfigError
        A non-positive ``sys_gbps`` or ``gpu_gbps``.
    """
    if not (sys_gbps > 0 and gpu_gbps > 0):
        raise ConfigError(f"sys_gbps, gpu_gbps: must be > 0, got {sys_gbps}, {gpu_gbps}")
    cap = min(sys_gbps, gpu_gbps)
    if cap < release.search_speeds_intra[tuning_arch(release, arch)][-1]:
        return None
    return search_channels(release, arch, gpu_gbps=cap)


def comm_channels(
    release: NcclRelease,
    arch: str,
    *,
    search_channels: int,
    nnodes: int,
    ring_bw_intra_gbps: float,
    min_nchannels: int | None = None,
    max_nchannels: int | None = None,
) -> int:
    """The communicator's channel count after ``src/graph/connect.cc`` (ncclTopoPostset).

    ``n = min(max_channels, 2 * search_channels)`` (every searched ring is duplicated); then on more than one
    node, for an architecture in ``channel_doubling_archs`` with ``ring_bw_intra_gbps > 45`` and
    ``n < channel_doubling_below``, ``n = min(max_channels, 2 n)``; then ``NCCL_MAX_NCHANNELS`` caps it and
    ``NCCL_MIN_NCHANNELS`` raises it (both bounded by ``max_channels``).

    Parameters
    ----------
    search_channels : int
        Channels the topology search found (``NCCL INFO ... nChannels`` of the ring graph, typically 8-16 on
        an NVSwitch node, 2-4 on PCIe).
    ring_bw_intra_gbps : float
        The ring graph's per-channel intra-node bandwidth, GB/s (``bwIntra``).

    Raises
    ------
    ConfigError
        A non-positive channel count.
    """
    if search_channels < 1:
        raise ConfigError(f"search_channels: must be >= 1, got {search_channels}")
    n = min(release.max_channels, 2 * search_channels)
    row = tuning_arch(release, arch)
    doubles = nnodes > 1 and row in release.channel_doubling_archs and ring_bw_intra_gbps > 45.0
    if doubles and n < release.channel_doubling_below:
        n = min(release.max_channels, 2 * n)
    if max_nchannels is not None:
        n = min(n, max(1, max_nchannels))
    if min_nchannels is not None:
        n = max(n, min(release.max_channels, min_nchannels))
    return n


def _check_applies(release: NcclRelease, collective: str, algorithm: str) -> tuple[Collective, Algorithm]:
    try:
        coll = Collective(collective)
    except ValueError:
        raise ConfigError(
            f"collective: unknown {collective!r}; known: {', '.join(c.value for c in Collective)}"
        ) from None
    try:
        algo = Algorithm(algorithm)
    except ValueError:
        raise ConfigError(
            f"algorithm: unknown {algorithm!r}; known: {', '.join(a.value for a in Algorithm)}"
        ) from None
    if algo not in release.algorithms[coll]:
        allowed = ", ".join(release.algorithms[coll])
        raise ConfigError(f"algorithm: NCCL {release.version} has no {algo} {coll}; it costs {allowed}")
    return coll, algo


def nvls_channels(release: NcclRelease, arch: str, *, nnodes: int, local_gpus: int, nic_gbps: float) -> int:
    """NVLS / NVLS-tree channels (``src/transport/nvls.cc``).

    Hopper: ``nvls_channels["hopper"]``; Blackwell: the single-node or multi-node figure, and from 2.30 on
    multi-node the first ``blackwell_nvls_tree_channels`` row whose ``nodes`` (if given) equals ``nnodes``,
    ``min_nic_gbps <= nic_gbps`` and ``local_gpus <= max_local_gpus`` (if given).
    """
    row = tuning_arch(release, arch)
    if row != "blackwell":
        return release.nvls_channels["hopper"]
    if nnodes == 1:
        return release.nvls_channels["blackwell_single_node"]
    for rule in release.blackwell_nvls_tree_channels:
        if rule.nodes is not None and rule.nodes != nnodes:
            continue
        if nic_gbps < rule.min_nic_gbps:
            continue
        if rule.max_local_gpus is not None and local_gpus > rule.max_local_gpus:
            continue
        return rule.channels
    return release.nvls_channels["blackwell_multi_node"]


def nvls_tree_start_chunk(
    release: NcclRelease,
    arch: str,
    *,
    nnodes: int,
    local_gpus: int,
    nic_gbps: float,
    near_nic: bool,
    env: tuple[int | None, int | None] = (None, None),
) -> int:
    """The chunk NVLS-tree starts from before enqueue.cc shrinks it, bytes:
    ``min(comm->nvlsChunkSize, comm->nvlsTreeMaxChunkSize)`` (``enqueue.cc`` calcCollChunking).

    Blackwell across nodes (``nvls.cc`` ncclNvlsTreeSm100Tuning, 2.30 on): the first
    ``blackwell_nvls_tree_chunks`` branch that matches sets both; otherwise (or no branch) the release's
    ``nvls_tree_chunk_bytes``, capped at ``nvls_tree_chunk_bytes_from_4_nodes`` from 4 nodes
    (``NCCL_NVLSTREE_MAX_CHUNKSIZE`` default -2). GB200 NVL72 racks (72 GPUs, 400 Gb/s = 50 GB/s NICs) on
    2.30: 2 racks 64 KiB (ppn >= 16); from 3 racks 128 KiB, 64 KiB when the NIC is within PXB.

    ``env``: ``NCCL_NVLS_CHUNKSIZE`` / ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` where stated (the user's, or those
    aws-ofi-nccl sets), each replacing its default or Blackwell tuning (``nvls.cc`` ncclNvlsTuning: "User
    overrides take priority over tuning"). aws-ofi-nccl's 512 KiB on 2 x p5 (NCCL 2.30.3): 512 KiB, not 128.

    >>> r = nccl_release("2.30.3")
    >>> [nvls_tree_start_chunk(r, "hopper", nnodes=n, local_gpus=8, nic_gbps=12.5, near_nic=True,
    ...     env=e) for n, e in ((2, (None, None)), (4, (None, None)), (4, (2**19, 2**19)))]
    [131072, 65536, 524288]
    """
    env_chunk, env_tree_max = env
    chunk, tree_max = env_chunk or release.nvls_tree_chunk_bytes, env_tree_max
    if nnodes > 1 and tuning_arch(release, arch) == "blackwell":
        for rule in release.blackwell_nvls_tree_chunks:
            if rule.matches(nnodes=nnodes, nic_gbps=nic_gbps, local_gpus=local_gpus, near_nic=near_nic):
                return min(env_chunk or rule.chunk, env_tree_max or rule.tree_max_chunk)
    cap = release.nvls_tree_chunk_bytes_from_4_nodes
    if tree_max is None:
        tree_max = cap if cap is not None and nnodes >= 4 else chunk
    return min(chunk, tree_max)


def nvls_heads(release: NcclRelease, *, local_gpus: int, nics_per_node: int = 0) -> int:
    """NVLS heads per node: ``min(NCCL_MAX_NVLS_ARITY, local_gpus)`` on one node (search.cc forces every
    GPU to be a head), and across nodes also at most one head per NIC (search.cc: the NVLS search only
    pairs NICs with GPUs to find the heads); at least 1."""
    heads = min(release.nvls_max_arity, local_gpus)
    if nics_per_node > 0:
        heads = min(heads, nics_per_node)
    return max(1, heads)


def nvls_search(release: NcclRelease, arch: str, *, gpu_gbps: float, local_gpus: int) -> tuple[int, float]:
    """The one-node NVLS graph NCCL's topology search finds: ``(channels, GB/s per channel)``.

    ``src/graph/search.cc`` (2.18-2.30): on one node the NVLS search must find ``h`` channels, one per head
    (``minChannels = maxChannels = min(NCCL_MAX_NVLS_ARITY, nGPUs)``, :func:`nvls_heads`), and
    ``ncclTopoSearchTryNvls`` books, per channel of speed ``s``, ``2 s`` on the head's NVSwitch link and
    ``s`` on every other GPU's, each way; over the ``h`` channels a head's link carries ``(h + 1) s``. So
    the speed is the highest of ``search_speeds_intra`` with::

        (h + 1) s <= gpu_gbps

    (``ncclTopoDupChannels`` leaves NVLS graphs alone). 8 x H100 (370.8 GB/s): 8 x 40; 4 of them: 4 x 60
    (the first speed, 5 x 60 = 300); 6: 6 x 50.
    """
    heads = nvls_heads(release, local_gpus=local_gpus)
    speeds = release.search_speeds_intra[tuning_arch(release, arch)]
    fits = [s for s in speeds if (heads + 1) * s <= gpu_gbps]
    return heads, fits[0] if fits else speeds[-1]


def nvls_tuner_algbw(release: NcclRelease, arch: str, *, gpu_gbps: float, local_gpus: int) -> float:
    """What NCCL's tuner prices a one-node NVLS all_reduce at, as an algbw, GB/s.

    ``src/graph/tuning.cc`` on the :func:`nvls_search` graph (``h`` channels of ``s`` GB/s), ``n`` ranks:

        2.28.3 on:  h s e (h - 1)/h x 2 x n / (2 (n - 1))   (nvlsEfficiency e; "AllReduce pipelines two
                    operations"; busBw x nRanks / nsteps)
        2.18-2.27:  h s r                                   (``nvls_tuner_ratio`` r: .75 on 2.18.1, 5/6 on)

    8 x H100 on 2.29.2: 8 x 40 x 0.85 x 7/8 x 8/7 = 272.0; 4 of them: 4 x 60 x 0.85 = 204.0.

    Raises
    ------
    ConfigError
        When the release records neither figure for ``arch`` (:func:`nvls_tuner_figure`): its tuner has no
        NVLS price, so NVLS does not apply there (:func:`nvls_support`), rather than running at 0 GB/s.
    """
    figure = nvls_tuner_figure(release, arch)
    if figure is None:
        raise ConfigError(
            f"nccl version {release.version}: no NVLS bandwidth figure for {arch} (nvlsEfficiency or the "
            "NVLS tuner ratio): NVLS does not apply to this release"
        )
    heads, speed = nvls_search(release, arch, gpu_gbps=gpu_gbps, local_gpus=local_gpus)
    if release.nvls_efficiency is None:
        return heads * speed * figure
    eff = figure
    n = max(2, local_gpus)
    return heads * speed * eff * (heads - 1) / heads * n / (n - 1)


def nvls_gather_tuner_algbw(release: NcclRelease, arch: str, *, gpu_gbps: float, local_gpus: int) -> float:
    """What NCCL's tuner prices a one-node NVLS all_gather or reduce_scatter at, as an algbw, GB/s.

    ``src/graph/tuning.cc`` on the :func:`nvls_search` graph (``h`` channels of ``s`` GB/s), ``n`` ranks::

        2.28.3 on:    h s e (h - 1)/h (n - 1)/n   (intraBw x (ppn - 1)/ppn, no "AllReduce pipelines two
                      operations" doubling, and no busBw-to-algBw ratio for a non-ring all_gather)
        2.23.4-2.27:  h s                         (``nvls_gather_tuner_ratio`` 1: the ratio is skipped)
        2.19.1-2.22:  h s 5/6                     (``nvls_gather_tuner_ratio``: the ratio every NVLS
                      collective gets, as :func:`nvls_tuner_algbw`)

    0 where the release costs no NVLS all_gather (2.18). 8 x H100 on 2.29.2: 8 x 40 x 0.85 x 7/8 x 7/8 =
    208.25; on 2.23.4: 320; on 2.19.3: 266.7; all below the ring's 370.8 x 8/7 = 423.8, so NCCL never picks
    NVLS for them on its own there.
    """
    heads, speed = nvls_search(release, arch, gpu_gbps=gpu_gbps, local_gpus=local_gpus)
    if release.nvls_efficiency is None:
        return heads * speed * (release.nvls_gather_tuner_ratio or 0.0)
    eff = release.nvls_efficiency.get(tuning_arch(release, arch), 0.0)
    n = max(2, local_gpus)
    return heads * speed * eff * (heads - 1) / heads * (n - 1) / n


def nvls_tuner_figure(release: NcclRelease, arch: str) -> float | None:
    """The figure NCCL's tuner prices NVLS with on ``arch``: ``nvlsEfficiency[compCapIndex]`` (tuning.cc
    from 2.28.3), else the ratio ``nvls_tuner_ratio`` (2.18-2.27); None when the release records neither
    (NCCL before 2.17.1 had no NVLS algorithm in tuning.cc at all).

    >>> [nvls_tuner_figure(nccl_release(v), "hopper") for v in ("2.29.2", "2.18.1")]
    [0.85, 0.75]
    """
    if release.nvls_efficiency is not None:
        try:
            return release.nvls_efficiency.get(tuning_arch(release, arch))
        except ConfigError:
            return None
    return release.nvls_tuner_ratio


def nvls_tree_net_steps(release: NcclRelease, nnodes: int) -> int:
    """How many NET latencies NCCL's tuner charges an NVLS-tree all_reduce across ``nnodes`` nodes
    (tuning.cc): ``2 x log2i(nnodes)`` (floor of log2) from 2.19.1, ``2 x (nnodes - 1)`` on 2.18
    (``release.nvls_tree_latency_steps``: ``log2`` / ``linear``); 0 on one node."""
    if nnodes <= 1:
        return 0
    if release.nvls_tree_latency_steps == "linear":
        return 2 * (nnodes - 1)
    return 2 * (nnodes.bit_length() - 1)


def ring_backup(release: NcclRelease, *, all_reduce: bool) -> bool:
    """Whether NCCL runs ring for a collective that ``NCCL_ALGO`` leaves no algorithm
    (``release.ring_backup``): ``not_all_reduce`` (2.17-2.18 tuning.cc: "Never disable ring for
    non-allreduce operations"; an all_reduce fails, enqueue.cc "no algorithm/protocol available"),
    ``any`` (2.19.1-2.23.4 tuning.cc: "at least set ring algo available", ring back at
    ``comm->ringbdw``), ``none`` (2.24.3 on: the error)."""
    return release.ring_backup == "any" or (release.ring_backup == "not_all_reduce" and not all_reduce)


def nvls_chunk_bytes(
    release: NcclRelease,
    algorithm: str,
    nbytes: float,
    *,
    channels: int,
    heads: int,
    nnodes: int = 1,
    start: int | None = None,
    nvls_gbps: float | None = None,
) -> int:
    """The chunk one (channel, NVLS head) moves per pipeline step, bytes (``enqueue.cc``
    calcCollChunking).

    NVLS starts at ``start`` (``NCCL_NVLS_CHUNKSIZE`` where stated) or ``nvls_chunk_bytes``, capped at
    ``nvls_multi_node_chunk_bytes`` (32 KiB, NCCL 2.19.3 on) across nodes when NCCL's tuner prices NVLS
    all_reduce below ``nvls_multi_node_chunk_below_gbps`` (150): ``nvls_gbps`` is that figure,
    ``comm->bandwidths[ncclFuncAllReduce][NCCL_ALGO_NVLS] [NCCL_PROTO_SIMPLE]``, the tuner's NVLS algbw in
    GB/s (None: not known, no cap). NVLS-tree starts at ``nvls_tree_chunk_bytes``, capped at
    ``nvls_tree_chunk_bytes_from_4_nodes`` from 4 nodes on, or at ``start`` where given
    (:func:`nvls_tree_start_chunk`). Then, for each ``(k, c)`` of the algorithm's shrink list in order:
    ``chunk = c`` while ``nbytes < k x channels x heads x chunk`` and ``chunk > c``.

    Raises
    ------
    ConfigError
        An algorithm other than ``nvls`` / ``nvls_tree``, or non-positive channels or heads.

    Examples
    --------
    8 x H100 on one node, 16 channels x 8 heads: 512 MiB < 64 x 128 x 128 KiB = 1 GiB runs 64 KiB chunks.

    >>> r = nccl_release("2.30.3")
    >>> nvls_chunk_bytes(r, "nvls", 2**29, channels=16, heads=8), nvls_chunk_bytes(r, "nvls", 2**30,
    ...     channels=16, heads=8)
    (65536, 131072)

    Across 2 nodes with NVLS priced at 120 GB/s: 32 KiB from the start.

    >>> nvls_chunk_bytes(r, "nvls", 2**30, channels=16, heads=8, nnodes=2, nvls_gbps=120.0)
    32768
    """
    if algorithm not in (Algorithm.NVLS, Algorithm.NVLS_TREE):
        raise ConfigError(f"algorithm: NVLS chunking applies to nvls and nvls_tree, not {algorithm!r}")
    if channels < 1 or heads < 1:
        raise ConfigError(f"nvls chunking: channels and heads must be >= 1, got {channels} and {heads}")
    if algorithm == Algorithm.NVLS:
        chunk, shrink = _nvls_start_chunk(release, nnodes, nvls_gbps, start), release.nvls_chunk_shrink
    else:
        chunk, shrink = release.nvls_tree_chunk_bytes, release.nvls_tree_chunk_shrink
        cap = release.nvls_tree_chunk_bytes_from_4_nodes
        if start is not None:
            chunk = start
        elif cap is not None and nnodes >= 4:
            chunk = min(chunk, cap)
    ops = channels * heads
    for k, c in shrink:
        if nbytes < k * ops * chunk and chunk > c:
            chunk = c
    return chunk


def _nvls_start_chunk(release: NcclRelease, nnodes: int, nvls_gbps: float | None, env: int | None) -> int:
    """NVLS's chunk before the size shrinks it: ``nvls_chunk_bytes`` (``env``: ``NCCL_NVLS_CHUNKSIZE``
    where stated), or across nodes the release's ``nvls_multi_node_chunk_bytes`` when the tuner's NVLS algbw
    ``nvls_gbps`` is below its threshold."""
    chunk, small, below = (
        env or release.nvls_chunk_bytes,
        release.nvls_multi_node_chunk_bytes,
        release.nvls_multi_node_chunk_below_gbps,
    )
    if nnodes > 1 and small is not None and below is not None and nvls_gbps is not None and nvls_gbps < below:
        return min(chunk, small)
    return chunk


def channels_for(
    release: NcclRelease,
    collective: str,
    algorithm: str,
    nbytes: float,
    nranks: int,
    arch: str,
    *,
    comm_channels: int,
    protocol: str = "Simple",
    nnodes: int = 1,
    nic_gbps: float = 0.0,
    max_threads: int | None = None,
) -> int:
    """Channels one call runs on: NCCL's ``enqueue.cc`` (topoGetAlgoInfo) channel reduction for small sizes.

    Ring, tree and PAT: ``nc = clamp(floor(nbytes / (nt * threshold)), 1, comm_channels)``, i.e. NCCL drops
    one channel at a time while ``nbytes < nc * nt * threshold``; ``nt`` is ``max_threads[protocol]`` and
    ``threshold`` is ``thread_threshold[protocol]`` (times ``nranks`` for ring LL). NVLS and NVLS-tree use
    :func:`nvls_channels` whatever the size (flat NVLS across nodes: at most ``comm_channels``).

    Parameters
    ----------
    nbytes : float
        The call's size in bytes as NCCL counts it (per-rank buffer of all_reduce; the full output of
        all_gather, ``nranks`` x the per-rank input).
    comm_channels : int
        The communicator's channels (:func:`comm_channels`).
    max_threads : int, optional
        Threads per channel (default: the release's ``max_threads[protocol]``; NCCL uses 256 for Simple on
        machines whose ring is no faster than PCIe Gen3, tuning.cc ``simpleDefaultThreads``).

    Raises
    ------
    ConfigError
        An unknown collective, algorithm or protocol, or an algorithm the release does not cost for it
        (CollNet channel tuning depends on the switch's heads and is not modelled).
    """
    _coll, algo = _check_applies(release, collective, algorithm)
    proto = _protocol(protocol)
    if nbytes < 0:
        raise ConfigError(f"nbytes: must be >= 0, got {nbytes}")
    if algo in (Algorithm.NVLS, Algorithm.NVLS_TREE):
        nc = nvls_channels(
            release, arch, nnodes=nnodes, local_gpus=max(1, nranks // nnodes), nic_gbps=nic_gbps
        )
        return min(nc, comm_channels) if (algo is Algorithm.NVLS and nnodes > 1) else nc
    if algo in (Algorithm.COLLNET_DIRECT, Algorithm.COLLNET_CHAIN):
        raise ConfigError(f"algorithm: channels of {algo} depend on the CollNet heads; not modelled")
    unit = channel_unit_bytes(release, algo, proto, nranks, max_threads=max_threads)
    return max(1, min(comm_channels, math.floor(nbytes / unit)))


def channel_unit_bytes(
    release: NcclRelease, algorithm: str, protocol: str, nranks: int, *, max_threads: int | None = None
) -> float:
    """Bytes each channel of a ring, tree or PAT call must have before ``enqueue.cc`` keeps it:
    ``nt x thread_threshold[protocol]`` (x ``nranks`` for ring LL), ``nt`` = ``max_threads`` or the
    release's ``max_threads[protocol]`` (:func:`channels_for` floors ``nbytes`` by it)."""
    algo, proto = Algorithm(algorithm), _protocol(protocol)
    nt = max_threads or release.max_threads[proto]
    per_rank = algo is Algorithm.RING and proto is Protocol.LL
    return float(nt * release.thread_threshold[proto] * (nranks if per_rank else 1))


def _protocol(name: str) -> Protocol:
    for p in Protocol:
        if p.value.lower() == str(name).strip().lower():
            return p
    raise ConfigError(f"protocol: unknown {name!r}; known: {', '.join(p.value for p in Protocol)}")


@dataclass(frozen=True)
class ProtocolCost:
    """NCCL's model of one (algorithm, protocol), as ``ncclTopoGetAlgoTime`` evaluates it for a size.

    ``time(n) = latency_s x (plateau_factor if n >= plateau_min_bytes else 1)
    + n / (algbw_bytes_per_s x correction[log2(n / 64)])``, the correction applying while the index is
    inside the table (tree all_reduce: 64 B .. 256 MiB) and 1 elsewhere.
    """

    protocol: Protocol
    latency_s: float
    algbw_bytes_per_s: float
    correction: tuple[float, ...] = ()
    plateau_factor: float = 1.0
    plateau_min_bytes: float = math.inf

    def time_s(self, nbytes: float) -> float:
        """Modelled time of an ``nbytes`` call, seconds."""
        lat = self.latency_s * (self.plateau_factor if nbytes >= self.plateau_min_bytes else 1.0)
        bw = self.algbw_bytes_per_s
        if nbytes >= 64 and self.correction:
            idx = int(math.log2(nbytes / 64))
            if idx < len(self.correction):
                bw *= self.correction[idx]
        return lat + nbytes / bw


def protocol_costs(
    release: NcclRelease,
    collective: str,
    algorithm: str,
    *,
    nranks: int,
    nnodes: int,
    arch: str,
    channels: int,
    bw_intra_gbps: float,
    bw_inter_gbps: float,
    intra_hw: str = "nvlink",
    cpu: str = "intel",
) -> dict[Protocol, ProtocolCost]:
    """NCCL's per-protocol latency and bandwidth for ring or tree (``src/graph/tuning.cc`` ncclTopoTuneModel).

    With ``bw = bw_intra_gbps if nnodes <= 2 else bw_inter_gbps`` (per channel, GB/s), ``busBw = channels x
    bw`` refined per protocol, ``c`` the node column (1, 2, >= 3 nodes) and ``ppn = nranks / nnodes``:

    * ring LL: ``min(ll_max_bw, busBw x f_LL)`` (``f_LL`` = ``ring_ll_bw_factor``, or
      ``ring_ll_bw_factor_single_node_other`` on one node for collectives other than all_reduce/reduce);
      ring LL128: ``min(busBw x f, channels x per_channel_max_ring_ll128_bw)``, ``f`` = 0.92 or the
      one-GPU-per-node factor when ``ppn < 2``; ring Simple: ``busBw``. algbw = busBw x nranks / nsteps,
      nsteps = 2(n-1) all_reduce, n-1 all_gather/reduce_scatter, n otherwise.
    * tree (all_reduce): ``busBw' = min(busBw x tree_bw_factor, channels x per_channel_max_tree_bw)``; LL:
      ``min(busBw' / tree_ll_bw_divisor, ll_max_bw)``; LL128: ``min(busBw' x tree_ll128_bw_factor[one node |
      more], channels x per_channel_max_tree_ll128_bw)``; algbw = busBw / 2.

    Latency: ring ``base + (nsteps - nInter) x max(intra, netOverhead) + nInter x net`` with ``nInter`` =
    2(nnodes-1) all_reduce, nnodes-1 otherwise, ``netOverhead`` from ``net_overhead_us[cpu]`` (x3 for
    Simple, 0 on one node); tree ``base + 2 ((ppn-1) intra + log2(nnodes) net)``. ``intra`` and ``net`` are
    ``hw_latency_us[intra_hw]`` and ``hw_latency_us["net"]`` of the algorithm and protocol. The topology
    graph's own ``latencyInter`` (0 on InfiniBand) is not included.

    Size effects (:meth:`ProtocolCost.time_s`): tree all_reduce bandwidth x ``tree_correction_factor``;
    ring Simple all_reduce across nodes: latency x ``ring_plateau_latency_factor[arch]`` once
    ``nbytes >= ring_plateau_min_bytes_per_channel_rank x channels x nranks``.

    ``ll_max_bw``'s row is the architecture on one node, the CPU vendor on more (AMD: the ``ampere`` row,
    others: the ``volta`` row), as tuning.cc indexes it.

    Returns
    -------
    dict
        Protocol -> :class:`ProtocolCost` (seconds, bytes/s of algbw).

    Raises
    ------
    ConfigError
        An algorithm other than ring or tree, a collective tree does not serve, or bad counts.
    """
    t = _tune_inputs(
        release,
        collective,
        algorithm,
        nranks=nranks,
        nnodes=nnodes,
        arch=arch,
        channels=channels,
        bw_gbps=bw_intra_gbps if nnodes <= 2 else bw_inter_gbps,
        intra_hw=intra_hw,
        cpu=cpu,
    )
    cost = _ring_cost if t.algo is Algorithm.RING else _tree_cost
    return {proto: cost(t, proto) for proto in Protocol}


@dataclass(frozen=True)
class _TuneInputs:
    """What :func:`protocol_costs`'s per-protocol formulas read: the release, the collective and algorithm,
    the architecture row and node column of the release's tables, ``ll_max_bw`` (GB/s), ranks per node,
    the bus bandwidth (channels x per-channel GB/s), the ring's steps and inter-node steps, the network
    overhead (us) and the intra-node hardware (``nvlink`` or ``pci``)."""

    release: NcclRelease
    coll: Collective
    algo: Algorithm
    row: str
    col: int
    ll_max: float
    ppn: float
    bus: float
    channels: int
    nranks: int
    nnodes: int
    nsteps: int
    n_inter: int
    overhead: float
    intra_hw: str

    def latencies_us(self, proto: Protocol) -> tuple[float, float, float]:
        """(intra-node hop, network hop, base) latencies of the algorithm and ``proto``, us."""
        i = _PROTO_INDEX[proto]
        r = self.release
        return (
            r.hw_latency_us[self.intra_hw][self.algo][i],
            r.hw_latency_us["net"][self.algo][i],
            r.base_latency_us[self.algo][i],
        )


def _tune_inputs(
    release: NcclRelease,
    collective: str,
    algorithm: str,
    *,
    nranks: int,
    nnodes: int,
    arch: str,
    channels: int,
    bw_gbps: float,
    intra_hw: str,
    cpu: str,
) -> _TuneInputs:
    """Check :func:`protocol_costs`'s arguments and gather what its formulas read (``bw_gbps``: the
    per-channel bandwidth, GB/s). Raises ConfigError as :func:`protocol_costs`."""
    coll, algo = _check_applies(release, collective, algorithm)
    if algo not in (Algorithm.RING, Algorithm.TREE):
        raise ConfigError(f"algorithm: protocol costs are modelled for ring and tree, not {algo}")
    if nranks < 2 or nnodes < 1 or nranks < nnodes or channels < 1:
        raise ConfigError(
            "nranks/nnodes/channels: need 2 <= nranks, 1 <= nnodes <= nranks, channels >= 1; "
            f"got {nranks}/{nnodes}/{channels}"
        )
    if intra_hw not in ("nvlink", "pci"):
        raise ConfigError(f"intra_hw: unknown {intra_hw!r}; known: nvlink, pci")
    row = tuning_arch(release, arch)
    col = _node_column(nnodes)
    ll_row = row if nnodes == 1 else ("ampere" if cpu == "amd" else "volta")
    if coll is Collective.ALL_REDUCE:
        nsteps, n_inter = 2 * (nranks - 1), 2 * (nnodes - 1)
    elif coll in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
        nsteps, n_inter = nranks - 1, nnodes - 1
    else:
        nsteps, n_inter = nranks, nnodes - 1
    overhead = 0.0 if nnodes == 1 else release.net_overhead_us.get(cpu, release.net_overhead_us["other"])
    return _TuneInputs(
        release,
        coll,
        algo,
        row,
        col,
        release.ll_max_bw[ll_row][col],
        nranks / nnodes,
        channels * bw_gbps,
        channels,
        nranks,
        nnodes,
        nsteps,
        n_inter,
        overhead,
        intra_hw,
    )


def _ring_cost(t: _TuneInputs, proto: Protocol) -> ProtocolCost:
    """Ring's cost under ``proto`` (formulas: :func:`protocol_costs`), with the Simple all_reduce latency
    plateau across nodes."""
    release = t.release
    intra, net, base = t.latencies_us(proto)
    if proto is Protocol.LL:
        f = release.ring_ll_bw_factor
        if t.nnodes == 1 and t.coll not in (Collective.ALL_REDUCE, Collective.REDUCE):
            f = release.ring_ll_bw_factor_single_node_other
        bus_p = min(t.ll_max, t.bus * f)
    elif proto is Protocol.LL128:
        f = release.ring_ll128_bw_factor_one_gpu_per_node if t.ppn < 2 else release.ring_ll128_bw_factor
        bus_p = min(t.bus * f, t.channels * release.per_channel_max_ring_ll128_bw[t.row][t.col])
    else:
        bus_p = t.bus
    algbw = bus_p * t.nranks / t.nsteps
    step = max(intra, t.overhead * (3 if proto is Protocol.SIMPLE else 1))
    lat = base + (t.nsteps - t.n_inter) * step + t.n_inter * net
    plateau = proto is Protocol.SIMPLE and t.nnodes > 1 and t.coll is Collective.ALL_REDUCE
    return ProtocolCost(
        proto,
        lat * 1e-6,
        algbw * 1e9,
        plateau_factor=release.ring_plateau_latency_factor[t.row] if plateau else 1.0,
        plateau_min_bytes=(
            release.ring_plateau_min_bytes_per_channel_rank * t.channels * t.nranks if plateau else math.inf
        ),
    )


def _tree_cost(t: _TuneInputs, proto: Protocol) -> ProtocolCost:
    """Tree's (all_reduce) cost under ``proto`` (formulas: :func:`protocol_costs`), with the release's
    size correction of the bandwidth."""
    release = t.release
    intra, net, base = t.latencies_us(proto)
    tree = min(t.bus * release.tree_bw_factor, t.channels * release.per_channel_max_tree_bw[t.row][t.col])
    if proto is Protocol.LL:
        bus_p = min(tree / release.tree_ll_bw_divisor, t.ll_max)
    elif proto is Protocol.LL128:
        # 2.18.1 caps tree LL128 with its single per-channel LL128 figure (tuning.cc:173)
        cap = release.per_channel_max_tree_ll128_bw or release.per_channel_max_ring_ll128_bw
        f = release.tree_ll128_bw_factor[0 if t.nnodes == 1 else 1]
        bus_p = min(tree * f, t.channels * cap[t.row][t.col])
    else:
        bus_p = tree
    algbw = bus_p * 0.5
    lat = base + 2 * ((t.ppn - 1) * intra + math.log2(t.nnodes) * net)
    return ProtocolCost(proto, lat * 1e-6, algbw * 1e9, release.tree_correction_factor[proto])


def protocol_for(
    release: NcclRelease,
    collective: str,
    algorithm: str,
    nbytes: float,
    *,
    allowed: Iterable[str] = ("LL", "LL128", "Simple"),
    **topology: Any,
) -> Protocol:
    """The protocol NCCL picks for an ``nbytes`` call: the allowed one of least :func:`protocol_costs` time.

    ``topology`` holds :func:`protocol_costs`'s keyword arguments. On equal times the earlier of LL, LL128,
    Simple wins, as NCCL's loop keeps the first minimum. ``allowed`` expresses ``NCCL_PROTO`` (and LL128
    being off by default where NCCL does not enable it).

    Raises
    ------
    ConfigError
        No allowed protocol, or :func:`protocol_costs`'s errors.
    """
    wanted = [_protocol(p) for p in allowed]
    if not wanted:
        raise ConfigError("protocol: NCCL_PROTO leaves no protocol allowed")
    costs = protocol_costs(release, collective, algorithm, **topology)
    return min((p for p in Protocol if p in wanted), key=lambda p: costs[p].time_s(nbytes))


def algorithm_for(
    release: NcclRelease,
    collective: str,
    nbytes: float,
    *,
    algorithms: Iterable[str] = ("ring", "tree"),
    allowed: Iterable[str] = ("LL", "LL128", "Simple"),
    **topology: Any,
) -> tuple[Algorithm, Protocol]:
    """Ring or tree, and the protocol: the pair of least :func:`protocol_costs` time NCCL would pick.

    ``algorithms`` and ``allowed`` express ``NCCL_ALGO`` / ``NCCL_PROTO``; algorithms the release does not
    cost for ``collective`` (tree outside all_reduce) are skipped. Ties go to the earlier pair in NCCL's
    loop order (tree before ring; LL, LL128, Simple).

    Raises
    ------
    ConfigError
        Nothing left to choose from, or :func:`protocol_costs`'s errors.
    """
    wanted = [_protocol(p) for p in allowed]
    names = {Algorithm(a) for a in algorithms}
    cands = [
        a
        for a in (Algorithm.TREE, Algorithm.RING)
        if a in names and a in release.algorithms[Collective(collective)]
    ]
    best: tuple[float, Algorithm, Protocol] | None = None
    for algo in cands:
        costs = protocol_costs(release, collective, algo, **topology)
        for p in Protocol:
            if p in wanted and (best is None or costs[p].time_s(nbytes) < best[0]):
                best = (costs[p].time_s(nbytes), algo, p)
    if best is None:
        raise ConfigError(
            f"algorithm: nothing left for {collective} among {sorted(names)} x {sorted(wanted)}"
        )
    return best[1], best[2]


@dataclass(frozen=True)
class NvlsSupport:
    """Whether NCCL enables NVLS (in-switch reduction, one node or with CollNet) and NVLS-tree, and why."""

    nvls: bool
    nvls_tree: bool
    reason: str


def nvls_support(
    release: NcclRelease,
    arch: str,
    *,
    nnodes: int,
    local_gpus: int,
    nvswitch: bool = True,
    collnet: bool = False,
    env: Mapping[str, str] | None = None,
) -> NvlsSupport:
    """NVLS / NVLS-tree enablement (``src/transport/nvls.cc`` ncclNvlsInit, ``src/graph/tuning.cc``).

    NVLS needs multicast objects: an architecture in ``nvls_archs`` on an NVSwitch domain, at least
    ``nvls_min_local_gpus`` GPUs on the node and ``NCCL_NVLS_ENABLE`` not 0. Flat NVLS then runs on one
    node, or across nodes only with CollNet (SHARP) when ``nvls_multi_node_requires_collnet``; NVLS-tree
    runs on ``nvls_tree_min_nodes`` nodes or more.
    """
    env = env or {}
    if str(env.get("NCCL_NVLS_ENABLE", "")).strip() == "0":
        return NvlsSupport(False, False, "NCCL_NVLS_ENABLE=0")
    try:
        row = tuning_arch(release, arch)
    except ConfigError:
        return NvlsSupport(False, False, f"{arch} is not an NVIDIA GPU NCCL tunes")
    if row not in release.nvls_archs:
        return NvlsSupport(False, False, f"{row} GPUs have no NVLink multicast")
    if nvls_tuner_figure(release, row) is None:
        why = (
            f"NCCL {release.version} records no NVLS bandwidth figure for {row}: its tuner has no NVLS price"
        )
        return NvlsSupport(False, False, why)
    if not nvswitch:
        return NvlsSupport(False, False, "no NVSwitch: no multicast object")
    if local_gpus < release.nvls_min_local_gpus:
        return NvlsSupport(
            False,
            False,
            f"{local_gpus} GPUs per node < {release.nvls_min_local_gpus} (NCCL {release.version})",
        )
    flat = nnodes == 1 or collnet or not release.nvls_multi_node_requires_collnet
    tree = nnodes >= release.nvls_tree_min_nodes
    why = "one node: NVLS" if nnodes == 1 else ("NVLS-tree" + (" and NVLS with CollNet" if flat else ""))
    return NvlsSupport(flat, tree, why)
