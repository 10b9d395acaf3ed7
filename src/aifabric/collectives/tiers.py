"""What the cost functions know about a cluster: per-GPU bandwidths per tier and NCCL's tuner constants.

:class:`TierModel` holds, per GPU and per direction (bytes/s), the scale-up bandwidth ``B_i`` and the
scale-out bandwidth ``B_o`` of a cluster, with the facts NCCL's tuner reads (architecture, CPU vendor,
NVLS) and the NCCL release whose tuning tables apply (:func:`aifabric.catalog.nccl.nccl_release`: latencies
per tier, algorithm and protocol; protocol efficiencies; LL bandwidth caps; read from NVIDIA/nccl's
``src/graph/tuning.cc`` at each release tag, restated in ``reference/nccl-cost-model.md`` sec. 2), or, for an
AMD GPU whose run states an RCCL release, RCCL's own tables (:func:`library_release`).
Bandwidths per GPU, per direction:

- scale-up ``B_i``: NCCL's per-link NVLink constant x links (18 x 20.6 = 370.8 GB/s on H100), or the PCIe
  figure (12 GB/s Gen3, / 1.2 when peer traffic crosses an Intel CPU);
- scale-out ``B_o``: NIC line rate x payload efficiency (400 Gb/s x 0.983 = 49.15 GB/s for ConnectX-7),
  scaled for a non-native transport, whose extra per-hop latency joins ``extra_inter_latency_s``
  (:attr:`aifabric.cluster.spec.ClusterSpec.nic_effective_bytes_per_s`); a GPU's share of a NIC that
  ``gpus_per_nic`` GPUs share is ``1 / gpus_per_nic`` of it, so a node's GPUs together have its
  ``nics_per_node`` NICs (:func:`domain_nic_bytes_per_s`).

With ``efficiency="line_rate"`` latencies and protocol overheads are dropped and line rates used: the
idealised figures of textbooks and of the seed lesson. With ``convention="bidirectional"`` a vendor's
scale-up figure that adds both directions (NVLink "900 GB/s") is used as if it were per direction, as the
lesson does; the default ``per_direction`` halves it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from functools import cache, cached_property, lru_cache, wraps
from typing import Any, NamedTuple, ParamSpec, TypedDict, TypeVar

from aifabric.catalog.archs import gpu_architecture
from aifabric.catalog.aws_ofi_nccl import efa_instance, nccl_reads, ofi_nccl_release, plugin_settings
from aifabric.catalog.loader import SliceRules, catalog_generation
from aifabric.catalog.nccl import (
    Algorithm,
    NcclRelease,
    Protocol,
    channel_unit_bytes,
    channels_for,
    comm_channels,
    nccl_release,
    search_channels,
    tuning_arch,
    version_tuple,
)
from aifabric.catalog.nccl_mesh import MeshRings, mesh_ring_search, mesh_search_applies
from aifabric.catalog.rccl import rccl_release, rccl_release_versions
from aifabric.catalog.transport import PathType, TransportSpec, net_ll128_allowed, nic_path_class, transport
from aifabric.cluster.dragonfly import dragonfly_shape
from aifabric.cluster.spec import ClusterSpec
from aifabric.cluster.tpu_slice import domain_torus_dims
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.nccl_trees import dtree_max_edges
from aifabric.errors import ConfigError

__all__ = [
    "CallChannels",
    "Protocol",
    "TierModel",
    "base_latency_s",
    "call_bandwidth",
    "call_channels",
    "ll_channel_rate",
    "channel_share",
    "compute_capability",
    "channel_share_note",
    "domain_nic_bytes_per_s",
    "efa_plugin_settings",
    "transport_image_settings",
    "NVLS_CHUNK_VARIABLES",
    "runs_efa_plugin",
    "tree_nic_traffic",
    "tuner_tree_nic_traffic",
    "hw_latency_s",
    "library_release",
    "tables_note",
    "net_extra_latency_s",
    "line_rate_caps",
    "net_latency_row",
    "net_overhead_s",
    "net_stage_cap",
    "p2p_latency_s",
    "rendezvous_s",
    "nic_stream_factor",
    "parse_protocol",
    "protocol_bandwidth",
    "ring_exit_gpus",
    "ring_graph_cap",
    "ring_plateau_latency_factor",
    "mesh_ring_bytes_per_s",
    "mesh_rings",
    "scaleup_bytes_per_s",
    "tier_model",
    "tree_correction",
    "tree_graph_cap",
]


def parse_protocol(value: str | Protocol) -> Protocol:
    """``ll``, ``LL128``, ``simple``... as NCCL's :class:`~aifabric.catalog.nccl.Protocol`.

    Raises ValueError naming the value and the known names.
    """
    if isinstance(value, Protocol):
        return value
    for member in Protocol:
        if member.value.lower() == str(value).strip().lower():
            return member
    raise ValueError(f"protocol: unknown {value!r}; known: {', '.join(p.value for p in Protocol)}")


_T = TypeVar("_T")

_COLUMN = {Protocol.LL: 0, Protocol.LL128: 1, Protocol.SIMPLE: 2}

#: NCCL's per-step network overhead is tripled for Simple (tuning.cc: ``netOverhead * 3`` for Simple).
_SIMPLE_NET_OVERHEAD_FACTOR = 3.0
#: enqueue.cc (topoGetAlgoInfo, 2.18.1-2.30.7): a call on one channel still under ``nt x threshold`` halves
#: its threads ``while (nt % 128 == 0)``, then ``nt = nt/WARP_SIZE < 3 ? 3*WARP_SIZE : nt``
_HALVABLE_THREADS = 128
_MIN_WARPS = 3
_WARP_THREADS = 32
#: Bytes of one flagged store of LL and LL128, data and flag (prims_ll.h ``storeLL``: st.volatile.v4 of a
#: union ncclLLFifoLine; prims_ll128.h ``store128``): a step's network message is its data x 16 / d
_STORE_BYTES = 16


#: The libraries as logs and explanations print them.
_LIBRARY_NAMES = {"nccl": "NCCL", "rccl": "RCCL"}


def tables_note(version: str, release: NcclRelease, library: str = "nccl") -> str:
    """Which tables price a run stating ``version`` on a GPU whose library is ``library``, given the
    ``release`` :func:`library_release` chose: ``priced with NCCL 2.26.2's tuning tables (recorded at
    2.25.1, the last release at or below it that changed them)``. The catalogue records a release only where
    a recorded fact changed (nccl_releases.yaml: 2.25.1, then 2.27.3), so 2.26.2 runs 2.25.1's tables. An
    RCCL GPU priced with NCCL's tables says why (its release is of a series RCCL's tables were not read for).

    >>> tables_note("2.26.2", nccl_release("2.26.2"))
    "priced with NCCL 2.26.2's tuning tables (recorded at 2.25.1, the last release at or below it that changed them)"
    """  # noqa: E501  (the note verbatim)
    note = f"priced with {_LIBRARY_NAMES[release.library]} {version}'s tuning tables"
    if version_tuple(version) != release.version_tuple:
        note += f" (recorded at {release.version}, the last release at or below it that changed them)"
    if library == "rccl" and release.library == "nccl":
        note += (f": RCCL's own tables are recorded for {', '.join(rccl_release_versions())} only, and RCCL "
                 "keeps the version numbers of the NCCL it is built on")  # fmt: skip
    return note


def library_release(library: str, version: str | None) -> NcclRelease:
    """The tuning tables a run uses: RCCL's release tables (:func:`aifabric.catalog.rccl.rccl_release`) for
    a GPU whose library is ``rccl`` and a stated RCCL ``version`` of a recorded series (2.18-2.26: ROCm
    6.1-7.0), else NCCL's (:func:`aifabric.catalog.nccl.nccl_release`; None: the newest recorded).

    Without a stated version an AMD GPU keeps NCCL's newest tables on its Hopper row. RCCL's own tables
    bring its MSCCL all-pairs all_reduce kernels (:mod:`aifabric.collectives.msccl`), which time 1 KiB-
    256 KiB on 8 x MI300X within 9.2 % of hisohara/ai-scripts, but its 8 MiB Simple kernel 20 % fast
    (67.9 vs 84.78 us) and, for one process driving 8 GPUs (no MSCCL), its ring/Simple 18 % slow at 8 MiB
    (case 31: 132.1 vs 161.14 GB/s busbw), where NCCL's Hopper-row ring is within 4 %.
    """
    if library == "rccl" and version is not None and _recorded_rccl_series(version):
        return rccl_release(version)
    return nccl_release(version)


def _recorded_rccl_series(version: str) -> bool:
    """Whether ``version`` is of a minor series at or below the newest recorded RCCL release's."""
    return version_tuple(version)[:2] <= rccl_release().version_tuple[:2]


def _tuning_row(release: NcclRelease, arch: str) -> str:
    """NCCL's architecture row for ``arch``; a GPU NCCL does not tune uses the Hopper row: AMD CDNA under
    RCCL, whose tuning.cc takes ``compCapIndex`` as NCCL does (``minCompCap >= 90``: Hopper) and HIP reports
    compute capability 9.x for gfx9 GPUs (rccl_releases.yaml), and a TPU (XLA: the row is not read)."""
    try:
        return tuning_arch(release, arch)
    except ConfigError:
        return tuning_arch(release, "hopper")


