"""The ``formula`` engine: closed-form alpha-beta timing per tier, the way NCCL's tuner models it.

For every (algorithm, protocol) allowed for a collective, a latency ``lat`` and a bus bandwidth are computed
from the cluster's tiers; the time is ``lat + S x factor / busbw`` and the fastest is chosen, as NCCL's
``ncclTopoGetAlgoTime`` does (NVIDIA/nccl 2.30.7 ``src/graph/tuning.cc``, restated in
``reference/nccl-cost-model.md`` sec. 2). Bandwidths per GPU, per direction:

- scale-up ``B_i``: NCCL's per-link NVLink constant x links (18 x 20.6 = 370.8 GB/s on H100), or the PCIe
  figure (12 GB/s Gen3, / 1.2 when peer traffic crosses an Intel CPU);
- scale-out ``B_o``: NIC line rate x payload efficiency (400 Gb/s x 0.983 = 49.15 GB/s for ConnectX-7);
  a node's ring can use the NICs of all its ranks, ``g B_o``.

Algorithms: ``ring`` (every collective); ``tree`` (double binary tree across nodes, all_reduce);
``nvls`` (NVLink SHARP in the NVSwitch, one node, all_reduce); ``nvls_tree`` (NVLS in the node, tree across
nodes); ``hierarchical`` (the lesson's RS in the domain, AR of shards on all rails, AG in the domain);
``flat_ring`` (a ring in which every hop crosses a NIC); ``direct`` (pairwise all_to_all);
``chain`` (pipelined broadcast/reduce); ``p2p`` (send_recv).

With ``efficiency="line_rate"`` the engine drops latencies and protocol overheads and uses line rates: the
idealised figures of textbooks and of the seed lesson. With ``convention="bidirectional"`` a vendor's
scale-up figure that adds both directions (NVLink "900 GB/s") is used as if it were per direction, as the
lesson does; the default ``per_direction`` halves it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from aifabric.cluster.spec import ClusterSpec
from aifabric.collectives.communicator import Communicator
from aifabric.collectives.costs import hierarchical_all_reduce_time
from aifabric.collectives.ops import Collective, busbw_factor
from aifabric.engines.result import Candidate, CollectiveResult
from aifabric.errors import ConfigError

__all__ = ["ALGORITHMS", "PROTOCOLS", "TierModel", "formula_collective", "tier_model"]

ALGORITHMS = (
    "ring",
    "tree",
    "nvls",
    "nvls_tree",
    "hierarchical",
    "flat_ring",
    "direct",
    "chain",
    "p2p",
    "torus",
)
PROTOCOLS = ("LL", "LL128", "Simple")
_P = {"LL": 0, "LL128": 1, "Simple": 2}


@cache
def _nccl() -> dict[str, Any]:
    text = resources.files("aifabric.catalog").joinpath("data", "nccl.yaml").read_text()
    return yaml.safe_load(text)


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
    extra_inter_latency_s: float = 0.0
    torus_dims: tuple[int, ...] = ()
    hop_latency_s: float = 0.0


def tier_model(
    spec: ClusterSpec,
    *,
    convention: str = "per_direction",
    efficiency: str = "nccl",
    calibration: Any | None = None,
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

    Raises
    ------
    ConfigError
        If ``convention`` or ``efficiency`` is not one of the names above.
    """
    if convention not in ("per_direction", "bidirectional"):
        raise ConfigError(f"convention: unknown {convention!r}; use per_direction or bidirectional")
    if efficiency not in ("nccl", "line_rate"):
        raise ConfigError(f"efficiency: unknown {efficiency!r}; use nccl or line_rate")
    link = spec.scaleup_link
    if efficiency == "nccl":
        intra = spec.scaleup_effective_bytes_per_s
        nic = spec.nic_effective_bytes_per_s
    else:
        intra = spec.scaleup_line_rate_bytes_per_s
        nic = spec.nic_line_rate_bytes_per_s
    if convention == "bidirectional":
        intra *= 2
    so = spec.scale_out
    os_ = list(so.oversubscription) + [1.0, 1.0] if so else [1.0, 1.0]
    acc = spec.accelerator_spec
    intra_scale = inter_scale = lat_scale = 1.0
    extra = 0.0
    if calibration is not None:
        intra_scale = float(getattr(calibration, "intra_scale", 1.0))
        inter_scale = float(getattr(calibration, "inter_scale", 1.0))
        lat_scale = float(getattr(calibration, "latency_scale", 1.0))
        extra = float(getattr(calibration, "extra_inter_latency_s", 0.0))
    return TierModel(
        intra_bytes_per_s=intra * intra_scale,
        nic_bytes_per_s=nic * inter_scale,
        intra_kind={"pcie": "pci", "torus": "torus"}.get(spec.scale_up.kind, "nvlink"),
        arch=acc.arch,
        cpu_vendor=spec.cpu_vendor,
        nvls=bool(acc.nvls and link.in_switch_reduction and spec.scale_up.kind == "nvswitch"),
        nvls_efficiency=link.nvls_efficiency,
        leaf_oversubscription=os_[0] if so and so.tiers >= 2 else 1.0,
        spine_oversubscription=os_[1] if so and so.tiers >= 3 else 1.0,
        efficiency=efficiency,
        convention=convention,
        latency_scale=lat_scale,
        extra_inter_latency_s=extra,
        torus_dims=_torus_dims(spec) if spec.scale_up.kind == "torus" else (),
        hop_latency_s=link.hop_latency_s,
    )


