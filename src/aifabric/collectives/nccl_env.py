"""What a stated NCCL environment leaves the formula engine to choose from, the channels it runs, and
on which transports.

``NCCL_ALGO``, ``NCCL_PROTO``, ``NCCL_NVLS_ENABLE`` and ``NCCL_COLLNET_ENABLE`` (parsed and validated by
:class:`aifabric.catalog.transport.NcclEnv`, NCCL's ``parseList`` grammar) restrict the algorithms and
protocols the tuner compares, as NCCL's ``src/graph/tuning.cc`` does: the default prediction is NCCL's
default choice, a stated ``NCCL_ALGO`` gives the tuned one (:func:`env_choice`). ``NCCL_MIN_NCHANNELS`` /
``NCCL_MAX_NCHANNELS`` bound the communicator's channels (``connect.cc``; :func:`aifabric.catalog.nccl.
comm_channels`) and ``NCCL_IB_QPS_PER_CONNECTION`` sets the streams per NIC
(:func:`aifabric.collectives.tiers.nic_stream_factor`); :func:`aifabric.collectives.tiers.tier_model`
takes them (:class:`EnvChoice`).

``NCCL_P2P_DISABLE``, ``NCCL_P2P_LEVEL``, ``NCCL_SHM_DISABLE``, ``NCCL_NET_GDR_LEVEL`` and
``NCCL_NET_GDR_C2C`` (with the cluster's GPU-NIC path ``scale_out.nic_path``) choose the transports
(:func:`aifabric.catalog.transport.resolve_transport`), and :func:`env_tiers` puts the chosen transports'
catalogued bandwidth and latency in the tier model (``catalog/data/transports.yaml``, each figure with its
source):

==========================  ================================================================================
inside a node: P2P          the cluster's scale-up link, unchanged
inside a node: SHM          ``B_i = PCIe line rate per direction x e_shm``; NCCL's PCI latencies; no NVLS
(P2P disabled, too far, or  (bytes cross host memory: GPU -> host -> GPU over each GPU's PCIe link). A GPU
GPUs without peer access)   without peer access (``peer_to_peer: false``, GeForce) runs SHM with or without
                            ``NCCL_P2P_DISABLE``: there is no P2P to disable
inside a node: NET          ``B_i = B_o`` (each GPU's bytes leave and re-enter through its NIC); NET
(P2P and SHM disabled)      latencies; no NVLS. A scale-up domain larger than a node (NVL72) has no SHM
                            across trays: P2P disabled there always means NET
across nodes, GDR off       ``B_o x e_staging`` and ``+ a_staging`` per network hop (a copy through host
(nic_path > GDR level)      memory at each end), and every per-channel cap of a stage across nodes (tree,
                            NVLS-tree) ``x e_staging`` (:func:`aifabric.collectives.tiers.net_stage_cap`);
                            NCCL's tuner also drops LL128 (typeInter > PXB, tuning.cc)
==========================  ================================================================================

On EFA the network plugin, aws-ofi-nccl, sets variables of its own beneath the user's
(:mod:`aifabric.catalog.aws_ofi_nccl`): ``NCCL_NVLS_CHUNKSIZE`` / ``NCCL_NVLSTREE_MAX_CHUNKSIZE`` reach the
tier model (:func:`aifabric.collectives.tiers.tier_model`), ``NCCL_NVLS_ENABLE=0`` below NCCL 2.18.5 the
choice (:func:`plugin_env`). On GCP's gIB the image sets them (``transports.yaml`` ``image_env``):
``NCCL_IB_QPS_PER_CONNECTION=4`` and ``NCCL_NVLS_CHUNKSIZE=524288`` reach the tier model the same way,
``NCCL_NET_GDR_LEVEL=PIX`` the GDR rule (:func:`stages_in_host`: a PXB NIC path stages in host memory);
``NCCL_IB_QPS_PER_CONNECTION`` is accepted there, gIB being NCCL's IB verbs code.

The other ``NCCL_*`` variables NcclEnv reads (the network plugin) are refused, not dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache

from aifabric import catalog
from aifabric.catalog import nccl
from aifabric.catalog.aws_ofi_nccl import efa_instance, nccl_first_read, nccl_reads, ofi_nccl_release
from aifabric.catalog.loader import CpuSpec
from aifabric.catalog.transport import (
    NcclEnv,
    PathType,
    gdr_distance,
    gdr_enabled,
    nccl_algorithms,
    nccl_names,
    resolve_transport,
    transport,
)
from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.cost import Algorithm
from aifabric.collectives.nvls import nvls_loop_bytes
from aifabric.collectives.ops import Collective
from aifabric.collectives.tiers import (
    NVLS_CHUNK_VARIABLES,
    Protocol,
    TierModel,
    efa_plugin_settings,
    library_release,
    runs_efa_plugin,
    transport_image_settings,
)
from aifabric.errors import ConfigError

__all__ = [
    "MODELLED_VARIABLES",
    "EnvChoice",
    "TransportTiers",
    "check_env",
    "env_choice",
    "env_tiers",
    "host_staging_efficiency",
    "parse_env",
    "plugin_env",
    "plugin_note",
    "stages_in_host",
]

#: The variables the formula engine models.
MODELLED_VARIABLES = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NVLS_ENABLE",
    "NCCL_COLLNET_ENABLE",
    "NCCL_P2P_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_SHM_DISABLE",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_C2C",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_IB_QPS_PER_CONNECTION",
    "NCCL_NVLS_CHUNKSIZE",
    "NCCL_NVLSTREE_MAX_CHUNKSIZE",
)

#: The variables that choose transports (:func:`env_tiers`).
_TRANSPORT_VARIABLES = frozenset(
    {"NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_SHM_DISABLE", "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_C2C"}
    | {"NCCL_COLLNET_ENABLE"}
)

#: NCCL's name of each registry algorithm NCCL_ALGO governs (broadcast/reduce: NCCL's ring, as a chain).
_NCCL_NAME = {
    Algorithm.RING: nccl.Algorithm.RING,
    Algorithm.CHAIN: nccl.Algorithm.RING,
    Algorithm.TREE: nccl.Algorithm.TREE,
    Algorithm.NVLS: nccl.Algorithm.NVLS,
    Algorithm.NVLS_TREE: nccl.Algorithm.NVLS_TREE,
    Algorithm.PAT: nccl.Algorithm.PAT,
    Algorithm.COLLNET_DIRECT: nccl.Algorithm.COLLNET_DIRECT,
    Algorithm.COLLNET_CHAIN: nccl.Algorithm.COLLNET_CHAIN,
}


@dataclass(frozen=True)
class EnvChoice:
    """The registry algorithms a stated environment disables, the protocols it leaves (None: all), and the
    channel bounds, QPs per connection and NVLS / NVLS-tree chunks it sets (None: NCCL's default)."""

    disabled: frozenset[Algorithm]
    protocols: frozenset[Protocol] | None
    min_nchannels: int | None = None
    max_nchannels: int | None = None
    ib_qps_per_connection: int | None = None
    nvls_chunks: tuple[int | None, int | None] = (None, None)

    @property
    def shapes_tiers(self) -> bool:
        """True when the environment changes the tier model (channels, QPs or NVLS chunks), not only the
        choice."""
        bounds = (self.min_nchannels, self.max_nchannels, self.ib_qps_per_connection, *self.nvls_chunks)
        return any(v is not None for v in bounds)


def env_choice(env: Mapping[str, str], op: Collective) -> EnvChoice:
    """The choice ``env`` (``{"NCCL_ALGO": "Ring", ...}``) leaves for ``op``.

    Algorithms NCCL does not name (direct all_to_all, p2p, the textbook ones) are never disabled;
    ``NCCL_ALGO`` / ``NCCL_PROTO`` do not apply to all_to_all and send_recv (NCCL runs them as p2p).
    Optimisation: worked out once per (environment, collective) (:func:`_choice`, as :func:`parse_env`).

    Raises
    ------
    ConfigError
        A variable the formula engine does not model (named, with those it takes), or a bad value
        (:meth:`NcclEnv.from_mapping`'s one-line errors).
    """
    parsed = parse_env(env)
    return _choice(parsed, op)


@lru_cache(maxsize=1024)
def _choice(parsed: NcclEnv, op: Collective) -> EnvChoice:
    """:func:`env_choice` of a read environment (pure: NcclEnv and EnvChoice are frozen)."""
    bounds = (parsed.min_nchannels, parsed.max_nchannels, parsed.ib_qps_per_connection, parsed.nvls_chunks)
    try:
        coll = nccl.Collective(op.value)
    except ValueError:  # all_to_all, send_recv: not NCCL_ALGO/NCCL_PROTO collectives
        return EnvChoice(frozenset(), None, *bounds)
    enabled = parsed.algorithms(coll)
    disabled = frozenset(a for a, name in _NCCL_NAME.items() if name not in enabled)
    stated = parsed.proto is not None and nccl_names(parsed.proto, coll)
    protocols = frozenset(Protocol(p.value) for p in parsed.protocols(coll)) if stated else None
    return EnvChoice(disabled, protocols, *bounds)


#: The plugin's variables that change the choice, not the tier model (:func:`plugin_env`): NVLS off below
#: NCCL 2.18.5, and Simple alone on p4d / p4de (catalog/data/aws_ofi_nccl.yaml NCCL_PROTO).
_PLUGIN_CHOICE_VARIABLES = ("NCCL_NVLS_ENABLE", "NCCL_PROTO")


def plugin_env(
    env: Mapping[str, str] | None, spec: ClusterSpec, nccl_version: str | None
) -> Mapping[str, str] | None:
    """``env`` with what aws-ofi-nccl sets on an EFA cluster that changes the choice beneath it: the user's
    own setting wins, as the plugin sets a variable only where it is unset (``insert_envvar(..., false)``).

    >>> from aifabric.cluster.spec import ClusterSpec
    >>> p5 = ClusterSpec.model_validate({"accelerator": "h100-sxm", "nodes": 2, "scale_out": {"nic": "efa-v2",
    ...     "nics_per_gpu": 4, "planes": 4, "transport": "efa-srd", "fabric": "ethernet",
    ...     "switch": "spectrum-4-sn5600-400g"}})
    >>> plugin_env(None, p5, "2.18.3"), plugin_env({"NCCL_NVLS_ENABLE": "1"}, p5, "2.18.3")
    ({'NCCL_NVLS_ENABLE': '0'}, {'NCCL_NVLS_ENABLE': '1'})
    >>> plugin_env(None, p5, "2.18.5") is None
    True
    """
    if not runs_efa_plugin(spec):  # optimisation: the formula engine asks on every call
        return env
    release = library_release(spec.accelerator_spec.collective_library, nccl_version)
    user = env or {}
    settings = efa_plugin_settings(spec, release, nccl_version)
    extra = {k: settings[k] for k in _PLUGIN_CHOICE_VARIABLES if k in settings and k not in user}
    return {**extra, **user} if extra else env


#: The plugin's variables each algorithm's cost reads (the NVLS chunks; NVLS off: the choice itself).
_PLUGIN_NOTE_VARIABLES = {
    Algorithm.NVLS: ("NCCL_NVLS_CHUNKSIZE",),
    Algorithm.NVLS_TREE: ("NCCL_NVLS_CHUNKSIZE", "NCCL_NVLSTREE_MAX_CHUNKSIZE"),
}


def plugin_note(
    spec: ClusterSpec,
    tm: TierModel,
    algorithm: Algorithm,
    user_env: Mapping[str, str] | None,
    *,
    call: tuple[float, Communicator] | None = None,
) -> str | None:
    """What aws-ofi-nccl set that the pick ran with, for the explanation: the NVLS chunks of an NVLS pick
    and NVLS turned off, each where the user left it unset; None when nothing of the plugin's shaped it.
    Elsewhere what the network plugin's image set (:func:`_image_note`). ``call``: the message size and
    communicator the pick ran on; with it, the image's QPs are named only across nodes and its NVLS chunk
    only where it changes the call's chunk (:func:`_chunk_shapes`: a small message's chunk shrinks below
    the image's and the default start alike); without it, every setting the pick's algorithm reads.

    >>> from aifabric.cluster.spec import ClusterSpec
    >>> from aifabric.collectives.tiers import tier_model
    >>> p5 = ClusterSpec.model_validate({"accelerator": "h100-sxm", "nodes": 2, "scale_out": {"nic": "efa-v2",
    ...     "nics_per_gpu": 4, "planes": 4, "transport": "efa-srd", "fabric": "ethernet",
    ...     "switch": "spectrum-4-sn5600-400g"}})
    >>> plugin_note(p5, tier_model(p5), Algorithm.NVLS_TREE, None)
    'aws-ofi-nccl 1.21.1 on p5.48xlarge sets NCCL_NVLS_CHUNKSIZE=524288, NCCL_NVLSTREE_MAX_CHUNKSIZE=524288'
    """
    if not runs_efa_plugin(spec):  # optimisation: the formula engine asks on every call
        return _image_note(spec, tm, algorithm, user_env or {}, call)
    settings = efa_plugin_settings(spec, tm.release, tm.nccl_version or None)
    user = user_env or {}
    names = (*_PLUGIN_NOTE_VARIABLES.get(algorithm, ()), *_PLUGIN_CHOICE_VARIABLES)
    used = [f"{k}={settings[k]}" for k in names if k in settings and k not in user]
    if not used or spec.scale_out is None:
        return None
    so = spec.scale_out
    instance = efa_instance(spec.accelerator, so.nic, so.instance_type)
    return (
        f"aws-ofi-nccl {ofi_nccl_release(so.ofi_nccl_version).version} on {instance} sets {', '.join(used)}"
    )


def _image_note(
    spec: ClusterSpec,
    tm: TierModel,
    algorithm: Algorithm,
    user: Mapping[str, str],
    call: tuple[float, Communicator] | None,
) -> str | None:
    """What the network plugin's image set that changed the pick's result (``transports.yaml``
    ``image_env``, :func:`aifabric.collectives.tiers.transport_image_settings`: gIB's), each where the user
    left it unset: its QPs a connection, which every network stage runs on (a ``call`` across nodes), its
    GDR level where it stages the NICs' bytes in host memory (:func:`stages_in_host`), and the NVLS chunk
    of an NVLS pick where it changes the call's chunk (:func:`_chunk_shapes`); None elsewhere.

    >>> from aifabric.cluster.spec import ClusterSpec
    >>> from aifabric.collectives.tiers import tier_model
    >>> a4 = ClusterSpec.model_validate({"accelerator": "b200", "nodes": 2, "scale_out": {"nic": "connectx-7",
    ...     "transport": "gcp-gib", "fabric": "ethernet", "switch": "spectrum-4-sn5600-400g"}})
    >>> _image_note(a4, tier_model(a4), Algorithm.NVLS_TREE, {}, None)
    'the nccl-gib image sets NCCL_IB_QPS_PER_CONNECTION=4, NCCL_NVLS_CHUNKSIZE=524288'
    >>> _image_note(a4, tier_model(a4), Algorithm.RING, {}, None)
    'the nccl-gib image sets NCCL_IB_QPS_PER_CONNECTION=4'
    """
    if tm.nic_transport is not None and not tm.nic_transport.image_env:
        return None  # optimisation: the formula engine asks on every call, and most images set nothing
    settings = transport_image_settings(spec, tm.release)
    unset = [k for k in settings if k not in user]
    across = call is None or call[1].n_domains > 1
    qps = ("NCCL_IB_QPS_PER_CONNECTION",) if across else ()
    gdr = (
        ("NCCL_NET_GDR_LEVEL",)
        if across and "NCCL_NET_GDR_LEVEL" in unset and _image_stages(spec, tm)
        else ()
    )
    names = (*qps, *gdr, *_chunk_shapes(tm, algorithm, unset, call))
    used = [f"{k}={settings[k]}" for k in names if k in unset]
    if not used or spec.scale_out is None:
        return None
    return f"the {transport(spec.scale_out.transport_key).plugin} image sets {', '.join(used)}"


def _image_stages(spec: ClusterSpec, tm: TierModel) -> bool:
    """Whether the image's ``NCCL_NET_GDR_LEVEL`` is what stages ``spec``'s NIC traffic in host memory:
    it does under the image's level and would not under NCCL's default (PXB)."""
    default = NcclEnv(net_gdr_level=PathType.PXB)
    return stages_in_host(NcclEnv(), spec, tm.release) and not stages_in_host(default, spec, tm.release)


def _chunk_shapes(
    tm: TierModel, algorithm: Algorithm, plugin_set: list[str], call: tuple[float, Communicator] | None
) -> tuple[str, ...]:
    """The NVLS chunk variables of ``algorithm``'s (``_PLUGIN_NOTE_VARIABLES``) that the plugin set
    (``plugin_set``: the user left them unset), all of them where together they change the call's NVLS
    loop: the loop bytes (channels x heads x chunk, :func:`aifabric.collectives.nvls.nvls_loop_bytes`) with
    the plugin's chunks differ from those with NCCL's defaults (together: NVLS-tree's start is bounded by
    both, so one alone may leave it where the other holds it). Without ``call`` every one the algorithm
    reads.

    NCCL's ``enqueue.cc`` shrinks the chunk while the message is small against it, so below the shrink
    threshold of both starts the plugin's 512 KiB and NCCL's 128 KiB give the same chunk.
    """
    names = tuple(k for k in _PLUGIN_NOTE_VARIABLES.get(algorithm, ()) if k in plugin_set)
    if call is None or not names:
        return names
    size, comm = call
    default = nvls_loop_bytes(_without_chunks(tm, names), size, comm, algorithm)
    return names if nvls_loop_bytes(tm, size, comm, algorithm) != default else ()


def _without_chunks(tm: TierModel, names: tuple[str, ...]) -> TierModel:
    """``tm`` with the NVLS chunk variables ``names`` back at NCCL's defaults (None)."""
    chunks = tuple(
        None if k in names else v for k, v in zip(NVLS_CHUNK_VARIABLES, tm.nvls_chunks, strict=True)
    )
    return replace(tm, nvls_chunks=(chunks[0], chunks[1]))


def parse_env(env: Mapping[str, str]) -> NcclEnv:
    """``env`` checked (every variable modelled, :data:`MODELLED_VARIABLES`) and read
    (:meth:`NcclEnv.from_mapping`).

    Optimisation: the formula engine reads the environment on every call (:func:`env_choice`,
    :func:`check_env`, :func:`env_tiers`); :meth:`NcclEnv.from_mapping` is pure and order-free and
    :class:`NcclEnv` frozen, so one reading is kept per distinct set of (name, value type, value)
    (:func:`_read`: the type too, as ``1 == True`` but ``str(True)`` is no NCCL flag; an error is raised
    again on every call, never kept).

    Raises
    ------
    ConfigError
        A variable the formula engine does not model (named, with those it takes), or a bad value.
    """
    _check(env)
    try:
        items = frozenset([(name, type(value), value) for name, value in env.items()])
    except TypeError:  # a value that cannot be hashed: read each time (from_mapping names it)
        return NcclEnv.from_mapping(env)
    return _read(items)


@lru_cache(maxsize=256)
def _read(items: frozenset[tuple[str, type, str]]) -> NcclEnv:
    return NcclEnv.from_mapping({name: value for name, _, value in items})


def _nvls_missing(spec: ClusterSpec) -> str:
    """Why ``spec`` runs no NVLS (NVLink SHARP: in-switch reduction on an NVSwitch, tiers.py)."""
    if spec.scale_up.kind != "nvswitch":
        return f"{spec.name} has no NVSwitch"
    if spec.mesh_links_per_gpu:  # catalogue topology full_mesh: GPUs wired to each other, no switch
        return f"{spec.name}'s GPUs are a full mesh ({spec.scaleup_link.key}), no NVSwitch to reduce in"
    return f"{spec.name}'s NVSwitch or accelerator {spec.accelerator!r} has no NVLink SHARP"


def check_env(
    env: Mapping[str, str],
    spec: ClusterSpec,
    op: Collective,
    tm: TierModel,
    *,
    algorithm: Algorithm | None = None,
    protocol: Protocol | None = None,
    excluded: frozenset[Algorithm] = frozenset(),
) -> None:
    """Refuse an environment that cannot apply to ``spec`` or contradicts the engine's own options.

    Raises
    ------
    ConfigError
        One line naming both sides: NCCL variables on an accelerator whose collectives are not NCCL's
        (XLA on TPUs; NVLS variables on RCCL, which has no NVLS); ``algorithm`` (``--algo``) outside
        ``NCCL_ALGO`` or disabled by ``NCCL_NVLS_ENABLE=0``; ``protocol`` (``--proto``) outside
        ``NCCL_PROTO``; NVLS excluded (``--no-nvls``) with ``NCCL_NVLS_ENABLE=1``; an ``NCCL_ALGO`` naming
        only NVLS algorithms on a cluster without NVLS (the reason named), as NCCL fails there ("no
        algorithm/protocol available", 2.18 enqueue.cc, 2.24.3 on), unless the release runs ring instead
        (:func:`aifabric.catalog.nccl.ring_backup`; the formula engine's ring backup).
    """
    if not env:
        return
    _check(env)
    library = spec.accelerator_spec.collective_library
    first = next(iter(env))
    if library == "xla":
        what = "a TPU torus" if spec.scale_up.kind == "torus" else f"{spec.accelerator!r}"
        raise ConfigError(
            f"{first}: {what} ({spec.name}) runs XLA collectives, not NCCL; NCCL variables do not apply"
        )
    parsed = parse_env(env)
    nvls = {Algorithm.NVLS, Algorithm.NVLS_TREE}
    if library == "rccl" and parsed.nvls_enable is not None:
        raise ConfigError(f"NCCL_NVLS_ENABLE: {spec.accelerator!r} runs RCCL, which has no NVLS")
    _check_ib_only(parsed, spec)
    if parsed.nvls_enable == 1 and nvls & excluded:
        raise ConfigError("--no-nvls conflicts with NCCL_NVLS_ENABLE=1")
    try:
        coll = nccl.Collective(op.value)
    except ValueError:  # all_to_all, send_recv: NCCL_ALGO/NCCL_PROTO do not apply
        return
    if parsed.proto is not None and not parsed.protocols(coll):
        raise ConfigError(
            f"NCCL_PROTO={parsed.proto}: disables every protocol (LL, LL128, Simple) for {op.value}; "
            "NCCL would fail ('no algorithm/protocol available')"
        )
    if algorithm is not None:
        named = _NCCL_NAME.get(algorithm)
        if named is not None and parsed.algo is not None and named not in nccl_algorithms(parsed.algo, coll):
            raise ConfigError(f"--algo {algorithm.value} conflicts with NCCL_ALGO={parsed.algo}")
        if algorithm in nvls and parsed.nvls_enable == 0:
            raise ConfigError(f"--algo {algorithm.value} conflicts with NCCL_NVLS_ENABLE=0")
    if (
        protocol is not None
        and parsed.proto is not None
        and nccl.Protocol(protocol.value) not in parsed.protocols(coll)
    ):
        raise ConfigError(f"--proto {protocol.value} conflicts with NCCL_PROTO={parsed.proto}")
    if (
        parsed.algo is not None
        and not tm.nvls
        and not nccl.ring_backup(tm.release, all_reduce=op is Collective.ALL_REDUCE)
    ):
        asked = {a for a, name in _NCCL_NAME.items() if name in nccl_algorithms(parsed.algo, coll)}
        if asked and asked <= nvls:
            why = "RCCL has no NVLS" if library == "rccl" else _nvls_missing(spec)
            version = tm.nccl_version or tm.release.version
            raise ConfigError(
                f"NCCL_ALGO={parsed.algo}: {why}; NCCL {version}'s tuner then has no algorithm "
                "('no algorithm/protocol available')"
            )


def _check_ib_only(parsed: NcclEnv, spec: ClusterSpec) -> None:
    """Refuse ``NCCL_IB_QPS_PER_CONNECTION`` where NCCL's IB transport (``src/transport/net_ib``, which
    reads it; InfiniBand and RoCE, and gIB, which is built on it) carries no bytes: a cluster without a
    scale-out network, or one whose network runs another plugin or sockets (EFA, TCPX/TCPXO, NET/Socket),
    named with its transport."""
    if parsed.ib_qps_per_connection is None:
        return
    if spec.scale_out is None:
        raise ConfigError(
            f"NCCL_IB_QPS_PER_CONNECTION: {spec.name} has no scale-out network; the variable does not apply"
        )
    net = transport(spec.scale_out.transport_key)
    if not net.speaks_ib_verbs:
        raise ConfigError(
            f"NCCL_IB_QPS_PER_CONNECTION: {spec.name}'s network runs {net.name} ({net.nccl_name}), not "
            "NCCL's IB transport (NET/IB); the variable does not apply"
        )


@dataclass(frozen=True)
class TransportTiers:
    """The tier model on the transports an environment and the cluster select, and whether GPUDirect RDMA
    is on across nodes (off: NCCL's tuner runs no LL128 across nodes)."""

    tiers: TierModel
    gdr: bool
    note: str | None = None


def _check(env: Mapping[str, str]) -> None:
    for name in env:
        if name not in MODELLED_VARIABLES:
            raise ConfigError(
                f"{name}: the formula engine does not model this variable (it takes "
                f"{', '.join(MODELLED_VARIABLES)})"
            )


def _gpu_path(spec: ClusterSpec) -> PathType:
    """NCCL's farthest path type between two GPUs of one node: NVL on NVLink, SYS across CPU sockets
    (:attr:`~aifabric.cluster.spec.ClusterSpec.gpus_span_sockets`), PHB through one CPU, else PXB."""
    if spec.scale_up.kind == "nvswitch":
        return PathType.NVL
    if spec.gpus_span_sockets:
        return PathType.SYS
    return PathType.PHB if spec.scale_up.p2p_through_cpu else PathType.PXB


def _pcie_across_sockets(spec: ClusterSpec) -> bool:
    """A PCIe node whose GPUs sit on several CPU nodes
    (:attr:`~aifabric.cluster.spec.ClusterSpec.gpus_span_sockets`): NCCL's path between its halves is SYS,
    through the socket link."""
    return spec.scale_up.kind == "pcie" and spec.gpus_span_sockets


def socket_note(spec: ClusterSpec, tm: TierModel) -> str | None:
    """What NCCL's search makes of a PCIe node whose GPUs sit on several CPU sockets, one sentence; None
    on one socket or off PCIe.

    NCCL joins the CPU nodes by a ``LINK_SYS`` of its per-family figure (``catalog/data/cpus.yaml``) and its
    ring graph crosses it (:func:`~aifabric.catalog.nccl.socket_ring_search`); the graph sets NCCL's
    channels and tuner figures. What P2P carries across the sockets is :func:`socket_p2p_tiers`' business.
    """
    if not _pcie_across_sockets(spec):
        return None
    where = f"{spec.gpus_per_node} GPUs over {spec.cpu_sockets} CPU sockets (NCCL path SYS)"
    family = spec.socket_cpu
    if family is None:
        return f"{where}; the Intel CPU family (cpu:) is not given, so NCCL's inter-socket figure is unknown"
    sys_gbps = _nccl_socket_gbps(family, tm)
    row = tm.tuning_row
    gpu_gbps = spec.p2p_effective_bytes_per_s / 1e9
    ring = nccl.socket_ring_search(tm.release, row, sys_gbps=sys_gbps, gpu_gbps=gpu_gbps)
    graph = (
        f"NCCL's ring graph is {ring[0]} x {ring[1]:g} GB/s"
        if ring is not None
        else f"no ring fits NCCL's slowest {row} search speed "
        f"({tm.release.search_speeds_intra[row][-1]:g} GB/s): one channel in GPU order"
    )
    return f"{where}: NCCL links the sockets at {sys_gbps:g} GB/s ({family.key}, topo.h); {graph}"


def _nccl_socket_gbps(family: CpuSpec, tm: TierModel) -> float:
    """The GB/s the stated NCCL release (else the tables' one) gives the link between two CPU nodes of
    ``family``: its figure from ``nccl_since`` on, the one before it (AMD: LOC_BW 5000 before 2.19.1;
    Sapphire and Emerald Rapids: SKL_QPI_BW 10 before 2.26.2) in older releases (``cpus.yaml``)."""
    since, before = family.nccl_since, family.nccl_before_bytes_per_s
    version = nccl.version_tuple(tm.nccl_version or tm.release.version)
    if since is not None and before is not None and version < nccl.version_tuple(since):
        return before / 1e9
    return family.inter_socket_nccl_bytes_per_s / 1e9


def socket_p2p_tiers(spec: ClusterSpec, tm: TierModel) -> TierModel:
    """``tm`` with NCCL's P2P transport bounded where a PCIe node's ring crosses its CPU sockets.

    Every ring over GPUs of two sockets has a hop from each socket into the other (one each way, whatever
    the channel count: each channel's ring crosses once in each direction, as a GPU's own link carries each
    channel once), and that hop is a PCIe peer-to-peer write routed through both root complexes and the
    socket link. It carries at most the CPU family's cross-socket P2P rate
    (:attr:`~aifabric.catalog.loader.CpuSpec.cross_socket_p2p_bytes_per_s`: measured where a microbenchmark
    exists, else NCCL's own figure for the link), so the ring runs at

        B = min(B_gpu, B_socket_p2p)

    A family measured above the GPUs' path changes nothing: 2 x EPYC 9575F write 55.6 GB/s between sockets,
    above RTX 5090's Gen5 x16 48, and their 8-GPU ring reaches 45.4 GB/s busbw. Without a measurement (an
    AMD host of unstated generation: NCCL's AMD_BW 16) the hop bounds a Gen4 pair's 24 GB/s at 16. SHM
    traffic (host memory DMA, which the socket link is built to carry) is not bounded here; nor is the
    ``line_rate`` efficiency, which prices wires. An Intel host of unstated family keeps its path rate.
    CPU nodes are NCCL's (``cpu_sockets``): NUMA nodes of one socket (AMD NPS=4) take the same bound, as
    NCCL's search does, though their P2P crosses the I/O die and no socket link; a family measured above
    the GPUs' path (Turin) makes that moot.
    """
    family = spec.socket_cpu
    if not tm.nccl or family is None or not _pcie_across_sockets(spec):
        return tm
    cap = family.cross_socket_p2p_bytes_per_s * tm.intra_scale
    if cap >= tm.intra_bytes_per_s:
        return tm
    how = "measured" if family.socket_p2p_bytes_per_s is not None else "NCCL's figure for the link, topo.h"
    return replace(
        tm,
        intra_bytes_per_s=cap,
        intra_transport=f"P2P across the CPU sockets, at most {cap / 1e9:g} GB/s ({family.key}, {how})",
    )


def _shm_bytes_per_s(spec: ClusterSpec, tm: TierModel) -> float:
    """SHM bandwidth per GPU per direction: the GPU's PCIe line rate x the SHM transport's efficiency."""
    acc = spec.accelerator_spec
    if not acc.pcie:
        raise ConfigError(f"NCCL_P2P_DISABLE: accelerator {spec.accelerator!r} names no PCIe link for SHM")
    line = catalog.scaleup(f"pcie-{acc.pcie}").per_gpu_per_direction_bytes_per_s
    return line * transport("shm").aggregate_efficiency if tm.nccl else line


def _intra(parsed: NcclEnv, spec: ClusterSpec, tm: TierModel) -> TierModel:
    """``tm`` with the intra-node transport the environment selects (module docstring)."""
    if spec.scale_up.kind == "torus":
        raise ConfigError(
            "NCCL_P2P_DISABLE: a TPU torus runs no NCCL transport; P2P/SHM settings do not apply"
        )
    level = parsed.p2p_level if parsed.p2p_level is not None else _default_p2p_level(spec, tm)
    peer = spec.peer_to_peer
    choice = resolve_transport(
        replace(parsed, p2p_level=level), same_node=True, gpu_path=_gpu_path(spec), peer_access=peer
    )
    key = choice.transport.key
    if key != "shm" and choice.transport.scope == "intra":
        return socket_p2p_tiers(spec, tm)  # P2P: the cluster's own scale-up link, bounded across sockets
    if key == "shm" and spec.domain_gpus == spec.gpus_per_node:
        return replace(
            tm,
            intra_bytes_per_s=_shm_bytes_per_s(spec, tm) * tm.intra_scale,
            intra_kind="pci",
            nvls=False,
            mesh_links=0,
            intra_transport=f"SHM through host memory: {_p2p_off(parsed, spec, level)}",
            shm_switch_gpus=spec.scale_up.gpus_per_switch or 1,
        )
    if not tm.nic_bytes_per_s > 0:
        raise ConfigError(
            "NCCL_SHM_DISABLE: with P2P and SHM off, GPUs of one node talk through their NICs, and this "
            "cluster has none"
        )
    return replace(
        tm,
        intra_bytes_per_s=tm.nic_bytes_per_s,
        intra_kind="net",
        nvls=False,
        mesh_links=0,
        intra_transport=f"NET through the NICs: {_p2p_off(parsed, spec, level)}, NCCL_SHM_DISABLE=1",
    )


def _default_p2p_level(spec: ClusterSpec, tm: TierModel) -> PathType:
    """NCCL's P2P level between GPUs of a node when ``NCCL_P2P_LEVEL`` is not set: PXB ("By default don't
    use P2P across CPU Host Bridges and further apart"), SYS on an x86 AMD host (from 2.23 only with at
    most two GPUs: the release's ``p2p_sys_amd_max_gpus``). Source: ``src/graph/paths.cc``
    ``ncclTopoCheckP2p`` (v2.18.1-1 to v2.30.7-1), which counts the node's GPUs (the cluster's
    ``gpus_per_node`` here)."""
    most = tm.release.p2p_sys_amd_max_gpus
    if spec.cpu_vendor == "amd" and (most is None or spec.gpus_per_node <= most):
        return PathType.SYS
    return PathType.PXB


def _p2p_off(parsed: NcclEnv, spec: ClusterSpec, level: PathType) -> str:
    """The setting that turns P2P off, as the user wrote it, or why NCCL's default leaves it off."""
    if parsed.p2p_disable:
        return "NCCL_P2P_DISABLE=1"
    if parsed.p2p_level is not None:
        return f"NCCL_P2P_LEVEL={parsed.p2p_level.name}"
    if spec.peer_to_peer:
        return (
            f"the GPUs meet through the CPU (path {_gpu_path(spec).name}), beyond NCCL's default P2P level "
            f"{level.name} (paths.cc; NCCL_P2P_LEVEL=SYS allows it)"
        )
    return "GPU peer-to-peer unusable on this path"


def _collnet(spec: ClusterSpec) -> None:
    """Refuse ``NCCL_COLLNET_ENABLE=1`` where CollNet cannot run (ConfigError naming why)."""
    so = spec.scale_out
    if so is None:
        raise ConfigError(
            "NCCL_COLLNET_ENABLE: CollNet reduces in the scale-out switches; this cluster has none"
        )
    for tier, key in list(so.tier_switches.items())[: so.tiers]:  # SHARP needs every switch of the tree
        if not catalog.switch(key).in_network_reduction:
            raise ConfigError(
                f"NCCL_COLLNET_ENABLE: scale-out {tier} switch {key!r} has no in-network reduction (SHARP); "
                "CollNet cannot run"
            )
    # A scale-up domain larger than a node (an NVL72 rack of trays) is one node to NCCL: init.cc counts
    # nodes as the distinct first ranks of the ring graphs, which span the NVLink (MNNVL) clique, so
    # CollNet runs across racks as across HGX nodes (flat NVLS with SHARP across racks, tuning.cc).


def env_tiers(env: Mapping[str, str] | None, spec: ClusterSpec, tm: TierModel) -> TransportTiers:
    """``tm`` on the transports ``env`` and ``spec`` select (module docstring's table).

    Without transport variables and with the default GPU-NIC path (PIX) ``tm`` is returned as is.

    Raises
    ------
    ConfigError
        A variable the formula engine does not model or a bad value (one line naming it); SHM/NET settings
        on a TPU torus; P2P and SHM disabled on a cluster without NICs; a GDR-only plugin (TCPX) on a
        GPU-NIC path beyond the GDR level; ``NCCL_COLLNET_ENABLE=1`` without SHARP switches.

    Examples
    --------
    NCCL_P2P_DISABLE=1 on an H100 node: SHM through host memory, PCIe Gen5 64 GB/s x 0.6 = 38.4 GB/s:

    >>> from aifabric.cluster.presets import preset
    >>> from aifabric.collectives.tiers import tier_model
    >>> spec = preset("h100-ib-2node")
    >>> t = env_tiers({"NCCL_P2P_DISABLE": "1"}, spec, tier_model(spec)).tiers
    >>> round(t.intra_bytes_per_s / 1e9, 1), t.intra_kind
    (38.4, 'pci')
    """
    env, unread = _read_env(env or {}, tm)
    so = spec.scale_out
    peer = spec.peer_to_peer
    # beyond NCCL's default P2P level on most hosts: through one CPU's root complex, or across sockets
    through_cpu = spec.scale_up.p2p_through_cpu or _pcie_across_sockets(spec)
    stated = any(name in _TRANSPORT_VARIABLES for name in env)
    sockets = socket_note(spec, tm)
    if not stated and peer and not through_cpu and not sockets and (so is None or so.nic_path == "PIX"):
        return TransportTiers(tm, True, unread)
    parsed = parse_env(env)
    gdr = True
    if so is not None and tm.nic_bytes_per_s > 0:
        gdr = not stages_in_host(parsed, spec, tm.release)
        if not gdr:
            staging = transport("host-staging")
            kept = staging.aggregate_efficiency if tm.nccl else 1.0
            tm = replace(  # the NICs' rate and the network stages' per-channel caps alike (net_stage_cap)
                tm,
                nic_bytes_per_s=min(tm.nic_own_bytes_per_s * kept, tm.nic_host_link_bytes_per_s),
                nic_own_bytes_per_s=tm.nic_own_bytes_per_s * kept,
                net_staging=kept,
                extra_inter_latency_s=tm.extra_inter_latency_s + staging.latency_s,
                flush_latency_s=0.0,  # received into host memory: nothing in the GPU to flush
            )
    note = None
    if parsed.p2p_disable or parsed.shm_disable or parsed.p2p_level is not None or not peer or through_cpu:
        tm = _intra(parsed, spec, tm)
        note = None if peer or spec.gpus_per_node < 2 else _no_peer_note(spec, tm)
    note = "; ".join(n for n in (note, sockets, unread) if n) or None
    if parsed.collnet_enable:
        _collnet(spec)
        tm = replace(tm, collnet=True)
    return TransportTiers(tm, gdr, note)


def _read_env(env: Mapping[str, str], tm: TierModel) -> tuple[Mapping[str, str], str | None]:
    """``env`` less the variables the stated NCCL release does not read yet (``nccl_reads`` in
    ``catalog/data/aws_ofi_nccl.yaml``: NCCL ignores a name it does not know, so the prediction is the one
    without it), and a note naming them; ``env`` and None elsewhere (RCCL, TPU, all read)."""
    if tm.release.library != "nccl":
        return env, None
    version = tm.nccl_version or tm.release.version
    unread = [k for k in env if not nccl_reads(k, version)]
    if not unread:
        return env, None
    named = ", ".join(f"{k} (first read in {nccl_first_read(k)})" for k in unread)
    note = f"NCCL {version} does not read {named}: ignored, as NCCL ignores it"
    return {k: v for k, v in env.items() if k not in unread}, note


def stages_in_host(env: NcclEnv, spec: ClusterSpec, release: nccl.NcclRelease | None = None) -> bool:
    """Whether NCCL's network transport copies ``spec``'s NIC traffic through host memory under ``env``:
    a transport that can use GPUDirect RDMA on a GPU-NIC path (``scale_out.nic_path``, as ``release``
    classes it, the newest by default: :func:`aifabric.catalog.transport.nic_path_class`) beyond
    ``NCCL_NET_GDR_LEVEL`` (default PXB, ``paths.cc``; :func:`aifabric.catalog.transport.gdr_enabled`).
    A transport without GDR (sockets) already carries its host copies in its catalogued efficiency.
    A NIC behind a Grace CPU (``P2C``) stages to NCCL 2.26 unless NCCL_NET_GDR_LEVEL reaches PHB or
    NCCL_NET_GDR_C2C=1 (2.26.2; :func:`aifabric.catalog.transport.gdr_distance`).

    >>> from aifabric.cluster.presets import preset
    >>> h100 = preset("h100-ib-2node")
    >>> stages_in_host(parse_env({}), h100.with_changes(**{"scale_out.nic_path": "SYS"}))
    True
    >>> gh200 = preset("gh200-quad").with_changes(**{"scale_out.nic_path": "P2C"})  # NICs behind Grace
    >>> default = parse_env({})
    >>> stages_in_host(default, gh200, nccl.nccl_release("2.20.5")), stages_in_host(default, gh200)
    (True, False)
    """
    so = spec.scale_out
    if so is None:
        return False
    net = transport(so.transport_key)
    release = release or nccl.nccl_release()
    env = _image_gdr_level(env, spec, release)
    path = gdr_distance(env, so.nic_path, release)
    return not (gdr_enabled(env, net, path) or net.gdr == "none")


def _image_gdr_level(env: NcclEnv, spec: ClusterSpec, release: nccl.NcclRelease) -> NcclEnv:
    """``env`` with the ``NCCL_NET_GDR_LEVEL`` the network plugin's image sets (``transports.yaml``
    ``image_env``, :func:`aifabric.collectives.tiers.transport_image_settings`: gIB's PIX) where the user
    states none: the image's ``ENV`` line is a default the user's own value overrides, and NCCL reads the
    variable as if the user had set it (``paths.cc`` ncclTopoCheckGdr: GPUDirect RDMA only where the
    GPU-NIC path is at most the level, so gIB on a PXB path stages through host memory).

    >>> from aifabric.cluster.spec import ClusterSpec
    >>> a4 = ClusterSpec.model_validate({"accelerator": "b200", "nodes": 2, "scale_out": {"nic": "connectx-7",
    ...     "transport": "gcp-gib", "fabric": "ethernet", "switch": "spectrum-4-sn5600-400g"}})
    >>> _image_gdr_level(NcclEnv(), a4, nccl.nccl_release()).net_gdr_level.name
    'PIX'
    """
    if env.net_gdr_level is not None:
        return env
    level = transport_image_settings(spec, release).get("NCCL_NET_GDR_LEVEL")
    return env if level is None else replace(env, net_gdr_level=PathType.parse(level, "NCCL_NET_GDR_LEVEL"))


def host_staging_efficiency(spec: ClusterSpec) -> float:
    """The fraction of a NIC's GPUDirect bandwidth its bytes keep when the default environment stages them
    in host memory (:func:`stages_in_host`): the ``host-staging`` transport's aggregate efficiency (0.667,
    NVIDIA/nccl #412, ``catalog/data/transports.yaml``), else 1. The links and flow engines scale the NIC
    links by it, as :func:`env_tiers` scales the formula engine's ``B_o``.

    >>> from aifabric.cluster.presets import preset
    >>> h100 = preset("h100-ib-2node")
    >>> sys_path = h100.with_changes(**{"scale_out.nic_path": "SYS"})
    >>> host_staging_efficiency(h100), host_staging_efficiency(sys_path)
    (1.0, 0.667)
    """
    if not stages_in_host(parse_env({}), spec):
        return 1.0
    return transport("host-staging").aggregate_efficiency


def _no_peer_note(spec: ClusterSpec, tm: TierModel) -> str:
    """Why a node of GPUs without peer access runs SHM (or NET), one sentence for the explanation."""
    acc = spec.accelerator_spec
    how = "SHM through host memory" if tm.intra_kind == "pci" else "the network (SHM disabled)"
    return (
        f"{acc.name} has no GPU peer-to-peer (GeForce: accelerators.yaml peer_to_peer, or the cluster's "
        "scale_up.peer_to_peer), so NCCL's P2P "
        f"transport cannot connect and GPUs of one node talk over {how}: "
        f"{tm.intra_bytes_per_s / 1e9:.1f} GB/s per GPU per direction"
    )