@dataclass(frozen=True)
class TierModel:
    """Per-GPU, per-direction bandwidths (bytes/s) and the facts the tuner needs about a cluster.

    Build with :func:`tier_model`. ``calibration`` multipliers/latencies (see :mod:`aifabric.discovery`)
    are already applied.
    """

    intra_bytes_per_s: float
    nic_bytes_per_s: float
    intra_kind: str  # "nvlink", "pci" or "torus"
    arch: str
    cpu_vendor: str
    nvls: bool
    nvls_efficiency: float
    leaf_oversubscription: float
    spine_oversubscription: float
    efficiency: str  # "nccl" or "line_rate"
    convention: str  # "per_direction" or "bidirectional"
    latency_scale: float = 1.0
    intra_scale: float = 1.0  # a calibration's scale-up factor, in intra_bytes_per_s (and in SHM, nccl_env)
    extra_inter_latency_s: float = 0.0
    #: What the receive flush after each Simple network step costs, seconds (:func:`net_extra_latency_s`);
    #: 0 where NCCL does not flush (Hopper on, no GPUDirect RDMA, a native NET/IB transport)
    flush_latency_s: float = 0.0
    #: The network provider's rendezvous (``transports.yaml`` ``rendezvous``): one more round trip, seconds,
    #: on each network step whose message is longer than ``net_eager_max_bytes`` (:func:`rendezvous_s`)
    net_rendezvous_s: float = 0.0
    net_eager_max_bytes: float = math.inf
    #: Which recorded provider release's eager limit prices a stated one outside them ("" inside or unstated)
    net_eager_note: str = ""
    torus_dims: tuple[int, ...] = ()
    torus_slice: tuple[int, ...] = ()  # the slice the cluster names (scale_up.slice); () = by rank count
    torus_twisted: bool = False  # the slice wired as a twisted torus (scale_up.twisted)
    slice_rules: SliceRules | None = None  # the TPU generation's slice shapes (catalogue ``slices``)
    torus_declared: bool = False  # the torus bandwidth is the file's scale_up.bandwidth (tpu_slice.chip_axes)
    hop_latency_s: float = 0.0
    release: NcclRelease = field(default_factory=nccl_release)  # newest; read on first use, not at import
    nccl_version: str = ""  # the release the user stated ("" = newest); ``release`` is the table it uses
    tuning_row: str = "hopper"
    compute_capability: int = 0  # the GPU's, 100 = 10.0 (:func:`compute_capability`); 0: none recorded
    library: str = "nccl"  # the GPU's collective library (catalogue ``collective_library``: nccl, rccl, ...)
    channels: tuple[int, int] = (1, 1)  # NCCL's communicator channels: (one domain, several domains)
    collnet: bool = False  # CollNet (SHARP) on: NCCL_COLLNET_ENABLE=1, SHARP switches (nccl_env.env_tiers)
    default_channels: tuple[int, int] = (1, 1)  # the same without NCCL_MIN/MAX_NCHANNELS
    graph_channels: tuple[int, int] = (1, 1)  # NCCL's ring (= tree) graph channels (:func:`_ring_graph`)
    graph_channel_gbps: tuple[float, float] = (math.inf, math.inf)  # GB/s of each (its bwIntra, bwInter)
    mesh_links: int = 0  # links per GPU of a full-mesh scale-up (catalogue topology full_mesh); 0: a switch
    mesh_link_gbps: float = 0.0  # NCCL's GB/s of one such link (a peer's bundle), what its ring search reads
    ll_channels: tuple[int, int] = (1, 1)  # the GPU's channels whatever its NICs (:func:`_ll_channels`)
    nics_per_gpu: int = 0  # scale-out NICs per GPU (0: no scale-out network)
    nic_line_gbps: float = 0.0  # one NIC's line rate, GB/s per direction (what NCCL reads as its speed)
    gpus_per_nic: int = 1  # GPUs sharing one NIC (AWS p4d: 2); nic_bytes_per_s is one GPU's share
    nic_near: bool = True  # GPU-NIC path within PXB (NCCL's typeInter <= PATH_PXB: scale_out.nic_path)
    #: NCCL's tuner leaves LL128 on across nodes over this GPU-NIC path (tuning.cc typeInter rule, the
    #: release's class of ``scale_out.nic_path``: :func:`~aifabric.catalog.transport.net_ll128_allowed`)
    net_ll128: bool = True
    node_nics: int = 0  # scale-out NICs of one node (ClusterSpec.nics_per_node)
    nic_transport: TransportSpec | None = None  # the transport whose streams nic_stream_factor counts
    nic_qps: int = 1  # NCCL_IB_QPS_PER_CONNECTION
    nic_hop_bytes_per_s: float = math.inf  # the link a GPU reaches its NIC over, if it caps it (PCIe-only)
    #: What one GPU's NICs carry before its own PCIe link bounds them (their streams, staging and the
    #: calibration counted), and that link's bulk-DMA rate (:attr:`~aifabric.cluster.spec.ClusterSpec.
    #: nic_host_link_bytes_per_s`; inf under ``line_rate``): ``nic_bytes_per_s`` is the smaller
    nic_own_bytes_per_s: float = math.inf
    nic_host_link_bytes_per_s: float = math.inf
    #: The fraction of its GPUDirect rate a network stage keeps when its bytes stage in host memory (GDR
    #: off: 0.667, ``host-staging``); set with ``nic_bytes_per_s`` by :func:`~aifabric.collectives.nccl_env.
    #: env_tiers`, read by the per-channel caps of stages that cross the NICs (:func:`net_stage_cap`)
    net_staging: float = 1.0
    #: The transport GPUs of a node use and why, when it is not the scale-up link's own P2P at its own rate
    #: ("": P2P; P2P bounded across CPU sockets says so, nccl_env.socket_p2p_tiers)
    intra_transport: str = ""
    #: GPUs behind one PCIe switch whose uplink SHM traffic crosses (scale_up.gpus_per_switch); 1: none
    shm_switch_gpus: int = 1
    #: ``NCCL_NVLS_CHUNKSIZE`` / ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` NCCL reads, bytes: the user's, else those
    #: aws-ofi-nccl sets on an EFA cluster (:func:`efa_plugin_settings`); None: NCCL's default
    nvls_chunks: tuple[int | None, int | None] = (None, None)

    @property
    def scale_up_words(self) -> str:
        """``"scale-up"``, with the transport in brackets when it is not P2P (explanations' wording)."""
        return f"scale-up ({self.intra_transport})" if self.intra_transport else "scale-up"

    def nics_of(self, gpus: int) -> int:
        """Scale-out NICs of ``gpus`` whole GPUs of a node: ``gpus x nics_per_gpu / gpus_per_nic``, at least
        one where there is a network (8 x 1 / 2 = 4 on AWS p4d)."""
        if self.nics_per_gpu < 1:
            return 0
        return max(1, gpus * self.nics_per_gpu // self.gpus_per_nic)

    @cached_property
    def tables_notes(self) -> tuple[str, ...]:
        """:func:`tables_note` where the stated release is not the recorded one whose tables price it
        (2.26.2: 2.25.1's) or an RCCL GPU runs NCCL's tables, and which recorded libfabric release prices
        a stated one outside them (:attr:`net_eager_note`); empty for the newest tables or a recorded
        release stated as such. Cached: the formula engine closes every explanation with it."""
        eager = (self.net_eager_note,) if self.net_eager_note else ()
        if not self.nccl_version:
            return eager
        unrecorded = version_tuple(self.nccl_version) != self.release.version_tuple
        fork_on_nccl = self.library == "rccl" and self.release.library == "nccl"
        return (
            (tables_note(self.nccl_version, self.release, self.library), *eager)
            if unrecorded or fork_on_nccl
            else eager
        )

    @property
    def nccl(self) -> bool:
        """True when NCCL's efficiencies and latencies apply (``efficiency="nccl"``)."""
        return self.efficiency == "nccl"

    @property
    def ll128_default(self) -> bool:
        """Whether the library turns LL128 on by default on this GPU (on NVLink-class paths,
        :func:`aifabric.engines.formula._protocols`): NCCL on the compute capabilities its release lists
        (tuning.cc ``switch (minCompCap)``: 7.0/8.0/9.0 to v2.24, 10.0 and 12.0 added in v2.25-v2.26, so not
        B300/GB300's 10.3; every one from 7.0 since v2.27.3), RCCL only on the architectures its release
        lists (tuning.cc: gfx90a with a tuned topology model; not gfx942). A GPU no architecture records
        (``compute_capability`` 0) keeps NCCL's default on."""
        archs, caps = self.release.ll128_archs, self.release.ll128_compute_capabilities
        cc = self.compute_capability
        return (archs is None or self.arch.lower() in archs) and (caps is None or not cc or cc in caps)

    @cached_property
    def _memo(self) -> dict[Hashable, Any]:
        # Optimisation: the size-independent terms cost functions derive from this model (see memo()).
        return {}

    def memo(self, key: Hashable, build: Callable[[], _T]) -> _T:
        """``build()``, computed once per ``key`` for this model and kept.

        Optimisation for planners, which time one model at many sizes: a cost function keeps here what
        depends only on the model and its key (latencies, protocol bandwidth, channel plan), never
        anything that depends on the message size. The model is frozen, so what is kept never goes
        stale; :func:`dataclasses.replace` makes a new model with an empty memo. ``key`` must name the
        cost function and every argument ``build`` reads besides the model.
        """
        memo = self._memo
        try:
            return memo[key]
        except KeyError:
            value = memo[key] = build()
            return value


def _finite(field: str, value: float, *, positive: bool = False) -> None:
    """Refuse a NaN, infinite or negative figure (zero too when ``positive``); ConfigError names ``field``."""
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ConfigError(f"{field}: must be a finite number {'> 0' if positive else '>= 0'}, got {value!r}")


_P = ParamSpec("_P")


def _shared_per_catalogue(build: Callable[_P, TierModel]) -> Callable[_P, TierModel]:
    """``build`` with its models shared per (catalogue generation, arguments): a catalogue change
    (:func:`aifabric.catalog.loader.catalog_generation`) may change any figure of a spec, so it starts
    afresh; arguments that cannot be hashed (a mutable calibration object) build a new model each time.

    Optimisation: hashing a spec (a pydantic model hashes its nested parts on every call) was the largest
    cost of a call that did not pass ``tiers=``; the models of the last few positional arguments
    (the spec) are found again by their identity first (``recent``, which keeps those arguments alive so
    that their ids stay theirs), then by value (``shared``)."""

    @lru_cache(maxsize=512)
    def shared(generation: int, args: tuple[Any, ...], options: tuple[tuple[str, Any], ...]) -> TierModel:
        return build(*args, **dict(options))

    recent: dict[Hashable, tuple[tuple[Any, ...], TierModel]] = {}

    @wraps(build)
    def tier_model(*args: _P.args, **kwargs: _P.kwargs) -> TierModel:
        generation = catalog_generation()
        options = tuple(kwargs.items())
        try:
            key = (generation, tuple(map(id, args)), options)
            hit = recent.get(key)
            if hit is not None:
                return hit[1]
            model = shared(generation, args, options)
        except TypeError:  # an unhashable argument (build's own errors are ConfigErrors)
            return build(*args, **kwargs)
        if len(recent) >= _RECENT_MODELS:
            recent.clear()
        recent[key] = (args, model)
        return model

    return tier_model


#: Specs whose models :func:`_shared_per_catalogue` finds by identity.
_RECENT_MODELS = 64


def _check_hardware(calibration: object | None, spec: ClusterSpec) -> None:
    """Refuse a profile fitted on another GPU or NIC than the cluster's (its ``gpu``/``nic`` catalogue keys,
    empty when not recorded): its scales describe that hardware's links, not these.

    Raises
    ------
    ConfigError
        Naming the profile, the hardware it was fitted on and the cluster's.
    """
    if calibration is None:
        return
    name = getattr(calibration, "name", "calibration")
    gpu = str(getattr(calibration, "gpu", "") or "")
    if gpu and gpu != spec.accelerator:
        raise ConfigError(f"calibration {name!r}: fitted on gpu {gpu}, this cluster has {spec.accelerator}; "
                          "refit it with 'aifabric calibrate' on this hardware")  # fmt: skip
    nic = str(getattr(calibration, "nic", "") or "")
    has = spec.scale_out.nic if spec.scale_out is not None else nic
    if nic and nic != has:
        raise ConfigError(f"calibration {name!r}: fitted on nic {nic}, this cluster has {has}; "
                          "refit it with 'aifabric calibrate' on this hardware")  # fmt: skip


def _clos_ratios(spec: ClusterSpec) -> tuple[float, float]:
    """A Clos's down:up ratios at the leaf and the spine as asked (1 where the tier is not built)."""
    so = spec.scale_out
    assert so is not None
    os_ = list(so.oversubscription) + [1.0, 1.0]
    return (os_[0] if so.tiers >= 2 else 1.0, os_[1] if so.tiers >= 3 else 1.0)


def _dragonfly_ratios(spec: ClusterSpec) -> tuple[float, float]:
    """A dragonfly's global taper under its routing as the leaf's ratio (a group is its scalable unit:
    :func:`aifabric.collectives.communicator.Communicator.contiguous`); no spine tier."""
    return dragonfly_shape(spec).oversubscription, 1.0


#: The scale-out's (leaf, spine) down:up ratios the formula engine bounds collectives with, by topology.
_FABRIC_RATIOS = {"clos": _clos_ratios, "dragonfly": _dragonfly_ratios}


def _tier_bandwidths(spec: ClusterSpec, convention: str, efficiency: str) -> tuple[float, float]:
    """Per-GPU, per-direction scale-up and NIC bandwidths (bytes/s) that ``efficiency`` reads: NCCL's
    effective constants (``"nccl"``) or line rates (``"line_rate"``); the scale-up figure doubled under
    ``convention="bidirectional"`` (the seed lesson's arithmetic). Before any calibration or NIC stream
    factor (:func:`tier_model`).

    Raises ConfigError naming ``convention`` or ``efficiency`` when it is not one of those names.
    """
    if convention not in ("per_direction", "bidirectional"):
        raise ConfigError(f"convention: unknown {convention!r}; use per_direction or bidirectional")
    if efficiency not in ("nccl", "line_rate"):
        raise ConfigError(f"efficiency: unknown {efficiency!r}; use nccl or line_rate")
    if efficiency == "nccl":
        intra = spec.scaleup_effective_bytes_per_s
        nic = spec.nic_payload_bytes_per_s  # the GPU's PCIe link bounds it after the NIC's own factors
    else:
        intra = spec.scaleup_line_rate_bytes_per_s
        nic = spec.nic_line_rate_bytes_per_s
    if convention == "bidirectional":
        intra *= 2
    return intra, nic


class _Calibration(NamedTuple):
    """A fitted profile's factors (:func:`_calibration_factors`): scale-up, scale-out and latency scales
    (dimensionless) and the extra inter-domain latency (s)."""

    intra_scale: float
    inter_scale: float
    latency_scale: float
    extra_inter_latency_s: float


def _calibration_factors(
    calibration: object | None, spec: ClusterSpec, convention: str, efficiency: str
) -> _Calibration:
    """The factors of ``calibration`` (1, 1, 1 and 0 s without one; a missing attribute reads as its
    neutral value), checked: fitted on the hardware of ``spec`` (:func:`_check_hardware`), scales finite
    (bandwidth scales > 0), the latency offset finite (it may be slightly negative); the bandwidth scales
    then capped at line rate (:func:`line_rate_caps`).

    Raises ConfigError naming the field.
    """
    factors = _Calibration(1.0, 1.0, 1.0, 0.0)
    if calibration is not None:
        factors = _Calibration(
            float(getattr(calibration, "intra_scale", 1.0)),
            float(getattr(calibration, "inter_scale", 1.0)),
            float(getattr(calibration, "latency_scale", 1.0)),
            float(getattr(calibration, "extra_inter_latency_s", 0.0)),
        )
    _check_hardware(calibration, spec)
    _finite("calibration.intra_scale", factors.intra_scale, positive=True)
    _finite("calibration.inter_scale", factors.inter_scale, positive=True)
    _finite("calibration.latency_scale", factors.latency_scale)
    extra = factors.extra_inter_latency_s
    if not math.isfinite(extra):  # a fitted offset: may be slightly negative, never NaN or infinite
        raise ConfigError(f"calibration.extra_inter_latency: must be a finite number, got {extra!r}")
    intra_cap, inter_cap = line_rate_caps(spec, convention, efficiency)
    return factors._replace(
        intra_scale=min(factors.intra_scale, intra_cap), inter_scale=min(factors.inter_scale, inter_cap)
    )


def line_rate_caps(spec: ClusterSpec, convention: str, efficiency: str) -> tuple[float, float]:
    """The largest scale-up and scale-out scales a profile may apply on ``spec``: line rate over the
    bandwidth the scale multiplies (:func:`_tier_bandwidths`), never below 1.

    A scale above it makes a link faster than its wire: ``intra_scale: 5`` on H100's NVLink 4 (NCCL's
    370.8 GB/s per direction) would carry 1,854 GB/s over 450 GB/s of links (18 x 25 GB/s per direction,
    NVIDIA H100 datasheet: 900 GB/s both ways). It is the box :func:`aifabric.discovery.fitting.
    fit_calibration` fits in (its ``_bounds``: line / effective, at least 1), enforced where the profile is
    applied, so a hand-edited profile cannot leave it either; under ``efficiency="line_rate"`` the
    figures already are line rates and a scale above 1 is cut to 1.

    >>> from aifabric.cluster.presets import preset
    >>> round(line_rate_caps(preset("dgx-h100-superpod", nodes=1), "per_direction", "nccl")[0], 4)
    1.2136
    """
    intra, nic = _tier_bandwidths(spec, convention, efficiency)
    intra_line, nic_line = _tier_bandwidths(spec, convention, "line_rate")
    inter_cap = max(1.0, nic_line / nic) if nic > 0 else math.inf
    return max(1.0, intra_line / intra), inter_cap


@_shared_per_catalogue
def tier_model(
    spec: ClusterSpec,
    *,
    convention: str = "per_direction",
    efficiency: str = "nccl",
    calibration: Any | None = None,
    nccl_version: str | None = None,
    min_nchannels: int | None = None,
    max_nchannels: int | None = None,
    ib_qps_per_connection: int | None = None,
    nvls_chunks: tuple[int | None, int | None] = (None, None),
) -> TierModel:
    """The :class:`TierModel` of ``spec`` under a bandwidth convention and efficiency.

    Parameters
    ----------
    convention : {"per_direction", "bidirectional"}
        How to read the vendor's scale-up figure: halve it (physically right), or use it as is (the
        seed lesson's arithmetic).
    efficiency : {"nccl", "line_rate"}
        ``nccl``: NCCL's effective per-link constants, payload efficiency, latencies and protocols;
        ``line_rate``: raw line rates, no latency.
    calibration : object, optional
        Anything with ``intra_scale``, ``inter_scale``, ``latency_scale`` and ``extra_inter_latency_s``
        attributes (a fitted profile), applied on top.
    nccl_version : str, optional
        The NCCL release whose tuning tables apply (``"2.21.5"``, ``"2.21"``); default: the newest recorded
        (:func:`aifabric.catalog.nccl.nccl_release`).
    min_nchannels, max_nchannels : int, optional
        ``NCCL_MIN_NCHANNELS`` / ``NCCL_MAX_NCHANNELS``: bounds on the communicator's channels
        (:func:`aifabric.catalog.nccl.comm_channels`), which set the channels a call runs on
        (:func:`call_bandwidth`).
    ib_qps_per_connection : int, optional
        ``NCCL_IB_QPS_PER_CONNECTION`` (NCCL's default 1): the streams each NIC carries
        (:func:`nic_stream_factor`).
    nvls_chunks : (int or None, int or None)
        ``NCCL_NVLS_CHUNKSIZE`` / ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` the user states; unstated ones are those
        aws-ofi-nccl sets on an EFA cluster (:func:`efa_plugin_settings`), each only where the release
        reads it.

    Raises
    ------
    ConfigError
        If ``convention`` or ``efficiency`` is not one of the names above, ``nccl_version`` is malformed
        or older than the recorded releases, or ``calibration`` was fitted on another GPU or NIC
        (:func:`_check_hardware`).

    Notes
    -----
    Optimisation (:func:`_shared_per_catalogue`): the model of one (spec, arguments) is built once per
    catalogue generation and shared, with its :meth:`TierModel.memo`, by every call that asks for it
    (an unhashable ``calibration`` is built each time); ``tier_model.__wrapped__`` builds a new one.
    """
    intra, nic = _tier_bandwidths(spec, convention, efficiency)
    link = spec.scaleup_link
    so = spec.scale_out
    leaf_os, spine_os = _FABRIC_RATIOS[so.topology](spec) if so else (1.0, 1.0)
    acc = spec.accelerator_spec
    release = library_release(acc.collective_library, nccl_version)
    factors = _calibration_factors(calibration, spec, convention, efficiency)
    intra_scale, inter_scale, lat_scale, extra = factors
    _finite("scale_up.bandwidth", intra * intra_scale, positive=True)
    _finite("scale_out.nic_speed", nic * inter_scale)
    row = _tuning_row(release, acc.arch)
    channels = _comm_channels(spec, release, row, min_nchannels, max_nchannels)
    search = _comm_channels(spec, release, row, None, None)
    graph = _ring_graph(spec, release, row)
    nic, net, qps = _nic_streams(
        spec, release, nic, efficiency, ib_qps_per_connection, (channels[1], search[1])
    )
    return TierModel(
        intra_bytes_per_s=intra * intra_scale,
        **_nic_fields(spec, nic * inter_scale, efficiency, inter_scale),
        intra_kind={"pcie": "pci", "torus": "torus"}.get(spec.scale_up.kind, "nvlink"),
        arch=acc.arch,
        compute_capability=compute_capability(spec),
        cpu_vendor=spec.cpu_vendor,
        nvls=bool(acc.nvls and link.in_switch_reduction and spec.scale_up.kind == "nvswitch"),
        nvls_efficiency=link.nvls_efficiency or 0.0,  # None only without in_switch_reduction: nvls False
        leaf_oversubscription=leaf_os,
        spine_oversubscription=spine_os,
        efficiency=efficiency,
        convention=convention,
        latency_scale=lat_scale,
        intra_scale=intra_scale,
        extra_inter_latency_s=extra + (spec.transport_extra_latency_s if efficiency == "nccl" else 0.0),
        flush_latency_s=_flush_latency_s(spec) * lat_scale if efficiency == "nccl" else 0.0,
        **_rendezvous_fields(spec, lat_scale if efficiency == "nccl" else 0.0),
        **_torus_fields(spec),
        hop_latency_s=link.hop_latency_s,
        release=release,
        nccl_version=nccl_version or "",
        tuning_row=row,
        library=acc.collective_library,
        channels=channels,
        default_channels=search,
        graph_channels=(graph[0][0], graph[1][0]),
        graph_channel_gbps=(graph[0][1], graph[1][1]),
        ll_channels=_ll_channels(spec, release, row),
        mesh_links=spec.mesh_links_per_gpu,
        mesh_link_gbps=link.nccl_effective_per_link_bytes_per_s / 1e9 if spec.mesh_links_per_gpu else 0.0,
        nics_per_gpu=so.nic_ports_per_gpu if so else 0,
        nic_line_gbps=spec.nic_speed_bytes_per_s / 1e9,
        gpus_per_nic=so.gpus_per_nic if so else 1,
        **_nic_path_fields(spec, release),
        node_nics=spec.nics_per_node,
        nic_transport=net,
        nic_qps=qps,
        nic_hop_bytes_per_s=_nic_hop_bytes_per_s(spec, convention, efficiency) * intra_scale,
        intra_transport=_intra_transport(spec),
        shm_switch_gpus=(spec.scale_up.gpus_per_switch or 1) if _intra_transport(spec) else 1,
        nvls_chunks=_nvls_chunks(spec, release, nvls_chunks, nccl_version),
    )


def _nic_streams(
    spec: ClusterSpec,
    release: NcclRelease,
    nic: float,
    efficiency: str,
    ib_qps_per_connection: int | None,
    channels: tuple[int, int],
) -> tuple[float, TransportSpec | None, int]:
    """A NIC's payload rate (bytes/s) once its streams are counted, its transport (None under
    ``line_rate`` or without a scale-out) and the QPs per connection: the user's
    ``NCCL_IB_QPS_PER_CONNECTION``, else what the transport's image sets
    (:func:`transport_image_settings`), else NCCL's default 1. ``channels``: the call's and the search's
    inter-node channels (:func:`nic_stream_factor`)."""
    image = transport_image_settings(spec, release)
    qps = ib_qps_per_connection or int(image.get("NCCL_IB_QPS_PER_CONNECTION", 1))
    so = spec.scale_out
    if efficiency != "nccl" or so is None:
        return nic, None, qps
    net = transport(so.transport_key)
    return nic * nic_stream_factor(net, channels[0], spec.nics_per_node, qps, channels[1]), net, qps


class _NicPathFields(TypedDict):
    """:class:`TierModel`'s facts about the GPU-NIC path (:func:`_nic_path_fields`)."""

    nic_near: bool
    net_ll128: bool


def _nic_path_fields(spec: ClusterSpec, release: NcclRelease) -> _NicPathFields:
    """Whether ``spec``'s GPU-NIC path is within PXB in ``release`` (NCCL's ``near_nic``) and whether its
    tuner keeps LL128 across nodes on it (:func:`~aifabric.catalog.transport.net_ll128_allowed`): a NIC
    behind a Grace CPU is PHB to v2.26 (LL128 off), P2C from v2.27.3 (on, Hopper and later)."""
    so = spec.scale_out
    if so is None:
        return {"nic_near": True, "net_ll128": True}
    path = nic_path_class(so.nic_path, release)
    return {
        "nic_near": path <= PathType.PXB,
        "net_ll128": net_ll128_allowed(path, compute_capability(spec)),
    }


#: Compute capability from which NCCL skips the flush after GPUDirect RDMA receives (paths.cc
#: ncclTopoNeedFlush, v2.16.5 on: "Flush is required on Ampere and earlier", cudaCompCap < 90).
_FLUSHLESS_SM = 90


def _flush_latency_s(spec: ClusterSpec) -> float:
    """:attr:`TierModel.flush_latency_s` before calibration: the transport's extra latency over NET/IB
    (:attr:`~aifabric.cluster.spec.ClusterSpec.transport_extra_latency_s`) where NCCL flushes a Simple
    receive, else 0.

    NCCL's network proxy, after a Simple receive lands in GPU memory through GPUDirect RDMA, asks the
    plugin to flush it (``src/transport/net.cc`` recvProxyProgress: ``p == NCCL_PROTO_SIMPLE && needFlush``
    -> ``ncclNet->iflush``, a read through the NIC whose completion it waits for) on a GPU before Hopper
    (``ncclTopoNeedFlush``: ``cudaCompCap < 90``, unless NCCL_NET_FORCE_FLUSH=1). The flush is one more
    plugin operation per network step, which NCCL's own tuner prices the same way (``tuning.cc``: "Also add
    the flush extra latency", ``interLat += latencyInter`` for Simple, ``latencyInter`` the plugin's
    latency, 0 on NET/IB: its loopback read on the receiving NIC costs nothing NCCL prices, and neither
    does the model). No GDR (sockets, a path beyond PXB): the bytes land in host memory, no flush.
    """
    so = spec.scale_out
    arch = gpu_architecture(spec.accelerator_spec.arch)
    if so is None or arch is None or arch.sm >= _FLUSHLESS_SM:
        return 0.0
    if transport(so.transport_key).gdr == "none" or so.nic_path not in ("PIX", "PXB"):
        return 0.0
    return spec.transport_extra_latency_s


def compute_capability(spec: ClusterSpec) -> int:
    """The CUDA compute capability of ``spec``'s GPU (100 = 10.0): the accelerator's own where the
    catalogue gives one (B300, GB300: 103), else its architecture's ``sm`` (gpu_architectures.yaml); 0 for a
    part no architecture records (TPU, AMD CDNA).

    >>> from aifabric.cluster.presets import preset
    >>> compute_capability(preset("h100-ib-2node"))
    90
    """
    acc = spec.accelerator_spec
    arch = gpu_architecture(acc.arch)
    return acc.compute_capability or (arch.sm if arch is not None else 0)


class _NicRates(TypedDict):
    """:class:`TierModel`'s NIC rates (:func:`_nic_fields`), bytes/s per GPU."""

    nic_bytes_per_s: float
    nic_own_bytes_per_s: float
    nic_host_link_bytes_per_s: float


class _RendezvousFields(TypedDict, total=False):
    net_rendezvous_s: float
    net_eager_max_bytes: float
    net_eager_note: str


def _rendezvous_fields(spec: ClusterSpec, scale: float) -> _RendezvousFields:
    """:attr:`TierModel.net_rendezvous_s` and ``net_eager_max_bytes`` of the scale-out's transport at the
    libfabric release it names (``scale_out.libfabric_version``); none without a rendezvous table. ``scale``
    is the calibration's latency factor (0 under ``line_rate``: no latency)."""
    so = spec.scale_out
    rdzv = transport(so.transport_key).rendezvous if so is not None else None
    if rdzv is None or so is None or scale == 0.0:
        return {}
    eager = rdzv.eager_max_at(so.libfabric_version)
    note = rdzv.eager_note(so.libfabric_version) or ""
    return {
        "net_rendezvous_s": rdzv.round_trip_s * scale,
        "net_eager_max_bytes": eager,
        "net_eager_note": note,
    }


def _nic_fields(spec: ClusterSpec, own: float, efficiency: str, inter_scale: float) -> _NicRates:
    """:class:`TierModel`'s NIC rates, bytes/s per GPU: what its NICs carry (``own``: payload, streams and
    the calibration's ``inter_scale``), the bulk-DMA rate of the GPU's PCIe link to them, scaled alike
    (:attr:`~aifabric.cluster.spec.ClusterSpec.nic_host_link_bytes_per_s`; unbounded under
    ``line_rate``), and the smaller, ``nic_bytes_per_s``."""
    host = spec.nic_host_link_bytes_per_s * inter_scale if efficiency == "nccl" else math.inf
    return _NicRates(nic_bytes_per_s=min(own, host), nic_own_bytes_per_s=own, nic_host_link_bytes_per_s=host)


#: The NCCL variables of :attr:`TierModel.nvls_chunks`, in its order.
NVLS_CHUNK_VARIABLES = ("NCCL_NVLS_CHUNKSIZE", "NCCL_NVLSTREE_MAX_CHUNKSIZE")


def efa_plugin_settings(
    spec: ClusterSpec, release: NcclRelease, nccl_version: str | None = None
) -> dict[str, str]:
    """The NCCL variables aws-ofi-nccl sets on ``spec``'s instances that NCCL ``release`` reads (the run's
    own ``nccl_version`` where stated in full: the plugin compares NCCL's ncclGetVersion)
    (:func:`aifabric.catalog.aws_ofi_nccl.plugin_settings`): its scale-out runs ``efa-srd``, on the instance
    type it names or is recognised as (``scale_out.instance_type``), with the plugin release it names
    (``scale_out.ofi_nccl_version``; default the newest recorded). ``{}`` elsewhere.

    >>> from aifabric.cluster.spec import ClusterSpec
    >>> p5 = ClusterSpec.model_validate({"accelerator": "h100-sxm", "nodes": 2, "scale_out": {"nic": "efa-v2",
    ...     "nics_per_gpu": 4, "planes": 4, "transport": "efa-srd", "fabric": "ethernet",
    ...     "switch": "spectrum-4-sn5600-400g"}})
    >>> efa_plugin_settings(p5, nccl_release())["NCCL_NVLSTREE_MAX_CHUNKSIZE"]
    '524288'
    """
    so = spec.scale_out
    if so is None or not runs_efa_plugin(spec) or release.library != "nccl":
        return {}
    run = nccl_version if nccl_version and nccl_version.count(".") >= 2 else release.version
    key = (spec.accelerator, so.nic, so.instance_type, so.ofi_nccl_version, run)
    return dict(_plugin_settings(*key))


def transport_image_settings(spec: ClusterSpec, release: NcclRelease) -> dict[str, str]:
    """The NCCL variables the image of ``spec``'s scale-out transport sets (``transports.yaml``
    ``image_env``: Google's gIB image) that NCCL ``release`` reads; ``{}`` for other transports and RCCL.
    The tier model takes ``NCCL_IB_QPS_PER_CONNECTION`` and ``NCCL_NVLS_CHUNKSIZE`` from them where the
    user states neither (the user's own value wins, as the image's ``ENV`` lines are defaults).

    >>> from aifabric.cluster.spec import ClusterSpec
    >>> a4 = ClusterSpec.model_validate({"accelerator": "b200", "nodes": 2, "scale_out": {"nic": "connectx-7",
    ...     "transport": "gcp-gib", "fabric": "ethernet", "switch": "spectrum-4-sn5600-400g"}})
    >>> s = transport_image_settings(a4, nccl_release())
    >>> s["NCCL_IB_QPS_PER_CONNECTION"], s["NCCL_NVLS_CHUNKSIZE"]
    ('4', '524288')
    """
    so = spec.scale_out
    if so is None or release.library != "nccl":
        return {}
    return {k: v for k, v in transport(so.transport_key).image_env if nccl_reads(k, release.version)}


def runs_efa_plugin(spec: ClusterSpec) -> bool:
    """Whether ``spec``'s scale-out runs ``efa-srd``, the transport aws-ofi-nccl carries: elsewhere the
    plugin sets nothing (:func:`efa_plugin_settings` is ``{}``)."""
    so = spec.scale_out
    return so is not None and so.transport_key == "efa-srd"


@lru_cache(maxsize=256)
def _plugin_settings(
    accelerator: str, nic: str, instance_type: str | None, ofi_version: str | None, nccl_version: str
) -> tuple[tuple[str, str], ...]:
    """:func:`efa_plugin_settings` by plain values. Optimisation: the formula engine asks on every call."""
    instance = efa_instance(accelerator, nic, instance_type)
    if instance is None:
        return ()
    return tuple(plugin_settings(ofi_nccl_release(ofi_version), instance, nccl_version).items())


def _nvls_chunks(
    spec: ClusterSpec, release: NcclRelease, stated: tuple[int | None, int | None], nccl_version: str | None
) -> tuple[int | None, int | None]:
    """:attr:`TierModel.nvls_chunks`: each stated value NCCL ``release`` reads, else the plugin's
    (aws-ofi-nccl's on EFA, the image's on gIB: :func:`transport_image_settings`)."""
    plugin = {**transport_image_settings(spec, release), **efa_plugin_settings(spec, release, nccl_version)}
    out = [
        value if value is not None and nccl_reads(name, release.version) else _int(plugin.get(name))
        for name, value in zip(NVLS_CHUNK_VARIABLES, stated, strict=True)
    ]
    return out[0], out[1]


def _int(text: str | None) -> int | None:
    return None if text is None else int(text)


def _nic_hop_bytes_per_s(spec: ClusterSpec, convention: str, efficiency: str) -> float:
    """The link a GPU of a PCIe-only node reaches its NIC over, before calibration (bytes/s, doubled under
    ``convention="bidirectional"`` as :func:`_tier_bandwidths`): the GPU's own x16 link at NCCL's P2P figure
    (:attr:`~aifabric.cluster.spec.ClusterSpec.p2p_effective_bytes_per_s`) or its line rate, whether or
    not its GPUs reach each other (SHM joins two GPUs through host memory, not a GPU and its NIC; a missing
    GPUDirect RDMA is the GDR path's, ``scale_out.nic_path``). Unbounded on NVLink and torus nodes."""
    if spec.scale_up.kind != "pcie":
        return math.inf
    hop = spec.p2p_effective_bytes_per_s if efficiency == "nccl" else spec.scaleup_line_rate_bytes_per_s
    return hop * (2 if convention == "bidirectional" else 1)


def _intra_transport(spec: ClusterSpec) -> str:
    """NCCL's transport inside a node when it is not P2P: SHM on a PCIe node whose GPUs have no
    peer-to-peer (:attr:`~aifabric.cluster.spec.ClusterSpec.peer_to_peer`, as
    :attr:`~aifabric.cluster.spec.ClusterSpec.scaleup_effective_bytes_per_s` models it), else ""."""
    if spec.scale_up.kind != "pcie" or spec.peer_to_peer:
        return ""
    why = (
        "scale_up.peer_to_peer: false"
        if spec.scale_up.peer_to_peer is False
        else f"the {spec.accelerator_spec.name} driver exposes no GPU peer-to-peer"
    )
    return f"SHM through host memory: {why}"


def tree_nic_traffic(n_domains: int) -> float:
    """Bytes a domain's NICs carry per direction per byte of an all_reduce run as NCCL's double binary
    tree (tree, NVLS-tree) across ``n_domains`` domains: half the most tree edges a domain has in the two
    trees (:func:`~aifabric.collectives.nccl_trees.dtree_max_edges`, each edge S / 2 each way): 1 on two
    (each domain one tree's root and the other's leaf), 1.5 on three (NCCL's root has one child: each tree
    is a chain, a domain the middle of one and an end of the other), 2 from four (an inner node receives
    from two children and sends to its parent in one tree, and is a leaf of the other). Dimensionless;
    2 on one domain (no NIC is crossed; callers do not divide by it there).

    Source: NCCL ``src/graph/trees.cc`` (``ncclGetBtree``, ``ncclGetDtree``); the double binary tree of
    NCCL 2.4 (NVIDIA developer blog "Massively Scale Your Deep Learning Training with NCCL 2.4"). NCCL's
    tuner assumes 2 beyond two nodes (:func:`tuner_tree_nic_traffic`).

    >>> tree_nic_traffic(2), tree_nic_traffic(3), tree_nic_traffic(16)
    (1.0, 1.5, 2.0)
    """
    return dtree_max_edges(n_domains) / 2 if n_domains >= 2 else 2.0


def tuner_tree_nic_traffic(n_domains: int) -> float:
    """:func:`tree_nic_traffic` as NCCL's tuner counts it when it picks an algorithm: 1 on two domains, 2
    beyond. NCCL ``tuning.cc`` (2.18 to 2.30) times a tree on > 2 nodes from ``bwInter`` at the tree's
    algbw ratio 0.5 (NVLS-tree: ``bwInter / 2``), whatever the node count, so on three nodes it still sees
    2 S per direction where its trees carry 1.5 S. Dimensionless.

    >>> tuner_tree_nic_traffic(2), tuner_tree_nic_traffic(3)
    (1.0, 2.0)
    """
    return 1.0 if n_domains == 2 else 2.0


def domain_nic_bytes_per_s(tm: TierModel, comm: Communicator) -> float:
    """What the NICs of the communicator's sparsest domain carry per direction together, bytes/s.

    Its ranks reach ``k`` NICs (``Communicator.min_nic_gpus_per_domain`` counts them in GPUs' shares,
    ``k x gpus_per_nic / nics_per_gpu``), each GPU's share ``B_o`` of a NIC. ``B_o`` holds the stream factor
    of a node whose channels spread over all its ``K`` NICs (:func:`nic_stream_factor`, ``f(K)``); the same
    channels spread over the ``k <= K`` NICs the ranks reach fill more of them, ``f(k)``. On a
    PCIe-only node every byte a rank sends to its NIC first crosses the rank's own x16 link (GPUDirect RDMA,
    ``B_pcie = tm.nic_hop_bytes_per_s``; unbounded elsewhere)::

        B_node = min( min_nic_gpus_per_domain x B_o x f(k) / f(K),  g_min B_pcie )

    8 x A100 over 4 x 100 Gb/s EFA (p4d), every GPU a rank: 8 x 12.5 / 2 x e = 4 NICs x 12.5 GB/s x e;
    one rank per node: 2 x 6.25 x e = one NIC. 8 x L40S (PCIe Gen4, 2 channels) with 8 x 400G NICs, one
    rank per node: f(8) = 1/4, f(1) = 1: the rank's own NIC, 49.15 GB/s, then its x16 link, 24.0 GB/s.
    """
    shares = comm.min_nic_gpus_per_domain
    total = shares * tm.nic_bytes_per_s
    net = tm.nic_transport
    if net is not None and tm.node_nics > 0:
        reached = min(tm.node_nics, max(1, shares * tm.nics_per_gpu // tm.gpus_per_nic))
        c, c0 = tm.channels[1], tm.default_channels[1]
        total *= nic_stream_factor(net, c, reached, tm.nic_qps, c0) / nic_stream_factor(
            net, c, tm.node_nics, tm.nic_qps, c0
        )
    return min(total, comm.min_ranks_per_domain * tm.nic_hop_bytes_per_s)


def ring_exit_gpus(tm: TierModel, comm: Communicator) -> int:
    """Distinct GPUs of a domain that NCCL's ring channels leave the domain from.

    A ring channel enters a node at a GPU nearest its NIC and leaves from the next GPU nearest the same NIC
    (``search.cc``: the last GPU is sorted by its path to the channel's NIC), one exit GPU per NIC: with a
    NIC per rank every rank exits (``g``); with NICs that ``gpus_per_nic`` ranks share, as many GPUs as
    the NICs the ranks reach (``min_nic_gpus_per_domain / gpus_per_nic``). 8 x A100 on 4 shared NICs
    (p4d): 4 of 8.
    """
    g = comm.ranks_per_domain
    if tm.gpus_per_nic <= 1:
        return g
    return min(g, max(1, comm.min_nic_gpus_per_domain // tm.gpus_per_nic))


def scaleup_bytes_per_s(tm: TierModel, ranks_per_domain: int) -> float:
    """What a GPU's scale-up gives a communicator with ``g`` ranks in its domain, bytes/s per direction.

    A switch gives any set of peers the GPU's whole ``B_i`` (``tm.intra_bytes_per_s``). A full mesh of
    ``L`` links per GPU (``tm.mesh_links``) gives one link per peer::

        B(g) = B_i min(g - 1, L) / L        (g >= 2; one link for g = 1, which crosses none)

    a ring over ``g`` GPUs of the mesh runs ``g - 1`` link-disjoint directed rings (one link per hop per
    ring), an all-to-all one link per peer, a transfer between two GPUs one link. 8 x MI300X (7 xGMI links
    x 48 GB/s usable): 2 ranks 48 GB/s, 4 ranks 144, 8 ranks 336 GB/s.
    """
    if tm.mesh_links < 1:
        return tm.intra_bytes_per_s
    return tm.intra_bytes_per_s * min(max(ranks_per_domain - 1, 1), tm.mesh_links) / tm.mesh_links


def mesh_rings(tm: TierModel, ranks_per_domain: int) -> MeshRings | None:
    """The rings NCCL builds over ``g`` ranks of a full-mesh domain (:func:`~aifabric.catalog.nccl_mesh.
    mesh_ring_search`, from NCCL's per-link constant of one peer's links), None where no NCCL ring search
    applies (:func:`~aifabric.catalog.nccl_mesh.mesh_search_applies`: a switch, one rank, RCCL, more than
    :data:`~aifabric.catalog.nccl_mesh.MESH_SEARCH_MAX_GPUS`). The links and flow engines' ring plan reads
    the same rings (:func:`aifabric.collectives.plan.ring_plan`)."""
    if not mesh_search_applies(tm.library, tm.mesh_links, ranks_per_domain, tm.mesh_link_gbps):
        return None
    return mesh_ring_search(tm.release, tm.arch, ranks_per_domain, tm.mesh_link_gbps)


def mesh_ring_bytes_per_s(tm: TierModel, ranks_per_domain: int) -> float:
    """What a GPU's scale-up gives a ring over ``g`` ranks of one domain, bytes/s per direction.

    A switch, and a full mesh whose rings cross every peer's links equally, give the GPU's
    :func:`scaleup_bytes_per_s`. On a full mesh NCCL's rings may not: the busiest ordered pair, crossed by
    ``k_max`` of the ``C`` channels, sets the rate at one peer's links times ``C / k_max``
    (:meth:`~aifabric.catalog.nccl_mesh.MeshRings.ring_share`)::

        B_ring = B_i / L x C / k_max

    4 x GB200 NVL4 (3 peers of 6 NVLink 5 links, NCCL 2.30): 16 channels, k_max 6: 721.8 / 3 x 16/6 =
    641.6 GB/s; 4 x V100 and 4 x GH200: every pair evenly, the whole 120 and 370.8 GB/s.
    """
    rings = mesh_rings(tm, ranks_per_domain)
    if rings is None:
        return scaleup_bytes_per_s(tm, ranks_per_domain)
    return tm.intra_bytes_per_s / tm.mesh_links * rings.ring_share()


def shm_switch_share(tm: TierModel, senders: int) -> int:
    """How many GPUs share one PCIe switch uplink's SHM bandwidth when ``senders`` GPUs of a domain send at
    once (a ring or an all-to-all: every GPU; a chain: all but the last), 1 without SHM or a switch.

    Without P2P NCCL diverts GPU-to-GPU traffic through the CPU (paths.cc ``ncclTopoComputePaths``:
    "Divert all traffic through the CPU", ``addInterStep``): a sender writes into host memory, its peer
    reads from it, both over the PCIe path to the CPU. GPUs behind one switch (``tm.shm_switch_gpus``)
    share its one uplink, each way: every concurrent sender's writes go up it and every receiver's reads
    come down it, so each gets ``1 / min(k, senders)`` of it; NCCL's ring search books the same links
    (search.cc ``followPath`` subtracts a channel's speed from every link of its path). A chain of two
    GPUs has one sender: the whole uplink.
    """
    return max(1, min(tm.shm_switch_gpus, senders))


def nic_stream_factor(
    spec: TransportSpec, channels: int, nics_per_node: int, qps: int = 1, search_channels: int | None = None
) -> float:
    """What share of its aggregate payload bandwidth a node's NICs reach with the streams NCCL opens.

    Every channel of a ring or tree enters and leaves a node once, over one NIC. ``C`` channels across
    nodes (``channels``) fill ``min(n_NIC, C)`` of the node's ``n_NIC`` NICs, each with ``m = C q /
    min(n_NIC, C)`` streams (``q`` = ``NCCL_IB_QPS_PER_CONNECTION`` QPs per connection, ``net_ib``: a
    channel's QPs stay on its NIC). One stream reaches at most ``e_s`` of line rate and all of a NIC's
    together ``e_a`` (the transport's ``per_stream_efficiency`` / ``aggregate_efficiency``), so::

        factor = min(1, C' / n_NIC) x min(e_a, m e_s) / e_a,    C' = max(C, C0)

    The NICs left idle count the channels of NCCL's own search, ``C0`` (``search_channels``; default
    ``C``): ``NCCL_MAX_NCHANNELS`` below it already leaves ``C / C0`` of the bandwidth to the tuner
    (:func:`channel_share`), which must not be charged twice. InfiniBand, 24 channels over 8 NICs, 1 QP:
    ``m = 3``, factor 1; RoCEv2 with 8 channels over 8 NICs: ``0.95 / 0.968 = 0.981``, 1 with 2 QPs;
    2 channels over 8 NICs (a PCIe node): 1/4 of them at one stream each.
    """
    nics = max(1, nics_per_node)
    used = min(nics, channels)
    idle = min(1.0, max(channels, search_channels or channels) / nics)
    m = channels * qps / max(1, used)
    return idle * min(spec.aggregate_efficiency, m * spec.per_stream_efficiency) / spec.aggregate_efficiency


def _comm_channels(
    spec: ClusterSpec, release: NcclRelease, row: str, lo: int | None, hi: int | None
) -> tuple[int, int]:
    """NCCL's communicator channels on one domain and across domains (:func:`~aifabric.catalog.nccl.
    search_channels` then :func:`~aifabric.catalog.nccl.comm_channels`, which applies
    ``NCCL_MIN_NCHANNELS`` ``lo`` / ``NCCL_MAX_NCHANNELS`` ``hi``), from the GPU's NCCL scale-up
    bandwidth and the node's NICs at line rate (NCCL reads a NIC's speed as its line rate)."""
    gpu_gbps = spec.scaleup_effective_bytes_per_s / 1e9
    nic_gbps = spec.nic_speed_bytes_per_s / 1e9
    return _channels(release.library, release.version, row, gpu_gbps, spec.nics_per_node, nic_gbps, lo, hi)


def _ring_graph(
    spec: ClusterSpec, release: NcclRelease, row: str
) -> tuple[tuple[int, float], tuple[int, float]]:
    """NCCL's ring graph on one domain and across domains, ``(channels, GB/s per channel)``
    (:func:`~aifabric.catalog.nccl.search_channels`, before ``connect.cc`` duplicates them into the
    communicator's): the ``nChannels`` tuning.cc multiplies its per-channel caps by, and the ``bwIntra``
    / ``bwInter`` its ``busBw = nChannels x bw`` starts from. The tree graph is searched with at most as
    many channels (init.cc: ``treeGraph->minChannels = treeGraph->maxChannels = ringGraph->nChannels``).
    8 x A100 with 4 x 200G NICs: 12 x 20 GB/s, 4 across nodes, a communicator of (24, 8); 2 x 8 H100 on 8 x
    400G: 12 x 30, 8 x 45 across nodes; 4 x GB300 with 4 x 800G: 8 across trays, of 16. (1, inf) without
    scale-up bandwidth. On one full-mesh domain NCCL's ring search applies to (:func:`~aifabric.catalog.
    nccl_mesh.mesh_search_applies`, on the GPU's library, as :func:`mesh_rings` decides: an AMD GPU priced
    with NCCL's tables when no RCCL release is named still runs RCCL's topology), the graph its ring search
    builds over the links that exist (:func:`~aifabric.catalog.nccl_mesh.mesh_ring_search`): GB200 NVL4
    16 x 40, where a switch of the same 721.8 GB/s gives 16 x 45."""
    gpu_gbps = spec.scaleup_effective_bytes_per_s / 1e9
    nic_gbps = spec.nic_speed_bytes_per_s / 1e9
    found = _searches(release.library, release.version, row, gpu_gbps, spec.nics_per_node, nic_gbps)
    if found is None:
        return (1, math.inf), (1, math.inf)
    one, two = found
    g, pair_gbps = spec.domain_gpus, spec.scaleup_link.nccl_effective_per_link_bytes_per_s / 1e9
    if mesh_search_applies(spec.accelerator_spec.collective_library, spec.mesh_links_per_gpu, g, pair_gbps):
        rings = mesh_ring_search(release, row, g, pair_gbps)
        one = (rings.channels, rings.channel_gbps)
    return one, two or one


def _library_tables(library: str, version: str) -> NcclRelease:
    """The recorded tables of ``library`` (``nccl`` or ``rccl``) ``version``: a TierModel's release, found
    again from the hashable pair the cached searches are keyed by. RCCL's version numbers are NCCL's, but
    its search tables are its own (rccl_releases.yaml: RCCL's HIP ``speedArrayIntra/Inter``, and from
    2.26.6 NCCL's ``sm90SpeedArray*`` for the gfx9 GPUs)."""
    return rccl_release(version) if library == "rccl" else nccl_release(version)


@cache
def _searches(
    library: str, version: str, row: str, gpu_gbps: float, nics: int, nic_gbps: float
) -> tuple[tuple[int, float], tuple[int, float] | None] | None:
    """NCCL's (or RCCL's) ring-graph searches (:func:`~aifabric.catalog.nccl.search_channels`,
    ``(channels, GB/s)``) on one domain and across two (None without NICs); None when the GPU has no
    scale-up bandwidth."""
    if not gpu_gbps > 0:
        return None
    release = _library_tables(library, version)
    one = search_channels(release, row, gpu_gbps=gpu_gbps)
    if nics < 1 or not nic_gbps > 0:
        return one, None
    two = search_channels(release, row, gpu_gbps=gpu_gbps, nnodes=2, nics_per_node=nics, nic_gbps=nic_gbps)
    return one, two


def _ll_channels(spec: ClusterSpec, release: NcclRelease, row: str) -> tuple[int, int]:
    """The channels over which a GPU's LL rate ``llMaxBw`` is spread (:func:`_per_channel_cap`): NCCL's
    default search for this GPU on its catalogue scale-up link (:func:`_reference_scaleup_gbps`) on one
    domain and across domains with one NIC per GPU at the fastest speed NCCL's inter-node search tries
    (``search_speeds_inter[row][0]``), so that neither the node's NICs, nor a ``scale_up.bandwidth`` set
    in the file, nor ``NCCL_MIN/MAX_NCHANNELS`` change them. 8 x H100 (370.8 GB/s): (24, 16), the
    channels of the DGX H100 nodes NCCL's LL figures come from (case 03).

    ``llMaxBw`` is one figure NVIDIA measured for the whole GPU on its reference nodes (tuning.cc ``busBw
    = min(llMaxBw, nChannels x bw x 0.5)``); its share per channel is that node's share. The search's
    channel count at another NVLink speed is not monotone in the speed (``sm90SpeedArrayIntra``: 10
    channels at 206 GB/s, 24 at 288 GB/s), so spreading ``llMaxBw`` over it would make a faster NVLink
    slow a forced ring/LL across nodes at the same CPU-side figure."""
    gpus = max(1, spec.domain_gpus)
    top = release.search_speeds_inter[row][0]
    gpu_gbps = _reference_scaleup_gbps(spec)
    return _channels(release.library, release.version, row, gpu_gbps, gpus, top, None, None)


def _reference_scaleup_gbps(spec: ClusterSpec) -> float:
    """The GPU's effective scale-up bandwidth
    (:attr:`~aifabric.cluster.spec.ClusterSpec.scaleup_effective_bytes_per_s`) at its catalogue link's
    line rate, GB/s: a ``scale_up.bandwidth`` in the file scales the effective figure back by catalogue
    line / stated line (8 x H100 stated 500 GB/s both ways: 206.0 x 450 / 250 =
    370.8 GB/s, the DGX H100's)."""
    catalogue_line = spec.scaleup_catalogue_line_bytes_per_s
    return spec.scaleup_effective_bytes_per_s * catalogue_line / spec.scaleup_line_rate_bytes_per_s / 1e9


@cache
def _channels(
    library: str,
    version: str,
    row: str,
    gpu_gbps: float,
    nics: int,
    nic_gbps: float,
    lo: int | None,
    hi: int | None,
) -> tuple[int, int]:
    found = _searches(library, version, row, gpu_gbps, nics, nic_gbps)
    if found is None:
        return 1, 1
    release = _library_tables(library, version)
    bounds = {"min_nchannels": lo, "max_nchannels": hi}
    (n, s), two = found
    one = comm_channels(release, row, search_channels=n, nnodes=1, ring_bw_intra_gbps=s, **bounds)
    if two is None:
        return one, one
    n, s = two
    return one, comm_channels(release, row, search_channels=n, nnodes=2, ring_bw_intra_gbps=s, **bounds)


def _torus_fields(spec: ClusterSpec) -> dict[str, Any]:
    """The :class:`TierModel` fields of a torus domain (a TPU slice): its shape, the slice and twist the
    file names, the generation's slice rules and whether the file declares the chip's bandwidth."""
    su = spec.scale_up
    return {
        "torus_dims": _torus_dims(spec) if su.kind == "torus" else (),
        "torus_slice": tuple(su.slice or ()),
        "torus_twisted": su.twisted,
        "slice_rules": spec.scaleup_link.slices,
        "torus_declared": su.bandwidth_bytes_per_s is not None,
    }


def _torus_dims(spec: ClusterSpec) -> tuple[int, ...]:
    """The domain's torus shape (:func:`~aifabric.cluster.tpu_slice.domain_torus_dims`): given, or the
    most cubic (most square for a 2D generation's ICI) factorisation of the domain size."""
    rules = spec.scaleup_link.slices
    axes = len(rules.shapes[0]) if rules is not None else 3
    return domain_torus_dims(spec.scale_up.torus_dims, spec.domain_gpus, axes)


def hw_latency_s(
    tm: TierModel, kind: str, row: str, proto: Protocol, release: NcclRelease | None = None
) -> float:
    """NCCL ``hwLat[kind][row][proto]`` of ``release`` (default ``tm.release``) in seconds (kind: nvlink,
    pci, net); NaN when the release has no such algorithm (PAT before 2.23).

    ``row`` is the NCCL latency row an algorithm uses (``ring``, ``tree``, ``nvls``, ``nvls_tree``, ``pat``).
    A torus (TPU ICI) is no NCCL tier: one step costs one ICI hop, ``tm.hop_latency_s``, whatever the row.
    """
    if kind == "torus":
        return tm.hop_latency_s * tm.latency_scale
    values = (release or tm.release).hw_latency_us[kind].get(row)  # type: ignore[call-overload]
    return math.nan if values is None else values[_COLUMN[proto]] * 1e-6 * tm.latency_scale


def net_extra_latency_s(tm: TierModel, proto: Protocol) -> float:
    """What one network step costs above NCCL's ``hwLat[NET]``, seconds: the transport's and a calibration's
    extra (``tm.extra_inter_latency_s``), and with Simple the receive flush (``tm.flush_latency_s``: on a
    GPU before Hopper through a plugin, one more plugin operation; :func:`_flush_latency_s`).

    2 x p4d (A100, EFA through aws-ofi-nccl at 27.0 us a step, 22.0 above NET/IB): a Simple step pays
    22.0 + 22.0 = 44.0 us above ``hwLat[NET]``, an LL step 22.0.
    """
    return tm.extra_inter_latency_s + (tm.flush_latency_s if proto is Protocol.SIMPLE else 0.0)


def rendezvous_s(tm: TierModel, proto: Protocol, payload_bytes: float, steps: int = 1) -> float:
    """What ``steps`` network steps in sequence cost above their latency when their messages go by
    rendezvous, seconds: the one place every algorithm prices the provider's rendezvous.

    A step of ``payload_bytes`` of data puts ``w = payload x 16 / d`` bytes in one network message, ``d``
    the data in each 16-byte store (``store_data_bytes``: LL 8, its flags the other half; LL128 15 of 16;
    Simple all of it). Through a provider with a rendezvous protocol (``slingshot-cxi``: aws-ofi-nccl's
    SENDRECV protocol, one tagged send a step) a message longer than the eager limit ``E`` waits for the
    target's RDMA Get of its remainder, one more round trip ``r``; each of the ``s`` steps that wait on
    one another waits its own::

        t_rdzv = s r  if w > E  else 0

    Each algorithm passes what one of its network messages carries and how many of them follow one
    another on the critical path: a ring's ``S / (n C)`` on its steps across the network, a chain's
    whole ``S / C`` on its ``N - 1`` hops (NCCL ``src/device/broadcast.h`` ``runRing``), the tree's
    ``S / C`` on ``2 x depth`` levels (:func:`~aifabric.collectives.nccl_trees.btree_depth`), PAT's
    ``S / (n C)`` on its ``log2Up(n)`` dimensions, a point-to-point send's ``S / c`` on its ``c``
    channels to the peer, once. A step's message is at most one of the ``NCCL_STEPS = 8`` slots of the
    channel's buffer (``src/include/device.h``: LL 8 lines x 512 threads x 16 B = 64 KiB of wire a
    slot, Simple 512 KiB), far above any eager limit (4,097 B; 18,433 B from libfabric 2.2), so ``w``
    passes ``E`` exactly when the channel's part does.

    NCCL's tuner does not see it (the cost functions leave it out of ``tuner_time_s``). The Alps GH200 rows
    show the step where the model puts it: 2 KiB -> 4 KiB all_reduce on the tree, one channel, LL's 4096 ->
    8192 wire bytes across the 4097 B limit of libfabric 1.22: 21.72 -> 31.58 us (eth-cscs/cscs-docs
    image-nccl-tests.md), two network steps of 3.25 us on top of LL's bandwidth term.

    >>> from aifabric.cluster.presets import preset
    >>> alps = preset("gh200-quad", nodes=2)
    >>> tm = tier_model(alps.with_changes(**{"scale_out.libfabric_version": "1.22.0"}))
    >>> [round(rendezvous_s(tm, Protocol.LL, b) * 1e6, 2) for b in (2048, 4096)]
    [0.0, 3.25]
    """
    if tm.net_rendezvous_s == 0.0:
        return 0.0
    data = tm.release.store_data_bytes
    flagged = proto is not Protocol.SIMPLE  # LL, LL128: each 16-byte store carries its flag
    wire = payload_bytes * _STORE_BYTES / data[proto] if flagged and data else payload_bytes
    return steps * tm.net_rendezvous_s if wire > tm.net_eager_max_bytes else 0.0


def p2p_latency_s(tm: TierModel, kind: str, proto: Protocol) -> float:
    """One point-to-point launch (send/recv, and the grouped send/recv of all-to-all) in seconds: ``baseLat +
    hwLat[kind]`` of NCCL's Ring row, the per-hop figure the model prices p2p with.

    Under RCCL's own tables (``tm.release.library == "rccl"``) the row is read from the NCCL release RCCL is
    built on: RCCL's tuning models (rccl_releases.yaml) feed only its tuner's ``ncclTopoGetAlgoTime``,
    which p2p tasks skip as NCCL's do (enqueue.cc schedules them with no algorithm or protocol time), and
    from 2.21.5 their NET Ring Simple entry (320 us, tuning_model_5) steers the tuner off ring/Simple
    across nodes rather than timing a hop."""
    if tm.release.library == "rccl":
        tm = replace(tm, release=nccl_release(tm.release.version))
    return base_latency_s(tm, Algorithm.RING, proto) + hw_latency_s(tm, kind, Algorithm.RING, proto)


def net_latency_row(tm: TierModel, row: str, ranks_per_domain: int) -> str:
    """The NCCL ``hwLat[NET]`` row an algorithm's inter-node steps pay: ``row``, or ``tree`` when the
    release exposes one-rank-per-node latencies (tuning.cc from 2.23.4: ``interLat = ppn == 1 ?
    hwLat[NET][TREE][p] : hwLat[NET][a][p]``) and each node (domain) holds one rank."""
    return "tree" if ranks_per_domain == 1 and tm.release.ppn1_tree_net_latency else row


def base_latency_s(tm: TierModel, row: str, proto: Protocol, release: NcclRelease | None = None) -> float:
    """NCCL ``baseLat[row][proto]`` of ``release`` (default ``tm.release``) in seconds; NaN when the release
    has no such algorithm."""
    values = (release or tm.release).base_latency_us.get(row)  # type: ignore[call-overload]
    return math.nan if values is None else values[_COLUMN[proto]] * 1e-6 * tm.latency_scale


def net_overhead_s(tm: TierModel, proto: Protocol) -> float:
    """NCCL's per-step network overhead of a ring across nodes, seconds (tuning.cc ``getNetOverhead``: by
    CPU vendor, 1 us for a vendor it does not list; x3 with Simple)."""
    table = tm.release.net_overhead_us
    ovh = table.get(tm.cpu_vendor, table["other"]) * 1e-6 * tm.latency_scale
    return ovh * _SIMPLE_NET_OVERHEAD_FACTOR if proto is Protocol.SIMPLE else ovh


def tree_correction(tm: TierModel, proto: Protocol, message_bytes: float) -> float:
    """NCCL's ``treeCorrectionFactor[proto][floor(log2(S / 64))]`` (tuning.cc), 1 outside the table or
    under ``efficiency="line_rate"``."""
    if not tm.nccl or message_bytes < 64:
        return 1.0
    row = tm.release.tree_correction_factor[proto]
    idx = int(math.log2(message_bytes / 64))
    return row[idx] if idx < len(row) else 1.0


def ring_plateau_latency_factor(tm: TierModel) -> float:
    """NCCL's latency factor of a Simple all_reduce ring across nodes on its plateau (tuning.cc)."""
    return tm.release.ring_plateau_latency_factor[tm.tuning_row]


def _ll_max(tm: TierModel, n_domains: int) -> float:
    """NCCL ``llMaxBw``, bytes/s: row by architecture on one node, by CPU vendor on more (AMD: row 1, other
    vendors: row 0); column 1 node, 2 nodes, >= 3 nodes (tuning.cc)."""
    rel = tm.release
    if n_domains <= 1:
        return rel.ll_max_bw[tm.tuning_row][0] * 1e9
    row = rel.architectures[1 if tm.cpu_vendor == "amd" else 0]
    return rel.ll_max_bw[row][1 if n_domains == 2 else 2] * 1e9


def protocol_bandwidth(
    tm: TierModel,
    proto: Protocol,
    busbw_bytes_per_s: float,
    n_domains: int,
    *,
    tree: bool,
    all_reduce: bool = True,
    one_rank_per_domain: bool = False,
) -> float:
    """Bus bandwidth after the protocol's overhead (``tuning.cc`` refinements of ``tm.release``), bytes/s.

    Ring: LL ``min(llMaxBw, B f_LL)`` with ``f_LL`` = ``ring_ll_bw_factor`` (1/4; 1/3 on one node for
    collectives other than all_reduce); LL128 ``B x ring_ll128_bw_factor`` (0.92; 0.7 with one rank per
    domain; NCCL's tuner also holds it under its ring graph's channels, :func:`ring_graph_cap`); Simple
    ``B``. Tree: ``B' = min(B x tree_bw_factor, G x perChMaxTreeBw)`` (0.92; ``G`` the
    tree graph's channels, :func:`tree_graph_cap`); LL ``min(B' / 3.8, llMaxBw)``; LL128 ``min(B' x
    tree_ll128_bw_factor, G x perChMaxTreeLL128Bw)`` (7/9 on one node, 120/128 across nodes); Simple ``B'``.
    """
    rel = tm.release
    if tree:
        bus = min(busbw_bytes_per_s * rel.tree_bw_factor, tree_graph_cap(tm, Protocol.SIMPLE, n_domains))
        if proto is Protocol.LL:
            return min(bus / rel.tree_ll_bw_divisor, _ll_max(tm, n_domains))
        if proto is Protocol.LL128:
            f = rel.tree_ll128_bw_factor[0 if n_domains <= 1 else 1]
            return min(bus * f, tree_graph_cap(tm, Protocol.LL128, n_domains))
        return bus
    if proto is Protocol.LL:
        single_other = n_domains <= 1 and not all_reduce
        f = rel.ring_ll_bw_factor_single_node_other if single_other else rel.ring_ll_bw_factor
        return min(_ll_max(tm, n_domains), busbw_bytes_per_s * f)
    if proto is Protocol.LL128:
        f = rel.ring_ll128_bw_factor_one_gpu_per_node if one_rank_per_domain else rel.ring_ll128_bw_factor
        return busbw_bytes_per_s * f
    return busbw_bytes_per_s


def tree_graph_cap(tm: TierModel, proto: Protocol, n_domains: int) -> float:
    """The most bus bandwidth NCCL's tuner gives a tree all_reduce, bytes/s: the tree graph's channels
    times the per-channel cap of the architecture and node count (Simple ``perChMaxTreeBw``, LL128
    ``perChMaxTreeLL128Bw``; columns 1 node, 2 nodes, >= 3 nodes)::

        cap = G x s_C x perChMax[arch][nodes]

    tuning.cc, every release from 2.18.1 to 2.29.7: ``busBw = std::min(busBw*.92,
    graphs[a]->nChannels*perChMaxTreeBw)`` and ``std::min(busBw * (nNodes == 1 ? 7.0/9.0 : 120.0/128.0),
    graphs[a]->nChannels*perChMaxTreeLL128Bw)``. ``graphs[a]->nChannels`` is the tree graph's, searched
    with ``minChannels = maxChannels = ringGraph->nChannels`` (init.cc), so ``G`` is the ring graph's
    channels (``tm.graph_channels``), not the communicator's, which ``connect.cc`` doubles (and doubles
    again on Hopper and later across nodes): the cap counts each searched channel once. ``s_C``:
    :func:`channel_share`. Infinite under ``efficiency="line_rate"`` (and for LL, whose cap is ``llMaxBw``).
    The tree runs at this figure as NCCL prices it: the constants are NVIDIA's measured tree rates, which
    it lowers when trees reach less (Blackwell on 2 nodes: 2 x 41.4 a channel to 2.27, 42.8 from 2.28.3).

    8 x A100 on 4 x 200G NICs across 2 nodes: G = 4, 4 x 23.6 = 94.4 GB/s, algbw 47.2 (x 0.5) under the
    ring's 4 x 24 x 16/30 = 51.2: NCCL runs the ring (NVIDIA/nccl #1048). 4 x GB300 trays on 4 x 800G,
    NCCL 2.28 on: G = 8, 8 x 42.8 = 342.4 GB/s, algbw 171.2 under the ring's 8 x 48 x 8/14 = 219.4
    (NVIDIA/aicr #1413); 2.26-2.27 (2 x 41.4 per channel): 662.4, the tree.
    """
    if not tm.nccl or proto is Protocol.LL:
        return math.inf
    rel = tm.release
    table = rel.per_channel_max_tree_bw
    if proto is Protocol.LL128:
        table = rel.per_channel_max_tree_ll128_bw or rel.per_channel_max_ring_ll128_bw
    g = tm.graph_channels[1 if n_domains > 1 else 0] * channel_share(tm, n_domains)
    return g * table[tm.tuning_row][min(n_domains, 3) - 1] * 1e9


def ring_graph_cap(tm: TierModel, proto: Protocol, busbw_bytes_per_s: float, n_domains: int) -> float:
    """NCCL's tuner's ceiling on the bus bandwidth of a ring call whose raw bus bandwidth (before the
    protocol) is ``B`` (``busbw_bytes_per_s``), bytes/s: with LL128 its ring graph's channels times the
    architecture's per-channel LL128 figure ``perCh`` (``perChMaxRingLL128Bw``; columns 1 node, 2 nodes,
    >= 3), at the model's bandwidth; inf with LL (its cap is ``llMaxBw``) or Simple, or under
    ``efficiency="line_rate"``::

        cap = B x perCh[arch][nodes] / bw        (NCCL's G x perCh where B = G x bw)

    tuning.cc, every release from 2.18.1 to 2.30.7 (and RCCL's fork): ``busBw = nChannels x bw``, then
    ``std::min(busBw * 0.92, graphs[a]->nChannels*perChMaxRingLL128Bw)`` (2.18.1:
    ``ll128MaxBwPerCh[compCapIndex]``, one figure per architecture). Both terms count the ring graph's
    ``G`` channels of ``bw`` GB/s each (``tm.graph_channels``, ``tm.graph_channel_gbps``: after the
    search's own ``ncclTopoDupChannels``, not the communicator's channels that ``connect.cc`` doubles), so
    LL128 gets ``min(0.92, perCh / bw)`` of Simple's bandwidth whatever ``G``. The model prices Simple on
    the hardware, ``B`` (the ring's bound times :func:`channel_share`) in place of NCCL's ``G x bw``, and
    LL128 at the same ratio: a 400G and an 800G NIC give an H100 the same graph (8 x 45 GB/s) and NCCL
    the same pick, where ``G x perCh`` against a Simple price that follows the NICs would not.

    This is the tuner's price, the pick (``Cost.tuner_time_s``), not the run's ceiling: ``enqueue.cc``
    runs the call on ``nc = comm->nChannels`` channels (fewer for small calls), each at most ``perCh``
    (:func:`call_bandwidth`). Case 03 T7 (2 x 8 H100, ring forced), 64 MiB: measured 290.0 GB/s busbw,
    297.4 on the communicator's channels (+2.6 %), 249.8 held under 8 x 36.7 = 293.6 GB/s (-13.9 %).

    2 x 8 H100 on 8 x 400G: ``bw`` = 45 GB/s, 36.7 / 45 = 0.816 of B = 393.2 GB/s, under 0.92: the tuner
    leaves ring LL128 for Simple at 101 MB (NCCL's own 8 x 45 = 360 and 293.6 GB/s: 93 MB) instead of
    263 MB. One node: ``bw`` = 30, no cap.

    >>> from aifabric.cluster.presets import preset
    >>> tm = tier_model(preset("h100-ib-2node"))
    >>> tm.graph_channels[1], tm.graph_channel_gbps[1]
    (8, 45.0)
    >>> [round(ring_graph_cap(tm, Protocol.LL128, b, 2) / 1e9, 1) for b in (393.2e9, 8 * 45e9)]
    [320.7, 293.6]
    """
    bw = tm.graph_channel_gbps[1 if n_domains > 1 else 0]
    if not tm.nccl or proto is not Protocol.LL128 or math.isinf(bw):
        return math.inf
    per_channel = tm.release.per_channel_max_ring_ll128_bw[tm.tuning_row][min(n_domains, 3) - 1]
    return busbw_bytes_per_s * per_channel / bw


def _per_channel_cap(tm: TierModel, algorithm: str, proto: Protocol, n_domains: int) -> float:
    """What one channel of ``algorithm`` carries at most with ``proto``, bytes/s (tuning.cc's caps):
    LL :func:`ll_channel_rate`; ring LL128 ``perChMaxRingLL128Bw``; tree LL128 ``perChMaxTreeLL128Bw``;
    tree Simple ``perChMaxTreeBw``; ring Simple: no cap (inf). Columns: 1 node, 2 nodes, >= 3 nodes.
    """
    rel = tm.release
    col = min(n_domains, 3) - 1
    if proto is Protocol.LL:
        cap = ll_channel_rate(tm, n_domains)
    elif proto is Protocol.LL128:
        table = rel.per_channel_max_ring_ll128_bw
        if algorithm == "tree":
            table = rel.per_channel_max_tree_ll128_bw or table
        cap = table[tm.tuning_row][col] * 1e9
    elif algorithm == "tree":
        cap = rel.per_channel_max_tree_bw[tm.tuning_row][col] * 1e9
    else:
        return math.inf
    return net_stage_cap(tm, cap, n_domains)


def _cta_bound(tm: TierModel, proto: Protocol, n_domains: int) -> bool:
    """Whether a channel's rate with ``proto`` is its CTA's (:func:`ll_channel_rate`), and so follows its
    threads (:meth:`CallChannels.thread_share`): LL inside one domain, with NCCL's kernels (whose threads
    and stores :func:`ll_channel_rate` counts; RCCL's HIP kernels are other CTAs), on a release that
    records the data each store carries."""
    nccl_kernels = tm.library == "nccl" and tm.release.store_data_bytes is not None
    return proto is Protocol.LL and n_domains <= 1 and nccl_kernels


def ll_channel_rate(tm: TierModel, n_domains: int) -> float:
    """What one channel (one CTA of ``nt_LL`` threads) moves with LL, bytes/s of bus bandwidth::

        c_LL = perChMaxRingLL128Bw x (d_LL x nt_LL) / (d_LL128 x nt_LL128)
             = 36.7 GB/s x (8 x 512) / (15 x 640) = 15.66 GB/s      (Hopper; Ampere, Volta 20 -> 8.53)

    tuning.cc caps LL on the whole call (``busBw = min(llMaxBw, busBw x f)``), NVIDIA's figure for a GPU
    running every channel; it gives no per-channel LL figure, and the kernel's channels are what a small
    call runs on (enqueue.cc keeps ``nc`` of them, :func:`call_bandwidth`). Both protocols move data as
    16-byte flagged stores, one a thread at a time, and wait on the peer's flags (prims_ll.h ``storeLL``
    ``st.volatile.v4``; prims_ll128.h ``store128``), so a CTA's rate is its threads' store rounds times
    the data each store carries: ``d`` = ``store_data_bytes`` (LL 8 of 16 bytes, LL128 15), ``nt`` =
    ``max_threads`` (LL 512, LL128 640). NCCL measures that rate once per architecture and node count for
    LL128 (``perChMaxRingLL128Bw``); LL's is the same rounds with its threads and payload. On all channels
    ``llMaxBw`` still binds (24 x 15.66 GB/s is above Hopper's 141).

    Across domains a channel's LL steps cross the NICs through NCCL's proxy (net.cc), and tuning.cc
    indexes ``llMaxBw`` there by CPU vendor, not GPU architecture (``index1 = nNodes == 1 ? compCapIndex :
    cpuVendor``): the host path, not the CTA, sets the rate. There, and with RCCL's kernels (other
    CTAs: HIP wavefronts, RCCL's own thread counts), a channel gets ``llMaxBw`` shared over the GPU's
    channels (``tm.ll_channels``, :func:`_ll_channels`; case 03 T1/T2, tree/LL at 1-32 KiB on 2 and 4
    nodes).

    Measured (NVIDIA/dgxc-benchmarking nccl README, 8 x H100, a process per GPU): 19.33-20.66 us from 32
    KiB to 512 KiB, one channel per 32 KiB; the model 18.66-21.51 (llMaxBw / 24 a channel gave 24.76).

    >>> from aifabric.cluster.presets import preset
    >>> tm = tier_model(preset("h100-ib-2node"))
    >>> round(ll_channel_rate(tm, 1) / 1e9, 2), round(ll_channel_rate(tm, 2) / 1e9, 2)  # 39 / 16 across
    (15.66, 2.44)
    """
    rel = tm.release
    data = rel.store_data_bytes
    if data is None or not _cta_bound(tm, Protocol.LL, n_domains):
        return _ll_max(tm, n_domains) / tm.ll_channels[0 if n_domains <= 1 else 1]
    ll128 = rel.per_channel_max_ring_ll128_bw[tm.tuning_row][0] * 1e9
    lanes = data[Protocol.LL] * rel.max_threads[Protocol.LL]
    return ll128 * lanes / (data[Protocol.LL128] * rel.max_threads[Protocol.LL128])


def net_stage_cap(tm: TierModel, cap_bytes_per_s: float, n_domains: int) -> float:
    """A per-channel ceiling of NCCL's tuning tables (``perCh*Bw``, ``llMaxBw``) for a call across
    ``n_domains`` domains, with the network's bytes staged in host memory, bytes/s::

        cap' = cap x e_staging     (n_domains > 1; e_staging = tm.net_staging, 1 with GPUDirect RDMA)

    The tables are measured with GPUDirect RDMA; across domains each channel's bytes cross the NICs, and
    without GDR each one is written to and read back from host memory on the way (NCCL's net transport
    puts its buffers in host memory: ``net.cc``), so a channel moves ``e_staging`` of what it moved with
    GDR, whichever of its NIC or its own pipeline bounded it: NVIDIA/nccl #412 measured 16 of 24 GB/s
    per HDR NIC (0.667, ``catalog/data/transports.yaml`` ``host-staging``). Inside one domain nothing
    crosses a NIC: ``cap`` unchanged.

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.nccl_env import env_tiers
    >>> spec = preset("h100-ib-2node")
    >>> off = env_tiers({"NCCL_NET_GDR_LEVEL": "LOC"}, spec, tier_model(spec)).tiers
    >>> net_stage_cap(off, 57.7e9, 2) / 1e9, net_stage_cap(off, 57.7e9, 1) / 1e9
    (38.4859, 57.7)
    """
    return cap_bytes_per_s * (tm.net_staging if n_domains > 1 else 1.0)


class CallChannels(NamedTuple):
    """The size-independent part of :func:`call_bandwidth`: ``bandwidth(S) = min(every, nc(S) x cap)`` with
    ``nc(S) = clamp(floor(S / unit), 1, channels)``; ``every`` is None under ``efficiency="line_rate"``
    (the bus bandwidth ``bus`` unchanged at every size)."""

    bus: float  # the protocol's bus bandwidth on the communicator's channels (NCCL's tuner), bytes/s
    every: float | None  # bus, bytes/s; None: line_rate
    unit: float  # bytes a channel needs before enqueue.cc keeps it
    channels: int  # C, the communicator's channels
    cap: float  # one channel's cap with this protocol, bytes/s
    threads: int = 0  # nt, a channel's threads when its cap follows them (LL); 0: it does not

    def bandwidth(self, message_bytes: float) -> float:
        """Bus bandwidth of one call of ``message_bytes``, bytes/s (:func:`call_bandwidth`).

        Optimisation: the fields are read in one unpacking and :meth:`thread_share` is called only where
        the cap follows the threads (a formula call reads ~16 of these per call at 32,768 GPUs)."""
        bus, every, unit, channels, cap, threads = self
        if every is None:
            return bus
        nc = max(1, min(channels, math.floor(message_bytes / unit)))
        return min(every, nc * cap * (self.thread_share(message_bytes, nc) if threads else 1.0))

    def count(self, message_bytes: float) -> int:
        """``nc(S)``, the channels a call of ``message_bytes`` runs on (1 under ``line_rate``)."""
        if self.every is None:
            return 1
        return max(1, min(self.channels, math.floor(message_bytes / self.unit)))

    def thread_share(self, message_bytes: float, nc: int) -> float:
        """``nt' / nt``: the share of a channel's threads enqueue.cc launches once ``nc`` is 1 and the call
        is still under ``nc x nt x threshold`` (``nt`` halved while a multiple of 128, then at least 3
        warps); 1 when the cap does not follow the threads (``threads`` 0)."""
        if self.threads == 0:
            return 1.0
        nt = self.threads
        while message_bytes < nc * self.unit * nt / self.threads and nt % _HALVABLE_THREADS == 0:
            nt //= 2
        return max(nt, _MIN_WARPS * _WARP_THREADS) / self.threads


def call_channels(
    tm: TierModel,
    algorithm: str,
    collective: str,
    proto: Protocol,
    n_ranks: int,
    n_domains: int,
    busbw_bytes_per_s: float,
) -> CallChannels:
    """What :func:`call_bandwidth` reads that does not depend on the message size (cost functions keep
    it in :meth:`TierModel.memo`)."""
    if not tm.nccl:
        return CallChannels(busbw_bytes_per_s, None, 1.0, 1, math.inf)
    c = tm.channels[1 if n_domains > 1 else 0]
    unit = _unit_bytes(tm.release.version, collective, algorithm, proto, n_ranks)
    cap = _per_channel_cap(tm, algorithm, proto, n_domains)
    threads = tm.release.max_threads[proto] if _cta_bound(tm, proto, n_domains) else 0
    return CallChannels(busbw_bytes_per_s, busbw_bytes_per_s, unit, c, cap, threads)


def channel_share(tm: TierModel, n_domains: int) -> float:
    """``min(1, C / C0)``: the share of the raw bandwidth NCCL's tuner gives ``C`` communicator channels
    (``tm.channels``) out of the ``C0`` its search finds (``tm.default_channels``; tuning.cc ``busBw =
    nChannels x bw``: ``NCCL_MAX_NCHANNELS`` below ``C0`` leaves ``C / C0``); 1 under ``line_rate``."""
    if not tm.nccl:
        return 1.0
    side = 1 if n_domains > 1 else 0
    return min(1.0, tm.channels[side] / tm.default_channels[side])


def channel_share_note(tm: TierModel, n_domains: int) -> str:
    """``; NCCL_MAX_NCHANNELS: C of the C0 channels ...`` when :func:`channel_share` is below 1, else empty:
    the why of a time that a channel cap scales (each channel carries ``1 / C0`` of the raw bandwidth,
    ``C0`` growing with the node's NICs)."""
    share = channel_share(tm, n_domains)
    if share >= 1.0:
        return ""
    side = 1 if n_domains > 1 else 0
    return (
        f"; NCCL_MAX_NCHANNELS runs {tm.channels[side]} of the {tm.default_channels[side]} channels NCCL's "
        f"search gives these NICs, each 1/{tm.default_channels[side]} of it (tuning.cc busBw = nChannels x "
        f"bw): x {share:.2f}"
    )


def call_bandwidth(
    tm: TierModel,
    algorithm: str,
    collective: str,
    proto: Protocol,
    message_bytes: float,
    n_ranks: int,
    n_domains: int,
    busbw_bytes_per_s: float,
) -> float:
    """Bus bandwidth of one call on the channels NCCL gives it, bytes/s.

    NCCL's ``enqueue.cc`` runs a call on ``nc = clamp(floor(S / (nt x threshold)), 1, C)`` channels
    (:func:`~aifabric.catalog.nccl.channels_for`, ``nt x threshold`` from
    :func:`~aifabric.catalog.nccl.channel_unit_bytes`; ``C`` the communicator's channels, ``tm.channels``),
    and each channel carries at most its protocol's per-channel cap ``c`` (:func:`_per_channel_cap`), so::

        B_call = min(B, nc x c x nt' / nt)

    ``nt' / nt`` is the share of its threads a lone channel keeps below ``nt x threshold``
    (:meth:`CallChannels.thread_share`), where the cap is its CTA's (LL inside a domain, :func:`_cta_bound`);
    1 elsewhere.

    ``B`` is the protocol's bus bandwidth on the communicator's channels, NCCL's tuner figure: the caller
    applies the protocol (:func:`protocol_bandwidth`) to the raw bandwidth times :func:`channel_share`, as
    tuning.cc does (``busBw = nChannels x bw``, then ``min(llMaxBw, busBw x f)``); ``NCCL_MIN_NCHANNELS``
    above the default raises only ``nc``. ``algorithm`` is ``ring`` or ``tree``;
    ``collective`` one NCCL costs (all_reduce, all_gather, reduce_scatter, broadcast, reduce). Under
    ``efficiency="line_rate"`` B is returned unchanged. The size-independent terms are
    :func:`call_channels`; this is ``call_channels(...).bandwidth(S)``.
    """
    plan = call_channels(tm, algorithm, collective, proto, n_ranks, n_domains, busbw_bytes_per_s)
    return plan.bandwidth(message_bytes)


@cache
def _unit_bytes(version: str, collective: str, algorithm: str, proto: Protocol, n_ranks: int) -> float:
    """:func:`~aifabric.catalog.nccl.channel_unit_bytes`, once per (release, call shape); the call shape is
    checked against the release by :func:`~aifabric.catalog.nccl.channels_for` on first use."""
    release = nccl_release(version)
    channels_for(release, collective, algorithm, 0, n_ranks, "hopper", comm_channels=1, protocol=proto.value)
    return channel_unit_bytes(release, algorithm, proto.value, n_ranks)