def _torus_dims(spec: ClusterSpec) -> tuple[int, ...]:
    """The torus shape: given, or the most cubic factorisation of the domain size."""
    if spec.scale_up.torus_dims:
        return tuple(spec.scale_up.torus_dims)
    n = spec.domain_gpus
    best = (n, 1, 1)
    for a in range(1, int(round(n ** (1 / 3))) + 2):
        if n % a:
            continue
        for b in range(a, int(math.isqrt(n // a)) + 1):
            if (n // a) % b == 0:
                c = n // a // b
                if max(a, b, c) < max(best):
                    best = (a, b, c)
    return tuple(sorted(best))


@dataclass(frozen=True)
class _Eval:
    algorithm: str
    protocol: str
    latency_s: float
    bandwidth_s: dict[str, float]  # exposed bandwidth seconds per network
    bottleneck: str
    why: str

    @property
    def time_s(self) -> float:
        return self.latency_s + sum(self.bandwidth_s.values())


def _allowed(op: Collective, comm: Communicator, tm: TierModel) -> list[str]:
    multi = comm.n_domains > 1
    if (
        tm.intra_kind == "torus"
        and not multi
        and op in (Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.REDUCE_SCATTER)
    ):
        return ["torus"]
    flat = ["flat_ring"] if tm.nic_bytes_per_s > 0 else []
    if op is Collective.ALL_REDUCE:
        algs = ["ring", "hierarchical", *flat]
        if multi:
            algs.append("tree")
        if tm.nvls and comm.ranks_per_domain > 1:
            algs.append("nvls_tree" if multi else "nvls")
        return algs
    if op in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
        return ["ring", *flat]
    if op is Collective.ALL_TO_ALL:
        return ["direct"]
    if op in (Collective.BROADCAST, Collective.REDUCE):
        return ["chain"]
    return ["p2p"]


def _lat(tm: TierModel, kind: str, algo: str, proto: str) -> float:
    """NCCL hwLat[kind][algo][proto] in seconds (kind: nvlink, pci, net); None -> protocol not allowed."""
    table = _nccl()["hw_latency_us"][kind]
    key = (
        algo
        if algo in table
        else ("ring" if algo in ("flat_ring", "hierarchical", "chain", "direct", "p2p") else algo)
    )
    value = table[key][_P[proto]]
    return math.nan if value is None else value * 1e-6 * tm.latency_scale


def _base(tm: TierModel, algo: str, proto: str) -> float:
    table = _nccl()["base_latency_us"]
    key = algo if algo in table else "ring"
    return table[key][_P[proto]] * 1e-6 * tm.latency_scale


def _ll_max(tm: TierModel, n_domains: int) -> float:
    c = _nccl()
    if n_domains <= 1:
        return c["ll_max_bw_single_node"].get(tm.arch, 141.0) * 1e9
    row = c["ll_max_bw_multi_node"][tm.cpu_vendor]
    return row[1 if n_domains == 2 else 2] * 1e9


def _proto_bw(tm: TierModel, algo: str, proto: str, busbw: float, n_domains: int) -> float:
    """Bus bandwidth after the protocol's overhead (NCCL tuning.cc refinements)."""
    c = _nccl()
    if proto == "LL":
        return min(_ll_max(tm, n_domains), (busbw / c["tree_ll_divisor"]) if algo == "tree" else 0.5 * busbw)
    if proto == "LL128":
        if algo == "tree":
            return busbw * (7 / 9 if n_domains <= 1 else c["tree_ll128_efficiency_multi_node"])
        return busbw * c["ll128_efficiency"]
    if algo == "tree":
        return busbw * c["tree_simple_efficiency"]
    return busbw


def _evaluate(
    op: Collective, algo: str, proto: str, size: float, comm: Communicator, tm: TierModel
) -> _Eval | None:
    nccl = tm.efficiency == "nccl"
    if algo == "torus":
        return _torus(op, proto, size, comm, tm)
    n, g, N = comm.n_ranks, comm.ranks_per_domain, comm.n_domains  # noqa: N806  (N nodes, as in NCCL)
    multi = N > 1
    intra, nic = tm.intra_bytes_per_s, tm.nic_bytes_per_s
    if multi and nic <= 0:
        raise ConfigError(
            "scale_out: the communicator spans several scale-up domains but the cluster has no NIC"
        )
    # a ring or tree across domains is as fast as its least-populated domain's NICs
    nic_agg = comm.min_ranks_per_domain * nic
    if proto != "Simple" and algo in ("nvls", "nvls_tree", "hierarchical", "flat_ring", "direct", "p2p"):
        return None
    if proto == "LL128" and tm.intra_kind == "pci":
        return None  # NCCL enables LL128 only on NVLink-class paths (tuning.cc)
    ilat = _lat(tm, tm.intra_kind, algo, proto)
    olat = _lat(tm, "net", algo, proto) + tm.extra_inter_latency_s
    if math.isnan(ilat):
        return None
    base = _base(tm, algo, proto)
    if multi and algo in ("ring", "chain"):
        ovh = _nccl()["net_overhead_us"][tm.cpu_vendor] * 1e-6 * tm.latency_scale
        if proto == "Simple":
            ovh *= _nccl()["simple_net_overhead_factor"]
        ilat = max(ilat, ovh)
    f = busbw_factor(op, n)
    nets: dict[str, float]
    if algo in ("ring", "chain"):
        if op is Collective.ALL_REDUCE:
            nsteps, ninter = 2 * (n - 1), 2 * (N - 1)
        elif algo == "chain":
            nsteps, ninter = n - 1, N - 1
        else:
            nsteps, ninter = n - 1, N - 1
        lat = base + (nsteps - ninter) * ilat + ninter * olat
        if multi and op is Collective.ALL_REDUCE and proto == "Simple" and size / (16 * n) >= 64:
            lat *= _nccl()["ring_plateau_latency_factor"]
        # Across nodes a GPU forwards over NVLink only the (g-1)/g of its ring hops that stay in the node
        # (one hop per channel leaves through its NIC), so NVLink bounds busbw at intra x g/(g-1).
        intra_bound = intra * g / (g - 1) if multi and g > 1 else intra
        raw = min(intra_bound, nic_agg) if multi else intra
        net = "scale-out" if multi and nic_agg < intra_bound else "scale-up"
        bus = _proto_bw(tm, algo, proto, raw, N)
        t_bw = size * f / bus
        why = (
            f"ring over {n} ranks: busbw = min(scale-up {intra_bound / 1e9:.1f}, {g} NICs x "
            f"{nic / 1e9:.2f}) GB/s"
            if multi
            else f"ring over {n} ranks on scale-up at {intra / 1e9:.1f} GB/s per GPU"
        )
        nets = {net: t_bw}
    elif algo == "flat_ring":
        steps = 2 * (n - 1) if op is Collective.ALL_REDUCE else n - 1
        lat = base + steps * olat
        bus = nic
        nets = {"scale-out": size * f / bus}
        net = "scale-out"
        why = f"flat ring: every one of the {n} hops crosses a NIC at {nic / 1e9:.2f} GB/s"
    elif algo == "tree":
        lat = base + 2 * ((g - 1) * ilat + math.log2(N) * olat)
        # NCCL: per-channel bandwidth is bwIntra on <= 2 nodes, bwInter beyond; the chain inside each node
        # bounds it by the scale-up bandwidth of one GPU either way.
        raw = intra if N <= 2 else min(intra, nic_agg)
        alg = 0.5 * _proto_bw(tm, algo, proto, raw, N)
        t_bw = size / alg
        net = "scale-out" if N > 2 and nic_agg < intra else "scale-up"
        nets = {net: t_bw}
        why = f"double binary tree across {N} nodes, algbw = 0.5 x {raw / 1e9:.1f} GB/s x protocol efficiency"
    elif algo == "nvls":
        lat = ilat if nccl else 0.0
        eff = tm.nvls_efficiency * (g - 1) / g if nccl else 1.0
        alg = intra * eff
        nets = {"scale-up": size / alg}
        net = "scale-up"
        why = (
            f"NVLink SHARP: the NVSwitch reduces; algbw = {intra / 1e9:.1f} GB/s x efficiency "
            f"{tm.nvls_efficiency} x (n-1)/n"
        )
    elif algo == "nvls_tree":
        lat = ilat + 2 * math.log2(N) * olat if nccl else 0.0
        eff = tm.nvls_efficiency * (g - 1) / g if nccl else 1.0
        a_in = intra * eff
        a_out = nic_agg * (1.0 if N <= 2 else 0.5)
        alg = min(a_in, a_out)
        net = "scale-up" if a_in <= a_out else "scale-out"
        nets = {net: size / alg}
        why = (
            f"NVLS in each node ({a_in / 1e9:.0f} GB/s algbw), tree across {N} nodes "
            f"({a_out / 1e9:.0f} GB/s algbw)"
        )
    elif algo == "hierarchical":
        if not multi or g == 1 or not comm.uniform:
            return None
        t_in, t_out = hierarchical_all_reduce_time(size, g, N, intra, nic)
        lat = base + 2 * (g - 1) * ilat + 2 * (N - 1) * olat
        nets = {"scale-up": t_in, "scale-out": t_out}
        net = "scale-out" if t_out > t_in else "scale-up"
        why = (
            f"reduce-scatter in each domain of {g}, all-reduce of 1/{g} shards across {N} domains on {g} "
            "rails at once, all-gather in the domain"
        )
    elif algo == "direct":
        lat = base + (olat if multi else ilat)
        t_in = size * (g - 1) / n / intra if g > 1 else 0.0
        cross = [size * (n - g) / n / nic]
        if tm.leaf_oversubscription > 1 and comm.ranks_per_su < n:
            cross.append(size * (n - comm.ranks_per_su) / n / (nic / tm.leaf_oversubscription))
        if tm.spine_oversubscription > 1 and comm.ranks_per_pod < n:
            r = tm.leaf_oversubscription * tm.spine_oversubscription
            cross.append(size * (n - comm.ranks_per_pod) / n / (nic / r))
        t_out = max(cross)
        if t_out >= t_in:
            nets, net = {"scale-out": t_out}, "scale-out"
        else:
            nets, net = {"scale-up": t_in}, "scale-up"
        why = f"pairwise all-to-all: {g - 1} peers on scale-up, {n - g} across NICs, both at once"
    else:  # p2p
        if n != 2:
            raise ConfigError(f"send_recv: needs exactly 2 ranks, got {n}")
        lat = base + (olat if multi else ilat)
        b = nic if multi else intra
        net = "scale-out" if multi else "scale-up"
        nets = {net: size / b}
        why = f"one point-to-point transfer over {'a NIC' if multi else 'scale-up'} at {b / 1e9:.1f} GB/s"
    if not nccl:
        lat = 0.0
    return _Eval(algo, proto, lat, nets, net, why)


def _torus(op: Collective, proto: str, size: float, comm: Communicator, tm: TierModel) -> _Eval | None:
    """Collective on a TPU-style 3D torus: bidirectional rings on every axis at once.

    Each chip splits its buffer over the torus axes and runs a bidirectional ring reduce-scatter (and
    all-gather) along each axis in turn, so all of its ICI links carry data at once and the bandwidth term
    is that of one ring at the chip's total per-direction ICI bandwidth B::

        T = 2 (n-1)/n S / B  (all-reduce),   (n-1)/n S / B  (all-gather, reduce-scatter)

    with a latency of one hop per step of the longest bidirectional axis ring, floor(n_d / 2) steps per
    axis. (JAX scaling book, "How to Scale Your Model", ch. 3: collectives over several torus axes use the
    links of all of them.) ICI is a mesh of direct links: no protocol variants, no NCCL constants.
    """
    if proto != "Simple":
        return None
    n = comm.n_ranks
    f = busbw_factor(op, n)
    t_bw = size * f / tm.intra_bytes_per_s
    dims = tm.torus_dims or (n,)
    steps = sum(d // 2 for d in dims) * (2 if op is Collective.ALL_REDUCE else 1)
    lat = steps * tm.hop_latency_s * tm.latency_scale if tm.efficiency == "nccl" else 0.0
    why = (
        f"bidirectional rings on the {'x'.join(map(str, dims))} torus axes at once: busbw = the chip's "
        f"{tm.intra_bytes_per_s / 1e9:.0f} GB/s per direction of ICI; {steps} hop steps of latency"
    )
    return _Eval("torus", proto, lat, {"scale-up": t_bw}, "scale-up", why)


def formula_collective(
    op: Collective | str,
    message_bytes: float,
    spec: ClusterSpec,
    comm: Communicator | None = None,
    *,
    algorithm: str | None = None,
    protocol: str | None = None,
    exclude: tuple[str, ...] = (),
    convention: str = "per_direction",
    efficiency: str = "nccl",
    calibration: Any | None = None,
    tiers: TierModel | None = None,
) -> CollectiveResult:
    """Time one collective with the formula engine (see the module docstring).

    Parameters
    ----------
    op : Collective or str
    message_bytes : float
        Size in bytes, as nccl-tests counts it (:mod:`aifabric.collectives.ops`). Must be > 0.
    spec : ClusterSpec
    comm : Communicator, optional
        Default: every GPU of the cluster.
    algorithm, protocol : str, optional
        Force one (like ``NCCL_ALGO`` / ``NCCL_PROTO``); default: the fastest.
    exclude : tuple of str
        Algorithms not to consider (``("nvls",)`` is ``NCCL_NVLS_ENABLE=0``).
    convention, efficiency, calibration
        See :func:`tier_model`.
    tiers : TierModel, optional
        Precomputed tier model (planners reuse one across calls).

    Returns
    -------
    CollectiveResult

    Raises
    ------
    ValueError
        If ``message_bytes <= 0``, or the algorithm/protocol is unknown or not applicable.

    Examples
    --------
    8 x H100 in one node, 4 GiB all_reduce: NVLS, busbw ~ 480 GB/s (case 01 measured 473.6):

    >>> from aifabric.cluster.presets import preset
    >>> r = formula_collective("all_reduce", 2**32, preset("h100-ib-2node", nodes=1))
    >>> r.algorithm, round(r.busbw_bytes_per_s / 1e9)
    ('nvls', 482)
    """
    op = Collective.parse(op)
    if not message_bytes > 0 or message_bytes != message_bytes or message_bytes == float("inf"):
        raise ValueError(f"size: message size must be > 0 bytes, got {message_bytes!r}")
    comm = comm or Communicator.contiguous(spec)
    tm = tiers or tier_model(spec, convention=convention, efficiency=efficiency, calibration=calibration)
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm: unknown {algorithm!r}; known: {', '.join(ALGORITHMS)}")
    if protocol is not None and protocol not in PROTOCOLS:
        raise ValueError(f"protocol: unknown {protocol!r}; known: {', '.join(PROTOCOLS)}")
    n = comm.n_ranks
    if n == 1:
        return CollectiveResult(
            op.value,
            message_bytes,
            1,
            "none",
            "none",
            0.0,
            0.0,
            0.0,
            0.0,
            {},
            "none",
            "one rank: nothing to communicate",
            (),
            f"{tm.convention}/{tm.efficiency}",
        )
    algs = _allowed(op, comm, tm)
    if algorithm is not None:
        if algorithm not in algs and not (algorithm == "ring" and "ring" in algs):
            raise ValueError(
                f"algorithm: {algorithm!r} does not apply to {op.value} on this communicator; possible: "
                f"{', '.join(algs)}"
            )
        algs = [algorithm]
    algs = [a for a in algs if a not in exclude]
    protos = [protocol] if protocol else (["Simple"] if efficiency == "line_rate" else list(PROTOCOLS))
    evals = [
        e for a in algs for p in protos if (e := _evaluate(op, a, p, message_bytes, comm, tm)) is not None
    ]
    if not evals:
        raise ValueError(
            f"algorithm: no algorithm/protocol left for {op.value} (asked {algorithm}/{protocol})"
        )
    evals.sort(key=lambda e: e.time_s)
    best = evals[0]
    if algorithm is None:
        # the lesson's hierarchical and flat ring are not NCCL algorithms: consider them only when asked
        nccl_like = [e for e in evals if e.algorithm not in ("hierarchical", "flat_ring")]
        best = nccl_like[0] if nccl_like else best
    t = best.time_s
    algbw = message_bytes / t if t > 0 else math.inf
    bus = algbw * busbw_factor(op, n)
    nets = dict(best.bandwidth_s)
    lat_share = best.latency_s
    if lat_share > 0:
        inter = "scale-out" if comm.n_domains > 1 else "scale-up"
        nets[inter] = nets.get(inter, 0.0) + lat_share
    bottleneck = best.bottleneck if best.latency_s < 0.5 * t else "latency"
    others = [f"{e.algorithm}/{e.protocol} {e.time_s * 1e6:.1f} us" for e in evals[1:4]]
    explanation = (
        f"{best.algorithm}/{best.protocol}: {best.why}; latency {best.latency_s * 1e6:.1f} us + bandwidth "
        f"{sum(best.bandwidth_s.values()) * 1e6:.1f} us"
        + (f". Next best: {', '.join(others)}" if others else "")
    )
    return CollectiveResult(
        op=op.value,
        message_bytes=float(message_bytes),
        n_ranks=n,
        algorithm=best.algorithm,
        protocol=best.protocol,
        time_s=t,
        latency_s=best.latency_s,
        algbw_bytes_per_s=algbw,
        busbw_bytes_per_s=bus,
        network_time_s=nets,
        bottleneck=bottleneck,
        explanation=explanation,
        candidates=tuple(Candidate(e.algorithm, e.protocol, e.time_s) for e in evals),
        convention=f"{tm.convention}/{tm.efficiency}",
        engine="formula",
    )
